"""SimCSE's own settings; the run, encoder and optimizer sections are shared (common.training.config)."""

from __future__ import annotations

import dataclasses
from typing import Tuple

from common.data.nli import DEFAULT_NLI_TRAIN
from common.errors import UserError
from common.data.tables import parse_columns
from common.training.config import columns_option, option
from common.training.grad_cache import GradCacheOptions

MODES = ("unsup", "sup")
# --pooling -> (the encoder's pooling, i.e. at test time; whether training goes through the MLP).
# The MLP is BERT's pooler re-initialised as the official code's (SimcseModel): pooling "pooler" keeps it.
POOLING_PLANS = {"cls_mlp": ("cls", True), "cls_mlp_test": ("pooler", True), "cls": ("cls", False),
                 "mean": ("mean", False)}
POOLINGS = tuple(POOLING_PLANS)
# Unsupervised default: sentences cut from the Gutenberg books (no evaluation set is drawn from them).
DEFAULT_SENTENCES = ("sentences:documents/gutenberg/books.txt",)
# The paper's settings per mode (Gao et al., 2021, appendix A; the Hugging Face Trainer's
# linear decay without warm-up). `train_steps_per_epoch` 0 means one pass over the data.
# Pooling as the official run_sup_example.sh (`--pooler_type cls`: the MLP is kept at test time).
DEFAULTS = {"train_data": DEFAULT_SENTENCES, "batch_size": 64, "train_lr": 3e-5, "max_seq_len": 32,
            "train_epochs": 1, "train_steps_per_epoch": 0}
SUP_DEFAULTS = {"train_data": DEFAULT_NLI_TRAIN, "batch_size": 512, "train_lr": 5e-5, "train_epochs": 3,
                "pooling": "cls_mlp_test"}


def mode_defaults(given):
    """The supervised mode's own defaults, for the settings not given."""
    return SUP_DEFAULTS if given.get("simcse_mode") == "sup" else {}


@dataclasses.dataclass(frozen=True)
class SimcseOptions(GradCacheOptions):
    """SimCSE hyperparameters.

    Training data: unsup takes `.txt` files (one sentence per line),
    `sentences:<documents file>` (sentences cut from documents, one per line, a
    seeded sample of --max_sentences), NLI sources (their sentences) or
    `stsb:<split>`; sup takes NLI sources (premise, entailment, contradiction). NLI
    sources are the official files, any table of pairs (CSV, TSV, JSONL, Parquet, a
    saved datasets folder; `--columns` maps its columns) or `senteval:<split>`.

    Example:
        >>> from common.training import registry
        >>> config = registry.build_config("simcse", {"model": "random_tiny", "simcse_mode": "sup"})
        >>> config.options.mode, config.options.temperature, config.run.batch_size
        ('sup', 0.05, 512)

        `common.training.runs.train(config)` runs it as `train.py --method=simcse` would.
    """

    mode: str = option("unsup", "unsup (dropout views of one sentence) or sup (NLI triples with hard negatives).",
                       choices=MODES, flag="simcse_mode")
    pooling: str = option("cls_mlp", "cls_mlp: [CLS] through an MLP (dense + tanh) in training only, plain [CLS] "
                                     "at test (official unsup: --pooler_type cls --mlp_only_train; the unsup "
                                     "default); cls_mlp_test: the MLP at test too, published as BERT's pooler "
                                     "(official sup; the sup default); cls: [CLS], no MLP; mean: masked mean, "
                                     "no MLP.", choices=POOLINGS)
    temperature: float = option(0.05, "Contrastive temperature.")
    hard_negative_weight: float = option(1.0, "sup: weight of each premise's own contradiction.")
    columns: Tuple[str, ...] = columns_option()
    max_sentences: int = option(1_000_000, "unsup, sentences:<file> sources: how many sentences to sample "
                                           "(the paper trains on 10^6).", lower_bound=1)

    def validate(self, config) -> None:
        super().validate(config)
        parse_columns(self.columns, ("premise", "hypothesis", "label"))
        if not (self.temperature > 0 and self.hard_negative_weight > 0):
            raise UserError("--temperature and --hard_negative_weight must be > 0.")
