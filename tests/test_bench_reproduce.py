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
