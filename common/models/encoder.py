"""The Keras sentence encoder: a tokenizer, a BERT backbone and pooling, and how it is configured.

`EncoderConfig` says which model (`spec`: any `--model` value that names an encoder) and how it is
used; `common.models.sources.build_encoder` builds the `SentenceEncoder` it names, from whichever
kind of source that is. `inference_encoder` is what a trained encoder is published as.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Mapping, Optional, Sequence

import keras
import numpy as np
import tensorflow as tf

from common.errors import UserError
from common.models import hub_backbone
from common.models import precision as precision_lib
from common.models import st_folder
from common.models.bert import BertBackbone
from common.models.bert_config import BertConfig
from common.models.pooling import POOLING_MODES, exclude_prefix, first_token_pool, pool
from common.models.bpe_tokenization import ByteLevelBpeTokenizer
from common.models.tokenization import BertTokenizer, TokenizerConfig


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
    the run's (see `common.models.sources.artifact`).
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
            `prompts`); `common.models.sources.resolve.Embedder` applies them. Defaults to none.
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
        return self.backbone.config.dropout if isinstance(self.backbone, BertBackbone) else None

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
                    if isinstance(self.backbone, BertBackbone) else {"hub": self.backbone.handle})
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
            backbone = BertBackbone(BertConfig(**config["backbone"]["bert"]),
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


def _backbone_copy(backbone: BertBackbone, dropout: float) -> BertBackbone:
    """A float32 BertBackbone with `backbone`'s weights (copied) and the given dropout rate."""
    copy = BertBackbone(dataclasses.replace(backbone.config, dropout=dropout), name=backbone.name)
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
    if not isinstance(backbone, BertBackbone) or (
            not precision_lib.is_mixed(encoder.encoder_config.precision) and backbone.config.dropout == dropout):
        return used
    config = dataclasses.replace(used.encoder_config, dropout=None, precision=precision_lib.DEFAULT_PRECISION)
    return used._sibling(used.tokenizer, _backbone_copy(backbone, dropout), config)
