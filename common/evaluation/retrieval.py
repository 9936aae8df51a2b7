"""Retrieval evaluation on the BEIR layout: exact cosine search and the BEIR / sentence-transformers metrics.

A BEIR folder (Thakur et al., "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of Information
Retrieval Models", NeurIPS 2021 Datasets and Benchmarks, https://github.com/beir-cellar/beir) holds:

    <data>/corpus.jsonl        one JSON object per line: "_id", "text", optionally "title"
    <data>/queries.jsonl       one JSON object per line: "_id", "text"
    <data>/qrels/<split>.tsv   a header line `query-id<TAB>corpus-id<TAB>score`, then one judgment per line

A judgment's score is an integer relevance grade; 0 or below means not relevant, as trec_eval (which
BEIR runs through pytrec_eval) treats it at its default relevance level of 1. A document's text is
BEIR's (`beir.retrieval.models.SentenceBERT.encode_corpus`): `(title + " " + text).strip()`, or
`text.strip()` without a title; a query's text is used as it is. Queries without a relevant document
in the split are left out and counted: sentence-transformers' `InformationRetrievalEvaluator` keeps only
queries with relevant documents, and BEIR's loader only queries that the split's qrels name (the same
queries when, as usual, a qrels file lists relevant documents only).

Search is exact: both sides are L2-normalised, so a score is the cosine similarity, and the corpus is
embedded and scored chunk by chunk with a running top-k (`tf.math.top_k` per chunk, merged with the best
so far), so a corpus of millions of documents never needs its score matrix or all its embeddings at once.
Ties are broken by corpus order (the line order of corpus.jsonl): the earlier document ranks first.
sentence-transformers breaks them by ascending corpus id, the same order when the ids sort as the lines
do; trec_eval by descending document id.

The metrics, per query and then averaged over the queries (`retrieval_metrics`), each a fraction:

- `ndcg@10`: sum over ranks r <= 10 of gain(rel_r) / log2(r + 1), divided by the same sum over the
  query's judged grades sorted best first (trec_eval's `ndcg_cut.10`, as BEIR reports it). With
  `relevance="graded"` the gain is the grade itself (linear, trec_eval's gain, not 2^rel - 1); with
  `relevance="binary"` every relevant document gains 1, as sentence-transformers'
  `InformationRetrievalEvaluator` computes it (it only knows sets of relevant documents). The two agree
  on binary qrels.
- `mrr@10`: 1 / the rank of the first relevant document within the top 10, else 0 (BEIR, s-t).
- `recall@1`, `recall@10`, `recall@100`: relevant documents in the top k / the query's relevant documents
  (trec_eval's `recall_k`, s-t's recall@k). A relevant document missing from the corpus still counts in
  the denominator, as in trec_eval.
- `map@100`: the sum over relevant documents at ranks r <= 100 of the precision at r, divided by the
  query's relevant documents (trec_eval's `map_cut.100`, as BEIR reports it). sentence-transformers
  divides by min(100, relevant documents): the two differ only for a query with more than 100.
- `accuracy@1`: 1 if the top document is relevant, else 0 (s-t's accuracy@1).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from typing import Callable, Dict, Hashable, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf
from absl import logging
from tqdm.auto import tqdm

from common.data.files import read_lines
from common.errors import UserError

# The JSON keys, in the order the table prints them.
METRICS = ("ndcg@10", "mrr@10", "recall@1", "recall@10", "recall@100", "map@100", "accuracy@1")
RELEVANCE_MODES = ("graded", "binary")
# The deepest rank any metric reads (recall@100, map@100).
SEARCH_DEPTH = 100
DEFAULT_CHUNK_SIZE = 10_000
# Queries scored against a chunk at once: the score block is at most QUERY_BLOCK x chunk floats.
QUERY_BLOCK = 1024
QRELS_HEADER = ("query-id", "corpus-id", "score")
LAYOUT_HELP = ("a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv "
               "(docs/usage/retrieval.md)")
_INTEGER = re.compile(r"^[+-]?\d+$")

EmbedFn = Callable[[Sequence[str]], np.ndarray]


# === The BEIR layout ===


@dataclasses.dataclass
class RetrievalSet:
    """A BEIR split, ready to score.

    Attributes:
        query_ids: list of str. The kept queries' ids, in the order of queries.jsonl.
        queries: list of str. Their texts.
        doc_ids: list of str. Every document's id, in the order of corpus.jsonl.
        documents: list of str. Their texts (title and text joined as BEIR does).
        judgments: list of dict. Per kept query, its relevant documents (score > 0): id -> grade.
        dropped_queries: int. Queries of queries.jsonl without a relevant document in the split.
        missing_documents: int. Relevant judgments naming an id that corpus.jsonl does not hold (they
            count as relevant, and can never be retrieved).
    """

    query_ids: List[str]
    queries: List[str]
    doc_ids: List[str]
    documents: List[str]
    judgments: List[Dict[str, int]]
    dropped_queries: int = 0
    missing_documents: int = 0


def document_text(title: Optional[str], text: str) -> str:
    """A document as BEIR's `SentenceBERT.encode_corpus` embeds it: title and text joined by a space,
    stripped (no title: the text, stripped)."""
    return text.strip() if title is None else (title + " " + text).strip()


def _join(*parts: str) -> str:
    return "/".join([parts[0].rstrip("/"), *parts[1:]])


def _require_file(path: str, what: str) -> None:
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"{what} not found: {path}; {LAYOUT_HELP}.")


def _read_jsonl(path: str, with_title: bool) -> Tuple[List[str], List[str], List[Optional[str]]]:
    """(ids, texts, titles) of a BEIR JSONL file, with a UserError naming file:line for a bad row."""
    expected = '"_id", "title" and "text"' if with_title else '"_id" and "text"'
    ids, texts, titles, first_line = [], [], [], {}
    for number, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{number}: not valid JSON ({e.msg}); expected one object per line with "
                             f"{expected}.") from None
        if not isinstance(row, dict):
            raise UserError(f"{path}:{number}: a JSON {type(row).__name__}, not an object; expected one object "
                             f"per line with {expected}.")
        doc_id, text, title = row.get("_id"), row.get("text"), row.get("title")
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)  # qrels name ids as text
        if not isinstance(doc_id, str) or not doc_id:
            raise UserError(f"{path}:{number}: \"_id\" is {doc_id!r}; expected a non-empty string ({expected} "
                             "on every line).")
        if not isinstance(text, str):
            raise UserError(f"{path}:{number}: \"text\" is {text!r}; expected a string ({expected} on every line).")
        if with_title and title is not None and not isinstance(title, str):
            raise UserError(f"{path}:{number}: \"title\" is {title!r}; expected a string, null or no \"title\".")
        if doc_id in first_line:
            raise UserError(f"{path}:{number}: \"_id\" {doc_id!r} again (first on line {first_line[doc_id]}); "
                             "every id must be unique. Remove or rename one of them.")
        first_line[doc_id] = number
        ids.append(doc_id)
        texts.append(text)
        titles.append(title)
    return ids, texts, titles


def _read_qrels(path: str, known_queries: Mapping[str, int]) -> Dict[str, Dict[str, Tuple[int, int]]]:
    """query id -> {corpus id: (score, line)} of a BEIR qrels file."""
    lines = read_lines(path)
    if not lines:
        raise UserError(f"{path}: empty; expected the header `query-id<TAB>corpus-id<TAB>score`, then one "
                         "judgment per line.")
    header = lines[0].split("\t")
    if len(header) == 3 and _INTEGER.match(header[2].strip()):
        raise UserError(f"{path}:1: a judgment where the header belongs; the first line must be "
                         "`query-id<TAB>corpus-id<TAB>score` (BEIR skips it). Add the header line.")
    if len(header) != 3:
        raise UserError(f"{path}:1: {len(header)} tab-separated fields; expected the header "
                         "`query-id<TAB>corpus-id<TAB>score`.")
    qrels: Dict[str, Dict[str, Tuple[int, int]]] = {}
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise UserError(f"{path}:{number}: {len(fields)} tab-separated fields; expected 3: query-id, "
                             "corpus-id and an integer score.")
        query_id, doc_id, score = fields
        if not _INTEGER.match(score.strip()):
            raise UserError(f"{path}:{number}: score {score!r} is not an integer; expected an integer relevance "
                             "grade (0 or below: not relevant).")
        if query_id not in known_queries:
            raise UserError(f"{path}:{number}: query-id {query_id!r} is not in queries.jsonl; add the query or "
                             "remove its judgments.")
        judged = qrels.setdefault(query_id, {})
        value = int(score)
        if doc_id in judged and judged[doc_id][0] != value:
            raise UserError(f"{path}:{number}: ({query_id!r}, {doc_id!r}) judged {value} here and "
                             f"{judged[doc_id][0]} on line {judged[doc_id][1]}; keep one judgment per pair.")
        judged.setdefault(doc_id, (value, number))
    return qrels


def load_beir(data: str, split: str = "test") -> RetrievalSet:
    """Reads a BEIR folder's corpus, queries and the qrels of one split (local or gs://).

    Args:
        data: str. The folder that holds corpus.jsonl, queries.jsonl and qrels/.
        split: str. The qrels file to read: `qrels/<split>.tsv`. Defaults to "test".

    Returns:
        The RetrievalSet: every document, and the queries with at least one relevant document.

    Raises:
        FileNotFoundError: for a missing folder or file, naming it (and the splits that exist).
        UserError: for a malformed row (naming file:line and what to do), duplicate ids, an empty
            corpus, or a split in which no query has a relevant document.
    """
    corpus_path, queries_path = _join(data, "corpus.jsonl"), _join(data, "queries.jsonl")
    qrels_path = _join(data, "qrels", f"{split}.tsv")
    if not tf.io.gfile.isdir(data):
        raise FileNotFoundError(f"BEIR folder not found: {data}; {LAYOUT_HELP}.")
    _require_file(corpus_path, "Corpus")
    _require_file(queries_path, "Queries")
    if not tf.io.gfile.exists(qrels_path):
        found = sorted(p.rsplit("/", 1)[-1][:-len(".tsv")] for p in tf.io.gfile.glob(_join(data, "qrels", "*.tsv")))
        splits = f"the splits there: {', '.join(found)}" if found else "qrels/ holds no <split>.tsv"
        raise FileNotFoundError(f"Qrels of split {split!r} not found: {qrels_path} ({splits}); pass --split=<one "
                                f"of them>, or {LAYOUT_HELP}.")
    doc_ids, texts, titles = _read_jsonl(corpus_path, with_title=True)
    if not doc_ids:
        raise UserError(f"{corpus_path}: no documents; expected one JSON object per line.")
    query_ids, query_texts, _ = _read_jsonl(queries_path, with_title=False)
    position = {q: i for i, q in enumerate(query_ids)}
    qrels = _read_qrels(qrels_path, position)
    in_corpus = set(doc_ids)
    kept, judgments, missing = [], [], 0
    for query_id in query_ids:
        relevant = {d: score for d, (score, _) in qrels.get(query_id, {}).items() if score > 0}
        if relevant:
            kept.append(query_id)
            judgments.append(relevant)
            missing += sum(d not in in_corpus for d in relevant)
    if not kept:
        raise UserError(f"{qrels_path}: no query has a relevant document (a score above 0); nothing to evaluate.")
    dropped = len(query_ids) - len(kept)
    if dropped:
        logging.info("%d of %d queries in %s have no relevant document in %s and are left out, as BEIR and "
                     "sentence-transformers leave them out.", dropped, len(query_ids), queries_path, qrels_path)
    if missing:
        logging.warning("%d relevant judgments in %s name documents that %s does not hold: they count as relevant "
                        "and cannot be retrieved (as in trec_eval).", missing, qrels_path, corpus_path)
    return RetrievalSet(query_ids=kept, queries=[query_texts[position[q]] for q in kept], doc_ids=doc_ids,
                        documents=[document_text(t, x) for t, x in zip(titles, texts)], judgments=judgments,
                        dropped_queries=dropped, missing_documents=missing)


def write_beir(data: str, queries: Mapping[str, str], corpus: Mapping[str, Union[str, Mapping[str, str]]],
               qrels: Mapping[str, Mapping[str, int]], split: str = "test") -> str:
    """Writes a BEIR folder (local or gs://): corpus.jsonl, queries.jsonl and qrels/<split>.tsv.

    Args:
        data: str. The folder to write (created if missing; the three files are replaced).
        queries: mapping. Query id -> text, in the order to write.
        corpus: mapping. Document id -> its text (written with an empty title), or a mapping with
            "text" and optionally "title".
        qrels: mapping. Query id -> {document id: integer score}.
        split: str. The qrels file's name. Defaults to "test".

    Returns:
        `data`.
    """
    tf.io.gfile.makedirs(_join(data, "qrels"))
    with tf.io.gfile.GFile(_join(data, "corpus.jsonl"), "w") as f:
        for doc_id, doc in corpus.items():
            title, text = ("", doc) if isinstance(doc, str) else (doc.get("title", ""), doc["text"])
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}, ensure_ascii=False) + "\n")
    with tf.io.gfile.GFile(_join(data, "queries.jsonl"), "w") as f:
        for query_id, text in queries.items():
            f.write(json.dumps({"_id": query_id, "text": text}, ensure_ascii=False) + "\n")
    with tf.io.gfile.GFile(_join(data, "qrels", f"{split}.tsv"), "w") as f:
        f.write("\t".join(QRELS_HEADER) + "\n")
        for query_id, judged in qrels.items():
            for doc_id, score in judged.items():
                f.write(f"{query_id}\t{doc_id}\t{int(score)}\n")
    return data


# === Exact search ===


def _normalize(x) -> tf.Tensor:
    """Rows scaled to unit length (a zero row stays zero, and scores 0 against everything)."""
    return tf.math.l2_normalize(tf.convert_to_tensor(x, tf.float32), axis=1, epsilon=1e-12)


class RunningTopK:
    """The k best documents of every query, over corpus chunks added one after another.

    Each chunk is scored against every query (in blocks of `query_block` queries), reduced to its own
    top k with `tf.math.top_k`, and merged with the best so far by a second `top_k` over the two lists
    side by side. `tf.math.top_k` puts the lower index first among equal values, and the kept list
    (earlier documents) comes before the chunk's, so ties go to the earlier document throughout.
    Memory: the kept lists (queries x k) and one block of scores (query_block x chunk).

    Args:
        query_embeddings: [queries, dim] array; normalised here.
        k: int. Documents kept per query.
        query_block: int. Queries scored against a chunk at once. Defaults to QUERY_BLOCK.
    """

    def __init__(self, query_embeddings, k: int, query_block: int = QUERY_BLOCK):
        if k < 1 or query_block < 1:
            raise ValueError(f"k and query_block must be >= 1, got {k} and {query_block}.")
        self.queries = _normalize(query_embeddings)  # [Q, dim]
        self.k = k
        self.blocks = [(start, min(start + query_block, int(self.queries.shape[0])))
                       for start in range(0, int(self.queries.shape[0]), query_block)]
        self.best: List[Optional[Tuple[tf.Tensor, tf.Tensor]]] = [None] * len(self.blocks)
        self.documents = 0

    def add(self, chunk_embeddings) -> None:
        """Scores the next chunk of documents (they follow every chunk added before)."""
        documents = _normalize(chunk_embeddings)  # [n, dim]
        n = int(documents.shape[0])
        if n == 0:
            return
        offset = self.documents
        self.documents += n
        for b, (start, stop) in enumerate(self.blocks):
            scores = tf.linalg.matmul(self.queries[start:stop], documents, transpose_b=True)  # [qb, n]
            top = tf.math.top_k(scores, k=min(self.k, n))
            values, indices = top.values, top.indices + offset  # [qb, <=k], int32 corpus positions
            if self.best[b] is not None:
                kept_values, kept_indices = self.best[b]
                values = tf.concat([kept_values, values], axis=1)  # [qb, <=2k], earlier documents first
                indices = tf.concat([kept_indices, indices], axis=1)
                top = tf.math.top_k(values, k=min(self.k, int(values.shape[1])))
                values, indices = top.values, tf.gather(indices, top.indices, batch_dims=1)
            self.best[b] = (values, indices)

    def result(self) -> Tuple[np.ndarray, np.ndarray]:
        """(scores float32 [queries, min(k, documents)], corpus indices int64, same shape), best first."""
        if self.documents == 0:
            raise ValueError("RunningTopK.result: no documents were added.")
        return (np.concatenate([v.numpy() for v, _ in self.best]),
                np.concatenate([i.numpy() for _, i in self.best]).astype(np.int64))


def top_k_search(query_embeddings, corpus_embeddings, k: int, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 query_block: int = QUERY_BLOCK) -> Tuple[np.ndarray, np.ndarray]:
    """The k most cosine-similar corpus rows of every query row, the corpus taken `chunk_size` rows at a time.

    Args:
        query_embeddings: [queries, dim] array.
        corpus_embeddings: [documents, dim] array.
        k: int. Documents per query (fewer when the corpus is smaller).
        chunk_size: int. Corpus rows scored at once. Defaults to DEFAULT_CHUNK_SIZE.
        query_block: int. Query rows scored at once. Defaults to QUERY_BLOCK.

    Returns:
        (scores float32 [queries, min(k, documents)], corpus indices int64), best first, ties by index.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}.")
    running = RunningTopK(query_embeddings, k, query_block)
    for start in range(0, len(corpus_embeddings), chunk_size):
        running.add(corpus_embeddings[start:start + chunk_size])
    return running.result()


