"""Trans-Encoder from the offline MiniLM on a subsample of the official sts_sickr pairs.

    .venv/bin/python -m bench.trans_encoder_bench --data_path=../shared/data
    .venv/bin/python -m bench.trans_encoder_bench --data_path=../shared/data --mutual_init=<run ID>

Draws a seeded sample of the (unlabelled, deduplicated) sts_sickr pairs, trains
`--cycles` cycles of Trans-Encoder with the official settings except the budget
(the sample size and the bi-encoder epochs), then scores on all seven STS sets
(STS12-16 "all", STS-B test, SICK-R test) and STS-B dev: the start bi-encoder,
and after each cycle the bi-encoder (cosine) and the cross-encoder (its pair
scores; with --mutual_init the ensemble of both). Not part of the test suite.
Writes artifacts/bench/trans_encoder_bench.json (trans_encoder_bench_mutual.json with
--mutual_init) and prints a table.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

import numpy as np
from absl import app, flags

from common import cli

flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
flags.DEFINE_string("artifacts_dir", "artifacts/bench", "Where the run is written.")
flags.DEFINE_string("model", "minilm", "Bi-encoder start (spec or run ID).")
flags.DEFINE_string("mutual_init", "", "Second bi-encoder start for mutual distillation (spec or run ID).")
flags.DEFINE_integer("pairs", 1000, "Pairs sampled from sts_sickr (each used in both orders by the cross-encoder).")
flags.DEFINE_integer("cycles", 1, "Trans-Encoder cycles.")
flags.DEFINE_integer("bi_epochs", 1, "Bi-encoder epochs per cycle (the official protocol: 10).")
flags.DEFINE_integer("seed", 0, "Seed of the sample and the run.")
flags.DEFINE_string("resume", "", "Run ID of an interrupted benchmark run (same flags) to continue: finished "
                    "phases are kept, the unfinished one resumes from its last checkpoint.")
FLAGS = flags.FLAGS


def _row(results):
    from common.evaluation.sts import headline_numbers

    return [*headline_numbers(results), results["avg"], results["stsb"]["dev"]]


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    import tensorflow as tf

    from common.evaluation.embedding import embed_sentences, score_sentence_pairs
    from common.evaluation.evaluators import StsbDevEvaluator
    from common.evaluation.sts import evaluate_sts, evaluate_sts_pairs
    from common.training.loop import RunPaths
    from common.training.phases import PhaseRunner
    from common.training.registry import build_config
    from common.training.runs import RunContext, load_run_config, train
    from trans_encoder_tf.data import sts_sickr_pairs
    from trans_encoder_tf.method import _Models, embed_fn_of, members, pair_fn_of

    os.makedirs(FLAGS.artifacts_dir, exist_ok=True)
    pairs = sts_sickr_pairs(FLAGS.data_path)
    chosen = np.random.default_rng(FLAGS.seed).choice(len(pairs), size=min(FLAGS.pairs, len(pairs)), replace=False)
    pair_file = os.path.join(FLAGS.artifacts_dir, f"sts_sickr_sample_{FLAGS.pairs}_{FLAGS.seed}.tsv")
    with open(pair_file, "w", encoding="utf-8") as f:
        f.writelines(f"{pairs[i][0]}\t{pairs[i][1]}\n" for i in sorted(chosen))
    settings = dict(model=FLAGS.model, pairs=pair_file, data_path=FLAGS.data_path, cycles=FLAGS.cycles,
                    train_epochs=FLAGS.bi_epochs, seed=FLAGS.seed, artifacts_dir=FLAGS.artifacts_dir,
                    eval_each_epoch=False, checkpoint_every=10_000, log_every=10)
    if FLAGS.mutual_init:
        settings["mutual_init"] = FLAGS.mutual_init
    config = build_config("trans_encoder", settings)
    if FLAGS.resume:
        # As `train.py --resume=<ID>`: the run's saved settings (which hold the phase budgets it resolved).
        saved = load_run_config(FLAGS.artifacts_dir, FLAGS.resume)
        config = dataclasses.replace(saved, run=dataclasses.replace(saved.run, resume=FLAGS.resume))
    start = time.time()
    run = train(config, evaluator=StsbDevEvaluator(FLAGS.data_path, progress=False))
    train_seconds = round(time.time() - start, 1)
    config = run["config"]

    context = RunContext(config, tf.distribute.get_strategy(), RunPaths.for_run(FLAGS.artifacts_dir, run["run_id"]),
                         chief=True)
    models, team = _Models(context, PhaseRunner(context)), members(config)
    rows, results = {}, {}
    print(f"training: {train_seconds} s; STS-B dev per phase and cycle: {run['run_id']}'s config.json", flush=True)
    print("| model | STS12 | STS13 | STS14 | STS15 | STS16 | STS-B | SICK-R | avg | STS-B dev |", flush=True)

    def save():
        # After every model, so that a time-limited run keeps what it measured.
        name = "trans_encoder_bench_mutual.json" if FLAGS.mutual_init else "trans_encoder_bench.json"
        with open(os.path.join(FLAGS.artifacts_dir, name), "w") as f:
            json.dump({"flags": {k: FLAGS[k].value for k in ("model", "mutual_init", "pairs", "cycles", "bi_epochs",
                                                              "seed")},
                       "run_id": run["run_id"], "train_seconds": train_seconds, "results": results}, f, indent=2)

    def report(name, result):
        results[name], rows[name] = result, _row(result)
        print(f"| {name} | " + " | ".join(f"{x:.2f}" for x in rows[name]) + " |", flush=True)
        save()

    def bi(name, model):
        embed = embed_fn_of(model)
        report(name, evaluate_sts(lambda s: embed_sentences(embed, s, 128, progress=False), FLAGS.data_path))

    def cross(name, cycle):
        fns = [pair_fn_of(models.get("cross", m, cycle)) for m in team]
        score = lambda a, b: np.mean([score_sentence_pairs(fn, a, b, 128, progress=False) for fn in fns], 0)  # noqa
        report(name, evaluate_sts_pairs(score, FLAGS.data_path))

    for m in team:
        bi(f"start bi-encoder {m} ({FLAGS.model if m == 'a' else FLAGS.mutual_init})", models.get("bi", m, 0))
    for cycle in range(1, FLAGS.cycles + 1):
        for m in team:
            bi(f"cycle {cycle} bi-encoder {m}", models.get("bi", m, cycle))
        cross(f"cycle {cycle} cross-encoder{' ensemble' if len(team) > 1 else ''}", cycle)
    print(f"Trans-Encoder from {FLAGS.model}{' + ' + FLAGS.mutual_init if FLAGS.mutual_init else ''}: "
          f"{len(chosen)} sts_sickr pairs, {FLAGS.cycles} cycle(s), cross 1 epoch batch 32, bi {FLAGS.bi_epochs} "
          f"epoch(s) batch 128, seed {FLAGS.seed}; training {train_seconds} s (run {run['run_id']})")
    print("| model | STS12 | STS13 | STS14 | STS15 | STS16 | STS-B | SICK-R | avg | STS-B dev |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(f"{x:.2f}" for x in row) + " |")


if __name__ == "__main__":
    cli.run(main)
