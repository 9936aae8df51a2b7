"""Run management shared by every training method.

`run_training` drives a compiled Keras model's own `train_step` (through
`model.make_train_function()`, exactly what `fit` runs) step by step, so that it
can: resume an interrupted run from its last checkpoint and continue the data
stream where it stopped (the dataset is rebuilt and fast-forwarded to the
restored step); checkpoint every N steps; write TensorBoard scalars; and stop on
a non-finite loss while keeping the last good checkpoint.

The chief shows a progress bar (steps, loss, rate, time left) when stderr is a
terminal, and logs the same every `log_every` steps. Training time adds up over
the pieces of a resumed run: `progress.json` beside the checkpoints records the
seconds spent up to each checkpoint.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
import uuid
from typing import Callable, Dict, Optional

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from common import artifacts


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; the run stopped."""


@dataclasses.dataclass(frozen=True)
class LoopConfig:
    """How long to train and how often to log and checkpoint.

    Attributes:
        total_steps: int. Optimizer steps of the whole run.
        steps_per_epoch: int. Steps between epoch-end hooks (evaluation).
        checkpoint_every: int. Steps between checkpoints. Defaults to 500.
        log_every: int. Steps between TensorBoard/log lines. Defaults to 50.
        max_checkpoints: int. Checkpoints kept. Defaults to 2.
        evaluate_every: int. With a `select` function given to `run_training`:
            steps between two scorings of the model (each epoch's end is scored
            too), the best-scored weights being what the run ends with; 0
            scores only at epoch ends. Defaults to 0.
    """

    total_steps: int
    steps_per_epoch: int
    checkpoint_every: int = 500
    log_every: int = 50
    max_checkpoints: int = 2
    evaluate_every: int = 0


@dataclasses.dataclass(frozen=True)
class RunPaths:
    """Where one run writes (see common.artifacts for the layout)."""

    run_id: str
    log_dir: str
    checkpoint_dir: str
    model_dir: str

    @classmethod
    def for_run(cls, artifacts_dir: str, run_id: str) -> "RunPaths":
        return cls(run_id, artifacts.log_dir(artifacts_dir, run_id), artifacts.checkpoint_dir(artifacts_dir, run_id),
                   artifacts.model_dir(artifacts_dir, run_id))


def _scalar(value) -> float:
    return float(np.asarray(value).reshape(-1)[0])


def rng_variables(model: keras.Model):
    """The dropout seed-generator states: Keras does not track them for
    checkpoints, but an exact resume needs them."""
    return [v for v in model.variables if "seed_generator_state" in v.path]


def make_checkpoint(model: keras.Model) -> tf.train.Checkpoint:
    rng = {f"state_{i}": v.value for i, v in enumerate(rng_variables(model))}
    return tf.train.Checkpoint(model=model, optimizer=model.optimizer, rng=rng)


def weights_fingerprint(model: keras.Model) -> str:
    """SHA-256 of all trainable weights (identical runs print identical fingerprints)."""
    h = hashlib.sha256()
    for v in model.trainable_weights:
        h.update(np.ascontiguousarray(v.numpy()).tobytes())
    return h.hexdigest()[:16]


PROGRESS_FILE = "progress.json"


def _seconds_before(checkpoint_dir: str, step: int) -> float:
    """Training seconds spent before `step` by earlier pieces of the run (0 for a new run).

    A piece killed between its checkpoint and the progress record counts the
    seconds of the last step recorded before `step`.
    """
    path = os.path.join(checkpoint_dir, PROGRESS_FILE)
    if not step or not tf.io.gfile.exists(path):
        return 0.0
    with tf.io.gfile.GFile(path) as f:
        recorded = {int(k): v for k, v in json.load(f).items()}
    earlier = [k for k in recorded if k <= step]
    return float(recorded[max(earlier)]) if earlier else 0.0


def _record_progress(checkpoint_dir: str, step: int, seconds: float) -> None:
    path = os.path.join(checkpoint_dir, PROGRESS_FILE)
    progress = {}
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            progress = json.load(f)
    progress[str(step)] = round(seconds, 2)
    artifacts.write_json(path, progress)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _progress_bar(chief: bool, start: int, total: int):
    """A tqdm bar over the steps on the chief when stderr is a terminal (else a no-op bar)."""
    import sys

    from tqdm import tqdm

    return tqdm(total=total, initial=start, unit="step", dynamic_ncols=True, file=sys.stderr,
                disable=None if chief else True, desc="training")