def exact_search(embed: EmbedFn, queries: Sequence[str], documents: Sequence[str], k: int = SEARCH_DEPTH,
                 chunk_size: int = DEFAULT_CHUNK_SIZE, progress: bool = True) -> Tuple[np.ndarray, np.ndarray]:
    """Embeds the queries, then the corpus chunk by chunk, keeping each query's k best documents.

    Only one chunk's embeddings exist at a time, so memory does not grow with the corpus.

    Args:
        embed: callable. List of texts -> [n, dim] array (a model's embeddings).
        queries: sequence of str.
        documents: sequence of str, in corpus order.
        k: int. Documents per query. Defaults to SEARCH_DEPTH (100).
        chunk_size: int. Documents embedded and scored at once. Defaults to DEFAULT_CHUNK_SIZE.
        progress: bool. A progress bar over the corpus, advanced chunk by chunk. Defaults to True.

    Returns:
        (scores float32 [queries, min(k, documents)], corpus indices int64), best first, ties by corpus order.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}.")
    running = RunningTopK(embed(list(queries)), k)
    with tqdm(total=len(documents), desc="corpus", unit="doc", disable=not progress, leave=False) as bar:
        for start in range(0, len(documents), chunk_size):
            chunk = list(documents[start:start + chunk_size])
            running.add(embed(chunk))
            bar.update(len(chunk))
    return running.result()


# === Metrics (one query: a ranking of document ids and its judgments, id -> grade) ===


def _relevant(judged: Mapping[Hashable, int]) -> Dict[Hashable, int]:
    return {d: g for d, g in judged.items() if g > 0}


def _dcg(gains: Iterable[float]) -> float:
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, 1))


def ndcg_at_k(ranking: Sequence[Hashable], judged: Mapping[Hashable, int], k: int = 10,
              relevance: str = "graded") -> float:
    """nDCG@k: trec_eval's `ndcg_cut` (linear gain: the grade) or, binary, sentence-transformers' (gain 1).

    Args:
        ranking: sequence. Document ids, best first.
        judged: mapping. Document id -> grade; 0 or below is not relevant.
        k: int. The cut. Defaults to 10.
        relevance: str. "graded": a relevant document gains its grade, the ideal ranking is the grades
            sorted; "binary": every relevant document gains 1. Defaults to "graded".

    Returns:
        float in [0, 1]; 0 for a query without relevant documents.
    """
    if relevance not in RELEVANCE_MODES:
        raise ValueError(f"relevance must be one of {RELEVANCE_MODES}, got {relevance!r}.")
    relevant = _relevant(judged)
    if not relevant:
        return 0.0
    gains = relevant if relevance == "graded" else {d: 1 for d in relevant}
    ideal = _dcg(sorted(gains.values(), reverse=True)[:k])
    return _dcg(gains.get(d, 0) for d in ranking[:k]) / ideal


def reciprocal_rank_at_k(ranking: Sequence[Hashable], judged: Mapping[Hashable, int], k: int = 10) -> float:
    """1 / the rank of the first relevant document within the top k; 0 if there is none."""
    relevant = _relevant(judged)
    return next((1.0 / rank for rank, d in enumerate(ranking[:k], 1) if d in relevant), 0.0)


def recall_at_k(ranking: Sequence[Hashable], judged: Mapping[Hashable, int], k: int) -> float:
    """Relevant documents in the top k / the query's relevant documents; 0 for a query without any."""
    relevant = _relevant(judged)
    if not relevant:
        return 0.0
    return sum(d in relevant for d in ranking[:k]) / len(relevant)


