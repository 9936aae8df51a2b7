"""Encoding throughput of an encoder on STS sentences: dynamic padding (length-
sorted batches padded to their longest sentence) vs padding every sentence to 128.

    .venv/bin/python -m bench.encode_throughput --data_path=../shared/data --sentences=4096

Not part of the test suite; run it on an otherwise idle machine.
"""

from __future__ import annotations

import random
import time

from absl import app, flags

flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
flags.DEFINE_string("model", "minilm", "Encoder spec.")
flags.DEFINE_integer("sentences", 4096, "Number of STS sentences to encode.")
flags.DEFINE_integer("batch_size", 128, "Batch size.")
flags.DEFINE_integer("seed", 0, "Sampling seed.")
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    import numpy as np
    import tensorflow as tf

    from common.evaluation.embedding import embed_sentences
    from common.models.encoder import EncoderConfig, build_encoder
    from common.data.sts import load_all

    sets = load_all(FLAGS.data_path)
    pool = sorted({s for g in sets.values() for ps in g.values() for s in ps.sentences1 + ps.sentences2})
    sentences = random.Random(FLAGS.seed).sample(pool, min(FLAGS.sentences, len(pool)))
    encoder = build_encoder(EncoderConfig(spec=FLAGS.model, max_seq_len=128))
    fixed = build_encoder(EncoderConfig(spec=FLAGS.model, max_seq_len=128, pad_to_multiple_of=128))
    fixed.backbone.set_weights(encoder.backbone.get_weights())
    results = {}
    for name, enc, sort in (("dynamic, length-sorted", encoder, True), ("dynamic, unsorted", encoder, False),
                            ("fixed 128", fixed, False)):
        fn = enc.embedding_function()
        fn(tf.constant(sentences[:8]))  # trace once
        start = time.perf_counter()
        if sort:
            out = embed_sentences(fn, sentences, FLAGS.batch_size, progress=False)
        else:
            out = np.concatenate([fn(tf.constant(sentences[i:i + FLAGS.batch_size])).numpy()
                                  for i in range(0, len(sentences), FLAGS.batch_size)])
        seconds = time.perf_counter() - start
        results[name] = (len(sentences) / seconds, out)
    base = results["fixed 128"][1]
    print(f"{FLAGS.model}: {len(sentences)} STS sentences, batch {FLAGS.batch_size}")
    for name, (rate, out) in results.items():
        diff = float(np.abs(out - base).max())
        print(f"  {name:<24} {rate:8.1f} sentences/s   (max |diff| vs fixed 128: {diff:.1e})")


if __name__ == "__main__":
    app.run(main)
