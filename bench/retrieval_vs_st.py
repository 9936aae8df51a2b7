"""retrieval_eval.py's library against sentence-transformers' InformationRetrievalEvaluator: the same
metrics on the same BEIR set, then the speed of both on a 100,000-document corpus.

    make reference-env          # once: PyTorch (CPU) + sentence-transformers in .venv-ref
    .venv/bin/python -m bench.retrieval_vs_st --data_path=../shared/data

The set is `bench/make_retrieval_set.py`'s: SentEval's SNLI dev premises retrieving their hypotheses
(entailment graded 2, neutral 1, contradiction 0), written to --work_dir.

1. Parity (--measure=parity): MiniLM through the toolkit (`common.evaluation.retrieval`: exact
   chunked cosine search, then the metrics) and through sentence-transformers' evaluator
   (bench/retrieval_worker.py, in the reference environment, which imports nothing of this project),
   each metric compared; they must agree within --tolerance. sentence-transformers only knows sets of
   relevant documents, so its nDCG@10 is compared with the toolkit's binary nDCG (`relevance="binary"`);
   the toolkit's graded nDCG@10 (trec_eval's, BEIR's) is reported beside it. MAP@100's denominators
   differ only for a query with more than 100 relevant documents; the page says how many relevant
   documents the set's queries have at most.
2. Timing (--measure=timing): the same queries against the set grown to --timing_documents documents
   with book sentences, both sides end to end (reading the set, embedding queries and corpus, search,
   metrics), alternating toolkit then sentence-transformers, --rounds times; documents/s. Their metrics
   at that size are compared as well. Needs an otherwise idle machine: it refuses to start when the
   1-minute load average exceeds --max_load; --allow_loaded runs anyway, and a run during which other
   processes used more than --max_load cores (bench.vs_sentence_transformers' LoadLog) is marked LOADED.

Both sides get the same batch size, corpus chunk size, thread count and the model's own max length.
Writes the dated results page and results.json to --results_dir, and prints the tables.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

from absl import app, flags

from common import cli

from bench import harness
from bench.vs_sentence_transformers import LoadLog, Reference, summary, thread_env

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASUREMENTS = ("parity", "timing")

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The benchmark's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("data_path", "data", "Data root (holds downstream/SNLI and documents/gutenberg).")
    flags.DEFINE_string("reference_python", ".venv-ref/bin/python",
                        "Python of the reference environment (`make reference-env`).")
    flags.DEFINE_string("results_dir", "docs/benchmarks/retrieval", "Where the results page (README.md) and "
                        "results.json are written.")
    flags.DEFINE_string("work_dir", None, "Where the BEIR sets are written; default: a temporary folder.")
    flags.DEFINE_list("measure", list(MEASUREMENTS), f"What to run: {', '.join(MEASUREMENTS)}.")
    flags.DEFINE_string("split", "dev", "SentEval's SNLI split the set is made of.")
    flags.DEFINE_integer("max_pairs", 0, "Use the split's first this many pairs (0: all), for a quick run.",
                         lower_bound=0)
    flags.DEFINE_integer("timing_documents", 100_000, "Documents of the timed corpus.", lower_bound=1)
    flags.DEFINE_integer("rounds", 3, "Timed rounds; each runs the toolkit, then sentence-transformers.",
                         lower_bound=1)
    flags.DEFINE_integer("threads", 2, "Threads of both sides (intra- and inter-op).", lower_bound=1)
    flags.DEFINE_integer("batch_size", 128, "Encoding batch size of both sides.", lower_bound=1)
    flags.DEFINE_integer("chunk_size", 10_000, "Corpus chunk of both sides (the toolkit's --chunk_size, "
                         "sentence-transformers' corpus_chunk_size).", lower_bound=1)
    flags.DEFINE_float("tolerance", 2e-3, "Largest accepted |toolkit - sentence-transformers| of a metric.")
    flags.DEFINE_float("max_load", 0.5, "Refuse to time when the 1-minute load average exceeds this.")
    flags.DEFINE_bool("allow_loaded", False, "Time on a loaded machine anyway; the page is then marked LOADED.")
    flags.DEFINE_integer("seed", 0, "Seed of the book sentences of the timed corpus.")


def compare(ours: dict, theirs: dict, tolerance: float) -> dict:
    """Per metric: both values, the difference and whether it is within `tolerance`; `ours` holds the
    toolkit's binary metrics (sentence-transformers' nDCG is binary) and "ndcg@10_graded"."""
    from common.evaluation.retrieval import METRICS

    rows = {k: {"toolkit": ours[k], "sentence_transformers": theirs[k], "diff": ours[k] - theirs[k],
                "agree": abs(ours[k] - theirs[k]) <= tolerance} for k in METRICS}
    return {"metrics": rows, "agree": all(r["agree"] for r in rows.values()),
            "max_abs_diff": max(abs(r["diff"]) for r in rows.values()), "ndcg@10_graded": ours["ndcg@10_graded"]}


def toolkit_metrics(embed, data: str, split: str, chunk_size: int) -> dict:
    """Reads the set and searches once, end to end as `evaluate_retrieval` does (the metrics with binary
    nDCG, sentence-transformers' kind); then, outside "seconds", the graded nDCG and the set's counts."""
    from common.evaluation.retrieval import load_beir, rank_documents, retrieval_metrics

    start = time.perf_counter()
    dataset = load_beir(data, split)
    rankings = rank_documents(embed, dataset, chunk_size, progress=False)
    binary = retrieval_metrics(rankings, dataset.judgments, relevance="binary")
    seconds = time.perf_counter() - start
    graded = retrieval_metrics(rankings, dataset.judgments, relevance="graded")
    return {**binary, "ndcg@10_graded": graded["ndcg@10"], "queries": len(dataset.queries),
            "documents": len(dataset.documents), "dropped_queries": dataset.dropped_queries,
            "max_relevant": max(len(j) for j in dataset.judgments), "seconds": seconds}


def format_page(record: dict) -> list:
    """The page's body: the parity table, the timing table, the setting."""
    from common.evaluation.retrieval import METRICS

    flags_, lines = record["flags"], []
    for name, title in (("parity", "Parity"), ("timing_parity", "Metrics at the timed size")):
        entry = record.get(name)
        if not entry:
            continue
        check = entry["check"]
        verdict = "agree" if check["agree"] else "DISAGREE"
        lines += [f"## {title}", "",
                  f"{entry['set']}: {entry['queries']} queries ({entry['dropped_queries']} without a relevant "
                  f"document left out by both), {entry['documents']} documents; at most {entry['max_relevant']} "
                  "relevant documents per query.", "",
                  "| metric | toolkit | sentence-transformers | difference |", "| --- | --- | --- | --- |"]
        for metric in METRICS:
            row = check["metrics"][metric]
            label = "ndcg@10 (binary gains)" if metric == "ndcg@10" else metric
            lines.append(f"| {label} | {row['toolkit']:.4f} | {row['sentence_transformers']:.4f} | "
                         f"{row['diff']:+.1e} |")
        lines += ["", f"The sides {verdict}: largest |difference| {check['max_abs_diff']:.1e} (tolerance "
                      f"{flags_['tolerance']}). The toolkit's graded nDCG@10 (linear gains, trec_eval's "
                      f"`ndcg_cut.10` as BEIR reports it): {check['ndcg@10_graded']:.4f}.", ""]
    timing = record.get("timing")
    if timing:
        ours = summary([timing["documents"] / s for s in timing["toolkit_seconds"]])
        theirs = summary([timing["documents"] / s for s in timing["sentence_transformers_seconds"]])
        lines += ["## Speed", ""]
        if record["loaded"]:
            lines += [f"**LOADED: other processes used more than --max_load={flags_['max_load']} cores during this "
                      "run (or the load average exceeded it at the start); these numbers are not a fair "
                      "comparison.**", ""]
        lines += ["| side | documents/s | seconds per round |", "| --- | --- | --- |",
                  f"| toolkit (`retrieval_eval.py`'s library) | {ours['median']:.1f} [{ours['min']:.1f}-"
                  f"{ours['max']:.1f}] | " + ", ".join(f"{s:.1f}" for s in timing["toolkit_seconds"]) + " |",
                  f"| sentence-transformers (InformationRetrievalEvaluator) | {theirs['median']:.1f} "
                  f"[{theirs['min']:.1f}-{theirs['max']:.1f}] | "
                  + ", ".join(f"{s:.1f}" for s in timing["sentence_transformers_seconds"]) + " |", "",
                  f"toolkit speed / sentence-transformers': {ours['median'] / theirs['median']:.2f}. Median "
                  f"[min-max] over {ours['n']} rounds, the sides alternating within each round; each round reads "
                  f"the set, embeds {timing['queries']} queries and {timing['documents']} documents, searches "
                  "and scores.", ""]
    v = record["versions"]
    lines += ["## Setting", "",
              f"MiniLM (all-MiniLM-L6-v2, the offline copy) at its own max length on both sides; batch size "
              f"{flags_['batch_size']}, corpus chunk {flags_['chunk_size']}, {flags_['threads']} threads per side. "
              f"Toolkit: TensorFlow {v['toolkit']['tensorflow']}, Keras {v['toolkit']['keras']}. "
              f"sentence-transformers {v['sentence_transformers_side']['sentence_transformers']}, torch "
              f"{v['sentence_transformers_side']['torch']}, transformers "
              f"{v['sentence_transformers_side']['transformers']}.",
              "Load average (1 min, the benchmark's own threads included): " + ", ".join(
                  f"{r['load'][0]:.2f} ({r['label']})" for r in record["load_averages"]) + "."]
    return lines


def main(argv):
    unknown = sorted(set(FLAGS.measure) - set(MEASUREMENTS))
    if unknown or not FLAGS.measure:
        raise app.UsageError(f"--measure={','.join(FLAGS.measure)}: expected some of {', '.join(MEASUREMENTS)}.")
    loads = LoadLog(FLAGS.max_load)
    first = loads.read("before start")
    if "timing" in FLAGS.measure and first[0] > FLAGS.max_load and not FLAGS.allow_loaded:
        print(f"Refusing to benchmark: the 1-minute load average is {first[0]:.2f}, above --max_load="
              f"{FLAGS.max_load}; the speeds would say more about the machine than about either side. Run on an "
              "idle machine, pass --allow_loaded for a run marked LOADED, or --measure=parity (no timing).",
              file=sys.stderr)
        return 2
    # Threads before TensorFlow starts its runtime; the same numbers reach the worker.
    os.environ.update(thread_env(FLAGS.threads))
    import keras
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)

    from bench.make_retrieval_set import write_snli_set
    from common.loading.resolve import resolve_model
    from common.evaluation.retrieval import load_beir
    from common.models.sources.names import minilm_dir

    work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="retrieval_sets_")
    parity_set = os.path.join(work_dir, f"snli_{FLAGS.split}" + (f"_{FLAGS.max_pairs}" if FLAGS.max_pairs else ""))
    timed_set = f"{parity_set}_{FLAGS.timing_documents}"
    sets = {"parity": write_snli_set(parity_set, FLAGS.data_path, FLAGS.split, FLAGS.max_pairs)}
    if "timing" in FLAGS.measure:
        sets["timing"] = write_snli_set(timed_set, FLAGS.data_path, FLAGS.split, FLAGS.max_pairs,
                                        FLAGS.timing_documents, FLAGS.seed)
    print(f"sets written under {work_dir}: " + "; ".join(f"{k} {v}" for k, v in sets.items()), flush=True)

    embedder = resolve_model("minilm")

    def embed(texts):
        return embedder.embed(texts, FLAGS.batch_size, progress=False)

    reference = Reference(FLAGS.reference_python, minilm_dir(), FLAGS.threads, worker="retrieval_worker.py")
    loads.own_pids.append(reference.process.pid)
    record = {"flags": {k: FLAGS[k].value for k in ("measure", "split", "max_pairs", "timing_documents", "rounds",
                                                    "threads", "batch_size", "chunk_size", "tolerance", "max_load",
                                                    "allow_loaded", "seed")},
              "sets": sets}
    ask = dict(split=FLAGS.split, batch_size=FLAGS.batch_size, chunk_size=FLAGS.chunk_size)
    try:
        # One untimed encoding on each side first, so that no one-off cost (tracing, allocation) is timed.
        warm = load_beir(parity_set, FLAGS.split).documents[:2 * FLAGS.batch_size]
        embed(warm)
        reference.ask(cmd="warm", sentences=warm, batch_size=FLAGS.batch_size)
        loads.read("models loaded and warm")
        described = f"SNLI {FLAGS.split}" + (f", first {FLAGS.max_pairs} pairs" if FLAGS.max_pairs else "")
        if "parity" in FLAGS.measure:
            ours = toolkit_metrics(embed, parity_set, FLAGS.split, FLAGS.chunk_size)
            theirs = reference.ask(cmd="evaluate", data=parity_set, **ask)
            record["parity"] = {"set": described, "queries": ours["queries"], "documents": ours["documents"],
                                "dropped_queries": ours["dropped_queries"], "max_relevant": ours["max_relevant"],
                                "toolkit": ours, "sentence_transformers": theirs,
                                "check": compare(ours, theirs["metrics"], FLAGS.tolerance)}
            if (theirs["queries"], theirs["documents"]) != (ours["queries"], ours["documents"]):
                raise RuntimeError(f"the sides read different sets: {theirs['queries']} queries and "
                                   f"{theirs['documents']} documents, against the toolkit's {ours['queries']} and "
                                   f"{ours['documents']}.")
            loads.read("after parity")
        if "timing" in FLAGS.measure:
            timing = {"toolkit_seconds": [], "sentence_transformers_seconds": []}
            for r in range(FLAGS.rounds):
                ours = toolkit_metrics(embed, timed_set, FLAGS.split, FLAGS.chunk_size)
                theirs = reference.ask(cmd="evaluate", data=timed_set, **ask)
                timing["toolkit_seconds"].append(ours["seconds"])
                timing["sentence_transformers_seconds"].append(theirs["seconds"])
                timing.update(queries=ours["queries"], documents=ours["documents"])
                print(f"  round {r + 1}: toolkit {ours['documents'] / ours['seconds']:.1f}, sentence-transformers "
                      f"{theirs['documents'] / theirs['seconds']:.1f} documents/s", flush=True)
                if r == 0:
                    record["timing_parity"] = {
                        "set": f"{described}, grown to {ours['documents']} documents with book sentences",
                        "queries": ours["queries"], "documents": ours["documents"],
                        "dropped_queries": ours["dropped_queries"], "max_relevant": ours["max_relevant"],
                        "toolkit": ours, "sentence_transformers": theirs,
                        "check": compare(ours, theirs["metrics"], FLAGS.tolerance)}
                loads.read(f"after round {r + 1}")
            record["timing"] = timing
    finally:
        reference.close()
        if not FLAGS.work_dir:  # the sets take seconds to write again
            shutil.rmtree(work_dir, ignore_errors=True)
    loads.read("after the last measurement")
    record.update(loaded="timing" in FLAGS.measure and loads.loaded, load_averages=loads.readings,
                  versions={"toolkit": {"python": sys.version.split()[0], "tensorflow": tf.__version__,
                                        "keras": keras.__version__},
                            "sentence_transformers_side": {k: v for k, v in reference.info.items()
                                                           if k not in ("ok", "ready")}})
    others = [r["other_cores"] for r in loads.readings if r.get("other_cores") is not None]
    load_line = (f"Load: {'LOADED' if record['loaded'] else 'idle' if 'timing' in FLAGS.measure else 'not timed'}; "
                 f"1-minute load average {first[0]:.2f} at the start"
                 + (f", other processes used at most {max(others):.2f} cores between any two readings" if others
                    else ""))
    body = format_page(record)
    harness.write_page(FLAGS.results_dir, "Retrieval against sentence-transformers", "bench.retrieval_vs_st", body,
                       record, setting=[load_line])
    print("\n".join(body))
    print(f"\nwritten: {FLAGS.results_dir}/README.md, results.json")
    failed = [name for name in ("parity", "timing_parity") if name in record and not record[name]["check"]["agree"]]
    return 1 if failed else 0


if __name__ == "__main__":
    define_flags()
    cli.run(main)
