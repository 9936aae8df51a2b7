"""SentEval's classifier, validation protocols and relatedness regressor (NumPy)."""

import dataclasses

import numpy as np
import pytest

from common.evaluation.senteval import classifier as clf
from common.evaluation.senteval.configs import CONFIGS, ClassifierConfig, RelatednessConfig, get_config

FAST = CONFIGS["fast"]


def _blobs(n, dim, nclasses, separation, seed):
    """Unit Gaussian noise around class centres `separation` * (one-hot of the class)."""
    rng = np.random.default_rng(seed)
    centres = np.eye(nclasses, dim) * separation
    y = np.arange(n) % nclasses
    return (centres[y] + rng.normal(size=(n, dim))).astype(np.float32), y


def test_folds_are_stratified_and_deterministic_for_a_seed():
    y = np.array([0] * 30 + [1] * 20 + [2] * 10)
    a, b, c = clf.stratified_folds(y, 5, 1111), clf.stratified_folds(y, 5, 1111), clf.stratified_folds(y, 5, 7)
    assert all(np.array_equal(p[1], q[1]) for p, q in zip(a, b))
    assert any(not np.array_equal(p[1], q[1]) for p, q in zip(a, c))
    assert np.array_equal(np.sort(np.concatenate([test for _, test in a])), np.arange(len(y)))
    for train, test in a:
        assert np.bincount(y[test]).tolist() == [6, 4, 2] and len(np.intersect1d(train, test)) == 0


@pytest.mark.parametrize("nhid", [0, 6])
def test_backward_matches_finite_differences(nhid):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(5, 4)), rng.integers(0, 3, size=5)
    params = {k: v.astype(np.float64) for k, v in clf.init_params(4, 3, nhid, 2, np.random.RandomState(0)).items()}
    mask = None if nhid == 0 else (rng.random((5, nhid)) > 0.3) / 0.7

    def loss(p):
        logits, _ = clf.forward(p, x, mask)
        logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        return -logp[:, np.arange(5), y].sum()  # summed over both models: each model's gradient is its own

    logits, acts = clf.forward(params, x, mask)
    grads = clf.backward(params, x, acts, clf.cross_entropy_grad(logits, y, "sum"), mask)
    for name, value in params.items():
        flat, numeric = value.reshape(-1), np.zeros(value.size)
        for i in range(value.size):
            old = flat[i]
            flat[i] = old + 1e-6
            up = loss(params)
            flat[i] = old - 1e-6
            down = loss(params)
            flat[i] = old
            numeric[i] = (up - down) / 2e-6
        np.testing.assert_allclose(grads[name].reshape(-1), numeric, rtol=1e-5, atol=1e-7, err_msg=name)


# What the original SentEval (facebookresearch/SentEval at its last commit, run with PyTorch 2.13.0 on the
# CPU) printed for `_senteval_fixture` below, and `torch.manual_seed(1111); nn.Linear(4, 3)`.
SENTEVAL_SPLIT = {1111: (89.0, 86.0), 1112: (87.0, 81.0)}  # SplitClassifier (devacc, acc), 5 classes
SENTEVAL_KFOLD = {1111: (83.2, 86.0), 1112: (84.8, 85.0)}  # KFoldClassifier, kfold 5, 5 classes
SENTEVAL_INNER = {1111: (97.67, 94.66), 1112: (96.92, 95.67)}  # InnerKFoldClassifier, kfold 5, 2 classes
TORCH_LINEAR_1111 = (
    [[-0.03940415382385254, -0.41502052545547485, 0.30094748735427856, -0.1028241515159607],
     [0.45479655265808105, 0.09818470478057861, -0.01790308952331543, 0.44458913803100586],
     [0.014520049095153809, 0.312546968460083, -0.18775111436843872, 0.47560203075408936]],
    [0.3746800422668457, 0.21859586238861084, -0.10553669929504395])


def _senteval_fixture(nclasses, n, dim=16, seed=0):
    rs = np.random.RandomState(seed)
    y = rs.randint(0, nclasses, size=n)
    centres = rs.normal(size=(nclasses, dim))
    return (centres[y] * 0.6 + rs.normal(size=(n, dim))).astype(np.float32), y.astype(np.int64)


def test_initialisation_draws_pytorchs_nn_linear_for_the_seed():
    params = clf.init_params(4, 3, 0, 2, clf.RandomStreams.from_seed(1111).init)
    weight, bias = TORCH_LINEAR_1111
    for model in range(2):  # every model of the bank starts from the same draw
        np.testing.assert_array_equal(params["w"][model].T, np.asarray(weight, np.float32))
        np.testing.assert_array_equal(params["b"][model], np.asarray(bias, np.float32))


