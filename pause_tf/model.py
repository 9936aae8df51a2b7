"""The PAUSE siamese model and its STS-B fine-tuning variant.

One shared encoder embeds both sentences (masked mean pooling, or the original
code's mean over padded inputs: `--pooling=padded_mean`); the head
[u, v, |u-v|, u*v] -> Dense(128, elu) -> Dense(num_classes) is the one of the
paper's code. Both models output logits, cosine and angular similarity.
"""

from __future__ import annotations

import math
from typing import Dict, Mapping, Optional, Sequence, Union

import keras
import tensorflow as tf

from common.errors import UserError
from common.models.encoder import SentenceEncoder
from common.training.distribute import replica_sum
from common.training.method import MethodModel
from pause_tf.annealing import pu_weight
from pause_tf.config import BATCH_WITHOUT_LABELS, STSB_OBJECTIVES
from pause_tf.losses import pause_loss


class SiameseModel(MethodModel):
    """Shared-encoder sentence-pair model.

    Args:
        encoder: SentenceEncoder. Embeds each side; its `pooled` output is used.
        num_classes: int. Number of NLI classes. Defaults to 3.
        hidden_units: int. Width of the ELU layer. Defaults to 128.
        **kwargs: passed to MethodModel (`clip_norm`, `name`).
    """

    pair_outputs = ("logits", "cos_sim", "angular_sim")

    def __init__(self, encoder: SentenceEncoder, num_classes: int = 3, hidden_units: int = 128, **kwargs):
        super().__init__(encoder, **kwargs)
        # === Layers ===
        self.hidden = keras.layers.Dense(hidden_units, activation="elu", name="hidden")
        self.classifier = keras.layers.Dense(num_classes, name="classifier")
        # === Config ===
        self.num_classes = num_classes
        self.hidden_units = hidden_units

    def build(self, input_shape=None):
        """Nothing to create here: the first call (`build_model`'s, eager) builds the heads. Without
        this method Keras would first trace `call` symbolically, both sentences through the encoder."""

    def published_layers(self):
        """Encoder and classification head (and an STS-B regressor where there is one)."""
        parts = {"encoder": self.encoder, "hidden": self.hidden, "classifier": self.classifier}
        if getattr(self, "regressor", None) is not None and self.regressor.built:
            parts["regressor"] = self.regressor
        return parts

    def call(self, inputs: Mapping[str, object], training: bool = False) -> Dict[str, tf.Tensor]:
        """Encodes `inputs["premise"]` and `inputs["hypothesis"]` (strings or token dicts).

        Returns:
            Dict with `logits` [B, K], `cos_sim` [B] and `angular_sim` [B]
            (1 - arccos(cos)/pi), plus the two embeddings `u`, `v`.
        """
        u = self.encoder(inputs["premise"], training=training)["pooled"]  # [B, H]
        v = self.encoder(inputs["hypothesis"], training=training)["pooled"]  # [B, H]
        return self.pair_head(u, v)

    def pair_head(self, u: tf.Tensor, v: tf.Tensor) -> Dict[str, tf.Tensor]:
        """What `call` computes from the two sides' pooled embeddings `u`, `v` [B, H] (the pair
        SavedModel serves it over one trace of the encoder)."""
        features = tf.concat([u, v, tf.abs(u - v), u * v], axis=-1)  # [B, 4H]
        logits = self.classifier(self.hidden(features))  # [B, K]
        cos = tf.reduce_sum(tf.math.l2_normalize(u, -1) * tf.math.l2_normalize(v, -1), axis=-1)  # [B]
        cos = tf.clip_by_value(cos, -1.0, 1.0)
        return {"logits": logits, "cos_sim": cos, "angular_sim": 1.0 - tf.acos(cos) / math.pi, "u": u, "v": v}


