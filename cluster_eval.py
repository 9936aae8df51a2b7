"""Clusters a labelled collection with each model's embeddings: k-means (k = number
of labels), V-measure against the labels, and a 2-D picture coloured by label.

    python cluster_eval.py --models=minilm,20261122-101500 --dataset=TREC --data_path=../shared/data
    python cluster_eval.py --models=minilm --dataset=my_texts.tsv --text_column=text --label_column=label

Writes artifacts/test/cluster_<model>_<dataset>.json and .png per model and prints one table.
"""

from __future__ import annotations

import os

import tensorflow as tf
from absl import app, flags

from common import cli  # first: it quiets TensorFlow's start-up

from common import artifacts
from common.evaluation.clustering import PROJECTIONS, cluster_scores, load_labelled_file, load_senteval_task, plot_projection, project_2d
from common.flags import define_data_flags
from common.artifacts import MODEL_LOCATIONS
from common.evaluation.resolve import resolve_model, safe_name

define_data_flags()
flags.DEFINE_list("models", ["minilm"], "Models to compare: run IDs, paths or encoder specs.")
flags.DEFINE_string("dataset", "TREC", "A SentEval classification task (TREC, MR, SST5, ...) or a .tsv/.csv file.")
flags.DEFINE_string("split", "train", "Split of a SentEval task.")
flags.DEFINE_string("text_column", "text", "Text column of a .tsv/.csv file.")
flags.DEFINE_string("label_column", "label", "Label column of a .tsv/.csv file.")
flags.DEFINE_enum("projection", "pca", PROJECTIONS, "2-D projection for the picture.")
flags.DEFINE_integer("max_samples", 0, "Use a seeded sample of at most this many texts (0: all).", lower_bound=0)
flags.DEFINE_integer("seed", 0, "Seed of k-means, the projection and sampling.")
flags.DEFINE_string("artifacts_dir", "artifacts", "Root of model/ and test/.")
flags.DEFINE_enum("model_location", "local", MODEL_LOCATIONS, "Where run IDs live.")
flags.DEFINE_string("gcs_bucket", None, "Bucket for --model_location=gcs.")
flags.DEFINE_integer("batch_size", 128, "Sentences per encoding batch.", lower_bound=1)
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    import numpy as np

    if os.path.splitext(FLAGS.dataset)[1] in (".tsv", ".csv", ".txt") or FLAGS.dataset.startswith("gs://"):
        texts, labels = load_labelled_file(FLAGS.dataset, FLAGS.text_column, FLAGS.label_column)
        dataset = safe_name(os.path.splitext(os.path.basename(FLAGS.dataset))[0])
    else:
        texts, labels = load_senteval_task(FLAGS.data_path, FLAGS.dataset, FLAGS.split)
        dataset = safe_name(FLAGS.dataset)
    if FLAGS.max_samples and len(texts) > FLAGS.max_samples:
        keep = np.sort(np.random.default_rng(FLAGS.seed).choice(len(texts), FLAGS.max_samples, replace=False))
        texts, labels = [texts[i] for i in keep], [labels[i] for i in keep]
    out_dir = artifacts.test_dir(FLAGS.artifacts_dir)
    tf.io.gfile.makedirs(out_dir)
    rows = []
    for model in FLAGS.models:
        embedder = resolve_model(model, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket)
        vectors = embedder.embed(texts, FLAGS.batch_size, progress=len(texts) > 2000)
        scores = cluster_scores(vectors, labels, FLAGS.seed)
        stem = artifacts.join(out_dir, f"cluster_{embedder.name}_{dataset}")
        plot_projection(project_2d(vectors, FLAGS.projection, FLAGS.seed), labels, stem + ".png",
                        f"{embedder.name} on {dataset} ({FLAGS.projection}); V-measure {scores['v_measure']:.1f}")
        artifacts.write_json(stem + ".json", {"model": embedder.name, "source": embedder.source,
                                              "dataset": dataset, "projection": FLAGS.projection,
                                              "seed": FLAGS.seed, **scores, "picture": stem + ".png"})
        rows.append((embedder.name, scores))
    print(f"dataset: {dataset} ({len(texts)} texts, {len(set(labels))} labels)")
    print(f"{'model':<24} {'V-measure':>9} {'homog.':>7} {'compl.':>7}")
    for name, s in rows:
        print(f"{name:<24} {s['v_measure']:9.2f} {s['homogeneity']:7.2f} {s['completeness']:7.2f}")
    print(f"results and pictures in {out_dir}/cluster_<model>_{dataset}.json/.png")


if __name__ == "__main__":
    cli.run(main)
