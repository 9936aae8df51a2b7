import numpy as np
import pytest

from common.data.nli import NliPairs
from common.errors import UserError
from pause_tf.pu_data import pu_batches, pu_split, stream_weights


def _labels(n=3000, seed=0):
    return np.random.default_rng(seed).choice(3, size=n, p=[0.5, 0.3, 0.2]).astype(np.int32)


@pytest.mark.parametrize("percent", [1, 5, 10, 30, 50, 70, 100, 2.5])
def test_split_is_stratified(percent):
    labels = _labels()
    split = pu_split(labels, percent, seed=1)
    for c in range(3):
        n_c = (labels == c).sum()
        kept = (split == c).sum()
        assert kept == max(1, round(n_c * percent / 100))
        assert ((split == c) <= (labels == c)).all()  # a kept label is the true label
    assert ((split == -1) | (split == labels)).all()


def test_split_is_deterministic_per_seed():
    labels = _labels()
    np.testing.assert_array_equal(pu_split(labels, 5, seed=3), pu_split(labels, 5, seed=3))
    assert (pu_split(labels, 5, seed=3) != pu_split(labels, 5, seed=4)).any()
    with pytest.raises(ValueError, match=r"in \(0, 100\]"):
        pu_split(labels, 0, seed=0)


def test_stream_weights():
    assert stream_weights(3, 1 / 3, None, [True] * 3, True) == pytest.approx([1 / 9] * 3 + [2 / 3])
    assert stream_weights(3, 1 / 3, 0.05, [True] * 3, True) == pytest.approx([0.05 / 3] * 3 + [0.95])
    assert stream_weights(3, 1 / 3, None, [True] * 3, False) == pytest.approx([1 / 3] * 3 + [0])


def _pairs(labels):
    return NliPairs([f"p{i}" for i in range(len(labels))], [f"h{i}" for i in range(len(labels))], labels)


@pytest.mark.parametrize("fraction, expected", [(None, 1 / 3), (0.05, 0.05), (0.6, 0.6)])
def test_batches_mix_labelled_share_as_configured(fraction, expected):
    labels = _labels()
    split = pu_split(labels, 5, seed=0)
    ds = pu_batches(_pairs(labels), split, batch_size=64, prior=1 / 3, seed=0, num_classes=3,
                    labeled_batch_fraction=fraction)
    seen = np.concatenate([b[2].numpy() for b in ds.take(150)])
    assert (seen >= 0).mean() == pytest.approx(expected, abs=0.02)
    again = pu_batches(_pairs(labels), split, batch_size=64, prior=1 / 3, seed=0, num_classes=3,
                       labeled_batch_fraction=fraction)
    first = [b[0].numpy().tolist() for b in ds.take(3)]
    assert first == [b[0].numpy().tolist() for b in again.take(3)]  # same seed, same batches
    other = pu_batches(_pairs(labels), split, batch_size=64, prior=1 / 3, seed=1, num_classes=3,
                       labeled_batch_fraction=fraction)
    assert first != [b[0].numpy().tolist() for b in other.take(3)]
    p, h, y = next(iter(ds))
    assert p.shape == (64,)
    ids = [int(x.decode()[1:]) for x in p.numpy()]
    np.testing.assert_array_equal([int(x.decode()[1:]) for x in h.numpy()], ids)  # pairs stay aligned
    np.testing.assert_array_equal(y.numpy(), split[ids])


def test_all_labelled_has_no_unlabelled_stream():
    labels = _labels(300)
    ds = pu_batches(_pairs(labels), pu_split(labels, 100, 0), 32, 1 / 3, 0, 3)
    seen = np.concatenate([b[2].numpy() for b in ds.take(20)])
    assert (seen >= 0).all()


def test_split_hides_given_labels_only_and_keeps_unlabelled_rows():
    labels = _labels()
    labels[::4] = -1  # a real unlabelled pool
    split = pu_split(labels, 50, seed=0)
    assert (split[labels == -1] == -1).all()
    for c in range(3):
        assert (split == c).sum() == round((labels == c).sum() * 0.5)
    np.testing.assert_array_equal(pu_split(labels, 100, seed=0), labels)


