"""Encoding throughput on STS sentences: batches sorted by token count (what the toolkit does),
sorted by characters (what it did before), unsorted, and every sentence padded to 128.

    .venv/bin/python -m bench.encode_throughput --data_path=../shared/data --sentences=4096 --rounds=5

The variants run in alternating rounds (A B C D A B C D ...) in one process; the table gives the
median and the range over rounds, the padding share of each, and the load average before and after.
Not part of the test suite; run it on an otherwise idle machine.
"""

from __future__ import annotations

import os
import random
import time

from absl import app, flags

from common import cli  # first: it quiets TensorFlow's start-up

flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
flags.DEFINE_string("model", "minilm", "Encoder spec.")
flags.DEFINE_integer("sentences", 4096, "Number of STS sentences to encode.")
flags.DEFINE_integer("batch_size", 128, "Batch size.")
flags.DEFINE_integer("seed", 0, "Sampling seed.")
flags.DEFINE_integer("rounds", 5, "Alternating rounds of every variant.")
FLAGS = flags.FLAGS


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    import numpy as np
    import tensorflow as tf

    from common.evaluation.embedding import embed_sentences, sort_lengths
    from common.models.encoder import EncoderConfig, build_encoder
    from common.data.sts import load_all

    sets = load_all(FLAGS.data_path)
    pool = sorted({s for g in sets.values() for ps in g.values() for s in ps.sentences1 + ps.sentences2})
    sentences = random.Random(FLAGS.seed).sample(pool, min(FLAGS.sentences, len(pool)))
    encoder = build_encoder(EncoderConfig(spec=FLAGS.model, max_seq_len=128))
    fixed = build_encoder(EncoderConfig(spec=FLAGS.model, max_seq_len=128, pad_to_multiple_of=128))
    fixed.backbone.set_weights(encoder.backbone.get_weights())
    fn = encoder.embedding_function()
    fixed_fn = fixed.embedding_function()
    by_chars = tf.function(encoder.embed_strings, input_signature=[tf.TensorSpec([None], tf.string)])
    tokens = sort_lengths(fn, sentences)

    def batched(f, order):
        out = np.concatenate([f(tf.constant([sentences[i] for i in order[s:s + FLAGS.batch_size]])).numpy()
                              for s in range(0, len(order), FLAGS.batch_size)])
        back = np.empty_like(out)
        back[order] = out
        return back

    unsorted = np.arange(len(sentences))
    variants = {
        "sorted by token count": (lambda: embed_sentences(fn, sentences, FLAGS.batch_size, progress=False),
                                  np.argsort(-tokens, kind="stable")),
        "sorted by characters": (lambda: embed_sentences(by_chars, sentences, FLAGS.batch_size, progress=False),
                                 np.argsort([-len(s) for s in sentences], kind="stable")),
        "unsorted": (lambda: batched(fn, unsorted), unsorted),
        "fixed 128": (lambda: batched(fixed_fn, unsorted), None),
    }
    for run, _ in variants.values():  # trace every padded length once
        run()
    load_before = os.getloadavg()
    seconds = {name: [] for name in variants}
    outputs = {}
    for _ in range(FLAGS.rounds):
        for name, (run, _) in variants.items():
            start = time.perf_counter()
            outputs[name] = run()
            seconds[name].append(time.perf_counter() - start)
    load_after = os.getloadavg()
    base = outputs["sorted by token count"]
    print(f"{FLAGS.model}: {len(sentences)} STS sentences, batch {FLAGS.batch_size}, {FLAGS.rounds} alternating "
          f"rounds; load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print("| variant | sentences/s (median) | range | padding share | time vs token-sorted | max abs diff |")
    print("| --- | --- | --- | --- | --- | --- |")
    reference = np.median(seconds["sorted by token count"])
    for name, (_, order) in variants.items():
        rates = len(sentences) / np.array(seconds[name])
        if order is None:
            share = 1 - tokens.sum() / (128 * len(tokens))
        else:
            padded = sum(tokens[order[s:s + FLAGS.batch_size]].max() * len(order[s:s + FLAGS.batch_size])
                         for s in range(0, len(order), FLAGS.batch_size))
            share = 1 - tokens.sum() / padded
        print(f"| {name} | {np.median(rates):.1f} | {rates.min():.1f}-{rates.max():.1f} | {100 * share:.1f} % | "
              f"{np.median(seconds[name]) / reference:.2f} | {np.abs(outputs[name] - base).max():.1e} |")


if __name__ == "__main__":
    cli.run(main)
