"""A model trained by train.py: its directory (`config.json` + `weights/`), found by run ID, `latest`
or path. The encoder is rebuilt from what the run started from (`start_config`, built by
`common.models.sources.build` as any source), then given the run's trained weights (`restore`)."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Tuple, TypeVar

import tensorflow as tf
from absl import logging

from common.artifacts import join
from common.errors import UserError
from common.models.encoder_config import USAGE_FIELDS, EncoderConfig
from common.models.pooling import PADDED_MEAN

WEIGHTS_SUBDIR = "weights"
# The encoder restored (a `SentenceEncoder`), built by the caller.
Encoder = TypeVar("Encoder")


def _read_json(path: str) -> Any:
    with tf.io.gfile.GFile(path, "r") as f:
        return json.load(f)


def is_artifact_dir(path: str) -> bool:
    """A model directory written by train.py: config.json with the encoder settings, and weights/."""
    return tf.io.gfile.exists(join(path, "config.json")) and tf.io.gfile.isdir(join(path, WEIGHTS_SUBDIR))


def trained_on(path: str) -> Tuple[str, ...]:
    """The evaluation sets an artifact's training data overlapped (its config.json records them)."""
    record = join(path, "config.json")
    if not tf.io.gfile.exists(record):
        return ()
    return tuple(_read_json(record).get("trained_on_evaluation_data", ()))


def start_config(path: str, config: EncoderConfig) -> EncoderConfig:
    """The EncoderConfig of the encoder the run at `path` started from, as `config` uses it.

    The architecture, vocabulary, pooling and normalisation are the run's (pooling and
    normalisation unless `config` sets them). How the encoder is used (USAGE_FIELDS) is
    `config`'s alone: the length the run trained at, its `--dropout` and its precision
    are recorded in its config.json, not inherited, so None takes the model's own
    (`model_max_seq_len`, `model_dropout`: those of the model the run started from), except
    that a run that pooled by "padded_mean" keeps its length, the positions its mean is over.
    """
    saved = EncoderConfig(**_read_json(join(path, "config.json"))["encoder"])
    usage = {k: getattr(config, k) for k in USAGE_FIELDS}
    model = {k: v for k, v in (("pooling", config.pooling), ("normalize", config.normalize)) if v is not None}
    if model.get("pooling", saved.pooling) == PADDED_MEAN and usage["max_seq_len"] is None:
        # The mean is over every position of inputs padded to the trained length: it is the model's.
        usage["max_seq_len"] = saved.max_seq_len
    return dataclasses.replace(saved, **usage, **model)


def _check_layer_count(encoder: Encoder, names, path: str) -> None:
    """Refuses a run whose weights hold more transformer layers than the encoder its config builds (the
    read below would leave the extra layers out without a word): the spec it started from has changed."""
    built = getattr(getattr(encoder, "backbone", None), "transformer_layers", None)
    saved = {int(m.group(1)) for m in (re.match(r"backbone/transformer_layer_(\d+)/", n) for n in names) if m}
    if built is not None and saved and max(saved) + 1 > len(built):
        raise UserError(f"{path}: its weights hold {max(saved) + 1} transformer layers, but "
                        f"--model={encoder.encoder_config.spec} (what it started from) builds {len(built)} now; "
                        "that spec has changed since the run was trained: train it again.")


def restore(encoder: Encoder, path: str) -> Encoder:
    """`encoder` (built from `start_config`) with the trained weights of the run at `path`.

    A Trans-Encoder run's bi-encoder is the encoder it holds beside the cross-encoder.
    """
    prefix = tf.train.latest_checkpoint(join(path, WEIGHTS_SUBDIR))
    if prefix is None:
        raise FileNotFoundError(f"{path}/{WEIGHTS_SUBDIR}: no weights checkpoint; "
                                "expected a model trained by train.py.")
    names = [name for name, _ in tf.train.list_variables(prefix)]
    layers, scope = tf.train.Checkpoint(encoder=encoder), "model/encoder/"
    if not any(n.startswith("model/encoder/") for n in names) and any(n.startswith("model/bi_encoder/") for n in names):
        # A Trans-Encoder run: its bi-encoder beside the cross-encoder.
        layers, scope = tf.train.Checkpoint(bi_encoder=layers), "model/bi_encoder/encoder/"
    _check_layer_count(encoder, [n[len(scope):] for n in names if n.startswith(scope)], path)
    status = tf.train.Checkpoint(model=layers).read(prefix).expect_partial()
    status.assert_existing_objects_matched()
    logging.info("Loaded the encoder of %s (%s).", path, prefix)
    encoder.pretrained_head_checkpoint = prefix if any(n.startswith("model/mlm_head/") for n in names) else None
    encoder.encoder_config = dataclasses.replace(encoder.encoder_config, spec=path)
    # A run trains without the prompts of the folder it started from, and publishes an embedding
    # SavedModel that pools every token: its encoder keeps neither.
    encoder.prompts, encoder.default_prompt_name, encoder.include_prompt = {}, None, True
    return encoder
