"""`--precision`: the numeric precision an encoder computes in.

    fp32  float32 everywhere (the default; no casts in the graph).
    bf16  Keras' "mixed_bfloat16": variables float32, the encoder's matmuls and
          activations in bfloat16.
    fp16  Keras' "mixed_float16": as bf16 with float16; training adds a dynamic loss
          scale (`common.training.loss_scale`), float16's range being too small for
          small gradients.

The policy is set per layer (`dtype=` of the backbone and its sublayers), so a process
can hold an fp32 and a bf16 encoder side by side. An encoder built without a precision
(`EncoderConfig(precision=None)`, the Keras layer's default) takes it from Keras' global
policy (`keras.mixed_precision.set_global_policy`, `resolve_precision`), once, when it is
built; a precision given explicitly wins over the global policy. Under a mixed policy,
these stay float32:
  - the encoder's outputs (`SentenceEncoder` casts the token outputs at its
    boundary, so pooling, L2 normalisation and every loss are float32; the MLM
    head returns float32 logits);
  - the feed-forward activation (GELU, exact or tanh), computed in float32 and cast
    back (`gelu_float32`): under mixed_bfloat16 on CPU, TensorFlow's bfloat16
    erfc is about 4x slower than float32's and cancels the matmul gain. Outside
    training, in bf16 on a oneDNN CPU, the exact GELU is written in bfloat16
    instead (`fused_inference_activation`), as the pattern TensorFlow's graph
    optimizer fuses with its matmul and bias into one oneDNN kernel that applies
    the bias and the GELU to the float32 accumulator and rounds once
    (`common.models.bert_layer.BertLayer`; run eagerly, unfused, it is the erf form
    computed in bfloat16);
  - LayerNormalization's statistics: Keras 3 (3.15) `ops.layer_normalization`
    computes in at least float32 and casts its result to the compute dtype, and
    the layer does not autocast gamma/beta, so nothing is needed here;
  - variables and optimizer state (Keras' mixed policies keep variables float32).
"""

from __future__ import annotations

from typing import Callable, Optional, Union

import keras

from common.errors import UserError

PRECISIONS = ("fp32", "bf16", "fp16")
DEFAULT_PRECISION = "fp32"
_POLICIES = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
PRECISION_HELP = ("Numeric precision of the encoder: fp32; bf16 (Keras mixed_bfloat16: float32 variables, bfloat16 "
                  "matmuls); fp16 (mixed_float16, with dynamic loss scaling in training). Losses, pooling, "
                  "normalisation, GELU and LayerNorm statistics stay float32.")


def check_precision(precision: str) -> str:
    """Returns `precision` if it is one of PRECISIONS.

    Raises:
        UserError: naming the valid values and the one given.
    """
    if precision not in PRECISIONS:
        raise UserError(f"--precision must be one of {', '.join(PRECISIONS)}; got {precision!r}.")
    return precision


def global_precision() -> str:
    """The precision of Keras' global dtype policy (`keras.config.dtype_policy()`): "fp32" for
    "float32", "bf16" for "mixed_bfloat16", "fp16" for "mixed_float16".

    Raises:
        UserError: for any other global policy (an encoder keeps float32 variables, so a pure
            "bfloat16" or "float16" policy has no precision here), naming the ones it follows.
    """
    name = keras.config.dtype_policy().name
    for precision, policy in _POLICIES.items():
        if policy == name:
            return precision
    raise UserError(f"Keras' global dtype policy is {name!r}; the encoder follows 'float32', 'mixed_bfloat16' or "
                    "'mixed_float16': set one of those, or give the encoder a precision (precision='fp32').")


def resolve_precision(precision: Optional[str]) -> str:
    """`precision` itself if given (checked), else the global policy's (`global_precision`)."""
    return global_precision() if precision is None else check_precision(precision)


def dtype_policy(precision: str) -> keras.DTypePolicy:
    """The Keras dtype policy of `precision` ("float32", "mixed_bfloat16" or "mixed_float16")."""
    return keras.DTypePolicy(_POLICIES[check_precision(precision)])


def is_mixed(precision: str) -> bool:
    return check_precision(precision) != "fp32"


_SQRT_HALF = 0.7071067811865476


@keras.saving.register_keras_serializable(package="common")
def gelu_erf(x):
    """Exact GELU as 0.5 * x * (1 + erf(x / sqrt(2))), the form Hugging Face's and PyTorch's BERT compute.

    Used for every exact GELU the toolkit builds, in each precision: on CPU it is faster than
    TensorFlow's erfc form (`tf.nn.gelu`, which `keras.activations.gelu` calls), and equal to it to
    1e-6 in float32 (docs/design/attention-and-gelu.md).
    """
    return 0.5 * x * (1.0 + keras.ops.erf(x * _SQRT_HALF))


@keras.saving.register_keras_serializable(package="common")
def gelu_float32(x):
    """Exact (erf) GELU computed in float32, returned in `x`'s dtype."""
    return keras.ops.cast(gelu_erf(keras.ops.cast(x, "float32")), x.dtype)


@keras.saving.register_keras_serializable(package="common")
def gelu_approximate_float32(x):
    """Tanh-approximate GELU computed in float32, returned in `x`'s dtype."""
    return keras.ops.cast(keras.activations.gelu(keras.ops.cast(x, "float32"), approximate=True), x.dtype)


_FLOAT32_ACTIVATIONS = {"gelu": gelu_float32, "gelu_approximate": gelu_approximate_float32}


def feedforward_activation(name: str, precision: str, default: Union[str, Callable]) -> Union[str, Callable]:
    """The feed-forward activation to build. Exact GELU is `gelu_erf` (the erf form, faster
    than TensorFlow's erfc form) in fp32, and under a mixed policy GELU (exact or tanh) is
    computed in float32 (`gelu_float32`, `gelu_approximate_float32`). Anything else is
    `default` (ReLU: exact and cheap in any dtype; the tanh GELU in fp32).

    Args:
        name: str. "gelu" (exact), "gelu_approximate" or "relu".
        precision: str. One of PRECISIONS.
        default: what fp32 uses (a Keras activation name or function).
    """
    if not is_mixed(precision):
        return gelu_erf if name == "gelu" else default
    return _FLOAT32_ACTIVATIONS.get(name, default)


def onednn_cpu() -> bool:
    """Whether TensorFlow runs on its oneDNN CPU kernels here (x86 builds, unless TF_ENABLE_ONEDNN_OPTS=0)
    and sees no GPU: where its graph optimizer fuses a matmul, its bias and an exact GELU into one kernel."""
    import tensorflow as tf

    from common import compat

    return compat.onednn_enabled() and not tf.config.list_physical_devices("GPU")


def fused_inference_activation(name: str, precision: str) -> Union[None, Callable]:
    """The feed-forward activation a BERT layer uses outside training when it differs from the
    training one (`feedforward_activation`): in bf16 on a oneDNN CPU (`onednn_cpu`), the exact GELU as
    `gelu_erf` in bfloat16, which TensorFlow fuses with the preceding matmul and bias into one kernel
    (`_FusedMatMul` with `BiasAdd, GeluExact`) that applies both to the float32 accumulator and rounds
    once: faster than the float32 GELU between casts, which stays separate kernels, and closer to
    float32 (the matmul's output is not rounded before the bias and GELU). None otherwise: fp32
    already computes the fusable form, fp16 and GPUs keep the float32 GELU, the tanh GELU and ReLU
    are unchanged.
    """
    return gelu_erf if name == "gelu" and precision == "bf16" and onednn_cpu() else None
