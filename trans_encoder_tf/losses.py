"""Trans-Encoder's two regression objectives on pseudo-labels, exact under tf.distribute.

Liu et al., "Trans-Encoder: Unsupervised sentence-pair modelling through self- and
mutual-distillations", ICLR 2022 (https://openreview.net/forum?id=AmUhwTOHgm), §2:
the cross-encoder learns the bi-encoder's scores with binary cross-entropy on its
logit, the bi-encoder learns the cross-encoder's scores by regressing its cosine
similarity with the mean squared error (sentence-transformers' CosineSimilarityLoss).

Each loss returns (this replica's share, global-batch mean): every replica divides
its summed per-pair losses by the global number of pairs, so the shares add up to
the loss of one device holding the whole global batch.
"""

from __future__ import annotations

from typing import Tuple

import tensorflow as tf

from common.training.distribute import replica_sum


def global_batch_mean(per_pair: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """(this replica's share, global mean) of a [n] vector of per-pair losses."""
    local_sum = tf.reduce_sum(per_pair)  # []
    count = replica_sum(tf.cast(tf.size(per_pair), per_pair.dtype))  # [] pairs of the global batch
    share = local_sum / count
    return share, replica_sum(tf.stop_gradient(share))


def soft_bce_with_logits_loss(logits: tf.Tensor, labels: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """Binary cross-entropy of sigmoid(logits) against soft labels in [0, 1].

        l = -[y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))]
          = max(x, 0) - x y + log(1 + exp(-|x|))

    (PyTorch's `BCEWithLogitsLoss`, which sentence-transformers' CrossEncoder
    uses for one label; its minimum over x is at sigmoid(x) = y, not 0.)

    Args:
        logits: tf.Tensor. [n] the cross-encoder's logit per pair.
        labels: tf.Tensor. [n] pseudo-labels in [0, 1].

    Returns:
        (local_share, global_mean).
    """
    labels = tf.cast(labels, logits.dtype)
    per_pair = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)  # [n]
    return global_batch_mean(per_pair)


def cosine_mse_loss(u: tf.Tensor, v: tf.Tensor, labels: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """Mean squared error between cos(u, v) and the label (CosineSimilarityLoss).

    Args:
        u: tf.Tensor. [n, dim] embeddings of the first sentences.
        v: tf.Tensor. [n, dim] embeddings of the second sentences.
        labels: tf.Tensor. [n] target similarities (the cross-encoder's sigmoid scores).

    Returns:
        (local_share, global_mean).
    """
    cosine = tf.reduce_sum(tf.math.l2_normalize(u, -1) * tf.math.l2_normalize(v, -1), -1)  # [n]
    per_pair = tf.square(cosine - tf.cast(labels, cosine.dtype))  # [n]
    return global_batch_mean(per_pair)
