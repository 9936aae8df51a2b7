"""SentEval's classifier, its three validation protocols and its relatedness regressor, in NumPy.

The model and its training follow SentEval's PyTorch code
(facebookresearch/SentEval `senteval/tools/classifier.py`, `validation.py`,
`relatedness.py`) step for step, so that scores are comparable with published
SentEval numbers:

- the model is one linear layer (logistic regression, `nhid=0`) or
  Linear-Dropout-Sigmoid-Linear, initialised like PyTorch's `nn.Linear`
  (uniform in +-1/sqrt(fan_in));
- the random numbers are SentEval's own (`RandomStreams`): the data order from
  NumPy's legacy generator seeded with the seed, the initialisation from a
  reproduction of PyTorch's seeded CPU generator, so a seed gives the score
  SentEval gives at that seed on the same features (checked against the
  original code with PyTorch 2.13: docs/benchmarks/senteval_minilm/), not only
  one from the same distribution;
- softmax cross-entropy, the L2 penalty `l2reg` applied as the optimizer's
  weight decay (added to the gradient of every parameter, biases included),
  Adam or RMSprop with PyTorch's defaults;
- every `epoch_size` epochs the dev accuracy is checked; the best model is
  kept; training stops at the `tenacity + 1`-th check without improvement
  (SentEval never resets that count) or after `max_epoch` epochs;
- the L2 penalty is chosen among 1e-5, 1e-4, 1e-3, 1e-2 by inner validation
  (`inner_kfold_validation`, `kfold_validation`, `split_validation`).

The models of the penalty grid are trained side by side as one "bank" (a
leading model axis on every parameter). SentEval trains them one after another,
each reseeded identically, so every model sees the same initialisation, the same
batches and the same dropout masks either way; the bank gives the same models
in a quarter of the Python steps.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import scipy.special
from sklearn.model_selection import StratifiedKFold
from tqdm.auto import tqdm

from common.evaluation.senteval.configs import ClassifierConfig, RelatednessConfig, SentEvalConfig
from common.evaluation.sts import pearson100

# SentEval's L2 penalty grid for its PyTorch classifier, and the "no penalty"
# value SNLI uses (`noreg`).
L2_REGS: Tuple[float, ...] = tuple(10.0 ** t for t in range(-5, -1))
NO_REG: Tuple[float, ...] = (1e-9,)
# InnerKFoldClassifier's fold seed: SentEval hard-codes it, whatever the task's seed.
INNER_KFOLD_SEED = 1111

Params = Dict[str, np.ndarray]

# === Model ===


def _torch_uniform(generator: np.random.RandomState, shape: Tuple[int, ...], low: float, high: float) -> np.ndarray:
    """PyTorch's CPU `tensor.uniform_(low, high)` for float32, draw for draw.

    PyTorch's CPU generator is an MT19937 seeded like NumPy's legacy
    `RandomState(seed)`; its float32 `uniform_` takes one 32-bit draw per
    element, in memory order, keeps the low 24 bits and scales them in double
    precision: `(draw & (2**24 - 1)) * 2**-24 * (high - low) + low`, with the
    bounds first rounded to float32.
    """
    draws = generator.randint(0, 2 ** 32, size=int(np.prod(shape)), dtype=np.uint32)
    lo, hi = np.float64(np.float32(low)), np.float64(np.float32(high))
    unit = (draws & np.uint32(2 ** 24 - 1)).astype(np.float64) * 2.0 ** -24
    return (unit * (hi - lo) + lo).astype(np.float32).reshape(shape)


def _linear_init(generator: np.random.RandomState, fan_in: int, fan_out: int,
                 n_models: int) -> Tuple[np.ndarray, np.ndarray]:
    """PyTorch's `nn.Linear(fan_in, fan_out)` initialisation, the same for every model of the bank.

    `reset_parameters`: the weight [fan_out, fan_in] from kaiming_uniform_ with
    a = sqrt(5) (bound sqrt(3) * gain / sqrt(fan_in), i.e. 1/sqrt(fan_in)), then
    the bias from U(+-1/sqrt(fan_in)), both from `generator` in that order.
    Returned as our layout: weight [n_models, fan_in, fan_out], bias [n_models, fan_out].
    """
    slope = math.sqrt(5)
    gain = math.sqrt(2.0 / (1 + slope ** 2))
    bound = math.sqrt(3.0) * (gain / math.sqrt(fan_in))
    w = _torch_uniform(generator, (fan_out, fan_in), -bound, bound).T
    b = _torch_uniform(generator, (fan_out,), -1.0 / math.sqrt(fan_in), 1.0 / math.sqrt(fan_in))
    return np.repeat(w[None], n_models, axis=0), np.repeat(b[None], n_models, axis=0)


def init_params(input_dim: int, nclasses: int, nhid: int, n_models: int,
                generator: np.random.RandomState) -> Params:
    """Parameters of `n_models` identical classifiers, each with a leading model axis.

    Drawn as SentEval's `nn.Sequential` draws them from the seeded PyTorch
    generator: layer by layer, weight before bias.
    """
    if nhid == 0:
        w, b = _linear_init(generator, input_dim, nclasses, n_models)
        return {"w": w, "b": b}
    w1, b1 = _linear_init(generator, input_dim, nhid, n_models)
    w2, b2 = _linear_init(generator, nhid, nclasses, n_models)
    return {"w1": w1, "b1": b1, "w2": w2, "b2": b2}


def forward(params: Params, x: np.ndarray, dropout_mask: Optional[np.ndarray] = None
            ) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
    """Logits of every model of the bank.

    Args:
        params: Params. From `init_params` (leading model axis R).
        x: float32 [B, d]. Features.
        dropout_mask: float32 [B, nhid] or None. Inverted-dropout mask (kept
            units scaled by 1/(1-p)), applied to the hidden pre-activations as
            PyTorch's Dropout before Sigmoid.

    Returns:
        (logits [R, B, C], the activations `backward` needs).
    """
    if "w" in params:
        return np.matmul(x, params["w"]) + params["b"][:, None, :], {}  # [R, B, C]
    pre = np.matmul(x, params["w1"]) + params["b1"][:, None, :]  # [R, B, H]
    if dropout_mask is not None:
        pre = pre * dropout_mask
    hidden = 1.0 / (1.0 + np.exp(-pre))  # [R, B, H]
    return np.matmul(hidden, params["w2"]) + params["b2"][:, None, :], {"hidden": hidden}  # [R, B, C]


def backward(params: Params, x: np.ndarray, activations: Dict[str, np.ndarray], dlogits: np.ndarray,
             dropout_mask: Optional[np.ndarray] = None) -> Params:
    """Gradients of the loss with respect to every parameter, given d loss / d logits [R, B, C]."""
    if "w" in params:
        return {"w": np.matmul(x.T, dlogits), "b": dlogits.sum(axis=1)}  # [R, d, C], [R, C]
    hidden = activations["hidden"]  # [R, B, H]
    dhidden = np.matmul(dlogits, params["w2"].transpose(0, 2, 1))  # [R, B, H]
    dpre = dhidden * hidden * (1.0 - hidden)  # [R, B, H]
    if dropout_mask is not None:
        dpre = dpre * dropout_mask
    return {"w1": np.matmul(x.T, dpre), "b1": dpre.sum(axis=1),  # [R, d, H], [R, H]
            "w2": np.matmul(hidden.transpose(0, 2, 1), dlogits), "b2": dlogits.sum(axis=1)}  # [R, H, C], [R, C]


def softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis."""
    return scipy.special.softmax(logits, axis=-1)


