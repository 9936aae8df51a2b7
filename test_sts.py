"""Scores a model on STS12-16, STS-B and SICK-R, or on your own scored pairs (Spearman x100).

    python test_sts.py --model=minilm --data_path=../shared/data
    python test_sts.py --model=20261122-101500      # a trained run under artifacts/model/
    python test_sts.py --model=20261122-101500 --mode=cross   # its cross-encoder (Trans-Encoder)
    python test_sts.py --model=minilm --pairs=my_pairs.csv --output=scores.json

--mode=bi (default) scores the cosine similarity of sentence embeddings; --mode=cross
scores each pair with a cross-encoder ((sentence1, sentence2) -> score).
"""

from __future__ import annotations

from absl import flags

from common import cli  # first: it quiets TensorFlow's start-up

from common import artifacts
from common.errors import UserError
from common.flags import define_data_flags, define_model_flags
from common.models.sources.resolve import MODES, resolve_cross_model, resolve_model
from common.data.tables import parse_columns
from common.evaluation.sts import (PAIR_SCORE_FIELDS, embedding_similarities, evaluate_sts, evaluate_sts_pairs,
                                   format_comparison, format_table, format_txt, read_scored_pairs,
                                   score_pair_set)

define_data_flags()
define_model_flags()
flags.DEFINE_enum("mode", "bi", MODES, "bi: cosine similarity of the model's sentence embeddings; cross: the "
                  "scores of a cross-encoder (a Trans-Encoder run's cross/), one per pair.")
flags.DEFINE_string("pairs", None, "Score your own pairs instead: a CSV, TSV, JSONL or Parquet file with columns "
                    "sentence1, sentence2, score (any scale); prints Spearman and Pearson x100.")
flags.DEFINE_list("columns", [], "--pairs: map the fields to the file's columns, field:column,... (e.g. "
                  "sentence1:text_a,sentence2:text_b,score:label).")
flags.DEFINE_string("output", None, "--pairs: also write {\"spearman\", \"pearson\", \"pairs\"} as JSON here.")
flags.DEFINE_string("baseline", None, "Also score this model (e.g. the start a run trained from) on the same sets "
                    "and print the two side by side with the difference (--mode=bi).")
FLAGS = flags.FLAGS


def main(argv):
    # A user error (unknown model, wrong mode, missing data) ends in cli.run as one line, exit 2.
    if FLAGS.pairs is None and (FLAGS.columns or FLAGS.output):
        raise UserError("--columns and --output apply to --pairs=<file>; give --pairs, or leave them out.")
    if FLAGS.baseline and (FLAGS.mode != "bi" or FLAGS.pairs):
        raise UserError("--baseline compares two encoders on the STS sets: use it with --mode=bi and without --pairs.")
    pairs = read_scored_pairs(FLAGS.pairs, parse_columns(FLAGS.columns, PAIR_SCORE_FIELDS)) if FLAGS.pairs else None
    if FLAGS.mode == "cross":
        if FLAGS.precision != "fp32":
            raise UserError(f"--precision={FLAGS.precision} applies to --mode=bi (an encoder rebuilt from its "
                             "weights); a cross-encoder is an exported SavedModel: leave --precision out.")
        scorer = resolve_cross_model(FLAGS.model, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket)
        name, source = scorer.name, scorer.source
        if pairs is not None:
            return _report_pairs(name, score_pair_set(pairs, scorer.score(pairs.sentences1, pairs.sentences2,
                                                                           FLAGS.batch_size)))
        results = evaluate_sts_pairs(lambda a, b: scorer.score(a, b, FLAGS.batch_size), FLAGS.data_path)
    else:
        embedder = resolve_model(FLAGS.model, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket,
                                 FLAGS.max_seq_len, FLAGS.precision)
        name, source = embedder.name, embedder.source
        if pairs is not None:
            embed = lambda s: embedder.embed(s, FLAGS.batch_size)  # noqa: E731
            return _report_pairs(name, score_pair_set(pairs, embedding_similarities(embed, pairs)))
        results = evaluate_sts(lambda s: embedder.embed(s, FLAGS.batch_size), FLAGS.data_path)
    results = _write_results(name, source, results)
    if FLAGS.baseline:
        start = resolve_model(FLAGS.baseline, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket,
                              FLAGS.max_seq_len, FLAGS.precision)
        baseline = _write_results(start.name, start.source,
                                  evaluate_sts(lambda s: start.embed(s, FLAGS.batch_size), FLAGS.data_path))
        print(f"model: {name} ({source}) beside its baseline {start.name} ({start.source})")
        print(format_comparison(baseline, results))
        return 0
    print(f"model: {name} ({source}), mode: {FLAGS.mode}")
    print(format_table(results))
    print(f"seconds: {results['seconds']:.1f}; results in {results['written_to']}")
    return 0


def _write_results(name: str, source: str, results):
    """Writes `sts_<name>.json` and `.txt` under the artifacts' test/ folder; returns the results with their names."""
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
    results["written_to"] = artifacts.join(out_dir, f"{stem}.json")
    return results


def _report_pairs(name: str, scores) -> int:
    print(f"model: {name}, mode: {FLAGS.mode}, pairs: {FLAGS.pairs} ({scores['pairs']:,})")
    print(f"spearman {scores['spearman']:.2f}  pearson {scores['pearson']:.2f}  (x100)")
    if FLAGS.output:
        artifacts.write_json(FLAGS.output, scores)
        print(f"results in {FLAGS.output}")
    return 0


if __name__ == "__main__":
    cli.run(main)
