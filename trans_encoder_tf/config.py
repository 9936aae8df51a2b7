"""Trans-Encoder's own settings; the run, encoder and optimizer sections configure the bi-encoder phases.

Defaults are the official protocol (Liu et al., ICLR 2022; amzn/trans-encoder
`train_self_distill.sh`, sentence-transformers' `fit` defaults), tabled in
docs/methods/trans-encoder.md.
"""

from __future__ import annotations

import dataclasses
from typing import Tuple

from common.data.tables import parse_columns
from common.errors import UserError
from common.training.config import columns_option, option
from trans_encoder_tf.data import PAIR_FIELDS, STS_SICKR

# Flat setting -> Trans-Encoder's default where the shared sections' differ (the bi-encoder phases).
# `train_steps_per_epoch` 0: one pass over the pairs per epoch in every phase.
DEFAULTS = {"batch_size": 128, "train_epochs": 10, "train_steps_per_epoch": 0, "train_lr": 5e-5,
            "weight_decay": 0.01, "warmup_fraction": 0.0, "clip_norm": 1.0, "max_seq_len": 32}


@dataclasses.dataclass(frozen=True)
class TransEncoderOptions:
    """Trans-Encoder hyperparameters (the cross-encoder phases and the cycles).

    `--model` is the bi-encoder's start; `--batch_size`, `--train_epochs`,
    `--train_lr`, `--weight_decay`, `--warmup_fraction`, `--max_seq_len` set
    the bi-encoder phases, the `cross_*` settings the cross-encoder phases;
    `--train_steps_per_epoch`, when given, caps the epoch of every phase.

    Example:
        >>> from common.training import registry
        >>> config = registry.build_config("trans_encoder", {"model": "random_tiny", "cycles": 1})
        >>> config.options.cycles, config.options.pairs, config.options.cross_batch_size
        (1, 'sts_sickr', 32)

        `common.training.runs.train(config)` runs it as `train.py --method=trans_encoder` would.
    """

    pairs: str = option(STS_SICKR, "Unlabelled sentence pairs: sts_sickr (the pairs of STS12-16, STS-B and SICK "
                                   "without labels, the official transductive task) or a table of pairs (CSV, "
                                   "TSV, JSONL, Parquet: sentence1 and sentence2 columns, see --columns; a .tsv "
                                   "or .txt without that header: two tab-separated sentences per line).")
    columns: Tuple[str, ...] = columns_option()
    cycles: int = option(3, "Cycles of (bi-encoder labels -> cross-encoder -> labels -> bi-encoder).",
                         lower_bound=1)
    init_with_new_models: bool = option(True, "Restart every cycle's models from their starts (the official "
                                              "script's --init_with_new_models: knowledge passes only through "
                                              "the labels); --noinit_with_new_models continues each model from "
                                              "its previous cycle.")
    cross_init: str = option("", "Cross-encoder start: an encoder spec or run ID; default: --model.")
    mutual_init: str = option("", "Mutual distillation: the second bi-encoder's start (spec or run ID); each "
                                  "model learns from the mean of both models' scores.")
    mutual_cross_init: str = option("", "Mutual distillation: the second cross-encoder's start; default: "
                                        "--mutual_init.")
    cross_batch_size: int = option(32, "Cross-encoder batch (pairs, each pair counted once per order).",
                                   lower_bound=1)
    cross_epochs: int = option(1, "Cross-encoder epochs per cycle.", lower_bound=1)
    cross_lr: float = option(2e-5, "Cross-encoder peak learning rate.")
    cross_weight_decay: float = option(0.01, "Cross-encoder AdamW weight decay.", lower_bound=0.0)
    cross_warmup_fraction: float = option(0.1, "Cross-encoder share of warm-up steps.", lower_bound=0.0)
    evaluation_steps: int = option(200, "Score each phase's model on STS-B dev every this many steps and at its "
                                        "epoch ends, and end the phase with the best-scored weights (the official "
                                        "fit(evaluation_steps=200, save_best_model=True), reloaded after each "
                                        "phase); 0: at epoch ends only. Needs STS-B dev under --data_path.",
                                   lower_bound=0)
    best_in_phase: bool = option(True, "End each phase with its best-scored weights (see --evaluation_steps); "
                                       "--nobest_in_phase ends it with its last step.")
    cross_max_seq_len: int = option(64, "Cross-encoder pair length in tokens ([CLS] a [SEP] b [SEP]).",
                                    lower_bound=3)

    def validate(self, config) -> None:
        if config.run.train_data:
            raise UserError(f"--method=trans_encoder reads its pairs from --pairs; got --train_data="
                             f"{','.join(config.run.train_data)}.")
        parse_columns(self.columns, PAIR_FIELDS)
        if not self.cross_lr > 0:
            raise UserError(f"--cross_lr must be > 0; got {self.cross_lr}.")
        if self.cross_warmup_fraction >= 1:
            raise UserError(f"--cross_warmup_fraction must be < 1; got {self.cross_warmup_fraction}.")
        if self.mutual_cross_init and not self.mutual_init:
            raise UserError("--mutual_cross_init needs --mutual_init (the second bi-encoder).")
        # A run is many phases, each selecting its own weights; the run-level selection of the
        # single-model methods has no meaning here, and its flags are refused rather than ignored.
        run = config.run
        given = [flag for flag, value in (("--eval_every", run.eval_every), ("--publish_best", run.publish_best),
                                          ("--best_metric", run.best_metric)) if value]
        if given:
            raise UserError(f"--method=trans_encoder does not use {', '.join(given)}: it evaluates and selects "
                             "within each phase (--evaluation_steps=<steps>, --best_in_phase, on by default) and "
                             "publishes the cycle with the best STS-B dev.")
