"""Hugging Face BERT / RoBERTa checkpoints and `BertBackbone`'s weights, both ways.

One description of every tensor (`hf_weight_map`: name, variable, layout) serves loading a
`model.safetensors` (`load_hf_weights`) and writing one (`hf_state_dict`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Mapping, Tuple

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from common import compat
from common.errors import UserError
from common.models.bert import BertBackbone

# Where a HF checkpoint keeps its pretraining heads: BERT's under `cls.` (`BertForPreTraining`,
# `BertForMaskedLM`), RoBERTa's masked-LM head under `lm_head.` (`RobertaForMaskedLM`).
HEAD_PREFIXES = ("cls.", "lm_head.")


def hf_tensors(path: str) -> Dict[str, np.ndarray]:
    """The tensors of a safetensors file, without the "bert."/"roberta." prefix of the encoder's names.

    Raises:
        UserError: for a missing file, or one that is not a complete safetensors file (a download
            or copy cut short, a corrupt file).
    """
    from safetensors import SafetensorError
    from safetensors.numpy import load as load_safetensors

    if not tf.io.gfile.exists(path):
        raise UserError(f"{path}: no such file; copy the complete model folder again.")
    with tf.io.gfile.GFile(path, "rb") as f:
        try:
            tensors = load_safetensors(f.read())
        except SafetensorError as e:
            raise UserError(f"{path}: not a readable safetensors file ({e}); it is truncated or corrupt: "
                            "download or copy it again.") from None
    # Checkpoints saved from BertForPreTraining (RobertaForMaskedLM, ...) prefix the encoder
    # with "bert." ("roberta."); RobertaModel writes it unprefixed.
    out = {}
    for name, value in tensors.items():
        for prefix in ("bert.", "roberta."):
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        out[name] = value
    return out


@dataclasses.dataclass(frozen=True)
class HFTensor:
    """One tensor of a Hugging Face `BertModel` checkpoint and the backbone variable holding it.

    PyTorch `Linear` weights are [out, in]; Keras kernels are [in, out], and the
    attention kernels and biases are split per head ([hidden, heads, head_dim],
    [heads, head_dim], [heads, head_dim, hidden]). Loading and exporting both read
    this one description, so the two directions cannot drift apart.

    Attributes:
        name: str. The checkpoint key, without a "bert." prefix.
        variable: keras.Variable. Where the tensor lives in the backbone.
        hf_shape: tuple of int. The tensor's shape in the checkpoint.
        linear: bool. A `Linear` weight: transposed between the two layouts.
        optional: bool. Checkpoints may lack it (the NSP pooler); loading then
            keeps the backbone's own values.
    """

    name: str
    variable: Any
    hf_shape: Tuple[int, ...]
    linear: bool = False
    optional: bool = False

    def to_keras(self, value: np.ndarray) -> np.ndarray:
        """The checkpoint's tensor in the variable's layout."""
        value = np.asarray(value, dtype=np.float32)
        return (value.T if self.linear else value).reshape(tuple(self.variable.shape))

    def to_hf(self) -> np.ndarray:
        """The variable's value in the checkpoint's layout (contiguous float32)."""
        value = np.asarray(keras.ops.convert_to_numpy(self.variable), dtype=np.float32)
        value = value.reshape(self.hf_shape[::-1]).T if self.linear else value.reshape(self.hf_shape)
        return np.ascontiguousarray(value)


def hf_weight_map(backbone: BertBackbone) -> List[HFTensor]:
    """Every tensor of a Hugging Face `BertModel` checkpoint, paired with `backbone`'s variable.

    Names are `BertModel`'s (`embeddings.*`, `encoder.layer.<i>.*`, `pooler.dense.*`),
    LayerNorm parameters as `weight`/`bias`.
    """
    cfg = backbone.config
    hidden, inner = cfg.hidden_size, cfg.intermediate_size
    entries = [
        HFTensor("embeddings.word_embeddings.weight", backbone.token_embedding.embeddings, (cfg.vocab_size, hidden)),
        HFTensor("embeddings.position_embeddings.weight", backbone.position_embedding.position_embeddings,
                 (cfg.max_position_embeddings, hidden)),
        HFTensor("embeddings.token_type_embeddings.weight", backbone.segment_embedding.embeddings,
                 (cfg.type_vocab_size, hidden)),
        HFTensor("embeddings.LayerNorm.weight", backbone.embeddings_layer_norm.gamma, (hidden,)),
        HFTensor("embeddings.LayerNorm.bias", backbone.embeddings_layer_norm.beta, (hidden,)),
    ]
    for i, layer in enumerate(backbone.transformer_layers):
        p = f"encoder.layer.{i}"
        parts = compat.encoder_parts(layer)
        for proj, dense in (("query", parts.query), ("key", parts.key), ("value", parts.value)):
            entries.append(HFTensor(f"{p}.attention.self.{proj}.weight", dense.kernel, (hidden, hidden), linear=True))
            entries.append(HFTensor(f"{p}.attention.self.{proj}.bias", dense.bias, (hidden,)))
        entries += [
            HFTensor(f"{p}.attention.output.dense.weight", parts.attention_output.kernel, (hidden, hidden),
                     linear=True),
            HFTensor(f"{p}.attention.output.dense.bias", parts.attention_output.bias, (hidden,)),
            HFTensor(f"{p}.attention.output.LayerNorm.weight", parts.attention_norm.gamma, (hidden,)),
            HFTensor(f"{p}.attention.output.LayerNorm.bias", parts.attention_norm.beta, (hidden,)),
            HFTensor(f"{p}.intermediate.dense.weight", parts.intermediate.kernel, (inner, hidden), linear=True),
            HFTensor(f"{p}.intermediate.dense.bias", parts.intermediate.bias, (inner,)),
            HFTensor(f"{p}.output.dense.weight", parts.output.kernel, (hidden, inner), linear=True),
            HFTensor(f"{p}.output.dense.bias", parts.output.bias, (hidden,)),
            HFTensor(f"{p}.output.LayerNorm.weight", parts.feedforward_norm.gamma, (hidden,)),
            HFTensor(f"{p}.output.LayerNorm.bias", parts.feedforward_norm.beta, (hidden,)),
        ]
    return entries + pooler_weight_map(backbone)


def pooler_weight_map(backbone: BertBackbone, prefix: str = "pooler.dense.", optional: bool = True) -> List[HFTensor]:
    """BERT's pooler (dense + tanh over [CLS], `backbone.pooled_dense`) as two PyTorch `Linear` tensors.

    Args:
        backbone: BertBackbone.
        prefix: str. "pooler.dense." in a `BertModel` checkpoint; "linear." in a
            sentence-transformers `Dense` module, which holds the same layer when a
            folder applies BERT's pooler after CLS pooling. Defaults to "pooler.dense.".
        optional: bool. Whether a checkpoint may lack them. Defaults to True
            (`BertForMaskedLM` checkpoints have no pooler).
    """
    hidden = backbone.config.hidden_size
    return [HFTensor(prefix + "weight", backbone.pooled_dense.kernel, (hidden, hidden), linear=True, optional=optional),
            HFTensor(prefix + "bias", backbone.pooled_dense.bias, (hidden,), optional=optional)]


def _checkpoint_tensor(tensors: Mapping[str, np.ndarray], name: str):
    """The tensor `name`, or its old-style LayerNorm alias (`gamma`/`beta`); None if absent."""
    if name in tensors:
        return tensors[name]
    if ".LayerNorm." in name:
        old = name.replace(".LayerNorm.weight", ".LayerNorm.gamma").replace(".LayerNorm.bias", ".LayerNorm.beta")
        return tensors.get(old)
    return None


def assign_hf_tensors(entries: List[HFTensor], tensors: Mapping[str, np.ndarray], source: str) -> List[str]:
    """Copies checkpoint tensors into the entries' variables.

    Returns:
        The names of the optional entries the checkpoint lacks (their variables keep their values).

    Raises:
        UserError: naming the tensor that is missing or has the wrong shape.
    """
    absent = []
    for entry in entries:
        value = _checkpoint_tensor(tensors, entry.name)
        if value is None:
            if entry.optional:
                absent.append(entry.name)
                continue
            raise UserError(f"{source}: tensor {entry.name!r} not found; is this a BERT checkpoint?")
        if tuple(value.shape) != entry.hf_shape:
            raise UserError(
                f"{source}: tensor {entry.name!r} has shape {tuple(value.shape)}, "
                f"the model expects {entry.hf_shape} (config mismatch?)."
            )
        entry.variable.assign(entry.to_keras(value))
    return absent


def load_hf_weights(backbone: BertBackbone, safetensors_path: str, uses_pooler: bool = False) -> Dict[str, np.ndarray]:
    """Copies a Hugging Face `BertModel` safetensors checkpoint into `backbone`.

    Returns the checkpoint's pretraining-head tensors (`HEAD_PREFIXES`: the MLM head of a
    `BertForPreTraining` / `BertForMaskedLM` checkpoint, `cls.*`, or of a `RobertaForMaskedLM`
    one, `lm_head.*`), empty when it has none, so that a method's MLM head needs no second
    read of the file.

    Args:
        backbone: BertBackbone.
        safetensors_path: str. Local or `gs://` path of `model.safetensors`.
        uses_pooler: bool. The encoder pools with BERT's pooler: a checkpoint without
            one is logged, as the pooler then keeps its random initialisation (right
            only where it is trained from scratch, as SimCSE's MLP, or restored
            from a run's weights). Defaults to False.

    Raises:
        UserError: naming the tensor that is missing or has the wrong shape.
    """
    t = hf_tensors(safetensors_path)
    absent = assign_hf_tensors(hf_weight_map(backbone), t, safetensors_path)
    if uses_pooler and absent:
        logging.warning("%s has no pooler weights (%s): pooling 'pooler' starts from a random pooler.",
                        safetensors_path, ", ".join(absent))
    return {name: value for name, value in t.items() if name.startswith(HEAD_PREFIXES)}


def hf_state_dict(backbone: BertBackbone) -> Dict[str, np.ndarray]:
    """The backbone's weights as a Hugging Face `BertModel` state dict (float32 NumPy arrays),
    the inverse of `load_hf_weights`."""
    return {entry.name: entry.to_hf() for entry in hf_weight_map(backbone)}
