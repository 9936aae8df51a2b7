"""The rules of a run's settings: the configuration a run saves and a resumed run reloads
(`load_run_config`), what a resumed run may change (`resume_changes`), and what `--publish_best`
selects on and which evaluation settings a run can honour (`selection_of`, `check_evaluation`).
`common.training.runs.train` applies them before a run ID is reserved.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Sequence

import tensorflow as tf

from common import artifacts
from common.errors import UserError
from common.training import registry
from common.training.config import BEST_METRICS, HELDOUT_PREFIX, STSB_DEV_METRIC, TrainConfig
from common.training.loop import Selection

RUN_CONFIG_FILE = "run_config.json"
# Evaluators are passed in (training never imports one): any object of the contract of
# `common.evaluation.evaluators.Evaluator`, called as embed_fn -> {metric: value}, with `name`,
# `primary_metric` (what --publish_best selects on by default) and `greater_is_better`.
Evaluator = Any


def load_run_config(artifacts_dir: str, run_id: str) -> TrainConfig:
    """The configuration a run was started with (its checkpoint directory's run_config.json)."""
    path = artifacts.join(artifacts.checkpoint_dir(artifacts_dir, run_id), RUN_CONFIG_FILE)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Cannot resume {run_id}: {path} not found (was the run started by this toolkit, "
                                f"with this --artifacts_dir?).")
    with tf.io.gfile.GFile(path) as f:
        return registry.config_from_dict(json.load(f))


# What a resumed run may change: the hardware and where it writes, the learning rate (e.g. lower
# after a NaN), more epochs to extend it, and the checkpoint, log and evaluation cadence.
# Everything else defines the run and stays as saved; so do --publish_best and --best_metric:
# the best weights kept on disk (`loop.BestWeights`) are the best of every evaluation since the
# run began, on one metric, which a run that began selecting (or changed metric) midway would not be.
RESUME_MAY_CHANGE = ("resume", "strategy", "tpu", "artifacts_dir", "model_dir", "log_dir", "train_lr", "end_lr",
                     "train_epochs", "checkpoint_every", "log_every", "eval_each_epoch", "eval_every")


def resume_changes(saved: TrainConfig, config: TrainConfig) -> Dict[str, Any]:
    """The settings `config` changes from the saved run's, checked against RESUME_MAY_CHANGE.

    Raises:
        UserError: naming the settings that a resumed run may not change.
    """
    if config.method != saved.method:
        raise UserError(f"--resume={config.run.resume} is a {saved.method} run, not {config.method}.")
    before, after = saved.flat(), config.flat()
    changed = {k: after[k] for k in after if after[k] != before[k]}
    refused = sorted(set(changed) - set(RESUME_MAY_CHANGE))
    if refused:
        raise UserError(
            f"--resume={config.run.resume} keeps the run's saved settings; it cannot change "
            f"{', '.join('--' + k for k in refused)}. A resumed run may change only "
            f"{', '.join('--' + k for k in RESUME_MAY_CHANGE[1:])}; start a new run for the others.")
    if saved.run.train_epochs > config.run.train_epochs:
        raise UserError(f"--train_epochs={config.run.train_epochs} is fewer than the run's "
                         f"{saved.run.train_epochs}; a resumed run can only be extended.")
    return changed


def heldout_metrics(model) -> Sequence[str]:
    """The held-out scores `model.validation_metrics()` reports (none without validation data)."""
    if model.validation_data is None:
        return ()
    return tuple(HELDOUT_PREFIX + name for name in model.metric_names)


def best_metric(config: TrainConfig, model, evaluator: Optional[Evaluator] = None) -> str:
    """`--best_metric`, or its default: the evaluator's primary metric with `--dev_data`, else the held-out loss
    of a method with held-out data, else the evaluator's primary metric (train.py's default: STS-B dev)."""
    if config.run.best_metric:
        return config.run.best_metric
    if config.run.dev_data and evaluator is not None:  # the user named the data to select on
        return evaluator.primary_metric
    if heldout_metrics(model):
        return HELDOUT_PREFIX + "loss"
    return evaluator.primary_metric if evaluator is not None else STSB_DEV_METRIC


def check_evaluation(config: TrainConfig, evaluator: Optional[Evaluator], model) -> None:
    """Refuses evaluation settings that this single-model run cannot honour (before a run ID is reserved).

    Raises:
        UserError: naming the flag, what it needs and what the run has.
    """
    run, heldout = config.run, heldout_metrics(model)
    if run.eval_every and evaluator is None and not heldout:
        raise UserError(f"--eval_every={run.eval_every}: nothing to evaluate; --method={config.method} has no "
                         "held-out data and the run was given no evaluator (train.py passes STS-B dev, or "
                         "--dev_data's).")
    if not run.publish_best:
        return
    metric = best_metric(config, model, evaluator)
    if metric.startswith(HELDOUT_PREFIX):
        if metric not in heldout:
            raise UserError(f"--best_metric={metric}: --method={config.method} reports "
                             f"{', '.join(heldout) or 'no held-out scores'}; select on the evaluator's "
                             f"{evaluator.primary_metric if evaluator is not None else STSB_DEV_METRIC} or on a "
                             "held-out score it reports.")
        return
    if evaluator is None:
        raise UserError(f"--publish_best selects on {metric}, which the run's evaluator computes, but the run "
                         "was given no evaluator (train.py passes STS-B dev's, or --dev_data's); give one, "
                         f"or select on a held-out score{' (' + ', '.join(heldout) + ')' if heldout else ''}.")
    if metric != evaluator.primary_metric:
        also = f" and the held-out scores {', '.join(heldout)}" if heldout else ""
        raise UserError(f"--best_metric={metric}: the run's evaluator ({evaluator.name}) selects on "
                         f"{evaluator.primary_metric}{also}; name one of them, or leave --best_metric out.")


def selection_of(config: TrainConfig, model, evaluator: Optional[Evaluator] = None) -> Optional[Selection]:
    """What `--publish_best` selects on (None without it); a missing score is an error, never a silent last step."""
    if not config.run.publish_best:
        return None
    metric = best_metric(config, model, evaluator)
    if metric.startswith(HELDOUT_PREFIX):
        return Selection(metric, BEST_METRICS[metric], missing="--publish_best needs it from every evaluation.")
    return Selection(metric, evaluator.greater_is_better,
                     missing=f"--publish_best needs it from every evaluation; the evaluator ({evaluator.name}) gave "
                             "none: is its data there?")


def selection_record(selection: Selection, metrics: Dict[str, Any]) -> Dict[str, Any]:
    """config.json's `selection`: the metric, the chosen step and score, and the last step's
    score; the keys move out of `metrics`, which hold the best evaluation's scores."""
    report = {key: metrics.pop(key, None) for key in ("best_step", "best_score", "last_step", "last_score")}
    return {"metric": selection.metric, "higher_is_better": selection.higher_is_better,
            "step": report["best_step"], "score": report["best_score"],
            "last_step": report["last_step"], "last_score": report["last_score"]}
