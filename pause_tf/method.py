"""PAUSE as a registered method: its model, its data, its defaults."""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf
from absl import logging

from common.data.fingerprint import fingerprint_rows
from common.data.nli import read_nli_sources
from common.data.sampling import StreamSampler, batches_dataset
from common.data.sources import resolve_sources
from common.data.sts import load_stsb
from common.data.synthetic import write_nli_jsonl
from common.errors import UserError
from common.models.encoder import build_encoder
from common.models.tokenization import truncated_sentences
from common.training import registry
from common.training.config import TrainConfig
from common.training.runs import encoder_config, pretrained_weights_prefix
from pause_tf.config import DEFAULTS, PauseOptions
from pause_tf.model import PauseModel, StsbModel
from pause_tf.pu_data import pu_batches, pu_split


def _restore_pretrained(model, config: TrainConfig) -> None:
    options = config.options
    prefix, saved = pretrained_weights_prefix(options.pretrained_weights, config.run.artifacts_dir)
    try:
        # The siamese trunk only: an STS-B regressor would be new.
        trunk = tf.train.Checkpoint(encoder=model.encoder, hidden=model.hidden, classifier=model.classifier)
        tf.train.Checkpoint(model=trunk).read(prefix).expect_partial().assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.InvalidArgumentError) as e:
        raise UserError(
            f"--pretrained_weights={options.pretrained_weights}: its encoder is {saved['encoder']['spec']!r} and "
            f"does not fit --model={config.encoder.model!r} (a model of another size?). Use the same --model as the "
            f"pretrained run. Details: {str(e).splitlines()[0][:300]}"
        ) from None
    logging.info("Loaded pretrained weights from %s.", prefix)


def build_model(config: TrainConfig):
    options = config.options
    encoder = build_encoder(encoder_config(config, pooling="mean"))
    head = dict(num_classes=options.num_classes, hidden_units=options.hidden_units, name="pause")
    if options.task == "nli":
        model = PauseModel(encoder, prior=options.prior, total_steps=config.total_steps,
                           annealing=options.annealing, anneal_power=options.anneal_power,
                           steps_per_epoch=config.run.train_steps_per_epoch, **head)
    else:
        model = StsbModel(encoder, objective=options.stsb_objective, **head)
    example = tf.constant(["a sentence", "another one"])
    model({"premise": example, "hypothesis": example})
    if options.pretrained_weights:
        _restore_pretrained(model, config)
    return model


def make_data(config: TrainConfig, model):
    """Returns (make_dataset(start_step), statistics and fingerprint of the training data)."""
    options, run = config.options, config.run
    tokenizer = model.encoder.tokenizer

    def tokenize(first, second, target):
        return {"premise": tokenizer(first), "hypothesis": tokenizer(second)}, target

    if options.task == "nli":
        pairs = read_nli_sources(resolve_sources(run.train_data, run.data_path), run.data_path)
        labels = pu_split(pairs.labels, options.pos_sample_prec, run.seed)
        info = {"pairs": len(pairs), "labelled": int((labels >= 0).sum()), "dropped_no_gold": pairs.dropped,
                "truncated_sentences": truncated_sentences(tokenizer, pairs.premises, pairs.hypotheses),
                "fingerprint": pairs.fingerprint()}

        def strings(start_step):
            return pu_batches(pairs, labels, run.batch_size, options.prior, run.seed, options.num_classes,
                              options.labeled_batch_fraction, start_step)
    else:
        stsb = load_stsb(run.data_path, "train")
        info = {"pairs": len(stsb),
                "truncated_sentences": truncated_sentences(tokenizer, stsb.sentences1, stsb.sentences2),
                "fingerprint": fingerprint_rows(zip(stsb.sentences1, stsb.sentences2, stsb.scores.tolist()))}
        sampler = StreamSampler([np.arange(len(stsb))], [1.0], run.batch_size, run.seed)

        def strings(start_step):
            columns = [stsb.sentences1, stsb.sentences2, stsb.scores.astype(np.float32)]
            return batches_dataset(sampler, columns, start_step)

    def make_dataset(start_step: int) -> tf.data.Dataset:
        return strings(start_step).map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    return make_dataset, info


def smoke(directory: str):
    return {"model": "random_tiny", "train_data": (write_nli_jsonl(os.path.join(directory, "nli.jsonl")),),
            "data_path": directory, "batch_size": 8, "max_seq_len": 16, "pos_sample_prec": 30.0}


METHOD = registry.register(registry.Method(
    name="pause",
    description="PAUSE: NLI pairs with a share of labels kept (cross-entropy + annealed nnPU), or STS-B "
                "fine-tuning (--task=stsb).",
    options=PauseOptions,
    build_model=build_model,
    make_data=make_data,
    smoke=smoke,
    defaults=DEFAULTS,
))
