"""Run management shared by every training method.

`run_training` drives a compiled Keras model's own `train_step` (through
`model.make_train_function()`, exactly what `fit` runs) step by step, so that it
can: resume an interrupted run from its last checkpoint and continue the data
stream where it stopped (the dataset is rebuilt and fast-forwarded to the
restored step); checkpoint every N steps; write TensorBoard scalars; and stop on
a non-finite loss while keeping the last good checkpoint.

An `evaluate` function is called every `LoopConfig.evaluate_every` steps and at
epoch ends; its metrics go to TensorBoard (`eval/<metric>`), and with a
`Selection` the run ends with the weights of its best-scored evaluation
(`BestWeights`), exactly across a kill and resume.

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
from typing import Any, Callable, Dict, Optional

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from common import artifacts
from common.errors import UserError
from common.training.distribute import chief_score


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
        evaluate_every: int. Steps between two calls of `run_training`'s
            `evaluate`; 0: none but those below. Defaults to 0.
        evaluate_epoch_ends: bool. Evaluate at each epoch's end too. Defaults to True.
    """

    total_steps: int
    steps_per_epoch: int
    checkpoint_every: int = 500
    log_every: int = 50
    max_checkpoints: int = 2
    evaluate_every: int = 0
    evaluate_epoch_ends: bool = True

    def evaluates_at(self, step: int, selecting: bool) -> bool:
        """Whether `step` is evaluated; with a selection the last step always is (its score is reported)."""
        return bool((self.evaluate_every and step % self.evaluate_every == 0)
                    or (self.evaluate_epoch_ends and step % self.steps_per_epoch == 0)
                    or (selecting and step == self.total_steps))


