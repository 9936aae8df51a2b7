"""Distribution strategies and cross-replica helpers shared by every method."""

from __future__ import annotations

import json
import os
from typing import Optional

import tensorflow as tf
from absl import logging

from common.errors import UserError

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker", "tpu")


def make_strategy(name: str = "auto", tpu: Optional[str] = None) -> tf.distribute.Strategy:
    """Builds a tf.distribute strategy.

    Args:
        name: str. "auto" (MultiWorkerMirrored when TF_CONFIG names a cluster,
            Mirrored with more than one GPU, else one device), "one_device",
            "mirrored", "multi_worker" (from TF_CONFIG) or "tpu".
        tpu: str. TPU name or grpc address for "tpu" ("" or "local" for a TPU VM).
    """
    if name not in STRATEGIES:
        raise UserError(f"Unknown strategy {name!r}; expected one of {STRATEGIES}.")
    if name == "auto":
        if json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster"):
            name = "multi_worker"
        elif len(tf.config.list_logical_devices("GPU")) > 1:
            name = "mirrored"
        else:
            name = "one_device"
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker":
        if not os.environ.get("TF_CONFIG"):
            raise UserError("--strategy=multi_worker needs TF_CONFIG describing the cluster and this task.")
        return tf.distribute.MultiWorkerMirroredStrategy()
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    logging.info("TPU devices: %s", tf.config.list_logical_devices("TPU"))
    return tf.distribute.TPUStrategy(resolver)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True for the task that writes artifacts (always true outside multi-worker)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    return task_type is None or task_type == "chief" or (task_type == "worker" and task_id == 0
                                                         and "chief" not in resolver.cluster_spec().as_dict())


def replica_sum(x: tf.Tensor) -> tf.Tensor:
    """Sums `x` over the replicas of the current step (identity on one replica)."""
    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync == 1:
        return x
    return ctx.all_reduce(tf.distribute.ReduceOp.SUM, x)


def chief_score(strategy: tf.distribute.Strategy, score: Optional[float], chief: bool) -> Optional[float]:
    """The chief's `score` (None: it has none), on every worker.

    Under MultiWorkerMirroredStrategy the workers are separate processes and only
    the chief evaluates (a non-chief may lack the evaluator or its data), yet all
    must choose the same weights; one all-reduce hands every worker the chief's
    score, exactly: the chief's first replica adds (score, 1), every other replica
    (0, 0). Every worker must call this at the same steps. Any other strategy runs
    in one process, whose score is returned as it is.
    """
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return score
    known = chief and score is not None
    mine = [float(score) if known else 0.0, 1.0 if known else 0.0]
    calls = []

    def contribution(context):
        calls.append(context)  # called once per local replica, in order
        return tf.constant(mine if len(calls) == 1 else [0.0, 0.0], tf.float64)

    values = strategy.experimental_distribute_values_from_function(contribution)
    total, count = strategy.reduce(tf.distribute.ReduceOp.SUM, values, axis=None).numpy()
    return float(total) if count else None
