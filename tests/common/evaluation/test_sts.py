import os

import numpy as np
import pytest
from scipy.stats import spearmanr

from common.data import sts as sts_data
from common.evaluation import sts
from fixtures import PAIRS, write_sts_root


def _fake_embed(sentences):
    """Deterministic per-sentence vectors (a pure function of the text)."""
    out = []
    for s in sentences:
        rng = np.random.default_rng(abs(hash(s)) % (2**32))
        out.append(rng.normal(size=8))
    return np.array(out)


def test_loaders_skip_unscored_pairs_and_read_every_set(tmp_path):
    root = write_sts_root(str(tmp_path))
    subset = sts_data.load_sts_subset(root, "sts15", "belief")
    assert len(subset) == len(PAIRS) and subset.sentences1[0] == PAIRS[0][0]
    assert len(sts_data.load_stsb(root, "test")) == len(PAIRS)
    sick, labels = sts_data.load_sick(root, "test")
    assert len(sick) == len(PAIRS) and set(labels) == {"NEUTRAL"}


def test_aggregates_follow_their_definitions(tmp_path):
    root = write_sts_root(str(tmp_path))
    results = sts.evaluate_sts(_fake_embed, root)
    gold = np.array([float(s) for _, _, s in PAIRS])
    a = _fake_embed([p[0] for p in PAIRS])
    b = _fake_embed([p[1] for p in PAIRS])
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    per_subset = spearmanr(cos, gold).correlation * 100
    for year, subsets in sts_data.STS_SUBSETS.items():
        r = results[year]
        assert r["pairs"] == len(PAIRS) * len(subsets)
        assert r["mean"] == pytest.approx(per_subset) and r["wmean"] == pytest.approx(per_subset)
        pooled = spearmanr(np.tile(cos, len(subsets)), np.tile(gold, len(subsets))).correlation * 100
        assert r["all"] == pytest.approx(pooled)
    assert results["stsb"]["test"] == pytest.approx(per_subset)
    assert results["avg"] == pytest.approx(np.mean(sts.headline_numbers(results)))
    assert "sts12=" in sts.format_txt(results) and "stsb=" in sts.format_txt(results)


def test_weighted_mean_weights_by_pair_count():
    r = {"a": 10.0, "b": 40.0}
    assert np.average(list(r.values()), weights=[3, 1]) == 17.5


def test_bad_inputs_name_file_and_line(tmp_path):
    root = write_sts_root(str(tmp_path))
    gs = os.path.join(root, "downstream", "STS", "STS12-en-test", "STS.gs.MSRpar.txt")
    lines = open(gs).read().splitlines()
    lines[2] = "high"
    open(gs, "w").write("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"STS.gs.MSRpar.txt:3: expected a similarity score"):
        sts_data.load_sts_subset(root, "sts12", "MSRpar")
    csv = os.path.join(root, "downstream", "STS", "STSBenchmark", "sts-dev.csv")
    open(csv, "a").write("only\tthree\tcolumns\n")
    with pytest.raises(ValueError, match=r"sts-dev.csv:7: expected at least 7 tab-separated columns"):
        sts_data.load_stsb(root, "dev")
    inp = os.path.join(root, "downstream", "STS", "STS13-en-test", "STS.input.FNWN.txt")
    open(inp, "a").write("extra\tline\n")
    with pytest.raises(ValueError, match=r"STS.input.FNWN.txt has 8 lines but .*STS.gs.FNWN.txt has 7"):
        sts_data.load_sts_subset(root, "sts13", "FNWN")


def test_missing_data_points_to_the_readme(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"Data directory not found: .*STS12-en-test.*docs/data.md"):
        sts_data.load_sts_subset(str(tmp_path), "sts12", "MSRpar")


@pytest.mark.large
def test_minilm_reproduces_the_published_scores(minilm_encoder, data_path):
    """all-MiniLM-L6-v2 in MTEB (embeddings-benchmark/mtebpaper); SICK-R on SentEval's 4927 pairs."""
    from common.loading.embedding import embed_sentences

    fn = minilm_encoder.embedding_function()  # batches sorted by token count
    results = sts.evaluate_sts(lambda s: embed_sentences(fn, s, 128, progress=False), data_path)
    published = {"sts12": 72.37, "sts13": 80.60, "sts14": 75.59, "sts15": 85.39, "sts16": 78.99}
    for year, score in published.items():
        assert results[year]["all"] == pytest.approx(score, abs=0.1), year
    assert results["stsb"]["test"] == pytest.approx(82.03, abs=0.1)
    assert results["sickr"]["test"] == pytest.approx(77.2, abs=0.1)
    assert [results[y]["pairs"] for y in sts_data.STS_YEARS] == [3108, 1500, 3750, 3000, 1186]


def test_validation_scores_equal_the_full_evaluation(tmp_path):
    root = write_sts_root(str(tmp_path))
    full = sts.evaluate_sts(_fake_embed, root)
    assert sts.stsb_dev_spearman(_fake_embed, root) == pytest.approx(full["stsb"]["dev"])
    assert sts.sickr_test_spearman(_fake_embed, root) == pytest.approx(full["sickr"]["test"])


def test_own_pairs_score_as_the_built_in_evaluation_does(tmp_path):
    """STS-B test written as a file of scored pairs scores exactly what the built-in evaluation gives."""
    root = write_sts_root(str(tmp_path / "data"))
    rng = np.random.default_rng(0)
    table = {}

    def embed(sentences):
        for s in sentences:
            table.setdefault(s, rng.normal(size=8))
        return np.stack([table[s] for s in sentences])

    built_in = sts.evaluate_sts(embed, root)["stsb"]["test"]
    path = tmp_path / "pairs.csv"
    path.write_text("text_a,text_b,gold\n" + "".join(f'"{a}","{b}",{s}\n' for a, b, s in PAIRS))
    pairs = sts.read_scored_pairs(str(path), {"sentence1": "text_a", "sentence2": "text_b", "score": "gold"})
    scores = sts.score_pair_set(pairs, sts.embedding_similarities(embed, pairs))
    assert scores["spearman"] == pytest.approx(built_in, abs=1e-12) and scores["pairs"] == len(PAIRS)
    assert -100 <= scores["pearson"] <= 100
    path.write_text("sentence1,sentence2,score\na,b,high\n")
    with pytest.raises(ValueError, match=r"pairs.csv:2: expected a similarity score \(a number\), got 'high'"):
        sts.read_scored_pairs(str(path))
    path.write_text("sentence1,sentence2,score\na,b,1\n")
    with pytest.raises(ValueError, match=r"1 scored pair\(s\); a correlation needs at least two"):
        sts.read_scored_pairs(str(path))