@pytest.mark.parametrize("seed", [1111, 1112])
def test_protocols_give_the_original_senteval_scores_at_each_seed(seed):
    """The same features and seed give the original code's numbers, multi-class included (issue: SST5, TREC)."""
    config = dataclasses.replace(CONFIGS["pause"], kfold=5)
    x, y = _senteval_fixture(5, 600)
    split = clf.split_validation((x[:400], y[:400]), (x[400:500], y[400:500]), (x[500:], y[500:]), 5, config, seed)
    kfold = clf.kfold_validation(x[:500], y[:500], x[500:], y[500:], 5, config, seed)
    x2, y2 = _senteval_fixture(2, 300, seed=1)
    inner = clf.inner_kfold_validation(x2, y2, 2, config, seed)
    assert (split.devacc, split.acc) == SENTEVAL_SPLIT[seed]
    assert (kfold.devacc, kfold.acc) == SENTEVAL_KFOLD[seed]
    assert (inner.devacc, inner.acc) == SENTEVAL_INNER[seed]


def test_seeds_outside_numpys_legacy_range_are_refused():
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        clf.RandomStreams.from_seed(-1)
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        clf.RandomStreams.from_seed(2 ** 32)


def test_optimizers_follow_pytorch_update_rules():
    params = {"w": np.array([[1.0, -2.0]], np.float32)}
    grads = {"w": np.array([[0.5, 0.0]], np.float32)}
    adam = clf._Adam(params)
    adam.step(params, {"w": grads["w"].copy()})
    # First Adam step: m_hat / (sqrt(v_hat) + eps) = g / (|g| + eps); zero gradient, zero step.
    np.testing.assert_allclose(params["w"], [[1.0 - 1e-3 * 0.5 / (0.5 + 1e-8), -2.0]], rtol=1e-6)
    params = {"w": np.array([[1.0, -2.0]], np.float32)}
    rms = clf._RMSprop(params)
    g = grads["w"].copy()
    clf._add_weight_decay({"w": g}, params, np.array([0.1], np.float32))  # g + 0.1 * p
    rms.step(params, {"w": g})
    decayed = np.array([[0.5 + 0.1 * 1.0, 0.0 + 0.1 * -2.0]])
    expected = np.array([[1.0, -2.0]]) - 1e-2 * decayed / (np.sqrt(0.01 * decayed * decayed) + 1e-8)
    np.testing.assert_allclose(params["w"], expected, rtol=1e-5)


@pytest.mark.parametrize("config", [ClassifierConfig(optim="rmsprop", batch_size=16, tenacity=2, epoch_size=1),
                                    ClassifierConfig(nhid=5, dropout=0.2, batch_size=16, tenacity=2, epoch_size=1)])
def test_the_penalty_bank_equals_training_each_penalty_alone(config):
    x, y = _blobs(80, 6, 3, 1.0, seed=1)
    bank = clf.train_classifiers(x, y, 3, [1e-5, 1e-2], config, seed=3, validation_split=0.2)
    alone = [clf.train_classifiers(x, y, 3, [reg], config, seed=3, validation_split=0.2)[0] for reg in (1e-5, 1e-2)]
    for b, a in zip(bank, alone):
        assert b.devacc == a.devacc and b.epochs == a.epochs and b.l2reg == a.l2reg
        for name in a.params:
            np.testing.assert_allclose(b.params[name], a.params[name], rtol=1e-6, atol=1e-7)


def test_training_is_deterministic_for_a_seed():
    x, y = _blobs(60, 4, 2, 1.0, seed=2)
    config = ClassifierConfig(batch_size=8, epoch_size=1, tenacity=1)
    a, b = (clf.train_classifiers(x, y, 2, [1e-4], config, seed=5, validation_split=0.1)[0] for _ in range(2))
    c = clf.train_classifiers(x, y, 2, [1e-4], config, seed=6, validation_split=0.1)[0]
    np.testing.assert_array_equal(a.params["w"], b.params["w"])
    assert not np.array_equal(a.params["w"], c.params["w"])


def test_early_stopping_counts_checks_as_senteval():
    x, y = _blobs(40, 3, 2, 1.0, seed=4)
    # Two all-zero dev points with different labels: every model scores exactly 50 % at every check, so only the
    # first check improves and training stops at check tenacity + 2.
    dev = (np.zeros((2, 3), np.float32), np.array([0, 1]))
    for tenacity, epoch_size in ((0, 1), (2, 3)):
        config = ClassifierConfig(batch_size=16, tenacity=tenacity, epoch_size=epoch_size)
        model = clf.train_classifiers(x, y, 2, [1e-5], config, seed=0, validation_data=dev)[0]
        assert model.devacc == 0.5 and model.epochs == (tenacity + 2) * epoch_size
    # Without early stopping in reach, the loop runs while epochs <= max_epoch (checks at 0, 2, 4, 6).
    config = ClassifierConfig(batch_size=16, tenacity=100, epoch_size=2, max_epoch=6)
    assert clf.train_classifiers(x, y, 2, [1e-5], config, seed=0, validation_data=dev)[0].epochs == 8


