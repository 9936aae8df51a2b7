"""A Keras 3 BERT backbone built from keras-hub layers.

keras-hub's `BertBackbone` hard-codes the tanh approximation of GELU, while the
Hugging Face BERT checkpoints (all-MiniLM-L6-v2 among them) were trained with the
exact erf GELU; as loaded through keras-hub their mean-pooled embeddings differ by
up to 1.3e-3. This backbone takes the activation from the checkpoint's config.
Its inputs and outputs use keras-hub's names (`token_ids`, `padding_mask`,
`segment_ids` -> `sequence_output`, `pooled_output`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping

import keras
import tensorflow as tf
from keras_hub.layers import PositionEmbedding, ReversibleEmbedding

from common.models import precision as precision_lib
from common.models.bert_config import BertConfig
from common.models.bert_layer import BertLayer


def gelu_approximate(x):
    """GELU with the tanh approximation (HF `gelu_new`, the original TF BERT)."""
    return keras.activations.gelu(x, approximate=True)


def _activation(name: str):
    return gelu_approximate if name == "gelu_approximate" else name


@keras.saving.register_keras_serializable(package="common")
class BertBackbone(keras.Model):
    """BERT encoder: embeddings, post-LN transformer layers and the CLS pooler.

    Args:
        config: BertConfig or dict of its fields.
        precision: str. "fp32", "bf16" or "fp16" (`common.models.precision`): the
            dtype policy of every sublayer; variables are float32 in each, and the
            weight names do not depend on it. Defaults to "fp32".
    """

    def __init__(self, config: BertConfig | Mapping[str, Any], precision: str = precision_lib.DEFAULT_PRECISION,
                 **kwargs):
        kwargs.pop("dtype", None)  # get_config's, rebuilt from `precision`
        policy = precision_lib.dtype_policy(precision)
        super().__init__(dtype=policy, **kwargs)
        if not isinstance(config, BertConfig):
            config = BertConfig(**config)
        self.config = config
        self.precision = precision
        init = keras.initializers.TruncatedNormal(stddev=0.02)
        activation = precision_lib.feedforward_activation(config.activation, precision, _activation(config.activation))
        # === Layers ===
        self.token_embedding = ReversibleEmbedding(
            config.vocab_size, config.hidden_size, embeddings_initializer=init, name="token_embedding", dtype=policy
        )
        self.position_embedding = PositionEmbedding(
            sequence_length=config.max_position_embeddings, initializer=init, name="position_embedding", dtype=policy
        )
        # Built here: a RoBERTa backbone gathers its rows by position id instead of calling it. Under
        # the backbone's name scope, so the table's path is what it is when built on a first call
        # ("<backbone>/position_embedding/embeddings", the name TF Hub's BERTs give it too).
        with keras.name_scope(self.name, caller=self):
            self.position_embedding.build((None, None, config.hidden_size))
        self.segment_embedding = keras.layers.Embedding(
            config.type_vocab_size, config.hidden_size, embeddings_initializer=init, name="segment_embedding",
            dtype=policy
        )
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=config.layer_norm_eps, name="embeddings_layer_norm", dtype=policy
        )
        self.embeddings_dropout = keras.layers.Dropout(config.dropout, name="embeddings_dropout", dtype=policy)
        self.transformer_layers = [
            BertLayer(
                num_heads=config.num_heads,
                intermediate_dim=config.intermediate_size,
                activation=activation,
                inference_activation=precision_lib.fused_inference_activation(config.activation, precision),
                dropout=config.dropout,
                layer_norm_epsilon=config.layer_norm_eps,
                kernel_initializer=init,
                name=f"transformer_layer_{i}",
                dtype=policy,
            )
            for i in range(config.num_layers)
        ]
        # tf.train.Checkpoint does not see layers inside a Keras-tracked list:
        # give each one an attribute so weight checkpoints hold every layer.
        for i, layer in enumerate(self.transformer_layers):
            setattr(self, f"transformer_layer_{i}", layer)
        self.pooled_dense = keras.layers.Dense(
            config.hidden_size, activation="tanh", kernel_initializer=init, name="pooled_dense", dtype=policy
        )
        self.build_with_dummy_input()

    def build(self, input_shape=None):
        """Nothing to create here: the first call (`build_with_dummy_input`, eager) builds each
        sublayer as it reaches it. Without this method Keras would first trace `call` symbolically to
        build them, which costs more than the call itself."""

    def build_with_dummy_input(self):
        """Creates all variables by running a 1x2 batch."""
        dummy = {
            "token_ids": tf.zeros([1, 2], tf.int32),
            "padding_mask": tf.ones([1, 2], tf.int32),
            "segment_ids": tf.zeros([1, 2], tf.int32),
        }
        self(dummy)

    def call(self, inputs: Mapping[str, tf.Tensor], training: bool = False) -> Dict[str, tf.Tensor]:
        tokens = self.token_embedding(inputs["token_ids"])  # [B, T, H]
        if self.config.model_type == "roberta":
            # HF's create_position_ids_from_input_ids: real tokens count from pad_token_id + 1,
            # padding sits at pad_token_id.
            mask = tf.cast(inputs["padding_mask"], tf.int32)  # [B, T]
            positions = tf.cumsum(mask, axis=1) * mask + self.config.pad_token_id  # [B, T]
            table = tf.cast(self.position_embedding.position_embeddings, tokens.dtype)
            positions = tf.gather(table, positions)  # [B, T, H]
        else:
            positions = self.position_embedding(tokens)
        x = tokens + positions + self.segment_embedding(inputs["segment_ids"])
        x = self.embeddings_layer_norm(x)
        x = self.embeddings_dropout(x, training=training)
        mask = inputs["padding_mask"]  # [B, T]
        for layer in self.transformer_layers:
            x = layer(x, padding_mask=mask, training=training)  # [B, T, H]
        return {"sequence_output": x, "pooled_output": self.pooled_dense(x[:, 0, :])}

    @property
    def input_dtype(self) -> str:
        """Token ids and masks: Keras converts no input to a float, and the default signature a
        SavedModel of a model holding this backbone traces for it takes int32 ids."""
        return "int32"

    @property
    def hidden_size(self) -> int:
        return self.config.hidden_size

    @property
    def layer_norm_epsilon(self) -> float:
        return self.config.layer_norm_eps

    @property
    def max_position_embeddings(self) -> int:
        """The longest input the position table covers (RoBERTa's positions start after its
        padding index: 514 rows hold 512 tokens)."""
        return self.config.max_position_embeddings - self.config.position_offset

    def token_embedding_matrix(self):
        """The [vocab, hidden] token-embedding variable (tied MLM heads read it)."""
        return self.token_embedding.embeddings

    def get_config(self):
        return {**super().get_config(), "config": dataclasses.asdict(self.config), "precision": self.precision}
