"""bench/fused_dense_speed.py and bench/gelu_speed.py (one A/B harness, bench/encoder_ab.py) run on the
STS fixture and print their table; without data they fail in one line. (They define absl flags, so each
runs in a child process.)"""

import os
import subprocess
import sys

import pytest

from fixtures import write_sts_root

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": ROOT}
SMALL = ["--precisions=fp32", "--sentences=12", "--batch_size=4", "--train_batch=4", "--train_steps=1", "--rounds=1"]


def _row(stdout, precision):
    return next(line for line in stdout.splitlines() if line.startswith(f"| {precision} |")).strip("| ").split(" | ")


@pytest.mark.parametrize("bench,forms", [("fused_dense_speed", ("fused", "keras-hub")), ("gelu_speed", ("erf", "erfc"))])
def test_prints_both_forms_and_their_difference(bench, forms, tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    proc = subprocess.run([sys.executable, "-m", f"bench.{bench}", f"--data_path={data}", *SMALL],
                          cwd=ROOT, env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"| encode {forms[0]} (sent/s) | encode {forms[1]} |" in proc.stdout
    assert "other processes used" in proc.stdout and "12 STS-B test sentences" in proc.stdout
    row = _row(proc.stdout, "fp32")
    assert len(row) == 8 and float(row[3]) > 0 and float(row[6]) > 0
    assert float(row[7]) < 1e-5  # the two forms compute the same embeddings in fp32


def test_missing_data_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "bench.fused_dense_speed", f"--data_path={tmp_path / 'none'}",
                           *SMALL], cwd=ROOT, env=ENV, capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("fused_dense_speed.py:")]
    assert len(errors) == 1 and "Data directory not found" in errors[0] and "docs/data.md" in errors[0]
