"""Clusters a labelled collection with each model's embeddings and scores the clusters
against the labels (V-measure, homogeneity, completeness), with a 2-D picture coloured
by label and by cluster side by side.

    python cluster_eval.py --models=minilm,20261122-101500 --dataset=TREC --data_path=../shared/data
    python cluster_eval.py --models=minilm --dataset=TREC --algorithm=kmeans,hdbscan --reduce=none,pca
    python cluster_eval.py --models=minilm --dataset=TREC --algorithm=hdbscan --reduce=umap   # needs `make umap`
    python cluster_eval.py --models=minilm --dataset=my_texts.tsv --text_column=text --label_column=label

`--algorithm` and `--reduce` take lists: every combination is run on the same embeddings.
Writes artifacts/test/cluster_<model>_<dataset>_<algorithm>-<reduce>.json and .png and
prints one table.
"""

from __future__ import annotations

import dataclasses
import os

from absl import flags

from common import cli  # first: it quiets TensorFlow's start-up

import tensorflow as tf  # noqa: E402  (after cli)
from common import artifacts
from common.errors import UserError
from common.evaluation.clustering import (ALGORITHMS, PROJECTIONS, REDUCTIONS, ClusterConfig, cluster_embeddings,
                                          load_labelled_file, load_senteval_task, plot_projection, project_2d,
                                          score_clustering)
from common.flags import define_data_flags
from common.artifacts import MODEL_LOCATIONS
from common.loading.resolve import resolve_model, safe_name

_DEFAULTS = ClusterConfig()

define_data_flags()
flags.DEFINE_list("models", ["minilm"], "Models to compare: run IDs, paths or encoder specs.")
flags.DEFINE_string("dataset", "TREC", "A SentEval classification task (TREC, MR, SST5, ...) or a .tsv/.csv file.")
flags.DEFINE_string("split", "train", "Split of a SentEval task.")
flags.DEFINE_string("text_column", "text", "Text column of a .tsv/.csv file.")
flags.DEFINE_string("label_column", "label", "Label column of a .tsv/.csv file.")
flags.DEFINE_list("algorithm", [_DEFAULTS.algorithm],
                  f"Clustering algorithm(s), from {', '.join(ALGORITHMS)}: k-means with k = the number of labels, or "
                  "HDBSCAN (finds its own clusters and leaves noise).")
flags.DEFINE_list("reduce", [_DEFAULTS.reduce],
                  f"Dimension reduction(s) before clustering, from {', '.join(REDUCTIONS)} (umap: `make umap`).")
flags.DEFINE_integer("reduce_dims", _DEFAULTS.reduce_dims, "Dimensions after --reduce=pca|umap.", lower_bound=1)
flags.DEFINE_integer("umap_neighbors", _DEFAULTS.umap_neighbors, "UMAP's n_neighbors (cosine, min_dist 0).",
                     lower_bound=2)
flags.DEFINE_integer("min_cluster_size", _DEFAULTS.min_cluster_size, "HDBSCAN's smallest cluster.", lower_bound=2)
flags.DEFINE_integer("min_samples", _DEFAULTS.min_samples,
                     "HDBSCAN's neighbourhood for core distances (the point itself counted); default: "
                     "--min_cluster_size.", lower_bound=1)
flags.DEFINE_enum("projection", "pca", PROJECTIONS, "2-D projection for the picture.")
flags.DEFINE_integer("max_samples", 0, "Use a seeded sample of at most this many texts (0: all).", lower_bound=0)
flags.DEFINE_integer("seed", 0, "Seed of k-means, the reductions, the projection and sampling.")
flags.DEFINE_string("artifacts_dir", "artifacts", "Root of model/ and test/.")
flags.DEFINE_enum("model_location", "local", MODEL_LOCATIONS, "Where run IDs live.")
flags.DEFINE_string("gcs_bucket", None, "Bucket for --model_location=gcs.")
flags.DEFINE_integer("batch_size", 128, "Sentences per encoding batch.", lower_bound=1)
FLAGS = flags.FLAGS