def cross_entropy_grad(logits: np.ndarray, labels: np.ndarray, reduction: str) -> np.ndarray:
    """d cross-entropy / d logits for logits [R, B, C] and integer labels [B]."""
    grad = softmax(logits)  # [R, B, C]
    grad[:, np.arange(len(labels)), labels] -= 1.0
    return grad / len(labels) if reduction == "mean" else grad


# === Optimizers (PyTorch's update rules, with weight decay added to the gradient) ===


class _Adam:
    """torch.optim.Adam defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8."""

    def __init__(self, params: Params, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8):
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, params: Params, grads: Params) -> None:
        self.t += 1
        bias1 = 1.0 - self.beta1 ** self.t
        bias2_sqrt = np.sqrt(1.0 - self.beta2 ** self.t)
        for k, g in grads.items():
            self.m[k] = self.beta1 * self.m[k] + (1.0 - self.beta1) * g
            self.v[k] = self.beta2 * self.v[k] + (1.0 - self.beta2) * g * g
            params[k] -= (self.lr / bias1) * self.m[k] / (np.sqrt(self.v[k]) / bias2_sqrt + self.eps)

    def keep(self, rows: np.ndarray) -> None:
        """Drops the state of models that left the bank."""
        self.m = {k: v[rows] for k, v in self.m.items()}
        self.v = {k: v[rows] for k, v in self.v.items()}


