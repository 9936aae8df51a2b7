"""The SimCSE model: one encoder, in-batch InfoNCE over two views or NLI triples."""

from __future__ import annotations

from typing import Dict, Mapping, Optional

import keras
import tensorflow as tf

from common.models.encoder import SentenceEncoder
from common.training.contrastive import in_batch_infonce_loss
from common.training.method import MethodModel


class SimcseModel(MethodModel):
    """SimCSE (Gao et al., EMNLP 2021, https://aclanthology.org/2021.emnlp-main.552/).

    unsup: every sentence is encoded twice with independent dropout masks; view 2
    of sentence i is its positive, the other sentences' views are negatives.
    sup: premise -> entailment hypothesis (positive) with all contradiction
    hypotheses of the batch as extra (hard) negatives. The loss is
    `common.contrastive.in_batch_infonce_loss`, with keys gathered across replicas.

    Args:
        encoder: SentenceEncoder. Its pooling is the test-time pooling.
        mode: str. "unsup" or "sup".
        temperature: float. Defaults to 0.05.
        hard_negative_weight: float. Weight of each query's own hard negative.
        use_mlp: bool. A Dense(hidden, tanh) over the pooled vector during
            training only ("cls_mlp": it is not part of the exported encoder).
        **kwargs: passed to MethodModel (`mini_batch_chunks`: gradient caching).
    """

    def __init__(self, encoder: SentenceEncoder, mode: str = "unsup", temperature: float = 0.05,
                 hard_negative_weight: float = 1.0, use_mlp: bool = False, hidden_size: Optional[int] = None,
                 **kwargs):
        super().__init__(encoder, **kwargs)
        self.mode = mode
        self.temperature = temperature
        self.hard_negative_weight = hard_negative_weight
        self.mlp = None
        if use_mlp:
            hidden_size = hidden_size or encoder.hidden_size
            self.mlp = keras.layers.Dense(hidden_size, activation="tanh", name="mlp")
            self.mlp.build((None, hidden_size))

    def published_layers(self):
        parts = {"encoder": self.encoder}
        if self.mlp is not None:
            parts["mlp"] = self.mlp
        return parts

    def embed_for_training(self, tokens: Mapping[str, tf.Tensor], training: bool) -> tf.Tensor:
        pooled = self.encoder(tokens, training=training)["pooled"]  # [B, H]
        return self.mlp(pooled) if self.mlp is not None else pooled

    def embed_views(self, data: Mapping[str, Mapping[str, tf.Tensor]], training: bool):
        """unsup: two dropout views of the sentences; sup: premise, entailment, contradiction."""
        if self.mode == "unsup":
            tokens = data["sentences"]
            view1 = self.embed_for_training(tokens, training)  # [B, H]
            view2 = self.embed_for_training(tokens, training)  # [B, H], other dropout mask
            return {"view1": view1, "view2": view2}, {}
        return {name: self.embed_for_training(data[name], training)  # [B, H] each
                for name in ("premise", "entailment", "contradiction")}, {}

    def loss_from_views(self, views: Mapping[str, tf.Tensor], sums=None) -> Dict[str, tf.Tensor]:
        """Returns `loss` (this replica's share) and `total` (the global-batch loss)."""
        if self.mode == "unsup":
            local, total = in_batch_infonce_loss(views["view1"], views["view2"], self.temperature)
        else:
            local, total = in_batch_infonce_loss(views["premise"], views["entailment"], self.temperature,
                                                 views["contradiction"], self.hard_negative_weight)
        return {"loss": local, "total": total}

    def compute_losses(self, data: Mapping[str, Mapping[str, tf.Tensor]], training: bool) -> Dict[str, tf.Tensor]:
        """Returns `loss` (this replica's share) and `total` (the global-batch loss)."""
        return self.loss_from_views(*self.embed_views(data, training))