def test_priors_are_estimated_per_class_and_weight_the_class_streams():
    from pause_tf.pu_data import estimate_priors

    labels = np.array([0] * 30 + [1] * 70 + [-1] * 500)
    assert estimate_priors(labels, 2) == pytest.approx((0.3, 0.7))
    with pytest.raises(ValueError, match=r"labelled pairs per class \[30, 70, 0\]; every class needs at least one"):
        estimate_priors(labels, 3)
    # Equal priors give the original mixing; unequal ones split the labelled share by prior.
    assert stream_weights(2, (0.3, 0.7), None, [True, True], True) == pytest.approx([0.15, 0.35, 0.5])
    assert stream_weights(3, (1 / 3,) * 3, None, [True] * 3, True) == pytest.approx(
        stream_weights(3, 1 / 3, None, [True] * 3, True))


def test_unlabelled_rows_of_the_data_reach_the_unlabelled_stream():
    labels = np.array([0, 1, 2] * 10 + [-1] * 270, np.int32)  # 30 labelled, 270 unlabelled pairs
    split = pu_split(labels, 100, seed=0)
    ds = pu_batches(_pairs(labels), split, batch_size=30, prior=1 / 3, seed=0, num_classes=3)
    rows = [int(x.decode()[1:]) for b in ds.take(40) for x in b[0].numpy()]
    unlabelled = [r for r in rows if r >= 30]
    assert len(unlabelled) / len(rows) == pytest.approx(2 / 3, abs=0.03)
    assert len(set(unlabelled)) == 270  # every unlabelled pair of the file is used


def _read(labels, label_columns=("label",)):
    labels = np.asarray(labels, np.int32)
    return NliPairs([f"p{i}" for i in range(len(labels))], [f"h{i}" for i in range(len(labels))], labels,
                    read=len(labels), label_columns=label_columns)


def test_labels_that_cannot_train_pause_are_refused_with_advice_that_fits():
    from pause_tf.pu_data import check_labels

    names = ("entailment", "neutral", "contradiction")
    # No labelled pair: refused whatever the priors, naming what was read and --columns.
    for given in (False, True):
        with pytest.raises(UserError, match=r"^d.tsv: PAUSE needs labelled pairs of each class \['entailment', "
                                            r"'neutral', 'contradiction'\] beside unlabelled ones, but its label "
                                            r"column 'Quality' is empty or '-' in all 4 pairs; label some pairs, or "
                                            r"map the column that holds the labels with --columns=label:<column>\.$"):
            check_labels(_read([-1] * 4, ("Quality",)), names, ["d.tsv"], priors_given=given)
    with pytest.raises(UserError, match=r"but it has no label column \(looked for 'label' and 'gold_label'\); map"):
        check_labels(_read([-1] * 4, ()), names, ["d.tsv"], priors_given=True)
    # A class without labelled pairs: --labels for the classes present, or the priors (PU data).
    with pytest.raises(UserError) as error:
        check_labels(_read([0, 1, 1, -1]), names, ["d.tsv"], priors_given=False)
    assert str(error.value) == (
        "d.tsv: no labelled pair of ['contradiction'] (labelled pairs per class: 1/2/0 entailment/neutral/"
        "contradiction), so its prior cannot be read off the labelled pairs; if the data has no such pairs, name the "
        "classes it has: --labels=entailment,neutral; if they are among the unlabelled pairs, give every class's prior "
        "in --labels order: --class_priors=<p>,<p>,<p>.")
    check_labels(_read([0, 1, 1, -1]), names, ["d.tsv"], priors_given=True)  # positive-unlabelled data
    with pytest.raises(UserError, match=r"per class: 3/0 paraphrase/other\), so its prior cannot be read off the "
                                        r"labelled pairs; give every class's prior in --labels order: "
                                        r"--class_priors=<p>,<p>\.$"):
        check_labels(_read([0, 0, 0, -1]), ("paraphrase", "other"), ["d.tsv"], priors_given=False)
    check_labels(_read([0, 1, 2, -1]), names, ["d.tsv"], priors_given=False)
