"""Adam on an embedding gathered with repeated ids: the step `MethodModel.train_step` takes equals
Adam's on the summed gradient, which Keras' own sparse path does not (pinned below, so that a Keras
that fixes it shows here and `dense_gradients` can go)."""

import numpy as np
import pytest
import tensorflow as tf
import keras

from common.training.method import dense_gradients

IDS = [1, 1, 1, 2]  # row 1 gathered three times
WEIGHTS = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [3.0, -1.0]], np.float32)
LR = 0.1


def _adam_step(densify: bool) -> np.ndarray:
    table = keras.Variable(np.ones((4, 2), np.float32))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(table, IDS) * WEIGHTS)
    grads = tape.gradient(loss, [table.value])
    assert isinstance(grads[0], tf.IndexedSlices)
    if densify:
        grads = dense_gradients(grads)
    keras.optimizers.Adam(LR).apply(grads, [table])
    return table.numpy()


def numpy_adam_first_step(grad: np.ndarray, lr: float, epsilon: float = 1e-7) -> np.ndarray:
    """Adam's first step, written from Kingma & Ba (2015) with Keras' epsilon placement."""
    m, v = 0.1 * grad, 0.001 * grad ** 2
    alpha = lr * np.sqrt(1 - 0.999) / (1 - 0.9)
    return -alpha * m / (np.sqrt(v) + epsilon)


def test_dense_gradients_give_adams_step_on_the_summed_gradient():
    summed = np.zeros((4, 2), np.float32)
    for i, w in zip(IDS, WEIGHTS):
        summed[i] += w
    np.testing.assert_allclose(_adam_step(densify=True), 1.0 + numpy_adam_first_step(summed, LR), atol=1e-5)


def test_keras_adam_on_sparse_gradients_oversteps_repeated_rows():
    """Keras squares each slice before adding them: row 1's step is sqrt(3) x Adam's."""
    sparse, dense = _adam_step(densify=False), _adam_step(densify=True)
    np.testing.assert_allclose(dense[2], sparse[2], atol=1e-6)  # gathered once: the same
    assert (1.0 - sparse[1]) / (1.0 - dense[1]) == pytest.approx([np.sqrt(3)] * 2, rel=1e-4)


def test_dense_gradients_leave_dense_and_missing_gradients():
    dense = tf.ones([2])
    assert dense_gradients([dense, None])[0] is dense and dense_gradients([None]) == [None]
