"""PAUSE training (NLI with partial labels) and STS-B fine-tuning, end to end."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from typing import Dict

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from common import artifacts
from common.distribute import is_chief, make_strategy
from common.embedding import embed_sentences
from common.encoder import EncoderConfig, build_encoder
from common.export import export_encoder, export_pair_model, package_versions
from common.nli import read_nli_sources
from common.resolve import model_path
from common.sampling import StreamSampler, batches_dataset
from common.schedules import WarmupPolynomialDecay
from common.sts import load_stsb, stsb_dev_spearman
from common.training import LoopConfig, RunPaths, run_training, weights_fingerprint
from pause_tf.config import PauseConfig
from pause_tf.model import PauseModel, StsbModel
from pause_tf.pu_data import pu_batches, pu_split

RUN_CONFIG_FILE = "run_config.json"
WEIGHTS_SUBDIR = "weights"


def _resolve_sources(config: PauseConfig):
    """Relative NLI paths are taken under --data_path; `senteval:<split>` is kept."""
    out = []
    for source in config.train_data:
        if source.startswith("senteval:") or source.startswith("gs://") or os.path.isabs(source) \
                or os.path.exists(source):
            out.append(source)
        else:
            out.append(artifacts.join(config.data_path, source))
    return out


def _save_run_config(path: str, config: PauseConfig) -> None:
    tf.io.gfile.makedirs(os.path.dirname(path))
    artifacts.write_json(path, dataclasses.asdict(config))


def _load_run_config(path: str, current: PauseConfig) -> PauseConfig:
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Cannot resume: {path} not found (was the run started by this toolkit?).")
    with tf.io.gfile.GFile(path) as f:
        saved = json.load(f)
    saved["train_data"] = tuple(saved["train_data"])
    # Hardware may change between attempts; everything that defines the run may not.
    saved.update(strategy=current.strategy, tpu=current.tpu, resume=current.resume)
    return PauseConfig(**saved)


def _paths(config: PauseConfig, chief: bool) -> RunPaths:
    if config.resume:
        run_id = config.resume
    elif chief:
        run_id = artifacts.new_run_id(config.artifacts_dir)
    else:
        run_id = "worker"
    if not chief and not config.resume:
        tmp = tempfile.mkdtemp(prefix="pause-worker-")
        return RunPaths(run_id, os.path.join(tmp, "log"), os.path.join(tmp, "ckpt"), os.path.join(tmp, "model"))
    paths = RunPaths.for_run(config.artifacts_dir, run_id)
    return dataclasses.replace(paths, log_dir=config.log_dir or paths.log_dir,
                               model_dir=config.model_dir or paths.model_dir)


def _tokenize_pairs(tokenizer):
    def fn(first, second, target):
        return {"premise": tokenizer(first), "hypothesis": tokenizer(second)}, target

    return fn


def _pretrained_dir(config: PauseConfig) -> str:
    path = model_path(config.pretrained_weights, config.artifacts_dir)
    if path is None:
        raise FileNotFoundError(f"--pretrained_weights={config.pretrained_weights!r}: no such run ID or directory.")
    weights = artifacts.join(path, WEIGHTS_SUBDIR)
    if not tf.io.gfile.exists(weights):
        raise FileNotFoundError(f"--pretrained_weights: {weights} not found; expected a model trained by train.py.")
    return path


def _restore_pretrained(model, config: PauseConfig) -> None:
    path = _pretrained_dir(config)
    prefix = tf.train.latest_checkpoint(artifacts.join(path, WEIGHTS_SUBDIR))
    try:
        # The siamese trunk only: an STS-B regressor would be new.
        trunk = tf.train.Checkpoint(encoder=model.encoder, hidden=model.hidden, classifier=model.classifier)
        tf.train.Checkpoint(model=trunk).read(prefix).expect_partial().assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.InvalidArgumentError) as e:
        saved = json.load(tf.io.gfile.GFile(artifacts.join(path, "config.json")))["encoder"]
        raise ValueError(
            f"--pretrained_weights={config.pretrained_weights}: its encoder is {saved['spec']!r} and does not fit "
            f"--model={config.model!r} (a model of another size?). Use the same --model as the pretrained run. "
            f"Details: {str(e).splitlines()[0][:300]}"
        ) from None
    logging.info("Loaded pretrained weights from %s.", prefix)


def _build_model(config: PauseConfig, strategy):
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
        outputs = model({"premise": example, "hypothesis": example})
        if config.task == "stsb":
            model.regressor(outputs["logits"])  # build the head_mse regressor too
        if config.pretrained_weights:
            _restore_pretrained(model, config)
        schedule = WarmupPolynomialDecay(config.train_lr, config.total_steps, config.warmup_steps, config.end_lr)
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=schedule), jit_compile=False)
    return model


def _datasets(config: PauseConfig, model):
    """Returns (make_dataset(start_step), fingerprint and statistics of the training data)."""
    tokenize = _tokenize_pairs(model.encoder.tokenizer)
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
        ds = strings(start_step)
        return ds.map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    return make_dataset, info


def _fingerprint_pairs(pairs) -> str:
    import hashlib

    h = hashlib.sha256()
    for a, b, s in zip(pairs.sentences1, pairs.sentences2, pairs.scores.tolist()):
        h.update(f"{a}\t{b}\t{s}\n".encode("utf-8"))
    return h.hexdigest()


def _publish(model, config: PauseConfig, paths: RunPaths, extra: Dict[str, object]) -> str:
    def write(tmp: str) -> None:
        export_encoder(model.encoder, artifacts.join(tmp, "embedding"))
        outputs = ("logits", "cos_sim", "angular_sim")
        export_pair_model(model, artifacts.join(tmp, "siamese"), outputs)
        model.weights_checkpoint().write(artifacts.join(tmp, WEIGHTS_SUBDIR, "weights"))
        # tf.train.latest_checkpoint needs the index file that CheckpointManager writes.
        with tf.io.gfile.GFile(artifacts.join(tmp, WEIGHTS_SUBDIR, "checkpoint"), "w") as f:
            f.write('model_checkpoint_path: "weights"\nall_model_checkpoint_paths: "weights"\n')
        artifacts.write_json(artifacts.join(tmp, "config.json"), {
            "run_id": paths.run_id,
            "method": "pause",
            "config": dataclasses.asdict(config),
            "encoder": dataclasses.asdict(model.encoder.encoder_config),
            "packages": package_versions(),
            **extra,
        })

    return artifacts.write_atomically(paths.model_dir, write)


def train(config: PauseConfig, after_step=None) -> Dict[str, object]:
    """Runs PAUSE (or STS-B fine-tuning) and publishes `artifacts/model/<ID>/`.

    Args:
        config: PauseConfig.
        after_step: callable. Called with (step, model) after each step (tests).

    Returns:
        Dict with `run_id`, `model_dir` (None on non-chief workers), `metrics`,
        `data` (training data statistics) and `weights_fingerprint`.
    """
    strategy = make_strategy(config.strategy, config.tpu)
    chief = is_chief(strategy)
    if config.resume:
        config = _load_run_config(
            artifacts.join(artifacts.checkpoint_dir(config.artifacts_dir, config.resume), RUN_CONFIG_FILE), config)
    config.validate()
    paths = _paths(config, chief)
    if chief and not config.resume:
        _save_run_config(artifacts.join(paths.checkpoint_dir, RUN_CONFIG_FILE), config)
    logging.info("Run %s: %s replicas; config %s", paths.run_id, strategy.num_replicas_in_sync, config)
    keras.utils.set_random_seed(config.seed)
    model = _build_model(config, strategy)
    make_dataset, data_info = _datasets(config, model)
    logging.info("Training data: %s", data_info)

    embed_fn = tf.function(model.encoder.embed_strings, input_signature=[tf.TensorSpec([None], tf.string)])

    def on_epoch_end(epoch: int, step: int):
        if not (chief and config.eval_each_epoch):
            return {}
        try:
            score = stsb_dev_spearman(lambda s: embed_sentences(embed_fn, s, 128, progress=False), config.data_path)
        except FileNotFoundError as e:
            logging.warning("No STS-B dev evaluation: %s", e)
            return {}
        logging.info("epoch %d (step %d): STS-B dev Spearman %.2f", epoch, step, score)
        return {"stsb_dev_spearman": score}

    loop = LoopConfig(total_steps=config.total_steps, steps_per_epoch=config.train_steps_per_epoch,
                      checkpoint_every=config.checkpoint_every, log_every=config.log_every)
    metrics = run_training(model, make_dataset, strategy, loop, paths, chief, on_epoch_end, after_step)
    fingerprint = weights_fingerprint(model)
    result = {"run_id": paths.run_id, "model_dir": None, "metrics": metrics, "data": data_info,
              "weights_fingerprint": fingerprint}
    if chief:
        result["model_dir"] = _publish(model, config, paths, {"data": data_info, "metrics": metrics,
                                                             "weights_fingerprint": fingerprint})
    return result
