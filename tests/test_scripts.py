"""Smoke tests of every script's `main`, through the real command line."""

import json
import os
import subprocess
import sys

from fixtures import write_sts_root

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})


def test_test_sts_scores_a_spec_and_writes_results(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    proc = _run([os.path.join(ROOT, "test_sts.py"), "--model=tiny", f"--data_path={data}",
                 f"--artifacts_dir={tmp_path / 'artifacts'}", "--max_seq_len=32"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sts12" in proc.stdout and "avg" in proc.stdout
    result = json.load(open(tmp_path / "artifacts" / "test" / "sts_tiny.json"))
    assert result["model"] == "tiny"
    assert set(result) >= {"sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr", "avg", "seconds"}
    assert set(result["sts12"]) >= {"all", "mean", "wmean", "subsets"}
    txt = (tmp_path / "artifacts" / "test" / "sts_tiny.txt").read_text()
    assert txt.startswith("sts12=")


def test_test_sts_rejects_bad_input_clearly(tmp_path):
    proc = _run([os.path.join(ROOT, "test_sts.py"), "--model=nonsense", f"--data_path={tmp_path}"], cwd=str(tmp_path))
    assert proc.returncode != 0 and "Valid forms" in proc.stderr
    proc = _run([os.path.join(ROOT, "test_sts.py"), "--model=tiny", f"--data_path={tmp_path / 'nope'}"],
                cwd=str(tmp_path))
    assert proc.returncode != 0 and "README.md, section 'Data'" in proc.stderr
    proc = _run([os.path.join(ROOT, "test_sts.py"), "stray"], cwd=str(tmp_path))
    assert proc.returncode != 0 and "Unexpected arguments" in proc.stderr


def test_unbuilt_scripts_say_so_and_fail(tmp_path):
    for script in ("train.py", "senteval_eval.py"):
        proc = _run([os.path.join(ROOT, script)], cwd=str(tmp_path))
        assert proc.returncode != 0 and "not implemented yet" in proc.stderr
