"""Writes BEIR-layout retrieval sets from the offline data: SNLI premises retrieving their hypotheses,
and the same set grown with sentences from the Gutenberg books to time a large corpus.

    .venv/bin/python -m bench.make_retrieval_set --data_path=../shared/data --out=artifacts/retrieval/snli_dev
    .venv/bin/python -m bench.make_retrieval_set --data_path=../shared/data --documents=100000 \\
        --out=artifacts/retrieval/snli_dev_100k

The set, from SentEval's SNLI split (`downstream/SNLI/{s1,s2,labels}.<split>`; dev: 9,842 pairs):

- queries: the distinct premises (stripped of SentEval's trailing space);
- corpus: the distinct hypotheses, in order of first appearance, without titles;
- qrels (`qrels/<split>.tsv`): each premise grades each of its own hypotheses by the pair's label:
  entailment 2, neutral 1, contradiction 0 (judged, not relevant). A hypothesis met twice with one
  premise keeps its best grade. Graded nDCG rewards ranking what a premise entails above what it
  merely allows; every other metric counts both as relevant.

Ids are zero-padded positions (`q00000`, `d00000`, ...), so ascending id order, which
sentence-transformers breaks score ties by, is the corpus order the toolkit breaks them by.

With --documents=N the corpus grows to N documents: after the hypotheses come distinct sentences
of 4-64 words cut from `documents/gutenberg/books.txt` (`common.data.sentences.sentences_from_documents`,
seeded, any hypothesis left out), which no query judges. The queries and qrels stay the same.
"""

from __future__ import annotations

import os
from typing import Dict, List, Sequence, Tuple

from absl import flags

from common import cli

from common.errors import UserError

# A pair's label (common.data.nli.LABELS) -> its hypothesis' grade for its premise.
GRADES = {"entailment": 2, "neutral": 1, "contradiction": 0}
BOOKS = "documents/gutenberg/books.txt"

FLAGS = flags.FLAGS

Queries = Dict[str, str]
Corpus = Dict[str, str]
Qrels = Dict[str, Dict[str, int]]


def define_flags() -> None:
    """The script's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("data_path", "data", "Data root (holds downstream/SNLI and documents/gutenberg).")
    flags.DEFINE_string("out", None, "The BEIR folder to write (corpus.jsonl, queries.jsonl, qrels/<split>.tsv).")
    flags.DEFINE_string("split", "dev", "SentEval's SNLI split (dev or test); also the qrels file's name.")
    flags.DEFINE_integer("max_pairs", 0, "Use the split's first this many pairs (0: all).", lower_bound=0)
    flags.DEFINE_integer("documents", 0, "Grow the corpus to this many documents with sentences from the books "
                         "(0: the hypotheses only).", lower_bound=0)
    flags.DEFINE_integer("seed", 0, "Seed of the book sentences' sample.")


def _ids(prefix: str, count: int) -> List[str]:
    """Zero-padded ids of one width, so that they sort as they are numbered."""
    width = max(5, len(str(max(count - 1, 0))))
    return [f"{prefix}{i:0{width}d}" for i in range(count)]


def snli_set(data_path: str, split: str = "dev", max_pairs: int = 0) -> Tuple[Queries, Corpus, Qrels]:
    """(queries, corpus, qrels) of the SNLI retrieval set described in the module docstring."""
    from common.data.nli import LABELS, read_senteval_snli

    pairs = read_senteval_snli(data_path, split)
    count = len(pairs) if not max_pairs else min(max_pairs, len(pairs))
    premises = list(dict.fromkeys(p.strip() for p in pairs.premises[:count]))
    hypotheses = list(dict.fromkeys(h.strip() for h in pairs.hypotheses[:count]))
    query_id = dict(zip(premises, _ids("q", len(premises))))
    doc_id = dict(zip(hypotheses, _ids("d", len(hypotheses))))
    qrels: Qrels = {query_id[p]: {} for p in premises}
    for premise, hypothesis, label in zip(pairs.premises[:count], pairs.hypotheses[:count], pairs.labels[:count]):
        judged = qrels[query_id[premise.strip()]]
        d = doc_id[hypothesis.strip()]
        judged[d] = max(judged.get(d, -1), GRADES[LABELS[int(label)]])
    return ({i: p for p, i in query_id.items()}, {i: h for h, i in doc_id.items()}, qrels)


def with_book_sentences(corpus: Corpus, data_path: str, documents: int, seed: int) -> Corpus:
    """`corpus` followed by distinct book sentences that it does not hold, `documents` documents in all,
    renumbered (`d` + zero-padded position, the given documents keeping their order and first ids)."""
    from common.data.sentences import sentences_from_documents

    if documents < len(corpus):
        raise UserError(f"--documents={documents} is smaller than the set's own {len(corpus)} documents; ask for "
                        f"more, or fewer --max_pairs.")
    have = set(corpus.values())
    needed = documents - len(corpus)
    found = [s for s in sentences_from_documents([f"{data_path.rstrip('/')}/{BOOKS}"], needed + len(have), seed)
             if s not in have][:needed]
    if len(found) < needed:
        raise UserError(f"{BOOKS} gives {len(found)} distinct sentences of 4-64 words besides the set's; "
                        f"--documents={documents} needs {needed}.")
    texts = list(corpus.values()) + found
    return dict(zip(_ids("d", len(texts)), texts))


def renumbered_qrels(qrels: Qrels, old: Sequence[str], new: Sequence[str]) -> Qrels:
    """`qrels` with document ids renamed position by position."""
    rename = dict(zip(old, new))
    return {q: {rename[d]: g for d, g in judged.items()} for q, judged in qrels.items()}


def write_snli_set(out: str, data_path: str, split: str = "dev", max_pairs: int = 0, documents: int = 0,
                   seed: int = 0) -> Dict[str, int]:
    """Writes the set (grown to `documents` when given) to `out`; returns its counts."""
    from common.evaluation.retrieval import write_beir

    queries, corpus, qrels = snli_set(data_path, split, max_pairs)
    if documents:
        grown = with_book_sentences(corpus, data_path, documents, seed)
        qrels = renumbered_qrels(qrels, list(corpus), list(grown)[:len(corpus)])
        corpus = grown
    write_beir(out, queries, corpus, qrels, split)
    grades = [g for judged in qrels.values() for g in judged.values()]
    return {"queries": len(queries), "documents": len(corpus), "judgments": len(grades),
            **{f"grade_{g}": grades.count(g) for g in sorted(set(grades))}}


def main(argv):
    if not FLAGS.out:
        raise UserError("--out is required: the BEIR folder to write.")
    counts = write_snli_set(FLAGS.out, FLAGS.data_path, FLAGS.split, FLAGS.max_pairs, FLAGS.documents, FLAGS.seed)
    print(f"wrote {os.path.join(FLAGS.out, '')}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"next: python retrieval_eval.py --model=minilm --data={FLAGS.out} --split={FLAGS.split}")
    return 0


if __name__ == "__main__":
    define_flags()
    cli.run(main)
