"""Retrieval evaluation: the metrics on hand-computed cases, the chunked top-k search against NumPy, the
BEIR reader (titles, dropped queries, bad rows)."""

import json
import math

import numpy as np
import pytest

from common.errors import UserError
from common.evaluation.retrieval import (METRICS, RunningTopK, accuracy_at_k, average_precision_at_k, document_text,
                                         evaluate_retrieval, exact_search, load_beir, ndcg_at_k, recall_at_k,
                                         reciprocal_rank_at_k, retrieval_metrics, top_k_search, write_beir)

# === Metrics ===

# Ranked a, b, c, d; b (grade 2) at rank 2, d (grade 1) at rank 4; e (grade 1) never retrieved; c judged 0.
RANKING = ["a", "b", "c", "d"]
JUDGED = {"b": 2, "d": 1, "e": 1, "c": 0}


def test_ndcg_graded_uses_the_grade_as_gain_and_the_sorted_grades_as_ideal():
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(RANKING, JUDGED, 10) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(RANKING, JUDGED, 10) == pytest.approx(0.540586, abs=1e-6)


def test_ndcg_binary_gains_one_per_relevant_document_as_sentence_transformers():
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(RANKING, JUDGED, 10, relevance="binary") == pytest.approx(dcg / ideal)  # 0.4982
    # Every relevant document in the top 3, the best grade last: perfect for binary, not for graded.
    assert ndcg_at_k(["d", "e", "b"], JUDGED, 10, relevance="binary") == pytest.approx(1.0)
    assert ndcg_at_k(["d", "e", "b"], JUDGED, 10) == pytest.approx((1 + 1 / math.log2(3) + 2 / 2) /
                                                                   (2 + 1 / math.log2(3) + 1 / 2))
    assert ndcg_at_k(["b", "d", "e"], JUDGED, 10) == pytest.approx(1.0)
    # On binary qrels the two agree.
    binary = {"b": 1, "d": 1}
    assert ndcg_at_k(RANKING, binary, 10) == ndcg_at_k(RANKING, binary, 10, relevance="binary")
    with pytest.raises(ValueError, match="relevance"):
        ndcg_at_k(RANKING, JUDGED, 10, relevance="exponential")


def test_ndcg_cuts_the_ranking_and_the_ideal_at_k():
    # A relevant document below the cut gains nothing; the ideal holds only k documents.
    assert ndcg_at_k(RANKING, JUDGED, 1) == 0.0
    assert ndcg_at_k(RANKING, JUDGED, 2) == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)))


def test_reciprocal_rank_recall_average_precision_and_accuracy():
    assert reciprocal_rank_at_k(RANKING, JUDGED, 10) == 0.5
    assert reciprocal_rank_at_k(RANKING, JUDGED, 1) == 0.0
    assert recall_at_k(RANKING, JUDGED, 1) == 0.0
    assert recall_at_k(RANKING, JUDGED, 2) == pytest.approx(1 / 3)
    assert recall_at_k(RANKING, JUDGED, 10) == pytest.approx(2 / 3)  # e is relevant and never retrieved
    # Precision 1/2 at b and 2/4 at d, over the 3 relevant documents (trec_eval's map_cut).
    assert average_precision_at_k(RANKING, JUDGED, 100) == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert average_precision_at_k(RANKING, JUDGED, 2) == pytest.approx((1 / 2) / 3)
    assert accuracy_at_k(RANKING, JUDGED, 1) == 0.0 and accuracy_at_k(RANKING, JUDGED, 2) == 1.0
    assert accuracy_at_k(["b"], JUDGED, 1) == 1.0


def test_a_query_without_relevant_documents_scores_zero_everywhere():
    judged = {"a": 0, "b": -1}
    assert ndcg_at_k(RANKING, judged) == reciprocal_rank_at_k(RANKING, judged) == 0.0
    assert recall_at_k(RANKING, judged, 10) == average_precision_at_k(RANKING, judged) == 0.0
    assert accuracy_at_k(RANKING, judged) == 0.0


def test_retrieval_metrics_averages_over_queries_with_the_exact_keys():
    rankings = [RANKING, ["b", "d", "e", "a"]]
    judgments = [JUDGED, JUDGED]
    found = retrieval_metrics(rankings, judgments)
    assert tuple(found) == METRICS == ("ndcg@10", "mrr@10", "recall@1", "recall@10", "recall@100", "map@100",
                                       "accuracy@1")
    assert found["ndcg@10"] == pytest.approx((ndcg_at_k(RANKING, JUDGED) + 1.0) / 2)
    assert found["mrr@10"] == pytest.approx((0.5 + 1.0) / 2)
    assert found["recall@1"] == pytest.approx((0 + 1 / 3) / 2)
    assert found["recall@10"] == found["recall@100"] == pytest.approx((2 / 3 + 1) / 2)
    assert found["map@100"] == pytest.approx((1 / 3 + 1) / 2)
    assert found["accuracy@1"] == 0.5
    binary = retrieval_metrics(rankings, judgments, relevance="binary")
    assert binary["ndcg@10"] == pytest.approx((ndcg_at_k(RANKING, JUDGED, relevance="binary") + 1.0) / 2)
    assert {k: v for k, v in binary.items() if k != "ndcg@10"} == {k: v for k, v in found.items() if k != "ndcg@10"}
    with pytest.raises(ValueError):
        retrieval_metrics([RANKING], judgments)


