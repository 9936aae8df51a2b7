"""The bookkeeping of bench/reproduce.py that needs no training: the busy time of a ladder run
over several invocations, and what each invocation records of the machine's load. (bench.reproduce
defines absl flags that clash with other benchmarks' in one process, so it is imported in a child.)"""

import json
import os
import subprocess
import sys

from bench import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_busy_seconds_is_the_union_of_the_invocations():
    invocations = {"a": {"start": 0.0, "seconds": 10.0}, "b": {"start": 5.0, "seconds": 10.0},  # overlap: 15
                   "c": {"start": 100.0, "seconds": 5.0}}  # later session: +5
    assert machine.busy_seconds(invocations) == 20.0
    assert machine.busy_seconds({}) == 0.0


def test_other_cores_is_machine_busy_minus_own_per_second():
    ticks = os.sysconf("SC_CLK_TCK")
    assert machine.other_cores((0.0, 0, 0), (10.0, 20 * ticks, 20 * ticks)) == 0.0
    assert machine.other_cores((0.0, 0, 0), (10.0, 20 * ticks, 10 * ticks)) == 1.0


def test_a_save_records_the_invocation_and_its_other_processes_cpu(tmp_path):
    code = ("import sys; from bench import reproduce; ladder = reproduce.Ladder(sys.argv[1], 'unused'); "
            "ladder.scores['raw (mean)'] = {'sts_avg': 1.0}; ladder._save('raw (mean)')")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, check=True,
                   env={**os.environ, "PYTHONPATH": ROOT})
    saved = json.load(open(tmp_path / "scores.json"))
    assert saved["raw (mean)"] == {"sts_avg": 1.0}
    (record,) = saved["_meta"]["invocations"].values()
    assert record["seconds"] >= 0 and record["max_load1"] >= 0
    assert record["other_cores"] >= 0.0  # Linux: /proc/stat is there


def _run_child(code: str, *args: str) -> None:
    subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": ROOT})


def test_the_results_page_has_floors_rules_and_a_verdict_per_claim(tmp_path):
    scores = {"floor: random init (mean)": {"sts_avg": 43.8, "stsb_dev": 55.6},
              "floor: TF-IDF": {"sts_avg": 50.0, "stsb_dev": 60.0, "fixed": True},
              "raw (mean)": {"sts_avg": 51.4, "stsb_dev": 61.5}, "raw (CLS)": {"sts_avg": 30.0, "stsb_dev": 40.0}}
    for seed, shift in enumerate((0.0, 0.4, -0.4)):
        scores[f"pause 5% seed {seed}"] = {"sts_avg": 60.0 + shift, "stsb_dev": 70.0, "train_seconds": 10.0}
        scores[f"supervised 5% seed {seed}"] = {"sts_avg": 55.0 + shift, "stsb_dev": 66.0, "train_seconds": 10.0}
        scores[f"supervised 100% seed {seed}"] = {"sts_avg": 70.0 + shift, "stsb_dev": 75.0, "train_seconds": 10.0}
    (tmp_path / "scores.json").write_text(json.dumps(scores))
    code = ("import json, sys; from absl import flags; from bench import reproduce; "
            "flags.FLAGS(['x', '--percentages=5,100']); "
            "reproduce.write_results(json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], 'python -m bench.reproduce')")
    _run_child(code, str(tmp_path / "scores.json"), str(tmp_path), str(tmp_path / "page"))
    page = (tmp_path / "page" / "README.md").read_text()
    assert "Verdict rules:" in page and "`python -m bench.reproduce`" in page
    assert "| floor: random init (mean) | fixed | 43.80 |" in page
    assert "| pause 5% | 3 | 60.00 ± 0.40 |" in page
    claims = {c["claim"]: c["outcome"] for c in json.load(open(tmp_path / "page" / "results.json"))["claims"]}
    assert claims["PAUSE above supervised-only at every label percentage <= 30 %"] == "HELD"
    assert claims["PAUSE at 5 % at most 2 points below supervised-only at 100 %"] == "DID NOT HOLD"
    assert claims["The pretrained start above every floor (random init, TF-IDF)"] == "HELD"
    assert claims["SimCSE sup above SimCSE unsup"] == "NOT RUN"
    assert (tmp_path / "page" / "sts_vs_labels.png").exists()


def test_tfidf_cosines_are_one_for_the_same_sentence_and_zero_without_shared_words():
    code = ("from bench import reproduce; import numpy as np; "
            "c = reproduce.tfidf_cosines(['a cat sat here', 'dogs run'], ['a cat sat here', 'the sun rose']); "
            "assert np.allclose(c, [1.0, 0.0]), c")
    _run_child(code)


def test_the_floor_of_a_start_pretrained_from_an_old_spelling_is_its_fresh_bert(tmp_path):
    """A pretrain run of an older version records --encoder=bert_tiny in its config.json."""
    start = tmp_path / "pretrain"
    (start / "weights").mkdir(parents=True)
    (start / "config.json").write_text(json.dumps({"encoder": {"spec": "bert_tiny"}}))
    code = ("import sys; from bench import reproduce; "
            "print(reproduce.start_architecture(sys.argv[1]), reproduce.start_architecture('bert_mini'))")
    out = subprocess.run([sys.executable, "-c", code, str(start)], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": ROOT}).stdout
    assert out.split() == ["random_bert_tiny", "random_bert_mini"]
