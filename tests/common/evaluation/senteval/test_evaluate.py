"""evaluate_senteval end to end on tiny fixtures, DeCLUTR's averages, and senteval_eval.py's main."""

import hashlib
import json
import os

import numpy as np
import pytest

from common.evaluation import sts
from common.evaluation.senteval import evaluate as ev
from common.evaluation.senteval.cache import EmbeddingCache
from common.evaluation.senteval.configs import CONFIGS
from in_process import run_script
from senteval_fixtures import write_senteval_root


class FakeEmbed:
    """Deterministic 8-d vectors, a pure function of the text; records every call."""

    def __init__(self):
        self.calls = []

    def __call__(self, sentences, desc="encoding"):
        self.calls.append((desc, len(sentences)))
        return np.stack([self.vector(s) for s in sentences])

    @staticmethod
    def vector(sentence):
        seed = int.from_bytes(hashlib.sha256(sentence.encode()).digest()[:4], "little")
        return np.random.default_rng(seed).normal(size=8).astype(np.float32)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return write_senteval_root(str(tmp_path_factory.mktemp("senteval")))


@pytest.fixture(scope="module")
def run(root):
    embed, cache = FakeEmbed(), EmbeddingCache()
    results = ev.evaluate_senteval(embed, root, None, CONFIGS["fast"], 1111, cache, model_name="fake")
    return results, embed, cache


def test_every_available_task_runs_with_scores_counts_and_seconds(run):
    results, _, _ = run
    assert set(results["tasks"]) == {"MR", "CR", "SUBJ", "MPQA", "SST2", "SST5", "TREC", "MRPC", "SICK-E", "SICK-R",
                                     "STS-B", "SNLI", "STS12", "STS13", "STS14", "STS15", "STS16", "Tense"}
    assert set(results["skipped"]) == set(ev.PROBING_TASKS) - {"Tense"}
    for task, r in results["tasks"].items():
        assert r["seconds"] >= 0 and all(n > 0 for n in r["samples"].values()), task
    for task in ("MR", "TREC", "SST5", "SICK-E", "SNLI", "Tense"):
        assert 0 <= results["tasks"][task]["acc"] <= 100 and 0 <= results["tasks"][task]["devacc"] <= 100
    assert results["tasks"]["CR"]["samples"] == {"all": 26} and results["tasks"]["CR"]["ntest"] == 26
    assert results["tasks"]["SICK-E"]["samples"] == {"train": 20, "dev": 10, "test": 10}
    assert 0 <= results["tasks"]["MRPC"]["f1"] <= 100
    for task in ("SICK-R", "STS-B"):
        assert {"devpearson", "pearson", "spearman", "mse", "ndev", "ntest"} <= set(results["tasks"][task])
    assert set(results["tasks"]["STS12"]) >= {"all", "mean", "wmean", "pearson", "subsets", "pairs"}
    assert results["config"]["kfold"] == 5 and results["seed"] == 1111
    json.dumps(results)  # plain JSON types only


def test_each_split_is_embedded_once_and_sick_is_shared(run, root):
    results, embed, cache = run
    descs = [d for d, _ in embed.calls]
    assert len(descs) == len(set(descs))  # one call per (task, split)
    assert not any(d.startswith("SICK-R") for d in descs)  # SICK-R reused SICK-E's embeddings
    assert cache.hits == 3 and results["embedding_cache"] == {"hits": 3, "misses": len(descs)}
    n_calls = len(embed.calls)
    again = ev.evaluate_senteval(embed, root, ["MR", "sts12"], CONFIGS["fast"], 1111, cache, model_name="fake")
    assert len(embed.calls) == n_calls and again["tasks"]["MR"] == {**results["tasks"]["MR"],
                                                                     "seconds": again["tasks"]["MR"]["seconds"]}
    ev.evaluate_senteval(embed, root, ["MR"], CONFIGS["fast"], 1111, cache, model_name="other")
    assert len(embed.calls) == n_calls + 1  # the model name is part of the key


def test_empty_sentences_reach_the_encoder_as_a_period(root):
    seen = []

    def embed(sentences, desc):
        seen.extend(sentences)
        return FakeEmbed()(sentences, desc)

    ev.evaluate_senteval(embed, root, ["CR"], CONFIGS["fast"], 1111)
    assert "." in seen and "" not in seen  # CR's empty lines, as the PAUSE and DeCLUTR batchers send them


def test_sts_years_match_test_sts(run, root):
    results, _, _ = run
    reference = sts.evaluate_sts(lambda s: np.stack([FakeEmbed.vector(x) for x in s]), root)
    for year in sts.STS_YEARS:
        ours = results["tasks"][year.upper()]
        for key in ("all", "mean", "wmean", "pairs"):
            assert ours[key] == pytest.approx(reference[year][key]), (year, key)