class _RMSprop:
    """torch.optim.RMSprop defaults: lr 1e-2, alpha 0.99, eps 1e-8, no momentum, not centred."""

    def __init__(self, params: Params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8):
        self.lr, self.alpha, self.eps = lr, alpha, eps
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: Params, grads: Params) -> None:
        for k, g in grads.items():
            self.v[k] = self.alpha * self.v[k] + (1.0 - self.alpha) * g * g
            params[k] -= self.lr * g / (np.sqrt(self.v[k]) + self.eps)

    def keep(self, rows: np.ndarray) -> None:
        self.v = {k: v[rows] for k, v in self.v.items()}


def _optimizer(name: str, params: Params):
    return _Adam(params) if name == "adam" else _RMSprop(params)


def _add_weight_decay(grads: Params, params: Params, l2regs: np.ndarray) -> None:
    for k, g in grads.items():
        g += l2regs.reshape((-1,) + (1,) * (g.ndim - 1)) * params[k]


# === Training ===


@dataclasses.dataclass
class FittedClassifier:
    """A trained SentEval classifier.

    Attributes:
        params: Params. Its parameters, with a model axis of size 1.
        l2reg: float. The L2 penalty it was trained with.
        devacc: float. Its best dev accuracy (a fraction), the one early stopping kept.
        epochs: int. Epochs it was trained for (including those after its best check).
    """

    params: Params
    l2reg: float
    devacc: float
    epochs: int

    def predict(self, x: np.ndarray, chunk: int = 8192) -> np.ndarray:
        """Predicted class ids [N]."""
        x = np.asarray(x, np.float32)
        out = [forward(self.params, x[i:i + chunk])[0][0].argmax(axis=-1) for i in range(0, len(x), chunk)]
        return np.concatenate(out) if out else np.zeros([0], np.int64)

    def score(self, x: np.ndarray, y: np.ndarray) -> float:
        """Accuracy (a fraction)."""
        return float(np.mean(self.predict(x) == np.asarray(y)))


