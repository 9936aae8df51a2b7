"""The SentEval classifier configurations users know, as frozen dataclasses.

SentEval (Conneau & Kiela, LREC 2018, https://github.com/facebookresearch/SentEval)
is configured by a `params` dict: `kfold` and a `classifier` dict (`nhid`,
`optim`, `batch_size`, `tenacity`, `epoch_size`, `max_epoch`, `dropout`). The
same settings live here, with SentEval's names:

- `fast` ("prototyping" in SentEval's README and DeCLUTR's script): kfold 5,
  RMSprop, batch 128, tenacity 3, epoch_size 2.
- `default` / `test` (the README's "for best results" setting, used for
  published numbers): kfold 10, Adam, batch 64, tenacity 5, epoch_size 4.
- `pause` (EQTPartners/pause `sent_eval.py`): kfold 10 with the fast classifier.
"""

from __future__ import annotations

import dataclasses
from typing import Dict

from common.errors import UserError

OPTIMIZERS = ("adam", "rmsprop")
LOSS_REDUCTIONS = ("mean", "sum")


@dataclasses.dataclass(frozen=True)
class ClassifierConfig:
    """SentEval's `params["classifier"]`: the logistic regression / MLP and its training.

    Attributes:
        nhid: int. Hidden units; 0 is logistic regression (one linear layer),
            otherwise Linear-Dropout-Sigmoid-Linear. Defaults to 0.
        optim: str. "adam" (PyTorch defaults: lr 1e-3, betas 0.9/0.999, eps 1e-8)
            or "rmsprop" (PyTorch defaults: lr 1e-2, alpha 0.99, eps 1e-8).
            Defaults to "adam".
        batch_size: int. Training batch size. Defaults to 64.
        tenacity: int. Dev checks without improvement tolerated before stopping
            (SentEval never resets this count). Defaults to 5.
        epoch_size: int. Passes over the training set between two dev checks.
            Defaults to 4.
        max_epoch: int. Training stops once more than this many epochs ran.
            Defaults to 200.
        dropout: float. Dropout rate of the MLP's hidden layer. Defaults to 0.
        loss_reduction: str. "mean" (cross-entropy averaged over the batch:
            what SentEval computes under PyTorch 1.x and later, where the
            reduction is fixed when the loss is built and SentEval's later
            `loss_fn.size_average = False` has no effect) or "sum" (SentEval's
            intent, and its behaviour under the PyTorch 0.3 of its paper).
            Relative to the data term, "sum" weakens the weight-decay penalty by
            the batch size. Defaults to "mean".
    """

    nhid: int = 0
    optim: str = "adam"
    batch_size: int = 64
    tenacity: int = 5
    epoch_size: int = 4
    max_epoch: int = 200
    dropout: float = 0.0
    loss_reduction: str = "mean"

    def __post_init__(self):
        if self.nhid < 0:
            raise UserError(f"nhid must be >= 0, got {self.nhid}.")
        if self.optim not in OPTIMIZERS:
            raise UserError(f"optim must be one of {OPTIMIZERS}, got {self.optim!r}.")
        if self.batch_size < 1 or self.epoch_size < 1 or self.tenacity < 0 or self.max_epoch < 0:
            raise UserError(
                "batch_size and epoch_size must be >= 1, tenacity and max_epoch >= 0; got "
                f"{self.batch_size}, {self.epoch_size}, {self.tenacity}, {self.max_epoch}.")
        if not 0.0 <= self.dropout < 1.0:
            raise UserError(f"dropout must be in [0, 1), got {self.dropout}.")
        if self.loss_reduction not in LOSS_REDUCTIONS:
            raise UserError(f"loss_reduction must be one of {LOSS_REDUCTIONS}, got {self.loss_reduction!r}.")


