"""Shared by the resume tests of every method: kill a run after its last checkpoint,
resume it, and read the published weights to compare with an uninterrupted run."""

from __future__ import annotations

import os

import numpy as np
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


def killed_and_resumed_run(train, config, directory, kill_at: int = 5, **kwargs):
    """Trains `config` under `directory` killed after step `kill_at`, then resumes it;
    config.checkpoint_every must leave a checkpoint before `kill_at`. `kwargs` go to
    each `train` call (e.g. the evaluator train.py passes).

    Returns:
        (resumed run summary, moved): `moved` says whether the weights of the model
        being trained changed between two steps before the kill (by more than
        allclose's atol=1e-6): the run did train, so equal end weights mean something.
    """
    snapshots = {}

    def kill(step, model):
        # The first and the latest weights each model trained before the kill had
        # (a phased method trains several models, one after the other).
        weights = [v.numpy().copy() for v in model.trainable_weights]
        snapshots.setdefault(id(model), [weights, None])[1] = weights
        if step == kill_at:
            raise Killed()

    interrupted = config.replace(artifacts_dir=str(directory))
    with pytest.raises(Killed):
        train(interrupted, after_step=kill, **kwargs)
    run_id = os.listdir(os.path.join(directory, "ckpt"))[0]
    assert not os.path.exists(os.path.join(directory, "model", run_id))  # no half-written artifact
    resumed = train(interrupted.replace(resume=run_id), **kwargs)
    assert resumed["run_id"] == run_id
    moved = any(not np.allclose(a, b, atol=1e-6) for first, last in snapshots.values() for a, b in zip(first, last))
    return resumed, moved


def full_and_resumed_runs(train, config, tmp_path, kill_at: int = 5):
    """Trains `config` uninterrupted under tmp_path/a, and under tmp_path/b killed after step
    `kill_at` then resumed (`killed_and_resumed_run`).

    Returns:
        (full, resumed) run summaries of `train`.
    """
    full = train(config.replace(artifacts_dir=str(tmp_path / "a")))
    resumed, _ = killed_and_resumed_run(train, config, tmp_path / "b", kill_at)
    return full, resumed
