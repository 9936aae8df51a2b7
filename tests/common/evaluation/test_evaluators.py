"""The evaluator contract: STS-B dev, your own scored pairs and a BEIR folder, chosen by `dev_evaluator`."""

import numpy as np
import pytest
import tensorflow as tf
from scipy.stats import pearsonr, spearmanr

from common.data.sts import PairSet
from common.errors import UserError
from common.evaluation.evaluators import (Evaluator, RetrievalEvaluator, ScoredPairsEvaluator, StsbDevEvaluator,
                                          dev_evaluator)
from common.evaluation.retrieval import write_beir
from fixtures import write_sts_root

WORDS = ["cat", "dog", "sat", "ran", "mat", "park", "rain", "sun"]


@tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
def bag_of_words(sentences):
    """A deterministic embedding: counts of WORDS in each sentence (1 added so no vector is zero)."""
    tokens = tf.strings.split(sentences)
    counts = [tf.reduce_sum(tf.cast(tf.equal(tokens, w), tf.float32), axis=1) for w in WORDS]
    return tf.stack(counts, axis=1) + 1.0


def cosines(first, second):
    a, b = bag_of_words(tf.constant(first)).numpy(), bag_of_words(tf.constant(second)).numpy()
    return np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


FIRST = ["the cat sat", "a dog ran", "rain rain", "the sun", "cat on the mat", "dog in the park"]
SECOND = ["the cat sat on the mat", "a dog ran in the park", "sun", "the sun sat", "a cat", "the park"]


def write_pairs(path, scores, header="sentence1\tsentence2\tscore"):
    with open(path, "w") as f:
        f.write(header + "\n")
        f.writelines(f"{a}\t{b}\t{s}\n" for a, b, s in zip(FIRST, SECOND, scores))
    return str(path)


