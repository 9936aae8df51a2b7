"""Fresh, randomly initialised BERTs: "random_tiny" (tests) and the "random_bert_*" shapes or a
`bert_config.json` (to pretrain), with the uncased WordPiece vocabulary of the offline MiniLM package."""

from __future__ import annotations

import dataclasses

import keras
import numpy as np

from common.artifacts import join
from common.errors import UserError
from common.models.bert import BertBackbone
from common.models.bert_config import BertConfig
from common.models.encoder_config import EncoderConfig
from common.models.sources.names import FRESH_BERTS, TINY_BERT, minilm_dir
from common.models.sources.parts import Parts
from common.models.tokenization import BertTokenizer, TokenizerConfig, read_vocabulary

# BERT's initializer_range: weights ~ truncated normal (stddev 0.02, cut at 2 stddev).
BERT_INIT_STDDEV = 0.02


def is_config_file(spec: str) -> bool:
    """A `bert_config.json` naming a fresh BERT's architecture."""
    return spec.endswith(".json")


def randomize_weights(model: keras.Model, seed: int, stddev: float = 0.02, truncated: bool = False) -> None:
    """Deterministic BERT-style init from `seed` (no global RNG): N(0, stddev)
    kernels and embeddings (cut at 2 stddev, redrawn, when `truncated`, as BERT's
    truncated_normal_initializer), unit LayerNorm scales, zero biases and offsets."""
    rng = np.random.default_rng(seed)
    for v in model.weights:
        name = v.path.split("/")[-1]
        if name == "gamma":
            v.assign(np.ones(v.shape, np.float32))
        elif name in ("beta", "bias"):
            v.assign(np.zeros(v.shape, np.float32))
        elif v.trainable:
            values = rng.normal(0.0, 1.0, size=v.shape)
            while truncated and np.any(np.abs(values) > 2.0):
                outside = np.abs(values) > 2.0
                values[outside] = rng.normal(0.0, 1.0, size=int(outside.sum()))
            v.assign((values * stddev).astype(np.float32))


def fresh_bert_config(spec: str, vocab_size: int) -> BertConfig:
    """The architecture of a fresh BERT: a FRESH_BERTS name or a bert_config.json."""
    if spec in FRESH_BERTS:
        layers, hidden, heads = FRESH_BERTS[spec]
        return BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_layers=layers, num_heads=heads,
                          intermediate_size=4 * hidden)
    bert_config = BertConfig.from_hf_config(spec)
    if bert_config.vocab_size != vocab_size:
        raise UserError(f"{spec}: vocab_size {bert_config.vocab_size} does not match the uncased WordPiece "
                         f"vocabulary ({vocab_size} entries) that fresh BERTs use.")
    return bert_config


def load(spec: str, config: EncoderConfig) -> Parts:
    """A fresh BERT of `spec`'s shape ("random_tiny", a FRESH_BERTS name, a bert_config.json), seeded
    by `config.seed`."""
    vocabulary = read_vocabulary(join(minilm_dir(), "vocab.txt"))
    tiny = spec == "random_tiny"
    bert_config = (BertConfig(vocab_size=len(vocabulary), **TINY_BERT) if tiny
                   else fresh_bert_config(spec, len(vocabulary)))
    model_dropout = bert_config.dropout
    if config.dropout is not None:
        bert_config = dataclasses.replace(bert_config, dropout=config.dropout)
    backbone = BertBackbone(bert_config, precision=config.precision, name="backbone")
    if tiny:
        randomize_weights(backbone, config.seed)
    else:
        randomize_weights(backbone, config.seed, BERT_INIT_STDDEV, truncated=True)

    def tokenizer(max_seq_len: int) -> BertTokenizer:
        return BertTokenizer(vocabulary, TokenizerConfig(max_seq_len=max_seq_len, lowercase=True,
                                                         pad_to_multiple_of=config.pad_to_multiple_of))

    return Parts(backbone, tokenizer, model_dropout=model_dropout)
