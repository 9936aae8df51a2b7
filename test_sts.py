"""Scores a model on STS12-16, STS-B and SICK-R (Spearman x100).

    python test_sts.py --model=minilm --data_path=../shared/data
    python test_sts.py --model=20261122-101500      # a trained run under artifacts/model/
    python test_sts.py --model=20261122-101500 --mode=cross   # its cross-encoder (Trans-Encoder)

--mode=bi (default) scores the cosine similarity of sentence embeddings; --mode=cross
scores each pair with a cross-encoder ((sentence1, sentence2) -> score).
"""

from __future__ import annotations

from absl import app, flags

from common import cli  # first: it quiets TensorFlow's start-up

from common import artifacts
from common.errors import UserError
from common.flags import define_data_flags, define_model_flags
from common.evaluation.resolve import MODES, resolve_cross_model, resolve_model
from common.evaluation.sts import evaluate_sts, evaluate_sts_pairs, format_table, format_txt

define_data_flags()
define_model_flags()
flags.DEFINE_enum("mode", "bi", MODES, "bi: cosine similarity of the model's sentence embeddings; cross: the "
                  "scores of a cross-encoder (a Trans-Encoder run's cross/), one per pair.")
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}; every input is a flag (--name=value), "
                             "--helpshort lists them.")
    # A user error (unknown model, wrong mode, missing data) ends in cli.run as one line, exit 2.
    if FLAGS.mode == "cross":
        if FLAGS.precision != "fp32":
            raise UserError(f"--precision={FLAGS.precision} applies to --mode=bi (an encoder rebuilt from its "
                             "weights); a cross-encoder is an exported SavedModel: leave --precision out.")
        scorer = resolve_cross_model(FLAGS.model, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket)
        name, source = scorer.name, scorer.source
        results = evaluate_sts_pairs(lambda a, b: scorer.score(a, b, FLAGS.batch_size), FLAGS.data_path)
    else:
        embedder = resolve_model(FLAGS.model, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket,
                                 FLAGS.max_seq_len, FLAGS.precision)
        name, source = embedder.name, embedder.source
        results = evaluate_sts(lambda s: embedder.embed(s, FLAGS.batch_size), FLAGS.data_path)
    results = {"model": name, "source": source, "mode": FLAGS.mode, "precision": FLAGS.precision, **results}
    stem = f"sts_{name}" if FLAGS.mode == "bi" else f"sts_{name}_{FLAGS.mode}"
    if FLAGS.precision != "fp32":  # beside, not over, the fp32 scores
        stem += f"_{FLAGS.precision}"
    out_dir = artifacts.test_dir(FLAGS.artifacts_dir)
    import tensorflow as tf

    tf.io.gfile.makedirs(out_dir)
    artifacts.write_json(artifacts.join(out_dir, f"{stem}.json"), results)
    with tf.io.gfile.GFile(artifacts.join(out_dir, f"{stem}.txt"), "w") as f:
        f.write(format_txt(results))
    print(f"model: {name} ({source}), mode: {FLAGS.mode}")
    print(format_table(results))
    print(f"seconds: {results['seconds']:.1f}; results in {out_dir}/{stem}.json")
    return 0


if __name__ == "__main__":
    cli.run(main)
