"""BERT's post-LN transformer layer, its dense products as 2-D matmuls that TensorFlow's graph
optimizer fuses (docs/design/dense-products.md)."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras_hub.layers import TransformerEncoder

from common import compat


def _dense_2d(x: tf.Tensor, dense: keras.layers.Layer, units: int) -> tf.Tensor:
    """`dense`'s product on rows `x` [N, in] as one 2-D MatMul then BiasAdd, its kernel (Dense [in, units]
    or EinsumDense [in, heads, head_dim] / [heads, head_dim, units]) seen as [in, units]."""
    return tf.nn.bias_add(tf.matmul(x, tf.reshape(dense.kernel, [-1, units])), tf.reshape(dense.bias, [units]))


class BertLayer(TransformerEncoder):
    """keras-hub's post-LN `TransformerEncoder` (the same sublayers, variables, config and dropout
    calls) computing each of its six dense products as a 2-D MatMul followed by a BiasAdd.

    Keras' layers compute them as einsums (Q, K, V and the attention output) and as a 3-D matmul
    whose bias add follows a reshape, which TensorFlow runs as separate kernels. On rows [batch x
    time, hidden] the same products are the pattern TensorFlow's graph optimizer (grappler's remapper,
    with the oneDNN kernels of x86 CPUs) fuses into one `_FusedMatMul` each, bias included, and in the
    feed-forward block the exact GELU too (`BiasAdd, GeluExact`, applied to the float32 accumulator,
    in bf16 as well). `inference_activation` is the activation used outside training: the erf-form
    GELU in the compute dtype where the training activation computes it in float32 around casts
    (which the remapper cannot fuse); elsewhere the activation itself. The attention core (scaling,
    masked softmax, dropout, the two per-head products) is Keras' `MultiHeadAttention`'s own. The
    result equals keras-hub's call to float32 round-off (a test), and so do training's dropout masks:
    each dropout layer sees the same shapes in the same order.
    """

    def __init__(self, *args, inference_activation=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.inference_activation = inference_activation

    def call(self, inputs, padding_mask=None, attention_mask=None, training=None, return_attention_scores=False):
        if self.normalize_first or return_attention_scores:
            return super().call(inputs, padding_mask=padding_mask, attention_mask=attention_mask,
                                training=training, return_attention_scores=return_attention_scores)
        parts = compat.encoder_parts(self)
        hidden = inputs.shape[-1]
        shape = tf.shape(inputs)
        rows = tf.reshape(inputs, [-1, hidden])
        mask = compat.merge_padding_and_attention_mask(inputs, padding_mask, attention_mask)
        mask = compat.attention_mask(parts.attention, inputs, mask)
        per_head = [shape[0], shape[1], *compat.attention_heads(parts.attention)]
        query, key, value = (tf.reshape(_dense_2d(rows, dense, hidden), per_head)
                             for dense in (parts.query, parts.key, parts.value))
        context = compat.attention_context(parts.attention, query, key, value, mask, training)
        x = _dense_2d(tf.reshape(context, [-1, hidden]), parts.attention_output, hidden)
        x = parts.attention_dropout(tf.reshape(x, shape), training=training)
        x = parts.attention_norm(x + inputs)

        h = _dense_2d(tf.reshape(x, [-1, hidden]), parts.intermediate, self.intermediate_dim)
        activation = parts.intermediate.activation if training or self.inference_activation is None \
            else self.inference_activation
        h = activation(h)
        y = _dense_2d(h, parts.output, hidden)
        y = parts.feedforward_dropout(tf.reshape(y, shape), training=training)
        return parts.feedforward_norm(y + x)
