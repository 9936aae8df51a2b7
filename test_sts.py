"""Scores a model on STS12-16, STS-B and SICK-R (Spearman x100 of cosine similarity).

    python test_sts.py --model=minilm --data_path=../shared/data
    python test_sts.py --model=20261122-101500      # a trained run under artifacts/model/
"""

from __future__ import annotations


from absl import app, flags

from common import cli  # first: it quiets TensorFlow's start-up

from common import artifacts
from common.flags import define_data_flags, define_model_flags
from common.evaluation.resolve import resolve_model
from common.evaluation.sts import evaluate_sts, format_table, format_txt

define_data_flags()
define_model_flags()
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    embedder = resolve_model(FLAGS.model, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket,
                             FLAGS.max_seq_len)
    results = evaluate_sts(lambda s: embedder.embed(s, FLAGS.batch_size), FLAGS.data_path)
    results = {"model": embedder.name, "source": embedder.source, **results}
    out_dir = artifacts.test_dir(FLAGS.artifacts_dir)
    import tensorflow as tf

    tf.io.gfile.makedirs(out_dir)
    artifacts.write_json(artifacts.join(out_dir, f"sts_{embedder.name}.json"), results)
    with tf.io.gfile.GFile(artifacts.join(out_dir, f"sts_{embedder.name}.txt"), "w") as f:
        f.write(format_txt(results))
    print(f"model: {embedder.name} ({embedder.source})")
    print(format_table(results))
    print(f"seconds: {results['seconds']:.1f}; results in {out_dir}/sts_{embedder.name}.json")


if __name__ == "__main__":
    cli.run(main)
