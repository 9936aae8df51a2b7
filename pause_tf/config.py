"""PAUSE's own settings; the run, encoder and optimizer sections are shared (common.training.config)."""

from __future__ import annotations

import dataclasses
from typing import Optional

from common.data.nli import DEFAULT_NLI_TRAIN
from common.errors import UserError
from common.training.config import option
from pause_tf.annealing import ANNEALING_MODES

TASKS = ("nli", "stsb")
STSB_OBJECTIVES = ("cosine", "head_mse")
# Where PAUSE's defaults differ from the shared sections' (the original train_nli.py:
# batch 1024, 4 epochs of 500 steps, peak lr 7.5e-5 with 10 % warm-up, decay to 5e-6).
DEFAULTS = {"train_data": DEFAULT_NLI_TRAIN, "batch_size": 1024, "train_epochs": 4, "train_lr": 7.5e-5,
            "end_lr": 5e-6, "warmup_fraction": 0.1}


@dataclasses.dataclass(frozen=True)
class PauseOptions:
    """PAUSE (NLI with partial labels) or STS-B fine-tuning of a PAUSE model."""

    task: str = option("nli", "nli, or stsb to fine-tune --pretrained_weights on STS-B.", choices=TASKS)
    pretrained_weights: str = option("", "Run ID or artifact directory of a PAUSE model to start from.")
    prior: float = option(1.0 / 3.0, "Class prior of the nnPU risk, in (0, 1).")
    pos_sample_prec: float = option(50.0, "Percent of pairs that keep their label, in (0, 100].")
    labeled_batch_fraction: Optional[float] = option(
        None, "Labelled share of each batch, in (0, 1]; default --prior, the original's mixing.")
    annealing: str = option("global", "PU weight (step/total)^power over the run; per_epoch: the original's "
                                      "restart every epoch; off: no PU term.", choices=ANNEALING_MODES)
    anneal_power: float = option(3.0, "Power of the PU-weight annealing polynomial.", lower_bound=0.0)
    num_classes: int = option(3, "NLI classes.", lower_bound=2)
    hidden_units: int = option(128, "Width of the ELU layer of the classification head.", lower_bound=1)
    stsb_objective: str = option("cosine", "--task=stsb: cosine regression to score/5, or head_mse as the "
                                           "original ft_stsb.py.", choices=STSB_OBJECTIVES)

    def validate(self, config) -> None:
        if self.task == "stsb" and not self.pretrained_weights:
            raise UserError("--task=stsb fine-tunes a trained model: give --pretrained_weights=<run ID or path>.")
        if not 0 < self.prior < 1:
            raise UserError(f"--prior must be in (0, 1), got {self.prior}.")
        if not 0 < self.pos_sample_prec <= 100:
            raise UserError(f"--pos_sample_prec must be in (0, 100], got {self.pos_sample_prec}.")
        if self.labeled_batch_fraction is not None and not 0 < self.labeled_batch_fraction <= 1:
            raise UserError(f"--labeled_batch_fraction must be in (0, 1], got {self.labeled_batch_fraction}.")
