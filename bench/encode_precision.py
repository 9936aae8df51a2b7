"""Encoding throughput by --precision: the same encoder in fp32 and bf16 (or fp16), alternated A B A B
so that a change in the machine's load hits both alike; prints the median sentences/s of each and
the largest difference of the embeddings.

    .venv/bin/python -m bench.encode_precision --data_path=../shared/data --sentences=512 --rounds=3

Not part of the test suite; run it on an otherwise idle machine (it prints the load average).
"""

from __future__ import annotations

import os
import statistics
import time

from absl import app, flags

from common import cli  # first: it quiets TensorFlow's start-up

flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
flags.DEFINE_string("model", "minilm", "Encoder spec.")
flags.DEFINE_integer("sentences", 512, "STS-B test sentences to encode (first sentences of the pairs, then second).")
flags.DEFINE_integer("batch_size", 128, "Batch size.")
flags.DEFINE_integer("rounds", 3, "Rounds; each encodes the sentences once per precision.")
flags.DEFINE_list("precisions", ["fp32", "bf16"], "Precisions to compare, in the order run in each round.")
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    import numpy as np
    import tensorflow as tf

    from common.data.sts import load_stsb
    from common.evaluation.embedding import embed_sentences
    from common.models.encoder import EncoderConfig, build_encoder

    pairs = load_stsb(FLAGS.data_path, "test")
    sentences = (list(pairs.sentences1) + list(pairs.sentences2))[:FLAGS.sentences]
    fns = {}
    for precision in FLAGS.precisions:
        encoder = build_encoder(EncoderConfig(spec=FLAGS.model, precision=precision))
        fns[precision] = encoder.embedding_function()
        embed_sentences(fns[precision], sentences[:FLAGS.batch_size], FLAGS.batch_size, progress=False)  # trace
    rates = {p: [] for p in FLAGS.precisions}
    outputs = {}
    for _ in range(FLAGS.rounds):
        for precision, fn in fns.items():
            start = time.perf_counter()
            outputs[precision] = embed_sentences(fn, sentences, FLAGS.batch_size, progress=False)
            rates[precision].append(len(sentences) / (time.perf_counter() - start))
    base = FLAGS.precisions[0]
    print(f"{FLAGS.model}: {len(sentences)} STS-B test sentences, batch {FLAGS.batch_size}, {FLAGS.rounds} rounds; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for precision, values in rates.items():
        diff = float(np.abs(outputs[precision] - outputs[base]).max())
        print(f"  {precision:<5} median {statistics.median(values):7.1f} sentences/s "
              f"(rounds: {', '.join(f'{v:.1f}' for v in values)}); max |diff| vs {base}: {diff:.1e}")


if __name__ == "__main__":
    cli.run(main)