def test_a_separable_task_reaches_100_percent_with_every_protocol():
    # Large enough that the 5 % early-stopping split of the refits is not a handful of points.
    x, y = _blobs(600, 8, 2, 12.0, seed=0)
    result = clf.inner_kfold_validation(x, y, 2, FAST, seed=1111)
    assert result.acc >= 99.5 and result.devacc >= 99.5 and len(result.l2regs) == FAST.kfold
    x, y = _blobs(600, 8, 3, 12.0, seed=1)
    result = clf.kfold_validation(x[:400], y[:400], x[400:], y[400:], 3, FAST, seed=1111)
    assert result.acc >= 99.5 and result.predictions.shape == (200,)
    result = clf.split_validation((x[:300], y[:300]), (x[300:400], y[300:400]), (x[400:], y[400:]), 3,
                                  get_config("fast", nhid=8), seed=1111)
    assert result.acc >= 99.5 and result.l2regs[0] in clf.L2_REGS


def test_shuffled_labels_stay_near_chance():
    x, _ = _blobs(1000, 16, 2, 4.0, seed=3)
    y = np.random.default_rng(0).integers(0, 2, size=len(x))  # labels independent of the features
    result = clf.split_validation((x[:500], y[:500]), (x[500:600], y[500:600]), (x[600:], y[600:]), 2, FAST,
                                  seed=1111)
    assert abs(result.acc - 50.0) < 8.0  # 400 test points: chance +- 3.2 standard deviations
    result = clf.kfold_validation(x[:300], y[:300], x[600:], y[600:], 2, FAST, seed=1111)
    assert abs(result.acc - 50.0) < 8.0


def test_noreg_uses_only_the_tiny_penalty():
    x, y = _blobs(60, 4, 3, 3.0, seed=5)
    result = clf.split_validation((x[:30], y[:30]), (x[30:45], y[30:45]), (x[45:], y[45:]), 3, FAST, seed=1,
                                  noreg=True)
    assert result.l2regs == (1e-9,)


def test_relatedness_targets_are_senteval_encoding():
    scores = np.array([1.0, 3.6, 5.0, 0.4, 0.0])
    expected = np.array([[1, 0, 0, 0, 0], [0, 0, 0.4, 0.6, 0], [0, 0, 0, 0, 1], [0.4, 0, 0, 0, 0], [0, 0, 0, 0, 0]])
    targets = clf.relatedness_targets(scores)
    np.testing.assert_allclose(targets, expected, atol=1e-6)
    np.testing.assert_allclose(targets[:3] @ np.arange(1, 6), scores[:3], atol=1e-6)


def test_relatedness_regressor_learns_a_linear_score():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 6)).astype(np.float32)
    scores = np.clip(3.0 + x[:, 0] - 0.5 * x[:, 1], 1.0, 5.0)
    config = RelatednessConfig(epochs_per_check=5)
    result = clf.fit_relatedness(x[:200], scores[:200], x[200:250], scores[200:250], x[250:], config, seed=1111)
    assert result.devpearson > 0.9 and clf.pearson(result.predictions, scores[250:]) > 0.9
    assert result.predictions.min() >= 1.0 and result.predictions.max() <= 5.0
    again = clf.fit_relatedness(x[:200], scores[:200], x[200:250], scores[200:250], x[250:], config, seed=1111)
    np.testing.assert_array_equal(result.predictions, again.predictions)


def test_configs_are_the_ones_senteval_users_know():
    fast, default, pause = CONFIGS["fast"], CONFIGS["default"], CONFIGS["pause"]
    assert (fast.kfold, fast.classifier.optim, fast.classifier.batch_size, fast.classifier.tenacity,
            fast.classifier.epoch_size) == (5, "rmsprop", 128, 3, 2)
    assert (default.kfold, default.classifier.optim, default.classifier.batch_size, default.classifier.tenacity,
            default.classifier.epoch_size, default.classifier.max_epoch) == (10, "adam", 64, 5, 4, 200)
    assert CONFIGS["test"].classifier == default.classifier and CONFIGS["test"].kfold == 10
    assert pause.kfold == 10 and pause.classifier == fast.classifier
    assert get_config("default", nhid=50).classifier.nhid == 50
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.kfold = 3
    with pytest.raises(ValueError, match="optim"):
        ClassifierConfig(optim="sgd")
    with pytest.raises(ValueError, match="Unknown SentEval config"):
        get_config("slow")
