"""Run in a fresh process: a registered method's loss, gradients and one optimizer
step on one device vs MirroredStrategy over 2 logical CPUs, for the same global batch.

    python tests/replica_check.py '[{"method": <name>, "settings": {...}, "phase": <phase>}, ...]'

The model and the batch come from the method's own smoke settings (`Method.smoke`)
and data builder (a phased method's `phase_models[<phase>]` when a phase is
named), with dropout off. Prints one JSON line per check, in order:
{"loss_diff", "grad_diff", "weight_diff", ...}, or {"error": <traceback>} for a
check that raised (the others still run: one process pays TensorFlow's start-up
once for all of them).
"""

import json
import sys
import tempfile
import traceback

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

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


def grads_fn(model):
    # The gradients train_step applies: one tape, or cached mini-batches (--mini_batch_size).
    def fn(data):
        grads, out = model.compute_gradients(data)
        return out["total"], [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                              for g, v in zip(grads, model.trainable_variables)]
    return fn


def main(name, extra, phase=None):
    method = registry.get(name)
    build_model, make_data = method.phase_models[phase] if phase else (method.build_model, method.make_data)
    workdir = tempfile.mkdtemp(prefix=f"replica-{name}-")
    settings = {**method.smoke(workdir), "dropout": 0.0, "train_epochs": 1, "train_steps_per_epoch": 4, **extra}
    config = registry.build_config(name, settings)
    if method.resolve is not None:
        config = method.resolve(config)
    single = build(build_model, config, tf.distribute.get_strategy())
    initial = single.get_weights()
    make_dataset, _ = make_data(config, single)
    batch = next(iter(make_dataset(0)))
    loss1, grads1 = grads_fn(single)(batch)

    mirrored = mirrored_strategy()
    multi = build(build_model, config, mirrored, single.get_weights())
    data = next(iter(mirrored.experimental_distribute_dataset(tf.data.Dataset.from_tensors(batch))))
    per_replica_loss, per_replica_grads = mirrored.run(tf.function(grads_fn(multi)), args=(data,))
    losses2 = [float(x) for x in mirrored.experimental_local_results(per_replica_loss)]
    grads2 = [mirrored.reduce(tf.distribute.ReduceOp.SUM, g, axis=None) for g in per_replica_grads]
    grad_diff = max(float(tf.reduce_max(tf.abs(a - b))) for a, b in zip(grads1, grads2))
    grad_scale = max(float(tf.reduce_max(tf.abs(a))) for a in grads1)

    # One real optimizer step through each model's own train function.
    single.make_train_function()
    single.train_function(iter(tf.data.Dataset.from_tensors(batch)))
    multi.make_train_function()
    multi.train_function(iter(mirrored.experimental_distribute_dataset(tf.data.Dataset.from_tensors(batch))))
    weight_diff = max(float(np.abs(a - b).max()) for a, b in zip(single.get_weights(), multi.get_weights()))
    moved = max(float(np.abs(a - b).max()) for a, b in zip(single.get_weights(), initial))
    print(json.dumps({"method": name, "phase": phase, "replicas": mirrored.num_replicas_in_sync, "loss": float(loss1),
                      "replica_losses": losses2, "loss_diff": max(abs(float(loss1) - x) for x in losses2),
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
    main_cases(json.loads(sys.argv[1]))