def _accuracies(params: Params, x: np.ndarray, y: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """Accuracy of every model of the bank [R]."""
    correct = 0
    for i in range(0, len(x), chunk):
        logits, _ = forward(params, x[i:i + chunk])
        correct = correct + (logits.argmax(axis=-1) == y[None, i:i + chunk]).sum(axis=1)
    return np.asarray(correct, np.float64) / max(len(x), 1)


@dataclasses.dataclass
class RandomStreams:
    """SentEval's random streams for one classifier, reproduced without PyTorch.

    SentEval seeds NumPy's global generator and PyTorch's before it builds each
    classifier (`np.random.seed(seed)`, `torch.manual_seed(seed)`); the data
    order (and the validation split) comes from the first, the initialisation
    from the second. Both are MT19937 streams with the same seeding, so the
    same seed gives SentEval's folds-to-weights sequence exactly and so its
    scores, not just scores from the same distribution.

    Attributes:
        data: RandomState. SentEval's `np.random` after `np.random.seed(seed)`.
        init: RandomState. Stands in for PyTorch's CPU generator after
            `torch.manual_seed(seed)` (read through `_torch_uniform`).
        dropout: Generator. The MLP's dropout masks. PyTorch draws those
            through its own Bernoulli kernels, which are not reproduced: with
            `dropout > 0` scores follow SentEval's distribution, not its draws.
    """

    data: np.random.RandomState
    init: np.random.RandomState
    dropout: np.random.Generator

    @classmethod
    def from_seed(cls, seed: int) -> "RandomStreams":
        check_seed(seed)
        return cls(np.random.RandomState(seed), np.random.RandomState(seed), np.random.default_rng(seed))


def check_seed(seed: int) -> None:
    """Raises ValueError unless `seed` is one SentEval accepts (NumPy's legacy seeds: 0 <= seed < 2**32)."""
    if not 0 <= int(seed) < 2 ** 32:
        raise ValueError(f"A SentEval seed must be in [0, 2**32), got {seed}.")


def train_classifiers(x: np.ndarray, y: np.ndarray, nclasses: int, l2regs: Sequence[float],
                      config: ClassifierConfig, seed: int,
                      validation_data: Optional[Tuple[np.ndarray, np.ndarray]] = None,
                      validation_split: Optional[float] = None) -> List[FittedClassifier]:
    """Trains one SentEval classifier per L2 penalty, with early stopping on dev accuracy.

    Equivalent to SentEval's `MLP(config, l2reg=reg, seed=seed).fit(x, y, ...)`
    for each `reg` in `l2regs`.

    Args:
        x: float [N, d]. Training features.
        y: int [N]. Labels in [0, nclasses).
        nclasses: int. Number of classes.
        l2regs: sequence of float. L2 penalties (weight decay), one model each.
        config: ClassifierConfig. Model and training settings.
        seed: int. Seeds initialisation, data order, dropout and the validation split.
        validation_data: (features, labels) or None. The dev set for early stopping.
        validation_split: float or None. Without `validation_data`, hold out this
            share of (x, y), drawn at random, as the dev set.

    Returns:
        One FittedClassifier per penalty, in the order of `l2regs`: the model of
        its best dev check.

    Raises:
        ValueError: for inconsistent shapes, labels out of range, or neither
            validation_data nor validation_split.
    """
    x = np.asarray(x, np.float32)
    y = np.asarray(y, np.int64)
    if x.ndim != 2 or len(x) != len(y):
        raise ValueError(f"Expected features [N, d] and labels [N], got {x.shape} and {y.shape}.")
    if len(y) and (y.min() < 0 or y.max() >= nclasses):
        raise ValueError(f"Labels must be in [0, {nclasses}), got [{y.min()}, {y.max()}].")
    streams = RandomStreams.from_seed(seed)
    if validation_data is not None:
        dev_x, dev_y = np.asarray(validation_data[0], np.float32), np.asarray(validation_data[1], np.int64)
    elif validation_split:
        permutation = streams.data.permutation(len(x))
        # SentEval's int(validation_split * N), but at least one point (SentEval fails below 20 samples).
        n_dev = max(1, int(validation_split * len(x)))
        dev_x, dev_y = x[permutation[:n_dev]], y[permutation[:n_dev]]
        x, y = x[permutation[n_dev:]], y[permutation[n_dev:]]
    else:
        raise ValueError("train_classifiers needs validation_data or validation_split.")
    if len(x) == 0 or len(dev_x) == 0:
        raise ValueError(f"Need training and dev examples, got {len(x)} and {len(dev_x)}.")

    n_models = len(l2regs)
    params = init_params(x.shape[1], nclasses, config.nhid, n_models, streams.init)
    optimizer = _optimizer(config.optim, params)
    best = {k: v.copy() for k, v in params.items()}
    best_acc = np.full(n_models, -1.0)
    checks_without_gain = np.zeros(n_models, np.int64)
    active = np.arange(n_models)  # bank row -> model index
    epochs = np.zeros(n_models, np.int64)
    regs = np.asarray(l2regs, np.float32)
    nepoch = 0
    while len(active) and nepoch <= config.max_epoch:
        for _ in range(config.epoch_size):
            permutation = streams.data.permutation(len(x))
            for start in range(0, len(x), config.batch_size):
                idx = permutation[start:start + config.batch_size]
                xb, yb = x[idx], y[idx]
                mask = None
                if config.nhid and config.dropout > 0:
                    keep = streams.dropout.random((len(idx), config.nhid)) >= config.dropout
                    mask = keep.astype(np.float32) / np.float32(1.0 - config.dropout)
                logits, acts = forward(params, xb, mask)
                grads = backward(params, xb, acts, cross_entropy_grad(logits, yb, config.loss_reduction), mask)
                _add_weight_decay(grads, params, regs[active])
                optimizer.step(params, grads)
        nepoch += config.epoch_size
        epochs[active] = nepoch
        acc = _accuracies(params, dev_x, dev_y)
        improved = acc > best_acc[active]
        for k in params:
            best[k][active[improved]] = params[k][improved]
        best_acc[active[improved]] = acc[improved]
        stop = ~improved & (checks_without_gain[active] >= config.tenacity)
        checks_without_gain[active[~improved]] += 1
        if stop.any():
            rows = np.flatnonzero(~stop)
            active = active[rows]
            params = {k: v[rows] for k, v in params.items()}
            optimizer.keep(rows)
    return [FittedClassifier({k: v[i:i + 1].copy() for k, v in best.items()}, float(l2regs[i]), float(best_acc[i]),
                             int(epochs[i])) for i in range(n_models)]


# === Validation protocols (SentEval's senteval/tools/validation.py) ===


@dataclasses.dataclass(frozen=True)
class ValidationResult:
    """What a validation protocol reports (accuracies x100, rounded as SentEval rounds them).

    Attributes:
        devacc: float. Validation accuracy of the chosen penalty.
        acc: float. Test accuracy.
        l2regs: tuple of float. The chosen penalty (one per outer fold for
            `inner_kfold_validation`).
        predictions: int array or None. Test predictions (kfold and split protocols).
    """

    devacc: float
    acc: float
    l2regs: Tuple[float, ...]
    predictions: Optional[np.ndarray] = None


def stratified_folds(y: np.ndarray, k: int, seed: int) -> List[Tuple[np.ndarray, np.ndarray]]:
    """SentEval's folds: `StratifiedKFold(k, shuffle=True, random_state=seed)` over the samples in order."""
    y = np.asarray(y)
    return list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y))