@dataclasses.dataclass(frozen=True)
class RelatednessConfig:
    """SentEval's `RelatednessPytorch` (SICK-R, STS-B), whose settings are fixed in SentEval.

    A linear layer over the pair features and a softmax over `nclasses` score
    bins, trained with Adam (lr 1e-3, no weight decay) on the mean squared error
    to the binned gold score; the prediction is the expected bin (1..nclasses).

    Attributes:
        nclasses: int. Score bins. Defaults to 5.
        batch_size: int. Defaults to 64.
        epochs_per_check: int. Epochs between two dev Pearson checks. Defaults to 50.
        tenacity: int. Dev checks without improvement tolerated. Defaults to 3.
        max_epoch: int. Training stops once more than this many epochs ran. Defaults to 1000.
        loss_reduction: str. "mean" or "sum", as ClassifierConfig. Defaults to "mean".
    """

    nclasses: int = 5
    batch_size: int = 64
    epochs_per_check: int = 50
    tenacity: int = 3
    max_epoch: int = 1000
    loss_reduction: str = "mean"

    def __post_init__(self):
        if self.loss_reduction not in LOSS_REDUCTIONS:
            raise UserError(f"loss_reduction must be one of {LOSS_REDUCTIONS}, got {self.loss_reduction!r}.")
        if self.nclasses < 2 or self.batch_size < 1 or self.epochs_per_check < 1:
            raise UserError("nclasses must be >= 2, batch_size and epochs_per_check >= 1; got "
                             f"{self.nclasses}, {self.batch_size}, {self.epochs_per_check}.")


@dataclasses.dataclass(frozen=True)
class SentEvalConfig:
    """One SentEval evaluation setting.

    Attributes:
        name: str. The configuration's name ("fast", "default", "test", "pause").
        kfold: int. Folds of the cross-validation (MR, CR, SUBJ, MPQA outer and
            inner folds; TREC and MRPC folds on train).
        classifier: ClassifierConfig. The classifier and its training.
        validation_split: float. Share of the training data held out for early
            stopping when a cross-validated task refits on all its training data
            (SentEval's `fit(..., validation_split=0.05)`). Defaults to 0.05.
        relatedness: RelatednessConfig. The SICK-R / STS-B regressor.
    """

    name: str
    kfold: int
    classifier: ClassifierConfig
    validation_split: float = 0.05
    relatedness: RelatednessConfig = RelatednessConfig()

    def __post_init__(self):
        if self.kfold < 2:
            raise UserError(f"kfold must be >= 2, got {self.kfold}.")
        if not 0.0 < self.validation_split < 1.0:
            raise UserError(f"validation_split must be in (0, 1), got {self.validation_split}.")


FAST_CLASSIFIER = ClassifierConfig(nhid=0, optim="rmsprop", batch_size=128, tenacity=3, epoch_size=2)
DEFAULT_CLASSIFIER = ClassifierConfig(nhid=0, optim="adam", batch_size=64, tenacity=5, epoch_size=4)

CONFIGS: Dict[str, SentEvalConfig] = {
    "fast": SentEvalConfig("fast", kfold=5, classifier=FAST_CLASSIFIER),
    "default": SentEvalConfig("default", kfold=10, classifier=DEFAULT_CLASSIFIER),
    "test": SentEvalConfig("test", kfold=10, classifier=DEFAULT_CLASSIFIER),
    "pause": SentEvalConfig("pause", kfold=10, classifier=FAST_CLASSIFIER),
}


def get_config(name: str, nhid: int | None = None) -> SentEvalConfig:
    """The named configuration, optionally with an MLP of `nhid` hidden units.

    Raises:
        UserError: for an unknown name.
    """
    if name not in CONFIGS:
        raise UserError(f"Unknown SentEval config {name!r}; expected one of {sorted(CONFIGS)}.")
    config = CONFIGS[name]
    if nhid is not None:
        config = dataclasses.replace(config, classifier=dataclasses.replace(config.classifier, nhid=nhid))
    return config

