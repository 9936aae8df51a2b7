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


def test_padded_mean_averages_every_position_and_the_encoder_pads_to_its_length():
    from common.models.encoder import EncoderConfig, build_encoder
    from common.models.pooling import padded_mean_pool

    seq = tf.constant([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    np.testing.assert_allclose(padded_mean_pool(seq), [[104.0 / 3, 106.0 / 3]])
    np.testing.assert_allclose(pool(seq, tf.constant([[1, 1, 0]]), "padded_mean"), padded_mean_pool(seq))

    encoder = build_encoder(EncoderConfig(spec="random_tiny", pooling="padded_mean", max_seq_len=16, seed=1))
    short, long = "a man plays .", "a man plays a guitar in the park with his dog today ."
    alone = encoder(tf.constant([short]))
    beside = encoder(tf.constant([short, long]))
    # Padded to 16 whatever the batch, as the original PAUSE code padded to its max_seq_len: the
    # embedding of a sentence does not depend on the sentences beside it.
    assert alone["sequence_output"].shape[1] == beside["sequence_output"].shape[1] == 16
    np.testing.assert_allclose(alone["embedding"][0], beside["embedding"][0], atol=1e-5)
    np.testing.assert_allclose(alone["embedding"], tf.reduce_mean(alone["sequence_output"], axis=1), atol=1e-6)
    # The masked mean of the same weights differs: the padding positions count here.
    masked = build_encoder(EncoderConfig(spec="random_tiny", pooling="mean", max_seq_len=16, seed=1))
    assert not np.allclose(masked(tf.constant([short]))["embedding"], alone["embedding"], atol=1e-3)
    # The length is the model's: used without one, it keeps padding to 16.
    assert encoder.model_max_seq_len == 16 and encoder.with_length() is encoder
