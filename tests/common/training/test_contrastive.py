import numpy as np
import pytest
import tensorflow as tf

from common.training.contrastive import in_batch_infonce_loss, nt_xent_loss


def _normalize(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def numpy_nt_xent(anchors, positives, t):
    """DeCLUTR eq. 2, written from the formula: 2N embeddings, l(i,j) both ways, mean."""
    e = _normalize(np.concatenate([anchors, positives]).astype(np.float64))
    n = len(anchors)
    sim = e @ e.T / t
    total = 0.0
    for i in range(2 * n):
        j = i + n if i < n else i - n
        others = [k for k in range(2 * n) if k != i]
        total += -(sim[i, j] - np.log(np.exp(sim[i, others]).sum()))
    return total / (2 * n)


def numpy_simcse(q, k, t, h=None, w=1.0):
    q, k = _normalize(q.astype(np.float64)), _normalize(k.astype(np.float64))
    total = 0.0
    for i in range(len(q)):
        logits = list(q[i] @ k.T / t)
        if h is not None:
            hard = q[i] @ _normalize(h.astype(np.float64)).T / t
            hard[i] += np.log(w)
            logits += list(hard)
        logits = np.array(logits)
        total += -(logits[i] - np.log(np.exp(logits).sum()))
    return total / len(q)


def test_nt_xent_matches_numpy():
    rng = np.random.default_rng(0)
    a, p = rng.normal(size=(6, 8)).astype(np.float32), rng.normal(size=(6, 8)).astype(np.float32)
    for t in (0.05, 0.5):
        local, global_value = nt_xent_loss(tf.constant(a), tf.constant(p), t)
        assert float(local) == pytest.approx(numpy_nt_xent(a, p, t), rel=1e-5)
        assert float(global_value) == pytest.approx(float(local), rel=1e-6)


def test_correct_pairing_scores_lower_than_shuffled():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(16, 32)).astype(np.float32)
    p = a + 0.3 * rng.normal(size=a.shape).astype(np.float32)
    good = float(nt_xent_loss(tf.constant(a), tf.constant(p))[0])
    bad = float(nt_xent_loss(tf.constant(a), tf.constant(p[rng.permutation(16)]))[0])
    assert good < bad


def test_infonce_with_hard_negatives_matches_numpy():
    rng = np.random.default_rng(2)
    q, k, h = (rng.normal(size=(5, 8)).astype(np.float32) for _ in range(3))
    assert float(in_batch_infonce_loss(tf.constant(q), tf.constant(k), 0.05)[0]) == \
        pytest.approx(numpy_simcse(q, k, 0.05), rel=1e-5)
    for w in (1.0, 2.0):
        got = float(in_batch_infonce_loss(tf.constant(q), tf.constant(k), 0.05, tf.constant(h), w)[0])
        assert got == pytest.approx(numpy_simcse(q, k, 0.05, h, w), rel=1e-5)
    heavier = float(in_batch_infonce_loss(tf.constant(q), tf.constant(k), 0.05, tf.constant(h), 4.0)[0])
    assert heavier > float(in_batch_infonce_loss(tf.constant(q), tf.constant(k), 0.05, tf.constant(h), 1.0)[0])
