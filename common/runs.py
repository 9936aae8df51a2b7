"""The life of a training run, shared by every method.

`run_method` does what every method needs around its model and data: choose the
strategy, reserve the run ID (or reload the configuration of a run to resume),
seed, build, train through `common.training.run_training`, evaluate STS-B dev at
the end of each epoch, and publish `artifacts/model/<ID>/` atomically.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from typing import Any, Callable, Dict, Optional, Tuple

import keras
import tensorflow as tf
from absl import logging

from common import artifacts
from common.distribute import is_chief, make_strategy
from common.embedding import embed_sentences
from common.export import export_encoder, export_pair_model, package_versions
from common.sts import stsb_dev_spearman
from common.training import LoopConfig, RunPaths, run_training, weights_fingerprint

RUN_CONFIG_FILE = "run_config.json"
# Run ID of a non-chief worker in a fresh multi-worker run (it writes only to scratch).
WORKER_RUN_ID = "worker"
WEIGHTS_SUBDIR = "weights"


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Settings every training method has (method configs extend it).

    Attributes:
        data_path: str. Data root (SentEval layout).
        train_epochs: int. Epochs of `train_steps_per_epoch` steps.
        train_steps_per_epoch: int. Steps per epoch (evaluation interval).
        seed: int. Seeds data order, sampling, initialisation and dropout.
        strategy: str. See `common.distribute.make_strategy`.
        tpu: str. TPU address for strategy "tpu".
        artifacts_dir: str. Root of model/, log/, ckpt/.
        log_dir: str. TensorBoard directory override.
        model_dir: str. Final model directory override.
        resume: str. Run ID to continue.
        checkpoint_every: int. Steps between checkpoints.
        log_every: int. Steps between log lines.
        eval_each_epoch: bool. STS-B dev Spearman at each epoch end.
    """

    data_path: str = "data"
    train_epochs: int = 1
    train_steps_per_epoch: int = 500
    seed: int = 0
    strategy: str = "auto"
    tpu: str = ""
    artifacts_dir: str = "artifacts"
    log_dir: str = ""
    model_dir: str = ""
    resume: str = ""
    checkpoint_every: int = 500
    log_every: int = 50
    eval_each_epoch: bool = True

    @property
    def total_steps(self) -> int:
        return self.train_epochs * self.train_steps_per_epoch

    def validate_run(self) -> None:
        for name in ("train_epochs", "train_steps_per_epoch", "checkpoint_every", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be >= 1, got {getattr(self, name)}.")


def _load_run_config(path: str, current: RunConfig) -> RunConfig:
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Cannot resume: {path} not found (was the run started by this toolkit?).")
    with tf.io.gfile.GFile(path) as f:
        saved = json.load(f)
    for field in dataclasses.fields(current):
        if isinstance(field.default, tuple) and field.name in saved:
            saved[field.name] = tuple(saved[field.name])
    # Hardware may change between attempts; everything that defines the run may not.
    saved.update(strategy=current.strategy, tpu=current.tpu, resume=current.resume)
    return type(current)(**saved)


def _paths(config: RunConfig, chief: bool) -> RunPaths:
    if config.resume:
        run_id = config.resume
    elif chief:
        run_id = artifacts.new_run_id(config.artifacts_dir)
    else:
        tmp = tempfile.mkdtemp(prefix="worker-")
        return RunPaths(WORKER_RUN_ID, os.path.join(tmp, "log"), os.path.join(tmp, "ckpt"),
                        os.path.join(tmp, "model"))
    paths = RunPaths.for_run(config.artifacts_dir, run_id)
    return dataclasses.replace(paths, log_dir=config.log_dir or paths.log_dir,
                               model_dir=config.model_dir or paths.model_dir)


def publish(model: keras.Model, paths: RunPaths, record: Dict[str, Any],
            pair_outputs: Optional[Tuple[str, ...]] = None) -> str:
    """Writes `model_dir/` atomically: `embedding/` (SavedModel of `model.encoder`),
    `siamese/` when `pair_outputs` is given, `weights/` (`model.weights_checkpoint()`)
    and `config.json` (`record` plus encoder settings and package versions)."""

    def write(tmp: str) -> None:
        export_encoder(model.encoder, artifacts.join(tmp, "embedding"))
        if pair_outputs:
            export_pair_model(model, artifacts.join(tmp, "siamese"), pair_outputs)
        model.weights_checkpoint().write(artifacts.join(tmp, WEIGHTS_SUBDIR, "weights"))
        # tf.train.latest_checkpoint needs the index file that CheckpointManager writes.
        with tf.io.gfile.GFile(artifacts.join(tmp, WEIGHTS_SUBDIR, "checkpoint"), "w") as f:
            f.write('model_checkpoint_path: "weights"\nall_model_checkpoint_paths: "weights"\n')
        artifacts.write_json(artifacts.join(tmp, "config.json"), {
            "run_id": paths.run_id,
            **record,
            "encoder": dataclasses.asdict(model.encoder.encoder_config),
            "packages": package_versions(),
        })

    return artifacts.write_atomically(paths.model_dir, write)


def pretrained_weights_prefix(pretrained: str, artifacts_dir: str) -> Tuple[str, Dict[str, Any]]:
    """The weights checkpoint prefix and config.json of a run ID or artifact directory."""
    from common.resolve import model_path

    path = model_path(pretrained, artifacts_dir)
    if path is None:
        raise FileNotFoundError(f"--pretrained_weights={pretrained!r}: no such run ID or directory.")
    prefix = tf.train.latest_checkpoint(artifacts.join(path, WEIGHTS_SUBDIR))
    if prefix is None:
        raise FileNotFoundError(f"--pretrained_weights: no weights in {path}/{WEIGHTS_SUBDIR}; "
                                "expected a model trained by train.py.")
    with tf.io.gfile.GFile(artifacts.join(path, "config.json")) as f:
        return prefix, json.load(f)


BuildFn = Callable[[Any, tf.distribute.Strategy], keras.Model]
DataFn = Callable[[Any, keras.Model], Tuple[Callable[[int], tf.data.Dataset], Dict[str, Any]]]


def run_method(config: RunConfig, method: str, build_model: BuildFn, make_data: DataFn,
               pair_outputs: Optional[Tuple[str, ...]] = None, after_step=None) -> Dict[str, Any]:
    """Runs one training method end to end and publishes its artifacts.

    Args:
        config: RunConfig subclass instance (validated by its `validate()`).
        method: str. Recorded in config.json.
        build_model: (config, strategy) -> compiled model with an `encoder` and
            a `weights_checkpoint()`, built inside `strategy.scope()`.
        make_data: (config, model) -> (make_dataset(start_step), data info).
        pair_outputs: tuple of str. Export a `siamese/` pair model with these outputs.
        after_step: callable (step, model), called after each step (tests).

    Returns:
        Dict with `run_id`, `model_dir` (None on non-chief workers), `metrics`,
        `data` and `weights_fingerprint`.
    """
    strategy = make_strategy(config.strategy, config.tpu)
    chief = is_chief(strategy)
    if config.resume:
        config = _load_run_config(
            artifacts.join(artifacts.checkpoint_dir(config.artifacts_dir, config.resume), RUN_CONFIG_FILE), config)
    config.validate()
    paths = _paths(config, chief)
    if chief and not config.resume:
        tf.io.gfile.makedirs(paths.checkpoint_dir)
        artifacts.write_json(artifacts.join(paths.checkpoint_dir, RUN_CONFIG_FILE), dataclasses.asdict(config))
    logging.info("Run %s (%s): %d replica(s); %s", paths.run_id, method, strategy.num_replicas_in_sync, config)
    keras.utils.set_random_seed(config.seed)
    model = build_model(config, strategy)
    make_dataset, data_info = make_data(config, model)
    logging.info("Training data: %s", data_info)
    embed_fn = tf.function(model.encoder.embed_strings, input_signature=[tf.TensorSpec([None], tf.string)])

    def on_epoch_end(epoch: int, step: int):
        if not (chief and config.eval_each_epoch):
            return {}
        try:
            score = stsb_dev_spearman(lambda s: embed_sentences(embed_fn, s, 128, progress=False), config.data_path)
        except FileNotFoundError as e:
            logging.warning("No STS-B dev evaluation: %s", e)
            return {}
        logging.info("epoch %d (step %d): STS-B dev Spearman %.2f", epoch, step, score)
        return {"stsb_dev_spearman": score}

    loop = LoopConfig(total_steps=config.total_steps, steps_per_epoch=config.train_steps_per_epoch,
                      checkpoint_every=config.checkpoint_every, log_every=config.log_every)
    metrics = run_training(model, make_dataset, strategy, loop, paths, chief, on_epoch_end, after_step)
    fingerprint = weights_fingerprint(model)
    result = {"run_id": paths.run_id, "model_dir": None, "metrics": metrics, "data": data_info,
              "weights_fingerprint": fingerprint}
    if paths.run_id == WORKER_RUN_ID:
        tf.io.gfile.rmtree(os.path.dirname(paths.log_dir))  # a non-chief worker's scratch directory
    if chief:
        record = {"method": method, "config": dataclasses.asdict(config), "data": data_info, "metrics": metrics,
                  "weights_fingerprint": fingerprint}
        result["model_dir"] = publish(model, paths, record, pair_outputs)
    return result