def _configs():
    """One validated ClusterConfig per (--algorithm, --reduce) combination."""
    configs = []
    for algorithm in FLAGS.algorithm:
        for reduce in FLAGS.reduce:
            configs.append(ClusterConfig(
                algorithm=algorithm, reduce=reduce, reduce_dims=FLAGS.reduce_dims, umap_neighbors=FLAGS.umap_neighbors,
                min_cluster_size=FLAGS.min_cluster_size, min_samples=FLAGS.min_samples, seed=FLAGS.seed).validate())
    if not configs:
        raise UserError("--algorithm and --reduce must each name at least one choice.")
    if any(c.reduce == "umap" for c in configs) or FLAGS.projection == "umap":
        from common.evaluation.clustering import require_umap

        require_umap("--reduce=umap" if any(c.reduce == "umap" for c in configs) else "--projection=umap")
    return configs


def main(argv):
    import numpy as np

    configs = _configs()  # before any encoding: a missing extra or a bad setting fails at once
    if os.path.splitext(FLAGS.dataset)[1] in (".tsv", ".csv", ".txt") or FLAGS.dataset.startswith("gs://"):
        texts, labels = load_labelled_file(FLAGS.dataset, FLAGS.text_column, FLAGS.label_column)
        dataset = safe_name(os.path.splitext(os.path.basename(FLAGS.dataset))[0])
    else:
        texts, labels = load_senteval_task(FLAGS.data_path, FLAGS.dataset, FLAGS.split)
        dataset = safe_name(FLAGS.dataset)
    if FLAGS.max_samples and len(texts) > FLAGS.max_samples:
        keep = np.sort(np.random.default_rng(FLAGS.seed).choice(len(texts), FLAGS.max_samples, replace=False))
        texts, labels = [texts[i] for i in keep], [labels[i] for i in keep]
    k = len(set(labels))
    if k < 2:
        raise UserError(f"Clustering needs at least 2 labels, got {k}.")
    out_dir = artifacts.test_dir(FLAGS.artifacts_dir)
    tf.io.gfile.makedirs(out_dir)
    rows = []
    for model in FLAGS.models:
        embedder = resolve_model(model, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket)
        vectors = embedder.embed(texts, FLAGS.batch_size, progress=len(texts) > 2000)
        points = project_2d(vectors, FLAGS.projection, FLAGS.seed)
        for config in configs:
            clustering = cluster_embeddings(vectors, k, config)
            scores = score_clustering(clustering, labels)
            stem = artifacts.join(out_dir, f"cluster_{embedder.name}_{dataset}_{config.name}")
            noise = f", noise {scores['noise_percent']:.1f} %" if config.algorithm == "hdbscan" else ""
            plot_projection(points, labels, stem + ".png",
                            f"{embedder.name} on {dataset} ({FLAGS.projection} projection); {config.name}: "
                            f"V-measure {scores['v_measure']:.1f}{noise}",
                            clusters=clustering.raw, cluster_title=f"by cluster ({scores['clusters']} found{noise})")
            artifacts.write_json(stem + ".json", {"model": embedder.name, "source": embedder.source,
                                                  "dataset": dataset, "projection": FLAGS.projection,
                                                  "clustering": {**dataclasses.asdict(config), "name": config.name},
                                                  **scores, "picture": stem + ".png"})
            rows.append((embedder.name, config, scores))
    print(f"dataset: {dataset} ({len(texts)} texts, {k} labels)")
    print("raw: noise kept as its own cluster; assigned: each noise point moved to its most probable cluster")
    print(f"{'model':<20} {'clustering':<16} {'clusters':>8} {'noise %':>7} {'V-measure':>9} {'homog.':>7} "
          f"{'compl.':>7} {'V assigned':>10} {'homog.':>7} {'compl.':>7}")
    for name, config, s in rows:
        # A degenerate clustering's cluster count carries a "!", explained below the table.
        found = f"{s['clusters']}{'!' if s['degenerate'] else ''}"
        print(f"{name:<20} {config.name:<16} {found:>8} {s['noise_percent']:7.1f} {s['v_measure']:9.2f} "
              f"{s['homogeneity']:7.2f} {_score(s['completeness'])} {s['assigned_v_measure']:10.2f} "
              f"{s['assigned_homogeneity']:7.2f} {_score(s['assigned_completeness'])}")
    for name, config, s in rows:
        if s["degenerate"]:
            print(f"! {name} {config.name}: {s['note']}")
    print(f"results and pictures in {out_dir}/cluster_<model>_{dataset}_<clustering>.json/.png")


def _score(value) -> str:
    """A 7-wide score column; "-" for a score that is not given (a single group's completeness)."""
    return f"{value:7.2f}" if value is not None else f"{'-':>7}"


if __name__ == "__main__":
    cli.run(main)
