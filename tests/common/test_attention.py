"""BertSelfAttention computes what Keras' stock MultiHeadAttention core computes, with its variables."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from common.models.attention import BertSelfAttention
from common.models.bert import BertBackbone, BertConfig

CONFIG = BertConfig(vocab_size=100, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64,
                    max_position_embeddings=64, dropout=0.1)


def _inputs(seed=0, batch=3, length=11):
    rng = np.random.default_rng(seed)
    lengths = np.array([length, 5, 1][:batch])
    mask = (np.arange(length)[None, :] < lengths[:, None]).astype(np.int32)
    return {"token_ids": tf.constant(rng.integers(1, 100, (batch, length)) * mask, tf.int32),
            "padding_mask": tf.constant(mask), "segment_ids": tf.zeros((batch, length), tf.int32)}


def _set_attention(backbone, cls):
    for layer in backbone.transformer_layers:
        layer._self_attention_layer.__class__ = cls


def _seed_states(backbone):
    return [v for v in backbone.variables if "seed_generator_state" in v.path]


def _run(backbone, cls, inputs, training):
    """sequence_output and the gradients of a loss on it, from the same dropout seed state."""
    states = [v.numpy() for v in _seed_states(backbone)]
    _set_attention(backbone, cls)
    try:
        with tf.GradientTape() as tape:
            out = tf.cast(backbone(inputs, training=training)["sequence_output"], tf.float32)
            loss = tf.reduce_sum(tf.square(out) * tf.cast(inputs["padding_mask"], tf.float32)[..., None])
        grads = tape.gradient(loss, backbone.trainable_variables)
    finally:
        _set_attention(backbone, BertSelfAttention)
        for v, s in zip(_seed_states(backbone), states):
            v.assign(s)
    return out.numpy(), [tf.convert_to_tensor(g).numpy() for g in grads if g is not None]


def test_backbone_uses_it_and_keeps_the_variable_names():
    backbone = BertBackbone(CONFIG)
    assert all(type(layer._self_attention_layer) is BertSelfAttention for layer in backbone.transformer_layers)
    stock_names = sorted(v.path for v in backbone.variables)
    _set_attention(backbone, keras.layers.MultiHeadAttention)
    assert sorted(v.path for v in backbone.variables) == stock_names


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training-dropout"])
def test_outputs_and_gradients_equal_keras_stock_attention(training):
    """Same dropout draws too: the probabilities get Keras' dropout layer at the stock path's shape."""
    backbone = BertBackbone(CONFIG)
    inputs = _inputs()
    stock_out, stock_grads = _run(backbone, keras.layers.MultiHeadAttention, inputs, training)
    ours_out, ours_grads = _run(backbone, BertSelfAttention, inputs, training)
    valid = inputs["padding_mask"].numpy().astype(bool)
    np.testing.assert_allclose(ours_out[valid], stock_out[valid], atol=1e-5)
    assert len(ours_grads) == len(stock_grads)
    for ours, stock in zip(ours_grads, stock_grads):
        np.testing.assert_allclose(ours, stock, atol=1e-4, rtol=1e-4)
    if training:  # dropout was on: a different draw would not pass the comparison above
        again, _ = _run(backbone, BertSelfAttention, inputs, training)
        assert np.abs(again[valid] - ours_out[valid]).max() > 1e-3


def test_padded_keys_get_no_attention():
    """A token's output does not depend on what sits at padded positions."""
    backbone = BertBackbone(CONFIG)
    inputs = _inputs()
    other = dict(inputs, token_ids=tf.where(inputs["padding_mask"] > 0, inputs["token_ids"], 7))
    a = backbone(inputs)["sequence_output"].numpy()
    b = backbone(other)["sequence_output"].numpy()
    valid = inputs["padding_mask"].numpy().astype(bool)
    np.testing.assert_allclose(a[valid], b[valid], atol=1e-6)


def test_bf16_close_to_fp32():
    fp32 = BertBackbone(CONFIG)
    bf16 = BertBackbone(CONFIG, precision="bf16")
    bf16.set_weights(fp32.get_weights())
    inputs = _inputs()
    valid = inputs["padding_mask"].numpy().astype(bool)
    want = fp32(inputs)["sequence_output"].numpy()
    got = bf16(inputs)["sequence_output"]
    assert got.dtype == tf.bfloat16
    np.testing.assert_allclose(tf.cast(got, tf.float32).numpy()[valid], want[valid], atol=0.1)


def test_attention_scores_request_falls_back_to_keras():
    backbone = BertBackbone(CONFIG)
    layer = backbone.transformer_layers[0]._self_attention_layer
    x = tf.random.stateless_normal([2, 5, CONFIG.hidden_size], seed=[1, 2])
    out, scores = layer(query=x, value=x, return_attention_scores=True)
    assert scores.shape == (2, CONFIG.num_heads, 5, 5)
    np.testing.assert_allclose(out.numpy(), layer(query=x, value=x).numpy(), atol=1e-6)
