"""DeCLUTR training end to end, on the shared run machinery."""

from __future__ import annotations

import os
from typing import Dict

import keras
import tensorflow as tf
from absl import logging

from common import artifacts
from common.bert import BertBackbone, hf_tensors
from common.encoder import EncoderConfig, build_encoder, hf_checkpoint_path
from common.runs import run_method
from common.schedules import WarmupPolynomialDecay
from declutr_tf.config import DeclutrConfig
from declutr_tf.documents import read_documents, span_batches
from declutr_tf.mlm import MaskedLMHead, embedding_matrix_getter, mask_tokens
from declutr_tf.model import DeclutrModel


def _resolve_sources(config: DeclutrConfig):
    return [s if s.startswith("gs://") or os.path.isabs(s) or os.path.exists(s)
            else artifacts.join(config.data_path, s) for s in config.train_data]


def build_model(config: DeclutrConfig, strategy):
    with strategy.scope():
        encoder = build_encoder(EncoderConfig(spec=config.model, max_seq_len=config.max_seq_len,
                                              pad_to_multiple_of=config.pad_to_multiple_of, pooling="mean"))
        head = None
        if config.mlm:
            getter = embedding_matrix_getter(encoder.backbone)
            if getter is None:
                raise ValueError(f"--model={config.model}: cannot find its token embeddings for the tied MLM "
                                 "head; train with --mlm=false.")
            vocab, hidden = getter().shape
            eps = encoder.backbone.config.layer_norm_eps if isinstance(encoder.backbone, BertBackbone) else 1e-12
            head = MaskedLMHead(getter, hidden, vocab, layer_norm_eps=eps, name="mlm_head")
            checkpoint = hf_checkpoint_path(config.model)
            if checkpoint:
                head.load_hf_head(hf_tensors(checkpoint), checkpoint)
            else:
                logging.warning("%s: no Hugging Face checkpoint to take an MLM head from; initialised randomly.",
                                config.model)
        model = DeclutrModel(encoder, config.num_positives, config.temperature, head, config.contrastive,
                             config.clip_norm, name="declutr")
        schedule = WarmupPolynomialDecay(config.train_lr, config.total_steps, config.warmup_steps, end_lr=0.0)
        optimizer = keras.optimizers.AdamW(learning_rate=schedule, weight_decay=config.weight_decay)
        # As the DeCLUTR/AllenNLP configuration: no weight decay on biases and LayerNorm parameters.
        optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
        model.compile(optimizer=optimizer, jit_compile=False)
    return model


def make_data(config: DeclutrConfig, model):
    spans = config.spans
    documents = read_documents(_resolve_sources(config), spans)
    tokenizer = model.encoder.tokenizer
    special = [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id]
    info = {"documents": len(documents.tokens), "skipped_short": documents.skipped_short,
            "files": documents.sources, "fingerprint": documents.fingerprint()}
    if documents.skipped_short:
        logging.warning("Skipped %d documents shorter than %d tokens.", documents.skipped_short,
                        spans.min_document_len)

    def prepare(anchors, positives, step):
        anchor_tokens = tokenizer(anchors)
        if config.mlm:
            masked = mask_tokens(anchor_tokens["token_ids"], anchor_tokens["padding_mask"],
                                 tf.stack([tf.constant(config.seed, tf.int64), step]), special, tokenizer.mask_id,
                                 tokenizer.vocabulary_size)
            anchor_tokens = {**anchor_tokens, **masked}
        return {"anchors": anchor_tokens, "positives": tokenizer(positives)}

    def make_dataset(start_step: int) -> tf.data.Dataset:
        ds = span_batches(documents, spans, config.batch_size, config.seed, start_step)
        return ds.map(prepare, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    return make_dataset, info


def train(config: DeclutrConfig, after_step=None) -> Dict[str, object]:
    """Runs DeCLUTR and publishes `artifacts/model/<ID>/` (see `common.runs.run_method`)."""
    return run_method(config, "declutr", build_model, make_data, None, after_step)
