"""Run in a fresh process: PAUSE loss, gradients and one optimizer step on one
device vs MirroredStrategy over 2 logical CPUs, for the same global batch.

Prints one JSON line: {"loss_diff", "grad_diff", "weight_diff", "loss", ...}.
"""

import json
import sys

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

from common.encoder import EncoderConfig, build_encoder  # noqa: E402
from common.schedules import WarmupPolynomialDecay  # noqa: E402
from pause_tf.model import PauseModel  # noqa: E402

PREMISES = ["a man plays a guitar .", "two dogs run on the grass outside .", "a child eats .",
            "the woman is slicing an onion in the kitchen .", "stocks fell .", "it rains in london today .",
            "children play football outside .", "a cat sits on a mat ."]
HYPOTHESES = ["music is played .", "animals are asleep .", "someone eats an apple at home .", "a person cooks .",
              "the market dropped sharply on monday morning .", "the weather is dry .", "kids play .", "a dog ."]
LABELS = np.array([0, -1, 2, -1, 1, -1, -1, 0], np.int32)


def build(strategy, weights=None):
    with strategy.scope():
        keras.utils.set_random_seed(0)
        encoder = build_encoder(EncoderConfig(spec="tiny", max_seq_len=16, dropout=0.0, seed=3))
        model = PauseModel(encoder, prior=1 / 3, total_steps=4)
        model({"premise": tf.constant(PREMISES[:2]), "hypothesis": tf.constant(HYPOTHESES[:2])})
        if weights is not None:
            model.set_weights(weights)
        model.compile(optimizer=keras.optimizers.Adam(WarmupPolynomialDecay(1e-3, 4, 1)), jit_compile=False)
        model.optimizer.build(model.trainable_variables)
        # Start at step 2, where the PU weight is non-zero.
        model.optimizer.iterations.assign(2)
    return model


def batch(model):
    tok = model.encoder.tokenizer
    return ({"premise": tok(tf.constant(PREMISES)), "hypothesis": tok(tf.constant(HYPOTHESES))}, tf.constant(LABELS))


def grads_fn(model):
    def fn(inputs, labels):
        with tf.GradientTape() as tape:
            out = model.compute_losses(inputs, labels, training=True)
        grads = tape.gradient(out["loss"], model.trainable_variables)
        return out["total"], [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                              for g, v in zip(grads, model.trainable_variables)]
    return fn


single = build(tf.distribute.get_strategy())
inputs, labels = batch(single)
loss1, grads1 = grads_fn(single)(inputs, labels)

mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
multi = build(mirrored, single.get_weights())
dataset = tf.data.Dataset.from_tensors(batch(multi))
dist = iter(mirrored.experimental_distribute_dataset(dataset))
inputs2, labels2 = next(dist)
per_replica_loss, per_replica_grads = mirrored.run(tf.function(grads_fn(multi)), args=(inputs2, labels2))
losses2 = [float(x) for x in mirrored.experimental_local_results(per_replica_loss)]
grads2 = [mirrored.reduce(tf.distribute.ReduceOp.SUM, g, axis=None) for g in per_replica_grads]
grad_diff = max(float(tf.reduce_max(tf.abs(a - b))) for a, b in zip(grads1, grads2))
grad_scale = max(float(tf.reduce_max(tf.abs(a))) for a in grads1)

# One real optimizer step through each model's own train function.
single.make_train_function()
single.train_function(iter(tf.data.Dataset.from_tensors(batch(single))))
multi.make_train_function()
multi.train_function(iter(mirrored.experimental_distribute_dataset(tf.data.Dataset.from_tensors(batch(multi)))))
weight_diff = max(float(np.abs(a - b).max()) for a, b in zip(single.get_weights(), multi.get_weights()))
moved = max(float(np.abs(a - b).max()) for a, b in zip(single.get_weights(), build(tf.distribute.get_strategy()).get_weights()))

print(json.dumps({"replicas": mirrored.num_replicas_in_sync, "loss": float(loss1), "replica_losses": losses2,
                  "loss_diff": max(abs(float(loss1) - x) for x in losses2), "grad_diff": grad_diff,
                  "grad_scale": grad_scale, "weight_diff": weight_diff, "weights_moved": moved}))
sys.stdout.flush()
