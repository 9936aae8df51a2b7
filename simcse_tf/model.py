"""The SimCSE model: one encoder, in-batch InfoNCE over two views or NLI triples."""

from __future__ import annotations

from typing import Dict, Mapping

import keras
import tensorflow as tf

from common.errors import UserError
from common.models.bert import BertBackbone
from common.models.sources.fresh import BERT_INIT_STDDEV
from common.models.encoder import SentenceEncoder
from common.training.contrastive import in_batch_infonce_loss
from common.training.method import MethodModel

# Test-time poolings the MLP can be trained under: [CLS] without it, or through it.
MLP_POOLINGS = ("cls", "pooler")


class SimcseModel(MethodModel):
    """SimCSE (Gao et al., EMNLP 2021, https://aclanthology.org/2021.emnlp-main.552/).

    unsup: every sentence is encoded twice with independent dropout masks; view 2
    of sentence i is its positive, the other sentences' views are negatives.
    sup: premise -> entailment hypothesis (positive) with all contradiction
    hypotheses of the batch as extra (hard) negatives. The loss is
    `common.training.contrastive.in_batch_infonce_loss`, with keys gathered across replicas.

    The MLP (`mlp=True`, dense hidden -> hidden + tanh over [CLS]) is the
    backbone's own pooler (`pooled_dense`), re-initialised N(0, 0.02) with a zero
    bias from `seed`: encoder pooling "pooler" applies it at test time, "cls" does
    not. Where and why this differs from the official code: docs/methods/simcse.md.

    Args:
        encoder: SentenceEncoder. Its pooling is the test-time pooling.
        mode: str. "unsup" or "sup".
        temperature: float. Defaults to 0.05.
        hard_negative_weight: float. The paper's alpha, the weight of each query's own
            hard negative (1 = plain InfoNCE).
        mlp: bool. Train through the MLP; the encoder's pooling must then be
            "cls" or "pooler". Defaults to False.
        seed: int. Seed of the MLP's initial values. Defaults to 0.
        **kwargs: passed to MethodModel (`mini_batch_chunks`: gradient caching).

    Raises:
        UserError: with `mlp`, for another pooling or a backbone not built by this
            toolkit (a TF Hub SavedModel's pooler cannot be re-initialised).
    """

    def __init__(self, encoder: SentenceEncoder, mode: str = "unsup", temperature: float = 0.05,
                 hard_negative_weight: float = 1.0, mlp: bool = False, seed: int = 0, **kwargs):
        super().__init__(encoder, **kwargs)
        self.mode = mode
        self.temperature = temperature
        self.hard_negative_weight = hard_negative_weight
        self.mlp = mlp
        if mlp:
            if encoder.pooling not in MLP_POOLINGS:
                raise UserError(f"SimCSE's MLP is applied to [CLS]: the encoder's pooling must be one of "
                                 f"{MLP_POOLINGS}; got {encoder.pooling!r}.")
            if not isinstance(encoder.backbone, BertBackbone):
                raise UserError("SimCSE's MLP (--pooling=cls_mlp or cls_mlp_test) needs a BERT built by this "
                                 "toolkit; a TF Hub SavedModel's pooler cannot be re-initialised: use "
                                 "--pooling=cls or mean.")
            dense = encoder.backbone.pooled_dense
            dense.trainable = True
            dense.kernel.assign(keras.initializers.RandomNormal(0.0, BERT_INIT_STDDEV, seed=seed)(dense.kernel.shape))
            dense.bias.assign(tf.zeros_like(dense.bias))

    def embed_for_training(self, tokens: Mapping[str, tf.Tensor], training: bool) -> tf.Tensor:
        """The sentence vectors the loss compares: through the MLP when there is one."""
        out = self.encoder(tokens, training=training)
        return out["pooler_output"] if self.mlp else out["pooled"]  # [B, H]

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
