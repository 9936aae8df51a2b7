"""The Keras sentence encoder: a tokenizer, a BERT backbone and pooling, and how it is configured.

`EncoderConfig` says which model (`spec`: any `--model` value that names an encoder) and how it is
used (`common.models.encoder_config`); `build_encoder` builds the `SentenceEncoder` it names, from
whichever kind of source that is (`common.models.sources`). `SentenceEncoder.from_preset` is the
same as a Keras layer for users' models (strings in, embeddings out; docs/usage/keras.md).
`inference_encoder` is what a trained encoder is published as.

A `.keras` file holds the encoder as keras-hub holds its models: the architecture in `get_config`,
the weights, and the tokenizer's vocabulary (and BPE merges) as assets (`save_assets`), so the
config stays small and an error that prints it stays short.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Dict, Mapping, Optional, Sequence, Union

import keras
import numpy as np
import tensorflow as tf

from common import artifacts
from common.errors import UserError
from common.models import hub_backbone
from common.models import precision as precision_lib
from common.models import sources, st_folder
from common.models.bert import BertBackbone
from common.models.bert_config import BertConfig
from common.models.pooling import PADDED_MEAN, POOLING_MODES, exclude_prefix, first_token_pool, pool
from common.models.bpe_tokenization import ByteLevelBpeTokenizer
from common.models.encoder_config import EncoderConfig
from common.models.tokenization import BertTokenizer, TokenizerConfig


# What calling a SentenceEncoder returns: the sentence embedding [B, E], or the dict of every output.
OUTPUT_MODES = ("embedding", "dict")
# The assets of a `.keras` file: the tokens in id order (a JSON list: exact for any token) and, for
# byte-level BPE, the merges in rank order (one "left right" per line, as merges.txt).
VOCABULARY_ASSET = "vocabulary.json"
MERGES_ASSET = "merges.txt"
# Which tokenizer a config rebuilds (get_config's "tokenizer_type").
_TOKENIZER_TYPES = {"wordpiece": BertTokenizer, "byte_level_bpe": ByteLevelBpeTokenizer}


def padded_to(tokens: Mapping[str, tf.Tensor], length: int, pad_id: int) -> Dict[str, tf.Tensor]:
    """`tokens` (the tokenizer's dict, [batch, T] each) padded on the right to `length` positions
    (unchanged where T is already that long): pad ids, mask 0, segment 0."""
    extra = tf.maximum(length - tf.shape(tokens["token_ids"])[1], 0)
    paddings = [[0, 0], [0, extra]]
    padded = dict(tokens)
    padded["token_ids"] = tf.pad(tokens["token_ids"], paddings, constant_values=pad_id)  # [B, length]
    padded["padding_mask"] = tf.pad(tokens["padding_mask"], paddings)  # [B, length]
    padded["segment_ids"] = tf.pad(tokens["segment_ids"], paddings)  # [B, length]
    return padded


def _check_output_mode(output_mode: str) -> str:
    if output_mode not in OUTPUT_MODES:
        raise UserError(f"output_mode must be one of {', '.join(OUTPUT_MODES)}; got {output_mode!r}.")
    return output_mode


@keras.saving.register_keras_serializable(package="common")
class SentenceEncoder(keras.Model):
    """Raw strings (or tokenized batches) -> sentence embedding, or every output.

    Users build one with `from_preset`; the toolkit's training and export build theirs with
    `build_encoder` (every output, `output_mode="dict"`).

    Args:
        tokenizer: BertTokenizer or None. In-graph tokenizer; None only while a `.keras` file
            is loaded (`from_config`), until `load_assets` reads its vocabulary.
        backbone: keras layer mapping keras-hub BERT inputs to `sequence_output`.
        pooling: str. "mean", "cls", "pooler" or "padded_mean" (`common.models.pooling.pool`;
            "padded_mean" pads every input to the tokenizer's `max_seq_len` first).
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
            `prompts`); `common.loading.Embedder` applies them. Defaults to none.
        default_prompt_name: str or None. The prompt that applies when none is asked for.
        output_mode: str. What a call returns: "dict" (every output, see `call`) or "embedding"
            (the `embedding` output alone, [B, E]). Defaults to "dict".
        tokenizer_config: TokenizerConfig or None. With `tokenizer` None: the tokenizer that
            `load_assets` builds.
        tokenizer_type: str. With `tokenizer` None: "wordpiece" or "byte_level_bpe".

    Example:
        >>> import tensorflow as tf
        >>> from common.models import SentenceEncoder
        >>> encoder = SentenceEncoder.from_preset("random_tiny", output_mode="dict")  # or "minilm", a folder, a run
        >>> outputs = encoder(tf.constant(["A man plays a guitar.", "Rain."]))
        >>> sorted(outputs)
        ['embedding', 'padding_mask', 'pooled', 'pooler_output', 'sequence_output', 'token_ids']
        >>> outputs["embedding"].shape
        TensorShape([2, 32])
    """

    def __init__(self, tokenizer: Optional[BertTokenizer], backbone, pooling: str, normalize: bool,
                 config: EncoderConfig, pretrained_head_tensors: Optional[Dict[str, np.ndarray]] = None,
                 declared_max_seq_len: Optional[int] = None, model_dropout: Optional[float] = None,
                 dense_layers: Sequence[keras.layers.Dense] = (), include_prompt: bool = True,
                 prompts: Optional[Mapping[str, str]] = None, default_prompt_name: Optional[str] = None,
                 output_mode: str = "dict", tokenizer_config: Optional[TokenizerConfig] = None,
                 tokenizer_type: str = "wordpiece", **kwargs):
        config = dataclasses.replace(config, precision=precision_lib.resolve_precision(config.precision))
        kwargs.pop("dtype", None)  # get_config's, rebuilt from the precision
        super().__init__(dtype=precision_lib.dtype_policy(config.precision), **kwargs)
        if pooling not in POOLING_MODES:
            raise UserError(f"Unknown pooling {pooling!r}; expected one of {POOLING_MODES}.")
        self.output_mode = _check_output_mode(output_mode)
        self.tokenizer = tokenizer
        self._pending_tokenizer = (tokenizer_config, tokenizer_type)
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
        if isinstance(backbone, BertBackbone):
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
        # Every variable exists by now (the backbones and Dense modules build themselves). Built on a
        # 1-D string batch, so that what Keras derives from the build shape (`get_build_config`, the
        # default signature a SavedModel of a model holding this one traces, with `input_dtype`) is
        # a batch of sentences, not the float tensor Keras assumes.
        self.build((None,))

    def build(self, input_shape=None):
        """Nothing to create (see `__init__`); `input_shape` is a 1-D batch of sentences."""

    @property
    def input_dtype(self) -> str:
        """Sentences: Keras converts no input to a float, and a model holding this encoder is
        saved with a string serving signature."""
        return "string"

    @classmethod
    def from_preset(cls, preset: str = "minilm", *, output_mode: str = "embedding", trainable: bool = True,
                    max_seq_len: Optional[int] = None, pooling: Optional[str] = None,
                    normalize: Optional[bool] = None, dropout: Optional[float] = None,
                    precision: Optional[str] = None, seed: int = 0,
                    artifacts_dir: str = "artifacts") -> "SentenceEncoder":
        """A Keras layer that embeds sentences: a 1-D `tf.string` batch in, [batch, dim] float32 out.

        The name is keras-hub's (`keras_hub.models.Backbone.from_preset`); a preset is any
        `--model` value that names an encoder (docs/usage/models.md): "minilm", a Hugging Face or
        sentence-transformers folder, a train.py run ID or directory, a TF Hub BERT, or a fresh
        random BERT ("random_bert_tiny", ...). The tokenizer is inside the layer, so it takes raw
        strings (`keras.Input(shape=(), dtype="string")`) in Sequential and functional models,
        trains end to end with `fit`, saves to `.keras` files and exports with `model.export`.

        Args:
            preset: str. The encoder. Defaults to "minilm".
            output_mode: str. "embedding": the sentence embedding [batch, dim], pooled then
                L2-normalised where `normalize` is on; "dict": every output as a dict
                (`sequence_output`, `padding_mask`, `token_ids`, `pooler_output`, `pooled`,
                `embedding`; see `call`). Defaults to "embedding".
            trainable: bool. False freezes the encoder (its weights are not updated by
                `fit`); as `layer.trainable = False`. Defaults to True.
            max_seq_len: int or None. Tokens kept per sentence, [CLS] and [SEP] included;
                None: the model's own maximum (MiniLM: 256). Defaults to None.
            pooling: str or None. "mean", "cls" or "pooler"; None: the model's own (MiniLM:
                mean). Defaults to None.
            normalize: bool or None. L2-normalise the embedding; None: the model's own
                (MiniLM: True). Defaults to None.
            dropout: float or None. The dropout rate while training (`fit`, or a call with
                `training=True`; none otherwise); None: the model's own (0.1 for BERTs).
                Defaults to None.
            precision: str or None. "fp32", "bf16" or "fp16"; None follows Keras' global policy
                (`keras.mixed_precision.set_global_policy("mixed_bfloat16")` gives bf16). The
                embedding is float32 in every precision. Defaults to None.
            seed: int. Initialisation seed of a fresh random BERT. Defaults to 0.
            artifacts_dir: str. Where a run ID (or "latest") is looked up, as train.py's
                `--artifacts_dir`. Defaults to "artifacts".

        Returns:
            A `SentenceEncoder` (a `keras.Model`, so a layer) with the preset's weights loaded.

        Raises:
            UserError: for an unknown preset or output mode.
            FileNotFoundError: when a file the preset needs is missing.

        Example:
            >>> import keras, tensorflow as tf
            >>> from common.models import SentenceEncoder
            >>> encoder = SentenceEncoder.from_preset("random_tiny")  # or "minilm", a folder, a run
            >>> encoder(tf.constant(["A man plays a guitar."])).shape
            TensorShape([1, 32])
            >>> model = keras.Sequential([keras.Input(shape=(), dtype="string"), encoder, keras.layers.Dense(6)])
            >>> model(tf.constant(["Who was Galileo ?", "How far is Aspen ?"])).shape
            TensorShape([2, 6])
        """
        _check_output_mode(output_mode)
        # The class is handed to the sources (keras-hub's preset loaders take theirs), which never import it.
        # A run ID or "latest" names the run's directory under `artifacts_dir`; other presets are themselves.
        preset = artifacts.model_path(preset, artifacts_dir) or preset
        encoder = sources.build(cls, EncoderConfig(spec=preset, max_seq_len=max_seq_len, pooling=pooling,
                                                   normalize=normalize, dropout=dropout, precision=precision,
                                                   seed=seed))
        encoder.output_mode = output_mode
        if not trainable:
            # Only to freeze: setting True would also unfreeze BERT's pooler, which gets no gradient
            # unless it pools (`__init__`).
            encoder.trainable = False
        return encoder

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
        BERTs). What it truncates at when used without a `max_seq_len` (`with_length`).
        With "padded_mean" pooling, the length it pads to: the mean is over that many
        positions, so the length is part of the model."""
        if self.pooling == PADDED_MEAN and self.tokenizer is not None:
            return self.tokenizer.config.max_seq_len
        return self.declared_max_seq_len or self.backbone.max_position_embeddings

    @property
    def model_dropout(self) -> Optional[float]:
        """The architecture's own dropout rate (the checkpoint's, e.g. 0.1), not a run's
        `--dropout`; None for a TF Hub backbone, whose graph holds its own."""
        if self._model_dropout is not None:
            return self._model_dropout
        return self.backbone.config.dropout if isinstance(self.backbone, BertBackbone) else None

    @property
    def tokenizer_or_raise(self) -> BertTokenizer:
        if self.tokenizer is None:
            raise ValueError(f"{self.name} has no vocabulary yet: it was rebuilt from its config alone; "
                             "its vocabulary comes from the .keras file's assets (load_assets).")
        return self.tokenizer

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
                                  output_mode=self.output_mode, name=self.name)
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
        return self.tokenizer_or_raise(texts)

    def call(self, inputs, training: bool = False, prompt_length: int = 0) -> Union[tf.Tensor, Dict[str, tf.Tensor]]:
        """Encodes a 1-D tf.string batch or a dict of tokenized inputs.

        Args:
            inputs: 1-D tf.string tensor, or the tokenizer's dict.
            training: bool. Dropout on. Keras passes `fit`'s (True) and `predict`'s (False)
                to a model that holds this encoder.
            prompt_length: int. Every text starts with a prompt of this many tokens, [CLS]
                included (`prompt_token_count`); with `include_prompt` False they are left out of
                mean and CLS pooling, as sentence-transformers leaves them (CLS pooling then takes
                the first token after the prompt). Defaults to 0.

        Returns:
            With `output_mode` "embedding", the `embedding` below. With "dict", a dict with
            `sequence_output` [B, T, H], `padding_mask` [B, T], `token_ids` [B, T],
            `pooler_output` [B, H] (BERT's pooler, whatever the pooling), `pooled` [B, E]
            (pooling, then the Dense modules; E is `embedding_size`) and `embedding` [B, E]
            (pooled, then L2-normalised if `normalize`). All float32 but the int32 ids and mask.
        """
        tokens = inputs if isinstance(inputs, Mapping) else self.tokenizer_or_raise(inputs)
        if self.pooling == PADDED_MEAN:
            # Every input padded to the maximum length, as the original PAUSE code padded them: the
            # mean over every position then does not depend on the batch's longest sentence.
            tokens = padded_to(tokens, self.tokenizer_or_raise.config.max_seq_len, self.tokenizer_or_raise.pad_id)
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
        if self.output_mode == "embedding":
            return embedding
        return {
            "sequence_output": sequence_output,
            "padding_mask": tokens["padding_mask"],
            "token_ids": tokens["token_ids"],
            "pooler_output": pooler_output,
            "pooled": pooled,
            "embedding": embedding,
        }

    def compute_output_spec(self, inputs, training=None, prompt_length=0):
        """The outputs' shapes and dtypes without running the tokenizer: what Keras asks for when a
        functional model is built, which a `.keras` file rebuilds before `load_assets` has given the
        encoder its vocabulary."""
        batch = (inputs["token_ids"] if isinstance(inputs, Mapping) else inputs).shape[0]
        embedding = keras.KerasTensor((batch, self.embedding_size), dtype="float32")
        if self.output_mode == "embedding":
            return embedding
        return {
            "sequence_output": keras.KerasTensor((batch, None, self.hidden_size), dtype="float32"),
            "padding_mask": keras.KerasTensor((batch, None), dtype="int32"),
            "token_ids": keras.KerasTensor((batch, None), dtype="int32"),
            "pooler_output": keras.KerasTensor((batch, self.hidden_size), dtype="float32"),
            "pooled": embedding,
            "embedding": keras.KerasTensor((batch, self.embedding_size), dtype="float32"),
        }

    def _embedding(self, outputs) -> tf.Tensor:
        """The embedding among what a call returned, in either output mode."""
        return outputs if self.output_mode == "embedding" else outputs["embedding"]

    def embed_strings(self, texts: tf.Tensor) -> tf.Tensor:
        return self._embedding(self(texts, training=False))

    def token_counts(self, texts: tf.Tensor) -> tf.Tensor:
        """Tokens per text before padding (1-D tf.string -> int32 [batch]): what batches are sorted by."""
        return self.tokenizer_or_raise.token_counts(texts)

    def prompt_token_count(self, prompt: str) -> int:
        """The tokens a prompt puts before a text, [CLS] included: sentence-transformers'
        `prompt_length` (the prompt tokenized alone, less its closing [SEP])."""
        return int(self.token_counts(tf.constant([prompt]))[0]) - 1

    def embedding_function(self, prompt_length: int = 0):
        """`embed_strings` traced for 1-D string batches, carrying `token_counts` (also traced),
        which `common.loading.embedding.embed_sentences` sorts its batches by.

        Args:
            prompt_length: int. Texts start with a prompt of this many tokens (see `call`); 0 for
                none. Defaults to 0.
        """
        spec = [tf.TensorSpec([None], tf.string)]
        if prompt_length:
            def embed(texts):
                return self._embedding(self(texts, training=False, prompt_length=prompt_length))
        else:
            embed = self.embed_strings
        fn = tf.function(embed, input_signature=spec)
        fn.token_counts = tf.function(self.token_counts, input_signature=spec)
        return fn

    def _tokenizer_type(self) -> str:
        if self.tokenizer is None:
            return self._pending_tokenizer[1]
        return "byte_level_bpe" if isinstance(self.tokenizer, ByteLevelBpeTokenizer) else "wordpiece"

    def get_config(self):
        """The architecture and the tokenizer's settings: no weights, and no vocabulary, which a
        `.keras` file holds as assets (`save_assets`) as keras-hub's tokenizers do."""
        backbone = ({"bert": dataclasses.asdict(self.backbone.config)}
                    if isinstance(self.backbone, BertBackbone) else {"hub": self.backbone.handle})
        dense = [{"input_dim": int(layer.kernel.shape[0]), "units": layer.units, "use_bias": layer.use_bias,
                  "activation": layer.get_config()["activation"]} for layer in self.dense_layers]
        tokenizer_config = self.tokenizer.config if self.tokenizer is not None else self._pending_tokenizer[0]
        config = {**super().get_config(), "encoder_config": dataclasses.asdict(self.encoder_config),
                  "backbone": backbone, "tokenizer": dataclasses.asdict(tokenizer_config),
                  "tokenizer_type": self._tokenizer_type(),
                  "declared_max_seq_len": self.declared_max_seq_len, "model_dropout": self._model_dropout,
                  "dense": dense, "include_prompt": self.include_prompt, "prompts": dict(self.prompts),
                  "default_prompt_name": self.default_prompt_name, "output_mode": self.output_mode}
        config.pop("dtype", None)  # the precision's, rebuilt from encoder_config
        return config

    def save_assets(self, dir_path: str) -> None:
        """Writes the tokenizer's vocabulary (VOCABULARY_ASSET) and, for byte-level BPE, its merges
        (MERGES_ASSET) into `dir_path`: what `keras.Model.save` stores beside the weights."""
        tokenizer = self.tokenizer_or_raise
        with tf.io.gfile.GFile(os.path.join(dir_path, VOCABULARY_ASSET), "w") as f:
            json.dump(tokenizer.vocabulary, f, ensure_ascii=False)
        if isinstance(tokenizer, ByteLevelBpeTokenizer):
            with tf.io.gfile.GFile(os.path.join(dir_path, MERGES_ASSET), "w") as f:
                f.write("\n".join(tokenizer.merges) + "\n")

    def load_assets(self, dir_path: str) -> None:
        """Builds the tokenizer from what `save_assets` wrote (`keras.saving.load_model` calls it
        after `from_config`). An encoder whose config held its vocabulary (`.keras` files written
        before the vocabulary became an asset) has its tokenizer already and reads nothing.

        Raises:
            UserError: when the vocabulary (or a BPE tokenizer's merges) is not among the assets.
        """
        if self.tokenizer is not None:
            return
        tokenizer_config, tokenizer_type = self._pending_tokenizer
        vocabulary_path = os.path.join(dir_path, VOCABULARY_ASSET)
        merges_path = os.path.join(dir_path, MERGES_ASSET)
        needed = [vocabulary_path] + ([merges_path] if tokenizer_type == "byte_level_bpe" else [])
        missing = [os.path.basename(p) for p in needed if not tf.io.gfile.exists(p)]
        if missing:
            raise UserError(f"{self.name}: the saved model has no {' or '.join(missing)} among its assets; "
                            "save it again with keras.Model.save from a model holding a SentenceEncoder.")
        with tf.io.gfile.GFile(vocabulary_path, "r") as f:
            vocabulary = json.load(f)
        if tokenizer_type == "byte_level_bpe":
            with tf.io.gfile.GFile(merges_path, "r") as f:
                merges = [line for line in f.read().split("\n") if line]
            self.tokenizer = ByteLevelBpeTokenizer(vocabulary, merges, tokenizer_config)
        else:
            self.tokenizer = BertTokenizer(vocabulary, tokenizer_config)

    @classmethod
    def from_config(cls, config):
        """The same architecture, with freshly initialised weights: a BERT backbone is rebuilt
        from its stored configuration (no checkpoint is read); a TF Hub backbone is the
        SavedModel itself and is loaded again. The tokenizer is built by `load_assets`, or here
        from a config that holds its vocabulary (as `get_config` wrote it before the vocabulary
        became an asset)."""
        encoder_config = EncoderConfig(**config["encoder_config"])
        if "bert" in config["backbone"]:
            backbone = BertBackbone(BertConfig(**config["backbone"]["bert"]),
                                    precision=encoder_config.precision, name="backbone")
        else:
            backbone = hub_backbone.HubBertBackbone(config["backbone"]["hub"], name="backbone")
        tokenizer_config = TokenizerConfig(**config["tokenizer"])
        tokenizer_type = config.get("tokenizer_type", "byte_level_bpe" if "merges" in config else "wordpiece")
        if tokenizer_type not in _TOKENIZER_TYPES:
            raise UserError(f"Unknown tokenizer_type {tokenizer_type!r}; expected one of {tuple(_TOKENIZER_TYPES)}.")
        tokenizer = None
        if "vocabulary" in config:
            vocabulary = config["vocabulary"]
            tokenizer = (ByteLevelBpeTokenizer(vocabulary, config["merges"], tokenizer_config)
                         if tokenizer_type == "byte_level_bpe" else BertTokenizer(vocabulary, tokenizer_config))
        dense = [st_folder.dense_layer(spec, i) for i, spec in enumerate(config.get("dense", ()))]
        return cls(tokenizer, backbone, encoder_config.pooling, encoder_config.normalize, encoder_config,
                   declared_max_seq_len=config.get("declared_max_seq_len"), model_dropout=config.get("model_dropout"),
                   dense_layers=dense, include_prompt=config.get("include_prompt", True),
                   prompts=config.get("prompts"), default_prompt_name=config.get("default_prompt_name"),
                   output_mode=config.get("output_mode", "dict"), tokenizer_config=tokenizer_config,
                   tokenizer_type=tokenizer_type, trainable=config.get("trainable", True),
                   name=config.get("name", "sentence_encoder"))


