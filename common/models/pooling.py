"""Sentence pooling over token outputs; the one implementation every method uses."""

from __future__ import annotations

from typing import Optional

import tensorflow as tf

from common.errors import UserError

POOLING_MODES = ("mean", "cls", "pooler", "padded_mean")
# The mode whose inputs are padded to the tokenizer's maximum length before the backbone runs
# (`SentenceEncoder.call`), so that the positions it averages do not depend on the batch.
PADDED_MEAN = "padded_mean"


def masked_mean_pool(sequence_output: tf.Tensor, padding_mask: tf.Tensor) -> tf.Tensor:
    """Mean of the token vectors of real tokens only ([CLS] and [SEP] included).

    This is sentence-transformers' mean pooling; the original PAUSE code averaged
    the padding positions too (`padded_mean_pool`).

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


def padded_mean_pool(sequence_output: tf.Tensor) -> tf.Tensor:
    """Mean of the vectors at every position, padding included: the original PAUSE code's pooling
    (`tf.reduce_mean(sequence_output, axis=1)` over inputs padded to its `max_seq_len`).

    An embedding depends on how far its sentence was padded; the encoder pads every input to its
    maximum length first (`SentenceEncoder.call`), as the original did, so that it does not depend
    on the batch.

    Args:
        sequence_output: tf.Tensor. [batch, length, hidden] token vectors.

    Returns:
        [batch, hidden] float tensor.
    """
    return tf.reduce_mean(sequence_output, axis=1)


def cls_pool(sequence_output: tf.Tensor) -> tf.Tensor:
    """The vector of the first ([CLS]) token: [batch, length, hidden] -> [batch, hidden]."""
    return sequence_output[:, 0, :]


def exclude_prefix(padding_mask: tf.Tensor, length: int) -> tf.Tensor:
    """`padding_mask` with each row's first `length` positions masked out: a prompt's tokens
    ([CLS] included) left out of pooling, as sentence-transformers' `include_prompt=False`.

    Args:
        padding_mask: tf.Tensor. [batch, length], 1 for real tokens, 0 for padding (right-padded).
        length: int. Positions to mask from the start.

    Returns:
        [batch, length] tensor of `padding_mask`'s dtype.
    """
    positions = tf.range(tf.shape(padding_mask)[1])[tf.newaxis, :]  # [1, T]
    return padding_mask * tf.cast(positions >= length, padding_mask.dtype)  # [B, T]


def first_token_pool(sequence_output: tf.Tensor, padding_mask: tf.Tensor) -> tf.Tensor:
    """The vector of each row's first unmasked token, or of its first token where none is unmasked:
    sentence-transformers' CLS pooling, which takes the first token its mask keeps (after a prompt
    that `exclude_prefix` masked out).

    Args:
        sequence_output: tf.Tensor. [batch, length, hidden] token vectors.
        padding_mask: tf.Tensor. [batch, length], 1 for tokens that may be taken.

    Returns:
        [batch, hidden] float tensor.
    """
    length = tf.shape(padding_mask)[1]
    positions = tf.range(length)[tf.newaxis, :]  # [1, T]
    first = tf.reduce_min(tf.where(padding_mask > 0, positions, length), axis=1)  # [B]
    first = tf.where(first == length, 0, first)  # [B]
    return tf.gather(sequence_output, first, axis=1, batch_dims=1)  # [B, H]


def pool(sequence_output: tf.Tensor, padding_mask: tf.Tensor, mode: str,
         pooler_output: Optional[tf.Tensor] = None) -> tf.Tensor:
    """The sentence vector of a pooling mode.

    Modes: "mean" (`masked_mean_pool`), "cls" (`cls_pool`), "pooler": BERT's
    pooler, tanh(dense([CLS])), which the backbone computes (its `pooled_output`,
    Hugging Face's `pooler_output`; where SimCSE keeps its MLP: docs/methods/simcse.md),
    and "padded_mean" (`padded_mean_pool`, the original PAUSE code's).

    Args:
        sequence_output: tf.Tensor. [batch, length, hidden] token vectors.
        padding_mask: tf.Tensor. [batch, length], 1 for real tokens, 0 for padding.
        mode: str. One of POOLING_MODES.
        pooler_output: tf.Tensor or None. [batch, hidden], the backbone's pooler
            output; needed by "pooler" only.

    Returns:
        [batch, hidden] float tensor.
    """
    if mode == "mean":
        return masked_mean_pool(sequence_output, padding_mask)
    if mode == "cls":
        return cls_pool(sequence_output)
    if mode == PADDED_MEAN:
        return padded_mean_pool(sequence_output)
    if mode == "pooler":
        if pooler_output is None:
            raise UserError("Pooling mode 'pooler' needs the backbone's pooler output; got none.")
        return pooler_output
    raise UserError(f"Unknown pooling mode {mode!r}; expected one of {POOLING_MODES}.")
