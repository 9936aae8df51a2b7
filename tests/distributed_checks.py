"""Helpers for tests of cross-replica exactness (see tests/replica_check.py)."""

import atexit
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 1800  # for one list of checks

_SERVER = {}


def replica_check(method: str, settings: dict = None, phase: str = None) -> dict:
    """Runs tests/replica_check.py's check of `method` (its smoke settings, updated by `settings`;
    the model of `phase` for a phased method); returns its measurements."""
    result = replica_checks([{"method": method, "settings": settings or {}, "phase": phase}])[0]
    assert "error" not in result, result["error"]
    return result


def replica_checks(cases: list) -> list:
    """Runs several checks of tests/replica_check.py, each a dict with `method` and optional
    `settings` and `phase` (as `replica_check`), in the one replica-check process of this test
    process (started on first use, so TensorFlow starts there once for every test file that
    needs it). Returns their measurements in order; a check that raised gives {"error": traceback}
    (`assert_replicas_agree` fails on it) and the others still run."""
    proc, lines = _server()
    proc.stdin.write(json.dumps(cases) + "\n")
    proc.stdin.flush()
    results = []
    while len(results) < len(cases):
        try:
            line = lines.get(timeout=TIMEOUT_S)
        except queue.Empty:
            line = None
        if not line:
            tail = _stderr_tail()
            proc.kill()
            proc.wait()
            _SERVER.clear()
            raise AssertionError(f"the replica-check process {'timed out' if line is None else 'stopped'}; its "
                                 f"stderr ends:\n{tail}")
        if line.startswith("{"):
            results.append(json.loads(line))
    return results


def _server():
    """The replica-check process and the queue of its stdout lines ("" once it closed)."""
    proc = _SERVER.get("proc")
    if proc is not None and proc.poll() is None:
        return proc, _SERVER["lines"]
    # Its temporary files (smoke data, autograph's generated modules) and its stderr go to a folder
    # removed when this process exits.
    scratch = tempfile.mkdtemp(prefix="replica-checks-")
    stderr = open(os.path.join(scratch, "stderr.txt"), "w")
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "replica_check.py"), "--serve"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT, "TMPDIR": scratch})
    lines = queue.Queue()

    def read():
        for line in iter(proc.stdout.readline, ""):
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    _SERVER.update(proc=proc, lines=lines, scratch=scratch)
    atexit.register(_stop, proc, scratch, stderr)
    return proc, lines


def _stderr_tail() -> str:
    path = os.path.join(_SERVER.get("scratch", ""), "stderr.txt")
    return open(path).read()[-3000:] if os.path.exists(path) else ""


def _stop(proc, scratch, stderr) -> None:
    if proc.poll() is None:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    stderr.close()
    shutil.rmtree(scratch, ignore_errors=True)


def assert_replicas_agree(r: dict) -> None:
    """Same loss, summed gradients and weights after one step, within 1e-5."""
    assert "error" not in r, r.get("error")
    assert r["replicas"] == 2
    assert r["loss_diff"] < 1e-5, r
    assert r["grad_scale"] > 1e-4 and r["grad_diff"] < 1e-5, r
    assert r["weights_moved"] > 1e-5 and r["weight_diff"] < 1e-5, r
