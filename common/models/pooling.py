"""Sentence pooling over token outputs; the one implementation every method uses."""

from __future__ import annotations

import tensorflow as tf

POOLING_MODES = ("mean", "cls")


def masked_mean_pool(sequence_output: tf.Tensor, padding_mask: tf.Tensor) -> tf.Tensor:
    """Mean of the token vectors of real tokens only ([CLS] and [SEP] included).

    This is sentence-transformers' mean pooling; the original PAUSE code averaged
    the padding positions too, which makes an embedding depend on the batch.

    Args:
        sequence_output: tf.Tensor. [batch, length, hidden] token vectors.
        padding_mask: tf.Tensor. [batch, length], 1 for real tokens, 0 for padding.

    Returns:
        [batch, hidden] float tensor.
    """
    # expand_dims, not [:, :, tf.newaxis]: TFLite has no kernel for a 3-D strided slice that adds an axis.
    mask = tf.expand_dims(tf.cast(padding_mask, sequence_output.dtype), -1)  # [B, T, 1]
    total = tf.reduce_sum(sequence_output * mask, axis=1)  # [B, H]
    count = tf.maximum(tf.reduce_sum(mask, axis=1), 1e-9)  # [B, 1], never 0
    return total / count


def cls_pool(sequence_output: tf.Tensor) -> tf.Tensor:
    """The vector of the first ([CLS]) token: [batch, length, hidden] -> [batch, hidden]."""
    return sequence_output[:, 0, :]


def pool(sequence_output: tf.Tensor, padding_mask: tf.Tensor, mode: str) -> tf.Tensor:
    """Dispatches on `mode` ("mean" or "cls")."""
    if mode == "mean":
        return masked_mean_pool(sequence_output, padding_mask)
    if mode == "cls":
        return cls_pool(sequence_output)
    raise ValueError(f"Unknown pooling mode {mode!r}; expected one of {POOLING_MODES}.")
