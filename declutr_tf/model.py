"""The DeCLUTR model: contrastive span embedding plus MLM on the anchors."""

from __future__ import annotations

from typing import Mapping, Optional

import tensorflow as tf

from common.models.encoder import SentenceEncoder
from common.models.masked_lm import MaskedLMHead, masked_lm_statistics
from common.training.contrastive import nt_xent_loss
from common.training.distribute import replica_sum
from common.training.method import MethodModel


class DeclutrModel(MethodModel):
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
        **kwargs: passed to MethodModel (`clip_norm`: the paper clips the
            global gradient norm to 1; `mini_batch_chunks`: gradient caching).
    """

    metric_names = ("loss", "contrastive", "mlm")

    def __init__(self, encoder: SentenceEncoder, num_positives: int, temperature: float = 0.05,
                 mlm_head: Optional[MaskedLMHead] = None, contrastive: bool = True, **kwargs):
        super().__init__(encoder, **kwargs)
        if mlm_head is None and not contrastive:
            raise ValueError("DeCLUTR needs at least one objective: contrastive or MLM.")
        self.mlm_head = mlm_head
        self.num_positives = num_positives
        self.temperature = temperature
        self.contrastive = contrastive

    def published_layers(self):
        """The encoder, and the MLM head (so that MLM can continue from the artifact)."""
        parts = {"encoder": self.encoder}
        if self.mlm_head is not None:
            parts["mlm_head"] = self.mlm_head
        return parts

    def embed_views(self, data: Mapping[str, Mapping[str, tf.Tensor]], training: bool):
        """Anchor and positive-mean embeddings ([n, H] each), and the anchors' MLM sums.

        MLM and the anchor embedding come from one forward pass over the masked anchors.
        """
        anchors = data["anchors"]
        anchor_out = self.encoder({k: anchors[k] for k in ("token_ids", "padding_mask", "segment_ids")},
                                  training=training)
        views, sums = {}, {}
        if self.contrastive:
            positive_out = self.encoder(data["positives"], training=training)
            hidden = tf.shape(positive_out["pooled"])[-1]
            views["anchors"] = anchor_out["pooled"]  # [n, H]
            views["positives"] = tf.reduce_mean(
                tf.reshape(positive_out["pooled"], [-1, self.num_positives, hidden]), axis=1)  # [n, H]
        if self.mlm_head is not None:
            stats = masked_lm_statistics(self.mlm_head, anchor_out["sequence_output"], anchors["mlm_labels"],
                                         anchors["mlm_weights"])
            sums = {"mlm_sum": stats["mlm_sum"], "mlm_count": stats["mlm_count"]}
        return views, sums

    def loss_from_views(self, views: Mapping[str, tf.Tensor], sums: Mapping[str, tf.Tensor]):
        """The global-batch DeCLUTR loss from this replica's `embed_views`.

        Returns:
            Dict: `loss` (this replica's share: differentiate it), and the
            global values `total`, `contrastive`, `mlm`.
        """
        zero = tf.zeros([], tf.float32)
        local, contrastive, mlm = zero, zero, zero
        if self.contrastive:
            c_local, contrastive = nt_xent_loss(views["anchors"], views["positives"], self.temperature)
            local += c_local
        if self.mlm_head is not None:
            count = tf.maximum(tf.stop_gradient(replica_sum(sums["mlm_count"])), 1.0)
            local += sums["mlm_sum"] / count
            mlm = tf.stop_gradient(replica_sum(sums["mlm_sum"])) / count
        return {"loss": local, "total": contrastive + mlm, "contrastive": contrastive, "mlm": mlm}

    def compute_losses(self, data: Mapping[str, Mapping[str, tf.Tensor]], training: bool):
        """The global-batch DeCLUTR loss (`loss_from_views` of `embed_views`)."""
        return self.loss_from_views(*self.embed_views(data, training))
