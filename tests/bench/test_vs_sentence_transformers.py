"""The parts of bench/vs_sentence_transformers.py that need no PyTorch: the worker's own STS
reader (it cannot import this project, so it restates common/data/sts.py), the refusal on a
loaded machine, and the table. The benchmark itself runs outside the test suite."""

import json
import os
import time

import numpy as np

from fixtures import write_sts_root
from in_process import run_module

from bench import st_worker, vs_sentence_transformers as vs
from common.data.sts import load_all


def test_worker_reads_the_sets_test_sts_reads(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    ours, theirs = load_all(data), st_worker.load_sets(data)
    assert set(theirs) == set(ours)
    for name, group in ours.items():
        assert set(theirs[name]) == set(group), name
        for subset, pairs in group.items():
            s1, s2, scores = theirs[name][subset]
            assert (s1, s2) == (pairs.sentences1, pairs.sentences2), (name, subset)
            np.testing.assert_array_equal(scores, pairs.scores)
    # The fixture's unscored pair (an empty gold line) is skipped by both.
    assert len(theirs["sts15"]["headlines"][0]) == 6


def test_refuses_a_loaded_machine(tmp_path):
    proc = run_module("bench.vs_sentence_transformers", ["--max_load=-1", f"--results_dir={tmp_path}"])
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Refusing to benchmark" in proc.stderr and "--allow_loaded" in proc.stderr
    assert not os.listdir(tmp_path)


def _record(raw: dict, checks: dict, loaded: bool) -> dict:
    """A benchmark record as main() writes it, around the given raw timings and checks."""
    load = 0.9 if loaded else 0.1
    return {
        "raw": raw,
        "flags": {"encode_batch_size": 64, "train_batch_size": 64, "threads": 2, "max_load": 0.5,
                  "sts_tolerance": 0.01},
        "checks": checks,
        "machine": {"cpu": "test CPU", "cpus": 2},
        "load_averages": [{"label": "before start", "load": (load, 0.1, 0.1), "over_threshold": loaded}],
        "loaded": loaded,
        "versions": {"toolkit": {"python": "3", "tensorflow": "2", "keras": "3", "keras_hub": "0"},
                     "sentence_transformers_side": {"sentence_transformers": "6", "torch": "2", "transformers": "5",
                                                    "tokenizers": "0"}},
    }


def test_table_gives_medians_ratios_and_the_loaded_mark():
    timings = lambda *seconds: [{"seconds": s, "sentences": 100} for s in seconds]  # noqa: E731
    record = _record(
        {"encode": {"fp32": {"toolkit": timings(1.0, 2.0, 4.0), "toolkit_token_sorted": timings(0.5, 1.0, 2.0),
                             "sentence_transformers": timings(2.0, 4.0, 8.0)}},
         "train": {}, "sts": {"fp32": {"toolkit": [{"seconds": 30.0}], "sentence_transformers": [{"seconds": 60.0}]},
                              "bf16": {"toolkit": [{"seconds": 20.0}], "sentence_transformers": [{"seconds": 50.0}]}}},
        {"encode_fp32_max_abs_diff": 1e-7}, loaded=True)
    table = vs.format_table(record, 100)
    assert table.startswith("**LOADED")
    assert "| 50.0 [25.0-100.0] | 25.0 [12.5-50.0] | 2.00 |" in table  # sentences/s: higher is faster
    assert "token count as test_sts.py does (sentences/s) | 100.0 [50.0-200.0] | 25.0 [12.5-50.0] | 4.00 |" in table
    # seconds: the ratio is inverted
    assert "--precision=fp32 end to end, wall (s) | 30.0 [30.0-30.0] | 60.0 [60.0-60.0] | 2.00 |" in table
    assert "--precision=bf16 end to end, wall (s) | 20.0 [20.0-20.0] | 50.0 [50.0-50.0] | 2.50 |" in table
    json.dumps(record)


def test_load_log_counts_only_other_processes_cpu(monkeypatch):
    """The LOADED decision while running: other processes' CPU time (machine busy minus own), in
    cores per wall second; the benchmark's own threads (a load average near --threads) do not count."""
    ticks = os.sysconf("SC_CLK_TCK")
    state = {"wall": 100.0, "busy": 0, "own": 0}
    monkeypatch.setattr(vs.time, "time", lambda: state["wall"])
    monkeypatch.setattr(vs, "machine_busy_ticks", lambda: state["busy"])
    monkeypatch.setattr(vs, "process_ticks", lambda pid="self": state["own"] if pid == "self" else 0)
    monkeypatch.setattr(vs, "load_average", lambda: (2.0, 2.0, 2.0))
    log = vs.LoadLog(0.5)
    log.read("before start")  # judged by the load average: 2.0 > 0.5
    assert log.readings[0]["other_cores"] is None and log.readings[0]["over_threshold"]
    log.readings.clear()
    # 10 s on 2 busy cores, all of them the benchmark's own: nothing else ran.
    state.update(wall=110.0, busy=20 * ticks, own=20 * ticks)
    log.read("round 1")
    assert log.readings[-1]["other_cores"] == 0.0 and not log.loaded
    # The next 10 s: 2 busy cores, one of them someone else's.
    state.update(wall=120.0, busy=40 * ticks, own=30 * ticks)
    log.read("round 2")
    assert log.readings[-1]["other_cores"] == 1.0 and log.loaded


def test_cpu_tick_readers_see_this_process_work():
    busy0, own0 = vs.machine_busy_ticks(), vs.process_ticks()
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    assert vs.process_ticks() > own0
    assert vs.machine_busy_ticks() > busy0
    assert vs.process_ticks(2 ** 22 + 1) == 0  # no such process


def test_table_compares_bf16_scores_with_each_sides_own_fp32():
    def scores(base):
        return {k: base + i for i, k in enumerate((*vs.HEADLINE, "stsb_dev", "avg"))}

    def table(ours, theirs):
        return {k: {"toolkit": ours[k], "sentence_transformers": theirs[k], "diff": ours[k] - theirs[k]} for k in ours}

    fp32_ours, fp32_theirs = scores(80.0), scores(80.004)
    bf16_ours, bf16_theirs = scores(80.05), scores(79.904)
    record = _record({"encode": {}, "train": {}},
                     {"sts_scores": table(fp32_ours, fp32_theirs), "sts_max_abs_diff": 0.004,
                      "sts_scores_bf16": table(bf16_ours, bf16_theirs), "sts_max_abs_diff_bf16": 0.146}, loaded=False)
    text = vs.format_table(record, 100)
    assert "headline scores agree: largest |difference| 0.0040 (tolerance 0.01)" in text
    assert "| STS (Spearman x100), bf16 |" in text
    assert "bf16 headline scores: largest |toolkit - sentence-transformers| 0.1460" in text
    assert "toolkit: bf16 vs fp32, largest headline change 0.0500, STS-B test +0.0500" in text
    assert "sentence-transformers: bf16 vs fp32, largest headline change 0.1000, STS-B test -0.1000" in text
