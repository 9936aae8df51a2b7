"""Annealing of the PU-loss weight, computed in the graph from the optimizer's step."""

from __future__ import annotations

import tensorflow as tf

ANNEALING_MODES = ("global", "per_epoch", "off")


def pu_weight(step: tf.Tensor, total_steps: int, power: float = 3.0, mode: str = "global",
              steps_per_epoch: int | None = None) -> tf.Tensor:
    """The weight of the PU term: (step / total_steps) ** power.

    Args:
        step: tf.Tensor. The optimizer's iteration count (0 at the first step).
        total_steps: int. Steps of the whole run.
        power: float. Defaults to 3, as in the paper's code.
        mode: str. "global" (the weight grows from 0 to 1 over the run),
            "per_epoch" (it restarts every epoch, as in the original code:
            docs/methods/pause.md) or "off" (weight 0: cross-entropy only).
        steps_per_epoch: int. Needed for "per_epoch".

    Returns:
        float32 scalar in [0, 1].
    """
    step = tf.cast(step, tf.float32)
    if mode == "off":
        return tf.zeros([], tf.float32)
    if mode == "per_epoch":
        if not steps_per_epoch:
            raise ValueError("annealing mode 'per_epoch' needs steps_per_epoch.")
        step = tf.math.floormod(step, float(steps_per_epoch))
    elif mode != "global":
        raise ValueError(f"Unknown annealing mode {mode!r}; expected one of {ANNEALING_MODES}.")
    return tf.minimum(step / float(total_steps), 1.0) ** power
