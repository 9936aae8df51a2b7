"""DeCLUTR ablation from the offline MiniLM on the shared documents.

    .venv/bin/python -m bench.declutr_bench --data_path=../shared/data

Continues training MiniLM for a fixed budget with contrastive + MLM, contrastive
only and MLM only (same steps, seed and spans), and scores each and the
untrained model on STS-B dev, SICK-R test and SentEval transfer tasks
(`--senteval_tasks`, `--senteval_config`; empty to skip). Not part of the test
suite. Writes artifacts/bench/declutr_bench.json.
"""

from __future__ import annotations

import json
import os
import time

from absl import app, flags

from common import cli  # first: it quiets TensorFlow's start-up

flags.DEFINE_string("data_path", "data", "Data root (holds downstream/ and documents/).")
flags.DEFINE_string("artifacts_dir", "artifacts/bench", "Where the benchmark runs are written.")
flags.DEFINE_list("train_data", ["documents/wikitext-2-raw/test.txt", "documents/wikitext-2-tokenized/valid.txt"],
                  "Documents, relative to --data_path.")
flags.DEFINE_integer("steps", 120, "Optimizer steps per variant.")
flags.DEFINE_integer("batch_size", 4, "Documents per batch (x num_anchors anchors).")
flags.DEFINE_integer("min_span_len", 16, "l_min (the paper: 32).")
flags.DEFINE_integer("max_span_len", 128, "l_max (the paper: 512; shorter here for a CPU budget).")
flags.DEFINE_integer("max_seq_len", 192, "Word-piece truncation length.")
flags.DEFINE_list("senteval_tasks", ["MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC"], "SentEval tasks; empty: skip.")
flags.DEFINE_string("senteval_config", "fast", "SentEval setting.")
flags.DEFINE_integer("seed", 0, "Seed shared by every variant.")
FLAGS = flags.FLAGS


def _scores(embedder, data_path):
    from common.evaluation.senteval import EmbeddingCache, evaluate_senteval, get_config
    from common.evaluation.sts import sickr_test_spearman, stsb_dev_spearman

    embed = lambda s: embedder.embed(s, progress=False)  # noqa: E731
    out = {"stsb_dev": stsb_dev_spearman(embed, data_path), "sickr_test": sickr_test_spearman(embed, data_path)}
    if FLAGS.senteval_tasks:
        senteval = evaluate_senteval(lambda s, desc: embed(s), data_path, FLAGS.senteval_tasks,
                                     get_config(FLAGS.senteval_config), 1111, EmbeddingCache(), embedder.name)
        out["senteval"] = {t: r.get("acc") for t, r in senteval["tasks"].items()}
        out["senteval_mean"] = sum(out["senteval"].values()) / len(out["senteval"])
    return out


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    from common.evaluation.resolve import resolve_model
    from common.training.registry import build_config
    from common.training.runs import train

    base = build_config("declutr", dict(
        model="minilm", train_data=tuple(FLAGS.train_data), data_path=FLAGS.data_path, train_epochs=1,
        train_steps_per_epoch=FLAGS.steps, batch_size=FLAGS.batch_size, min_span_len=FLAGS.min_span_len,
        max_span_len=FLAGS.max_span_len, max_seq_len=FLAGS.max_seq_len, seed=FLAGS.seed,
        artifacts_dir=FLAGS.artifacts_dir, eval_each_epoch=False, checkpoint_every=10_000, log_every=20))
    variants = {
        "contrastive + MLM": base,
        "contrastive only": base.replace(mlm=False),
        "MLM only": base.replace(contrastive=False),
    }
    results = {"untrained MiniLM": _scores(resolve_model("minilm"), FLAGS.data_path)}
    for name, config in variants.items():
        start = time.time()
        run = train(config)
        train_seconds = round(time.time() - start, 1)  # before scoring, which takes minutes of its own
        results[name] = {**_scores(resolve_model(run["run_id"], artifacts_dir=FLAGS.artifacts_dir),
                                   FLAGS.data_path),
                         "run_id": run["run_id"], "train_seconds": train_seconds,
                         "documents": run["data"]["documents"], "skipped_short": run["data"]["skipped_short"]}
    tasks = FLAGS.senteval_tasks
    print(f"MiniLM + DeCLUTR, {FLAGS.steps} steps of {FLAGS.batch_size} documents, spans {FLAGS.min_span_len}-"
          f"{FLAGS.max_span_len} tokens, seed {FLAGS.seed}; SentEval '{FLAGS.senteval_config}'")
    print("| model | STS-B dev | SICK-R test | " + " | ".join(tasks) + (" | mean |" if tasks else ""))
    print("| --- " * (3 + len(tasks) + (1 if tasks else 0)) + "|")
    for name, r in results.items():
        cells = [f"{r['stsb_dev']:.2f}", f"{r['sickr_test']:.2f}"]
        if tasks:
            cells += [f"{r['senteval'][t]:.2f}" for t in tasks] + [f"{r['senteval_mean']:.2f}"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    os.makedirs(FLAGS.artifacts_dir, exist_ok=True)
    with open(os.path.join(FLAGS.artifacts_dir, "declutr_bench.json"), "w") as f:
        json.dump({"flags": {k: FLAGS[k].value for k in ("steps", "batch_size", "min_span_len", "max_span_len",
                                                       "max_seq_len", "seed", "senteval_config")},
                   "results": results}, f, indent=2)


if __name__ == "__main__":
    cli.run(main)
