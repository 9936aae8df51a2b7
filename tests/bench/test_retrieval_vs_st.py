"""The parts of bench/retrieval_vs_st.py that need no PyTorch: the worker's own BEIR reader (it cannot
import this project, so it restates BEIR's conventions), the SNLI retrieval set, the refusal on a loaded
machine, and the page. The benchmark itself runs outside the test suite."""

import json
import os

from fixtures import write_senteval_snli
from in_process import run_module

from bench import make_retrieval_set, retrieval_vs_st, retrieval_worker
from common.evaluation.retrieval import load_beir


def test_worker_reads_the_set_the_toolkit_reads(tmp_path):
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": "d1", "title": "A title", "text": " text one "}, {"_id": "d2", "title": "", "text": "two "},
            {"_id": "d3", "text": " three"}, {"_id": "d4", "title": None, "text": "four"}]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f" query {q} "}) + "\n"
                                                for q in ("q1", "q2", "q3")))
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t0\nq2\td4\t1\nq3\td2\t0\n")
    ours = load_beir(str(root), "dev")
    queries, corpus, relevant = retrieval_worker.read_beir(str(root), "dev")
    assert corpus == dict(zip(ours.doc_ids, ours.documents))
    # The worker keeps every query and leaves the choice to the evaluator (queries with a relevant document).
    assert [q for q in queries if relevant.get(q)] == ours.query_ids
    assert [queries[q] for q in ours.query_ids] == ours.queries
    assert [relevant[q] for q in ours.query_ids] == [set(j) for j in ours.judgments]


def test_the_snli_set_grades_hypotheses_by_label_and_numbers_in_corpus_order(tmp_path):
    data = write_senteval_snli(str(tmp_path / "data"), "dev", n=12)
    queries, corpus, qrels = make_retrieval_set.snli_set(data, "dev")
    assert list(queries) == ["q00000", "q00001", "q00002", "q00003"]
    assert list(corpus) == sorted(corpus) and len(corpus) == 12
    # The fixture's premises each have one hypothesis per label: entailment, neutral, contradiction.
    assert qrels["q00000"] == {"d00000": 2, "d00001": 1, "d00002": 0}
    assert all(not text.endswith(" ") for text in [*queries.values(), *corpus.values()])


def test_the_grown_set_keeps_its_judgments_on_the_same_texts(tmp_path):
    data = write_senteval_snli(str(tmp_path / "data"), "dev", n=12)
    books = tmp_path / "data" / "documents" / "gutenberg"
    books.mkdir(parents=True)
    (books / "books.txt").write_text(" ".join(f"Sentence number {i} is here." for i in range(40)) + "\n")
    counts = make_retrieval_set.write_snli_set(str(tmp_path / "set"), data, "dev", documents=30, seed=1)
    assert counts["documents"] == 30 and counts["queries"] == 4 and counts["judgments"] == 12
    grown = load_beir(str(tmp_path / "set"), "dev")
    _, corpus, qrels = make_retrieval_set.snli_set(data, "dev")
    text = dict(zip(grown.doc_ids, grown.documents))
    assert grown.doc_ids == sorted(grown.doc_ids) and grown.documents[:12] == list(corpus.values())
    assert [{text[d]: g for d, g in j.items()} for j in grown.judgments] == [
        {corpus[d]: g for d, g in qrels[q].items() if g > 0} for q in grown.query_ids]
    assert all(t.startswith("Sentence number") for t in grown.documents[12:])


def test_refuses_to_time_on_a_loaded_machine(tmp_path):
    proc = run_module("bench.retrieval_vs_st", ["--max_load=-1", f"--results_dir={tmp_path / 'page'}",
                                                 f"--work_dir={tmp_path / 'sets'}"])
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Refusing to benchmark" in proc.stderr and "--allow_loaded" in proc.stderr
    assert not os.path.exists(tmp_path / "page") and not os.path.exists(tmp_path / "sets")


def _check(diff):
    metrics = ("ndcg@10", "mrr@10", "recall@1", "recall@10", "recall@100", "map@100", "accuracy@1")
    ours = {m: 0.5 for m in metrics}
    return retrieval_vs_st.compare({**ours, "ndcg@10_graded": 0.45}, {m: 0.5 - diff for m in metrics}, 2e-3)


def test_page_gives_the_verdict_the_graded_ndcg_and_the_loaded_mark():
    entry = {"set": "SNLI dev", "queries": 10, "documents": 30, "dropped_queries": 1, "max_relevant": 3}
    record = {"flags": {"tolerance": 2e-3, "max_load": 0.5, "batch_size": 128, "chunk_size": 10000, "threads": 2},
              "parity": {**entry, "check": _check(0.001)}, "timing_parity": {**entry, "check": _check(0.01)},
              "timing": {"toolkit_seconds": [10.0, 20.0, 40.0], "sentence_transformers_seconds": [20.0, 40.0, 80.0],
                         "queries": 10, "documents": 1000},
              "loaded": True, "load_averages": [{"label": "before start", "load": (0.9, 0.1, 0.1)}],
              "versions": {"toolkit": {"tensorflow": "2", "keras": "3"},
                           "sentence_transformers_side": {"sentence_transformers": "6", "torch": "2",
                                                          "transformers": "5"}}}
    text = "\n".join(retrieval_vs_st.format_page(record))
    assert "The sides agree: largest |difference| 1.0e-03 (tolerance 0.002)" in text
    assert "The sides DISAGREE: largest |difference| 1.0e-02" in text
    assert "| ndcg@10 (binary gains) | 0.5000 | 0.4990 | +1.0e-03 |" in text
    assert "graded nDCG@10 (linear gains, trec_eval's `ndcg_cut.10` as BEIR reports it): 0.4500" in text
    assert "**LOADED" in text
    assert "| toolkit (`retrieval_eval.py`'s library) | 50.0 [25.0-100.0] | 10.0, 20.0, 40.0 |" in text
    assert "toolkit speed / sentence-transformers': 2.00" in text
    json.dumps(record)
