import numpy as np
import pytest
import tensorflow as tf

from pause_tf.losses import labelled_cross_entropy, nnpu_loss, pause_loss


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_nnpu(logits, labels, prior):
    """nnPU (Kiryo et al. 2017) per class, one-vs-rest, sigmoid loss; written from the formula."""
    losses = []
    unl = labels == -1
    n_u = max(unl.sum(), 1)
    for c in range(logits.shape[1]):
        g = logits[:, c]
        pos = labels == c
        n_p = max(pos.sum(), 1)
        r_pos_plus = _sigmoid(-g[pos]).sum() / n_p
        r_pos_minus = _sigmoid(g[pos]).sum() / n_p
        r_unl_minus = _sigmoid(g[unl]).sum() / n_u
        negative_risk = r_unl_minus - prior * r_pos_minus
        losses.append(-negative_risk if negative_risk < 0 else prior * r_pos_plus + negative_risk)
    return float(np.mean(losses))


def numpy_ce(logits, labels):
    rows = labels >= 0
    if not rows.any():
        return 0.0
    z = logits[rows] - logits[rows].max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return float(-logp[np.arange(rows.sum()), labels[rows]].mean())


@pytest.mark.parametrize("num_classes", [3, 5])
@pytest.mark.parametrize("kind", ["mixed", "all_unlabelled", "all_labelled"])
def test_nnpu_and_ce_match_numpy(num_classes, kind):
    rng = np.random.default_rng(num_classes)
    logits = rng.normal(size=(40, num_classes)).astype(np.float32) * 2
    labels = rng.integers(-1, num_classes, size=40).astype(np.int32)
    if kind == "all_unlabelled":
        labels[:] = -1
    elif kind == "all_labelled":
        labels = rng.integers(0, num_classes, size=40).astype(np.int32)
    prior = 0.3
    got = float(nnpu_loss(tf.constant(logits), tf.constant(labels), prior))
    assert np.isfinite(got)
    assert got == pytest.approx(numpy_nnpu(logits.astype(np.float64), labels, prior), abs=1e-6)
    ce = float(labelled_cross_entropy(tf.constant(logits), tf.constant(labels)))
    assert ce == pytest.approx(numpy_ce(logits.astype(np.float64), labels), abs=1e-5)


def test_negative_risk_branch_is_taken_and_matches():
    # Unlabelled rows scored very negative for class 0, positives very positive:
    # the negative risk of class 0 is below zero, so its loss is minus that risk.
    logits = np.array([[8.0, 0, 0], [8.0, 0, 0], [-8.0, 0, 0], [-8.0, 0, 0]], np.float32)
    labels = np.array([0, 0, -1, -1], np.int32)
    r_minus = _sigmoid(-8.0) - 0.5 * _sigmoid(8.0)
    assert r_minus < 0
    got = float(nnpu_loss(tf.constant(logits), tf.constant(labels), 0.5))
    assert got == pytest.approx(numpy_nnpu(logits.astype(np.float64), labels, 0.5), abs=1e-6)
    # Class 0 contributes -r_minus > 0; classes 1 and 2 (logits 0, no positives)
    # contribute their negative risk mean_U sigmoid(0) = 0.5.
    assert got == pytest.approx((-r_minus + 0.5 + 0.5) / 3, abs=1e-6)


def test_pause_loss_combines_terms_and_has_gradients():
    rng = np.random.default_rng(0)
    logits = tf.Variable(rng.normal(size=(16, 3)).astype(np.float32))
    labels = tf.constant(rng.integers(-1, 3, size=16).astype(np.int32))
    with tf.GradientTape() as tape:
        out = pause_loss(logits, labels, prior=1 / 3, pu_weight=0.25)
    grad = tape.gradient(out["loss"], logits)
    assert float(out["total"]) == pytest.approx(float(out["ce"]) + 0.25 * float(out["pu"]), abs=1e-6)
    assert float(out["loss"]) == pytest.approx(float(out["total"]), abs=1e-6)
    assert np.isfinite(grad.numpy()).all() and np.abs(grad.numpy()).sum() > 0
