"""Helpers for tests of cross-replica exactness (see tests/replica_check.py)."""

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def replica_check(method: str, settings: dict = None, phase: str = None) -> dict:
    """Runs tests/replica_check.py for `method` (its smoke settings, updated by `settings`;
    the model of `phase` for a phased method) in a fresh process; returns its measurements."""
    result = replica_checks([{"method": method, "settings": settings or {}, "phase": phase}])[0]
    assert "error" not in result, result["error"]
    return result


def replica_checks(cases: list) -> list:
    """Runs tests/replica_check.py once for several checks, each a dict with `method` and
    optional `settings` and `phase` (as `replica_check`): one process, so TensorFlow starts
    once. Returns their measurements in order; a check that raised gives {"error": traceback}
    (`assert_replicas_agree` fails on it) and the others still run."""
    # Its temporary files (smoke data, autograph's generated modules) go to a folder removed after it.
    with tempfile.TemporaryDirectory(prefix="replica-checks-") as scratch:
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "replica_check.py"), json.dumps(cases)],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT, "TMPDIR": scratch},
                              timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in proc.stdout.strip().splitlines() if line.startswith("{")]
    assert len(results) == len(cases), (proc.stdout[-3000:], proc.stderr[-3000:])
    return results


def assert_replicas_agree(r: dict) -> None:
    """Same loss, summed gradients and weights after one step, within 1e-5."""
    assert "error" not in r, r.get("error")
    assert r["replicas"] == 2
    assert r["loss_diff"] < 1e-5, r
    assert r["grad_scale"] > 1e-4 and r["grad_diff"] < 1e-5, r
    assert r["weights_moved"] > 1e-5 and r["weight_diff"] < 1e-5, r

