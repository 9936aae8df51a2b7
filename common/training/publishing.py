"""Where a run writes and what it publishes: its directories (a new run ID, or the run resumed),
the published `weights/`, the atomic publishing of `<artifacts>/model/<ID>/` with its
`config.json`, its training curves, and the weights a later run starts from
(`pretrained_weights_prefix`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from typing import Any, Callable, Dict

import tensorflow as tf
from absl import logging

from common import artifacts
from common.export.saved_model import package_versions
from common.training.config import TrainConfig
from common.training.curves import CURVES_FILE, plot_training_curves, read_scalars
from common.training.loop import RunPaths

# Run ID of a non-chief worker in a fresh multi-worker run (it writes only to scratch).
WORKER_RUN_ID = "worker"
WEIGHTS_SUBDIR = "weights"


def run_paths(config: TrainConfig, chief: bool) -> RunPaths:
    """The directories a run writes to: a new run ID's (reserved by the chief), the resumed run's, or a
    non-chief worker's scratch directory; `--log_dir` and `--model_dir` where given."""
    run = config.run
    if chief:
        # Before an ID is reserved: a missing gs:// bucket is one clear error, never a hang.
        for directory in (run.artifacts_dir, run.model_dir, run.log_dir):
            if directory:
                artifacts.require_bucket(directory)
    if run.resume:
        run_id = run.resume
    elif chief:
        run_id = artifacts.new_run_id(run.artifacts_dir)
    else:
        tmp = tempfile.mkdtemp(prefix="worker-")
        return RunPaths(WORKER_RUN_ID, os.path.join(tmp, "log"), os.path.join(tmp, "ckpt"),
                        os.path.join(tmp, "model"))
    paths = RunPaths.for_run(run.artifacts_dir, run_id)
    return dataclasses.replace(paths, log_dir=run.log_dir or paths.log_dir, model_dir=run.model_dir or paths.model_dir)


def write_weights(checkpoint: tf.train.Checkpoint, model_dir: str) -> None:
    """`model_dir/weights/`: the published weights (no optimizer state), for --pretrained_weights."""
    checkpoint.write(artifacts.join(model_dir, WEIGHTS_SUBDIR, "weights"))
    # tf.train.latest_checkpoint needs the index file that CheckpointManager writes.
    with tf.io.gfile.GFile(artifacts.join(model_dir, WEIGHTS_SUBDIR, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "weights"\nall_model_checkpoint_paths: "weights"\n')


def publish_artifact(paths: RunPaths, record: Dict[str, Any], write_models: Callable[[str], None]) -> str:
    """Writes `model_dir/` atomically: whatever `write_models(tmp)` writes, and
    `config.json` (`record` with the run ID and package versions)."""

    def write(tmp: str) -> None:
        write_models(tmp)
        artifacts.write_json(artifacts.join(tmp, "config.json"), {
            "run_id": paths.run_id,
            **record,
            "packages": package_versions(),
        })

    return artifacts.write_atomically(paths.model_dir, write)


def pretrained_weights_prefix(pretrained: str, artifacts_dir: str):
    """The weights checkpoint prefix and config.json of a run ID or artifact directory."""
    path = artifacts.model_path(pretrained, artifacts_dir)
    if path is None:
        raise FileNotFoundError(f"--pretrained_weights={pretrained!r}: no such run ID or directory.")
    prefix = tf.train.latest_checkpoint(artifacts.join(path, WEIGHTS_SUBDIR))
    if prefix is None:
        raise FileNotFoundError(f"--pretrained_weights: no weights in {path}/{WEIGHTS_SUBDIR}; "
                                "expected a model trained by train.py.")
    with tf.io.gfile.GFile(artifacts.join(path, "config.json")) as f:
        return prefix, json.load(f)


def draw_curves(paths: RunPaths, method: str):
    """The run's training curves as PNG bytes, and what `config.json` records about them.

    Drawing is best effort: the curves are a view of the TensorBoard logs, which stay in
    `paths.log_dir` whatever happens here, so a picture that cannot be drawn (matplotlib
    missing or failing, unreadable event files) is logged as a warning and recorded as
    `training_curves_error`, and the trained run is published without it. Writing the
    picture is part of the atomic publish (see `_train_and_publish`): a file system that
    fails there fails the publish like any other file, and nothing is left half-written.

    Returns:
        (PNG bytes or None, {"training_curves": file name or None[, "training_curves_error": str]}).
    """
    try:
        png = plot_training_curves(read_scalars(paths.log_dir), f"run {paths.run_id} ({method})")
    except Exception as e:  # noqa: BLE001  (any failure to draw must not lose the trained run)
        reason = f"{type(e).__name__}: {' '.join(str(e).split())}"
        logging.warning("Run %s: no %s (%s). The TensorBoard logs in %s hold the same scalars; draw them later with "
                        "common.training.curves.write_training_curves(log_dir, path).", paths.run_id, CURVES_FILE,
                        reason, paths.log_dir)
        return None, {"training_curves": None, "training_curves_error": reason}
    if png is None:
        return None, {"training_curves": None, "training_curves_error": f"no scalars in {paths.log_dir}"}
    return png, {"training_curves": CURVES_FILE}
