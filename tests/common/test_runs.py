"""A run's life: failed starts leave nothing behind; user errors are one line through train.py."""

import os
import subprocess
import sys

import pytest

from common.training import registry
from common.training.runs import train
from distributed_checks import ROOT


def test_a_run_that_fails_on_its_model_or_data_reserves_no_id(tmp_path):
    base = {**registry.get("simcse").smoke(str(tmp_path / "data")), "artifacts_dir": str(tmp_path / "artifacts"),
            "train_steps_per_epoch": 1, "eval_each_epoch": False}
    with pytest.raises(ValueError, match="Unknown encoder spec"):
        train(registry.build_config("simcse", {**base, "model": "no-such-model"}))
    with pytest.raises(FileNotFoundError, match="not found"):
        train(registry.build_config("simcse", {**base, "train_data": (str(tmp_path / "missing.txt"),)}))
    assert not os.path.exists(tmp_path / "artifacts" / "ckpt") or not os.listdir(tmp_path / "artifacts" / "ckpt")


def test_train_py_reports_a_bad_model_in_one_line_with_exit_code_2(tmp_path):
    sentences = registry.get("simcse").smoke(str(tmp_path))["train_data"][0]
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "train.py"), "--method=simcse", "--model=no-such-model",
                           f"--train_data={sentences}", f"--artifacts_dir={tmp_path / 'artifacts'}"],
                          capture_output=True, text=True,
                          cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("train.py: Unknown encoder spec 'no-such-model'")
    assert not os.path.exists(tmp_path / "artifacts" / "ckpt")
