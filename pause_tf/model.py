"""The PAUSE siamese model and its STS-B fine-tuning variant.

One shared encoder embeds both sentences (masked mean pooling); the head
[u, v, |u-v|, u*v] -> Dense(128, elu) -> Dense(num_classes) is the one of the
paper's code. Both models output logits, cosine and angular similarity.
"""

from __future__ import annotations

import math
from typing import Dict, Mapping, Optional

import keras
import tensorflow as tf

from common.distribute import replica_sum
from common.training import apply_gradients, step_outputs
from common.encoder import SentenceEncoder
from pause_tf.annealing import pu_weight
from pause_tf.losses import pause_loss

STSB_OBJECTIVES = ("cosine", "head_mse")


class SiameseModel(keras.Model):
    """Shared-encoder sentence-pair model.

    Args:
        encoder: SentenceEncoder. Embeds each side; its `pooled` output is used.
        num_classes: int. Number of NLI classes. Defaults to 3.
        hidden_units: int. Width of the ELU layer. Defaults to 128.
    """

    def __init__(self, encoder: SentenceEncoder, num_classes: int = 3, hidden_units: int = 128, **kwargs):
        super().__init__(**kwargs)
        # === Layers ===
        self.encoder = encoder
        self.hidden = keras.layers.Dense(hidden_units, activation="elu", name="hidden")
        self.classifier = keras.layers.Dense(num_classes, name="classifier")
        # === Config ===
        self.num_classes = num_classes
        self.hidden_units = hidden_units

    def weights_checkpoint(self) -> tf.train.Checkpoint:
        """The published weights: encoder and head, without optimizer state."""
        parts = {"encoder": self.encoder, "hidden": self.hidden, "classifier": self.classifier}
        if getattr(self, "regressor", None) is not None and self.regressor.built:
            parts["regressor"] = self.regressor
        return tf.train.Checkpoint(model=tf.train.Checkpoint(**parts))

    def call(self, inputs: Mapping[str, object], training: bool = False) -> Dict[str, tf.Tensor]:
        """Encodes `inputs["premise"]` and `inputs["hypothesis"]` (strings or token dicts).

        Returns:
            Dict with `logits` [B, K], `cos_sim` [B] and `angular_sim` [B]
            (1 - arccos(cos)/pi), plus the two embeddings `u`, `v`.
        """
        u = self.encoder(inputs["premise"], training=training)["pooled"]  # [B, H]
        v = self.encoder(inputs["hypothesis"], training=training)["pooled"]  # [B, H]
        features = tf.concat([u, v, tf.abs(u - v), u * v], axis=-1)  # [B, 4H]
        logits = self.classifier(self.hidden(features))  # [B, K]
        cos = tf.reduce_sum(tf.math.l2_normalize(u, -1) * tf.math.l2_normalize(v, -1), axis=-1)  # [B]
        cos = tf.clip_by_value(cos, -1.0, 1.0)
        return {"logits": logits, "cos_sim": cos, "angular_sim": 1.0 - tf.acos(cos) / math.pi, "u": u, "v": v}


