"""How to build a sentence encoder: which model (`spec`: any `--model` value that names an encoder)
and how it is used. `common.models.build_encoder` builds the `SentenceEncoder` a config names;
`encoder_config` is the one a training run's settings ask for (a method's `build_model`).

It stands apart from the encoder so that the sources an encoder is built from
(`common.models.sources`) can read it without importing the encoder they build.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from common import artifacts


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
            tanh over [CLS]: Hugging Face's `pooler_output`; `common.models.pooling`),
            or "padded_mean" (the mean over every position of inputs padded to
            `max_seq_len`, the original PAUSE code's); None takes the model's pooling
            config where it has one, else "mean".
        normalize: bool or None. L2-normalise the output embedding; None follows
            the model's `modules.json` (a Normalize module), else False.
        pad_to_multiple_of: int. Round batch lengths up to a multiple of this.
        seed: int. Initialisation seed of the random specs ("random_tiny", the
            fresh BERTs). Defaults to 0.
        dropout: float or None. Overrides the architecture's dropout rate; None
            keeps it (`SentenceEncoder.model_dropout`).
        precision: str or None. "fp32", "bf16" or "fp16" (`common.models.precision`): how
            the backbone computes; the outputs are float32 in each. None follows Keras'
            global dtype policy ("float32", "mixed_bfloat16" or "mixed_float16") when the
            encoder is built, and the built encoder records what it took. Defaults to None.

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
    precision: Optional[str] = None


# EncoderConfig fields that describe a use of the encoder (training at 32 tokens without dropout,
# scoring untruncated in bf16), not the model: what an artifact records of them is never reused.
USAGE_FIELDS = ("max_seq_len", "pad_to_multiple_of", "dropout", "precision")


def encoder_config(config: Any, **overrides: Any) -> EncoderConfig:
    """The EncoderConfig of a run's encoder section, for a method's `build_model`.

    `--model` may name a run ID (under the run's artifacts root) or an artifact
    directory, so any method can start from any trained model; fresh BERTs are
    initialised from the run's seed. The run trains at its own `--max_seq_len` and
    `--dropout` (None: the architecture's rate), never at those of the run it starts from.

    Args:
        config: common.training.TrainConfig. Its `encoder` section, and its run's `artifacts_dir` and `seed`.
        **overrides: EncoderConfig fields the method fixes (e.g. `pooling="mean"`).
    """
    enc = config.encoder
    spec = artifacts.model_path(enc.model, config.run.artifacts_dir) or enc.model
    settings = dict(spec=spec, max_seq_len=enc.max_seq_len, pad_to_multiple_of=enc.pad_to_multiple_of,
                    dropout=enc.dropout, seed=config.run.seed, precision=enc.precision)
    return EncoderConfig(**{**settings, **overrides})
