"""Configuration of a PAUSE run (written next to its artifacts as config.json)."""

from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

from common.runs import RunConfig

TASKS = ("nli", "stsb")
# The official SNLI + MultiNLI training files, relative to the data root, as
# `python -m common.nli_download --out=<DATA_PATH>/nli` lays them out.
DEFAULT_NLI_TRAIN = ("nli/snli_1.0/snli_1.0_train.jsonl", "nli/multinli_1.0/multinli_1.0_train.jsonl")


@dataclasses.dataclass(frozen=True)
class PauseConfig(RunConfig):
    """Everything a PAUSE (or STS-B fine-tuning) run depends on.

    Defaults follow the original train_nli.py where they make sense (batch 1024,
    4 epochs of 500 steps, prior 1/3, peak lr 7.5e-5, 50 % labels); the encoder
    defaults to the offline MiniLM instead of the TF Hub "small" BERT.
    """

    model: str = "minilm"
    pretrained_weights: str = ""
    task: str = "nli"
    train_data: Tuple[str, ...] = DEFAULT_NLI_TRAIN
    train_epochs: int = 4
    batch_size: int = 1024
    max_seq_len: int = 128
    pad_to_multiple_of: int = 1
    prior: float = 1.0 / 3.0
    train_lr: float = 7.5e-5
    end_lr: float = 5e-6
    warmup_fraction: float = 0.1
    pos_sample_prec: float = 50.0
    labeled_batch_fraction: Optional[float] = None
    annealing: str = "global"
    anneal_power: float = 3.0
    num_classes: int = 3
    hidden_units: int = 128
    stsb_objective: str = "cosine"

    @property
    def warmup_steps(self) -> int:
        return int(self.warmup_fraction * self.total_steps)

    def validate(self) -> None:
        self.validate_run()
        if self.task not in TASKS:
            raise ValueError(f"--task must be one of {TASKS}, got {self.task!r}.")
        if self.task == "stsb" and not self.pretrained_weights:
            raise ValueError("--task=stsb fine-tunes a trained model: give --pretrained_weights=<run ID or path>.")
        if self.batch_size < 1:
            raise ValueError(f"--batch_size must be >= 1, got {self.batch_size}.")
        if not 0 < self.prior < 1:
            raise ValueError(f"--prior must be in (0, 1), got {self.prior}.")
        if not 0 < self.pos_sample_prec <= 100:
            raise ValueError(f"--pos_sample_prec must be in (0, 100], got {self.pos_sample_prec}.")
        if self.labeled_batch_fraction is not None and not 0 < self.labeled_batch_fraction <= 1:
            raise ValueError(f"--labeled_batch_fraction must be in (0, 1], got {self.labeled_batch_fraction}.")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"--warmup_fraction must be in [0, 1), got {self.warmup_fraction}.")
