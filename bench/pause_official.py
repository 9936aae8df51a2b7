"""The official PAUSE code (EQTPartners/pause) against the toolkit: one step's loss and head gradients.

    TF_USE_LEGACY_KERAS=1 .venv/bin/python -m bench.pause_official --code=<checkout of EQTPartners/pause> \\
        --out=pause_official.json

bench/parity.py runs it (its `pause` row). The official code is TensorFlow 2.4 with Keras 2 as
`tf.keras`; here it runs under this project's TensorFlow with tf-keras as `tf.keras`
(TF_USE_LEGACY_KERAS=1, checked at start), beside the toolkit's Keras 3. Its `EmbedModel` loads a
BERT from tfhub.dev by URL, which a machine without network cannot: the attempt's error is
recorded, and both heads get the same fixed sentence embeddings instead (the toolkit's
`random_tiny` encoder's, without dropout), through a stand-in for `EmbedModel` in the official
`SiameseModel`. For each fixture batch (mixed, all unlabelled, all labelled) the official
`SiameseModel.train_step` (compiled with the official `get_nnpu_loss_fn(prior, weight)`) gives the
loss the official `fit` minimises, and the same expression under a GradientTape its gradients;
the toolkit's `pause_tf.model.SiameseModel`, with the official head's weights copied in, gives
`pause_tf.losses.pause_loss` and its gradients. Writes a JSON record to --out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from absl import flags

from common import cli

from common.errors import UserError

FLAGS = flags.FLAGS
# The official defaults: 3 NLI classes, its --prior default (1/3); the PU weight at the end of its annealing.
PRIOR = 1.0 / 3.0
PU_WEIGHT = 1.0
SENTENCES = ("A man is playing a guitar.", "A woman is slicing an onion.", "Two dogs run across a field.",
             "A child is reading a book.", "The chef cooks pasta in a kitchen.", "A cat sleeps on the sofa.",
             "People are walking in the rain.", "A boy kicks a red ball.")
HYPOTHESES = ("Someone plays an instrument.", "A person cuts a vegetable.", "Animals are sleeping.",
              "A kid looks at pages.", "Nobody is cooking.", "An animal rests indoors.",
              "It is sunny and dry.", "A ball is kicked.")
CASES = {"mixed batch (3 labelled of 8)": [0, -1, 1, -1, -1, 2, -1, -1],
         "all-unlabelled batch": [-1] * 8,
         "all-labelled batch": [0, 2, 1, 1, 2, 0, 0, 1]}
RTOL = 1e-5


def define_flags() -> None:
    """The check's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("code", None, "A checkout of the official code (git clone https://github.com/EQTPartners/pause).")
    flags.DEFINE_string("out", "pause_official.json", "Where the JSON record is written.")


