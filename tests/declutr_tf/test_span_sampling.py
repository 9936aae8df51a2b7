import numpy as np
import pytest

from declutr_tf.documents import read_documents, span_batches
from declutr_tf.span_sampling import SpanConfig, sample_spans, view_of


def _draws(config, n, num_tokens=4096, seed=0):
    rng = np.random.default_rng(seed)
    return [sample_spans(num_tokens, config, rng) for _ in range(n)]


@pytest.mark.parametrize("strategy, views", [("all", {"adjacent", "overlapping", "subsumed"}),
                                             ("adjacent", {"adjacent"}), ("subsumed", {"subsumed"})])
def test_counts_bounds_views_and_disjoint_anchors(strategy, views):
    config = SpanConfig(num_anchors=3, num_positives=2, min_span_len=16, max_span_len=128, sampling_strategy=strategy)
    seen = set()
    for anchors, positives in _draws(config, 500, num_tokens=900):
        assert len(anchors) == 3 and [len(p) for p in positives] == [2, 2, 2]
        for (s, e), group in zip(anchors, positives):
            assert 16 <= e - s <= 128 and 0 <= s and e <= 900
            for ps, pe in group:
                assert 0 <= ps < pe <= 900 and pe - ps <= 128
                if strategy != "subsumed":
                    assert pe - ps >= 16
                seen.add(view_of((s, e), (ps, pe)))
        ordered = sorted(anchors)
        assert all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:])), "anchors overlap"
    assert seen == views


def test_mean_length_fractions_follow_the_beta_means():
    config = SpanConfig(num_anchors=1, num_positives=1, min_span_len=32, max_span_len=512)
    draws = _draws(config, 10_000, num_tokens=1024)
    anchor = np.mean([(a[0][1] - a[0][0] - 32) / 480 for a, _ in draws])
    positive = np.mean([(p[0][0][1] - p[0][0][0] - 32) / 480 for _, p in draws])
    # Beta(4, 2) has mean 2/3, Beta(2, 4) 1/3; the floor removes about half a token (0.001).
    assert anchor == pytest.approx(2 / 3, abs=0.01)
    assert positive == pytest.approx(1 / 3, abs=0.01)


def test_same_seed_same_spans():
    config = SpanConfig(min_span_len=8, max_span_len=64)
    assert _draws(config, 20, 600, seed=3) == _draws(config, 20, 600, seed=3)
    assert _draws(config, 20, 600, seed=3) != _draws(config, 20, 600, seed=4)


def test_short_documents_are_skipped_and_counted(tmp_path):
    config = SpanConfig(num_anchors=2, min_span_len=4, max_span_len=10)  # documents need >= 40 tokens
    path = tmp_path / "docs.txt"
    path.write_text("\n".join([" ".join(f"w{i}" for i in range(50)), "too short", "",
                               " ".join(f"x{i}" for i in range(39)), " ".join(f"y{i}" for i in range(40))]) + "\n")
    docs = read_documents([str(path)], config)
    assert len(docs.tokens) == 2 and docs.skipped_short == 2
    with pytest.raises(ValueError, match=r"No usable document.*all 4 are shorter than 400 tokens"):
        read_documents([str(path)], SpanConfig(num_anchors=2, min_span_len=4, max_span_len=100))
    with pytest.raises(FileNotFoundError, match="DeCLUTR training data not found"):
        read_documents([str(tmp_path / "missing.txt")], config)


def test_span_batches_are_resumable_and_shaped(tmp_path):
    config = SpanConfig(num_anchors=2, num_positives=3, min_span_len=4, max_span_len=10)
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(" ".join(f"d{d}w{i}" for i in range(60)) for d in range(5)) + "\n")
    docs = read_documents([str(path)], config)
    full = [tuple(x.numpy().tolist() for x in b) for b in span_batches(docs, config, 2, seed=1).take(4)]
    resumed = [tuple(x.numpy().tolist() for x in b) for b in span_batches(docs, config, 2, seed=1, start_step=2).take(2)]
    assert full[2:] == resumed
    anchors, positives, step = full[0]
    assert len(anchors) == 4 and len(positives) == 12 and step == 0
    # Positives are grouped per anchor and come from the anchor's document.
    for i, anchor in enumerate(anchors):
        doc = anchor.split()[0].decode().split("w")[0]
        assert all(p.split()[0].decode().startswith(doc + "w") for p in positives[3 * i:3 * i + 3])
