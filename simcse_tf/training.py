"""SimCSE training end to end, on the shared run machinery."""

from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import Dict

import keras
import numpy as np
import tensorflow as tf

from common.encoder import EncoderConfig, build_encoder
from common.runs import run_method
from common.sampling import StreamSampler, batches_dataset
from common.schedules import WarmupPolynomialDecay
from simcse_tf.config import SimcseConfig
from simcse_tf.data import read_sentences, read_triples
from simcse_tf.model import SimcseModel


def _load(config: SimcseConfig):
    if config.mode == "unsup":
        return [read_sentences(config.train_data, config.data_path)]
    return list(read_triples(config.train_data, config.data_path))


def build_model(config: SimcseConfig, strategy):
    with strategy.scope():
        pooling = "mean" if config.pooling == "mean" else "cls"
        encoder = build_encoder(EncoderConfig(spec=config.model, max_seq_len=config.max_seq_len, pooling=pooling,
                                              pad_to_multiple_of=config.pad_to_multiple_of, dropout=config.dropout))
        model = SimcseModel(encoder, config.mode, config.temperature, config.hard_negative_weight,
                            use_mlp=config.pooling == "cls_mlp", name="simcse")
        # SimCSE trains with the Hugging Face Trainer's default: linear decay, no warm-up.
        schedule = WarmupPolynomialDecay(config.train_lr, config.total_steps, 0, end_lr=0.0)
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=schedule), jit_compile=False)
    return model


def make_data_fn(columns):
    def make_data(config: SimcseConfig, model):
        tokenizer = model.encoder.tokenizer
        h = hashlib.sha256()
        for row in zip(*columns):
            h.update("\t".join(row).encode("utf-8") + b"\n")
        info = {"examples": len(columns[0]), "fingerprint": h.hexdigest()}
        sampler = StreamSampler([np.arange(len(columns[0]))], [1.0], config.batch_size, config.seed)
        names = ("sentences",) if config.mode == "unsup" else ("premise", "entailment", "contradiction")

        def tokenize(*texts):
            return {name: tokenizer(text) for name, text in zip(names, texts)}

        def make_dataset(start_step: int) -> tf.data.Dataset:
            ds = batches_dataset(sampler, columns, start_step)
            return ds.map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

        return make_dataset, info

    return make_data


def train(config: SimcseConfig, after_step=None) -> Dict[str, object]:
    """Runs SimCSE and publishes `artifacts/model/<ID>/` (see `common.runs.run_method`).

    The paper's per-mode defaults fill the unset settings; `train_steps_per_epoch`
    0 becomes one pass over the training data.
    """
    config = config.with_mode_defaults()
    columns = _load(config) if not config.resume else None
    if not config.train_steps_per_epoch and not config.resume:
        config = dataclasses.replace(config, train_steps_per_epoch=max(1, math.ceil(len(columns[0]) / config.batch_size)))

    def make_data(run_config, model):
        return make_data_fn(columns if columns is not None else _load(run_config))(run_config, model)

    return run_method(config, "simcse", build_model, make_data, None, after_step)
