"""The two models Trans-Encoder alternates: a bi-encoder and a cross-encoder, on the shared encoder."""

from __future__ import annotations

from typing import Dict, Mapping

import keras
import tensorflow as tf

from common.models.bert import BertBackbone
from common.models.encoder import SentenceEncoder
from common.training.method import MethodModel
from trans_encoder_tf.losses import cosine_mse_loss, soft_bce_with_logits_loss

# Hugging Face's BertForSequenceClassification dropout when a backbone does not say.
DEFAULT_HEAD_DROPOUT = 0.1


class CrossEncoderModel(MethodModel):
    """`[CLS] a [SEP] b [SEP]` -> one logit: Hugging Face's BertForSequenceClassification
    with one label, as sentence-transformers' CrossEncoder builds it.

    The [CLS] vector goes through BERT's pooler (dense + tanh, pretrained where
    the checkpoint has one, trained here), dropout and a Dense(1) classifier
    initialised N(0, 0.02) as in BERT. Trained with `soft_bce_with_logits_loss`
    on the bi-encoder's scores; its score is sigmoid(logit).

    Args:
        encoder: SentenceEncoder. Its tokenizer's `max_seq_len` is the pair length
            (64 in the paper).
        **kwargs: passed to MethodModel.
    """

    pair_outputs = None

    def __init__(self, encoder: SentenceEncoder, **kwargs):
        super().__init__(encoder, **kwargs)
        backbone = encoder.backbone
        if isinstance(backbone, BertBackbone):
            backbone.pooled_dense.trainable = True  # the classifier reads BERT's pooler
            self.pooler = None
            rate = backbone.config.dropout
        else:
            # A TF Hub backbone: its pooler is not separable; use a fresh one.
            self.pooler = keras.layers.Dense(encoder.hidden_size, activation="tanh", name="pooler",
                                             kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02))
            self.pooler.build((None, encoder.hidden_size))
            rate = DEFAULT_HEAD_DROPOUT
        self.head_dropout = keras.layers.Dropout(rate, name="head_dropout")
        self.head_dropout.build((None, encoder.hidden_size))
        self.classifier = keras.layers.Dense(1, name="classifier",
                                             kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02))
        self.classifier.build((None, encoder.hidden_size))
        # Every weight exists now (the backbone is built; the SentenceEncoder wrapper is
        # never called on single sentences here, so Keras would think it unbuilt).
        self.built = True

    def published_layers(self):
        parts = {"encoder": self.encoder, "classifier": self.classifier}
        if self.pooler is not None:
            parts["pooler"] = self.pooler
        return parts

    def tokenize(self, sentence1: tf.Tensor, sentence2: tf.Tensor) -> Dict[str, tf.Tensor]:
        return self.encoder.tokenizer.tokenize_pairs(sentence1, sentence2)

    def logits(self, tokens: Mapping[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        """[B] logits of tokenized pairs."""
        backbone = self.encoder.backbone
        if self.pooler is None:
            pooled = backbone(tokens, training=training)["pooled_output"]  # [B, H]
        else:
            pooled = self.pooler(backbone(tokens, training=training)["sequence_output"][:, 0, :])  # [B, H]
        # float32 at the backbone's boundary under --precision=bf16/fp16 (a no-op in fp32).
        pooled = self.head_dropout(tf.cast(pooled, tf.float32), training=training)
        return tf.squeeze(self.classifier(pooled), -1)  # [B]

    def call(self, inputs, training: bool = False):
        """{"sentence1", "sentence2"} string batches (or {"tokens"}) -> {"logits", "score"} [B]."""
        tokens = inputs["tokens"] if "tokens" in inputs else self.tokenize(inputs["sentence1"], inputs["sentence2"])
        logits = self.logits(tokens, training=training)
        return {"logits": logits, "score": tf.sigmoid(logits)}

    def compute_losses(self, data, training: bool):
        """data: {"tokens": tokenized pairs, "label": [B] soft labels}."""
        local, total = soft_bce_with_logits_loss(self.logits(data["tokens"], training), data["label"])
        return {"loss": local, "total": total}


class BiEncoderModel(MethodModel):
    """Siamese encoder whose cosine similarity regresses the cross-encoder's scores
    (`cosine_mse_loss`); the exported sentence encoder is `encoder`.

    Args:
        encoder: SentenceEncoder. Its pooling is the test-time pooling.
    """

    def compute_losses(self, data, training: bool):
        """data: {"sentence1", "sentence2": tokenized sentences, "label": [B] targets}."""
        u = self.encoder(data["sentence1"], training=training)["embedding"]  # [B, H]
        v = self.encoder(data["sentence2"], training=training)["embedding"]  # [B, H]
        local, total = cosine_mse_loss(u, v, data["label"])
        return {"loss": local, "total": total}
