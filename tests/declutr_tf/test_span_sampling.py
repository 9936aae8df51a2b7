import numpy as np
import pytest

from common.errors import UserError
from declutr_tf.documents import read_documents, span_batches
from declutr_tf.span_sampling import SpanConfig, sample_spans, span_statistics, view_of


def _draws(config, n, num_tokens=4096, seed=0):
    rng = np.random.default_rng(seed)
    return [sample_spans(num_tokens, config, rng) for _ in range(n)]


@pytest.mark.parametrize("strategy, views", [("all", {"adjacent", "overlapping", "subsumed"}),
                                             ("adjacent", {"adjacent"}), ("subsumed", {"subsumed"})])
def test_counts_bounds_views_and_anchor_cells(strategy, views):
    config = SpanConfig(num_anchors=3, num_positives=2, min_span_len=16, max_span_len=128, sampling_strategy=strategy)
    seen, cells = set(), set()
    for anchors, positives in _draws(config, 500, num_tokens=900):
        assert len(anchors) == 3 and [len(p) for p in positives] == [2, 2, 2]
        for (s, e), group in zip(anchors, positives):
            assert 16 <= e - s <= 128 and 0 <= s and e <= 900
            # Inside one whole cell of l_max tokens: 900 tokens hold 7, so never past token 896.
            assert s // 128 == (e - 1) // 128 and e <= 7 * 128
            cells.add(s // 128)
            for ps, pe in group:
                assert 0 <= ps < pe <= 900 and 16 <= pe - ps <= 128
                if strategy == "subsumed":
                    assert pe - ps <= e - s
                seen.add(view_of((s, e), (ps, pe)))
        # Neighbouring cells are removed with the chosen one: anchors are >= l_max tokens apart.
        ordered = sorted(anchors)
        assert all(b[0] - a[1] >= 128 for a, b in zip(ordered, ordered[1:])), ordered
    assert seen == views and cells == set(range(7))


@pytest.mark.parametrize("num_anchors", range(1, 13))
def test_the_shortest_documents_fit_every_anchor_l_max_apart(num_anchors):
    # 2A cells exactly: the end-cell rule has to keep enough candidates for the last anchors.
    config = SpanConfig(num_anchors=num_anchors, num_positives=1, min_span_len=2, max_span_len=6)
    for anchors, _ in _draws(config, 200, num_tokens=config.min_document_len):
        ordered = sorted(anchors)
        assert len(anchors) == num_anchors and all(b[0] - a[1] >= 6 for a, b in zip(ordered, ordered[1:]))


# The official `sample_anchor_positive_pairs` (JohnGiorgi/DeCLUTR@b78ac57, run with numpy only) over
# 30,000 draws of a 4,096-token document, A=2, P=2, spans 32-512, summarised by span_statistics.
OFFICIAL_4096 = {"anchor_length_fraction": 0.687, "positive_length_fraction": 0.374, "subsumed": 0.338,
                 "overlapping": 0.658, "adjacent": 0.004, "disjoint": 0.0, "anchors_within_192_of_edge": 0.251,
                 "anchors_within_256_of_edge": 0.266}
# 3,000 draws: a binomial share moves by about 1 point between seeds, lengths by 0.003.
TOLERANCE = {"anchor_length_fraction": 0.01, "positive_length_fraction": 0.01, "adjacent": 0.003, "disjoint": 0.0}


def test_placement_matches_the_official_sampler_on_a_4096_token_document():
    config = SpanConfig(num_anchors=2, num_positives=2, min_span_len=32, max_span_len=512)
    stats = span_statistics(_draws(config, 3000, num_tokens=4096, seed=0), 4096, config, edge_distances=(192, 256))
    off = {key: (round(stats[key], 4), expected) for key, expected in OFFICIAL_4096.items()
           if abs(stats[key] - expected) > TOLERANCE.get(key, 0.02)}
    assert not off, f"(ours, official) beyond tolerance: {off}"


def test_span_statistics_by_hand():
    config = SpanConfig(num_anchors=1, num_positives=4, min_span_len=1, max_span_len=10)
    # Anchor [2, 6) of a 20-token document; positives inside, overlapping, adjacent, containing it.
    draws = [([(2, 6)], [[(3, 5), (5, 9), (6, 8), (0, 10)]]), ([(15, 20)], [[(15, 20), (10, 15), (14, 16), (16, 18)]])]
    stats = span_statistics(draws, 20, config, edge_distances=(1, 3))
    assert stats["anchor_length_fraction"] == pytest.approx(4.5 / 10)
    assert stats["positive_length_fraction"] == pytest.approx(32 / 8 / 10)
    assert (stats["subsumed"], stats["overlapping"], stats["adjacent"]) == (3 / 8, 3 / 8, 2 / 8)
    assert (stats["anchors_within_1_of_edge"], stats["anchors_within_3_of_edge"]) == (0.5, 1.0)


def test_mean_length_fractions_follow_the_beta_means():
    config = SpanConfig(num_anchors=1, num_positives=1, min_span_len=32, max_span_len=512)
    draws = _draws(config, 10_000, num_tokens=1024)
    anchor = np.mean([(a[0][1] - a[0][0] - 32) / 480 for a, _ in draws])
    positive = np.mean([(p[0][0][1] - p[0][0][0] - 32) / 480 for _, p in draws])
    # Beta(4, 2) has mean 2/3, Beta(2, 4) 1/3; the floor removes about half a token (0.001).
    assert anchor == pytest.approx(2 / 3, abs=0.01)
    assert positive == pytest.approx(1 / 3, abs=0.01)


def test_subsumed_positive_lengths_scale_to_the_anchor():
    # The official "subsuming" rule: Beta(2, 4) over [l_min, l_anchor], not over [l_min, l_max] cut at l_anchor
    # (which would give a mean near 1/2 here).
    config = SpanConfig(num_anchors=1, num_positives=1, min_span_len=32, max_span_len=512, sampling_strategy="subsumed")
    fractions = [(p[0][0][1] - p[0][0][0] - 32) / (a[0][1] - a[0][0] - 32)
                 for a, p in _draws(config, 5000, num_tokens=1024) if a[0][1] - a[0][0] > 32]
    assert np.mean(fractions) == pytest.approx(1 / 3, abs=0.01)

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
    with pytest.raises(UserError, match=r"read 4 documents from 1 file, all shorter than the 400 words that "
                                        r"--num_anchors=2 --max_span_len=100 need \(median 39 words\); "
                                        r"--max_span_len=9 would use 3 of them, or give longer documents\.$"):
        read_documents([str(path)], SpanConfig(num_anchors=2, min_span_len=4, max_span_len=100))
    with pytest.raises(FileNotFoundError, match="Documents not found"):
        read_documents([str(tmp_path / "missing.txt")], config)


def test_span_batches_are_resumable_and_shaped(tmp_path):
    config = SpanConfig(num_anchors=2, num_positives=3, min_span_len=4, max_span_len=10)
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(" ".join(f"d{d}w{i}" for i in range(60)) for d in range(5)) + "\n")
    docs = read_documents([str(path)], config)
    full = [tuple(x.numpy().tolist() for x in b) for b in span_batches(docs, config, 2, seed=1).take(4)]
    resumed = [tuple(x.numpy().tolist() for x in b)
               for b in span_batches(docs, config, 2, seed=1, start_step=2).take(2)]
    assert full[2:] == resumed
    anchors, positives, step = full[0]
    assert len(anchors) == 4 and len(positives) == 12 and step == 0
    # Positives are grouped per anchor and come from the anchor's document.
    for i, anchor in enumerate(anchors):
        doc = anchor.split()[0].decode().split("w")[0]
        assert all(p.split()[0].decode().startswith(doc + "w") for p in positives[3 * i:3 * i + 3])
