"""BERT self-attention computed as head-major batched matmuls.

Keras' `MultiHeadAttention` (which keras-hub's `TransformerEncoder` builds) takes
the per-head products with `einsum("aecd,abcd->acbe")` on [batch, time, heads,
head_dim] tensors and masks through its `Softmax` layer. On CPU, TensorFlow runs
that as a transpose of each operand around a BatchMatMul for every call, and the
mask as a [B, 1, T, S] select; for BERT's small heads (64 or 32 wide) those
products take a quarter of an encoding step for a few percent of its FLOPs.

`BertSelfAttention._compute_attention` keeps the layer's variables, names and
dropout (so checkpoints, weight maps and seeded dropout are unchanged) and
computes the same function as one transpose of Q, K and V each to [B, heads, T,
d], `matmul(q, k, transpose_b=True)`, an additive key-padding bias broadcast as
[B, 1, 1, S], softmax in float32 (also under bf16/fp16 policies, whose stock
softmax runs in the compute dtype), dropout on the probabilities, `matmul(p, v)`
and one transpose back. `bench/attention_speed.py` measures it against the stock
path.
"""

from __future__ import annotations

import keras
import tensorflow as tf
from keras_hub.layers import TransformerEncoder

# Added to the scores of padded keys: exp() of it underflows to 0 in float32.
_MASKED_SCORE = -1e9


def _probs(q, k, bias):
    scores = tf.cast(tf.matmul(q, k, transpose_b=True), tf.float32) + bias  # [B, N, T, S]
    return tf.cast(tf.nn.softmax(scores, axis=-1), q.dtype)


def _context(q, k, v, bias):
    return tf.matmul(_probs(q, k, bias), v)


import os
_JIT = os.environ.get("ATTN_JIT", "0") == "1"
_PROBS = tf.function(_probs, jit_compile=True) if _JIT else _probs
_CONTEXT = tf.function(_context, jit_compile=True) if _JIT else _context


class BertSelfAttention(keras.layers.MultiHeadAttention):
    """`keras.layers.MultiHeadAttention` with the head-major matmul attention core.

    Only the core (`_compute_attention`) differs; projections, variables and
    dropout are the parent's. Requests the fast path cannot serve (attention
    scores returned, a causal mask, attention over more than one axis) go to the
    parent unchanged.
    """

    def _compute_attention(self, query, key, value, attention_mask=None, training=None,
                           return_attention_scores=False, use_causal_mask=False):
        if return_attention_scores or use_causal_mask or len(query.shape) != 4 or len(self._attention_axes) != 1:
            return super()._compute_attention(query, key, value, attention_mask=attention_mask, training=training,
                                              return_attention_scores=return_attention_scores,
                                              use_causal_mask=use_causal_mask)
        compute_dtype = query.dtype
        q = tf.transpose(query, [0, 2, 1, 3]) * tf.cast(self._inverse_sqrt_key_dim, compute_dtype)  # [B, N, T, d]
        k = tf.transpose(key, [0, 2, 1, 3])  # [B, N, S, d]
        v = tf.transpose(value, [0, 2, 1, 3])  # [B, N, S, d]
        if attention_mask is None:
            bias = tf.zeros([1, 1, 1, 1], tf.float32)
        else:
            mask = tf.cast(attention_mask, tf.bool)  # [B, S], [B, T|1, S] or [B, N|1, T|1, S]
            while len(mask.shape) < 4:
                mask = tf.expand_dims(mask, axis=1)
            bias = tf.where(mask, 0.0, _MASKED_SCORE)
        if self._dropout > 0.0 and training:
            probs = _PROBS(q, k, bias)
            probs = self._dropout_layer(probs, training=training)
            context = tf.matmul(probs, v)  # [B, N, T, d]
        else:
            context = _CONTEXT(q, k, v, bias)
        return tf.transpose(context, [0, 2, 1, 3]), None


class BertTransformerLayer(TransformerEncoder):
    """keras-hub's `TransformerEncoder` whose self-attention is `BertSelfAttention`.

    The parent builds a stock `keras.layers.MultiHeadAttention`; this switches the
    built layer's class to the subclass, which adds no state and overrides only
    `_compute_attention` (Keras' documented extension point), so variables, their
    names and checkpoints are the parent's.
    """

    def build(self, inputs_shape):
        super().build(inputs_shape)
        attention = self._self_attention_layer
        if type(attention) is not keras.layers.MultiHeadAttention:
            raise TypeError(f"expected keras-hub's TransformerEncoder to build a keras.layers.MultiHeadAttention; "
                            f"got {type(attention).__name__} (keras-hub version changed?)")
        attention.__class__ = BertSelfAttention