# === Search ===


def _brute_force(queries, corpus, k):
    """Float64 cosine scores; each row ordered by (score descending, index ascending)."""
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    d = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    scores = q.astype(np.float64) @ d.astype(np.float64).T
    order = np.array([np.lexsort((np.arange(len(corpus)), -row))[:k] for row in scores])
    return np.take_along_axis(scores, order, axis=1), order


@pytest.mark.parametrize("k", [1, 5, 20, 60])
@pytest.mark.parametrize("chunk_size", [1, 4, 7, 53, 100])
def test_chunked_top_k_equals_brute_force(k, chunk_size):
    rng = np.random.default_rng(k * 1000 + chunk_size)
    queries = rng.normal(size=(9, 8)).astype(np.float32)
    corpus = rng.normal(size=(53, 8)).astype(np.float32)  # 53: no chunk size above but 1 and 53 divides it
    want_scores, want_indices = _brute_force(queries, corpus, k)
    for query_block in (2, 1024):
        scores, indices = top_k_search(queries, corpus, k, chunk_size=chunk_size, query_block=query_block)
        assert indices.shape == (9, min(k, 53)) and indices.dtype == np.int64
        np.testing.assert_array_equal(indices, want_indices)
        np.testing.assert_allclose(scores, want_scores, atol=1e-5)


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 4, 7])
def test_ties_go_to_the_earlier_document_across_chunks(chunk_size):
    # Scores exact in float32 whatever the kernel: one-hot queries against one-hot and (0.5, 0.5, 0.5, 0.5) rows.
    corpus = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0], [.5, .5, .5, .5], [1, 0, 0, 0],
                       [1, 0, 0, 0]], np.float32)
    queries = np.array([[1, 0, 0, 0], [0, 0, 0, 1]], np.float32)
    scores, indices = top_k_search(queries, corpus, 7, chunk_size=chunk_size)
    assert indices[0].tolist() == [1, 3, 5, 6, 4, 0, 2]
    assert scores[0].tolist() == [1, 1, 1, 1, .5, 0, 0]
    assert indices[1].tolist() == [4, 0, 1, 2, 3, 5, 6]
    assert top_k_search(queries, corpus, 3, chunk_size=chunk_size)[1][0].tolist() == [1, 3, 5]


def test_a_zero_vector_scores_zero_and_an_empty_chunk_changes_nothing():
    running = RunningTopK(np.array([[1, 0]], np.float32), k=2)
    running.add(np.zeros([0, 2], np.float32))
    running.add(np.array([[0, 0], [-1, 0]], np.float32))
    scores, indices = running.result()
    assert indices.tolist() == [[0, 1]] and scores.tolist() == [[0, -1]]


def test_exact_search_embeds_the_corpus_chunk_by_chunk():
    rng = np.random.default_rng(0)
    vectors = {f"text {i}": rng.normal(size=6).astype(np.float32) for i in range(30)}
    calls = []

    def embed(texts):
        calls.append(len(texts))
        return np.stack([vectors[t] for t in texts])

    queries, documents = [f"text {i}" for i in range(5)], [f"text {i}" for i in range(5, 30)]
    scores, indices = exact_search(embed, queries, documents, k=10, chunk_size=7, progress=False)
    assert calls == [5, 7, 7, 7, 4]  # the queries, then the corpus never more than a chunk at a time
    want = top_k_search(embed(queries), embed(documents), 10)
    np.testing.assert_array_equal(indices, want[1])
    np.testing.assert_allclose(scores, want[0], atol=1e-6)


# === The BEIR layout ===


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _beir(tmp_path, corpus=None, queries=None, qrels=None):
    """A small BEIR folder written line by line; each argument replaces one file's lines."""
    root = tmp_path / "beir"
    _write(root / "corpus.jsonl", corpus or [
        json.dumps({"_id": "d1", "title": "Title", "text": " body one "}),
        json.dumps({"_id": "d2", "title": "", "text": "body two "}),
        json.dumps({"_id": "d3", "text": " no title key"}),
        json.dumps({"_id": 4, "title": None, "text": "null title"}),
    ])
    _write(root / "queries.jsonl", queries or [json.dumps({"_id": q, "text": f"query {q}"})
                                               for q in ("q1", "q2", "q3", "q4")])
    _write(root / "qrels" / "test.tsv", qrels or [
        "query-id\tcorpus-id\tscore", "q2\td1\t2", "q2\td3\t0", "q1\td2\t1", "q3\td1\t0", "q1\tmissing\t1"])
    return str(root)


