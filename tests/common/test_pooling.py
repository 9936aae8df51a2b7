import numpy as np
import pytest
import tensorflow as tf

from common.models.pooling import cls_pool, masked_mean_pool, pool


def test_masked_mean_ignores_padding():
    seq = tf.constant([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]],
                       [[5.0, 6.0], [-50.0, 9.0], [7.0, 8.0]]])
    mask = tf.constant([[1, 1, 0], [1, 0, 1]])
    np.testing.assert_allclose(masked_mean_pool(seq, mask), [[2.0, 3.0], [6.0, 7.0]])


def test_all_padding_row_is_finite():
    out = masked_mean_pool(tf.ones([1, 2, 3]), tf.zeros([1, 2], tf.int32))
    assert np.isfinite(out.numpy()).all()


def test_cls_and_dispatch():
    seq = tf.reshape(tf.range(12, dtype=tf.float32), [2, 3, 2])
    np.testing.assert_allclose(cls_pool(seq), [[0.0, 1.0], [6.0, 7.0]])
    np.testing.assert_allclose(pool(seq, tf.ones([2, 3]), "cls"), cls_pool(seq))
    with pytest.raises(ValueError, match="Unknown pooling mode 'max'"):
        pool(seq, tf.ones([2, 3]), "max")


def test_pooler_mode_is_the_backbones_pooler_output():
    seq = tf.reshape(tf.range(12, dtype=tf.float32), [2, 3, 2])
    pooler_output = tf.constant([[0.5, -0.5], [0.25, 0.75]])
    np.testing.assert_array_equal(pool(seq, tf.ones([2, 3]), "pooler", pooler_output), pooler_output)
    with pytest.raises(ValueError, match="'pooler' needs the backbone's pooler output"):
        pool(seq, tf.ones([2, 3]), "pooler")