def test_same_seed_gives_the_same_scores(run, root):
    results, _, _ = run
    cache = EmbeddingCache()
    same = ev.evaluate_senteval(FakeEmbed(), root, ["TREC", "SICK-R"], CONFIGS["fast"], 1111, cache)
    for task in ("TREC", "SICK-R"):
        a = {k: v for k, v in results["tasks"][task].items() if k != "seconds"}
        b = {k: v for k, v in same["tasks"][task].items() if k != "seconds"}
        assert a == b


def test_features_are_senteval_s():
    u, v = np.array([[1.0, -2.0]]), np.array([[3.0, 1.0]])
    np.testing.assert_array_equal(ev.pair_features(u, v), [[2.0, 3.0, 3.0, -2.0]])
    np.testing.assert_array_equal(ev.nli_features(u, v), [[1.0, -2.0, 3.0, 1.0, 3.0, -2.0, 2.0, 3.0]])


def test_averages_follow_declutr():
    results = {
        "MR": {"devacc": 80.0, "acc": 78.0}, "CR": {"devacc": 82.0, "acc": 84.0},
        "MRPC": {"devacc": 70.0, "acc": 72.0, "f1": 80.0},
        "SICK-R": {"devpearson": 85.0, "pearson": 86.0, "spearman": 81.0},
        "STS-B": {"devpearson": 75.0, "pearson": 74.0, "spearman": 73.0},
        "SNLI": {"devacc": 10.0, "acc": 10.0},  # never in the downstream average
        "STS12": {"all": 1.0, "mean": 1.0, "wmean": 1.0},  # nor are STS12-16
        "Tense": {"devacc": 90.0, "acc": 88.0}, "BShift": {"devacc": 60.0, "acc": 62.0},
    }
    avg = ev.senteval_averages(results)
    assert avg["downstream"]["tasks"] == ["CR", "MR", "MRPC", "SICK-R", "STS-B"]
    assert avg["downstream"]["test"] == pytest.approx(np.mean([84.0, 78.0, (72.0 + 80.0) / 2, 81.0, 73.0]))
    assert avg["downstream"]["dev"] == pytest.approx(np.mean([82.0, 80.0, 70.0, 85.0, 75.0]))
    assert avg["probing"]["test"] == pytest.approx(75.0) and avg["probing"]["dev"] == pytest.approx(75.0)
    assert not avg["downstream"]["complete"] and not avg["probing"]["complete"]
    full = {t: {"devacc": 50.0, "acc": 60.0} for t in ev.DOWNSTREAM_AVERAGE_TASKS + ev.PROBING_TASKS}
    full["SICK-R"] = full["STS-B"] = {"devpearson": 50.0, "spearman": 60.0}
    avg = ev.senteval_averages(full)
    assert avg["downstream"]["complete"] and avg["probing"]["complete"] and avg["downstream"]["test"] == 60.0
    assert ev.senteval_averages({})["probing"] == {"test": None, "dev": None, "tasks": [], "complete": False}


def test_table_lists_tasks_averages_and_skips(run):
    table = ev.format_table(run[0])
    for text in ("MRPC", "F1", "SICK-R", "Spearman", "STS12", "wmean", "avg downstream", "avg probing",
                 "SentLen        skipped: missing"):
        assert text in table


def test_missing_data_is_an_error_pointing_to_the_readme(tmp_path):
    with pytest.raises(FileNotFoundError, match="docs/data.md"):
        ev.evaluate_senteval(FakeEmbed(), str(tmp_path), None, CONFIGS["fast"])
    with pytest.raises(FileNotFoundError, match=r"MR: data file not found: .*rt-polarity\.pos"):
        ev.evaluate_senteval(FakeEmbed(), str(tmp_path), ["MR"], CONFIGS["fast"])


