"""Shared by the resume tests of every method: kill a run after its last checkpoint,
resume it, and read the published weights to compare with an uninterrupted run."""

from __future__ import annotations

import os

import pytest
import tensorflow as tf


class Killed(Exception):
    pass


def saved_weights(model_dir: str):
    """The `model/...` tensors of a run's published `weights/` checkpoint (never optimizer state)."""
    path = os.path.join(model_dir, "weights")
    names = [n for n, _ in tf.train.list_variables(path) if n.startswith("model/")]
    assert not [n for n in names if "optimizer" in n]
    reader = tf.train.load_checkpoint(path)
    return {n: reader.get_tensor(n) for n in names}


def full_and_resumed_runs(train, config, tmp_path, kill_at: int = 5):
    """Trains `config` uninterrupted under tmp_path/a, and under tmp_path/b killed after step
    `kill_at` then resumed; config.checkpoint_every must leave a checkpoint before `kill_at`.

    Returns:
        (full, resumed) run summaries of `train`.
    """
    full = train(config.replace(artifacts_dir=str(tmp_path / "a")))

    def kill(step, model):
        if step == kill_at:
            raise Killed()

    interrupted = config.replace(artifacts_dir=str(tmp_path / "b"))
    with pytest.raises(Killed):
        train(interrupted, after_step=kill)
    run_id = os.listdir(tmp_path / "b" / "ckpt")[0]
    assert not os.path.exists(tmp_path / "b" / "model" / run_id)  # no half-written artifact
    resumed = train(interrupted.replace(resume=run_id))
    assert resumed["run_id"] == run_id
    return full, resumed
