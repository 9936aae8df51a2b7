"""`--precision`: the numeric precision an encoder computes in.

    fp32  float32 everywhere (the default; the graph is the same as without this module).
    bf16  Keras' "mixed_bfloat16": variables float32, the encoder's matmuls and
          activations in bfloat16.
    fp16  Keras' "mixed_float16": as bf16 with float16; training adds a dynamic loss
          scale (`common.training.loss_scale`), float16's range being too small for
          small gradients.

The policy is set per layer (`dtype=` of the backbone and its sublayers), never
with `keras.mixed_precision.set_global_policy`, so a process can hold an fp32 and
a bf16 encoder side by side. Under a mixed policy, these stay float32:
  - the encoder's outputs (`SentenceEncoder` casts the token outputs at its
    boundary, so pooling, L2 normalisation and every loss are float32; the MLM
    head returns float32 logits);
  - the feed-forward activation (GELU, exact or tanh), computed in float32 and cast
    back (`float32_activation`): under mixed_bfloat16 on CPU, TensorFlow's bfloat16
    erfc is about 4x slower than float32's and cancels the matmul gain;
  - LayerNormalization's statistics: Keras 3 (3.15) `ops.layer_normalization`
    computes in at least float32 and casts its result to the compute dtype, and
    the layer does not autocast gamma/beta, so nothing is needed here;
  - variables and optimizer state (Keras' mixed policies keep variables float32).
"""

from __future__ import annotations

from typing import Callable, Union

import keras

PRECISIONS = ("fp32", "bf16", "fp16")
DEFAULT_PRECISION = "fp32"
_POLICIES = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
PRECISION_HELP = ("Numeric precision of the encoder: fp32; bf16 (Keras mixed_bfloat16: float32 variables, bfloat16 "
                  "matmuls); fp16 (mixed_float16, with dynamic loss scaling in training). Losses, pooling, "
                  "normalisation, GELU and LayerNorm statistics stay float32.")


def check_precision(precision: str) -> str:
    """Returns `precision` if it is one of PRECISIONS.

    Raises:
        ValueError: naming the valid values and the one given.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"--precision must be one of {', '.join(PRECISIONS)}; got {precision!r}.")
    return precision


def dtype_policy(precision: str) -> keras.DTypePolicy:
    """The Keras dtype policy of `precision` ("float32", "mixed_bfloat16" or "mixed_float16")."""
    return keras.DTypePolicy(_POLICIES[check_precision(precision)])


def is_mixed(precision: str) -> bool:
    return check_precision(precision) != "fp32"


@keras.saving.register_keras_serializable(package="common")
def gelu_float32(x):
    """Exact (erf) GELU computed in float32, returned in `x`'s dtype."""
    return keras.ops.cast(keras.activations.gelu(keras.ops.cast(x, "float32"), approximate=False), x.dtype)


@keras.saving.register_keras_serializable(package="common")
def gelu_approximate_float32(x):
    """Tanh-approximate GELU computed in float32, returned in `x`'s dtype."""
    return keras.ops.cast(keras.activations.gelu(keras.ops.cast(x, "float32"), approximate=True), x.dtype)


_FLOAT32_ACTIVATIONS = {"gelu": gelu_float32, "gelu_approximate": gelu_approximate_float32}


def feedforward_activation(name: str, precision: str, default: Union[str, Callable]) -> Union[str, Callable]:
    """The feed-forward activation to build: `default` in fp32 (unchanged graph), and
    for GELU under a mixed policy its float32-computing form. ReLU stays as it is
    (exact and cheap in any dtype).

    Args:
        name: str. "gelu" (exact), "gelu_approximate" or "relu".
        precision: str. One of PRECISIONS.
        default: what fp32 uses (a Keras activation name or function).
    """
    if not is_mixed(precision):
        return default
    return _FLOAT32_ACTIVATIONS.get(name, default)
