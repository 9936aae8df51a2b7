"""Two forms of the same MiniLM encoder, timed against each other in one process, alternated A B A B:
the shared harness of `bench.gelu_speed` and `bench.fused_dense_speed`.

Per precision it times encoding STS-B test sentences along the toolkit's own path (batches sorted by
token count, as test_sts.py runs) and a training step's gradient (in-batch contrastive loss over two
dropout views of `train_batch` sentences, max length 32: unsup SimCSE's step without the optimizer
update, which is the same for both forms), and prints the medians with their min-max, the ratios, the
largest difference of the two forms' embeddings and the CPU other processes used in each round.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Callable, Sequence

from absl import flags

flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
flags.DEFINE_integer("sentences", 2000, "STS-B test sentences to encode (first sentences of the pairs, then second).")
flags.DEFINE_integer("batch_size", 128, "Encoding batch size.")
flags.DEFINE_integer("train_batch", 64, "Sentences per training step (two dropout views each).")
flags.DEFINE_integer("train_steps", 5, "Training steps timed per round.")
flags.DEFINE_integer("rounds", 3, "Rounds; each times every form once.")
flags.DEFINE_list("precisions", ["fp32", "bf16"], "Precisions to measure.")
FLAGS = flags.FLAGS


def _train_step_fn(encoder, train: Sequence[str]):
    import tensorflow as tf

    tokens = encoder.tokenize(tf.constant(list(train), tf.string))
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


def compare(forms: Sequence[str], make: Callable, what: str) -> int:
    """Builds `make(precision, form)` (a SentenceEncoder) for each of FLAGS.precisions and the two `forms`,
    times them alternated over FLAGS.rounds rounds and prints the table (first form over second)."""
    import numpy as np

    from bench.machine import machine_busy_ticks, other_cores, process_ticks
    from common.data.sts import load_stsb
    from common.evaluation.embedding import embed_sentences

    first, second = forms
    pairs = load_stsb(FLAGS.data_path, "test")  # raises FileNotFoundError (one line, exit 2) without the data
    sentences = (list(pairs.sentences1) + list(pairs.sentences2))[:FLAGS.sentences]
    train = sentences[:FLAGS.train_batch]
    variants = {}
    for precision in FLAGS.precisions:
        for form in forms:
            encoder = make(precision, form)
            fn = encoder.embedding_function()
            step = _train_step_fn(encoder, train)
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
    print(f"{what}. MiniLM, {len(sentences)} STS-B test sentences at batch {FLAGS.batch_size} (sorted by token "
          f"count); training: {len(train)} sentences x 2 dropout views, length 32, {FLAGS.train_steps} gradient "
          f"steps; {FLAGS.rounds} rounds alternated; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"other processes used {', '.join(f'{x:.2f}' for x in others)} cores per round")
    print(f"| precision | encode {first} (sent/s) | encode {second} | ratio | train {first} (sent/s) | train {second} | "
          "ratio | max abs diff of embeddings |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")

    def cell(values):
        return f"{statistics.median(values):.1f} [{min(values):.1f}-{max(values):.1f}]"

    for precision in FLAGS.precisions:
        e = {f: statistics.median(encode[(precision, f)]) for f in forms}
        t = {f: statistics.median(training[(precision, f)]) for f in forms}
        diff = float(np.abs(outputs[(precision, first)] - outputs[(precision, second)]).max())
        print(f"| {precision} | {cell(encode[(precision, first)])} | {cell(encode[(precision, second)])} | "
              f"{e[first] / e[second]:.2f} | {cell(training[(precision, first)])} | "
              f"{cell(training[(precision, second)])} | {t[first] / t[second]:.2f} | {diff:.1e} |")
    return 0