def test_script_main_scores_the_tiny_encoder_and_writes_json(tmp_path):
    data = write_senteval_root(str(tmp_path / "data"))
    # In this process (tests/in_process.py); tests/test_scripts.py runs the script's own process.
    proc = run_script("senteval_eval.py", ["--model=random_tiny", f"--data_path={data}",
                                           f"--artifacts_dir={tmp_path / 'artifacts'}", "--max_seq_len=32",
                                           "--config=fast", "--tasks=CR,MRPC,SICK-R,STS12,Tense"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "avg downstream" in proc.stdout and "CR" in proc.stdout and "Tense" in proc.stdout
    result = json.load(open(tmp_path / "artifacts" / "test" / "senteval_random_tiny.json"))
    assert result["model"] == "random_tiny" and result["config"]["name"] == "fast"
    assert list(result["tasks"]) == ["CR", "MRPC", "SICK-R", "STS12", "Tense"]
    assert result["averages"]["downstream"]["tasks"] == ["CR", "MRPC", "SICK-R"]
    assert result["averages"]["probing"]["test"] == result["tasks"]["Tense"]["acc"]


def test_script_runs_several_configs_on_one_encoding(tmp_path):
    data = write_senteval_root(str(tmp_path / "data"))
    proc = run_script("senteval_eval.py", ["--model=random_tiny", f"--data_path={data}",
                                           f"--artifacts_dir={tmp_path / 'artifacts'}", "--max_seq_len=32",
                                           "--config=fast", "--config=pause", "--tasks=CR,SICK-R"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    fast = json.load(open(tmp_path / "artifacts" / "test" / "senteval_random_tiny_fast.json"))
    pause = json.load(open(tmp_path / "artifacts" / "test" / "senteval_random_tiny_pause.json"))
    assert fast["config"]["name"] == "fast" and pause["config"]["name"] == "pause"
    assert fast["config"]["kfold"] == 5 and pause["config"]["kfold"] == 10
    assert not os.path.exists(tmp_path / "artifacts" / "test" / "senteval_random_tiny.json")


def test_script_scores_several_seeds_on_one_encoding_with_their_spread(tmp_path):
    data = write_senteval_root(str(tmp_path / "data"))
    args = ["--model=random_tiny", f"--data_path={data}", f"--artifacts_dir={tmp_path / 'artifacts'}",
            "--max_seq_len=32", "--config=fast", "--tasks=CR,MRPC,STS12"]
    proc = run_script("senteval_eval.py", [*args, "--seed=1111,1112"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "artifacts" / "test"
    runs = {seed: json.load(open(out / f"senteval_random_tiny_seed{seed}.json")) for seed in (1111, 1112)}
    spread = json.load(open(out / "senteval_random_tiny_seeds.json"))
    assert runs[1111]["seed"] == 1111 and runs[1112]["seed"] == 1112 and spread["seeds"] == [1111, 1112]
    assert list(spread["tasks"]) == ["CR", "MRPC"]  # STS has no classifier, hence no seed
    for task, r in spread["tasks"].items():
        values = [ev.task_score(task, runs[seed]["tasks"][task]) for seed in (1111, 1112)]
        assert r["by_seed"] == {"1111": values[0], "1112": values[1]}
        assert r["test"]["min"] == min(values) and r["test"]["max"] == max(values)
        assert r["test"]["mean"] == pytest.approx(sum(values) / 2)
    assert "test scores over seeds 1111,1112" in proc.stdout
    proc = run_script("senteval_eval.py", [*args, "--seed=1111,x"], cwd=str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--seed: expected integers in [0, 2**32) separated by commas, got 'x'" in proc.stderr


def test_script_rejects_bad_input_before_loading_the_model(tmp_path):
    proc = run_script("senteval_eval.py", ["stray"], cwd=str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1].startswith("senteval_eval.py: Unexpected arguments: ['stray']")
    data = write_senteval_root(str(tmp_path / "data"), snli=False)
    proc = run_script("senteval_eval.py", ["--model=does-not-exist", f"--data_path={data}", "--tasks=SNLI"],
                      cwd=str(tmp_path))
    assert proc.returncode != 0 and "SNLI/s1.train" in proc.stderr and "docs/data.md" in proc.stderr


def test_script_refuses_tasks_the_model_was_trained_on(tmp_path, tiny_encoder):
    from common.export.saved_model import save_encoder_artifact

    data = write_senteval_root(str(tmp_path / "data"))
    run_id = "20260101-000000"
    save_encoder_artifact(tiny_encoder, str(tmp_path / "artifacts" / "model" / run_id),
                          {"trained_on_evaluation_data": ["SNLI"]})
    args = [f"--model={run_id}", f"--data_path={data}", f"--artifacts_dir={tmp_path / 'artifacts'}", "--config=fast"]
    proc = run_script("senteval_eval.py", [*args, "--tasks=SNLI,CR"], cwd=str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "trained on the evaluation data of SNLI" in proc.stderr and "--score_training_data" in proc.stderr
    # Other tasks are scored as usual; the flag the message names lets SNLI through.
    assert run_script("senteval_eval.py", [*args, "--tasks=CR"], cwd=str(tmp_path)).returncode == 0
    proc = run_script("senteval_eval.py", [*args, "--tasks=SNLI", "--score_training_data"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
