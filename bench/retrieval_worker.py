"""The sentence-transformers side of bench/retrieval_vs_st.py, run with the reference environment's Python
(`make reference-env`). Imports nothing of this project.

    .venv-ref/bin/python bench/retrieval_worker.py --model=<sentence-transformers folder> --threads=2

A persistent worker: one JSON command per line on stdin, one JSON answer per line on stdout (each
answer has "ok"; a failed command answers "ok": false and "error"):

    {"cmd": "warm", "sentences": [...], "batch_size": 128}: encodes them untimed (the first call's
        one-off costs stay out of the timings).
    {"cmd": "evaluate", "data": <BEIR folder>, "split": "dev", "batch_size": 128, "chunk_size": 10000}:
        reads the folder (`read_beir`: BEIR's own conventions), then runs sentence-transformers'
        `InformationRetrievalEvaluator` (the model's similarity, cosine for MiniLM; its corpus in chunks
        of `chunk_size`) with the cuts the toolkit reports. Answers {"metrics": {"ndcg@10", "mrr@10",
        "recall@1", "recall@10", "recall@100", "map@100", "accuracy@1"}, "queries", "documents",
        "seconds"}: time.perf_counter around reading and evaluating, as the toolkit's side is timed.
    {"cmd": "quit"}.

HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set before anything of Hugging Face is imported: the
model is a local folder and nothing may reach the hub. argparse, not absl: the reference environment
has no absl.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# sentence-transformers' metric name -> the toolkit's JSON key (the cuts the toolkit reports).
CUTS = {"ndcg_at_k": [10], "mrr_at_k": [10], "precision_recall_at_k": [1, 10, 100], "map_at_k": [100],
        "accuracy_at_k": [1]}
KEYS = ("ndcg@10", "mrr@10", "recall@1", "recall@10", "recall@100", "map@100", "accuracy@1")


def read_beir(data: str, split: str):
    """(queries {id: text}, corpus {id: text}, relevant {query id: set of document ids}) of a BEIR folder,
    as BEIR's loader and `SentenceBERT.encode_corpus` read it: a document is `(title + " " + text).strip()`
    (without a title, `text.strip()`); a document is relevant when its qrels score is above 0. Queries
    without a relevant document are kept here; the evaluator leaves them out."""
    queries, corpus, relevant = {}, {}, {}
    with open(os.path.join(data, "queries.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                queries[str(row["_id"])] = row["text"]
    with open(os.path.join(data, "corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                title = row.get("title")
                corpus[str(row["_id"])] = (row["text"].strip() if title is None
                                           else (title + " " + row["text"]).strip())
    with open(os.path.join(data, "qrels", f"{split}.tsv"), encoding="utf-8", newline="") as f:
        rows = csv.reader(f, delimiter="\t")
        next(rows)  # the header
        for row in rows:
            if row and int(row[2]) > 0:
                relevant.setdefault(row[0], set()).add(row[1])
    return queries, corpus, relevant


def set_threads(threads: int) -> None:
    """The toolkit side's thread count: OpenMP/MKL pools and torch's intra/inter-op pools."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # already set (it can be set once, before any inter-op work)
        pass


def versions() -> dict:
    import sentence_transformers
    import torch
    import transformers

    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "sentence_transformers": sentence_transformers.__version__, "transformers": transformers.__version__,
            "torch_threads": torch.get_num_threads()}


def _evaluator_class():
    try:  # sentence-transformers 6
        from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    except ImportError:  # earlier versions
        from sentence_transformers.evaluation import InformationRetrievalEvaluator
    return InformationRetrievalEvaluator


def evaluate(model, cmd: dict) -> dict:
    start = time.perf_counter()
    queries, corpus, relevant = read_beir(cmd["data"], cmd.get("split", "test"))
    evaluator = _evaluator_class()(queries=queries, corpus=corpus, relevant_docs=relevant,
                                   corpus_chunk_size=int(cmd.get("chunk_size", 50000)),
                                   batch_size=int(cmd.get("batch_size", 32)), show_progress_bar=False,
                                   write_csv=False, **CUTS)
    found = evaluator(model)
    seconds = time.perf_counter() - start
    prefix = f"{model.similarity_fn_name}_"
    metrics = {key: float(found[prefix + key]) for key in KEYS}
    return {"metrics": metrics, "queries": len(evaluator.queries), "documents": len(evaluator.corpus),
            "seconds": seconds, "similarity": model.similarity_fn_name}


def serve(folder: str, threads: int) -> int:
    # Answers go to the real stdout alone; anything a library prints goes to stderr.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr
    set_threads(threads)
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(folder, device="cpu")
    model.eval()
    answers.write(json.dumps({"ok": True, "ready": True, **versions()}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        try:
            if cmd["cmd"] == "quit":
                answers.write(json.dumps({"ok": True}) + "\n")
                return 0
            if cmd["cmd"] == "warm":
                model.encode(cmd["sentences"], batch_size=int(cmd.get("batch_size", 32)), convert_to_numpy=True)
                answer = {}
            elif cmd["cmd"] == "evaluate":
                answer = evaluate(model, cmd)
            else:
                raise ValueError(f"unknown command {cmd['cmd']!r}; expected warm, evaluate or quit")
            answer = {"ok": True, **answer}
        except Exception as error:  # the parent reports it; the worker stays up
            answer = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        answers.write(json.dumps(answer) + "\n")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="A sentence-transformers folder (loaded offline).")
    parser.add_argument("--threads", type=int, default=2, help="torch intra- and inter-op threads.")
    args = parser.parse_args(argv)
    return serve(args.model, args.threads)


if __name__ == "__main__":
    sys.exit(main())
