"""Masked language modelling (BERT's 15 %, 80/10/10 recipe) with a head tied to the token embeddings.

Shared by every method that trains an MLM objective (DeCLUTR on its anchor spans).
"""

from __future__ import annotations

from typing import Callable, Dict, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from common.models import precision as precision_lib

MLM_RATE = 0.15


def mask_tokens(token_ids: tf.Tensor, padding_mask: tf.Tensor, seed: tf.Tensor, special_ids: Sequence[int],
                mask_id: int, vocab_size: int, rate: float = MLM_RATE) -> Dict[str, tf.Tensor]:
    """Selects `rate` of the real, non-special tokens; of those 80 % become [MASK],
    10 % a random token and 10 % stay unchanged (Devlin et al., 2019).

    Stateless: the same `seed` ([2] int) gives the same masking.

    Args:
        token_ids: tf.Tensor. [B, T] int32.
        padding_mask: tf.Tensor. [B, T], 1 for real tokens.
        seed: tf.Tensor. [2] int32/int64 stateless seed.
        special_ids: sequence of int. Never selected ([CLS], [SEP], [PAD]).
        mask_id: int. Id of [MASK].
        vocab_size: int. Random replacements are drawn from [0, vocab_size).
        rate: float. Selection probability. Defaults to 0.15.

    Returns:
        Dict with `token_ids` (masked input), `mlm_labels` (original ids) and
        `mlm_weights` (1.0 where a token was selected), each [B, T].
    """
    token_ids = tf.cast(token_ids, tf.int32)
    seed = tf.cast(seed, tf.int64)
    shape = tf.shape(token_ids)
    candidate = tf.cast(padding_mask, tf.bool)
    for special in special_ids:
        candidate &= tf.not_equal(token_ids, special)
    select_u = tf.random.stateless_uniform(shape, seed=seed)
    action_u = tf.random.stateless_uniform(shape, seed=seed + tf.constant([0, 1], tf.int64))
    random_ids = tf.random.stateless_uniform(shape, seed=seed + tf.constant([0, 2], tf.int64),
                                             minval=0, maxval=vocab_size, dtype=tf.int32)
    selected = candidate & (select_u < rate)
    to_mask = selected & (action_u < 0.8)
    to_random = selected & (action_u >= 0.8) & (action_u < 0.9)
    masked = tf.where(to_mask, tf.fill(shape, mask_id), tf.where(to_random, random_ids, token_ids))
    return {"token_ids": masked, "mlm_labels": token_ids, "mlm_weights": tf.cast(selected, tf.float32)}


@keras.saving.register_keras_serializable(package="common")
class MaskedLMHead(keras.layers.Layer):
    """BERT's MLM head with the decoder tied to the token embeddings:
    Dense(hidden, gelu) -> LayerNorm -> x @ E^T + bias.

    Args:
        embeddings: callable returning the [vocab, hidden] token-embedding
            variable (a callable, so that the variable stays owned by the encoder).
        hidden_size: int.
        vocab_size: int.
        layer_norm_eps: float. Defaults to 1e-12.
        activation: str. Defaults to "gelu" (exact, as HF BERT).
        precision: str. "fp32", "bf16" or "fp16", as the encoder's
            (`common.models.precision`); the logits are float32 in each. Defaults to "fp32".
    """

    def __init__(self, embeddings: Callable[[], tf.Variable], hidden_size: int, vocab_size: int,
                 layer_norm_eps: float = 1e-12, activation: str = "gelu",
                 precision: str = precision_lib.DEFAULT_PRECISION, **kwargs):
        kwargs.pop("dtype", None)
        policy = precision_lib.dtype_policy(precision)
        super().__init__(dtype=policy, **kwargs)
        self._embeddings = embeddings
        self.hidden_size = hidden_size
        self.vocab_size = vocab_size
        self.transform = keras.layers.Dense(hidden_size, name="transform", dtype=policy,
                                            activation=precision_lib.feedforward_activation(activation, precision,
                                                                                            activation),
                                            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02))
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, name="layer_norm", dtype=policy)
        self.transform.build((None, hidden_size))
        self.layer_norm.build((None, hidden_size))
        self.bias = self.add_weight(name="bias", shape=(vocab_size,), initializer="zeros")

    @classmethod
    def for_encoder(cls, encoder, **kwargs) -> "MaskedLMHead":
        """A head tied to `encoder`'s token embeddings, with its hidden size and LayerNorm epsilon;
        loads the pretrained head of the encoder's checkpoint when it has one (a Hugging Face
        `cls.predictions.*`, or the `mlm_head` of a train.py artifact)."""
        matrix = encoder.token_embedding_matrix
        vocab_size, hidden_size = matrix().shape
        kwargs.setdefault("precision", encoder.encoder_config.precision)
        head = cls(matrix, hidden_size, vocab_size, layer_norm_eps=encoder.layer_norm_epsilon, **kwargs)
        prefix = getattr(encoder, "pretrained_head_checkpoint", None)
        if prefix:
            status = tf.train.Checkpoint(model=tf.train.Checkpoint(mlm_head=head)).read(prefix).expect_partial()
            status.assert_existing_objects_matched()
            logging.info("MLM head restored from %s.", prefix)
        else:
            head.load_hf_head(encoder.pretrained_head_tensors, encoder.encoder_config.spec)
        return head

    def call(self, hidden: tf.Tensor) -> tf.Tensor:
        """[M, hidden] vectors of the selected positions -> [M, vocab] float32 logits."""
        x = self.layer_norm(self.transform(hidden))  # [M, hidden], the compute dtype
        embeddings = tf.cast(tf.convert_to_tensor(self._embeddings()), x.dtype)  # [vocab, hidden]
        # The vocabulary projection in the compute dtype, the logits float32 (casts are no-ops in fp32).
        return tf.cast(tf.matmul(x, embeddings, transpose_b=True) + self.bias, tf.float32)  # [M, vocab]

    def load_hf_head(self, tensors: Dict[str, np.ndarray], source: str) -> bool:
        """Loads `cls.predictions.*` from a HF checkpoint; False if it has none."""
        names = ["cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
                 "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias",
                 "cls.predictions.bias"]
        if not all(n in tensors for n in names):
            logging.warning("%s has no MLM head (cls.predictions.*): the MLM head is initialised randomly.", source)
            return False
        self.transform.kernel.assign(tensors[names[0]].T)
        self.transform.bias.assign(tensors[names[1]])
        self.layer_norm.gamma.assign(tensors[names[2]])
        self.layer_norm.beta.assign(tensors[names[3]])
        self.bias.assign(tensors[names[4]])
        logging.info("MLM head loaded from %s.", source)
        return True


def masked_lm_statistics(head: MaskedLMHead, sequence_output: tf.Tensor, labels: tf.Tensor,
                         weights: tf.Tensor) -> Dict[str, tf.Tensor]:
    """Sum of the cross-entropy over selected positions, their count, and how many were predicted right.

    Only the selected positions go through the vocabulary projection.
    """
    positions = tf.where(weights > 0)  # [M, 2]
    hidden = tf.gather_nd(sequence_output, positions)  # [M, H]
    targets = tf.gather_nd(labels, positions)  # [M]
    logits = head(hidden)  # [M, V]
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=tf.cast(logits, tf.float32))
    correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=targets.dtype), targets), tf.float32)
    return {"mlm_sum": tf.reduce_sum(ce), "mlm_count": tf.cast(tf.shape(positions)[0], tf.float32),
            "mlm_correct": tf.reduce_sum(correct)}
