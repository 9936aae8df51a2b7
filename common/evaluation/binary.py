"""Pairs labelled same / different (paraphrase, duplicate questions), scored as sentence-transformers'
`BinaryClassificationEvaluator` scores them for cosine similarity.

A model's similarity of each pair is turned into a yes / no by a threshold, and each metric is
reported at the threshold that is best for it: accuracy at the accuracy-best threshold; F1, with
its precision and recall, at the F1-best one. Average precision needs no threshold. The thresholds
are chosen as sentence-transformers chooses them (the midpoint between two neighbouring distinct
scores), so that the numbers of `test_sts.py --pairs` equal its evaluator's on the same scores.
sentence-transformers names average precision `ap`; this module says `average_precision`.

    metrics = binary_pair_metrics(cosine_similarities, labels)   # labels: 1 same, 0 different
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence

import numpy as np

from common.data.sts import PairSet
from common.data.tables import NO_LABEL, listed, parse_columns, read_table
from common.errors import UserError
from common.evaluation.sts import PAIR_SCORE_FIELDS, comparison_table

# What the metrics dict holds, in the order tables print them; fractions in [0, 1] (as
# sentence-transformers reports them), thresholds on the score scale.
METRICS = ("accuracy", "f1", "precision", "recall", "average_precision", "mcc")
THRESHOLDS = {"accuracy": "accuracy_threshold", "f1": "f1_threshold"}


def binary_pair_metrics(scores: np.ndarray, labels: np.ndarray) -> Dict[str, float]:
    """Accuracy, F1, precision, recall, average precision and Matthews correlation of similarity
    scores against 0/1 labels (higher score = more likely 1).

    Accuracy and F1 are each taken at their best threshold, scanning the distinct scores from the
    highest down: a threshold between two neighbouring distinct scores is their midpoint (the
    lower one where the midpoint rounds onto it), one below the lowest score is that score. No
    threshold at all (every pair "different") is accuracy's starting point, with the threshold
    just above the highest score; F1 counts only thresholds with a true positive (else 0, at
    threshold 0). Precision and recall are those of the F1-best threshold, and the Matthews
    correlation that of predicting 1 for a score >= it. Average precision is scikit-learn's:
    the precision at each distinct score weighted by the recall it adds.

    Args:
        scores: np.ndarray. [n] similarities (cosine, or a cross-encoder's scores).
        labels: np.ndarray. [n] 0 (different) or 1 (same), both present.

    Returns:
        Dict of float: `accuracy`, `accuracy_threshold`, `f1`, `f1_threshold`, `precision`,
        `recall`, `average_precision`, `mcc`, and `pairs` and `positives` (int).

    Raises:
        ValueError: for labels other than 0 and 1, or without both, or a length mismatch.
    """
    scores = np.asarray(scores)
    labels = np.asarray(labels)
    if scores.shape != labels.shape or scores.ndim != 1:
        raise ValueError(f"Expected scores and labels of one shape [n], got {scores.shape} and {labels.shape}.")
    if set(np.unique(labels).tolist()) != {0, 1}:
        raise ValueError(f"Expected labels 0 and 1, both present; got {np.unique(labels).tolist()}.")
    n = len(labels)
    order = np.argsort(-scores, kind="stable")
    ranked = scores[order]  # [n], highest first
    positive = labels[order] == 1  # [n]
    tp = np.cumsum(positive)  # [n] pairs labelled 1 among the first i + 1
    fp = np.arange(1, n + 1) - tp  # [n]
    negatives = n - int(tp[-1])
    # Thresholds sit after the last pair of a run of equal scores.
    ends = np.flatnonzero(np.r_[ranked[1:] != ranked[:-1], True])  # [groups]

    def threshold(i: int):
        if i == n - 1:
            return ranked[i]
        middle = (ranked[i] + ranked[i + 1]) / 2
        return ranked[i] if middle == ranked[i + 1] else middle

    accuracy = (tp[ends] + (negatives - fp[ends])) / n  # [groups]
    best = int(np.argmax(accuracy))
    if accuracy[best] > negatives / n:
        best_accuracy, accuracy_threshold = float(accuracy[best]), threshold(int(ends[best]))
    else:
        # Nothing beats calling every pair different: the threshold lies just above the highest score.
        dtype = np.result_type(scores.dtype, np.float16)
        best_accuracy, accuracy_threshold = negatives / n, np.nextafter(ranked[0], np.inf, dtype=dtype)

    with np.errstate(invalid="ignore", divide="ignore"):
        precision = tp[ends] / (ends + 1)  # [groups]
        recall = tp[ends] / tp[-1]  # [groups]
        f1 = np.where(tp[ends] > 0, 2 * precision * recall / (precision + recall), 0.0)  # [groups]
    best = int(np.argmax(f1))
    if f1[best] > 0:
        f1_values = (float(f1[best]), float(precision[best]), float(recall[best]))
        f1_threshold = threshold(int(ends[best]))
    else:
        f1_values, f1_threshold = (0.0, 0.0, 0.0), 0.0

    added_recall = np.diff(np.r_[0.0, recall])  # [groups]
    average_precision = float(np.sum(added_recall * precision))
    predicted = scores >= f1_threshold  # [n]
    return {"accuracy": best_accuracy, "accuracy_threshold": float(accuracy_threshold), "f1": f1_values[0],
            "f1_threshold": float(f1_threshold), "precision": f1_values[1], "recall": f1_values[2],
            "average_precision": average_precision, "mcc": _matthews(predicted, labels == 1), "pairs": n,
            "positives": int(tp[-1])}


def _matthews(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Matthews correlation of two boolean arrays (0 where a marginal is empty, as scikit-learn)."""
    tp = float(np.sum(predicted & actual))
    tn = float(np.sum(~predicted & ~actual))
    fp = float(np.sum(predicted & ~actual))
    fn = float(np.sum(~predicted & actual))
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def is_binary(pairs: PairSet) -> bool:
    """Whether a pair file's scores are 0/1 labels (both present) rather than graded similarities."""
    return set(np.unique(pairs.scores).tolist()) == {0.0, 1.0}


def pair_columns(entries: Sequence[str]) -> Dict[str, str]:
    """`--columns` of a pair file: `label:<column>` is another name for `score:<column>`.

    Raises:
        UserError: for an entry `parse_columns` refuses, or both `label` and `score`.
    """
    mapping = parse_columns(entries, (*PAIR_SCORE_FIELDS, "label"))
    if "label" in mapping:
        if "score" in mapping:
            raise UserError("--columns maps both score and label; they are one field (the pair's gold score or "
                             "label): give one of them.")
        mapping["score"] = mapping.pop("label")
    return mapping


def read_labelled_pairs(path: str, columns: Optional[Dict[str, str]], names: Sequence[str]) -> PairSet:
    """Pairs whose label cells hold one of two names: the first is 0 (different), the second 1 (same).

    Args:
        path: str. A CSV, TSV, JSONL or Parquet file (common.data.tables).
        columns: dict or None. `--columns`: field -> the file's column.
        names: sequence of str. The two label names (`--labels`), the negative one first.

    Raises:
        UserError: for other than two names, or a cell that is neither (naming the values found).
    """
    if len(names) != 2:
        raise UserError(f"--labels: pairs take two labels, the one meaning 'different' first (e.g. "
                         f"--labels=0,1 or --labels=other,paraphrase); got {list(names)}.")
    first, second, label = PAIR_SCORE_FIELDS
    table = read_table(path, PAIR_SCORE_FIELDS, columns, aliases={label: ("label",)})
    index = {name: i for i, name in enumerate(names)}
    cells = [(cell or "").strip() for cell in table.fields[label]]
    unknown = sorted({c for c in cells if c not in index})
    if unknown:
        column = table.source_columns[label]
        empty = " (an empty cell: label every pair, or leave the pair out)" if set(unknown) & set(NO_LABEL) else ""
        raise UserError(f"{path}: column {column!r} holds {listed(unknown, 10)} beside the --labels {list(names)}"
                         f"{empty}; expected only those two. Name the file's two labels with --labels=<different>,"
                         f"<same>, or map the label column with --columns={label}:<column>.")
    labels = np.asarray([index[c] for c in cells], np.float64)
    if len(set(labels.tolist())) < 2:
        raise UserError(f"{path}: every pair is labelled {names[int(labels[0])]!r}; binary metrics need pairs of "
                         f"both labels {list(names)}.")
    return PairSet(table.fields[first], table.fields[second], labels)


def format_binary(metrics: Dict[str, float]) -> str:
    """A plain-text table of `binary_pair_metrics` (x100), with each metric's threshold."""
    rows = [f"{'metric':<18} {'x100':>7} {'threshold':>10}"]
    for name in METRICS:
        threshold = metrics.get(THRESHOLDS.get(name, ""))
        note = f"{threshold:10.4f}" if threshold is not None else (
            f"{'(at f1)':>10}" if name in ("precision", "recall", "mcc") else "")
        rows.append(f"{name:<18} {metrics[name] * 100:7.2f} {note}".rstrip())
    return "\n".join(rows)


def format_pairs_comparison(baseline: Dict[str, float], results: Dict[str, float], baseline_name: str,
                            model_name: str) -> str:
    """A baseline's and a model's scores on the same pairs side by side (x100), with the change: the
    binary metrics where the pairs are labelled, else Spearman and Pearson."""
    names = METRICS if "f1" in results else ("spearman", "pearson")
    scale = 100.0 if "f1" in results else 1.0  # correlations are x100 already
    rows = [(name, baseline[name] * scale, results[name] * scale) for name in names]
    return comparison_table(rows, baseline_name, model_name, first="metric")
