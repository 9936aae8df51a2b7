"""Unsupervised SimCSE from the offline MiniLM, and the clustering evaluation on TREC.

    .venv/bin/python -m bench.simcse_bench --data_path=../shared/data

Trains unsup SimCSE for a fixed budget on sentences of the shared data (SNLI dev+test
sentences by default), reports STS-B dev and SICK-R test Spearman before and after,
then runs cluster_eval.py's evaluation on TREC (6 coarse classes) for MiniLM and the
trained model (V-measure; PNG pictures under artifacts/bench/test/). Not part of the
test suite. Writes artifacts/bench/simcse_bench.json.
"""

from __future__ import annotations

import json
import os
import time

from absl import app, flags

from common import cli  # first: it quiets TensorFlow's start-up

flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
flags.DEFINE_string("artifacts_dir", "artifacts/bench", "Where the run and pictures are written.")
flags.DEFINE_list("train_data", ["senteval:dev", "senteval:test"], "SimCSE sentences (see train.py --help).")
flags.DEFINE_integer("steps", 250, "Optimizer steps (batch 64, max length 32, lr 3e-5: the paper's).")
flags.DEFINE_string("pooling", "cls_mlp", "SimCSE pooling.")
flags.DEFINE_integer("seed", 0, "Seed.")
FLAGS = flags.FLAGS


def _sts(embedder, data_path):
    from common.evaluation.sts import sickr_test_spearman, stsb_dev_spearman

    embed = lambda s: embedder.embed(s, progress=False)  # noqa: E731
    return {"stsb_dev": stsb_dev_spearman(embed, data_path), "sickr_test": sickr_test_spearman(embed, data_path)}


def _clusters(embedder, data_path, out_dir):
    from common import artifacts
    from common.evaluation.clustering import cluster_scores, load_senteval_task, plot_projection, project_2d

    texts, labels = load_senteval_task(data_path, "TREC", "train")
    vectors = embedder.embed(texts, progress=False)
    scores = cluster_scores(vectors, labels, FLAGS.seed)
    picture = artifacts.join(out_dir, f"cluster_{embedder.name}_TREC.png")
    plot_projection(project_2d(vectors, "pca", FLAGS.seed), labels, picture,
                    f"{embedder.name} on TREC train (PCA); V-measure {scores['v_measure']:.1f}")
    return {**scores, "picture": picture}


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    from common.evaluation.resolve import resolve_model
    from common.training.registry import build_config
    from common.training.runs import train

    out_dir = os.path.join(FLAGS.artifacts_dir, "test")
    os.makedirs(out_dir, exist_ok=True)
    minilm = resolve_model("minilm")
    results = {"untrained MiniLM": {**_sts(minilm, FLAGS.data_path), "trec": _clusters(minilm, FLAGS.data_path, out_dir)}}
    start = time.time()
    run = train(build_config("simcse", dict(
        simcse_mode="unsup", model="minilm", train_data=tuple(FLAGS.train_data), data_path=FLAGS.data_path,
        train_steps_per_epoch=FLAGS.steps, pooling=FLAGS.pooling, seed=FLAGS.seed, artifacts_dir=FLAGS.artifacts_dir,
        eval_each_epoch=False, checkpoint_every=10_000, log_every=25)))
    train_seconds = round(time.time() - start, 1)  # before scoring, which takes minutes of its own
    trained = resolve_model(run["run_id"], artifacts_dir=FLAGS.artifacts_dir)
    results["unsup SimCSE"] = {**_sts(trained, FLAGS.data_path), "trec": _clusters(trained, FLAGS.data_path, out_dir),
                               "run_id": run["run_id"], "train_seconds": train_seconds,
                               "sentences": run["data"]["examples"]}
    print(f"unsup SimCSE from MiniLM: {FLAGS.steps} steps of 64 sentences ({','.join(FLAGS.train_data)}), "
          f"pooling {FLAGS.pooling}, seed {FLAGS.seed}")
    print("| model | STS-B dev | SICK-R test | TREC V-measure |\n| --- | --- | --- | --- |")
    for name, r in results.items():
        print(f"| {name} | {r['stsb_dev']:.2f} | {r['sickr_test']:.2f} | {r['trec']['v_measure']:.2f} |")
    with open(os.path.join(FLAGS.artifacts_dir, "simcse_bench.json"), "w") as f:
        json.dump({"flags": {"steps": FLAGS.steps, "pooling": FLAGS.pooling, "seed": FLAGS.seed,
                             "train_data": FLAGS.train_data}, "results": results}, f, indent=2)


if __name__ == "__main__":
    cli.run(main)