def test_every_evaluator_fills_in_the_contract(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    for evaluator in (StsbDevEvaluator(data), ScoredPairsEvaluator(PairSet(FIRST, SECOND, np.arange(6.0)))):
        assert isinstance(evaluator, Evaluator) and evaluator.name and evaluator.greater_is_better
        found = evaluator(bag_of_words)
        assert evaluator.primary_metric in found and np.isfinite(found[evaluator.primary_metric])
    with pytest.raises(TypeError):
        Evaluator()  # the call is abstract: a subclass that forgets it cannot be made


def test_scored_pairs_give_spearman_and_pearson_of_the_cosines_as_numpy_does():
    gold = np.array([4.8, 4.1, 0.3, 2.5, 3.0, 1.0])
    found = ScoredPairsEvaluator(PairSet(FIRST, SECOND, gold))(bag_of_words)
    expected = cosines(FIRST, SECOND)
    assert found["dev_spearman"] == pytest.approx(100 * spearmanr(expected, gold)[0], abs=1e-4)
    assert found["dev_pearson"] == pytest.approx(100 * pearsonr(expected, gold)[0], abs=1e-4)


def test_a_cross_encoders_scores_are_rated_like_the_cosines():
    gold = np.array([4.8, 4.1, 0.3, 2.5, 3.0, 1.0])
    evaluator = ScoredPairsEvaluator(PairSet(FIRST, SECOND, gold))
    score_fn = lambda a, b: tf.constant(cosines([s.decode() for s in a.numpy()],  # noqa: E731
                                                [s.decode() for s in b.numpy()]))
    assert evaluator.scores_cross_encoders
    np.testing.assert_allclose(evaluator.pair_predictions(score_fn), cosines(FIRST, SECOND), rtol=1e-6)
    assert evaluator.score_pairs(score_fn)["dev_spearman"] == pytest.approx(
        evaluator(bag_of_words)["dev_spearman"], abs=1e-4)


def test_stsb_dev_without_its_data_scores_nothing_rather_than_fail(tmp_path):
    evaluator = StsbDevEvaluator(str(tmp_path / "nowhere"))
    assert evaluator(bag_of_words) == {} and evaluator.metrics_of(np.ones(3)) == {}


def test_dev_evaluator_reads_the_task_from_the_data(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    assert isinstance(dev_evaluator(data), StsbDevEvaluator)
    scored = dev_evaluator(data, write_pairs(tmp_path / "scored.tsv", [4.8, 4.1, 0.3, 2.5, 3.0, 1.0]))
    assert isinstance(scored, ScoredPairsEvaluator) and scored.primary_metric == "dev_spearman"
    renamed = dev_evaluator(data, write_pairs(tmp_path / "renamed.tsv", [5, 4, 0, 2, 3, 1], "a\tb\tsimilarity"),
                            dev_columns={"sentence1": "a", "sentence2": "b", "score": "similarity"})
    assert renamed(bag_of_words)["dev_spearman"] == pytest.approx(
        100 * spearmanr(cosines(FIRST, SECOND), [5, 4, 0, 2, 3, 1])[0], abs=1e-4)
    beir = write_beir(str(tmp_path / "beir"), {"q1": "cat sat", "q2": "dog park"},
                      {"d1": "the cat sat on the mat", "d2": "a dog ran in the park", "d3": "sun and rain"},
                      {"q1": {"d1": 1}, "q2": {"d2": 1}}, split="dev")
    retrieval = dev_evaluator(data, beir)
    assert isinstance(retrieval, RetrievalEvaluator) and not retrieval.scores_cross_encoders
    found = retrieval(bag_of_words)
    assert found["dev_ndcg_at_10"] == pytest.approx(1.0) and found["dev_accuracy_at_1"] == pytest.approx(1.0)


@pytest.mark.parametrize("dev_task,expected", [
    ("retrieval", r"--dev_task=retrieval needs a BEIR folder .* is a file"),
    ("binary", r"--dev_task=binary needs labels 0 and 1; .* has 0\.3, 1, 2\.5, 3, 4\.1, 4\.8; give "
               r"--dev_task=scored"),
    ("guess", r"--dev_task must be one of auto, scored, binary, retrieval; got 'guess'"),
])
def test_a_task_that_does_not_fit_the_data_is_one_clear_error(tmp_path, dev_task, expected):
    path = write_pairs(tmp_path / "scored.tsv", [4.8, 4.1, 0.3, 2.5, 3.0, 1.0])
    with pytest.raises(UserError, match=expected):
        dev_evaluator(str(tmp_path), path, dev_task)


def test_missing_dev_data_says_so_first(tmp_path):
    with pytest.raises(UserError, match=r"^--dev_data=.*no-such\.tsv: no such file or folder; give a pair file"):
        dev_evaluator(str(tmp_path), str(tmp_path / "no-such.tsv"))
    with pytest.raises(UserError, match=r"--dev_task=scored describes --dev_data, which is not given"):
        dev_evaluator(str(tmp_path), "", "scored")


def test_binary_dev_pairs_are_scored_as_the_binary_pair_metrics_of_the_cosines(tmp_path):
    from common.evaluation.binary import binary_pair_metrics
    from common.evaluation.evaluators import BinaryPairsEvaluator

    labels = [1, 1, 0, 0, 1, 0]
    evaluator = dev_evaluator(str(tmp_path), write_pairs(tmp_path / "binary.tsv", labels))
    assert isinstance(evaluator, BinaryPairsEvaluator) and evaluator.primary_metric == "dev_average_precision"
    found = evaluator(bag_of_words)
    expected = binary_pair_metrics(cosines(FIRST, SECOND), np.asarray(labels, np.float64))
    for name in ("accuracy", "accuracy_threshold", "f1", "f1_threshold", "precision", "recall",
                 "average_precision", "mcc"):
        assert found[f"dev_{name}"] == pytest.approx(expected[name], abs=1e-6), name
    assert "dev_pairs" not in found  # counts are not metrics to log or select on