def _learning_rate(optimizer) -> float:
    lr = optimizer.learning_rate
    return float(lr.numpy() if hasattr(lr, "numpy") else lr)


class BestWeights:
    """The best-scored weights of a run so far: in memory on every worker, on disk on the chief.

    The chief writes them to `<checkpoint_dir>/best/` (`weights` and `best.json`
    with the step and the score) before the step's own checkpoint, so a run
    killed anywhere resumes knowing its best so far: a kill between the two
    redoes the step, reaches the same weights (exact resume) and scores them the
    same, which is no improvement. Every worker scores the model itself (the
    scores are deterministic), so all make the same choices.
    """

    SUBDIR = "best"

    def __init__(self, model: keras.Model, checkpoint_dir: str, chief: bool):
        self.model, self.chief = model, chief
        self.directory = os.path.join(checkpoint_dir, self.SUBDIR)
        self.step, self.score, self.values = None, None, None
        record = os.path.join(self.directory, "best.json")
        if tf.io.gfile.exists(record):
            with tf.io.gfile.GFile(record) as f:
                saved = json.load(f)
            current = [v.numpy() for v in model.weights]
            self._checkpoint().read(os.path.join(self.directory, "weights")).assert_consumed()
            self.values = [v.numpy() for v in model.weights]
            for v, value in zip(model.weights, current):
                v.assign(value)
            self.step, self.score = int(saved["step"]), float(saved["score"])

    def _checkpoint(self) -> tf.train.Checkpoint:
        return tf.train.Checkpoint(**{f"w{i}": v for i, v in enumerate(self.model.weights)})

    def offer(self, step: int, score: Optional[float]) -> bool:
        """Keeps the model's weights if `score` beats the best so far (ties keep the earlier)."""
        if score is None or not math.isfinite(score) or (self.score is not None and score <= self.score):
            return False
        self.step, self.score = step, float(score)
        self.values = [v.numpy() for v in self.model.weights]
        if self.chief:
            self._checkpoint().write(os.path.join(self.directory, "weights"))
            artifacts.write_json(os.path.join(self.directory, "best.json"), {"step": step, "score": self.score})
        return True

    def restore(self) -> None:
        """Puts the best weights back into the model (nothing when none was scored)."""
        if self.values is not None:
            for v, value in zip(self.model.weights, self.values):
                v.assign(value)