def average_precision_at_k(ranking: Sequence[Hashable], judged: Mapping[Hashable, int], k: int = 100) -> float:
    """trec_eval's `map_cut`: the precision at each relevant document within the top k, summed, divided
    by the query's relevant documents (sentence-transformers divides by min(k, relevant documents))."""
    relevant = _relevant(judged)
    if not relevant:
        return 0.0
    found, total = 0, 0.0
    for rank, d in enumerate(ranking[:k], 1):
        if d in relevant:
            found += 1
            total += found / rank
    return total / len(relevant)


def accuracy_at_k(ranking: Sequence[Hashable], judged: Mapping[Hashable, int], k: int = 1) -> float:
    """1 if a relevant document is in the top k, else 0."""
    relevant = _relevant(judged)
    return float(any(d in relevant for d in ranking[:k]))


def retrieval_metrics(rankings: Sequence[Sequence[Hashable]], judgments: Sequence[Mapping[Hashable, int]],
                      relevance: str = "graded") -> Dict[str, float]:
    """The METRICS, each averaged over the queries.

    Args:
        rankings: per query, document ids best first (at least as deep as the deepest cut, 100, when
            the corpus has that many).
        judgments: per query, document id -> grade (0 or below: not relevant).
        relevance: str. nDCG's gains, "graded" or "binary" (`ndcg_at_k`); the other metrics only ask
            whether a document is relevant. Defaults to "graded".

    Returns:
        {"ndcg@10", "mrr@10", "recall@1", "recall@10", "recall@100", "map@100", "accuracy@1"} -> float in [0, 1].
    """
    if len(rankings) != len(judgments) or not len(rankings):
        raise ValueError(f"Expected one ranking per query and at least one query; got {len(rankings)} rankings "
                         f"and {len(judgments)} judgments.")
    per_query = {
        "ndcg@10": lambda r, j: ndcg_at_k(r, j, 10, relevance),
        "mrr@10": lambda r, j: reciprocal_rank_at_k(r, j, 10),
        "recall@1": lambda r, j: recall_at_k(r, j, 1),
        "recall@10": lambda r, j: recall_at_k(r, j, 10),
        "recall@100": lambda r, j: recall_at_k(r, j, 100),
        "map@100": lambda r, j: average_precision_at_k(r, j, 100),
        "accuracy@1": lambda r, j: accuracy_at_k(r, j, 1),
    }
    return {name: float(np.mean([fn(r, j) for r, j in zip(rankings, judgments)])) for name, fn in per_query.items()}


