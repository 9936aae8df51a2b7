"""What every registered method must satisfy, run for each method the registry holds:
one replica equals two, a killed run resumes exactly, and train.py -> test_sts.py works.

A new method gets these tests by registering itself (its `smoke` settings drive them).

Each method trains once through train.py (`script_run`, two epochs with a checkpoint
before a kill point), run in this process as its command line runs it (tests/test_scripts.py
keeps train.py's own process); that run is both the script smoke test and the uninterrupted run
that the killed-and-resumed one must equal. The replica checks of all models share one
process (`replica_results`).
"""

import json
import os
import re

import numpy as np
import pytest

from common.evaluation.evaluators import StsbDevEvaluator, dev_evaluator
from common.training import registry
from common.training.runs import train
from distributed_checks import assert_replicas_agree, replica_checks
from fixtures import write_sts_root
from in_process import run_script
from resume_check import killed_and_resumed_run, saved_weights

METHODS = list(registry.methods())
# Every model a method trains: (method, None) for one model; (method, phase) for each
# kind of phase of a method with a driver (Trans-Encoder's cross- and bi-encoder).
MODELS = [(name, phase) for name, method in registry.methods().items() for phase in (method.phase_models or [None])]
# The shared run: the last checkpoint before the kill (after step 5) is at step 3; the data
# stream, masks and dropout seeds must all continue where they were. STS-B dev is scored at
# each epoch's end (steps 4 and 8), as train.py does by default.
RUN = {"train_epochs": 2, "train_steps_per_epoch": 4, "checkpoint_every": 3, "log_every": 1}


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


@pytest.fixture(scope="module")
def replica_results():
    """Every model's replica check, in one process."""
    return dict(zip(MODELS, replica_checks([{"method": name, "phase": phase} for name, phase in MODELS])))


@pytest.fixture(scope="module")
def script_run(tmp_path_factory):
    """name -> the method's run through train.py and its scores through test_sts.py (each made once)."""
    runs = {}

    def get(name):
        if name not in runs:
            root = tmp_path_factory.mktemp(f"run-{name}")
            data = write_sts_root(str(root / "data"))
            settings = {**registry.get(name).smoke(data), **RUN}
            artifacts = root / "artifacts"
            proc = run_script("train.py", [f"--method={name}", *_argv(settings), f"--artifacts_dir={artifacts}"],
                              cwd=str(root))
            score = None
            if proc.returncode == 0:
                run_id = next(line.split(": ")[1] for line in proc.stdout.splitlines() if line.startswith("run ID:"))
                score = run_script("test_sts.py", [f"--model={run_id}", f"--data_path={data}",
                                                   f"--artifacts_dir={artifacts}"], cwd=str(root))
            runs[name] = {"data": data, "settings": settings, "artifacts": artifacts, "train": proc, "score": score}
        run = runs[name]
        assert run["train"].returncode == 0, run["train"].stderr[-3000:]
        return run

    return get


def test_the_registry_holds_every_method_package():
    assert {"pause", "declutr", "simcse", "trans_encoder"} <= set(METHODS)


@pytest.mark.parametrize("name,phase", MODELS)
def test_one_replica_equals_two_replicas(name, phase, replica_results):
    assert_replicas_agree(replica_results[(name, phase)])


@pytest.mark.parametrize("name", METHODS)
def test_train_py_then_test_sts_py(name, script_run):
    run = script_run(name)
    proc, artifacts = run["train"], run["artifacts"]
    run_id = next(line.split(": ")[1] for line in proc.stdout.splitlines() if line.startswith("run ID:"))
    assert f"test_sts.py --model={run_id}" in proc.stdout
    record = json.load(open(artifacts / "model" / run_id / "config.json"))
    assert record["method"] == name and record["config"]["method"] == name
    assert (record["config"]["run"]["train_steps_per_epoch"] == RUN["train_steps_per_epoch"]
            and record["data"]["fingerprint"])
    assert "stsb_dev_spearman" in record["metrics"]  # the evaluator train.py passes in ran
    assert run["score"].returncode == 0, run["score"].stderr[-2000:]
    assert json.load(open(artifacts / "test" / f"sts_{run_id}.json"))["model"] == run_id


@pytest.mark.parametrize("name", METHODS)
def test_resumed_run_equals_uninterrupted_run(name, script_run, tmp_path):
    run = script_run(name)
    full_dir = next(line.split(": ", 1)[1] for line in run["train"].stdout.splitlines() if line.startswith("model:"))
    full_fingerprint = re.search(r"^weights fingerprint: (\S+)$", run["train"].stdout, re.M).group(1)
    # The same run as train.py's, in this process, with the evaluator train.py passes.
    config = registry.build_config(name, run["settings"])
    resumed, moved = killed_and_resumed_run(train, config, tmp_path / "b",
                                            evaluator=StsbDevEvaluator(run["data"], progress=False))
    a, b = saved_weights(full_dir), saved_weights(resumed["model_dir"])
    assert a and a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-6, err_msg=key)
    assert full_fingerprint == resumed["weights_fingerprint"]
    assert moved  # the runs did train: the weights moved while they trained


@pytest.mark.parametrize("name", METHODS)
def test_every_method_evaluates_and_selects_on_the_users_own_dev_pairs(name, tmp_path):
    """train.py --dev_data: the user's pairs replace STS-B dev in every method's evaluations and selection."""
    data = write_sts_root(str(tmp_path / "data"))
    dev = tmp_path / "dev.tsv"
    dev.write_text("sentence1\tsentence2\tscore\n" + "".join(
        f"{a}\t{b}\t{s}\n" for a, b, s in [("a man plays a guitar .", "a man plays music .", 4.5),
                                           ("a dog runs .", "stocks fell on monday .", 0.2),
                                           ("a woman cuts onions .", "someone cuts an onion .", 4.0),
                                           ("the sun is up .", "a man plays a guitar .", 1.0)]))
    method = registry.get(name)
    settings = {**method.smoke(data), "train_epochs": 1, "train_steps_per_epoch": 2, "dev_data": str(dev),
                "artifacts_dir": str(tmp_path / "artifacts")}
    if method.driver is None:  # a driver (Trans-Encoder) selects within each phase, on the same evaluator
        settings.update(eval_every=1, publish_best=True)
    result = train(registry.build_config(name, settings), evaluator=dev_evaluator(data, str(dev)))
    record = json.load(open(os.path.join(result["model_dir"], "config.json")))
    if method.driver is None:
        assert record["selection"]["metric"] == "dev_spearman" and np.isfinite(record["selection"]["score"])
    else:
        assert all("dev_spearman" in phase for phase in record["phases"])
        assert np.isfinite(record["metrics"]["dev_spearman"])
    assert "stsb_dev_spearman" not in record["metrics"]
