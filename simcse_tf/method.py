"""SimCSE as a registered method: its model, its data, its per-mode defaults."""

from __future__ import annotations

import functools
import math
import os

import numpy as np
import tensorflow as tf

from common.data.fingerprint import fingerprint_rows
from common.data.sampling import StreamSampler, batches_dataset
from common.data.synthetic import write_sentences
from common.data.tables import parse_columns
from common.models.encoder import build_encoder
from common.models.tokenization import truncated_sentences
from common.training import registry
from common.training.config import TrainConfig
from common.training.grad_cache import mini_batch_chunks
from common.models.encoder_config import encoder_config
from simcse_tf.config import DEFAULTS, POOLING_PLANS, SimcseOptions, mode_defaults
from simcse_tf.data import read_sentences, read_triples
from simcse_tf.model import SimcseModel


@functools.lru_cache(maxsize=2)
def _columns(mode: str, sources, data_path: str, max_sentences: int, seed: int, columns):
    """The training columns: [sentences] (unsup) or [premises, entailments, contradictions] (sup)."""
    mapping = parse_columns(columns)
    if mode == "unsup":
        return (read_sentences(sources, data_path, max_sentences, seed, mapping),)
    return tuple(read_triples(sources, data_path, mapping))


def _load(config: TrainConfig):
    run, options = config.run, config.options
    return _columns(options.mode, run.train_data, run.data_path, options.max_sentences, run.seed, options.columns)


def resolve(config: TrainConfig) -> TrainConfig:
    """`train_steps_per_epoch` 0 becomes one pass over the training data."""
    if config.run.train_steps_per_epoch:
        return config
    steps = max(1, math.ceil(len(_load(config)[0]) / config.run.batch_size))
    return config.replace(train_steps_per_epoch=steps)


def build_model(config: TrainConfig):
    options = config.options
    test_pooling, mlp = POOLING_PLANS[options.pooling]
    encoder = build_encoder(encoder_config(config, pooling=test_pooling))
    return SimcseModel(encoder, options.mode, options.temperature, options.hard_negative_weight, mlp=mlp,
                       seed=config.run.seed,
                       mini_batch_chunks=mini_batch_chunks(options.mini_batch_size, config.run.batch_size),
                       name="simcse")


def make_data(config: TrainConfig, model):
    run = config.run
    columns = _load(config)
    tokenizer = model.encoder.tokenizer
    info = {"examples": len(columns[0]), "truncated_sentences": truncated_sentences(tokenizer, *columns),
            "fingerprint": fingerprint_rows(zip(*columns))}
    sampler = StreamSampler([np.arange(len(columns[0]))], [1.0], run.batch_size, run.seed)
    names = ("sentences",) if config.options.mode == "unsup" else ("premise", "entailment", "contradiction")

    def tokenize(*texts):
        return {name: tokenizer(text) for name, text in zip(names, texts)}

    def make_dataset(start_step: int) -> tf.data.Dataset:
        ds = batches_dataset(sampler, list(columns), start_step)
        return ds.map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    return make_dataset, info


def smoke(directory: str):
    return {"model": "random_tiny", "train_data": (write_sentences(os.path.join(directory, "sentences.txt")),),
            "data_path": directory, "batch_size": 8, "max_seq_len": 16}


METHOD = registry.register(registry.Method(
    name="simcse",
    description="SimCSE: dropout views of one sentence (unsup) or NLI triples with hard negatives (sup).",
    options=SimcseOptions,
    build_model=build_model,
    make_data=make_data,
    smoke=smoke,
    defaults=DEFAULTS,
    mode_defaults=mode_defaults,
    resolve=resolve,
))
