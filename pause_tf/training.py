"""PAUSE training (NLI with partial labels) and STS-B fine-tuning, end to end."""

from __future__ import annotations

import hashlib
import os
from typing import Dict

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from common import artifacts
from common.encoder import EncoderConfig, build_encoder
from common.nli import read_nli_sources
from common.runs import pretrained_weights_prefix, run_method
from common.sampling import StreamSampler, batches_dataset
from common.schedules import WarmupPolynomialDecay
from common.sts import load_stsb
from pause_tf.config import PauseConfig
from pause_tf.model import PauseModel, StsbModel
from pause_tf.pu_data import pu_batches, pu_split

PAIR_OUTPUTS = ("logits", "cos_sim", "angular_sim")


def _resolve_sources(config: PauseConfig):
    """Relative NLI paths are taken under --data_path; `senteval:<split>` is kept."""
    out = []
    for source in config.train_data:
        if source.startswith(("senteval:", "gs://")) or os.path.isabs(source) or os.path.exists(source):
            out.append(source)
        else:
            out.append(artifacts.join(config.data_path, source))
    return out


def _restore_pretrained(model, config: PauseConfig) -> None:
    prefix, saved = pretrained_weights_prefix(config.pretrained_weights, config.artifacts_dir)
    try:
        # The siamese trunk only: an STS-B regressor would be new.
        trunk = tf.train.Checkpoint(encoder=model.encoder, hidden=model.hidden, classifier=model.classifier)
        tf.train.Checkpoint(model=trunk).read(prefix).expect_partial().assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.InvalidArgumentError) as e:
        raise ValueError(
            f"--pretrained_weights={config.pretrained_weights}: its encoder is {saved['encoder']['spec']!r} and does "
            f"not fit --model={config.model!r} (a model of another size?). Use the same --model as the pretrained "
            f"run. Details: {str(e).splitlines()[0][:300]}"
        ) from None
    logging.info("Loaded pretrained weights from %s.", prefix)


def build_model(config: PauseConfig, strategy):
    with strategy.scope():
        encoder = build_encoder(EncoderConfig(spec=config.model, max_seq_len=config.max_seq_len,
                                              pad_to_multiple_of=config.pad_to_multiple_of, pooling="mean"))
        common_args = dict(num_classes=config.num_classes, hidden_units=config.hidden_units, name="pause")
        if config.task == "nli":
            model = PauseModel(encoder, prior=config.prior, total_steps=config.total_steps,
                               annealing=config.annealing, anneal_power=config.anneal_power,
                               steps_per_epoch=config.train_steps_per_epoch, **common_args)
        else:
            model = StsbModel(encoder, objective=config.stsb_objective, **common_args)
        example = tf.constant(["a sentence", "another one"])
        model({"premise": example, "hypothesis": example})
        if config.pretrained_weights:
            _restore_pretrained(model, config)
        schedule = WarmupPolynomialDecay(config.train_lr, config.total_steps, config.warmup_steps, config.end_lr)
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=schedule), jit_compile=False)
    return model


def _fingerprint_pairs(pairs) -> str:
    h = hashlib.sha256()
    for a, b, s in zip(pairs.sentences1, pairs.sentences2, pairs.scores.tolist()):
        h.update(f"{a}\t{b}\t{s}\n".encode("utf-8"))
    return h.hexdigest()


def make_data(config: PauseConfig, model):
    """Returns (make_dataset(start_step), statistics and fingerprint of the training data)."""
    tokenizer = model.encoder.tokenizer

    def tokenize(first, second, target):
        return {"premise": tokenizer(first), "hypothesis": tokenizer(second)}, target

    if config.task == "nli":
        pairs = read_nli_sources(_resolve_sources(config), config.data_path)
        labels = pu_split(pairs.labels, config.pos_sample_prec, config.seed)
        info = {"pairs": len(pairs), "labelled": int((labels >= 0).sum()), "dropped_no_gold": pairs.dropped,
                "fingerprint": pairs.fingerprint()}

        def strings(start_step):
            return pu_batches(pairs, labels, config.batch_size, config.prior, config.seed, config.num_classes,
                              config.labeled_batch_fraction, start_step)
    else:
        stsb = load_stsb(config.data_path, "train")
        info = {"pairs": len(stsb), "fingerprint": _fingerprint_pairs(stsb)}
        sampler = StreamSampler([np.arange(len(stsb))], [1.0], config.batch_size, config.seed)

        def strings(start_step):
            columns = [stsb.sentences1, stsb.sentences2, stsb.scores.astype(np.float32)]
            return batches_dataset(sampler, columns, start_step)

    def make_dataset(start_step: int) -> tf.data.Dataset:
        return strings(start_step).map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    return make_dataset, info


def train(config: PauseConfig, after_step=None) -> Dict[str, object]:
    """Runs PAUSE (or STS-B fine-tuning) and publishes `artifacts/model/<ID>/`.

    Args:
        config: PauseConfig.
        after_step: callable. Called with (step, model) after each step (tests).

    Returns:
        Dict with `run_id`, `model_dir` (None on non-chief workers), `metrics`,
        `data` (training data statistics) and `weights_fingerprint`.
    """
    return run_method(config, "pause", build_model, make_data, PAIR_OUTPUTS, after_step)
