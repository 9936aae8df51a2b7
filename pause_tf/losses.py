"""The PAUSE objective: softmax cross-entropy on labelled pairs plus a
non-negative PU risk per class (Cao et al., EMNLP 2021, https://aclanthology.org/2021.emnlp-main.791/;
nnPU: Kiryo et al., NeurIPS 2017, https://arxiv.org/abs/1703.00593).

Every term is a mean over rows, i.e. a sum over rows divided by a count. The
functions therefore work on *statistics* (per-class sums and counts): under a
distribution strategy the counts and risks are summed across replicas before they
are combined, and each replica returns its own share of the global-batch loss,
so that the sum of the replicas' gradients (what Keras applies) is exactly the
gradient of the global-batch loss. On one device the plain functions
`nnpu_loss` / `pause_loss` are the same computation.

Labels: 0..K-1 for labelled pairs, -1 for unlabelled ones.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

import tensorflow as tf

UNLABELED = -1

Stats = Dict[str, tf.Tensor]
# Sums a statistic over replicas; identity on one device.
ReduceFn = Callable[[tf.Tensor], tf.Tensor]


def _identity(x: tf.Tensor) -> tf.Tensor:
    return x


def pu_statistics(logits: tf.Tensor, labels: tf.Tensor) -> Stats:
    """Per-class sums of the sigmoid losses that the nnPU risk needs.

    For class c the score is the logit g_c, used one-vs-rest with the sigmoid
    loss l(z) = sigmoid(-z): a positive costs sigmoid(-g_c), a negative sigmoid(g_c).

    Args:
        logits: tf.Tensor. [batch, num_classes] float.
        labels: tf.Tensor. [batch] int, class id or -1 (unlabelled).

    Returns:
        Dict of float tensors: `pos_count` [K], `unl_count` [], `pos_as_pos`
        [K] (sum over rows labelled c of sigmoid(-g_c)), `pos_as_neg` [K]
        (same rows, sigmoid(g_c)), `unl_as_neg` [K] (unlabelled rows, sigmoid(g_c)).
    """
    logits = tf.cast(logits, tf.float32)
    num_classes = tf.shape(logits)[1]
    labels = tf.reshape(tf.cast(labels, tf.int32), [-1])  # [B]
    positive = tf.one_hot(labels, num_classes, dtype=tf.float32)  # [B, K]; -1 rows are all zero
    unlabeled = tf.cast(tf.equal(labels, UNLABELED), tf.float32)[:, tf.newaxis]  # [B, 1]
    as_pos = tf.sigmoid(-logits)  # [B, K]
    as_neg = tf.sigmoid(logits)  # [B, K]
    return {
        "pos_count": tf.reduce_sum(positive, axis=0),  # [K]
        "unl_count": tf.reduce_sum(unlabeled),  # []
        "pos_as_pos": tf.reduce_sum(positive * as_pos, axis=0),  # [K]
        "pos_as_neg": tf.reduce_sum(positive * as_neg, axis=0),  # [K]
        "unl_as_neg": tf.reduce_sum(unlabeled * as_neg, axis=0),  # [K]
    }


def nnpu_loss_from_statistics(local: Stats, prior: float,
                              reduce_fn: ReduceFn = _identity) -> Tuple[tf.Tensor, tf.Tensor]:
    """The non-negative PU loss, mean over classes.

    Per class c, with P the rows labelled c, U the unlabelled rows and pi the prior:
        positive risk  R+ = pi * mean_P sigmoid(-g_c)
        negative risk  R- = mean_U sigmoid(g_c) - pi * mean_P sigmoid(g_c)
        loss_c = -R-        if R- < 0   (the original's choice: push R- back up)
               = R+ + R-    otherwise.
    Empty P or U count as 1 row (their sums are 0), as in the original code.

    Args:
        local: Stats. This replica's `pu_statistics`.
        prior: float or [K] tensor. Class prior pi, one for every class (the original's
            `--prior`, 1/3 by default) or one per class.
        reduce_fn: callable. Sums a tensor over replicas (identity on one device).

    Returns:
        (local_share, global_value): this replica's share of the loss (its
        gradient is this replica's part of the global gradient) and the
        global-batch loss itself (for logging; no gradient needed).
    """
    stop = tf.stop_gradient
    glob = {k: stop(reduce_fn(v)) for k, v in local.items()}
    n_pos = tf.maximum(glob["pos_count"], 1.0)  # [K]
    n_unl = tf.maximum(glob["unl_count"], 1.0)  # []
    pos_risk = prior * glob["pos_as_pos"] / n_pos  # [K]
    neg_risk = glob["unl_as_neg"] / n_unl - prior * glob["pos_as_neg"] / n_pos  # [K]
    negative = tf.less(neg_risk, 0.0)  # [K], decided on the global batch
    global_value = tf.reduce_mean(tf.where(negative, -neg_risk, pos_risk + neg_risk))
    # Given the branch, the loss is linear in the sums: rebuild it from the local sums.
    local_pos = prior * local["pos_as_pos"] / n_pos  # [K]
    local_neg = local["unl_as_neg"] / n_unl - prior * local["pos_as_neg"] / n_pos  # [K]
    local_share = tf.reduce_mean(tf.where(negative, -local_neg, local_pos + local_neg))
    return local_share, global_value


def ce_statistics(logits: tf.Tensor, labels: tf.Tensor) -> Stats:
    """Sum and count of the softmax cross-entropy over labelled rows only."""
    labels = tf.reshape(tf.cast(labels, tf.int32), [-1])  # [B]
    labelled = tf.greater_equal(labels, 0)  # [B]
    safe = tf.where(labelled, labels, 0)
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=safe, logits=tf.cast(logits, tf.float32))  # [B]
    mask = tf.cast(labelled, tf.float32)
    return {"ce_sum": tf.reduce_sum(ce * mask), "labelled_count": tf.reduce_sum(mask)}


def ce_loss_from_statistics(local: Stats, reduce_fn: ReduceFn = _identity) -> Tuple[tf.Tensor, tf.Tensor]:
    """Mean cross-entropy over the labelled rows of the global batch (0 if none).

    Returns:
        (local_share, global_value) as in `nnpu_loss_from_statistics`.
    """
    count = tf.maximum(tf.stop_gradient(reduce_fn(local["labelled_count"])), 1.0)
    return local["ce_sum"] / count, tf.stop_gradient(reduce_fn(local["ce_sum"])) / count


def nnpu_loss(logits: tf.Tensor, labels: tf.Tensor, prior: float) -> tf.Tensor:
    """Non-negative PU loss of one batch on one device (see `nnpu_loss_from_statistics`).

    Args:
        logits: tf.Tensor. [batch, num_classes].
        labels: tf.Tensor. [batch] class ids, -1 for unlabelled rows.
        prior: float. Class prior pi.

    Returns:
        Scalar loss.
    """
    return nnpu_loss_from_statistics(pu_statistics(logits, labels), prior)[0]


def labelled_cross_entropy(logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
    """Softmax cross-entropy averaged over labelled rows (0 for an all-unlabelled batch)."""
    return ce_loss_from_statistics(ce_statistics(logits, labels))[0]


def pause_loss(logits: tf.Tensor, labels: tf.Tensor, prior: float, pu_weight: tf.Tensor,
               reduce_fn: Optional[ReduceFn] = None) -> Dict[str, tf.Tensor]:
    """The PAUSE loss: cross-entropy + pu_weight * nnPU.

    Args:
        logits: tf.Tensor. [batch, num_classes] (this replica's rows).
        labels: tf.Tensor. [batch] class ids, -1 for unlabelled rows.
        prior: float. Class prior pi.
        pu_weight: tf.Tensor. Annealed weight of the PU term (see `pause_tf.annealing`).
        reduce_fn: callable. Sums over replicas; None on one device.

    Returns:
        Dict: `loss` (this replica's share: differentiate this), and the
        global-batch values `total`, `ce`, `pu` (for logging).
    """
    reduce_fn = reduce_fn or _identity
    pu_local, pu_global = nnpu_loss_from_statistics(pu_statistics(logits, labels), prior, reduce_fn)
    ce_local, ce_global = ce_loss_from_statistics(ce_statistics(logits, labels), reduce_fn)
    pu_weight = tf.cast(pu_weight, tf.float32)
    return {
        "loss": ce_local + pu_weight * pu_local,
        "total": ce_global + pu_weight * pu_global,
        "ce": ce_global,
        "pu": pu_global,
    }
