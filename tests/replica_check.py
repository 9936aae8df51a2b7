"""Run in a fresh process: a method's loss, gradients and one optimizer step on
one device vs MirroredStrategy over 2 logical CPUs, for the same global batch.

    python tests/replica_check.py pause|declutr|simcse

Prints one JSON line: {"loss_diff", "grad_diff", "weight_diff", ...}.
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

SENTENCES = ["a man plays a guitar .", "two dogs run on the grass outside .", "a child eats .",
             "the woman is slicing an onion in the kitchen .", "stocks fell .", "it rains in london today .",
             "children play football outside .", "a cat sits on a mat .", "music is played .",
             "animals are asleep .", "someone eats an apple at home .", "a person cooks .",
             "the market dropped sharply on monday morning .", "the weather is dry .", "kids play .", "a dog ."]


def _encoder():
    return build_encoder(EncoderConfig(spec="tiny", max_seq_len=16, dropout=0.0, seed=3))


def pause_model():
    from pause_tf.model import PauseModel

    model = PauseModel(_encoder(), prior=1 / 3, total_steps=4)
    model({"premise": tf.constant(SENTENCES[:2]), "hypothesis": tf.constant(SENTENCES[2:4])})
    return model


def pause_batch(model):
    tok = model.encoder.tokenizer
    labels = tf.constant([0, -1, 2, -1, 1, -1, -1, 0], tf.int32)
    return {"premise": tok(tf.constant(SENTENCES[:8])), "hypothesis": tok(tf.constant(SENTENCES[8:]))}, labels


def declutr_model():
    from declutr_tf.mlm import MaskedLMHead, embedding_matrix_getter
    from declutr_tf.model import DeclutrModel

    encoder = _encoder()
    getter = embedding_matrix_getter(encoder.backbone)
    vocab, hidden = getter().shape
    # A clip norm small enough to bind: the clip must act on the global gradient.
    return DeclutrModel(encoder, num_positives=2, mlm_head=MaskedLMHead(getter, hidden, vocab), clip_norm=0.5)


def declutr_batch(model):
    from declutr_tf.mlm import mask_tokens

    tok = model.encoder.tokenizer
    anchors = tok(tf.constant(SENTENCES[:4]))
    masked = mask_tokens(anchors["token_ids"], anchors["padding_mask"], tf.constant([0, 1]),
                         [tok.cls_id, tok.sep_id, tok.pad_id], tok.mask_id, tok.vocabulary_size, rate=0.3)
    return {"anchors": {**anchors, **masked}, "positives": tok(tf.constant(SENTENCES[4:12]))}


def simcse_model():
    from simcse_tf.model import SimcseModel

    return SimcseModel(_encoder(), mode="sup", hard_negative_weight=2.0, use_mlp=True)


def simcse_batch(model):
    tok = model.encoder.tokenizer
    return {"premise": tok(tf.constant(SENTENCES[:4])), "entailment": tok(tf.constant(SENTENCES[4:8])),
            "contradiction": tok(tf.constant(SENTENCES[8:12]))}


METHODS = {"pause": (pause_model, pause_batch), "declutr": (declutr_model, declutr_batch),
           "simcse": (simcse_model, simcse_batch)}


def build(method, strategy, weights=None):
    make_model, _ = METHODS[method]
    with strategy.scope():
        keras.utils.set_random_seed(0)
        model = make_model()
        if weights is not None:
            model.set_weights(weights)
        # SGD: the update is proportional to the gradient, so a clip applied per replica
        # (instead of to the global gradient) would show in the weights; Adam's first
        # step is invariant to the gradient's scale and would hide it.
        model.compile(optimizer=keras.optimizers.SGD(WarmupPolynomialDecay(0.5, 4, 1)), jit_compile=False)
        model.optimizer.build(model.trainable_variables)
        model.optimizer.iterations.assign(2)  # past warm-up; PAUSE's PU weight is non-zero
    return model


def grads_fn(model):
    def fn(data):
        with tf.GradientTape() as tape:
            out = model.compute_losses(data, training=True)
        grads = tape.gradient(out["loss"], model.trainable_variables)
        return out["total"], [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                              for g, v in zip(grads, model.trainable_variables)]
    return fn


def main(method):
    _, make_batch = METHODS[method]
    single = build(method, tf.distribute.get_strategy())
    loss1, grads1 = grads_fn(single)(make_batch(single))

    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    multi = build(method, mirrored, single.get_weights())
    data = next(iter(mirrored.experimental_distribute_dataset(tf.data.Dataset.from_tensors(make_batch(multi)))))
    per_replica_loss, per_replica_grads = mirrored.run(tf.function(grads_fn(multi)), args=(data,))
    losses2 = [float(x) for x in mirrored.experimental_local_results(per_replica_loss)]
    grads2 = [mirrored.reduce(tf.distribute.ReduceOp.SUM, g, axis=None) for g in per_replica_grads]
    grad_diff = max(float(tf.reduce_max(tf.abs(a - b))) for a, b in zip(grads1, grads2))
    grad_scale = max(float(tf.reduce_max(tf.abs(a))) for a in grads1)

    # One real optimizer step through each model's own train function.
    single.make_train_function()
    single.train_function(iter(tf.data.Dataset.from_tensors(make_batch(single))))
    multi.make_train_function()
    multi.train_function(iter(mirrored.experimental_distribute_dataset(tf.data.Dataset.from_tensors(make_batch(multi)))))
    weight_diff = max(float(np.abs(a - b).max()) for a, b in zip(single.get_weights(), multi.get_weights()))
    initial = build(method, tf.distribute.get_strategy()).get_weights()
    moved = max(float(np.abs(a - b).max()) for a, b in zip(single.get_weights(), initial))
    print(json.dumps({"method": method, "replicas": mirrored.num_replicas_in_sync, "loss": float(loss1),
                      "replica_losses": losses2, "loss_diff": max(abs(float(loss1) - x) for x in losses2),
                      "grad_diff": grad_diff, "grad_scale": grad_scale, "weight_diff": weight_diff,
                      "weights_moved": moved}))
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