@dataclasses.dataclass(frozen=True)
class Selection:
    """Which evaluation metric chooses the weights a run ends with (Keras'
    `ModelCheckpoint(monitor=, mode=, save_best_only=True)`).

    Attributes:
        metric: str. A key of the metrics `run_training`'s `evaluate` returns.
        higher_is_better: bool. False for a loss. Defaults to True.
        missing: str or None. None: an evaluation without the metric is no
            candidate (a run never scored ends with its last weights). A string:
            such an evaluation is a UserError on every worker, whose message ends
            with this string. Defaults to None.
    """

    metric: str
    higher_is_better: bool = True
    missing: Optional[str] = None


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

    The chief writes them to `<checkpoint_dir>/best/` before the step's own
    checkpoint: the weights (`weights-<step>`), then `best.json`, which names
    them and records the best step, its score and evaluation metrics, and the
    last evaluated step and its score; only then are older weights deleted. So a
    run killed anywhere resumes knowing its best so far: a kill before
    `best.json` is rewritten leaves the previous record and its weights intact,
    and the resumed run redoes the step, reaches the same weights (exact resume)
    and scores them the same. Every worker is offered the same scores (the
    chief's, see `common.training.distribute.chief_score`), so all make the same
    choices.

    Args:
        model: keras.Model. Whose `weights` are kept.
        checkpoint_dir: str. The run's checkpoint directory.
        chief: bool. Whether this task writes `best/`.
        higher_is_better: bool. False: the lowest score is the best. Defaults to True.
    """

    SUBDIR = "best"
    RECORD = "best.json"

    def __init__(self, model: keras.Model, checkpoint_dir: str, chief: bool, higher_is_better: bool = True):
        self.model, self.chief, self.higher_is_better = model, chief, higher_is_better
        self.directory = os.path.join(checkpoint_dir, self.SUBDIR)
        self.step, self.score, self.metrics, self.values = None, None, {}, None
        self.last_step, self.last_score = None, None
        record = os.path.join(self.directory, self.RECORD)
        if tf.io.gfile.exists(record):
            with tf.io.gfile.GFile(record) as f:
                saved = json.load(f)
            self.last_step, self.last_score = saved.get("last_step"), saved.get("last_score")
            if saved.get("step") is not None:
                current = [v.numpy() for v in model.weights]
                # Records written before the weights were named by their step name "weights".
                prefix = os.path.join(self.directory, saved.get("weights", "weights"))
                self._checkpoint().read(prefix).assert_consumed()
                self.values = [v.numpy() for v in model.weights]
                for v, value in zip(model.weights, current):
                    v.assign(value)
                self.step, self.score = int(saved["step"]), float(saved["score"])
                self.metrics = saved.get("metrics", {})

    def _checkpoint(self) -> tf.train.Checkpoint:
        return tf.train.Checkpoint(**{f"w{i}": v for i, v in enumerate(self.model.weights)})

    def _better(self, score: Optional[float]) -> bool:
        if score is None or not math.isfinite(score):
            return False
        if self.score is None:
            return True
        return score > self.score if self.higher_is_better else score < self.score  # ties keep the earlier

    def offer(self, step: int, score: Optional[float], metrics: Optional[Dict[str, float]] = None) -> bool:
        """Records an evaluation; keeps the model's weights if `score` beats the best so far.

        Args:
            step: int. The evaluated step.
            score: float or None. The selection metric's value (None: not scored).
            metrics: dict. The evaluation's metrics, reported with the best step.

        Returns:
            Whether the weights were kept (a new best).
        """
        improved = self._better(score)
        self.last_step, self.last_score = step, score
        if improved:
            self.step, self.score = step, float(score)
            self.metrics = {k: float(v) for k, v in (metrics or {}).items()}
            self.values = [v.numpy() for v in self.model.weights]
        if self.chief:
            self._write(improved)
        return improved

    def _write(self, improved: bool) -> None:
        name = None if self.step is None else f"weights-{self.step}"
        tf.io.gfile.makedirs(self.directory)
        if improved:
            self._checkpoint().write(os.path.join(self.directory, name))
        artifacts.write_json(os.path.join(self.directory, self.RECORD), {
            "step": self.step, "score": self.score, "metrics": self.metrics, "weights": name,
            "last_step": self.last_step, "last_score": self.last_score})
        for path in tf.io.gfile.glob(os.path.join(self.directory, "weights*")):
            if name is None or not os.path.basename(path).startswith(name + "."):
                tf.io.gfile.remove(path)  # older best weights, or those of a write a kill cut short

    def restore(self) -> None:
        """Puts the best weights back into the model (nothing when none was scored)."""
        if self.values is not None:
            for v, value in zip(self.model.weights, self.values):
                v.assign(value)

    def report(self) -> Dict[str, Any]:
        """The best evaluation's metrics, with `best_step`, `best_score` (when one was
        scored), `last_step` and `last_score` (when one was evaluated)."""
        out: Dict[str, Any] = {}
        if self.step is not None:
            out.update(self.metrics, best_step=self.step, best_score=self.score)
        if self.last_step is not None:
            out.update(last_step=self.last_step, last_score=self.last_score)
        return out


def run_training(model: keras.Model, make_dataset: Callable[[int], tf.data.Dataset],
                 strategy: tf.distribute.Strategy, loop: LoopConfig, paths: RunPaths, chief: bool = True,
                 evaluate: Optional[Callable[[int], Dict[str, float]]] = None,
                 after_step: Optional[Callable[[int, keras.Model], None]] = None,
                 selection: Optional[Selection] = None) -> Dict[str, Any]:
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
        evaluate: callable. step -> {metric: value}, called on every worker at the
            steps `loop.evaluates_at` names, before the step's checkpoint; the
            values are logged as `eval/<metric>`. It may score on the chief only
            (collective parts, e.g. `MethodModel.validation_metrics`, on all).
        after_step: callable. (step, model) -> None, called after each step and
            its checkpoint (tests use it to interrupt a run).
        selection: Selection or None. The run then ends with the weights of the
            evaluation that scored best on `selection.metric` (the chief's value,
            shared with every worker), as sentence-transformers' `fit` with
            `save_best_model` or the official SimCSE trainer's best checkpoint;
            see `BestWeights`. Needs `evaluate`.

    Returns:
        The last logged metrics and the last evaluation's (with a selection, the
        best evaluation's, whose weights the model ends with), plus `step` and
        `seconds` (training time of the whole run, all pieces of a resumed run
        together), and with a selection `best_step`, `best_score`, `last_step`
        and `last_score` (`BestWeights.report`).

    Raises:
        NonFiniteLossError: when the loss becomes NaN/inf (the last good
            checkpoint is kept and named in the message).
        UserError: an evaluation without the selection's metric, when
            `selection.missing` says that is an error.
    """
    if selection is not None and evaluate is None:
        raise ValueError("run_training: a selection needs an evaluate function to score the model.")
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
    best = None if selection is None else BestWeights(model, paths.checkpoint_dir, chief,
                                                      selection.higher_is_better)
    if start >= loop.total_steps:
        logging.info("Run %s already finished (%d steps).", paths.run_id, start)
        return {**_ending(best), "step": start, "seconds": before}
    model.make_train_function()
    train_fn = model.train_function
    iterator = iter(strategy.experimental_distribute_dataset(make_dataset(start)))
    writer = tf.summary.create_file_writer(paths.log_dir if chief else os.path.join(ckpt_dir, "log"))
    began, logs, evaluated, last_good = time.time(), {}, {}, latest
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
            if evaluate is not None and loop.evaluates_at(step, selection is not None):
                evaluated = dict(evaluate(step) or {})
                with writer.as_default(step=step):
                    for k, v in evaluated.items():
                        tf.summary.scalar(f"eval/{k}", v)
                if best is not None:
                    _offer(best, selection, step, evaluated, strategy, chief, paths.run_id)
            if step % loop.checkpoint_every == 0 or step == loop.total_steps:
                last_good = manager.save(checkpoint_number=step)
                if chief:
                    _record_progress(paths.checkpoint_dir, step, before + time.time() - began)
            if after_step:
                after_step(step, model)
    finally:
        bar.close()
    writer.flush()
    if not chief:
        tf.io.gfile.rmtree(ckpt_dir)
    if best is not None:
        logging.info("Run %s ends with the weights of step %s (%s %s).", paths.run_id, best.step, selection.metric,
                     best.score)
    return {**logs, **evaluated, **_ending(best), "step": loop.total_steps,
            "seconds": round(before + time.time() - began, 2)}


def _offer(best: BestWeights, selection: Selection, step: int, evaluated: Dict[str, float],
           strategy: tf.distribute.Strategy, chief: bool, run_id: str) -> None:
    """Offers one evaluation to `best`, with the chief's score on every worker."""
    score = chief_score(strategy, evaluated.get(selection.metric), chief)
    if score is None and selection.missing is not None:
        raise UserError(f"Run {run_id}: the evaluation at step {step} gave no {selection.metric} to select on "
                         f"(it gave: {', '.join(sorted(evaluated)) or 'nothing'}). {selection.missing}")
    if best.offer(step, score, evaluated):
        logging.info("step %d: best %s so far, %.4g.", step, selection.metric, score)


def _ending(best: Optional[BestWeights]) -> Dict[str, Any]:
    """Puts the best weights into the model and reports them ({} without a selection)."""
    if best is None:
        return {}
    best.restore()
    return best.report()
