"""PAUSE vs its ablations from the offline MiniLM on the shared SNLI pairs.

    .venv/bin/python -m bench.pause_bench --data_path=../shared/data

Same steps, seed and 5 % labels for: (a) PAUSE, (b) supervised only (cross-
entropy on the same 5 % of labels, batches all labelled, no PU term), (c) PAUSE
with the original per-epoch annealing; plus the untrained MiniLM. Reports STS-B
dev and SICK-R test Spearman, and training throughput (pairs/s) with dynamic
padding vs padding to 128. Not part of the test suite; run it on an idle machine.
Writes artifacts/bench/pause_bench.json.
"""

from __future__ import annotations

import json
import os
import time

from absl import app, flags

from common import cli  # first: it quiets TensorFlow's start-up

flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
flags.DEFINE_string("artifacts_dir", "artifacts/bench", "Where the benchmark runs are written.")
flags.DEFINE_integer("train_epochs", 4, "Epochs per variant.")
flags.DEFINE_integer("train_steps_per_epoch", 60, "Steps per epoch.")
flags.DEFINE_integer("batch_size", 32, "Global batch size (pairs).")
flags.DEFINE_float("pos_sample_prec", 5, "Percent of labels kept.")
flags.DEFINE_integer("throughput_steps", 25, "Steps of each throughput run (the first 5 are not timed).")
flags.DEFINE_integer("seed", 0, "Seed shared by every variant.")
flags.DEFINE_bool("throughput_only", False, "Only measure training throughput (dynamic vs fixed 128).")
FLAGS = flags.FLAGS


def _scores(embed, data_path):
    from common.evaluation.sts import sickr_test_spearman, stsb_dev_spearman

    return {"stsb_dev": stsb_dev_spearman(embed, data_path), "sickr_test": sickr_test_spearman(embed, data_path)}


def _throughput(base, pad):
    from common.training.runs import train

    times = []
    config = base.replace(train_epochs=1, train_steps_per_epoch=FLAGS.throughput_steps, max_seq_len=128,
                          pad_to_multiple_of=pad, eval_each_epoch=False, checkpoint_every=10_000, log_every=10_000)
    train(config, after_step=lambda step, model: times.append(time.perf_counter()))
    timed = times[5:]
    return FLAGS.batch_size * (len(timed) - 1) / (timed[-1] - timed[0])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    from common.evaluation.resolve import resolve_model
    from common.training.registry import build_config
    from common.training.runs import train

    base = build_config("pause", dict(
        model="minilm", train_data=("senteval:dev", "senteval:test"), data_path=FLAGS.data_path,
        train_epochs=FLAGS.train_epochs, train_steps_per_epoch=FLAGS.train_steps_per_epoch,
        batch_size=FLAGS.batch_size, max_seq_len=128, pos_sample_prec=FLAGS.pos_sample_prec, seed=FLAGS.seed,
        artifacts_dir=FLAGS.artifacts_dir, eval_each_epoch=False, checkpoint_every=10_000, log_every=20))
    variants = {
        "(a) PAUSE": base,
        "(b) supervised only": base.replace(annealing="off", labeled_batch_fraction=1.0),
        "(c) PAUSE, per-epoch annealing": base.replace(annealing="per_epoch"),
    }
    if FLAGS.throughput_only:
        throughput = {"dynamic": _throughput(base, 1), "fixed 128": _throughput(base, 128)}
        print(f"training throughput (pairs/s, batch {FLAGS.batch_size}): dynamic padding "
              f"{throughput['dynamic']:.1f}, padding to 128 {throughput['fixed 128']:.1f}")
        return
    results = {}
    minilm = resolve_model("minilm")
    results["untrained MiniLM"] = _scores(lambda s: minilm.embed(s, progress=False), FLAGS.data_path)
    for name, config in variants.items():
        start = time.time()
        run = train(config)
        train_seconds = round(time.time() - start, 1)  # before scoring, which takes minutes of its own
        embedder = resolve_model(run["run_id"], artifacts_dir=FLAGS.artifacts_dir)
        results[name] = {**_scores(lambda s: embedder.embed(s, progress=False), FLAGS.data_path),
                         "run_id": run["run_id"], "train_seconds": train_seconds,
                         "final_pu_weight": run["metrics"].get("pu_weight")}
    throughput = {"dynamic": _throughput(base, 1), "fixed 128": _throughput(base, 128)}
    steps = FLAGS.train_epochs * FLAGS.train_steps_per_epoch
    print(f"MiniLM, SNLI dev+test (SentEval files), {FLAGS.pos_sample_prec:g} % labels, {steps} steps of "
          f"{FLAGS.batch_size} pairs, seed {FLAGS.seed}")
    print("| model | STS-B dev | SICK-R test |\n| --- | --- | --- |")
    for name, r in results.items():
        print(f"| {name} | {r['stsb_dev']:.2f} | {r['sickr_test']:.2f} |")
    print(f"training throughput (pairs/s): dynamic padding {throughput['dynamic']:.1f}, "
          f"padding to 128 {throughput['fixed 128']:.1f}")
    os.makedirs(FLAGS.artifacts_dir, exist_ok=True)
    with open(os.path.join(FLAGS.artifacts_dir, "pause_bench.json"), "w") as f:
        json.dump({"flags": {k: FLAGS[k].value for k in ("train_epochs", "train_steps_per_epoch", "batch_size",
                                                       "pos_sample_prec", "seed")},
                   "results": results, "throughput_pairs_per_s": throughput}, f, indent=2)


if __name__ == "__main__":
    cli.run(main)
