"""PAUSE's own settings; the run, encoder and optimizer sections are shared (common.training.config)."""

from __future__ import annotations

import dataclasses
import math
from typing import Optional, Tuple

from common.data.nli import DEFAULT_NLI_TRAIN, LABELS
from common.data.tables import parse_columns, parse_labels
from common.errors import UserError
from common.training.config import columns_option, labels_option, option
from pause_tf.annealing import ANNEALING_MODES

TASKS = ("nli", "stsb")
# --pooling: the masked mean, or the original code's mean over every position of inputs padded to --max_seq_len.
POOLINGS = ("mean", "padded_mean")
# --batch_without_labels: what a batch without a labelled pair trains on.
BATCH_WITHOUT_LABELS = ("pu", "zero")
STSB_OBJECTIVES = ("cosine", "head_mse")
# Where PAUSE's defaults differ from the shared sections' (the original train_nli.py:
# batch 1024, 4 epochs of 500 steps, peak lr 7.5e-5 with 10 % warm-up, decay to 5e-6).
DEFAULTS = {"train_data": DEFAULT_NLI_TRAIN, "batch_size": 1024, "train_epochs": 4, "train_lr": 7.5e-5,
            "end_lr": 5e-6, "warmup_fraction": 0.1}
# --pos_sample_prec when it is not given: the paper's protocol hides half of a fully labelled
# set; data that come with unlabelled pairs keep every label they have.
POS_SAMPLE_PREC_LABELLED_ONLY = 50.0
# The flags of the pair data, which --task=stsb (STS-B's own pairs) does not read.
PAIR_DATA_FLAGS = ("columns", "labels", "unlabeled_data", "class_priors")


@dataclasses.dataclass(frozen=True)
class PauseOptions:
    """PAUSE (NLI with partial labels) or STS-B fine-tuning of a PAUSE model.

    Example:
        >>> from common.training import registry
        >>> config = registry.build_config("pause", {"model": "random_tiny", "pos_sample_prec": 5, "prior": 0.3})
        >>> config.options.pos_sample_prec, config.options.prior, config.options.label_names
        (5, 0.3, ('entailment', 'neutral', 'contradiction'))
        >>> config.run.batch_size  # PAUSE's default, the original code's
        1024

        `common.training.runs.train(config)` runs it as `train.py --method=pause` would.
    """

    task: str = option("nli", "nli, or stsb to fine-tune --pretrained_weights on STS-B.", choices=TASKS)
    pretrained_weights: str = option("", "Run ID or artifact directory of a PAUSE model to start from.")
    columns: Tuple[str, ...] = columns_option()
    labels: Tuple[str, ...] = labels_option()
    unlabeled_data: Tuple[str, ...] = option(
        (), "Files of unlabelled pairs (premise and hypothesis columns; any label column is ignored) added to "
            "the PU loss's unlabelled stream. Rows of --train_data with an empty or '-' label are unlabelled too.")
    prior: Optional[float] = option(None, "Class prior of the nnPU risk, in (0, 1), the same for every class (the "
                                          "paper: 1/3). Default: --class_priors, else estimated per class from "
                                          "the labelled pairs' class shares.")
    class_priors: Tuple[str, ...] = option(
        (), "Per-class priors in --labels order (e.g. 0.2,0.8). Default: each class's share of the labelled "
            "pairs (printed at the start of the run).")
    pos_sample_prec: Optional[float] = option(
        None, "Percent of labelled pairs that keep their label, in (0, 100] (the paper's protocol: hide labels "
              "of a labelled set). Default: 100 when the data has unlabelled pairs, else 50.")
    labeled_batch_fraction: Optional[float] = option(
        None, "Labelled share of each batch, in (0, 1]; default the mean class prior, the original's mixing.")
    annealing: str = option("global", "PU weight (step/total)^power over the run; per_epoch: the original's "
                                      "restart every epoch; off: no PU term.", choices=ANNEALING_MODES)
    anneal_power: float = option(3.0, "Power of the PU-weight annealing polynomial.", lower_bound=0.0)
    num_classes: Optional[int] = option(None, "Number of classes; default: the number of --labels (3 for NLI).",
                                        lower_bound=2)
    hidden_units: int = option(128, "Width of the ELU layer of the classification head.", lower_bound=1)
    pooling: str = option("mean", "mean: the mean over real tokens; padded_mean: the mean over every position of "
                                  "inputs padded to --max_seq_len, padding included, as the original code (the "
                                  "length is then part of the model).", choices=POOLINGS)
    batch_without_labels: str = option("pu", "What a batch without a labelled pair trains on: pu, its PU term; "
                                             "zero: nothing (loss 0), as the original code, where Keras averaged "
                                             "an empty cross-entropy vector to 0.", choices=BATCH_WITHOUT_LABELS)
    stsb_objective: str = option("cosine", "--task=stsb: cosine regression to score/5, or head_mse as the "
                                           "original ft_stsb.py.", choices=STSB_OBJECTIVES)

    @property
    def label_names(self) -> Tuple[str, ...]:
        return parse_labels(self.labels, LABELS)

    @property
    def classes(self) -> int:
        """K: --num_classes, else the number of labels."""
        return self.num_classes or len(self.label_names)

    @property
    def priors(self) -> Tuple[float, ...]:
        """The prior of each class, as the loss uses it (after `pause_tf.method.resolve`)."""
        if self.prior is not None:
            return (self.prior,) * self.classes
        return tuple(float(p) for p in self.class_priors)

    def validate(self, config) -> None:
        if self.task == "stsb":
            if not self.pretrained_weights:
                raise UserError("--task=stsb fine-tunes a trained model: give --pretrained_weights=<run ID or path>.")
            given = [f"--{name}" for name in PAIR_DATA_FLAGS if getattr(self, name)]
            if given:
                raise UserError(f"--task=stsb trains on STS-B's scored pairs and does not use {', '.join(given)}; "
                                 "remove them.")
        if self.prior is not None and not 0 < self.prior < 1:
            raise UserError(f"--prior must be in (0, 1), got {self.prior}.")
        if self.prior is not None and self.class_priors:
            raise UserError("--prior (one value for every class) and --class_priors (one per class) exclude each "
                             "other; give one of them.")
        names = self.label_names
        if self.num_classes is not None and self.num_classes != len(names):
            raise UserError(f"--num_classes={self.num_classes} but there are {len(names)} labels {list(names)}; "
                             "name them with --labels=a,b,... and leave --num_classes out.")
        if self.class_priors:
            try:
                values = [float(p) for p in self.class_priors]
            except ValueError:
                raise UserError(f"--class_priors: expected numbers, got {list(self.class_priors)}.") from None
            if len(values) != len(names) or not all(math.isfinite(v) and 0 < v < 1 for v in values):
                raise UserError(f"--class_priors: expected {len(names)} numbers in (0, 1), one per label "
                                 f"{list(names)}; got {list(self.class_priors)}.")
        parse_columns(self.columns, ("premise", "hypothesis", "label"))
        if self.pos_sample_prec is not None and not 0 < self.pos_sample_prec <= 100:
            raise UserError(f"--pos_sample_prec must be in (0, 100], got {self.pos_sample_prec}.")
        if self.labeled_batch_fraction is not None and not 0 < self.labeled_batch_fraction <= 1:
            raise UserError(f"--labeled_batch_fraction must be in (0, 1], got {self.labeled_batch_fraction}.")