class PauseModel(SiameseModel):
    """PAUSE: cross-entropy on labelled pairs + annealed nnPU on all pairs.

    Args:
        encoder: SentenceEncoder.
        prior: float or sequence of float. Class prior of the nnPU risk, one for every class
            or one per class. Defaults to 1/3.
        total_steps: int. Steps of the run (for annealing).
        annealing: str. "global", "per_epoch" (the original's behaviour) or "off".
        anneal_power: float. Defaults to 3.
        steps_per_epoch: int. For "per_epoch" annealing.
        batch_without_labels: str. "pu": a batch without a labelled pair trains on its PU
            term; "zero": its loss is 0, as the original code's (the optimizer still steps,
            with zero gradients). Defaults to "pu".
        **kwargs: passed to SiameseModel.
    """

    metric_names = ("loss", "ce", "pu", "pu_weight", "accuracy", "labelled_fraction")

    def __init__(self, encoder: SentenceEncoder, prior: Union[float, Sequence[float]] = 1.0 / 3.0,
                 total_steps: int = 1,
                 annealing: str = "global", anneal_power: float = 3.0,
                 steps_per_epoch: Optional[int] = None, batch_without_labels: str = "pu", **kwargs):
        super().__init__(encoder, **kwargs)
        if batch_without_labels not in BATCH_WITHOUT_LABELS:
            raise UserError(f"Unknown batch_without_labels {batch_without_labels!r}; expected one of "
                             f"{BATCH_WITHOUT_LABELS}.")
        self.batch_without_labels = batch_without_labels
        self.prior = tuple(prior) if isinstance(prior, (tuple, list)) else prior
        self.total_steps = total_steps
        self.annealing = annealing
        self.anneal_power = anneal_power
        self.steps_per_epoch = steps_per_epoch

    def current_pu_weight(self) -> tf.Tensor:
        return pu_weight(self.optimizer.iterations, self.total_steps, self.anneal_power, self.annealing,
                         self.steps_per_epoch)

    def compute_losses(self, data, training: bool) -> Dict[str, tf.Tensor]:
        """Forward pass and the PAUSE loss on the global batch (see pause_tf.losses).

        Args:
            data: (inputs, labels) as the training dataset yields them.

        Returns:
            The model outputs and `loss` (this replica's share), `total`, `ce`,
            `pu` and `pu_weight`.
        """
        inputs, labels = data
        out = self(inputs, training=training)
        weight = self.current_pu_weight()
        losses = pause_loss(out["logits"], labels, tf.constant(self.prior, tf.float32), weight, replica_sum)
        if self.batch_without_labels == "zero":
            # The original's loss was the mean of a vector over the labelled rows: 0 for none (global batch).
            labelled = replica_sum(tf.reduce_sum(tf.cast(tf.reshape(labels, [-1]) >= 0, tf.float32)))
            keep = tf.cast(labelled > 0, tf.float32)
            losses = {**losses, "loss": losses["loss"] * keep, "total": losses["total"] * keep}
        return {**out, **losses, "pu_weight": weight}

    def update_metrics(self, data, out):
        labels = tf.reshape(tf.cast(data[1], tf.int32), [-1])
        labelled = tf.cast(labels >= 0, tf.float32)
        correct = tf.cast(tf.equal(tf.argmax(out["logits"], -1, output_type=tf.int32), labels), tf.float32)
        for name in ("loss", "ce", "pu", "pu_weight"):
            self.trackers[name].update_state(out["total"] if name == "loss" else out[name])
        # Accuracy over labelled rows only: unlabelled rows (label -1) are not wrong, they are unknown.
        self.trackers["accuracy"].update_state(correct, sample_weight=labelled)
        self.trackers["labelled_fraction"].update_state(labelled)


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
            raise UserError(f"Unknown STS-B objective {objective!r}; expected one of {STSB_OBJECTIVES}.")
        self.objective = objective
        self.regressor = keras.layers.Dense(1, activation="relu", name="regressor")
        # Built here: the cosine objective never calls it, and Keras warns about a model
        # whose sublayer is still unbuilt after the first call. Its weights are published either way.
        self.regressor.build((None, self.num_classes))

    def predict_scores(self, inputs, training: bool = False) -> tf.Tensor:
        """Predicted similarity on the 0-5 scale, [batch]."""
        out = self(inputs, training=training)
        if self.objective == "cosine":
            return out["cos_sim"] * 5.0
        return tf.squeeze(self.regressor(out["logits"]), -1)

    def compute_losses(self, data, training: bool) -> Dict[str, tf.Tensor]:
        """Squared error of the predicted similarity: this replica's share and the global mean."""
        inputs, scores = data
        scores = tf.reshape(tf.cast(scores, tf.float32), [-1])
        pred = self.predict_scores(inputs, training)
        if self.objective == "cosine":
            err = (pred / 5.0 - scores / 5.0) ** 2
        else:
            err = (pred - scores) ** 2
        count = replica_sum(tf.cast(tf.size(err), tf.float32))
        total = tf.reduce_sum(err)
        return {"loss": total / count, "total": replica_sum(tf.stop_gradient(total)) / count}
