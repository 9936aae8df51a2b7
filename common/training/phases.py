"""Runs made of several trainings in turn ("phases"), with exact resume across them.

A phase is one `common.training.loop.run_training` of one model, with its own
checkpoints under `<ckpt>/<ID>/phases/<name>/` and TensorBoard logs under
`<log>/<ID>/<name>/`. When a phase ends, its final weights (`final/`) and a
record (`done.json`: steps, scores) are written there and its training
checkpoints (optimizer state included, and the best-scored weights of a phase
that selects them) are deleted. A resumed run skips the
phases that are done (their records and final weights are read back) and
continues the first unfinished one from its last checkpoint; what a phase
computes from earlier phases before it trains (Trans-Encoder's pseudo-labels)
is saved once with `save_array`, so a resumed phase trains on exactly the data
it started with.

`after_step` hooks see the run's global step (the steps of the phases before
plus the phase's own), so a test can kill a run anywhere in any phase.
"""

from __future__ import annotations

import io
import json
from typing import Any, Callable, Dict, Optional

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from common import artifacts
from common.training.loop import BestWeights, LoopConfig, RunPaths, Selection, run_training

PHASES_SUBDIR = "phases"
DONE_FILE = "done.json"
FINAL_SUBDIR = "final"


class PhaseRunner:
    """Trains the phases of one run in order (see the module docstring).

    Args:
        context: common.training.runs.RunContext of the run.
    """

    def __init__(self, context):
        self.context = context
        self.offset = 0  # global steps of the phases before the current one

    def directory(self, name: str) -> str:
        return artifacts.join(self.context.paths.checkpoint_dir, PHASES_SUBDIR, name)

    def record(self, name: str) -> Optional[Dict[str, Any]]:
        """The record of a finished phase, None while it is not finished."""
        path = artifacts.join(self.directory(name), DONE_FILE)
        if not tf.io.gfile.exists(path):
            return None
        with tf.io.gfile.GFile(path) as f:
            return json.load(f)

    def skip(self, name: str) -> Dict[str, Any]:
        """Accounts for a finished phase's steps and returns its record."""
        record = self.record(name)
        if record is None:
            raise ValueError(f"Phase {name} is not finished; it cannot be skipped.")
        self.offset += int(record["steps"])
        return record

    def save_array(self, name: str, key: str, array: np.ndarray) -> None:
        """Saves an input of phase `name` (written atomically by the chief)."""
        if not self.context.chief:
            return
        artifacts.makedirs(self.directory(name))
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(array), allow_pickle=False)
        path = artifacts.join(self.directory(name), f"{key}.npy")
        with tf.io.gfile.GFile(path + ".tmp", "wb") as f:
            f.write(buffer.getvalue())
        tf.io.gfile.rename(path + ".tmp", path, overwrite=True)

    def load_array(self, name: str, key: str) -> Optional[np.ndarray]:
        path = artifacts.join(self.directory(name), f"{key}.npy")
        if not tf.io.gfile.exists(path):
            return None
        with tf.io.gfile.GFile(path, "rb") as f:
            return np.load(io.BytesIO(f.read()), allow_pickle=False)

    def train(self, name: str, model: keras.Model, make_dataset: Callable[[int], tf.data.Dataset],
              loop: LoopConfig, evaluate: Optional[Callable[[int], Dict[str, float]]] = None,
              selection: Optional[Selection] = None) -> Dict[str, Any]:
        """Trains (or resumes) phase `name`: `run_training` in the phase's own directories
        (with `selection`, the phase ends with its best-scored weights)."""
        ctx = self.context
        paths = RunPaths(ctx.paths.run_id, artifacts.join(ctx.paths.log_dir, name), self.directory(name),
                         ctx.paths.model_dir)
        offset = self.offset

        def after_step(step, m):
            ctx.after_step(offset + step, m)

        logging.info("Phase %s: %d steps (run steps %d-%d).", name, loop.total_steps, offset + 1,
                     offset + loop.total_steps)
        return run_training(model, make_dataset, ctx.strategy, loop, paths, ctx.chief, evaluate,
                            after_step if ctx.after_step is not None else None, selection)

    def complete(self, name: str, weights: tf.train.Checkpoint, steps: int, record: Dict[str, Any]) -> None:
        """Marks phase `name` finished: final weights, then `done.json`, then its
        training checkpoints are deleted (a kill in between leaves a phase that is
        either redone from its last checkpoint or done)."""
        self.offset += steps
        if not self.context.chief:
            return
        directory = self.directory(name)
        weights.write(artifacts.join(directory, FINAL_SUBDIR, "weights"))
        artifacts.write_json(artifacts.join(directory, DONE_FILE), {**record, "steps": steps})  # atomic
        for path in tf.io.gfile.glob(artifacts.join(directory, "ckpt-*")):
            tf.io.gfile.remove(path)
        best = artifacts.join(directory, BestWeights.SUBDIR)
        if tf.io.gfile.exists(best):  # the phase's best weights are its final ones now
            tf.io.gfile.rmtree(best)

    def restore(self, name: str, weights: tf.train.Checkpoint) -> None:
        """Loads a finished phase's final weights into `weights`' objects."""
        weights.read(artifacts.join(self.directory(name), FINAL_SUBDIR, "weights")).assert_existing_objects_matched()
