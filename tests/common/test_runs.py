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


def _simcse_settings(tmp_path, **extra):
    return {**registry.get("simcse").smoke(str(tmp_path / "data")), "artifacts_dir": str(tmp_path / "artifacts"),
            "train_epochs": 1, "train_steps_per_epoch": 4, "checkpoint_every": 2, "eval_each_epoch": False, **extra}


def test_a_publish_that_fails_on_a_full_disk_leaves_nothing_and_its_advice_publishes_the_run(tmp_path, monkeypatch):
    import errno
    import re

    from common import artifacts
    from common.training import runs

    real = runs.publish_artifact

    def disk_full(paths, record, write_models):
        def write(tmp):
            write_models(tmp)
            raise OSError(errno.ENOSPC, "No space left on device")
        return artifacts.write_atomically(paths.model_dir, write)

    monkeypatch.setattr(runs, "publish_artifact", disk_full)
    config = registry.build_config("simcse", _simcse_settings(tmp_path))
    with pytest.raises(artifacts.ArtifactWriteError) as failure:
        train(config)
    message = str(failure.value)
    assert "No space left on device" in message and "nothing was left half-written" in message
    assert os.listdir(tmp_path / "artifacts" / "model") == []  # no half-written model, no .tmp-*
    # The advice names the command that publishes the trained run; follow it.
    command = re.search(r"publish it with: python train.py (.*)$", message).group(1).split()
    flags_given = dict(arg[2:].split("=", 1) for arg in command)
    assert flags_given["artifacts_dir"] == str(tmp_path / "artifacts")
    monkeypatch.setattr(runs, "publish_artifact", real)
    result = train(config.replace(resume=flags_given["resume"]))
    assert result["run_id"] == flags_given["resume"] and os.path.isdir(result["model_dir"])
    assert result["metrics"]["step"] == 4


def test_a_resumed_run_records_the_seconds_of_all_its_pieces_and_logs_to_its_folder(tmp_path, monkeypatch):
    import json
    import re

    from common.training import loop

    class Killed(Exception):
        pass

    def kill_at_2(step, model):
        if step == 2:
            raise Killed()

    config = registry.build_config("simcse", _simcse_settings(tmp_path))
    with pytest.raises(Killed):
        train(config, after_step=kill_at_2)
    run_id = os.listdir(tmp_path / "artifacts" / "ckpt")[0]
    progress = json.loads((tmp_path / "artifacts" / "ckpt" / run_id / loop.PROGRESS_FILE).read_text())
    first_piece = progress["2"]
    assert first_piece > 0
    result = train(config.replace(resume=run_id))
    recorded = json.loads((tmp_path / "artifacts" / "model" / run_id / "config.json").read_text())["metrics"]
    assert recorded["seconds"] == result["metrics"]["seconds"] > first_piece
    log = (tmp_path / "artifacts" / "log" / run_id / "train.log").read_text()
    assert f"Run {run_id} published" in log and "step 4/4" in log
    assert re.search(r"step 4/4 .*\([0-9.]+ steps/s, 0 s left\)", log)  # the rate and the time left


def test_a_new_run_removes_the_temporary_directory_of_a_publish_that_was_killed(tmp_path):
    import json
    import socket

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / "artifacts" / "model" / ".tmp-20261122-101500-0a1b2c3d"
    os.makedirs(stale / "embedding")
    (stale / ".owner.json").write_text(json.dumps({"host": socket.gethostname(), "pid": dead.pid}))
    result = train(registry.build_config("simcse", _simcse_settings(tmp_path, train_steps_per_epoch=1)))
    assert os.listdir(tmp_path / "artifacts" / "model") == [result["run_id"]]


def test_a_run_counts_the_training_sentences_it_truncates(tmp_path):
    import json

    sentences = tmp_path / "sentences.txt"
    long = " ".join(["word"] * 200)
    sentences.write_text("\n".join([f"a short sentence number {i}" for i in range(6)] + [long, long + " more"]) + "\n")
    result = train(registry.build_config("simcse", _simcse_settings(
        tmp_path, train_data=(str(sentences),), train_steps_per_epoch=1)))
    assert result["data"]["truncated_sentences"] == 2  # max_seq_len 16: only the two long ones
    recorded = json.loads((tmp_path / "artifacts" / "model" / result["run_id"] / "config.json").read_text())
    assert recorded["data"]["truncated_sentences"] == 2
    log = (tmp_path / "artifacts" / "log" / result["run_id"] / "train.log").read_text()
    assert "'truncated_sentences': 2" in log  # the "Training data" line
