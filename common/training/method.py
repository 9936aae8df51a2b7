"""The method contract: what a training method implements, and what it inherits.

A method's model subclasses `MethodModel`. It implements one hook,

    compute_losses(data, training) -> {"loss": this replica's share of the
        global-batch loss (what is differentiated), "total": the global loss,
        and any other global scalars named in `metric_names`}

and, where it has more than an encoder to publish, `published_layers()`. A
method whose loss is an in-batch contrastive loss may instead implement
`embed_views` and `loss_from_views` (`compute_losses` is then their
composition); with `mini_batch_chunks` set, the step caches gradients
(`common.training.grad_cache`) so that batches larger than memory fit. The
base class owns everything else: `train_step` / `test_step`, metric tracking,
the optional gradient clip on the global gradient, skipping variables that
get no gradient, the dynamic loss scale of an fp16 encoder, and the weights
that are published.

Each method package registers itself once in its `method.py`
(`common.training.registry.register`), with its options dataclass, its model
builder and its data builder.
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional, Tuple

import keras
import numpy as np
import tensorflow as tf

from common import compat
from common.training.config import HELDOUT_PREFIX
from common.training.distribute import replica_sum
from common.training.grad_cache import cached_gradients
from common.training.loop import rng_variables
from common.training.loss_scale import DynamicLossScale


def step_outputs(metrics) -> Dict[str, tf.Tensor]:
    """A train/test step's return value: each metric result as a [1] tensor.

    Keras 3 reduces step outputs under MultiWorkerMirroredStrategy with
    `strategy.reduce(MEAN, v, axis=0)`, which fails on scalars; a [1] tensor is
    reduced correctly there and by every other strategy.
    """
    return {m.name: tf.reshape(m.result(), [1]) for m in metrics}


def dense_gradients(grads):
    """The gradients with every `tf.IndexedSlices` (an embedding gathered by the batch) made dense.

    Keras 3's Adam and AdamW (TensorFlow backend) square an `IndexedSlices` gradient slice by slice
    (`ops.square` keeps it sparse) before the slices of a repeated index are added, so the second
    moment of an embedding row that a batch gathers k times becomes the sum of k squares instead
    of the square of the sum, and the row's step up to sqrt(k) times Adam's: [CLS], [SEP], the
    segment embedding and frequent words moved several times too far (bench/parity.py found it;
    tests/common/training/test_sparse_gradients.py pins Keras' behaviour). A dense gradient adds the
    slices first, as PyTorch's embedding gradient does.
    """
    return [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]


def apply_gradients(optimizer, grads, variables) -> None:
    """Applies the gradients that exist: heads a method does not use (the NSP
    pooler of a TF-Hub BERT, the regressor of a cosine objective) get none."""
    optimizer.apply_gradients([(g, v) for g, v in zip(grads, variables) if g is not None])


def clip_by_global_norm_across_replicas(grads, clip_norm: float):
    """Scales this replica's gradients so that their sum over replicas (what the
    optimizer applies) has global norm <= clip_norm.

    Keras clips each replica's gradient before the cross-replica sum, so its
    `global_clipnorm` gives a different update on N replicas than on one.
    """
    summed = [None if g is None else replica_sum(tf.convert_to_tensor(g)) for g in grads]
    norm = tf.linalg.global_norm([g for g in summed if g is not None])
    scale = clip_norm / tf.maximum(norm, clip_norm)
    return [None if g is None else tf.convert_to_tensor(g) * scale for g in grads]


class MethodModel(keras.Model):
    """Base of every training method's model.

    Args:
        encoder: SentenceEncoder. The sentence encoder that is trained and exported.
        clip_norm: float or None. Clip the global-batch gradient to this global
            norm before the update (applied across replicas, see
            `clip_by_global_norm_across_replicas`); None or 0 disables it.
            An encoder built with `precision="fp16"` gets a dynamic loss scale
            (`loss_scale`, see `common.training.loss_scale`); build the model
            inside the strategy's scope, as `build_model` is.
        mini_batch_chunks: int. Gradient caching: each replica's batch is embedded
            and back-propagated in this many mini-batches
            (`common.training.grad_cache.mini_batch_chunks`); needs `embed_views`
            and `loss_from_views`. 0 (the default): the plain step.
        **kwargs: passed to keras.Model (e.g. `name`).

    Class attributes:
        metric_names: tuple of str. Scalars tracked per step: "loss" tracks
            `compute_losses(...)["total"]`, every other name the same key.
        pair_outputs: tuple of str or None. When set, the published artifact
            also holds a `siamese/` (sentence1, sentence2) -> outputs SavedModel
            of `call({"premise": ..., "hypothesis": ...})`; a model that defines
            `pair_head(u, v)` (its outputs from the two sides' pooled embeddings, as
            `pause_tf.SiameseModel`) is served through one trace of its encoder.
    """

    metric_names: Tuple[str, ...] = ("loss",)
    pair_outputs: Optional[Tuple[str, ...]] = None

    def __init__(self, encoder, clip_norm: Optional[float] = None, mini_batch_chunks: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.clip_norm = clip_norm
        precision = getattr(getattr(encoder, "encoder_config", None), "precision", None)
        self.loss_scale = DynamicLossScale() if precision == "fp16" else None
        self.mini_batch_chunks = mini_batch_chunks
        self.trackers = {name: keras.metrics.Mean(name=name) for name in self.metric_names}
        # A finite dataset of global batches that `make_data` may set (e.g. held-out
        # books for masked-LM): `validation_metrics()` scores it at each epoch end.
        self.validation_data: Optional[tf.data.Dataset] = None

    # === The hooks a method implements ===

    def compute_losses(self, data, training: bool) -> Dict[str, tf.Tensor]:
        """The global-batch loss of one step.

        Args:
            data: one global batch as the method's dataset yields it (this replica's part).
            training: bool. Dropout and other training-only behaviour.

        Returns:
            Dict with "loss" (this replica's share: the sum over replicas is the
            global loss, so summed gradients equal one device's), "total" (the
            global loss, for logging) and every other name in `metric_names`.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement compute_losses(data, training).")

    def embed_views(self, data, training: bool) -> Tuple[Dict[str, tf.Tensor], Dict[str, tf.Tensor]]:
        """For gradient caching: the embeddings of a (mini-)batch, and per-batch sums.

        Returns:
            (views: name -> [rows, ...] per-example embeddings, which concatenate over
            mini-batches; sums: name -> scalar, which add up over mini-batches, e.g. a
            cross-entropy sum). Every call must draw the same dropout seeds for the
            same seed states (the cached step replays them).
        """
        raise NotImplementedError(f"{type(self).__name__} does not support --mini_batch_size (no embed_views).")

    def loss_from_views(self, views: Dict[str, tf.Tensor], sums: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """For gradient caching: `compute_losses`' dict from the whole batch's `embed_views`."""
        raise NotImplementedError(f"{type(self).__name__} does not support --mini_batch_size (no loss_from_views).")

    def published_layers(self) -> Dict[str, keras.layers.Layer]:
        """The layers whose weights the artifact's `weights/` checkpoint holds."""
        return {"encoder": self.encoder}

    def update_metrics(self, data, out: Mapping[str, tf.Tensor]) -> None:
        """Feeds this step's values to the trackers; override to add sample weights."""
        for name, tracker in self.trackers.items():
            tracker.update_state(out["total"] if name == "loss" else out[name])

    # === What every method shares ===

    def call(self, inputs, training: bool = False):
        return self.encoder(inputs, training=training)

    @property
    def metrics(self):
        return list(self.trackers.values())

    def weights_checkpoint(self) -> tf.train.Checkpoint:
        """The published weights, without optimizer state."""
        return tf.train.Checkpoint(model=tf.train.Checkpoint(**self.published_layers()))

    def validation_metrics(self) -> Dict[str, float]:
        """`test_step` over `validation_data`: {"heldout_<metric>": mean over its batches}, or {}.

        Collective under a distribution strategy: every worker calls it. The
        training trackers are reset afterwards (the next log starts afresh).
        """
        if self.validation_data is None:
            return {}
        for metric in self.metrics:
            metric.reset_state()
        steps = int(self.validation_data.cardinality())
        if steps < 0:
            raise ValueError("validation_data must be a finite dataset of known size (e.g. from_tensor_slices).")
        self.make_test_function()
        iterator = iter(self.distribute_strategy.experimental_distribute_dataset(self.validation_data))
        logs = {}
        for _ in range(steps):
            logs = self.test_function(iterator)
        values = {HELDOUT_PREFIX + k: float(np.asarray(v).reshape(-1)[0]) for k, v in logs.items()}
        for metric in self.metrics:
            metric.reset_state()
        return values

    def compute_gradients(self, data) -> Tuple[list, Dict[str, tf.Tensor]]:
        """This replica's gradients of its loss share (None for a variable without one),
        and `compute_losses`' dict: one tape over the step, or cached mini-batches. With
        the fp16 loss scale, the loss is scaled before differentiating and the gradients
        returned are unscaled (what a clip and the optimizer must see)."""
        scale = None if self.loss_scale is None else self.loss_scale.scale
        if self.mini_batch_chunks:
            return cached_gradients(lambda part: self.embed_views(part, training=True), self.loss_from_views, data,
                                    self.mini_batch_chunks, self.trainable_variables, rng_variables(self),
                                    loss_scale=scale)
        with tf.GradientTape() as tape:
            out = self.compute_losses(data, training=True)
            target = out["loss"] if scale is None else self.loss_scale.scale_loss(out["loss"])
        grads = tape.gradient(target, self.trainable_variables)
        return (grads if scale is None else self.loss_scale.unscale(grads)), out

    def train_step(self, data):
        grads, out = self.compute_gradients(data)
        grads = dense_gradients(grads)
        if self.loss_scale is None:
            if self.clip_norm:
                grads = clip_by_global_norm_across_replicas(grads, self.clip_norm)
            apply_gradients(self.optimizer, grads, self.trainable_variables)
        else:
            # fp16: a step whose gradients overflowed on any replica changes no weight (it still
            # counts as a step, so the learning-rate schedule and the resumable data stream stay on it).
            finite = self.loss_scale.all_finite(grads)  # the same on every replica
            if self.clip_norm:
                grads = clip_by_global_norm_across_replicas(grads, self.clip_norm)
            self._apply_if_finite(finite, grads)
            self.loss_scale.update(finite)
        self.update_metrics(data, out)
        return step_outputs(self.metrics)

    def _apply_if_finite(self, finite: tf.Tensor, grads) -> None:
        """Applies `grads` when `finite`, else only advances the step counter.

        The optimizer's cross-replica gradient sum is a `merge_call`, which TensorFlow
        refuses inside a `tf.cond` in replica context; as Keras' LossScaleOptimizer,
        the branch is then taken in cross-replica context and applied per replica.
        """
        pairs = [(g, v) for g, v in zip(grads, self.trainable_variables) if g is not None]
        variables = [v for _, v in pairs]

        def apply(gradients):
            self.optimizer.apply_gradients(list(zip(gradients, variables)))

        def skip():
            self.optimizer.iterations.assign_add(1)

        gradients = [g for g, _ in pairs]
        if compat.strategy_supports_no_merge_call():
            tf.cond(finite, lambda: apply(gradients), skip)
            return

        def cross_replica(strategy, finite, gradients):
            # `finite` is the global verdict, the same on every replica.
            finite = strategy.experimental_local_results(finite)[0]
            tf.cond(finite, lambda: strategy.extended.call_for_each_replica(apply, args=(gradients,)), skip)

        tf.distribute.get_replica_context().merge_call(cross_replica, args=(finite, gradients))

    def test_step(self, data):
        self.update_metrics(data, self.compute_losses(data, training=False))
        return step_outputs(self.metrics)
