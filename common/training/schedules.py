"""Learning-rate schedules, functions of the optimizer's step computed in the graph."""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="common")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to `peak_lr`, then polynomial decay to `end_lr`.

    The decay runs over the steps *after* warm-up, so the rate is continuous at
    the end of warm-up. With `cut_fraction`-style warm-up and power 1 this is also
    the slanted triangular schedule of Howard & Ruder (2018) used by DeCLUTR.
    `decay_from_start=True` computes the decay over every step from step 0 instead,
    as the original PAUSE code's `WarmUp` over `PolynomialDecay(decay_steps=total)`
    (and BERT's optimization.py) did: the rate then drops at the end of warm-up, from
    `peak_lr` to the decay's value there.

    Args:
        peak_lr: float. Rate at the end of warm-up.
        total_steps: int. Steps of the whole run.
        warmup_steps: int. Steps of linear warm-up.
        end_lr: float. Rate at `total_steps` and after. Defaults to 0.
        power: float. Power of the decay polynomial. Defaults to 1 (linear).
        decay_from_start: bool. Decay over all `total_steps` from step 0 (see above).
            Defaults to False.
    """

    def __init__(self, peak_lr: float, total_steps: int, warmup_steps: int, end_lr: float = 0.0, power: float = 1.0,
                 decay_from_start: bool = False):
        if total_steps < 1 or not 0 <= warmup_steps <= total_steps:
            raise ValueError(f"Need 0 <= warmup_steps <= total_steps and total_steps >= 1, "
                             f"got warmup_steps={warmup_steps}, total_steps={total_steps}.")
        self.peak_lr = float(peak_lr)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)
        self.end_lr = float(end_lr)
        self.power = float(power)
        self.decay_from_start = bool(decay_from_start)

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        warm = self.peak_lr * step / max(self.warmup_steps, 1)
        decay_start = 0 if self.decay_from_start else self.warmup_steps
        decay_steps = max(self.total_steps - decay_start, 1)
        progress = tf.clip_by_value((step - decay_start) / decay_steps, 0.0, 1.0)
        decayed = (self.peak_lr - self.end_lr) * (1.0 - progress) ** self.power + self.end_lr
        return tf.where(step < self.warmup_steps, warm, decayed)

    def get_config(self):
        return {"peak_lr": self.peak_lr, "total_steps": self.total_steps, "warmup_steps": self.warmup_steps,
                "end_lr": self.end_lr, "power": self.power, "decay_from_start": self.decay_from_start}


# Parameters never decayed by AdamW (as BERT, AllenNLP and Hugging Face do).
NO_WEIGHT_DECAY = ("bias", "gamma", "beta")


class _FusedUpdate:
    """Keras' Adam update of a float32 variable as one `ResourceApplyAdam` op instead of the moment and
    variable updates written out op by op (a step traces 17 ops per variable instead of Keras' 41), the
    same formula: m and v move by (1 - beta) of the gap to the gradient and its square, and the variable by
    lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + epsilon). The moments are Keras' own slot
    variables, so checkpoints are those of `keras.optimizers.Adam` / `AdamW` (AdamW's decoupled weight
    decay is applied by Keras before this update, as before). Another dtype or `amsgrad` keeps Keras'
    update. A gradient of gathered rows (`tf.IndexedSlices`) takes the step of its dense sum."""

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad or keras.backend.standardize_dtype(variable.dtype) != "float32":
            return super().update_step(gradient, variable, learning_rate)
        if isinstance(gradient, tf.IndexedSlices):  # the rows' summed gradient, as `dense_gradients` gives
            gradient = tf.convert_to_tensor(gradient)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        step = tf.cast(self.iterations + 1, tf.float32)
        beta_1 = tf.constant(self.beta_1, tf.float32)
        beta_2 = tf.constant(self.beta_2, tf.float32)
        tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable), m=_handle(m), v=_handle(v), beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step), lr=tf.cast(learning_rate, tf.float32), beta1=beta_1, beta2=beta_2,
            epsilon=tf.constant(self.epsilon, tf.float32), grad=tf.cast(gradient, tf.float32))


def _handle(variable) -> tf.Tensor:
    """The resource handle of a Keras variable or of the tf.Variable (or replica component) behind one."""
    return getattr(variable, "_value", variable).handle


@keras.saving.register_keras_serializable(package="common")
class Adam(_FusedUpdate, keras.optimizers.Adam):
    """`keras.optimizers.Adam` with a fused update (`_FusedUpdate`)."""


@keras.saving.register_keras_serializable(package="common")
class AdamW(_FusedUpdate, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with a fused update (`_FusedUpdate`)."""


def make_optimizer(config, total_steps: int) -> keras.optimizers.Optimizer:
    """The optimizer of every method, from its `OptimizerSection`.

    Adam with `WarmupPolynomialDecay(train_lr, total_steps, warm-up, end_lr)` (decaying
    from step 0 with `lr_decay_from="start"`);
    with `weight_decay` > 0 it is AdamW, biases and LayerNorm parameters
    excluded. (The gradient clip is applied by `MethodModel` to the global
    gradient, not by the optimizer, which would clip per replica.)

    Args:
        config: OptimizerSection.
        total_steps: int. Steps of the run.
    """
    schedule = WarmupPolynomialDecay(config.train_lr, total_steps, config.warmup_steps(total_steps), config.end_lr,
                                     decay_from_start=config.lr_decay_from == "start")
    if not config.weight_decay:
        return Adam(learning_rate=schedule)
    optimizer = AdamW(learning_rate=schedule, weight_decay=config.weight_decay)
    optimizer.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY))
    return optimizer
