"""What every source kind hands over, and the one place an encoder is assembled from it.

A kind module (`fresh`, `hf_folder`, `hub`) loads a backbone and says how to tokenize; `assemble`
settles the length, pooling and normalisation the same way for all of them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Type, TypeVar

import numpy as np

from common.models import st_folder
from common.models.encoder_config import EncoderConfig

# The encoder class assembled (`SentenceEncoder` or a subclass), given by the caller.
Encoder = TypeVar("Encoder")


@dataclasses.dataclass
class Parts:
    """A loaded backbone and what the encoder around it needs.

    Attributes:
        backbone: the Keras backbone (`BertBackbone`, `HubBertBackbone`), weights loaded.
        tokenizer: callable. max_seq_len -> the model's in-graph tokenizer at that length.
        settings: st_folder.FolderSettings. A sentence-transformers folder's pooling, Dense,
            Normalize, prompts and declared length (defaults for other kinds).
        declared_max_seq_len: int or None. The length the model declares (sentence-transformers'
            `max_seq_length`, else the tokenizer's `model_max_length` below the positions).
        length_cap: int or None. The most tokens the positions hold where that is fewer than the
            position embeddings (RoBERTa's offset): the default length is capped at it.
        check_length: callable or None. Raises UserError for a length the model cannot take.
        head_tensors: dict. The checkpoint's pretraining-head tensors (masked-LM head).
        model_dropout: float or None. The architecture's dropout rate before any override.
        dense_layers: list. A sentence-transformers folder's Dense modules, weights loaded.
    """

    backbone: Any
    tokenizer: Callable[[int], Any]
    settings: st_folder.FolderSettings = dataclasses.field(default_factory=st_folder.FolderSettings)
    declared_max_seq_len: Optional[int] = None
    length_cap: Optional[int] = None
    check_length: Optional[Callable[[int], None]] = None
    head_tensors: Dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    model_dropout: Optional[float] = None
    dense_layers: List[Any] = dataclasses.field(default_factory=list)


def max_seq_len_of(parts: Parts, asked: Optional[int]) -> int:
    """The length an encoder truncates at: the one asked for, else the model's own (`declared_max_seq_len`,
    else what its positions hold). Training and evaluation both pass theirs through here."""
    if asked:
        length = asked
    elif parts.length_cap is not None:
        length = min(parts.declared_max_seq_len or parts.length_cap, parts.length_cap)
    else:  # a TF Hub BERT finds its positions by name, and may not: then a length must be asked for
        length = parts.declared_max_seq_len or parts.backbone.max_position_embeddings
    if parts.check_length is not None:
        parts.check_length(length)
    return length


def assemble(cls: Type[Encoder], parts: Parts, config: EncoderConfig) -> Encoder:
    """The encoder of class `cls` (a `SentenceEncoder`) of `parts`, as `config` asks (None fields take
    the model's own)."""
    max_seq_len = max_seq_len_of(parts, config.max_seq_len)
    settings = parts.settings
    pooling = config.pooling or settings.pooling or "mean"
    normalize = settings.normalize if config.normalize is None else config.normalize
    resolved = dataclasses.replace(config, max_seq_len=max_seq_len, pooling=pooling, normalize=normalize)
    return cls(parts.tokenizer(max_seq_len), parts.backbone, pooling, normalize, resolved,
               parts.head_tensors, declared_max_seq_len=parts.declared_max_seq_len,
               model_dropout=parts.model_dropout, dense_layers=parts.dense_layers,
               include_prompt=settings.include_prompt, prompts=settings.prompts,
               default_prompt_name=settings.default_prompt_name, name="sentence_encoder")
