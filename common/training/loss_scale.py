"""Dynamic loss scaling for `--precision=fp16` (Micikevicius et al., 2018, https://arxiv.org/abs/1710.03740).

float16 flushes gradients below ~6e-8 to zero; multiplying the loss by a large
scale before differentiating keeps them representable. `MethodModel.train_step`
divides the gradients by the scale again before anything reads them (the global
gradient clip sees true gradients), and skips the update of a step whose
gradients are not finite on any replica. The policy is Keras' `LossScaleOptimizer`'s
(start at 2**15, halve on overflow, double after 2,000 finite steps), written out
here because that optimizer unscales inside `apply_gradients`, after the clip,
and under MirroredStrategy decides per replica whether to skip.
"""

from __future__ import annotations

from typing import List, Optional

import tensorflow as tf

from common.training.distribute import replica_sum

INITIAL_SCALE = 2.0 ** 15
GROWTH_STEPS = 2000


class DynamicLossScale(tf.Module):
    """The loss scale and the count of finite steps since it last changed.

    Create it inside the strategy's scope (its variables are mirrored); every
    replica then updates them identically from the global finiteness.

    Args:
        initial_scale: float. Defaults to 2**15.
        growth_steps: int. Finite steps after which the scale doubles. Defaults to 2000.
    """

    def __init__(self, initial_scale: float = INITIAL_SCALE, growth_steps: int = GROWTH_STEPS):
        super().__init__(name="loss_scale")
        self.growth_steps = growth_steps
        sync = dict(trainable=False, synchronization=tf.VariableSynchronization.ON_WRITE,
                    aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        self.scale = tf.Variable(initial_scale, dtype=tf.float32, name="scale", **sync)
        self.finite_steps = tf.Variable(0, dtype=tf.int64, name="finite_steps", **sync)

    def scale_loss(self, loss: tf.Tensor) -> tf.Tensor:
        return loss * tf.cast(self.scale, loss.dtype)

    def unscale(self, grads: List[Optional[tf.Tensor]]) -> List[Optional[tf.Tensor]]:
        return [None if g is None else tf.convert_to_tensor(g) / self.scale for g in grads]

    def all_finite(self, grads: List[Optional[tf.Tensor]]) -> tf.Tensor:
        """Whether every gradient of every replica is finite (the same bool on each replica)."""
        bad = [tf.reduce_sum(tf.cast(~tf.math.is_finite(tf.convert_to_tensor(g)), tf.float32))
               for g in grads if g is not None]
        return tf.equal(replica_sum(tf.add_n(bad) if bad else tf.constant(0.0)), 0.0)

    def update(self, finite: tf.Tensor) -> None:
        """Halves the scale after an overflow; doubles it after `growth_steps` finite steps."""
        count = tf.where(finite, self.finite_steps + 1, tf.zeros_like(self.finite_steps))
        grow = count >= self.growth_steps
        factor = tf.where(finite, tf.where(grow, 2.0, 1.0), 0.5)
        self.scale.assign(self.scale * factor)
        self.finite_steps.assign(tf.where(grow, tf.zeros_like(count), count))