def _pick(scores: Sequence[float], regs: Sequence[float]) -> Tuple[float, float]:
    """(best penalty, its score); ties go to the first (smallest) penalty, as np.argmax."""
    i = int(np.argmax(scores))
    return regs[i], scores[i]


def inner_kfold_validation(x: np.ndarray, y: np.ndarray, nclasses: int, config: SentEvalConfig, seed: int,
                           progress: bool = False, desc: str = "folds") -> ValidationResult:
    """SentEval's InnerKFoldClassifier (MR, CR, SUBJ, MPQA): nested cross-validation.

    Outer `kfold` stratified folds; within each outer training part, an inner
    `kfold` cross-validation picks the L2 penalty (mean inner accuracy, rounded
    to 2 decimals); a model with that penalty is then fitted on the outer
    training part (5 % held out for early stopping) and scored on the outer
    test fold. `devacc` and `acc` are the means over outer folds.

    As in SentEval, both fold splitters are seeded with 1111 whatever `seed`
    is (`INNER_KFOLD_SEED`); `seed` drives the classifiers (initialisation,
    data order, the 5 % early-stopping split), so the folds of MR, CR, SUBJ and
    MPQA are the same at every seed, as in SentEval's own seed runs.
    """
    regs = L2_REGS
    dev_results, test_results, chosen = [], [], []
    for train_idx, test_idx in tqdm(stratified_folds(y, config.kfold, INNER_KFOLD_SEED), desc=desc,
                                    disable=not progress, leave=False):
        x_train, y_train = x[train_idx], y[train_idx]
        inner_scores = np.zeros(len(regs))
        for inner_train, inner_test in stratified_folds(y_train, config.kfold, INNER_KFOLD_SEED):
            models = train_classifiers(x_train[inner_train], y_train[inner_train], nclasses, regs,
                                       config.classifier, seed,
                                       validation_data=(x_train[inner_test], y_train[inner_test]))
            inner_scores += [m.devacc for m in models]  # the dev fold is the inner test fold
        scores = [round(100 * float(s) / config.kfold, 2) for s in inner_scores]
        reg, dev = _pick(scores, regs)
        model = train_classifiers(x_train, y_train, nclasses, [reg], config.classifier, seed,
                                  validation_split=config.validation_split)[0]
        dev_results.append(dev)
        test_results.append(round(100 * model.score(x[test_idx], y[test_idx]), 2))
        chosen.append(reg)
    return ValidationResult(round(float(np.mean(dev_results)), 2), round(float(np.mean(test_results)), 2),
                            tuple(chosen))


