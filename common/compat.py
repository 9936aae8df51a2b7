"""Every private member of another library that the toolkit uses, behind one door.

keras-hub, Keras and TensorFlow change their private modules and attributes without notice. The
toolkit reaches into a few of them where the public API has no equivalent; each such use is a
function here, and tests/common/test_compat.py pins the behaviour relied on (shapes, and numbers
against the public path), so an upgrade that changes one fails in the test suite, not in a run.

Nothing outside this module imports `keras_hub.src`, `keras.src`, `tensorflow.python` or uses
`tf.__internal__` (a test checks that too).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import tensorflow as tf

# === keras-hub: the sublayers of a TransformerEncoder ===


def merge_padding_and_attention_mask(inputs, padding_mask, attention_mask):
    """keras-hub's own merge of a padding mask and an attention mask into one [B, T, T] mask
    (what `TransformerEncoder.call` does before its attention)."""
    from keras_hub.src.layers.modeling.transformer_layer_utils import merge_padding_and_attention_mask as merge

    return merge(inputs, padding_mask, attention_mask)


@dataclasses.dataclass(frozen=True)
class EncoderParts:
    """The sublayers of a built keras-hub `TransformerEncoder`, by what they compute.

    Attributes:
        attention: keras.layers.MultiHeadAttention.
        query, key, value, attention_output: its EinsumDense projections.
        attention_dropout, attention_norm: the dropout and LayerNorm after attention.
        intermediate, output: the feed-forward Dense layers.
        feedforward_dropout, feedforward_norm: the dropout and LayerNorm after the feed-forward block.
    """

    attention: Any
    query: Any
    key: Any
    value: Any
    attention_output: Any
    attention_dropout: Any
    attention_norm: Any
    intermediate: Any
    output: Any
    feedforward_dropout: Any
    feedforward_norm: Any


def encoder_parts(layer) -> EncoderParts:
    """The sublayers of a built keras-hub `TransformerEncoder` (private attributes of keras-hub and Keras)."""
    attention = layer._self_attention_layer
    return EncoderParts(
        attention=attention, query=attention._query_dense, key=attention._key_dense,
        value=attention._value_dense, attention_output=attention._output_dense,
        attention_dropout=layer._self_attention_dropout, attention_norm=layer._self_attention_layer_norm,
        intermediate=layer._feedforward_intermediate_dense, output=layer._feedforward_output_dense,
        feedforward_dropout=layer._feedforward_dropout, feedforward_norm=layer._feedforward_layer_norm)


def attention_heads(attention) -> tuple:
    """(number of heads, size of each head) of a Keras `MultiHeadAttention`."""
    return attention._num_heads, attention._key_dim


def attention_mask(attention, inputs, mask):
    """The mask `MultiHeadAttention` applies for self-attention over `inputs` given `mask` [B, T, T]."""
    return attention._compute_attention_mask(inputs, inputs, attention_mask=mask)


def attention_context(attention, query, key, value, mask, training: Optional[bool]):
    """`MultiHeadAttention`'s core on projected [B, T, heads, head size] tensors: scaled scores, masked
    softmax, dropout, the weighted sum. Returns the context [B, T, heads, head size]."""
    context, _ = attention._compute_attention(query, key, value, attention_mask=mask, training=training)
    return context


# === Keras: the global seed generator ===


def get_global_seed_generator():
    """The SeedGenerator that Keras layers created without a seed draw from (None before first use)."""
    from keras.src.backend.common import global_state
    from keras.src.random.seed_generator import GLOBAL_SEED_GENERATOR

    return global_state.get_global_attribute(GLOBAL_SEED_GENERATOR)


def set_global_seed_generator(generator) -> None:
    """Sets (None: resets, so that the next use seeds a fresh one from Python's `random`) Keras'
    global SeedGenerator."""
    from keras.src.backend.common import global_state
    from keras.src.random.seed_generator import GLOBAL_SEED_GENERATOR

    global_state.set_global_attribute(GLOBAL_SEED_GENERATOR, generator)


# === TensorFlow ===


def strategy_supports_no_merge_call() -> bool:
    """Whether the current distribution strategy can apply gradients without a merge call."""
    return tf.__internal__.distribute.strategy_supports_no_merge_call()


def auto_trackable() -> Any:
    """An empty trackable object that a SavedModel can be rooted at (tf.Module's base class, whose
    `variables` can be assigned as plain attributes)."""
    return tf.__internal__.tracking.AutoTrackable()


def trace_for_saving(function, *args, **kwargs) -> None:
    """Traces `function` (a tf.function) for `args`, `kwargs` as `tf.saved_model.save` (default
    options) will look it up. A trace made outside a save is keyed apart from one made inside it (the
    key holds the save's variable policy), so a function traced beforehand, to be saved with that
    signature, would be traced a second time by the save."""
    from tensorflow.python.saved_model import save_context

    with save_context.save_context(tf.saved_model.SaveOptions()):
        function.get_concrete_function(*args, **kwargs)


def onednn_enabled() -> bool:
    """Whether this TensorFlow build runs its oneDNN CPU kernels (x86 builds, unless TF_ENABLE_ONEDNN_OPTS=0)."""
    from tensorflow.python.util import _pywrap_util_port

    return bool(_pywrap_util_port.IsMklEnabled())


def variables_to_constants() -> Callable:
    """TensorFlow's `convert_variables_to_constants_v2`: a concrete function with its variables frozen."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    return convert_variables_to_constants_v2


__all__ = ["EncoderParts", "attention_context", "attention_heads", "attention_mask", "auto_trackable",
           "encoder_parts", "get_global_seed_generator", "merge_padding_and_attention_mask",
           "onednn_enabled", "set_global_seed_generator", "strategy_supports_no_merge_call",
           "trace_for_saving", "variables_to_constants"]