def test_reader_joins_titles_as_beir_and_drops_queries_without_a_relevant_document(tmp_path):
    found = load_beir(_beir(tmp_path), "test")
    assert found.doc_ids == ["d1", "d2", "d3", "4"]
    assert found.documents == ["Title  body one", "body two", "no title key", "null title"]
    # q3 has only a score-0 judgment and q4 none: both left out; the kept ones in queries.jsonl's order.
    assert found.query_ids == ["q1", "q2"] and found.queries == ["query q1", "query q2"]
    assert found.judgments == [{"d2": 1, "missing": 1}, {"d1": 2}]
    assert found.dropped_queries == 2 and found.missing_documents == 1
    assert document_text("T", "x ") == "T x" and document_text(None, " x ") == "x" and document_text("", "x") == "x"


def test_write_beir_round_trips(tmp_path):
    root = write_beir(str(tmp_path / "set"), {"q1": "a query", "q2": "another"},
                      {"d1": "first document", "d2": {"title": "T", "text": "second"}},
                      {"q1": {"d1": 2, "d2": 0}, "q2": {"d2": 1}}, split="dev")
    found = load_beir(root, "dev")
    assert found.query_ids == ["q1", "q2"] and found.documents == ["first document", "T second"]
    assert found.judgments == [{"d1": 2}, {"d2": 1}] and found.dropped_queries == 0


@pytest.mark.parametrize("file,lines,message", [
    ("qrels", ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td1\tx"], r"test\.tsv:3: score 'x' is not an integer"),
    ("qrels", ["query-id\tcorpus-id\tscore", "q1\td1"], r"test\.tsv:2: 2 tab-separated fields; expected 3"),
    ("qrels", ["q1\td1\t1"], r"test\.tsv:1: a judgment where the header belongs"),
    ("qrels", ["query-id\tcorpus-id\tscore", "q9\td1\t1"], r"test\.tsv:2: query-id 'q9' is not in queries\.jsonl"),
    ("qrels", ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q1\td1\t2"], r"test\.tsv:3: .* judged 2 here and 1 on "
                                                                        r"line 2"),
    ("qrels", ["query-id\tcorpus-id\tscore", "q1\td1\t0"], r"test\.tsv: no query has a relevant document"),
    ("corpus", [json.dumps({"_id": "d1", "text": "x"}), "{not json"], r"corpus\.jsonl:2: not valid JSON"),
    ("corpus", [json.dumps({"_id": "d1", "text": "x"}), json.dumps({"_id": "d1", "text": "y"})],
     r"corpus\.jsonl:2: \"_id\" 'd1' again \(first on line 1\)"),
    ("corpus", [json.dumps({"_id": "d1"})], r"corpus\.jsonl:1: \"text\" is None"),
    ("queries", [json.dumps(["q1", "text"])], r"queries\.jsonl:1: a JSON list, not an object"),
])
def test_a_bad_row_is_a_user_error_naming_file_and_line(tmp_path, file, lines, message):
    root = _beir(tmp_path, **{file: lines})
    with pytest.raises(UserError, match=message):
        load_beir(root, "test")


def test_a_missing_file_names_it_and_the_splits_there(tmp_path):
    root = _beir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"qrels/dev\.tsv \(the splits there: test\); pass --split"):
        load_beir(root, "dev")
    with pytest.raises(FileNotFoundError, match="BEIR folder not found"):
        load_beir(str(tmp_path / "nowhere"), "test")


def test_evaluate_retrieval_end_to_end_with_a_perfect_and_a_reversed_embedding(tmp_path):
    # Query i and document i share a one-hot vector: every query finds its one relevant document first.
    docs = {f"d{i}": f"doc {i}" for i in range(12)}
    queries = {f"q{i}": f"query {i}" for i in range(4)}
    root = write_beir(str(tmp_path / "set"), queries, docs, {f"q{i}": {f"d{i}": 1} for i in range(4)})
    dataset = load_beir(root)

    def embed(texts):
        return np.stack([np.eye(12, dtype=np.float32)[int(t.split()[-1])] for t in texts])

    found = evaluate_retrieval(embed, dataset, chunk_size=5, progress=False)
    assert {k: found[k] for k in METRICS} == {k: 1.0 for k in METRICS}
    assert (found["queries"], found["documents"], found["dropped_queries"]) == (4, 12, 0)
    assert found["relevance"] == "graded" and found["seconds"] >= 0

    def opposite(texts):  # each query's own document scores -1, the others 0 (ranked by corpus order)
        vectors = embed(texts)
        return np.where([[t.startswith("query")] for t in texts], -vectors, vectors)

    worse = evaluate_retrieval(opposite, dataset, chunk_size=5, progress=False)
    assert worse["recall@10"] == 0.0 and worse["recall@100"] == 1.0 and worse["mrr@10"] == 0.0
    assert worse["map@100"] == pytest.approx(1 / 12)  # last of 12
