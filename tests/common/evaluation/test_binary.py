"""Binary pair metrics (sentence-transformers' BinaryClassificationEvaluator for cosine similarity)."""

import numpy as np
import pytest

from common.errors import UserError
from common.evaluation.binary import (binary_pair_metrics, format_binary, format_pairs_comparison, is_binary,
                                      pair_columns, read_labelled_pairs)


def _reference(scores, labels):
    """Brute force: every candidate threshold (above the highest score, each midpoint between
    neighbouring distinct scores, the lowest score) tried from the highest down, predictions
    `score >= threshold`; the first best wins. Average precision from its definition."""
    scores, labels = np.asarray(scores, np.float64), np.asarray(labels)
    distinct = np.unique(scores)[::-1]
    cuts = [(a + b) / 2 for a, b in zip(distinct[:-1], distinct[1:])] + [distinct[-1]]
    candidates = [np.nextafter(distinct[0], np.inf)] + cuts
    best = {"accuracy": (-1.0, None), "f1": (0.0, 0.0, 0.0, 0.0)}
    for i, t in enumerate(candidates):
        predicted = scores >= t
        accuracy = float(np.mean(predicted == (labels == 1)))
        if accuracy > best["accuracy"][0]:
            best["accuracy"] = (accuracy, t)
        tp = int(np.sum(predicted & (labels == 1)))
        if i and tp:
            precision, recall = tp / predicted.sum(), tp / labels.sum()
            f1 = 2 * precision * recall / (precision + recall)
            if f1 > best["f1"][0]:
                best["f1"] = (f1, precision, recall, t)
    ap, previous_recall = 0.0, 0.0
    for t in distinct:
        predicted = scores >= t
        tp = np.sum(predicted & (labels == 1))
        recall = tp / labels.sum()
        ap += (recall - previous_recall) * tp / predicted.sum()
        previous_recall = recall
    return best, ap


def test_a_hand_worked_example():
    metrics = binary_pair_metrics(np.array([0.9, 0.8, 0.7, 0.6, 0.5]), np.array([1, 0, 1, 1, 0]))
    # The best cut for both is after the fourth score: 3 of 4 predicted pairs right, every positive found.
    assert metrics == pytest.approx({
        "accuracy": 0.8, "accuracy_threshold": 0.55, "f1": 6 / 7, "f1_threshold": 0.55, "precision": 0.75,
        "recall": 1.0, "average_precision": (1 + 2 / 3 + 3 / 4) / 3, "mcc": 3 / np.sqrt(24), "pairs": 5,
        "positives": 3})


@pytest.mark.parametrize("seed", range(6))
def test_equals_a_brute_force_numpy_reference_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    scores = np.round(rng.uniform(-1, 1, n), 1)  # few distinct values: many ties
    labels = rng.integers(0, 2, n)
    labels[:2] = [0, 1]
    metrics = binary_pair_metrics(scores, labels)
    best, ap = _reference(scores, labels)
    assert (metrics["accuracy"], metrics["accuracy_threshold"]) == pytest.approx(best["accuracy"])
    assert (metrics["f1"], metrics["precision"], metrics["recall"], metrics["f1_threshold"]) == pytest.approx(
        best["f1"])
    assert metrics["average_precision"] == pytest.approx(ap)
    # Matthews correlation at the F1 threshold: Pearson's of the two 0/1 vectors, 0 where one is constant.
    predicted, actual = scores >= metrics["f1_threshold"], labels == 1
    constant = predicted.all() or not predicted.any()
    assert metrics["mcc"] == pytest.approx(0.0 if constant else np.corrcoef(predicted, actual)[0, 1])


def test_when_no_threshold_beats_calling_every_pair_different():
    # The positive scores lowest: the best accuracy predicts nothing, its threshold just above the highest score.
    metrics = binary_pair_metrics(np.array([0.9, 0.8, 0.1], np.float32), np.array([0, 0, 1]))
    assert metrics["accuracy"] == pytest.approx(2 / 3)
    assert metrics["accuracy_threshold"] == float(np.nextafter(np.float32(0.9), np.float32(np.inf)))
    assert metrics["average_precision"] == pytest.approx(1 / 3) and metrics["f1_threshold"] == pytest.approx(0.1)


def test_labels_must_be_zero_and_one():
    for labels in ([0, 0], [1, 2], [0, 1, 1]):
        with pytest.raises(ValueError):
            binary_pair_metrics(np.zeros(2), np.array(labels))


def test_labelled_pair_files_and_their_mistakes(tmp_path):
    path = tmp_path / "p.tsv"
    path.write_text("\ufeffQuality\tA\tB\nparaphrase\ta\tb\nother\tc\td\nparaphrase\te\tf\n", encoding="utf-8")
    columns = pair_columns(["sentence1:A", "sentence2:B", "label:Quality"])
    pairs = read_labelled_pairs(str(path), columns, ("other", "paraphrase"))
    assert pairs.scores.tolist() == [1, 0, 1] and pairs.sentences1 == ["a", "c", "e"] and is_binary(pairs)
    with pytest.raises(UserError, match=r"column 'Quality' holds \['other'\] beside the --labels \['no', "
                                        r"'paraphrase'\]; expected only those two\. Name the file's two labels"):
        read_labelled_pairs(str(path), columns, ("no", "paraphrase"))
    with pytest.raises(UserError, match=r"pairs take two labels"):
        read_labelled_pairs(str(path), columns, ("a", "b", "c"))
    with pytest.raises(UserError, match=r"maps both score and label"):
        pair_columns(["score:x", "label:y"])


def test_tables_print_every_metric_and_the_baseline_beside():
    metrics = binary_pair_metrics(np.array([0.9, 0.8, 0.7, 0.6, 0.5]), np.array([1, 0, 1, 1, 0]))
    table = format_binary(metrics).splitlines()
    assert table[1].split() == ["accuracy", "80.00", "0.5500"] and table[2].split() == ["f1", "85.71", "0.5500"]
    assert [row.split()[0] for row in table[1:]] == ["accuracy", "f1", "precision", "recall", "average_precision",
                                                     "mcc"]
    worse = {**metrics, "f1": 0.5}
    side = format_pairs_comparison(worse, metrics, "start", "trained").splitlines()
    assert side[0].split() == ["metric", "start", "trained", "change"]
    assert side[2].split() == ["f1", "50.00", "85.71", "+35.71"]
    scored = format_pairs_comparison({"spearman": 70.0, "pearson": 71.0}, {"spearman": 75.5, "pearson": 70.0},
                                     "start", "trained").splitlines()
    assert [row.split() for row in scored[1:]] == [["spearman", "70.00", "75.50", "+5.50"],
                                                   ["pearson", "71.00", "70.00", "-1.00"]]
