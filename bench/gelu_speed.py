"""GELU's form, measured: the erf form the toolkit computes (0.5 x (1 + erf(x / sqrt 2)), as Hugging
Face and PyTorch BERT do) against TensorFlow's erfc form (`tf.nn.gelu`, what the toolkit computed
before), on the same MiniLM weights, alternated A B A B in one process.

    .venv/bin/python -m bench.gelu_speed --data_path=../shared/data --rounds=3

Per precision it times encoding STS-B test sentences along the toolkit's own path (batches sorted by
token count, as test_sts.py runs) and a training step's gradient (in-batch contrastive loss over two
dropout views of 64 sentences, max length 32: unsup SimCSE's step without the optimizer update, which
is the same for both), and prints the medians, their ratio, the largest difference of the embeddings
and the CPU other processes used meanwhile. Not part of the test suite; run it on an idle machine.
"""

from __future__ import annotations

import os
import statistics
import time

from absl import flags

from common import cli

flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
flags.DEFINE_integer("sentences", 2000, "STS-B test sentences to encode (first sentences of the pairs, then second).")
flags.DEFINE_integer("batch_size", 128, "Encoding batch size.")
flags.DEFINE_integer("train_batch", 64, "Sentences per training step (two dropout views each).")
flags.DEFINE_integer("train_steps", 5, "Training steps timed per round.")
flags.DEFINE_integer("rounds", 3, "Rounds; each times every variant once.")
flags.DEFINE_list("precisions", ["fp32", "bf16"], "Precisions to measure.")
FLAGS = flags.FLAGS


def _erfc_form(encoder, precision: str):
    """Swaps every feed-forward GELU of `encoder` for TensorFlow's erfc form (before tracing)."""
    import keras

    from common.models.precision import is_mixed

    def erfc_gelu(x):
        return keras.activations.gelu(x, approximate=False)

    def erfc_gelu_float32(x):
        return keras.ops.cast(erfc_gelu(keras.ops.cast(x, "float32")), x.dtype)

    for layer in encoder.backbone.transformer_layers:
        layer._feedforward_intermediate_dense.activation = erfc_gelu_float32 if is_mixed(precision) else erfc_gelu
    return encoder


def main(argv):
    del argv
    import numpy as np
    import tensorflow as tf

    from bench.machine import machine_busy_ticks, other_cores, process_ticks
    from common.data.sts import load_stsb
    from common.evaluation.embedding import embed_sentences
    from common.models.encoder import EncoderConfig, build_encoder

    pairs = load_stsb(FLAGS.data_path, "test")  # raises FileNotFoundError (one line, exit 2) without the data
    sentences = (list(pairs.sentences1) + list(pairs.sentences2))[:FLAGS.sentences]
    train = sentences[:FLAGS.train_batch]

    def train_step_fn(encoder):
        texts = tf.constant(train, tf.string)
        tokens = encoder.tokenize(texts)
        tokens = {k: v[:, :32] for k, v in tokens.items()}

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                a = encoder(tokens, training=True)["embedding"]
                b = encoder(tokens, training=True)["embedding"]
                logits = tf.matmul(a, b, transpose_b=True) / 0.05
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(tf.range(tf.shape(a)[0]), logits))
            grads = tape.gradient(loss, encoder.trainable_variables)
            return [g.values if isinstance(g, tf.IndexedSlices) else g for g in grads if g is not None]
        return step

    variants = {}
    for precision in FLAGS.precisions:
        for form in ("erf", "erfc"):
            encoder = build_encoder(EncoderConfig(spec="minilm", precision=precision))
            if form == "erfc":
                _erfc_form(encoder, precision)
            fn = encoder.embedding_function()
            step = train_step_fn(encoder)
            embed_sentences(fn, sentences[:FLAGS.batch_size], FLAGS.batch_size, progress=False)  # trace
            step()
            variants[(precision, form)] = (fn, step)
    encode = {k: [] for k in variants}
    training = {k: [] for k in variants}
    outputs = {}
    reading = (time.time(), machine_busy_ticks(), process_ticks())
    others = []
    for _ in range(FLAGS.rounds):
        for key, (fn, step) in variants.items():
            start = time.perf_counter()
            outputs[key] = embed_sentences(fn, sentences, FLAGS.batch_size, progress=False)
            encode[key].append(len(sentences) / (time.perf_counter() - start))
            start = time.perf_counter()
            for _ in range(FLAGS.train_steps):
                [g.numpy() for g in step()]
            training[key].append(FLAGS.train_steps * len(train) / (time.perf_counter() - start))
        now = (time.time(), machine_busy_ticks(), process_ticks())
        if reading[1] is not None and now[1] is not None:
            others.append(other_cores(reading, now))
        reading = now
    print(f"MiniLM, {len(sentences)} STS-B test sentences at batch {FLAGS.batch_size} (sorted by token count); "
          f"training: {len(train)} sentences x 2 dropout views, length 32, {FLAGS.train_steps} gradient steps; "
          f"{FLAGS.rounds} rounds alternated; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"other processes used {', '.join(f'{x:.2f}' for x in others)} cores per round")
    print("| precision | encode erf (sent/s) | encode erfc | ratio | train erf (sent/s) | train erfc | ratio | "
          "max abs diff of embeddings |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for precision in FLAGS.precisions:
        e = {f: statistics.median(encode[(precision, f)]) for f in ("erf", "erfc")}
        t = {f: statistics.median(training[(precision, f)]) for f in ("erf", "erfc")}
        diff = float(np.abs(outputs[(precision, "erf")] - outputs[(precision, "erfc")]).max())
        spread = {f: f"[{min(encode[(precision, f)]):.1f}-{max(encode[(precision, f)]):.1f}]" for f in ("erf", "erfc")}
        tspread = {f: f"[{min(training[(precision, f)]):.1f}-{max(training[(precision, f)]):.1f}]"
                   for f in ("erf", "erfc")}
        print(f"| {precision} | {e['erf']:.1f} {spread['erf']} | {e['erfc']:.1f} {spread['erfc']} | "
              f"{e['erf'] / e['erfc']:.2f} | {t['erf']:.1f} {tspread['erf']} | {t['erfc']:.1f} {tspread['erfc']} | "
              f"{t['erf'] / t['erfc']:.2f} | {diff:.1e} |")
    return 0


if __name__ == "__main__":
    cli.run(main)