def kfold_validation(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, test_y: np.ndarray,
                     nclasses: int, config: SentEvalConfig, seed: int, progress: bool = False,
                     desc: str = "folds") -> ValidationResult:
    """SentEval's KFoldClassifier (TREC, MRPC): cross-validation on train picks the penalty.

    The penalty with the best mean accuracy over `kfold` stratified folds of the
    training set (rounded to 2 decimals) is refitted on the whole training set
    (5 % held out for early stopping) and scored on the test set.
    """
    regs = L2_REGS
    fold_scores = np.zeros(len(regs))
    for train_idx, dev_idx in tqdm(stratified_folds(train_y, config.kfold, seed), desc=desc,
                                   disable=not progress, leave=False):
        models = train_classifiers(train_x[train_idx], train_y[train_idx], nclasses, regs, config.classifier, seed,
                                   validation_data=(train_x[dev_idx], train_y[dev_idx]))
        fold_scores += [m.devacc for m in models]
    scores = [round(100 * float(s) / config.kfold, 2) for s in fold_scores]
    reg, dev = _pick(scores, regs)
    model = train_classifiers(train_x, train_y, nclasses, [reg], config.classifier, seed,
                              validation_split=config.validation_split)[0]
    predictions = model.predict(test_x)
    acc = round(100 * float(np.mean(predictions == np.asarray(test_y))), 2)
    return ValidationResult(dev, acc, (reg,), predictions)


def split_validation(train: Tuple[np.ndarray, np.ndarray], dev: Tuple[np.ndarray, np.ndarray],
                     test: Tuple[np.ndarray, np.ndarray], nclasses: int, config: SentEvalConfig, seed: int,
                     noreg: bool = False, classifier: Optional[ClassifierConfig] = None) -> ValidationResult:
    """SentEval's SplitClassifier (SST, SICK-E, SNLI, probing): the dev set picks the penalty.

    One model per penalty is trained on train with early stopping on dev; the
    penalty with the best dev accuracy (rounded to 2 decimals) wins and its
    model is scored on test. SentEval retrains a fresh model with the winning
    penalty; training is deterministic for a seed, so that model is the one
    already trained.

    Args:
        train, dev, test: (features, labels) pairs.
        nclasses: int. Number of classes.
        config: SentEvalConfig. Its classifier settings are used unless `classifier` is given.
        seed: int. Training seed.
        noreg: bool. Use only the penalty 1e-9 (SentEval's SNLI). Defaults to False.
        classifier: ClassifierConfig or None. Overrides `config.classifier`
            (probing's WordContent is always logistic regression).
    """
    regs = NO_REG if noreg else L2_REGS
    models = train_classifiers(train[0], train[1], nclasses, regs, classifier or config.classifier, seed,
                               validation_data=dev)
    scores = [round(100 * m.devacc, 2) for m in models]
    i = int(np.argmax(scores))
    predictions = models[i].predict(test[0])
    acc = round(100 * float(np.mean(predictions == np.asarray(test[1]))), 2)
    return ValidationResult(scores[i], acc, (regs[i],), predictions)


# === Relatedness regressor (SentEval's senteval/tools/relatedness.py) ===


