"""Masked-LM pretraining as a registered method: a fresh (or any) BERT on documents."""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf
from absl import logging

from common.data.fingerprint import fingerprint_rows
from common.data.sampling import StreamSampler
from common.data.sources import resolve_sources
from common.data.synthetic import write_documents
from common.models.encoder import build_encoder
from common.models.masked_lm import MaskedLMHead, mask_tokens
from common.training import registry
from common.training.config import TrainConfig
from common.models.encoder_config import encoder_config
from mlm_tf.config import DEFAULTS, MlmOptions
from mlm_tf.data import pack_windows, read_books, split_books, unigram_baseline, wordpieces
from mlm_tf.model import MlmModel

# Held-out masks are drawn once, from this stream of the run's seed (training steps use (seed, step >= 0)).
HELDOUT_MASK_STREAM = -1


def build_model(config: TrainConfig):
    encoder = build_encoder(encoder_config(config, pooling="mean"))
    return MlmModel(encoder, MaskedLMHead.for_encoder(encoder, name="mlm_head"), name="mlm")


def _masked(tokenizer, ids, mask, seed, rate):
    special = [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id]
    masked = mask_tokens(ids, mask, seed, special, tokenizer.mask_id, tokenizer.vocabulary_size, rate)
    return {"token_ids": masked["token_ids"], "padding_mask": mask, "segment_ids": tf.zeros_like(mask),
            "mlm_labels": masked["mlm_labels"], "mlm_weights": masked["mlm_weights"]}


def make_data(config: TrainConfig, model):
    run, options = config.run, config.options
    tokenizer = model.encoder.tokenizer
    window = model.encoder.encoder_config.max_seq_len
    books = read_books(resolve_sources(run.train_data, run.data_path), options.documents)
    train_docs, heldout_docs, heldout_titles = split_books(books, options.heldout_books, run.seed)
    pack = dict(window=window, cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, pad_id=tokenizer.pad_id)
    ids, mask = pack_windows(wordpieces(tokenizer, train_docs), **pack)
    held_ids, held_mask = pack_windows(wordpieces(tokenizer, heldout_docs), **pack)
    info = {"books": len(books.documents), "documents": len(train_docs), "windows": len(ids),
            "tokens": int(mask.sum()) - 2 * len(ids), "heldout_books": heldout_titles,
            "heldout_documents": len(heldout_docs), "heldout_windows": len(held_ids),
            "fingerprint": fingerprint_rows(train_docs)}
    logging.info("Masked-LM data: %s", {k: v for k, v in info.items() if k != "heldout_books"})

    # A fixed, seeded subset of held-out windows with fixed masks: comparable across epochs and runs.
    pick = np.sort(np.random.default_rng(run.seed).permutation(len(held_ids))[:options.heldout_windows])
    heldout = _masked(tokenizer, tf.constant(held_ids[pick]), tf.constant(held_mask[pick]),
                      tf.constant([run.seed, HELDOUT_MASK_STREAM], tf.int64), options.mask_rate)
    model.validation_data = tf.data.Dataset.from_tensor_slices(heldout).batch(run.batch_size)
    special = [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id]
    unigram = unigram_baseline(ids, mask, heldout["mlm_labels"].numpy(), heldout["mlm_weights"].numpy(), special,
                               tokenizer.vocabulary_size)
    model.unigram_floor = {"heldout_unigram_loss": unigram["loss"], "heldout_unigram_accuracy": unigram["accuracy"]}
    info.update(model.unigram_floor)
    logging.info("Unigram-frequency predictor on the held-out masks: loss %.4f, accuracy %.4f.", unigram["loss"],
                 unigram["accuracy"])

    def generate(start_step):
        sampler = StreamSampler([np.arange(len(ids))], [1.0], run.batch_size, run.seed)
        for step, rows in enumerate(sampler.batches(start_step), start=start_step):
            yield ids[rows], mask[rows], np.int64(step)

    def prepare(batch_ids, batch_mask, step):
        # Fresh masks every step, a pure function of (seed, step): a resumed run masks as the original.
        return _masked(tokenizer, batch_ids, batch_mask, tf.stack([tf.constant(run.seed, tf.int64), step]),
                       options.mask_rate)

    signature = (tf.TensorSpec([run.batch_size, window], tf.int32), tf.TensorSpec([run.batch_size, window], tf.int32),
                 tf.TensorSpec([], tf.int64))

    def make_dataset(start_step: int) -> tf.data.Dataset:
        ds = tf.data.Dataset.from_generator(lambda: generate(start_step), output_signature=signature)
        return ds.map(prepare, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    return make_dataset, info


def smoke(directory: str):
    documents = write_documents(os.path.join(directory, "documents.txt"), n=8, words=120)
    return {"model": "random_tiny", "train_data": (documents,),
            "data_path": directory, "batch_size": 4, "max_seq_len": 32, "heldout_books": 2, "heldout_windows": 8}


METHOD = registry.register(registry.Method(
    name="mlm",
    description="Masked-LM pretraining (BERT's 15 %, 80/10/10) of a fresh or pretrained BERT on documents, "
                "with held-out books.",
    options=MlmOptions,
    build_model=build_model,
    make_data=make_data,
    smoke=smoke,
    defaults=DEFAULTS,
))