class PauseModel(SiameseModel):
    """PAUSE: cross-entropy on labelled pairs + annealed nnPU on all pairs.

    Args:
        encoder: SentenceEncoder.
        prior: float. Class prior of the nnPU risk. Defaults to 1/3.
        total_steps: int. Steps of the run (for annealing).
        annealing: str. "global" or "per_epoch" (the original's behaviour).
        anneal_power: float. Defaults to 3.
        steps_per_epoch: int. For "per_epoch" annealing.
        **kwargs: passed to SiameseModel.
    """

    def __init__(self, encoder: SentenceEncoder, prior: float = 1.0 / 3.0, total_steps: int = 1,
                 annealing: str = "global", anneal_power: float = 3.0,
                 steps_per_epoch: Optional[int] = None, **kwargs):
        super().__init__(encoder, **kwargs)
        self.prior = prior
        self.total_steps = total_steps
        self.annealing = annealing
        self.anneal_power = anneal_power
        self.steps_per_epoch = steps_per_epoch
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.ce_tracker = keras.metrics.Mean(name="ce")
        self.pu_tracker = keras.metrics.Mean(name="pu")
        self.weight_tracker = keras.metrics.Mean(name="pu_weight")
        self.accuracy_tracker = keras.metrics.Mean(name="accuracy")
        self.labelled_tracker = keras.metrics.Mean(name="labelled_fraction")

    @property
    def metrics(self):
        return [self.loss_tracker, self.ce_tracker, self.pu_tracker, self.weight_tracker,
                self.accuracy_tracker, self.labelled_tracker]

    def current_pu_weight(self) -> tf.Tensor:
        return pu_weight(self.optimizer.iterations, self.total_steps, self.anneal_power, self.annealing,
                         self.steps_per_epoch)

    def compute_losses(self, data, training: bool) -> Dict[str, tf.Tensor]:
        """Forward pass and the PAUSE loss on the global batch (see pause_tf.losses).

        Args:
            data: (inputs, labels) as the training dataset yields them.

        Returns:
            The model outputs and `loss` (this replica's share), `total`, `ce`, `pu`.
        """
        inputs, labels = data
        out = self(inputs, training=training)
        losses = pause_loss(out["logits"], labels, self.prior, self.current_pu_weight(), replica_sum)
        return {**out, **losses}

    def _update_metrics(self, out, labels):
        labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
        labelled = tf.cast(labels >= 0, tf.float32)
        correct = tf.cast(tf.equal(tf.argmax(out["logits"], -1, output_type=tf.int32), labels), tf.float32)
        # Accuracy over labelled rows only: unlabelled rows (label -1) are not wrong, they are unknown.
        self.accuracy_tracker.update_state(correct, sample_weight=labelled)
        self.labelled_tracker.update_state(labelled)
        self.loss_tracker.update_state(out["total"])
        self.ce_tracker.update_state(out["ce"])
        self.pu_tracker.update_state(out["pu"])
        self.weight_tracker.update_state(self.current_pu_weight())

    def train_step(self, data):
        with tf.GradientTape() as tape:
            out = self.compute_losses(data, training=True)
        apply_gradients(self.optimizer, tape.gradient(out["loss"], self.trainable_variables), self.trainable_variables)
        self._update_metrics(out, data[1])
        return step_outputs(self.metrics)

    def test_step(self, data):
        out = self.compute_losses(data, training=False)
        self._update_metrics(out, data[1])
        return step_outputs(self.metrics)


class StsbModel(SiameseModel):
    """STS-B fine-tuning of a (PAUSE-)trained siamese model.

    Args:
        encoder: SentenceEncoder.
        objective: str. "cosine" (default): mean squared error between the
            cosine similarity and score/5, i.e. what test_sts.py measures;
            "head_mse": the original ft_stsb.py, Dense(1, relu) over the NLI
            logits, mean squared error on the raw 0-5 score.
        **kwargs: passed to SiameseModel.
    """

    def __init__(self, encoder: SentenceEncoder, objective: str = "cosine", **kwargs):
        super().__init__(encoder, **kwargs)
        if objective not in STSB_OBJECTIVES:
            raise ValueError(f"Unknown STS-B objective {objective!r}; expected one of {STSB_OBJECTIVES}.")
        self.objective = objective
        self.regressor = keras.layers.Dense(1, activation="relu", name="regressor")
        # Built here: the cosine objective never calls it, and Keras warns about a model
        # whose sublayer is still unbuilt after the first call. Its weights are published either way.
        self.regressor.build((None, self.num_classes))
        self.loss_tracker = keras.metrics.Mean(name="loss")

    @property
    def metrics(self):
        return [self.loss_tracker]

    def predict_scores(self, inputs, training: bool = False) -> tf.Tensor:
        """Predicted similarity on the 0-5 scale, [batch]."""
        out = self(inputs, training=training)
        if self.objective == "cosine":
            return out["cos_sim"] * 5.0
        return tf.squeeze(self.regressor(out["logits"]), -1)

    def _loss(self, inputs, scores, training):
        scores = tf.reshape(tf.cast(scores, tf.float32), [-1])
        pred = self.predict_scores(inputs, training)
        if self.objective == "cosine":
            err = (pred / 5.0 - scores / 5.0) ** 2
        else:
            err = (pred - scores) ** 2
        count = replica_sum(tf.cast(tf.size(err), tf.float32))
        total = tf.reduce_sum(err)
        return total / count, replica_sum(tf.stop_gradient(total)) / count

    def train_step(self, data):
        inputs, scores = data
        with tf.GradientTape() as tape:
            local, global_value = self._loss(inputs, scores, training=True)
        apply_gradients(self.optimizer, tape.gradient(local, self.trainable_variables), self.trainable_variables)
        self.loss_tracker.update_state(global_value)
        return step_outputs(self.metrics)

    def test_step(self, data):
        inputs, scores = data
        _, global_value = self._loss(inputs, scores, training=False)
        self.loss_tracker.update_state(global_value)
        return step_outputs(self.metrics)
