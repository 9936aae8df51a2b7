"""Masked language modelling (BERT's 15 %, 80/10/10 recipe) with a head tied to the token embeddings.

Shared by every method that trains an MLM objective (DeCLUTR on its anchor spans).
"""

from __future__ import annotations

from typing import Callable, Dict, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from common.errors import UserError
from common.models import precision as precision_lib

MLM_RATE = 0.15
# The masked-LM head of each Hugging Face family: Dense(hidden) + activation -> LayerNorm -> decoder
# (tied to the word embeddings) + bias. BERT's `BertLMPredictionHead` uses the config's `hidden_act`,
# RoBERTa's `RobertaLMHead` always the exact GELU; `bias` is also the decoder's bias (tied).
HF_HEAD_NAMES = {
    "bert": {"prefix": "cls.predictions", "dense": "cls.predictions.transform.dense",
             "layer_norm": "cls.predictions.transform.LayerNorm", "bias": "cls.predictions.bias",
             "decoder": "cls.predictions.decoder"},
    "roberta": {"prefix": "lm_head", "dense": "lm_head.dense", "layer_norm": "lm_head.layer_norm",
                "bias": "lm_head.bias", "decoder": "lm_head.decoder"},
}


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
    """BERT's (and RoBERTa's) MLM head with the decoder tied to the token embeddings:
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
        BERT's `cls.predictions.*` or RoBERTa's `lm_head.*`, or the `mlm_head` of a train.py artifact)."""
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
            model_type = getattr(getattr(encoder.backbone, "config", None), "model_type", "bert")
            head.load_hf_head(encoder.pretrained_head_tensors, encoder.encoder_config.spec, model_type)
        return head

    def call(self, hidden: tf.Tensor) -> tf.Tensor:
        """[M, hidden] vectors of the selected positions -> [M, vocab] float32 logits."""
        x = self.layer_norm(self.transform(hidden))  # [M, hidden], the compute dtype
        embeddings = tf.cast(tf.convert_to_tensor(self._embeddings()), x.dtype)  # [vocab, hidden]
        # The vocabulary projection in the compute dtype, the logits float32 (casts are no-ops in fp32).
        return tf.cast(tf.matmul(x, embeddings, transpose_b=True) + self.bias, tf.float32)  # [M, vocab]

    def load_hf_head(self, tensors: Dict[str, np.ndarray], source: str, model_type: str = "bert") -> bool:
        """Loads a Hugging Face masked-LM head; False if the checkpoint has none.

        BERT's is `cls.predictions.*` (`BertForMaskedLM`, `BertForPreTraining`), RoBERTa's
        `lm_head.*` (`RobertaForMaskedLM`): the same computation under other names
        (`HF_HEAD_NAMES`). The decoder is tied to the word embeddings in both, so a checkpoint
        usually leaves its weight out; one that holds it must hold the word embeddings there.

        Args:
            tensors: dict. The checkpoint's head tensors (`SentenceEncoder.pretrained_head_tensors`).
            source: str. The checkpoint, for messages.
            model_type: str. "bert" or "roberta", the encoder's HF `model_type`. Defaults to "bert".

        Raises:
            UserError: for a decoder that is not the word embeddings (an untied head), which
                this head cannot hold.
        """
        names = HF_HEAD_NAMES[model_type]
        bias = tensors.get(names["bias"], tensors.get(names["decoder"] + ".bias"))
        needed = [names[k] + suffix for k in ("dense", "layer_norm") for suffix in (".weight", ".bias")]
        if bias is None or not all(n in tensors for n in needed):
            logging.warning("%s has no MLM head (%s.*): the MLM head is initialised randomly.", source,
                            names["prefix"])
            return False
        decoder = tensors.get(names["decoder"] + ".weight")
        if decoder is not None and not np.array_equal(np.asarray(decoder, np.float32),
                                                      keras.ops.convert_to_numpy(self._embeddings())):
            raise UserError(f"{source}: {names['decoder']}.weight differs from the word embeddings; this toolkit's "
                            "MLM head is tied to them (tie_word_embeddings), so an untied head cannot be loaded.")
        self.transform.kernel.assign(tensors[needed[0]].T)
        self.transform.bias.assign(tensors[needed[1]])
        self.layer_norm.gamma.assign(tensors[needed[2]])
        self.layer_norm.beta.assign(tensors[needed[3]])
        self.bias.assign(bias)
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
