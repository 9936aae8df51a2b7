"""The life of a training run, shared by every method.

`train(config)` does what every method needs around its model and data: choose
the strategy, reserve the run ID (`common.artifacts.new_run_id`) or reload the
saved configuration of a run to resume, build the method's model (seeded),
compile it with the shared optimizer, train through
`common.training.loop.run_training`, call the evaluator it was given at the end
of each epoch, and publish `<artifacts>/model/<ID>/` atomically.

A method whose run trains several models in turn (Trans-Encoder's cycles)
registers a `driver` instead of the single-model part (`train_single_model`):
it gets a `RunContext` and returns a `RunOutcome`, and trains each phase through
`common.training.phases.PhaseRunner`, which reuses `run_training` per phase.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import tempfile
from typing import Any, Callable, Dict, Optional, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from common import artifacts
from common.data.sources import evaluation_sets_in
from common.models.export import export_encoder, export_pair_model, package_versions
from common.training import registry
from common.training.config import TrainConfig
from common.training.distribute import is_chief, make_strategy
from common.training.loop import LoopConfig, RunPaths, run_training, weights_fingerprint
from common.training.schedules import make_optimizer

RUN_CONFIG_FILE = "run_config.json"
# Run ID of a non-chief worker in a fresh multi-worker run (it writes only to scratch).
WORKER_RUN_ID = "worker"
WEIGHTS_SUBDIR = "weights"
# What an evaluator gets: a 1-D tf.string batch -> [batch, dim] embeddings function.
EmbedFn = Callable[[tf.Tensor], tf.Tensor]
# Evaluators are passed in (training never imports one): embed_fn -> {metric: value}.
Evaluator = Callable[[EmbedFn], Dict[str, float]]


def load_run_config(artifacts_dir: str, run_id: str) -> TrainConfig:
    """The configuration a run was started with (its checkpoint directory's run_config.json)."""
    path = artifacts.join(artifacts.checkpoint_dir(artifacts_dir, run_id), RUN_CONFIG_FILE)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Cannot resume {run_id}: {path} not found (was the run started by this toolkit, "
                                f"with this --artifacts_dir?).")
    with tf.io.gfile.GFile(path) as f:
        return registry.config_from_dict(json.load(f))


def resumed_config(config: TrainConfig) -> TrainConfig:
    """The saved configuration of `config.run.resume`, with this attempt's hardware settings."""
    run = config.run
    saved = load_run_config(run.artifacts_dir, run.resume)
    # Hardware may change between attempts; everything that defines the run may not.
    return dataclasses.replace(saved, run=dataclasses.replace(
        saved.run, strategy=run.strategy, tpu=run.tpu, resume=run.resume, artifacts_dir=run.artifacts_dir))


def _paths(config: TrainConfig, chief: bool) -> RunPaths:
    run = config.run
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


@contextlib.contextmanager
def seeded(seed: int):
    """Seeds what Keras draws default seeds from (Python's `random`, NumPy's global
    generator, Keras' global SeedGenerator) for the code inside, then restores them.

    Keras layers created without a seed (dropout, Dense initialisers) take one
    from there; building a model inside this block makes it a function of `seed`
    without leaving global state changed for the caller.
    """
    from keras.src.backend.common import global_state
    from keras.src.random.seed_generator import GLOBAL_SEED_GENERATOR

    py_state, np_state = random.getstate(), np.random.get_state()
    generator = global_state.get_global_attribute(GLOBAL_SEED_GENERATOR)
    random.seed(seed)
    np.random.seed(seed)
    global_state.set_global_attribute(GLOBAL_SEED_GENERATOR, None)
    try:
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
        global_state.set_global_attribute(GLOBAL_SEED_GENERATOR, generator)


def build_and_compile(config: TrainConfig, strategy: tf.distribute.Strategy):
    """The method's model, built seeded inside the strategy's scope and compiled with the shared optimizer."""
    method = registry.get(config.method)
    with strategy.scope(), seeded(config.run.seed):
        model = method.build_model(config)
        model.clip_norm = config.optimizer.clip_norm or None
        model.compile(optimizer=make_optimizer(config.optimizer, config.total_steps), jit_compile=False)
    return model


@dataclasses.dataclass
class RunContext:
    """What a run's training gets from `train`, whichever way it trains.

    Attributes:
        config: TrainConfig. Resolved and validated.
        strategy: tf.distribute.Strategy.
        paths: RunPaths. The run's log, checkpoint and model directories.
        chief: bool. Whether this task writes checkpoints and artifacts.
        evaluator: Evaluator or None.
        after_step: callable or None. (step, model), called after each step.
    """

    config: TrainConfig
    strategy: tf.distribute.Strategy
    paths: RunPaths
    chief: bool
    evaluator: Optional[Evaluator] = None
    after_step: Optional[Callable[[int, keras.Model], None]] = None


@dataclasses.dataclass
class RunOutcome:
    """What training returns to `train` for publishing.

    Attributes:
        metrics: dict. The last logged metrics (and evaluation scores).
        data: dict. The training data's description, with a "fingerprint".
        weights_fingerprint: str.
        write_models: callable. tmp directory -> None; writes the models (and
            `weights/`) of the artifact.
        record: dict. Extra entries of `config.json` (e.g. scores per phase).
        trained_on_evaluation_data: list of str. Evaluation sets the data overlaps.
    """

    metrics: Dict[str, Any]
    data: Dict[str, Any]
    weights_fingerprint: str
    write_models: Callable[[str], None]
    record: Dict[str, Any] = dataclasses.field(default_factory=dict)
    trained_on_evaluation_data: Sequence[str] = ()


def train_single_model(ctx: RunContext) -> RunOutcome:
    """The run of every method without its own driver: one model, `run.total_steps` steps."""
    config, evaluator, chief = ctx.config, ctx.evaluator, ctx.chief
    method = registry.get(config.method)
    model = build_and_compile(config, ctx.strategy)
    make_dataset, data_info = method.make_data(config, model)
    logging.info("Training data: %s", data_info)
    embed_fn = tf.function(model.encoder.embed_strings, input_signature=[tf.TensorSpec([None], tf.string)])

    def on_epoch_end(epoch: int, step: int):
        if not (chief and evaluator is not None and config.run.eval_each_epoch):
            return {}
        scores = evaluator(embed_fn)
        logging.info("epoch %d (step %d): %s", epoch, step, " ".join(f"{k}={v:.2f}" for k, v in scores.items()))
        return scores

    run = config.run
    loop = LoopConfig(total_steps=run.total_steps, steps_per_epoch=run.train_steps_per_epoch,
                      checkpoint_every=run.checkpoint_every, log_every=run.log_every)
    metrics = run_training(model, make_dataset, ctx.strategy, loop, ctx.paths, chief, on_epoch_end, ctx.after_step)

    def write_models(tmp: str) -> None:
        export_encoder(model.encoder, artifacts.join(tmp, "embedding"))
        if model.pair_outputs:
            export_pair_model(model, artifacts.join(tmp, "siamese"), model.pair_outputs)
        write_weights(model.weights_checkpoint(), tmp)

    return RunOutcome(metrics, data_info, weights_fingerprint(model), write_models,
                      {"encoder": dataclasses.asdict(model.encoder.encoder_config)},
                      evaluation_sets_in(config.run.train_data))


def train(config: TrainConfig, evaluator: Optional[Evaluator] = None, after_step=None) -> Dict[str, Any]:
    """Runs one training method end to end and publishes its artifacts.

    A method trains one model (`train_single_model`), or, when it registers a
    `driver`, several in phases (Trans-Encoder); either way this function owns
    the run's ID, saved configuration and atomic publishing.

    Args:
        config: TrainConfig. With `run.resume` set, the saved configuration of
            that run is used (only the strategy and TPU may change).
        evaluator: callable or None. embed_fn -> {metric: value}, called on the
            chief at the end of each epoch when `run.eval_each_epoch` is set
            (`common.evaluation.StsbDevEvaluator` in train.py).
        after_step: callable (step, model), called after each step (tests).

    Returns:
        Dict with `run_id`, `model_dir` (None on non-chief workers), `metrics`,
        `data`, `weights_fingerprint` and the resolved `config`.
    """
    if config.run.resume:
        config = resumed_config(config)
    method = registry.get(config.method)
    if not config.run.resume and method.resolve is not None:
        config = method.resolve(config)
    config.validate()
    strategy = make_strategy(config.run.strategy, config.run.tpu)
    chief = is_chief(strategy)
    paths = _paths(config, chief)
    if chief and not config.run.resume:
        tf.io.gfile.makedirs(paths.checkpoint_dir)
        artifacts.write_json(artifacts.join(paths.checkpoint_dir, RUN_CONFIG_FILE), config.to_dict())
    logging.info("Run %s (%s): %d replica(s); %s", paths.run_id, config.method, strategy.num_replicas_in_sync, config)
    context = RunContext(config, strategy, paths, chief, evaluator, after_step)
    outcome = (method.driver or train_single_model)(context)
    result = {"run_id": paths.run_id, "model_dir": None, "metrics": outcome.metrics, "data": outcome.data,
              "weights_fingerprint": outcome.weights_fingerprint, "config": config}
    if paths.run_id == WORKER_RUN_ID:
        tf.io.gfile.rmtree(os.path.dirname(paths.log_dir))  # a non-chief worker's scratch directory
    if chief:
        record = {"method": config.method, "config": config.to_dict(), "data": outcome.data,
                  "metrics": outcome.metrics, "trained_on_evaluation_data": list(outcome.trained_on_evaluation_data),
                  "weights_fingerprint": outcome.weights_fingerprint, **outcome.record}
        result["model_dir"] = publish_artifact(paths, record, outcome.write_models)
    return result