def relatedness_targets(scores: np.ndarray, nclasses: int = 5) -> np.ndarray:
    """SentEval's `encode_labels` (Tai, Socher & Manning 2015): a score as weights on integer bins.

    Bin i (0-based) stands for the score i + 1: a score s puts weight
    s - floor(s) on bin floor(s) and floor(s) - s + 1 on bin floor(s) - 1 (when
    those bins exist), so the expected bin value is s for 1 <= s <= nclasses.
    As in SentEval, a score below 1 (STS-B's 0-1 range) keeps only the first
    weight, and 0 maps to all zeros.

    Args:
        scores: float [N]. Gold scores.
        nclasses: int. Bins. Defaults to 5.

    Returns:
        float32 [N, nclasses].
    """
    scores = np.asarray(scores, np.float64)
    floor = np.floor(scores)
    out = np.zeros((len(scores), nclasses), np.float32)
    rows = np.arange(len(scores))
    upper = floor.astype(np.int64)
    ok = (upper >= 0) & (upper < nclasses)
    out[rows[ok], upper[ok]] = (scores - floor)[ok]
    lower = upper - 1
    ok = (lower >= 0) & (lower < nclasses)
    out[rows[ok], lower[ok]] = (floor - scores + 1)[ok]
    return out


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation (a fraction); NaN when either side is constant."""
    return pearson100(a, b) / 100.0


@dataclasses.dataclass(frozen=True)
class RelatednessResult:
    """Attributes:
        devpearson: float. Best dev Pearson correlation (a fraction).
        predictions: float [N]. Predicted test scores (expected bin, 1..nclasses).
        epochs: int. Epochs trained.
    """

    devpearson: float
    predictions: np.ndarray
    epochs: int


def fit_relatedness(train_x: np.ndarray, train_scores: np.ndarray, dev_x: np.ndarray, dev_scores: np.ndarray,
                    test_x: np.ndarray, config: RelatednessConfig, seed: int) -> RelatednessResult:
    """SentEval's RelatednessPytorch (SICK-R, STS-B): softmax over score bins, expected bin as prediction.

    A linear layer and a softmax over `config.nclasses` bins are trained with
    Adam (lr 1e-3, no weight decay) on the squared error between the softmax
    and `relatedness_targets(score)`; every `epochs_per_check` epochs the dev
    Pearson correlation of the expected bin decides early stopping.

    Returns:
        RelatednessResult with the test predictions of the best dev check.
    """
    train_x = np.asarray(train_x, np.float32)
    dev_x = np.asarray(dev_x, np.float32)
    test_x = np.asarray(test_x, np.float32)
    targets = relatedness_targets(train_scores, config.nclasses)  # [N, C]
    bins = np.arange(1, config.nclasses + 1, dtype=np.float32)
    streams = RandomStreams.from_seed(seed)
    params = init_params(train_x.shape[1], config.nclasses, 0, 1, streams.init)
    optimizer = _Adam(params)

    def predict(p: Params, x: np.ndarray) -> np.ndarray:
        return softmax(forward(p, x)[0][0]) @ bins

    best, best_pr, without_gain, nepoch = {k: v.copy() for k, v in params.items()}, -1.0, 0, 0
    while nepoch <= config.max_epoch:
        for _ in range(config.epochs_per_check):
            permutation = streams.data.permutation(len(train_x))
            for start in range(0, len(train_x), config.batch_size):
                idx = permutation[start:start + config.batch_size]
                xb = train_x[idx]
                logits, acts = forward(params, xb)
                probs = softmax(logits)  # [1, B, C]
                dprobs = 2.0 * (probs - targets[idx][None])  # d squared error / d probs
                if config.loss_reduction == "mean":
                    dprobs /= probs.size
                dlogits = probs * (dprobs - np.sum(dprobs * probs, axis=-1, keepdims=True))
                optimizer.step(params, backward(params, xb, acts, dlogits))
        nepoch += config.epochs_per_check
        pr = pearson(predict(params, dev_x), dev_scores)
        if pr > best_pr:
            best_pr, best = pr, {k: v.copy() for k, v in params.items()}
        else:
            if without_gain >= config.tenacity:
                break
            without_gain += 1
    return RelatednessResult(float(best_pr), predict(best, test_x), nepoch)
