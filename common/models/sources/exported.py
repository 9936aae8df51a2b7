"""Exported models: a SavedModel that embeds sentences (a run's `embedding/`, export.py's), a
cross-encoder SavedModel ((sentence1, sentence2) -> score) and a TFLite model with its tokenizer
inside. Each computes as it was exported: in float32, at the length it records.

`common.export` writes these formats and itself builds encoders from this room, so its names are
imported where they are used."""

from __future__ import annotations

from typing import Optional

import tensorflow as tf

from common.artifacts import join


def is_saved_model_dir(path: str) -> bool:
    return tf.io.gfile.exists(join(path, "saved_model.pb"))


def embedding_saved_model(path: str):
    """Loads `path`; returns (its embedding function, or None if it is not one of ours; the SavedModel)."""
    from common.export.saved_model import SERVING_INPUT, SERVING_OUTPUT

    loaded = tf.saved_model.load(path)
    signature = getattr(loaded, "signatures", {}).get("serving_default")
    if signature is None:
        return None, loaded
    _, kwargs = signature.structured_input_signature
    spec = kwargs.get(SERVING_INPUT)
    if spec is None or spec.dtype != tf.string:
        return None, loaded

    def embed_fn(sentences):
        return signature(**{SERVING_INPUT: sentences})[SERVING_OUTPUT]

    # The signature reads variables owned by `loaded`; keep it alive with the function.
    embed_fn.saved_model = loaded
    # Exports of this toolkit count tokens (batches are sorted by them); older ones do not.
    counter = getattr(loaded, "token_counts", None)
    if counter is not None:
        embed_fn.token_counts = counter

    return embed_fn, loaded


def cross_saved_model(path: str):
    """Loads `path`; returns its (sentence1, sentence2) -> score function, or None if it is not a cross-encoder."""
    from common.export.saved_model import CROSS_INPUTS, CROSS_OUTPUT

    loaded = tf.saved_model.load(path)
    signature = getattr(loaded, "signatures", {}).get("serving_default")
    if signature is None:
        return None
    _, kwargs = signature.structured_input_signature
    if set(kwargs) != set(CROSS_INPUTS) or CROSS_OUTPUT not in signature.structured_outputs:
        return None

    def score_fn(sentence1, sentence2):
        return signature(sentence1=sentence1, sentence2=sentence2)[CROSS_OUTPUT]

    score_fn.saved_model = loaded
    counter = getattr(loaded, "token_counts", None)
    if counter is not None:
        score_fn.token_counts = counter
    return score_fn


def exported_length(loaded) -> Optional[int]:
    """The length an embedding SavedModel truncates at, where it records one (exports
    of this toolkit since they record it; older ones and foreign models do not)."""
    from common.export.saved_model import LENGTH_ATTRIBUTE

    length = getattr(loaded, LENGTH_ATTRIBUTE, None)
    return None if length is None else int(length.numpy())


def tflite_file(path: str) -> Optional[str]:
    """The TFLite model `path` names (a `.tflite` file, or a folder holding `model.tflite`), else None."""
    from common.export.tflite import TFLITE_FILE, is_tflite_file

    for candidate in (path, join(path, TFLITE_FILE)):
        if is_tflite_file(candidate):
            return candidate
    return None


def tflite_embedder(path: str):
    """The embedding function of the TFLite model at `path` (`tflite_file`)."""
    from common.export.tflite import TFLiteEmbedder

    return TFLiteEmbedder(path)
