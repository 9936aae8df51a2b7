"""Hugging Face BERT-family folders: BERT (`vocab.txt` or a WordPiece `tokenizer.json`) and RoBERTa
(byte-level BPE), with a sentence-transformers folder's modules of every version (pooling, Dense,
Normalize, prompts, `max_seq_length`) read by `common.models.st_folder`. "minilm" is such a folder."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Optional

import tensorflow as tf

from common.artifacts import join
from common.errors import UserError
from common.models import hf_weights
from common.models import st_folder
from common.models.bert import BertBackbone
from common.models.bert_config import BertConfig
from common.models.bpe_tokenization import ByteLevelBpeTokenizer, read_bpe_files, read_tokenizer_json
from common.models.encoder_config import EncoderConfig
from common.models.sources.parts import Parts
from common.models.tokenization import (BertTokenizer, TokenizerConfig, read_vocabulary,
                                        read_wordpiece_tokenizer_json)


def _read_json(path: str) -> Any:
    with tf.io.gfile.GFile(path, "r") as f:
        return json.load(f)


def hf_model_type(path: str) -> Optional[str]:
    """`model_type` of a folder's `config.json` ("bert" when it names none); None without one."""
    config_path = join(path, "config.json")
    if not tf.io.gfile.exists(config_path):
        return None
    config = _read_json(config_path)
    return config.get("model_type", "bert") if isinstance(config, dict) else None


def is_hf_bert_dir(path: str) -> bool:
    """A Hugging Face folder of the BERT family this toolkit loads: BERT (config.json,
    model.safetensors, vocab.txt or tokenizer.json) or RoBERTa (model_type "roberta"; its
    tokenizer files are checked when it is built, so that a missing one is named).

    Raises:
        UserError: for such a folder whose weights are in `pytorch_model.bin` only.
    """
    if not tf.io.gfile.exists(join(path, "config.json")):
        return False
    if not tf.io.gfile.exists(join(path, st_folder.WEIGHTS_FILE)):
        if tf.io.gfile.exists(join(path, st_folder.PYTORCH_WEIGHTS_FILE)):
            raise UserError(f"{path}: its weights are in {st_folder.PYTORCH_WEIGHTS_FILE} only; this toolkit "
                            f"reads {st_folder.WEIGHTS_FILE}: {st_folder.convert_hint(path)}.")
        return False
    return (any(tf.io.gfile.exists(join(path, f)) for f in ("vocab.txt", "tokenizer.json"))
            or hf_model_type(path) == "roberta")


def read_roberta_tokenizer(path: str) -> tuple[list[str], list[str]]:
    """The byte-level BPE vocabulary and merges of a RoBERTa folder: `vocab.json` + `merges.txt`,
    else `tokenizer.json`.

    Raises:
        UserError: when the folder has neither.
    """
    vocab, merges, tok = (join(path, f) for f in ("vocab.json", "merges.txt", "tokenizer.json"))
    if tf.io.gfile.exists(vocab) and tf.io.gfile.exists(merges):
        return read_bpe_files(vocab, merges)
    if tf.io.gfile.exists(tok):
        return read_tokenizer_json(tok)
    found = [f for f in ("vocab.json", "merges.txt") if tf.io.gfile.exists(join(path, f))]
    raise UserError(f"{path}: a RoBERTa folder needs vocab.json and merges.txt, or tokenizer.json; found "
                     f"{found or 'none of them'}. Copy the tokenizer files from the checkpoint's source.")


def _bert_vocabulary(path: str) -> list[str]:
    """A BERT folder's WordPiece vocabulary: `vocab.txt`, else `tokenizer.json` (transformers 5
    saves only the latter)."""
    vocab = join(path, "vocab.txt")
    return read_vocabulary(vocab) if tf.io.gfile.exists(vocab) else read_wordpiece_tokenizer_json(
        join(path, "tokenizer.json"))


def _lowercase(path: str) -> bool:
    """Whether a BERT folder's tokenizer lower-cases: `tokenizer_config.json`'s `do_lower_case`, else
    the `BertNormalizer` of `tokenizer.json`, else True (uncased, as MiniLM)."""
    tok_cfg = join(path, "tokenizer_config.json")
    if tf.io.gfile.exists(tok_cfg):
        config = st_folder.read_json(tok_cfg)
        if "do_lower_case" in config:
            return bool(config["do_lower_case"])
    tok_json = join(path, "tokenizer.json")
    if tf.io.gfile.exists(tok_json):
        normalizer = st_folder.read_json(tok_json).get("normalizer") or {}
        if normalizer.get("type") == "BertNormalizer":
            return bool(normalizer.get("lowercase", True))
    return True


