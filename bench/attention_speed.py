"""The attention core, stock Keras vs `common.models.attention.BertSelfAttention`: the same encoder
(same weights) built twice, one with Keras' einsum-and-Softmax-layer attention put back, alternated
A B A B within each round; prints the median and the range of each figure, their ratio and the
largest difference of the outputs.

Figures: encoding STS-B test sentences (`embed_sentences`, batches sorted by token count) and a
training step (forward and backward through the encoder with dropout on, `--train_batch` sentences
cut at `--max_seq_len`), in each of `--precisions`.

    .venv/bin/python -m bench.attention_speed --data_path=../shared/data --rounds=5

Not part of the test suite; run it on an otherwise idle machine (it prints the load average).
"""

from __future__ import annotations

import os
import statistics
import time

from absl import app, flags

flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
flags.DEFINE_string("model", "minilm", "Encoder spec.")
flags.DEFINE_integer("sentences", 1024, "STS-B test sentences to encode per round (first sentences, then second).")
flags.DEFINE_integer("batch_size", 128, "Encoding batch size.")
flags.DEFINE_integer("train_batch", 128, "Sentences per training step (64 pairs of an in-batch contrastive step).")
flags.DEFINE_integer("train_steps", 5, "Training steps timed per round.")
flags.DEFINE_integer("max_seq_len", 32, "Truncation length of the training step's sentences.")
flags.DEFINE_integer("rounds", 5, "Rounds; each times every figure once per attention.")
flags.DEFINE_list("precisions", ["fp32"], "Precisions to measure (fp32, bf16, fp16).")
FLAGS = flags.FLAGS

ATTENTIONS = ("stock", "matmul")


def _with_stock_attention(encoder):
    """Puts Keras' own attention core back into every layer of `encoder` (the same variables)."""
    import keras

    for layer in encoder.backbone.transformer_layers:
        layer._self_attention_layer.__class__ = keras.layers.MultiHeadAttention
    return encoder


def _build(precision: str, attention: str, max_seq_len=None):
    from common.models.encoder import EncoderConfig, build_encoder

    encoder = build_encoder(EncoderConfig(spec=FLAGS.model, precision=precision, max_seq_len=max_seq_len))
    return _with_stock_attention(encoder) if attention == "stock" else encoder


def _train_step_fn(encoder):
    import tensorflow as tf

    @tf.function
    def step(tokens):
        with tf.GradientTape() as tape:
            embedding = encoder(tokens, training=True)["embedding"]
            loss = tf.reduce_mean(tf.square(embedding))
        grads = tape.gradient(loss, encoder.trainable_variables)
        return loss, tf.add_n([tf.reduce_sum(tf.cast(g, tf.float32)) for g in grads if g is not None
                               and not isinstance(g, tf.IndexedSlices)])

    return step


def _summary(values):
    return f"median {statistics.median(values):8.1f} (range {min(values):.1f}-{max(values):.1f})"


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    import numpy as np
    import tensorflow as tf

    from common.data.sts import load_stsb
    from common.evaluation.embedding import embed_sentences

    pairs = load_stsb(FLAGS.data_path, "test")
    sentences = (list(pairs.sentences1) + list(pairs.sentences2))[:FLAGS.sentences]
    train_sentences = tf.constant(sentences[:FLAGS.train_batch])
    print(f"{FLAGS.model}: encode {len(sentences)} STS-B test sentences at batch {FLAGS.batch_size}; train step "
          f"{FLAGS.train_batch} sentences, max length {FLAGS.max_seq_len}, {FLAGS.train_steps} steps per round; "
          f"{FLAGS.rounds} rounds; threads intra {tf.config.threading.get_intra_op_parallelism_threads()} "
          f"(0 = all cores, {os.cpu_count()}); load average before {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for precision in FLAGS.precisions:
        encode_fns, train_fns, tokens, outputs, losses = {}, {}, {}, {}, {}
        for attention in ATTENTIONS:
            encoder = _build(precision, attention)
            encode_fns[attention] = encoder.embedding_function()
            embed_sentences(encode_fns[attention], sentences[:FLAGS.batch_size], FLAGS.batch_size, progress=False)
            trainer = _build(precision, attention, FLAGS.max_seq_len)
            train_fns[attention] = _train_step_fn(trainer)
            tokens[attention] = trainer.tokenize(train_sentences)
            train_fns[attention](tokens[attention])  # trace
        encode_rates = {a: [] for a in ATTENTIONS}
        train_rates = {a: [] for a in ATTENTIONS}
        for _ in range(FLAGS.rounds):
            for attention in ATTENTIONS:
                start = time.perf_counter()
                outputs[attention] = embed_sentences(encode_fns[attention], sentences, FLAGS.batch_size,
                                                     progress=False)
                encode_rates[attention].append(len(sentences) / (time.perf_counter() - start))
                start = time.perf_counter()
                for _ in range(FLAGS.train_steps):
                    loss, _ = train_fns[attention](tokens[attention])
                losses[attention] = float(loss)
                train_rates[attention].append(FLAGS.train_steps * FLAGS.train_batch / (time.perf_counter() - start))
        diff = float(np.abs(outputs["matmul"] - outputs["stock"]).max())
        print(f"[{precision}] max |embedding diff| matmul vs stock {diff:.1e}; training losses (dropout on, so "
              f"they differ by draw): {losses['stock']:.5f} / {losses['matmul']:.5f}")
        for name, rates in (("encode sentences/s", encode_rates), ("train sentences/s", train_rates)):
            for attention in ATTENTIONS:
                print(f"  {name:<19} {attention:<7} {_summary(rates[attention])}")
            ratios = [m / s for m, s in zip(rates["matmul"], rates["stock"])]
            print(f"  {name:<19} ratio matmul/stock per round: median {statistics.median(ratios):.2f} "
                  f"(range {min(ratios):.2f}-{max(ratios):.2f})")
    print(f"load average after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    app.run(main)
