"""Scores a model on STS12-16, STS-B and SICK-R, or on your own scored or labelled pairs.

    python test_sts.py --model=minilm --data_path=../shared/data
    python test_sts.py --model=20261122-101500      # a trained run under artifacts/model/
    python test_sts.py --model=20261122-101500 --mode=cross   # its cross-encoder (Trans-Encoder)
    python test_sts.py --model=minilm --pairs=my_pairs.csv --output=scores.json
    python test_sts.py --model=latest --pairs=paraphrases.tsv --baseline=minilm   # 0/1 labels: accuracy, F1, AP

--mode=bi (default) scores the cosine similarity of sentence embeddings; --mode=cross
scores each pair with a cross-encoder ((sentence1, sentence2) -> score).
"""

from __future__ import annotations

from absl import flags

from common import cli  # first: it quiets TensorFlow's start-up

from common import artifacts
from common.errors import UserError
from common.flags import define_data_flags, define_model_flags
from common.loading.resolve import MODES, resolve_cross_model, resolve_model
from common.data.tables import parse_labels
from common.evaluation.binary import (binary_pair_metrics, format_binary, format_pairs_comparison, is_binary,
                                      pair_columns, read_labelled_pairs)
from common.evaluation.sts import (embedding_similarities, evaluate_sts, evaluate_sts_pairs, format_comparison,
                                   format_table, format_txt, read_scored_pairs, score_pair_set)

define_data_flags()
define_model_flags()
flags.DEFINE_enum("mode", "bi", MODES, "bi: cosine similarity of the model's sentence embeddings; cross: the "
                  "scores of a cross-encoder (a Trans-Encoder run's cross/), one per pair.")
flags.DEFINE_string("pairs", None, "Score your own pairs instead: a CSV, TSV, JSONL or Parquet file with columns "
                    "sentence1, sentence2 and score (any scale: Spearman and Pearson x100) or label (0/1, or two "
                    "names with --labels: accuracy, F1, precision, recall at their best thresholds, average "
                    "precision).")
flags.DEFINE_list("columns", [], "--pairs: map the fields to the file's columns, field:column,... (e.g. "
                  "sentence1:text_a,sentence2:text_b,score:rating or label:is_duplicate).")
flags.DEFINE_list("labels", [], "--pairs: the two names in a label column, the one meaning 'different' first (e.g. "
                  "other,paraphrase); 0/1 labels need none.")
flags.DEFINE_string("output", None, "--pairs: also write the metrics as JSON here (docs/usage/sts.md lists the keys).")
flags.DEFINE_string("baseline", None, "Also score this model (e.g. the start a run trained from) on the same sets, "
                    "or the same --pairs, and print the two side by side with the difference (--mode=bi).")
FLAGS = flags.FLAGS


def main(argv):
    # A user error (unknown model, wrong mode, missing data) ends in cli.run as one line, exit 2.
    if FLAGS.pairs is None and (FLAGS.columns or FLAGS.output or FLAGS.labels):
        raise UserError("--columns, --labels and --output apply to --pairs=<file>; give --pairs, or leave them out.")
    if FLAGS.baseline and FLAGS.mode != "bi":
        raise UserError("--baseline compares two encoders' cosine similarities: use it with --mode=bi.")
    pairs, binary = _read_pairs() if FLAGS.pairs else (None, False)
    if FLAGS.mode == "cross":
        if FLAGS.precision != "fp32":
            raise UserError(f"--precision={FLAGS.precision} applies to --mode=bi (an encoder rebuilt from its "
                             "weights); a cross-encoder is an exported SavedModel: leave --precision out.")
        scorer = resolve_cross_model(FLAGS.model, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket)
        name, source = scorer.name, scorer.source
        if pairs is not None:
            return _report_pairs(name, _pair_metrics(pairs, binary, scorer.score(
                pairs.sentences1, pairs.sentences2, FLAGS.batch_size)))
        results = evaluate_sts_pairs(lambda a, b: scorer.score(a, b, FLAGS.batch_size), FLAGS.data_path)
    else:
        embedder = resolve_model(FLAGS.model, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket,
                                 FLAGS.max_seq_len, FLAGS.precision)
        name, source = embedder.name, embedder.source
        if pairs is not None:
            return _report_pairs(name, _pair_metrics(pairs, binary, _similarities(embedder, pairs)),
                                 _baseline_pair_metrics(pairs, binary))
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


def _read_pairs():
    """(the --pairs file's pairs, whether their scores are 0/1 labels)."""
    columns = pair_columns(FLAGS.columns)
    if FLAGS.labels:
        return read_labelled_pairs(FLAGS.pairs, columns, parse_labels(FLAGS.labels, ())), True
    pairs = read_scored_pairs(FLAGS.pairs, columns)
    return pairs, is_binary(pairs)


def _similarities(embedder, pairs):
    return embedding_similarities(lambda s: embedder.embed(s, FLAGS.batch_size), pairs)


def _pair_metrics(pairs, binary: bool, predicted):
    """Binary metrics (sentence-transformers' BinaryClassificationEvaluator) for 0/1 labels, else correlations."""
    return binary_pair_metrics(predicted, pairs.scores.astype(int)) if binary else score_pair_set(pairs, predicted)


def _baseline_pair_metrics(pairs, binary: bool):
    """(name, metrics) of --baseline on the same pairs, or None without --baseline."""
    if not FLAGS.baseline:
        return None
    start = resolve_model(FLAGS.baseline, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket,
                          FLAGS.max_seq_len, FLAGS.precision)
    return start.name, _pair_metrics(pairs, binary, _similarities(start, pairs))


def _report_pairs(name: str, scores, baseline=None) -> int:
    labelled = f"; {scores['positives']:,} labelled 1" if "positives" in scores else ""
    if baseline is not None:
        start, before = baseline
        print(f"model: {name} beside its baseline {start}, pairs: {FLAGS.pairs} ({scores['pairs']:,}{labelled})")
        print(format_pairs_comparison(before, scores, start, name))
        scores = {**scores, "baseline": {"model": start, **before}}
    else:
        print(f"model: {name}, mode: {FLAGS.mode}, pairs: {FLAGS.pairs} ({scores['pairs']:,}{labelled})")
        if labelled:
            print(format_binary(scores))
        else:
            print(f"spearman {scores['spearman']:.2f}  pearson {scores['pearson']:.2f}  (x100)")
    if FLAGS.output:
        artifacts.write_json(FLAGS.output, scores)
        print(f"results in {FLAGS.output}")
    return 0


if __name__ == "__main__":
    cli.run(main)
