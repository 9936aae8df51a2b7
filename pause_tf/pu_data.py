"""Positive-unlabelled training data from sentence pairs.

`pu_split` keeps a stratified, seeded fraction of the given labels (pairs that came
unlabelled stay so); `estimate_priors` reads each class's prior off the labelled pairs;
`pu_batches` mixes the labelled class streams and the unlabelled stream into training
batches (`stream_weights`).
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from common.data.nli import NliPairs
from common.data.sampling import StreamSampler, batches_dataset
from common.errors import UserError
from pause_tf.losses import UNLABELED


def pu_split(labels: np.ndarray, percent: float, seed: int) -> np.ndarray:
    """Keeps `percent` % of the labels of every class; the rest become -1.

    Stratified: each class keeps round(percent/100 * its size) labels (at least
    one when the class is not empty), chosen by a seeded permutation, so the
    split is deterministic for a seed and the class proportions are preserved.
    Rows that are unlabelled already (-1) stay unlabelled.

    Args:
        labels: np.ndarray. [n] class ids >= 0, or -1.
        percent: float. 0 < percent <= 100 (the original's `--pos_sample_prec`).
        seed: int.

    Returns:
        [n] int32 array of class ids and -1 (unlabelled).
    """
    if not 0 < percent <= 100:
        raise UserError(f"pos_sample_prec must be in (0, 100], got {percent}.")
    labels = np.asarray(labels, np.int32)
    rng = np.random.default_rng(seed)
    out = np.full_like(labels, UNLABELED)
    for c in np.unique(labels[labels >= 0]):
        idx = np.flatnonzero(labels == c)
        keep = max(1, int(round(len(idx) * percent / 100.0)))
        chosen = rng.permutation(idx)[:keep]
        out[chosen] = c
    return out


def estimate_priors(labels: np.ndarray, num_classes: int) -> Tuple[float, ...]:
    """Each class's share of the labelled pairs: its prior among all pairs when the labelled
    pairs are a random sample of them (the "selected completely at random" assumption of PU
    learning).

    Raises:
        UserError: when a class has no labelled pair (its prior cannot be read off the data).
    """
    labels = np.asarray(labels)
    counts = np.bincount(labels[labels >= 0], minlength=num_classes)[:num_classes]
    if counts.min() == 0:
        raise UserError(f"Cannot estimate the class priors: labelled pairs per class {counts.tolist()}; every class "
                         "needs at least one labelled pair for its share to be read off them.")
    return tuple(float(c) for c in counts / counts.sum())


def check_labels(pairs: NliPairs, names: Sequence[str], sources: Sequence[str], priors_given: bool) -> None:
    """Refuses training pairs whose labels cannot train PAUSE, saying what would.

    No labelled pair leaves the cross-entropy nothing and the PU risk no positives: the run
    would train on nothing the user labelled, whatever the priors. A class without a labelled
    pair among classes that have some is either outside the data (the label set is wrong) or
    only among the unlabelled pairs (positive-unlabelled data): only there do given priors help,
    as its share cannot be read off the labelled pairs.

    Args:
        pairs: NliPairs. The training pairs as read (before any label is hidden).
        names: sequence of str. The label names (`--labels`).
        sources: sequence of str. The `--train_data` entries, for the message.
        priors_given: bool. Whether `--prior` or `--class_priors` was given.

    Raises:
        UserError: for no labelled pair, or a class without one when no priors are given.
    """
    where = ", ".join(sources)
    if pairs.labelled == 0:
        if pairs.label_columns:
            got = (f"its label column {', '.join(map(repr, pairs.label_columns))} is empty or '-' in all "
                   f"{len(pairs):,} pairs")
            fix = "label some pairs, or map the column that holds the labels with --columns=label:<column>"
        else:
            got = "it has no label column (looked for 'label' and 'gold_label')"
            fix = "map the column that holds the labels with --columns=label:<column>"
        raise UserError(f"{where}: PAUSE needs labelled pairs of each class {list(names)} beside unlabelled ones, "
                         f"but {got}; {fix}.")
    counts = np.bincount(pairs.labels[pairs.labels >= 0], minlength=len(names))[:len(names)]
    missing = [name for name, count in zip(names, counts) if count == 0]
    if missing and not priors_given:
        present = [name for name, count in zip(names, counts) if count]
        priors = ("give every class's prior in --labels order: "
                  f"--class_priors={','.join(['<p>'] * len(names))}")
        # --labels needs two names: with one class labelled, only the priors can make it trainable.
        advice = (f"if the data has no such pairs, name the classes it has: --labels={','.join(present)}; if they "
                  f"are among the unlabelled pairs, {priors}") if len(present) > 1 else priors
        raise UserError(f"{where}: no labelled pair of {missing} (labelled pairs per class: "
                         f"{'/'.join(str(c) for c in counts)} {'/'.join(names)}), so its prior cannot be read off "
                         f"the labelled pairs; {advice}.")


Priors = Union[float, Sequence[float]]


def stream_weights(num_classes: int, prior: Priors, labeled_batch_fraction: Optional[float],
                   has_class: Sequence[bool], has_unlabeled: bool) -> List[float]:
    """Sampling weights of the K class streams and the unlabelled stream.

    The labelled share of a batch is the mean prior, or `labeled_batch_fraction`;
    each class stream gets its prior's part of it (prior_c / K by default, as the
    original code mixed them) and the unlabelled stream the rest. Empty streams get
    weight 0 and the others are renormalised.
    """
    priors = np.broadcast_to(np.asarray(prior, np.float64), [num_classes])
    share = float(priors.mean()) if labeled_batch_fraction is None else labeled_batch_fraction
    if not 0 < share <= 1:
        raise ValueError(f"The labelled share of a batch must be in (0, 1], got {share}.")
    parts = priors / priors.sum()
    weights = [share * float(p) if present else 0.0 for p, present in zip(parts, has_class)]
    weights.append(1.0 - share if has_unlabeled else 0.0)
    total = sum(weights)
    if total <= 0:
        raise UserError("No data to sample from: every stream is empty.")
    return [w / total for w in weights]


def pu_batches(pairs: NliPairs, pu_labels: np.ndarray, batch_size: int, prior: Priors, seed: int,
               num_classes: int, labeled_batch_fraction: Optional[float] = None,
               start_step: int = 0) -> tf.data.Dataset:
    """An endless, seeded stream of batches of (premises, hypotheses, labels).

    Each class's labelled pairs and the unlabelled pairs form separate streams
    (each reshuffled whenever it is exhausted), sampled per row with
    `stream_weights`. The stream is a pure function of `seed`; `start_step`
    continues it at that batch (resume).

    Returns:
        Dataset of (tf.string [batch], tf.string [batch], int32 [batch]).
    """
    pu_labels = np.asarray(pu_labels, np.int32)
    groups = [np.flatnonzero(pu_labels == c) for c in range(num_classes)]
    groups.append(np.flatnonzero(pu_labels == UNLABELED))
    weights = stream_weights(num_classes, prior, labeled_batch_fraction,
                             [len(g) > 0 for g in groups[:-1]], len(groups[-1]) > 0)
    sampler = StreamSampler(groups, weights, batch_size, seed)
    return batches_dataset(sampler, [pairs.premises, pairs.hypotheses, pu_labels], start_step)
