"""Trans-Encoder's losses against NumPy."""

import numpy as np
import tensorflow as tf

from trans_encoder_tf.losses import cosine_mse_loss, soft_bce_with_logits_loss


def _np_bce(x, y):
    p = 1 / (1 + np.exp(-x))
    return np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p)))


def test_soft_bce_equals_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 3, 17).astype(np.float32)
    y = rng.uniform(0, 1, 17).astype(np.float32)
    local, total = soft_bce_with_logits_loss(tf.constant(x), tf.constant(y))
    np.testing.assert_allclose(float(total), _np_bce(x.astype(np.float64), y), rtol=1e-5)
    assert float(local) == float(total)  # one replica: its share is the whole loss


def test_soft_bce_is_minimal_where_the_sigmoid_equals_the_soft_label():
    y = tf.constant([0.2, 0.7, 0.95])
    x = tf.Variable(tf.math.log(y / (1 - y)))  # sigmoid(x) == y
    with tf.GradientTape() as tape:
        loss = soft_bce_with_logits_loss(x, y)[0]
    np.testing.assert_allclose(tape.gradient(loss, x), 0.0, atol=1e-6)
    assert float(loss) > 0  # soft labels: the minimum is the labels' entropy, not 0


def test_cosine_mse_equals_numpy():
    rng = np.random.default_rng(1)
    u, v = rng.normal(size=(9, 6)).astype(np.float32), rng.normal(size=(9, 6)).astype(np.float32)
    y = rng.uniform(0, 1, 9).astype(np.float32)
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    _, total = cosine_mse_loss(tf.constant(u), tf.constant(v), tf.constant(y))
    np.testing.assert_allclose(float(total), np.mean((cos - y) ** 2), rtol=1e-5)
    # Invariant to each embedding's scale (it is a loss on the cosine).
    _, scaled = cosine_mse_loss(tf.constant(3 * u), tf.constant(0.5 * v), tf.constant(y))
    np.testing.assert_allclose(float(scaled), float(total), rtol=1e-5)
