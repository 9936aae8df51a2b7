"""The SavedModels a run publishes, read back: one that embeds sentences (a run's `embedding/`)
and a cross-encoder ((sentence1, sentence2) -> score). Each computes as it was exported: in
float32, at the length it records. Their interface (signature names, the length attribute) is
defined here, where it is read; `common.export.saved_model` writes it. The formats `export.py`
writes are `common.models.formats`.
"""

from __future__ import annotations

from typing import Optional

import tensorflow as tf

from common.artifacts import join
from common.errors import UserError
from common.models.precision import is_mixed

# The serving signatures: an embedding SavedModel's, and a cross-encoder's.
SERVING_INPUT = "sentences"
SERVING_OUTPUT = "embeddings"
CROSS_INPUTS = ("sentence1", "sentence2")
CROSS_OUTPUT = "score"
# The root attribute holding the length the SavedModel truncates at ([CLS] and [SEP] included).
LENGTH_ATTRIBUTE = "max_seq_len"


def is_saved_model_dir(path: str) -> bool:
    return tf.io.gfile.exists(join(path, "saved_model.pb"))


def embedding_saved_model(path: str):
    """Loads `path`; returns (its embedding function, or None if it is not one of ours; the SavedModel)."""
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
    length = getattr(loaded, LENGTH_ATTRIBUTE, None)
    return None if length is None else int(length.numpy())


def refuse_precision(path: str, precision: str) -> None:
    """Raises when a mixed precision is asked of an exported model (it computes as it was exported)."""
    if is_mixed(precision):
        raise UserError(f"--precision={precision}: {path} is an exported model, which computes as it was "
                        "exported (float32); use --precision=fp32, or pass the run it came from (its run ID or "
                        "artifact directory), whose encoder is rebuilt from its weights.")


def refuse_length(path: str, max_seq_len: Optional[int], exported: Optional[int]) -> None:
    """Raises when a length other than an exported model's own is asked of it (it cannot be rebuilt)."""
    if max_seq_len is None or max_seq_len == exported:
        return
    has = f"truncates at {exported} tokens" if exported else "does not record the length it truncates at"
    raise UserError(f"--max_seq_len={max_seq_len}: {path} is an exported model, which {has} and cannot be "
                    "rebuilt at another; pass the run it came from (its run ID or artifact directory), or export "
                    f"it again with export.py --max_seq_len={max_seq_len}.")
