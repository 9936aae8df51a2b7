"""DeCLUTR's own settings; the run, encoder and optimizer sections are shared (common.training.config)."""

from __future__ import annotations

import dataclasses

from common.data.documents import DocumentOptions
from common.errors import UserError
from common.training.config import option
from common.training.grad_cache import GradCacheOptions
from declutr_tf.span_sampling import SAMPLING_STRATEGIES, SpanConfig

# Project Gutenberg books, one ~4,000-word document per line (no evaluation set is drawn from them).
DEFAULT_DOCUMENTS = ("documents/gutenberg/books.txt",)
# Where DeCLUTR's defaults differ from the shared sections' (the paper: AdamW lr 5e-5 with
# weight decay 0.1, slanted triangular schedule with cut fraction 0.1, gradient norm clipped to 1).
# `batch_size` counts documents: a batch holds batch_size * A anchors.
DEFAULTS = {"train_data": DEFAULT_DOCUMENTS, "batch_size": 4, "max_seq_len": 512, "train_lr": 5e-5,
            "warmup_fraction": 0.1, "weight_decay": 0.1, "clip_norm": 1.0}


@dataclasses.dataclass(frozen=True)
class DeclutrOptions(GradCacheOptions, DocumentOptions):
    """DeCLUTR hyperparameters; defaults are the paper's (A=2, P=2, l_min=32, l_max=512, temperature 0.05).

    Example:
        >>> from common.training import registry
        >>> config = registry.build_config("declutr", {"model": "random_tiny", "num_anchors": 1, "max_span_len": 64})
        >>> options = config.options
        >>> options.num_anchors, options.num_positives, options.min_span_len, options.max_span_len
        (1, 2, 32, 64)

        `common.training.runs.train(config)` runs it as `train.py --method=declutr` would.
    """

    num_anchors: int = option(2, "Anchors per document (A).", lower_bound=1)
    num_positives: int = option(2, "Positives per anchor (P).", lower_bound=1)
    min_span_len: int = option(32, "Shortest span in tokens (l_min).", lower_bound=1)
    max_span_len: int = option(512, "Longest span in tokens (l_max).", lower_bound=1)
    sampling_strategy: str = option("all", "Positives adjacent/overlapping/subsumed (all), or only adjacent or "
                                           "subsumed.", choices=SAMPLING_STRATEGIES)
    temperature: float = option(0.05, "Contrastive temperature.")
    mlm: bool = option(True, "Masked language modelling on the anchors.")
    contrastive: bool = option(True, "The contrastive objective.")

    @property
    def spans(self) -> SpanConfig:
        return SpanConfig(self.num_anchors, self.num_positives, self.min_span_len, self.max_span_len,
                          self.sampling_strategy)

    def validate(self, config) -> None:
        super().validate(config)  # --mini_batch_size counts documents, as --batch_size
        self.spans  # validates the span settings
        if not (self.mlm or self.contrastive):
            raise UserError("--mlm=false and --contrastive=false leave nothing to train.")
        if not self.temperature > 0:
            raise UserError(f"--temperature must be > 0, got {self.temperature}.")
