"""Configuration of a DeCLUTR run (written next to its artifacts as config.json)."""

from __future__ import annotations

import dataclasses
from typing import Tuple

from common.runs import RunConfig
from declutr_tf.span_sampling import SpanConfig


@dataclasses.dataclass(frozen=True)
class DeclutrConfig(RunConfig):
    """DeCLUTR hyperparameters; defaults are the paper's (A=2, P=2, l_min=32,
    l_max=512, temperature 0.05, AdamW lr 5e-5 with weight decay 0.1, slanted
    triangular schedule with cut fraction 0.1, gradient norm clipped to 1).

    `batch_size` counts documents: a batch holds batch_size * A anchors.
    """

    model: str = "minilm"
    train_data: Tuple[str, ...] = ("documents/wikitext-2-raw/test.txt",)
    batch_size: int = 4
    max_seq_len: int = 512
    pad_to_multiple_of: int = 1
    num_anchors: int = 2
    num_positives: int = 2
    min_span_len: int = 32
    max_span_len: int = 512
    sampling_strategy: str = "all"
    temperature: float = 0.05
    mlm: bool = True
    contrastive: bool = True
    train_lr: float = 5e-5
    weight_decay: float = 0.1
    warmup_fraction: float = 0.1
    clip_norm: float = 1.0

    @property
    def spans(self) -> SpanConfig:
        return SpanConfig(self.num_anchors, self.num_positives, self.min_span_len, self.max_span_len,
                          self.sampling_strategy)

    @property
    def warmup_steps(self) -> int:
        return int(self.warmup_fraction * self.total_steps)

    def validate(self) -> None:
        self.validate_run()
        self.spans  # validates the span settings
        if self.batch_size < 1:
            raise ValueError(f"--batch_size must be >= 1, got {self.batch_size}.")
        if not (self.mlm or self.contrastive):
            raise ValueError("--mlm=false and --contrastive=false leave nothing to train.")
        if self.temperature <= 0:
            raise ValueError(f"--temperature must be > 0, got {self.temperature}.")
