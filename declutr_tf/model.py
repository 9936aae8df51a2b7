"""The DeCLUTR model: contrastive span embedding plus MLM on the anchors."""

from __future__ import annotations

from typing import Mapping, Optional

import keras
import tensorflow as tf

from common.contrastive import nt_xent_loss
from common.distribute import replica_sum
from common.encoder import SentenceEncoder
from common.training import apply_gradients, clip_by_global_norm_across_replicas, step_outputs
from declutr_tf.mlm import MaskedLMHead, masked_lm_statistics


class DeclutrModel(keras.Model):
    """Anchors and positives through one shared encoder (masked mean pooling).

    Each anchor is paired with the mean of its P positive embeddings; the loss is
    NT-Xent over the 2AN embeddings of the global batch (`common.contrastive`)
    plus, when `mlm_head` is given, the MLM loss on the anchors. As in the
    original code, MLM and the anchor embedding come from the same forward pass
    over the masked anchor.

    Args:
        encoder: SentenceEncoder.
        num_positives: int. P.
        temperature: float. Defaults to 0.05.
        mlm_head: MaskedLMHead or None (no MLM: `--mlm=false`).
        contrastive: bool. False trains MLM only (the paper's ablation).
        clip_norm: float or None. Global gradient norm clip, applied to the
            global-batch gradient (Keras' `global_clipnorm` would clip each
            replica's gradient separately).
    """

    def __init__(self, encoder: SentenceEncoder, num_positives: int, temperature: float = 0.05,
                 mlm_head: Optional[MaskedLMHead] = None, contrastive: bool = True,
                 clip_norm: Optional[float] = 1.0, **kwargs):
        super().__init__(**kwargs)
        if mlm_head is None and not contrastive:
            raise ValueError("DeCLUTR needs at least one objective: contrastive or MLM.")
        self.encoder = encoder
        self.mlm_head = mlm_head
        self.num_positives = num_positives
        self.temperature = temperature
        self.contrastive = contrastive
        self.clip_norm = clip_norm
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.contrastive_tracker = keras.metrics.Mean(name="contrastive")
        self.mlm_tracker = keras.metrics.Mean(name="mlm")

    @property
    def metrics(self):
        return [self.loss_tracker, self.contrastive_tracker, self.mlm_tracker]

    def weights_checkpoint(self) -> tf.train.Checkpoint:
        parts = {"encoder": self.encoder}
        if self.mlm_head is not None:
            parts["mlm_head"] = self.mlm_head
        return tf.train.Checkpoint(model=tf.train.Checkpoint(**parts))

    def call(self, inputs: Mapping[str, object], training: bool = False):
        return self.encoder(inputs, training=training)

    def compute_losses(self, data: Mapping[str, Mapping[str, tf.Tensor]], training: bool):
        """The global-batch DeCLUTR loss.

        Returns:
            Dict: `loss` (this replica's share: differentiate it), and the
            global values `total`, `contrastive`, `mlm`.
        """
        anchors = data["anchors"]
        anchor_out = self.encoder({k: anchors[k] for k in ("token_ids", "padding_mask", "segment_ids")},
                                  training=training)
        zero = tf.zeros([], tf.float32)
        local, contrastive, mlm = zero, zero, zero
        if self.contrastive:
            positive_out = self.encoder(data["positives"], training=training)
            hidden = tf.shape(positive_out["pooled"])[-1]
            positives = tf.reduce_mean(
                tf.reshape(positive_out["pooled"], [-1, self.num_positives, hidden]), axis=1)  # [n, H]
            c_local, contrastive = nt_xent_loss(anchor_out["pooled"], positives, self.temperature)
            local += c_local
        if self.mlm_head is not None:
            stats = masked_lm_statistics(self.mlm_head, anchor_out["sequence_output"], anchors["mlm_labels"],
                                         anchors["mlm_weights"])
            count = tf.maximum(tf.stop_gradient(replica_sum(stats["mlm_count"])), 1.0)
            local += stats["mlm_sum"] / count
            mlm = tf.stop_gradient(replica_sum(stats["mlm_sum"])) / count
        return {"loss": local, "total": contrastive + mlm, "contrastive": contrastive, "mlm": mlm}

    def _update_metrics(self, out):
        self.loss_tracker.update_state(out["total"])
        self.contrastive_tracker.update_state(out["contrastive"])
        self.mlm_tracker.update_state(out["mlm"])

    def train_step(self, data):
        with tf.GradientTape() as tape:
            out = self.compute_losses(data, training=True)
        grads = tape.gradient(out["loss"], self.trainable_variables)
        if self.clip_norm:
            grads = clip_by_global_norm_across_replicas(grads, self.clip_norm)
        apply_gradients(self.optimizer, grads, self.trainable_variables)
        self._update_metrics(out)
        return step_outputs(self.metrics)

    def test_step(self, data):
        self._update_metrics(self.compute_losses(data, training=False))
        return step_outputs(self.metrics)
