"""BERT's architecture hyperparameters (`BertConfig`), read from and written as a Hugging Face
`config.json`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict

import tensorflow as tf

from common.errors import UserError

# HF `model_type`s this backbone implements.
MODEL_TYPES = ("bert", "roberta")
# HF `hidden_act` -> Keras activation. "gelu" in HF BERT is the exact erf form.
_HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "relu": "relu",
}
# The inverse, for export: the HF name written for each activation (gelu_new and
# gelu_pytorch_tanh are the same tanh approximation).
_KERAS_TO_HF_ACTIVATION = {"gelu": "gelu", "gelu_approximate": "gelu_new", "relu": "relu"}


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """BERT architecture hyperparameters (HF names in the docstring).

    Attributes:
        vocab_size: int. HF `vocab_size`.
        hidden_size: int. HF `hidden_size`.
        num_layers: int. HF `num_hidden_layers`.
        num_heads: int. HF `num_attention_heads`.
        intermediate_size: int. HF `intermediate_size`.
        max_position_embeddings: int. HF `max_position_embeddings`.
        type_vocab_size: int. HF `type_vocab_size`.
        dropout: float. HF `hidden_dropout_prob` (keras-hub's transformer layer
            uses one rate for attention and hidden dropout).
        layer_norm_eps: float. HF `layer_norm_eps`.
        activation: str. "gelu" (exact), "gelu_approximate" or "relu".
        model_type: str. HF `model_type`: "bert", or "roberta" (RoBERTa, DistilRoBERTa:
            the same layers, with position ids counted from `pad_token_id + 1`,
            HF's `create_position_ids_from_input_ids`). Defaults to "bert".
        pad_token_id: int. HF `pad_token_id`; RoBERTa's position offset. Defaults to 0.
    """

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    activation: str = "gelu"
    model_type: str = "bert"
    pad_token_id: int = 0

    def __post_init__(self):
        if self.model_type not in MODEL_TYPES:
            raise ValueError(f"model_type {self.model_type!r} is not supported; expected one of {MODEL_TYPES}.")

    @property
    def position_offset(self) -> int:
        """The position id of the first token: 0 for BERT, `pad_token_id + 1` for RoBERTa."""
        return self.pad_token_id + 1 if self.model_type == "roberta" else 0

    @classmethod
    def from_hf_config(cls, path: str) -> "BertConfig":
        """Reads a Hugging Face BERT or RoBERTa `config.json`."""
        with tf.io.gfile.GFile(path, "r") as f:
            cfg = json.load(f)
        model_type = cfg.get("model_type", "bert")
        if model_type not in MODEL_TYPES:
            raise UserError(f"{path}: expected model_type one of {MODEL_TYPES}, got {model_type!r}; "
                             "this toolkit loads BERT and RoBERTa checkpoints.")
        act = cfg.get("hidden_act", "gelu")
        if act not in _HF_ACTIVATIONS:
            raise UserError(f"{path}: unsupported hidden_act {act!r}; expected one of {sorted(_HF_ACTIVATIONS)}.")
        try:
            return cls(
                vocab_size=cfg["vocab_size"],
                hidden_size=cfg["hidden_size"],
                num_layers=cfg["num_hidden_layers"],
                num_heads=cfg["num_attention_heads"],
                intermediate_size=cfg["intermediate_size"],
                max_position_embeddings=cfg.get("max_position_embeddings", 512),
                type_vocab_size=cfg.get("type_vocab_size", 2),
                dropout=cfg.get("hidden_dropout_prob", 0.1),
                layer_norm_eps=cfg.get("layer_norm_eps", 1e-12),
                activation=_HF_ACTIVATIONS[act],
                model_type=model_type,
                pad_token_id=cfg.get("pad_token_id", 1 if model_type == "roberta" else 0),
            )
        except KeyError as e:
            raise UserError(f"{path}: missing key {e} in the BERT config.") from None

    def to_hf_config(self, pad_token_id: int | None = None) -> Dict[str, Any]:
        """A Hugging Face `BertModel` (`RobertaModel`) `config.json` that `from_hf_config` reads back as
        this config.

        Args:
            pad_token_id: int or None. Id of the padding token in the vocabulary; None takes
                the config's. Defaults to None.
        """
        pad_token_id = self.pad_token_id if pad_token_id is None else pad_token_id
        return {
            "architectures": ["RobertaModel" if self.model_type == "roberta" else "BertModel"],
            "model_type": self.model_type,
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads,
            "intermediate_size": self.intermediate_size,
            "hidden_act": _KERAS_TO_HF_ACTIVATION[self.activation],
            "hidden_dropout_prob": self.dropout,
            # keras-hub's transformer layer uses one dropout rate for both.
            "attention_probs_dropout_prob": self.dropout,
            "max_position_embeddings": self.max_position_embeddings,
            "type_vocab_size": self.type_vocab_size,
            "layer_norm_eps": self.layer_norm_eps,
            "initializer_range": 0.02,
            "pad_token_id": pad_token_id,
            "position_embedding_type": "absolute",
        }