# === End to end ===


def rank_documents(embed: EmbedFn, dataset: RetrievalSet, chunk_size: int = DEFAULT_CHUNK_SIZE,
                   progress: bool = True) -> List[List[str]]:
    """Each query's SEARCH_DEPTH best document ids, best first (`exact_search`)."""
    _, indices = exact_search(embed, dataset.queries, dataset.documents, SEARCH_DEPTH, chunk_size, progress)
    return [[dataset.doc_ids[i] for i in row] for row in indices]


def evaluate_retrieval(embed: EmbedFn, dataset: RetrievalSet, chunk_size: int = DEFAULT_CHUNK_SIZE,
                       relevance: str = "graded", progress: bool = True) -> Dict[str, object]:
    """Scores an embedding function on a BEIR split by exact cosine search.

    Args:
        embed: callable. List of texts -> [n, dim] array.
        dataset: RetrievalSet. From `load_beir`.
        chunk_size: int. Documents embedded and scored at once. Defaults to DEFAULT_CHUNK_SIZE.
        relevance: str. nDCG's gains: "graded" (trec_eval, BEIR) or "binary" (sentence-transformers).
            Defaults to "graded".
        progress: bool. A progress bar over the corpus. Defaults to True.

    Returns:
        The METRICS (fractions), "relevance", "queries" (scored), "documents", "dropped_queries"
        (without a relevant document), "missing_documents" and "seconds" (embedding, search, metrics).
    """
    if relevance not in RELEVANCE_MODES:
        raise ValueError(f"relevance must be one of {RELEVANCE_MODES}, got {relevance!r}.")
    start = time.time()
    rankings = rank_documents(embed, dataset, chunk_size, progress)
    metrics = retrieval_metrics(rankings, dataset.judgments, relevance)
    return {**metrics, "relevance": relevance, "queries": len(dataset.queries), "documents": len(dataset.documents),
            "dropped_queries": dataset.dropped_queries, "missing_documents": dataset.missing_documents,
            "seconds": round(time.time() - start, 2)}


def format_table(results: Mapping[str, object]) -> str:
    """The metrics as a plain-text table (fractions, 4 decimals)."""
    rows = [f"{'metric':<11} {'value':>7}"]
    for name in METRICS:
        note = f"  ({results['relevance']} gains)" if name == "ndcg@10" and "relevance" in results else ""
        rows.append(f"{name:<11} {results[name]:7.4f}{note}")
    return "\n".join(rows)