def _tokenizer_max_length(path: str, positions: int) -> Optional[int]:
    """The tokenizer's `model_max_length` (`tokenizer_config.json`) where it is below the `positions`
    the model holds: where sentence-transformers 6 keeps a model's length (it truncates at that,
    capped at the position embeddings); None where the file sets none or one the positions cap."""
    tok_cfg = join(path, "tokenizer_config.json")
    if not tf.io.gfile.exists(tok_cfg):
        return None
    length = st_folder.read_json(tok_cfg).get("model_max_length")
    if isinstance(length, (int, float)) and 2 <= length < positions:
        return int(length)
    return None


def _load_dense_pooler(backbone: BertBackbone, module_dir: str) -> None:
    """Loads a sentence-transformers Dense module that is BERT's pooler (`st_folder.read_folder`)
    into the backbone's pooler: what sentence-transformers applies, whatever `pooler.dense.*` holds."""
    path = join(module_dir, st_folder.WEIGHTS_FILE)
    hf_weights.assign_hf_tensors(hf_weights.pooler_weight_map(backbone, "linear.", optional=False),
                                 hf_weights.hf_tensors(path), path)


def _roberta_length_check(bert_config: BertConfig, spec: str):
    """RoBERTa's positions start at pad_token_id + 1, so it holds that many fewer tokens than positions."""
    most = bert_config.max_position_embeddings - bert_config.position_offset

    def check(max_seq_len: int) -> None:
        if max_seq_len > most:
            raise UserError(f"{spec}: --max_seq_len={max_seq_len} exceeds what this RoBERTa's "
                             f"{bert_config.max_position_embeddings} positions hold from offset "
                             f"{bert_config.position_offset} ({most} tokens); pass --max_seq_len={most} or less.")

    return most, check


def load(location: str, config: EncoderConfig) -> Parts:
    """The BERT or RoBERTa in the Hugging Face folder `location`, with its sentence-transformers modules."""
    bert_config = BertConfig.from_hf_config(join(location, "config.json"))
    settings = st_folder.read_folder(location, bert_config.hidden_size)
    roberta = bert_config.model_type == "roberta"
    if roberta:
        bpe_files, lowercase = read_roberta_tokenizer(location), False  # byte-level BPE is cased
    else:
        vocabulary, lowercase = _bert_vocabulary(location), _lowercase(location)
    if settings.lower_case_input and not lowercase:
        raise UserError(f"{location}/sentence_bert_config.json: do_lower_case lower-cases the text before a "
                        "cased tokenizer; this toolkit does not implement that. Lower-case the sentences "
                        "yourself, or set do_lower_case to false if the model was trained without it.")
    positions = bert_config.max_position_embeddings - bert_config.position_offset
    declared_max_seq_len = settings.max_seq_len or _tokenizer_max_length(location, positions)
    model_dropout = bert_config.dropout
    if config.dropout is not None:
        bert_config = dataclasses.replace(bert_config, dropout=config.dropout)
    backbone = BertBackbone(bert_config, precision=config.precision, name="backbone")
    uses_pooler = (config.pooling or settings.pooling) == "pooler" and settings.pooler_dir is None
    head_tensors = hf_weights.load_hf_weights(backbone, join(location, st_folder.WEIGHTS_FILE), uses_pooler)
    if settings.pooler_dir is not None:
        _load_dense_pooler(backbone, settings.pooler_dir)
    dense_layers = []
    for i, module in enumerate(settings.dense):
        dense_layers.append(st_folder.dense_layer(module.layer_config(), i))
        st_folder.load_dense(dense_layers[-1], module)
    length_cap, check_length = _roberta_length_check(bert_config, config.spec) if roberta else (None, None)

    def tokenizer(max_seq_len: int):
        if roberta:
            return ByteLevelBpeTokenizer(*bpe_files, TokenizerConfig(max_seq_len=max_seq_len, lowercase=False,
                                                                     pad_to_multiple_of=config.pad_to_multiple_of))
        return BertTokenizer(vocabulary, TokenizerConfig(max_seq_len=max_seq_len, lowercase=lowercase,
                                                         pad_to_multiple_of=config.pad_to_multiple_of))

    return Parts(backbone, tokenizer, settings, declared_max_seq_len, length_cap, check_length, head_tensors,
                 model_dropout, dense_layers)
