"""Contrastive losses over in-batch negatives, exact under tf.distribute.

Under a distribution strategy the keys are gathered from every replica with
gradients flowing back (`cross_replica_concat`, ReplicaContext.all_gather), each replica scores its own
queries against all keys and returns its share of the global-batch mean, so the
summed gradients equal those of one device holding the whole global batch.
(The original DeCLUTR code scaled contrastive gradients by 1/N on N GPUs.)
"""

from __future__ import annotations

from typing import Optional, Tuple

import tensorflow as tf

from common.training.distribute import replica_sum


def cross_replica_concat(x: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """Concatenates `x` [n, ...] from all replicas along axis 0, differentiably.

    `tf.distribute.ReplicaContext.all_gather` has a gradient: every replica
    receives the gradient of the whole loss with respect to its own rows.
    Every replica holds the same number of rows n (the global batch is split evenly).

    Returns:
        (gathered [replicas * n, ...], offset of this replica's rows in it).
    """
    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync == 1:
        return x, tf.constant(0, tf.int32)
    replica_id = tf.cast(ctx.replica_id_in_sync_group, tf.int32)
    return ctx.all_gather(x, axis=0), replica_id * tf.shape(x)[0]


def _row_cross_entropy(logits: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits)


def nt_xent_loss(anchors: tf.Tensor, positives: tf.Tensor, temperature: float = 0.05) -> Tuple[tf.Tensor, tf.Tensor]:
    """Symmetric NT-Xent / InfoNCE over the 2N embeddings of the (global) batch.

    DeCLUTR (Giorgi et al., ACL 2021, https://aclanthology.org/2021.acl-long.72/, eq. 2)
    after SimCLR: with e_1..e_2N the L2-normalised anchors and positives,
        l(i, j) = -log( exp(e_i.e_j / t) / sum_{k != i} exp(e_i.e_k / t) )
        L = 1/(2N) * sum_pairs [ l(anchor, positive) + l(positive, anchor) ]
    Every other anchor and positive of the batch is a negative (from other
    documents: easy; from the same document: hard).

    Args:
        anchors: tf.Tensor. [n, dim] this replica's anchor embeddings.
        positives: tf.Tensor. [n, dim] the matching positive embeddings.
        temperature: float. t; SimCLR/DeCLUTR use 0.05 here.

    Returns:
        (local_share, global_value): differentiate the first (its sum over
        replicas is the global loss); the second is the global loss for logging.
    """
    n = tf.shape(anchors)[0]
    local = tf.math.l2_normalize(tf.concat([anchors, positives], 0), axis=-1)  # [2n, d]
    keys, offset = cross_replica_concat(local)  # [R*2n, d]
    logits = tf.matmul(local, keys, transpose_b=True) / temperature  # [2n, R*2n]
    rows = tf.range(2 * n)
    self_cols = offset + rows  # [2n]
    logits = logits - tf.one_hot(self_cols, tf.shape(keys)[0], on_value=1e9, dtype=logits.dtype)
    targets = offset + tf.concat([tf.range(n, 2 * n), tf.range(n)], 0)  # anchor i <-> positive i
    losses = _row_cross_entropy(logits, targets)  # [2n]
    count = replica_sum(tf.cast(2 * n, tf.float32))
    local_share = tf.reduce_sum(losses) / count
    return local_share, replica_sum(tf.stop_gradient(tf.reduce_sum(losses))) / count


def in_batch_infonce_loss(queries: tf.Tensor, keys: tf.Tensor, temperature: float = 0.05,
                          hard_negatives: Optional[tf.Tensor] = None,
                          hard_negative_weight: float = 1.0) -> Tuple[tf.Tensor, tf.Tensor]:
    """One-directional InfoNCE: query i against all keys of the batch, key i positive.

    SimCSE (Gao et al., EMNLP 2021, https://aclanthology.org/2021.emnlp-main.552/):
    l_i = -log( exp(sim(q_i, k_i)/t) / sum_j (exp(sim(q_i, k_j)/t) + w^[i=j] exp(sim(q_i, h_j)/t)) )
    with optional hard negatives h (supervised SimCSE: contradiction hypotheses);
    query i's own hard negative is weighted by w (`hard_negative_weight`, the
    paper's alpha; w = 1 is plain InfoNCE). sentence-transformers'
    MultipleNegativesRankingLoss with scale 20 is the same objective with t = 1/20.

    Returns:
        (local_share, global_value) as `nt_xent_loss`.
    """
    q = tf.math.l2_normalize(queries, axis=-1)  # [n, d]
    k, offset = cross_replica_concat(tf.math.l2_normalize(keys, axis=-1))  # [R*n, d]
    logits = tf.matmul(q, k, transpose_b=True) / temperature  # [n, R*n]
    if hard_negatives is not None:
        h, _ = cross_replica_concat(tf.math.l2_normalize(hard_negatives, axis=-1))  # [R*n, d]
        hard = tf.matmul(q, h, transpose_b=True) / temperature  # [n, R*n]
        own = tf.one_hot(offset + tf.range(tf.shape(q)[0]), tf.shape(h)[0], dtype=hard.dtype)  # [n, R*n]
        hard += own * tf.math.log(tf.cast(hard_negative_weight, hard.dtype))
        logits = tf.concat([logits, hard], axis=1)
    n = tf.shape(q)[0]
    targets = offset + tf.range(n)
    losses = _row_cross_entropy(logits, targets)  # [n]
    count = replica_sum(tf.cast(n, tf.float32))
    return tf.reduce_sum(losses) / count, replica_sum(tf.stop_gradient(tf.reduce_sum(losses))) / count