def build_encoder(config: EncoderConfig = EncoderConfig()) -> SentenceEncoder:
    """Builds the sentence encoder a spec names, with its weights loaded (`common.models.sources.build`).

    Example:
        >>> import tensorflow as tf
        >>> from common.models import EncoderConfig, build_encoder
        >>> encoder = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=128))  # or "minilm", a folder, a run
        >>> encoder.embed_strings(tf.constant(["A man plays a guitar."])).shape
        TensorShape([1, 32])

    `config.precision` None takes Keras' global dtype policy (`common.models.precision.resolve_precision`);
    the encoder records the precision it computes in.

    Raises:
        UserError: for an unknown spec or an inconsistent model directory.
        FileNotFoundError: when a required file is missing.
    """
    return sources.build(SentenceEncoder, config)


def _backbone_copy(backbone: BertBackbone, dropout: float) -> BertBackbone:
    """A float32 BertBackbone with `backbone`'s weights (copied) and the given dropout rate."""
    copy = BertBackbone(dataclasses.replace(backbone.config, dropout=dropout), name=backbone.name)
    copy.set_weights(backbone.get_weights())
    return copy


def float32_encoder(encoder: SentenceEncoder) -> SentenceEncoder:
    """`encoder` itself in fp32 with every output (`output_mode` "dict"), else an fp32 copy with
    the same weights, or a view that shares them and returns every output (for export: exported
    graphs compute in float32 whatever the run trained in, and read the outputs they need)."""
    if precision_lib.is_mixed(encoder.encoder_config.precision):
        config = dataclasses.replace(encoder.encoder_config, precision=precision_lib.DEFAULT_PRECISION)
        encoder = encoder._sibling(encoder.tokenizer, _backbone_copy(encoder.backbone, encoder.backbone.config.dropout),
                                   config)
    if encoder.output_mode != "dict":
        encoder = encoder._sibling(encoder.tokenizer, encoder.backbone, encoder.encoder_config)
        encoder.output_mode = "dict"
    return encoder


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
    if not isinstance(backbone, BertBackbone) or (
            not precision_lib.is_mixed(encoder.encoder_config.precision) and backbone.config.dropout == dropout):
        return used
    config = dataclasses.replace(used.encoder_config, dropout=None, precision=precision_lib.DEFAULT_PRECISION)
    return used._sibling(used.tokenizer, _backbone_copy(backbone, dropout), config)