def run_training(model: keras.Model, make_dataset: Callable[[int], tf.data.Dataset],
                 strategy: tf.distribute.Strategy, loop: LoopConfig, paths: RunPaths, chief: bool = True,
                 on_epoch_end: Optional[Callable[[int, int], Dict[str, float]]] = None,
                 after_step: Optional[Callable[[int, keras.Model], None]] = None,
                 select: Optional[Callable[[int], Optional[float]]] = None) -> Dict[str, float]:
    """Trains `model` for `loop.total_steps` optimizer steps, resuming if a checkpoint exists.

    Args:
        model: keras.Model. Compiled (optimizer set, `jit_compile=False`) and
            built inside `strategy.scope()`; its `train_step` defines the method.
        make_dataset: callable. start_step -> dataset of global batches that
            continues the data stream at `start_step` (same seed, same order).
        strategy: tf.distribute.Strategy.
        loop: LoopConfig.
        paths: RunPaths. Checkpoints and TensorBoard logs go there.
        chief: bool. Whether this task keeps checkpoints and logs (multi-worker:
            the other workers write to temporary directories they delete).
        on_epoch_end: callable. (epoch, step) -> metrics to log, or None.
        after_step: callable. (step, model) -> None, called after each step and
            its checkpoint (tests use it to interrupt a run).
        select: callable or None. step -> score (higher is better, None for no
            score), called every `loop.evaluate_every` steps and at each epoch's
            end on every worker; the run then ends with the best-scored weights
            (as sentence-transformers' `fit` with `save_best_model`, which the
            official Trans-Encoder reloads after each phase), see `BestWeights`.

    Returns:
        The last logged metrics, plus `step` and `seconds` (training time of
        the whole run, all pieces of a resumed run together), and with `select`
        `best_step` and `best_score`.

    Raises:
        NonFiniteLossError: when the loss becomes NaN/inf (the last good
            checkpoint is kept and named in the message).
    """
    ckpt_dir = paths.checkpoint_dir if chief else os.path.join(
        paths.checkpoint_dir, f".worker-{uuid.uuid4().hex[:8]}")
    checkpoint = make_checkpoint(model)
    manager = tf.train.CheckpointManager(checkpoint, ckpt_dir, max_to_keep=loop.max_checkpoints)
    with strategy.scope():
        model.optimizer.build(model.trainable_variables)
    start = 0
    # Every worker restores from the chief's checkpoints (non-chief workers only save to scratch).
    latest = tf.train.latest_checkpoint(paths.checkpoint_dir)
    if latest:
        checkpoint.restore(latest).assert_existing_objects_matched()
        start = int(model.optimizer.iterations.numpy())
        logging.info("Resumed %s from %s at step %d.", paths.run_id, latest, start)
    before = _seconds_before(paths.checkpoint_dir, start)
    best = BestWeights(model, paths.checkpoint_dir, chief) if select is not None else None
    if start >= loop.total_steps:
        logging.info("Run %s already finished (%d steps).", paths.run_id, start)
        return {"step": start, "seconds": before, **_best_of(best)}
    model.make_train_function()
    train_fn = model.train_function
    iterator = iter(strategy.experimental_distribute_dataset(make_dataset(start)))
    writer = tf.summary.create_file_writer(paths.log_dir if chief else os.path.join(ckpt_dir, "log"))
    began, logs, last_good = time.time(), {}, latest
    for metric in model.metrics:
        metric.reset_state()
    bar = _progress_bar(chief, start, loop.total_steps)
    try:
        for step in range(start + 1, loop.total_steps + 1):
            out = train_fn(iterator)
            loss = _scalar(out["loss"])
            if not math.isfinite(loss):
                raise NonFiniteLossError(
                    f"Run {paths.run_id}: the loss became {loss} at step {step}; training stopped. "
                    f"Last good checkpoint: {last_good or 'none (no checkpoint yet: a resume starts from step 0)'}."
                )
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4g}", refresh=False)
            if step % loop.log_every == 0 or step == loop.total_steps:
                logs = {k: _scalar(v) for k, v in out.items()}
                logs["learning_rate"] = _learning_rate(model.optimizer)
                with writer.as_default(step=step):
                    for k, v in logs.items():
                        tf.summary.scalar(f"train/{k}", v)
                rate = (step - start) / max(time.time() - began, 1e-9)
                logging.info("step %d/%d %s (%.3g steps/s, %s left)", step, loop.total_steps,
                             " ".join(f"{k}={v:.4g}" for k, v in logs.items()), rate,
                             _duration((loop.total_steps - step) / rate))
                for metric in model.metrics:
                    metric.reset_state()
            if best is not None and (step % loop.steps_per_epoch == 0 or step == loop.total_steps
                                     or (loop.evaluate_every and step % loop.evaluate_every == 0)):
                score = select(step)
                if best.offer(step, score):
                    logging.info("step %d: best score so far, %.4g.", step, score)
                with writer.as_default(step=step):
                    if score is not None:
                        tf.summary.scalar("eval/selection_score", score)
            if step % loop.checkpoint_every == 0 or step == loop.total_steps:
                last_good = manager.save(checkpoint_number=step)
                if chief:
                    _record_progress(paths.checkpoint_dir, step, before + time.time() - began)
            if on_epoch_end and step % loop.steps_per_epoch == 0:
                extra = on_epoch_end(step // loop.steps_per_epoch, step) or {}
                with writer.as_default(step=step):
                    for k, v in extra.items():
                        tf.summary.scalar(f"eval/{k}", v)
                logs.update(extra)
            if after_step:
                after_step(step, model)
    finally:
        bar.close()
    writer.flush()
    if not chief:
        tf.io.gfile.rmtree(ckpt_dir)
    if best is not None:
        logging.info("Run %s ends with the weights of step %s (score %s).", paths.run_id, best.step, best.score)
    return {**logs, "step": loop.total_steps, "seconds": round(before + time.time() - began, 2), **_best_of(best)}


def _best_of(best: Optional[BestWeights]) -> Dict[str, float]:
    """Puts the best weights into the model and reports them ({} without selection or score)."""
    if best is None or best.step is None:
        return {}
    best.restore()
    return {"best_step": best.step, "best_score": best.score}
