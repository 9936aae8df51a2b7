"""DeCLUTR as a registered method: its model, its span stream, its defaults."""

from __future__ import annotations

import os

import tensorflow as tf
from absl import logging

from common.data.sources import resolve_sources
from common.data.synthetic import write_documents
from common.models.encoder import build_encoder
from common.models.masked_lm import MaskedLMHead, mask_tokens
from common.training import registry
from common.training.config import TrainConfig
from common.training.grad_cache import mini_batch_chunks
from common.models.encoder_config import encoder_config
from declutr_tf.config import DEFAULTS, DeclutrOptions
from declutr_tf.documents import describe_lengths, read_documents, span_batches
from declutr_tf.model import DeclutrModel


def build_model(config: TrainConfig):
    options = config.options
    encoder = build_encoder(encoder_config(config, pooling="mean"))
    head = MaskedLMHead.for_encoder(encoder, name="mlm_head") if options.mlm else None
    return DeclutrModel(encoder, options.num_positives, options.temperature, head, options.contrastive,
                        mini_batch_chunks=mini_batch_chunks(options.mini_batch_size, config.run.batch_size),
                        name="declutr")


def make_data(config: TrainConfig, model):
    options, run = config.options, config.run
    spans = options.spans
    documents = read_documents(resolve_sources(run.train_data, run.data_path), spans, options.documents)
    tokenizer = model.encoder.tokenizer
    special = [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id]
    summary, counts = describe_lengths(documents, spans)
    # Before the run starts, on the console: a warning when documents are skipped, with the settings that use them.
    (logging.warning if documents.skipped_short else logging.info)("DeCLUTR documents: %s", summary)
    info = {**counts, "files": documents.files, "sources": documents.sources, "fingerprint": documents.fingerprint()}

    def prepare(anchors, positives, step):
        anchor_tokens = tokenizer(anchors)
        if options.mlm:
            masked = mask_tokens(anchor_tokens["token_ids"], anchor_tokens["padding_mask"],
                                 tf.stack([tf.constant(run.seed, tf.int64), step]), special, tokenizer.mask_id,
                                 tokenizer.vocabulary_size)
            anchor_tokens = {**anchor_tokens, **masked}
        return {"anchors": anchor_tokens, "positives": tokenizer(positives)}

    def make_dataset(start_step: int) -> tf.data.Dataset:
        ds = span_batches(documents, spans, run.batch_size, run.seed, start_step)
        return ds.map(prepare, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    return make_dataset, info


def smoke(directory: str):
    # A clip small enough to bind, so that a clip applied per replica would show.
    return {"model": "random_tiny", "train_data": (write_documents(os.path.join(directory, "documents.txt")),),
            "data_path": directory, "batch_size": 2, "max_seq_len": 32, "min_span_len": 8, "max_span_len": 32,
            "clip_norm": 0.5}


METHOD = registry.register(registry.Method(
    name="declutr",
    description="DeCLUTR: anchor and positive spans of one document (NT-Xent) plus MLM on the anchors.",
    options=DeclutrOptions,
    build_model=build_model,
    make_data=make_data,
    smoke=smoke,
    defaults=DEFAULTS,
))