def _commit(folder: str) -> str:
    try:
        return subprocess.run(["git", "-C", folder, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def check(code: str) -> dict:
    """Runs every case; returns the record."""
    import numpy as np
    import tensorflow as tf

    if not tf.keras.__name__.startswith("tf_keras"):
        raise UserError(f"tf.keras is {tf.keras.__name__}, not tf-keras: run with TF_USE_LEGACY_KERAS=1 (the official "
                        "code is Keras 2).")
    sys.path.insert(0, code)
    import embed_model as official_embed  # noqa: E402  (the official modules, from --code)
    import loss as official_loss
    import siamese_model as official_siamese

    from common.models.encoder import EncoderConfig, build_encoder
    from common.models.hub_backbone import TFHUB_HANDLES
    from pause_tf.losses import pause_loss
    from pause_tf.model import SiameseModel

    record = {"commit": _commit(code), "prior": PRIOR, "pu_weight": PU_WEIGHT, "cases": []}
    try:
        official_embed.EmbedModel(TFHUB_HANDLES["tfhub_bert_small"], 32)
    except Exception as e:  # noqa: BLE001  (whatever stops it is what the page reports)
        record["embed_model_error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"

    encoder = build_encoder(EncoderConfig(spec="random_tiny", pooling="mean", seed=0))
    toolkit = SiameseModel(encoder, name="pause")
    inputs = {"premise": tf.constant(SENTENCES), "hypothesis": tf.constant(HYPOTHESES)}
    out = toolkit(inputs, training=False)
    table = tf.concat([out["u"], out["v"]], 0)  # [16, H]: premises, then hypotheses

    class FixedEmbeddings(tf.keras.layers.Layer):
        """Stands in for the official EmbedModel: row i of a fixed table for input i."""

        def call(self, indices):
            return tf.gather(table, tf.reshape(indices, [-1]))

    n = len(SENTENCES)
    features = {"sentence": tf.range(n), "match_sentence": tf.range(n, 2 * n)}
    tf.keras.utils.set_random_seed(0)  # the official head's initial values (copied into the toolkit's)
    official = official_siamese.SiameseModel(FixedEmbeddings())
    official(features)
    official.compile(optimizer=tf.keras.optimizers.SGD(0.0),
                     loss=official_loss.get_nnpu_loss_fn(PRIOR, tf.Variable(PU_WEIGHT)))
    for source, target in ((official.dense1, toolkit.hidden), (official.dense2, toolkit.classifier)):
        target.kernel.assign(source.kernel.numpy())
        target.bias.assign(source.bias.numpy())
    official_vars = [official.dense1.kernel, official.dense1.bias, official.dense2.kernel, official.dense2.bias]
    toolkit_vars = [toolkit.hidden.kernel, toolkit.hidden.bias, toolkit.classifier.kernel, toolkit.classifier.bias]
    for name, labels in CASES.items():
        y = np.array(labels)
        official_labels = tf.constant(y.reshape(-1, 1), tf.int64)  # the official TFRecords hold label [1]
        official.reset_metrics()  # train_step reports the running mean since the last reset, as fit's epochs do
        step = official.train_step((features, official_labels))  # SGD(0): the weights stay
        with tf.GradientTape() as tape:
            pred, _, _ = official(features, training=True)
            official_value = official.compiled_loss(official_labels, pred, regularization_losses=official.losses)
        official_grads = tape.gradient(official_value, official_vars)
        with tf.GradientTape() as tape:
            logits = toolkit(inputs, training=False)["logits"]
            toolkit_value = pause_loss(logits, tf.constant(y, tf.int32), PRIOR, tf.constant(PU_WEIGHT))["loss"]
        toolkit_grads = tape.gradient(toolkit_value, toolkit_vars)
        diff = max(float(np.max(np.abs(a.numpy() - b.numpy()))) for a, b in zip(official_grads, toolkit_grads))
        largest = max(float(np.max(np.abs(g.numpy()))) for g in toolkit_grads)
        official_largest = max(float(np.max(np.abs(g.numpy()))) for g in official_grads)
        o, t = float(step["loss"]), float(toolkit_value)
        equal = abs(o - t) <= RTOL * max(1.0, abs(t)) and diff <= RTOL * max(1.0, largest)
        case = {"name": name, "labels": labels, "official_loss": o, "official_loss_tape": float(official_value),
                "toolkit_loss": t, "max_grad_diff": diff, "max_grad": largest, "max_official_grad": official_largest,
                "outcome": "EQUAL" if equal else "DIFFERENT"}
        if not equal and (y < 0).all() and o == 0.0:
            case["note"] = ("The official loss returns the PU term plus a cross-entropy vector over the labelled rows, "
                            "which Keras averages; with no labelled row the vector is empty and Keras reduces it to "
                            "0, so the official code takes no PU step on such a batch (its gradient is 0). The "
                            "toolkit keeps the PU term there. A batch of b pairs, each labelled with probability p, "
                            "has no labelled pair with probability (1 - p)^b: negligible with the official sampling "
                            "(about a third of every batch labelled, the toolkit's default too), not with a small "
                            "--labeled_batch_fraction and a small batch")
        record["cases"].append(case)
    return record


def main(argv):
    if not FLAGS.code or not os.path.isfile(os.path.join(FLAGS.code, "siamese_model.py")):
        raise UserError(f"--code={FLAGS.code}: not a checkout of EQTPartners/pause (no siamese_model.py); "
                        "git clone https://github.com/EQTPartners/pause")
    try:
        record = check(os.path.abspath(FLAGS.code))
    except UserError:
        raise
    except Exception as e:  # noqa: BLE001  (the page says why the official code could not run)
        record = {"commit": _commit(FLAGS.code), "error": f"{type(e).__name__}: {' '.join(str(e).split())[:500]}"}
    with open(FLAGS.out, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    define_flags()
    cli.run(main)
