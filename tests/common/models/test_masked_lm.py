import numpy as np
import pytest
import tensorflow as tf

from common.models.masked_lm import mask_tokens


def test_mask_statistics_over_many_draws():
    ids = tf.constant(np.random.default_rng(0).integers(5, 1000, size=(64, 128)), tf.int32)
    ids = tf.concat([tf.fill([64, 1], 2), ids[:, 1:-1], tf.fill([64, 1], 3)], axis=1)  # [CLS] ... [SEP]
    mask = tf.concat([tf.ones([64, 100], tf.int32), tf.zeros([64, 28], tf.int32)], axis=1)
    ids = ids * mask  # padding id 0
    selected, masked, random_, kept = 0, 0, 0, 0
    candidates = int(tf.reduce_sum(mask)) - 64  # minus [CLS]
    for step in range(20):
        out = mask_tokens(ids, mask, tf.constant([7, step]), special_ids=[2, 3, 0], mask_id=4, vocab_size=1000)
        w = out["mlm_weights"].numpy() > 0
        new, old = out["token_ids"].numpy(), ids.numpy()
        assert not w[mask.numpy() == 0].any() and not w[:, 0].any()  # never padding or [CLS]
        np.testing.assert_array_equal(out["mlm_labels"].numpy(), old)
        np.testing.assert_array_equal(new[~w], old[~w])  # unselected tokens are untouched
        selected += w.sum()
        masked += (new[w] == 4).sum()
        kept += (new[w] == old[w]).sum()
        random_ += ((new[w] != 4) & (new[w] != old[w])).sum()
    assert selected / (20 * candidates) == pytest.approx(0.15, abs=0.005)
    assert masked / selected == pytest.approx(0.8, abs=0.01)
    assert random_ / selected == pytest.approx(0.1, abs=0.01)  # a random draw can equal the original id
    assert kept / selected == pytest.approx(0.1, abs=0.01)


def test_masking_is_seeded():
    ids = tf.constant(np.arange(5, 205).reshape(2, 100), tf.int32)
    mask = tf.ones_like(ids)
    a = mask_tokens(ids, mask, tf.constant([1, 2]), [0], 4, 300)["token_ids"].numpy()
    b = mask_tokens(ids, mask, tf.constant([1, 2]), [0], 4, 300)["token_ids"].numpy()
    c = mask_tokens(ids, mask, tf.constant([1, 3]), [0], 4, 300)["token_ids"].numpy()
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
