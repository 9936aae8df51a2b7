"""The life of a training run, shared by every method: the driver.

`train(config)` does what every method needs around its model and data: choose
the strategy, check the run's settings (`common.training.run_settings`: what a
resumed run may change, what `--publish_best` selects on), reserve the run ID
or reload the saved configuration of a run to resume, build the method's model
(seeded), compile it with the shared optimizer, train through
`common.training.loop.run_training`, call the evaluator it was given at each
evaluation (epoch ends, every `--eval_every` steps), and publish
`<artifacts>/model/<ID>/` atomically (`common.training.publishing`: with
`--publish_best`, the weights of the best-scored evaluation), with the run's
training curves (`training_curves.png`, drawn from its TensorBoard scalars by
`common.training.curves`; see `publishing.draw_curves` for what happens when they
cannot be drawn).

A method whose run trains several models in turn (Trans-Encoder's cycles)
registers a `driver` instead of the single-model part (`train_single_model`):
it gets a `RunContext` and returns a `RunOutcome`, and trains each phase through
`common.training.phases.PhaseRunner`, which reuses `run_training` per phase.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging as std_logging
import os
import random
from typing import Any, Callable, Dict, Optional, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from common import artifacts, compat, figures
from common.data.sources import evaluation_sets_in
from common.errors import UserError
from common.models.encoder import inference_encoder
from common.export.saved_model import export_encoder, export_pair_model
from common.training import registry
from common.training.curves import CURVES_FILE
from common.training.config import TrainConfig
from common.training.distribute import is_chief, make_strategy
from common.training.loop import LoopConfig, NonFiniteLossError, RunPaths, run_training, weights_fingerprint
from common.training.publishing import WORKER_RUN_ID, draw_curves, publish_artifact, run_paths, write_weights
from common.training.run_settings import (RUN_CONFIG_FILE, Evaluator, check_evaluation, load_run_config,
                                          resume_changes, selection_of, selection_record)
from common.training.schedules import make_optimizer

# What an evaluator gets: a 1-D tf.string batch -> [batch, dim] embeddings function.
EmbedFn = Callable[[tf.Tensor], tf.Tensor]


@contextlib.contextmanager
def seeded(seed: int):
    """Seeds what Keras draws default seeds from (Python's `random`, NumPy's global
    generator, Keras' global SeedGenerator) for the code inside, then restores them.

    Keras layers created without a seed (dropout, Dense initialisers) take one
    from there; building a model inside this block makes it a function of `seed`
    without leaving global state changed for the caller.
    """
    py_state, np_state = random.getstate(), np.random.get_state()
    generator = compat.get_global_seed_generator()
    random.seed(seed)
    np.random.seed(seed)
    compat.set_global_seed_generator(None)
    try:
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
        compat.set_global_seed_generator(generator)


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


def prepare_single_model(config: TrainConfig, strategy: tf.distribute.Strategy):
    """The method's compiled model and its data: (model, make_dataset, data info)."""
    model = build_and_compile(config, strategy)
    make_dataset, data_info = registry.get(config.method).make_data(config, model)
    return model, make_dataset, data_info


def train_single_model(ctx: RunContext, prepared=None) -> RunOutcome:
    """The run of every method without its own driver: one model, `run.total_steps` steps.

    Args:
        ctx: RunContext.
        prepared: (model, make_dataset, data info) from `prepare_single_model`, or None to build them here.
    """
    config, evaluator, chief = ctx.config, ctx.evaluator, ctx.chief
    model, make_dataset, data_info = prepared or prepare_single_model(config, ctx.strategy)
    logging.info("Training data: %s", data_info)
    # Scored as the published model is used: at the model's own length, not the training length.
    embed_fn = model.encoder.with_length().embedding_function()
    run = config.run

    def evaluate(step: int) -> Dict[str, float]:
        scores = model.validation_metrics()  # every worker: it is collective
        if chief and evaluator is not None:  # the chief's score is shared for a selection (run_training)
            scores.update(evaluator(embed_fn))
        if scores:
            logging.info("step %d (epoch %.4g): %s", step, step / run.train_steps_per_epoch,
                         " ".join(f"{k}={v:.4g}" for k, v in scores.items()))
        return scores

    loop = LoopConfig(total_steps=run.total_steps, steps_per_epoch=run.train_steps_per_epoch,
                      checkpoint_every=run.checkpoint_every, log_every=run.log_every,
                      evaluate_every=run.eval_every, evaluate_epoch_ends=run.eval_each_epoch)
    selection = selection_of(config, model, evaluator)
    metrics = run_training(model, make_dataset, ctx.strategy, loop, ctx.paths, chief, evaluate, ctx.after_step,
                           selection)
    record = {"encoder": dataclasses.asdict(model.encoder.encoder_config)}
    if selection is not None:
        record["selection"] = selection_record(selection, metrics)
        logging.info("Publishing the weights of step %s: %s", record["selection"]["step"], record["selection"])

    def write_models(tmp: str) -> None:
        export_encoder(inference_encoder(model.encoder), artifacts.join(tmp, "embedding"))
        if model.pair_outputs:
            export_pair_model(model, artifacts.join(tmp, "siamese"), model.pair_outputs)
        write_weights(model.weights_checkpoint(), tmp)

    return RunOutcome(metrics, data_info, weights_fingerprint(model), write_models, record,
                      evaluation_sets_in(config.run.train_data))


def train(config: TrainConfig, evaluator: Optional[Evaluator] = None, after_step=None) -> Dict[str, Any]:
    """Runs one training method end to end and publishes its artifacts.

    A method trains one model (`train_single_model`), or, when it registers a
    `driver`, several in phases (Trans-Encoder); either way this function owns
    the run's ID, saved configuration and atomic publishing.

    Args:
        config: TrainConfig. With `run.resume` set, it continues that run: it
            may differ from the saved configuration only in RESUME_MAY_CHANGE.
        evaluator: callable or None. embed_fn -> {metric: value}, called on the
            chief at each evaluation: epoch ends with `run.eval_each_epoch`, every
            `run.eval_every` steps (`common.evaluation.StsbDevEvaluator` in
            train.py); with `run.publish_best` its score chooses the published weights.
        after_step: callable (step, model), called after each step (tests).

    Returns:
        Dict with `run_id`, `model_dir` (None on non-chief workers), `metrics`,
        `data`, `weights_fingerprint`, the resolved `config` and, with
        `run.publish_best`, the `selection` that config.json records (else None).
    """
    method = registry.get(config.method)
    if method.resolve is not None:
        # What depends on the data is fixed once; a resumed run's saved settings already hold it, so
        # resolving is a no-op there, and a caller's unresolved config compares equal to them.
        config = method.resolve(config)
    changes: Dict[str, Any] = {}
    if config.run.resume:
        changes = resume_changes(load_run_config(config.run.artifacts_dir, config.run.resume), config)
    config.validate()
    strategy = make_strategy(config.run.strategy, config.run.tpu)
    chief = is_chief(strategy)
    # For a single-model method the encoder and the data are loaded before a run ID is
    # reserved: a run that fails on its --model or its data leaves nothing behind.
    prepared = None if method.driver else prepare_single_model(config, strategy)
    if prepared is not None:  # a driver checks its own evaluation settings
        check_evaluation(config, evaluator, prepared[0])
    paths = run_paths(config, chief)
    if chief and tf.io.gfile.exists(paths.model_dir):
        raise UserError(
            f"{paths.model_dir} exists and artifacts are never overwritten: run {paths.run_id} is already published "
            "there, or --model_dir names a used directory. Give --model_dir=<a new directory> (with --resume and a "
            "larger --train_epochs to extend a finished run).")
    if chief and (not config.run.resume or changes.keys() - {"resume"}):
        artifacts.makedirs(paths.checkpoint_dir)
        artifacts.write_json(artifacts.join(paths.checkpoint_dir, RUN_CONFIG_FILE), config.to_dict())
    if changes.keys() - {"resume"}:
        logging.info("Run %s resumes with changed settings: %s", paths.run_id, changes)
    if chief:
        artifacts.stale_temporaries(os.path.dirname(paths.model_dir.rstrip("/")))
    with _log_file(paths.log_dir if chief else None):
        logging.info("Run %s (%s): %d replica(s); %s", paths.run_id, config.method, strategy.num_replicas_in_sync,
                     config)
        return _train_and_publish(config, RunContext(config, strategy, paths, chief, evaluator, after_step),
                                  method, prepared)


LOG_FILE = "train.log"


@contextlib.contextmanager
def _log_file(log_dir: Optional[str]):
    """Copies the run's log lines to `<log_dir>/train.log` (local log directories; a
    gs:// run logs to the console and TensorBoard only)."""
    if not log_dir or "://" in log_dir:
        yield
        return
    os.makedirs(log_dir, exist_ok=True)
    handler = std_logging.FileHandler(os.path.join(log_dir, LOG_FILE), encoding="utf-8")
    handler.setFormatter(logging.PythonFormatter())
    handler.setLevel(std_logging.INFO)
    logger = logging.get_absl_logger()
    verbosity = logging.get_verbosity()
    if verbosity < logging.INFO:  # absl before its flags are parsed (library use): WARNING
        logging.set_verbosity(logging.INFO)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logging.set_verbosity(verbosity)
        handler.close()


def _train_and_publish(config: TrainConfig, context: RunContext, method, prepared) -> Dict[str, Any]:
    paths, chief = context.paths, context.chief
    resume_command = f"python train.py --resume={paths.run_id} --artifacts_dir={config.run.artifacts_dir}"
    try:
        outcome = method.driver(context) if method.driver else train_single_model(context, prepared)
    except NonFiniteLossError as e:
        raise NonFiniteLossError(
            f"{e} To continue from there with a lower learning rate: {resume_command} "
            f"--train_lr={config.optimizer.train_lr / 2:g}") from None
    result = {"run_id": paths.run_id, "model_dir": None, "metrics": outcome.metrics, "data": outcome.data,
              "weights_fingerprint": outcome.weights_fingerprint, "config": config,
              "selection": outcome.record.get("selection")}
    if paths.run_id == WORKER_RUN_ID:
        tf.io.gfile.rmtree(os.path.dirname(paths.log_dir))  # a non-chief worker's scratch directory
    if chief:
        curves, curves_record = draw_curves(paths, config.method)
        record = {"method": config.method, "config": config.to_dict(), "data": outcome.data,
                  "metrics": outcome.metrics, "trained_on_evaluation_data": list(outcome.trained_on_evaluation_data),
                  "weights_fingerprint": outcome.weights_fingerprint, **outcome.record, **curves_record}

        def write_models(tmp: str) -> None:
            outcome.write_models(tmp)
            if curves is not None:  # inside the temporary directory: published with the models, or not at all
                figures.write_bytes(curves, artifacts.join(tmp, CURVES_FILE))

        try:
            result["model_dir"] = publish_artifact(paths, record, write_models)
        except artifacts.ArtifactWriteError as e:
            raise artifacts.ArtifactWriteError(
                f"{e} The trained run is safe in {paths.checkpoint_dir}: free space or make the destination "
                f"writable, then publish it with: {resume_command}") from e
        logging.info("Run %s published: %s", paths.run_id, result["model_dir"])
    return result
