"""The masked-LM pretraining model: a BERT encoder and BERT's MLM head tied to its embeddings."""

from __future__ import annotations

from typing import Dict, Mapping

import tensorflow as tf

from common.models.encoder import SentenceEncoder
from common.models.masked_lm import MaskedLMHead, masked_lm_statistics
from common.training.distribute import replica_sum
from common.training.method import MethodModel

ENCODER_INPUTS = ("token_ids", "padding_mask", "segment_ids")


class MlmModel(MethodModel):
    """Masked language modelling (Devlin et al., NAACL 2019, https://aclanthology.org/N19-1423/).

    The loss is the mean cross-entropy over every selected position of the global
    batch (positions are counted across replicas), as BERT's.

    Args:
        encoder: SentenceEncoder.
        mlm_head: MaskedLMHead tied to the encoder's token embeddings.
        **kwargs: passed to MethodModel.
    """

    metric_names = ("loss", "accuracy")

    def __init__(self, encoder: SentenceEncoder, mlm_head: MaskedLMHead, **kwargs):
        super().__init__(encoder, **kwargs)
        self.mlm_head = mlm_head

    # Set by the method's data: the unigram-frequency predictor's held-out loss and accuracy on the same masks.
    unigram_floor: Dict[str, float] = {}

    def validation_metrics(self) -> Dict[str, float]:
        """The held-out loss and accuracy, with the unigram predictor's beside them (how far above the plateau)."""
        values = super().validation_metrics()
        return {**values, **self.unigram_floor} if values else values

    def published_layers(self):
        """The encoder and the MLM head (a method that continues MLM restores it)."""
        return {"encoder": self.encoder, "mlm_head": self.mlm_head}

    def compute_losses(self, data: Mapping[str, tf.Tensor], training: bool) -> Dict[str, tf.Tensor]:
        """Returns `loss` (this replica's share), `total` and `accuracy` over the global batch's masked tokens."""
        out = self.encoder({k: data[k] for k in ENCODER_INPUTS}, training=training)
        stats = masked_lm_statistics(self.mlm_head, out["sequence_output"], data["mlm_labels"], data["mlm_weights"])
        count = tf.maximum(tf.stop_gradient(replica_sum(stats["mlm_count"])), 1.0)
        return {"loss": stats["mlm_sum"] / count, "total": tf.stop_gradient(replica_sum(stats["mlm_sum"])) / count,
                "accuracy": replica_sum(stats["mlm_correct"]) / count}
