"""Run in a process of its own: one optimizer step of a registered method on one device vs
MirroredStrategy over 2 logical CPUs, for the same global batch: the loss each replica
logged, the gradient the step applied and the weights after it.

    python tests/replica_check.py '[{"method": <name>, "settings": {...}, "phase": <phase>}, ...]'
    python tests/replica_check.py --serve    # one such list per line of stdin, until it closes

The model and the batch come from the method's own smoke settings (`Method.smoke`)
and data builder (a phased method's `phase_models[<phase>]` when a phase is
named), with dropout off. Each model takes its step through its own train function
(what `fit` and the toolkit's training loop run); with plain SGD, the gradient it
applied is (weights before - weights after) / learning rate, the clip included, so
one traced step per model gives all three measurements. Prints one JSON line per
check, in order:
{"loss_diff", "grad_diff", "weight_diff", ...}, or {"error": <traceback>} for a
check that raised (the others still run). With --serve, one process answers every
check of a test process (tests/distributed_checks.py), which pays TensorFlow's
start-up once.

Its own process, because the 2 logical CPUs must be configured before TensorFlow's
runtime starts, and a test process with 2 runs its other tests' graphs about 5 %
slower.
"""

import json
import os
import sys
import tempfile
import traceback

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
# Every graph of a check runs once, so Grappler's rewrite of it would cost more than it saves (about a
# third of this process's CPU time); both sides of every comparison run without it.
tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})

import keras  # noqa: E402

from common.training import registry  # noqa: E402
from common.training.runs import seeded  # noqa: E402
from common.training.schedules import WarmupPolynomialDecay  # noqa: E402


_MIRRORED = []


def mirrored_strategy():
    """One MirroredStrategy over the 2 logical CPUs for every check of this process: a second
    one would reuse the first one's collective instance keys, which TensorFlow refuses."""
    if not _MIRRORED:
        _MIRRORED.append(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
    return _MIRRORED[0]


def build(build_model, config, strategy, weights=None):
    with strategy.scope(), seeded(0):
        model = build_model(config)
        if weights is not None:
            model.set_weights(weights)
        model.clip_norm = config.optimizer.clip_norm or None
        # SGD: the update is proportional to the gradient, so a clip applied per replica
        # (instead of to the global gradient) would show in the weights; Adam's first
        # step is invariant to the gradient's scale and would hide it.
        model.compile(optimizer=keras.optimizers.SGD(WarmupPolynomialDecay(0.5, 4, 1)), jit_compile=False)
        model.optimizer.build(model.trainable_variables)
        model.optimizer.iterations.assign(2)  # past warm-up; e.g. PAUSE's PU weight is non-zero
    return model


def one_step(model, dataset):
    """One optimizer step through the model's own train function (what `fit` and the toolkit's
    training loop run); returns the gradient it applied (from the SGD update: (before - after) /
    learning rate, so a clip shows), each replica's logged loss, and the weights after it."""
    learning_rate = float(model.optimizer.learning_rate)  # the schedule at the current step
    before = [v.numpy() for v in model.trainable_variables]
    model.make_train_function()
    model.train_function(iter(dataset))
    after = [v.numpy() for v in model.trainable_variables]
    grads = [(b.astype(np.float64) - a) / learning_rate for b, a in zip(before, after)]
    # The "loss" tracker of each replica: the global loss that replica computed (a Mean).
    total, count = model.trackers["loss"].variables
    strategy = model.distribute_strategy
    losses = [float(t) / float(c) for t, c in zip(strategy.experimental_local_results(total.value),
                                                   strategy.experimental_local_results(count.value))]
    return grads, losses, model.get_weights()


def main(name, extra, phase=None):
    method = registry.get(name)
    build_model, make_data = method.phase_models[phase] if phase else (method.build_model, method.make_data)
    # The smoke data lives only as long as this check needs it.
    with tempfile.TemporaryDirectory(prefix=f"replica-{name}-") as workdir:
        settings = {**method.smoke(workdir), "dropout": 0.0, "train_epochs": 1, "train_steps_per_epoch": 4, **extra}
        config = registry.build_config(name, settings)
        if method.resolve is not None:
            config = method.resolve(config)
        single = build(build_model, config, tf.distribute.get_strategy())
        initial = single.get_weights()
        make_dataset, _ = make_data(config, single)
        batch = next(iter(make_dataset(0)))
        grads1, (loss1,), weights1 = one_step(single, tf.data.Dataset.from_tensors(batch))

        mirrored = mirrored_strategy()
        multi = build(build_model, config, mirrored, initial)
        grads2, losses2, weights2 = one_step(
            multi, mirrored.experimental_distribute_dataset(tf.data.Dataset.from_tensors(batch)))
        grad_diff = max(float(np.abs(a - b).max()) for a, b in zip(grads1, grads2))
        grad_scale = max(float(np.abs(a).max()) for a in grads1)
        weight_diff = max(float(np.abs(a - b).max()) for a, b in zip(weights1, weights2))
        moved = max(float(np.abs(a - b).max()) for a, b in zip(weights1, initial))
        print(json.dumps({"method": name, "phase": phase, "replicas": mirrored.num_replicas_in_sync, "loss": loss1,
                          "replica_losses": losses2, "loss_diff": max(abs(loss1 - x) for x in losses2),
                          "grad_diff": grad_diff, "grad_scale": grad_scale, "weight_diff": weight_diff,
                          "weights_moved": moved}))
        sys.stdout.flush()


def main_cases(cases):
    for case in cases:
        try:
            main(case["method"], case.get("settings") or {}, case.get("phase"))
        except Exception:  # noqa: BLE001  (reported as this case's result; the next case still runs)
            print(json.dumps({"method": case["method"], "phase": case.get("phase"), "error": traceback.format_exc()}))
            sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        for line in iter(sys.stdin.readline, ""):
            main_cases(json.loads(line))
        os._exit(0)  # every result is written and flushed; tearing down TensorFlow's objects would only cost
    else:
        main_cases(json.loads(sys.argv[1]))
