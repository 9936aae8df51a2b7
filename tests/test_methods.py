"""What every registered method must satisfy, run for each method the registry holds:
one replica equals two, a killed run resumes exactly, and train.py -> test_sts.py works.

A new method gets these tests by registering itself (its `smoke` settings drive them).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from common.training import registry
from common.training.runs import train
from distributed_checks import ROOT, assert_replicas_agree, replica_check
from fixtures import write_sts_root
from resume_check import full_and_resumed_runs, saved_weights

METHODS = list(registry.methods())
# Every model a method trains: (method, None) for one model; (method, phase) for each
# kind of phase of a method with a driver (Trans-Encoder's cross- and bi-encoder).
MODELS = [(name, phase) for name, method in registry.methods().items() for phase in (method.phase_models or [None])]


def _argv(settings):
    """Command-line flags for flat settings."""
    out = []
    for name, value in settings.items():
        if isinstance(value, bool):
            out.append(f"--{name}" if value else f"--no{name}")
        elif isinstance(value, (tuple, list)):
            out.append(f"--{name}={','.join(value)}")
        else:
            out.append(f"--{name}={value}")
    return out


def test_the_registry_holds_every_method_package():
    assert {"pause", "declutr", "simcse", "trans_encoder"} <= set(METHODS)


@pytest.mark.parametrize("name,phase", MODELS)
def test_one_replica_equals_two_replicas(name, phase):
    assert_replicas_agree(replica_check(name, phase=phase))


@pytest.mark.parametrize("name", METHODS)
def test_resumed_run_equals_uninterrupted_run(name, tmp_path):
    method = registry.get(name)
    config = registry.build_config(name, {
        **method.smoke(str(tmp_path / "data")), "train_epochs": 2, "train_steps_per_epoch": 4,
        "checkpoint_every": 3, "log_every": 1, "eval_each_epoch": False})
    # The last checkpoint is at step 3; the run is killed after step 5 (data stream,
    # masks and dropout seeds must all continue where they were).
    full, resumed = full_and_resumed_runs(train, config, tmp_path)
    a, b = saved_weights(full["model_dir"]), saved_weights(resumed["model_dir"])
    assert a and a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-6, err_msg=key)
    assert full["weights_fingerprint"] == resumed["weights_fingerprint"]
    # The runs did train: the weights moved away from a fresh model of the same seed.
    start = train(config.replace(artifacts_dir=str(tmp_path / "c"), train_epochs=1, train_steps_per_epoch=1))
    moved = saved_weights(start["model_dir"])
    assert any(not np.allclose(moved[k], a[k], atol=1e-6) for k in a)


def _run(args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})


@pytest.mark.parametrize("name", METHODS)
def test_train_py_then_test_sts_py(name, tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    settings = {**registry.get(name).smoke(data), "train_epochs": 1, "train_steps_per_epoch": 2,
                "artifacts_dir": str(tmp_path / "artifacts")}
    proc = _run([os.path.join(ROOT, "train.py"), f"--method={name}", *_argv(settings)], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_id = next(line.split(": ")[1] for line in proc.stdout.splitlines() if line.startswith("run ID:"))
    assert f"test_sts.py --model={run_id}" in proc.stdout
    record = json.load(open(tmp_path / "artifacts" / "model" / run_id / "config.json"))
    assert record["method"] == name and record["config"]["method"] == name
    assert record["config"]["run"]["train_steps_per_epoch"] == 2 and record["data"]["fingerprint"]
    assert "stsb_dev_spearman" in record["metrics"]  # the evaluator train.py passes in ran
    score = _run([os.path.join(ROOT, "test_sts.py"), f"--model={run_id}", f"--data_path={data}",
                  f"--artifacts_dir={tmp_path / 'artifacts'}"], cwd=str(tmp_path))
    assert score.returncode == 0, score.stderr[-2000:]
    assert json.load(open(tmp_path / "artifacts" / "test" / f"sts_{run_id}.json"))["model"] == run_id
