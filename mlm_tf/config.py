"""The masked-LM method's own settings; run, encoder and optimizer sections are shared."""

from __future__ import annotations

import dataclasses

from common.data.documents import DocumentOptions
from common.errors import UserError
from common.training.config import option

# Where masked-LM pretraining's defaults differ from the shared sections': a fresh BERT-tiny on the
# Gutenberg books, AdamW with weight decay 0.01 (BERT's), 5 % warm-up, linear decay, clip 1.
# Dropout off: a pretraining budget this small is far from overfitting, and the runs that start from
# the result train with the architecture's own rate (0.1), never this run's.
DEFAULTS = {"model": "random_bert_tiny", "train_data": ("documents/gutenberg/books.txt",), "batch_size": 64,
            "max_seq_len": 128, "train_steps_per_epoch": 1000, "train_lr": 5e-4, "warmup_fraction": 0.05,
            "weight_decay": 0.01, "clip_norm": 1.0, "dropout": 0.0}


@dataclasses.dataclass(frozen=True)
class MlmOptions(DocumentOptions):
    """BERT's masked-LM recipe on documents packed into windows of --max_seq_len tokens.

    Example:
        >>> from common.training import registry
        >>> config = registry.build_config("mlm", {"model": "random_bert_tiny", "mask_rate": 0.2})
        >>> config.options.mask_rate, config.options.heldout_books
        (0.2, 6)

        `common.training.runs.train(config)` runs it as `train.py --method=mlm` would.
    """

    mask_rate: float = option(0.15, "Share of real tokens selected for prediction (80 % [MASK], 10 % random, "
                                    "10 % unchanged); fresh masks every step.")
    heldout_books: int = option(6, "Whole books held out for the held-out MLM loss and accuracy (a seeded choice; "
                                   "with no manifest.json beside the documents, whole documents).", lower_bound=1)
    heldout_windows: int = option(512, "Held-out windows scored at each epoch end (a fixed, seeded subset with "
                                       "fixed masks).", lower_bound=1)

    def validate(self, config) -> None:
        if not 0 < self.mask_rate < 1:
            raise UserError(f"--mask_rate must be in (0, 1), got {self.mask_rate}.")
