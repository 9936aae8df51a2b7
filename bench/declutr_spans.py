"""What DeCLUTR's span sampler draws: lengths, positive views and anchors near an edge.

    .venv/bin/python -m bench.declutr_spans [--num_tokens=4096 --draws=3000 --seed=0]

Draws spans from `--draws` documents of `--num_tokens` tokens with one seeded
generator and prints the `span_statistics` table (declutr_tf/span_sampling.py has
the definitions). Length fractions are mean length / max_span_len; the view shares
count positives; "within d of an edge" counts anchors with fewer than d tokens
between them and the document's start or end, for each `--edge_distances` and for
max_span_len / 2. The "ours" column of docs/benchmarks/declutr_spans/ is this script's
output with the defaults (the paper's A=2, P=2, spans 32-512).
"""

from __future__ import annotations

from absl import app, flags

from common import cli  # first: it quiets TensorFlow's start-up

flags.DEFINE_integer("num_tokens", 4096, "Document length in tokens.")
flags.DEFINE_integer("draws", 3000, "Documents sampled (one sample_spans call each).")
flags.DEFINE_integer("num_anchors", 2, "A.")
flags.DEFINE_integer("num_positives", 2, "P.")
flags.DEFINE_integer("min_span_len", 32, "l_min.")
flags.DEFINE_integer("max_span_len", 512, "l_max.")
flags.DEFINE_string("sampling_strategy", "all", "all, adjacent or subsumed.")
flags.DEFINE_list("edge_distances", ["192"], "Distances d for 'anchors within d of an edge' (max_span_len / 2 "
                                             "is always added).")
flags.DEFINE_integer("seed", 0, "Seed of the np.random.Generator.")
FLAGS = flags.FLAGS

LABELS = {"anchor_length_fraction": "anchor length / l_max", "positive_length_fraction": "positive length / l_max",
          "subsumed": "positives subsumed by their anchor", "overlapping": "positives overlapping it (not subsumed)",
          "adjacent": "positives adjacent to it", "disjoint": "positives apart from it"}


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    import numpy as np

    from declutr_tf.span_sampling import SpanConfig, sample_spans, span_statistics

    config = SpanConfig(FLAGS.num_anchors, FLAGS.num_positives, FLAGS.min_span_len, FLAGS.max_span_len,
                        FLAGS.sampling_strategy)
    edges = sorted({int(d) for d in FLAGS.edge_distances} | {config.max_span_len // 2})
    rng = np.random.default_rng(FLAGS.seed)
    draws = [sample_spans(FLAGS.num_tokens, config, rng) for _ in range(FLAGS.draws)]
    stats = span_statistics(draws, FLAGS.num_tokens, config, edges)
    print(f"{FLAGS.draws} documents of {FLAGS.num_tokens} tokens, A={config.num_anchors}, P={config.num_positives}, "
          f"spans {config.min_span_len}-{config.max_span_len}, strategy {config.sampling_strategy}, seed {FLAGS.seed}")
    print("| statistic | ours |")
    print("| --- | --- |")
    for key, value in stats.items():
        if key.endswith("_fraction"):
            print(f"| {LABELS[key]} | {value:.3f} |")
        else:
            label = LABELS.get(key) or f"anchors within {key.split('_')[2]} tokens of an edge"
            print(f"| {label} | {100 * value:.1f} % |")


if __name__ == "__main__":
    cli.run(main)
