"""Configuration of a SimCSE run (written next to its artifacts as config.json)."""

from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

from common.runs import RunConfig

MODES = ("unsup", "sup")
POOLINGS = ("cls_mlp", "cls", "mean")
# The paper's defaults per mode (Gao et al., 2021, appendix A).
MODE_DEFAULTS = {
    "unsup": {"batch_size": 64, "train_lr": 3e-5, "max_seq_len": 32, "train_epochs": 1},
    "sup": {"batch_size": 512, "train_lr": 5e-5, "max_seq_len": 32, "train_epochs": 3},
}


@dataclasses.dataclass(frozen=True)
class SimcseConfig(RunConfig):
    """SimCSE hyperparameters. `batch_size`, `train_lr`, `max_seq_len` and
    `train_epochs` left as None take the paper's value for the mode; a
    `train_steps_per_epoch` of 0 means one pass over the training data.

    Attributes:
        mode: str. "unsup" (each sentence twice, dropout as noise) or "sup"
            (premise, entailment hypothesis, contradiction hypothesis).
        train_data: tuple of str. unsup: .txt files (one sentence per line),
            NLI sources (their sentences) or `stsb:<split>`; sup: NLI sources.
        pooling: str. "cls_mlp" (CLS with an MLP during training, plain CLS at
            test: the paper's unsupervised choice), "cls" or "mean".
        temperature: float. Defaults to 0.05.
        hard_negative_weight: float. Weight of a query's own hard negative (sup).
    """

    mode: str = "unsup"
    model: str = "minilm"
    train_data: Tuple[str, ...] = ("senteval:dev", "senteval:test")
    pooling: str = "cls_mlp"
    temperature: float = 0.05
    hard_negative_weight: float = 1.0
    batch_size: Optional[int] = None
    train_lr: Optional[float] = None
    max_seq_len: Optional[int] = None
    train_epochs: Optional[int] = None
    train_steps_per_epoch: int = 0
    pad_to_multiple_of: int = 1
    dropout: Optional[float] = None

    def with_mode_defaults(self) -> "SimcseConfig":
        if self.mode not in MODES:
            raise ValueError(f"--simcse_mode must be one of {MODES}, got {self.mode!r}.")
        fill = {k: v for k, v in MODE_DEFAULTS[self.mode].items() if getattr(self, k) is None}
        return dataclasses.replace(self, **fill)

    def validate(self) -> None:
        if self.train_steps_per_epoch < 1:
            raise ValueError("train_steps_per_epoch must be resolved from the data before training.")
        self.validate_run()
        if self.pooling not in POOLINGS:
            raise ValueError(f"--pooling must be one of {POOLINGS}, got {self.pooling!r}.")
        if self.temperature <= 0 or self.hard_negative_weight <= 0:
            raise ValueError("--temperature and --hard_negative_weight must be > 0.")
