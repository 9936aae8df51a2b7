"""Gradient caching: in-batch contrastive batches larger than memory, with the plain step's gradient.

GradCache (Gao, Zhang, Han and Callan, "Scaling Deep Contrastive Learning Batch Size
under Memory Limited Setup", RepL4NLP 2021, https://aclanthology.org/2021.repl4nlp-1.31/;
sentence-transformers' CachedMultipleNegativesRankingLoss is the same algorithm).
An in-batch contrastive loss L depends on the encoder's parameters only through the
embeddings E of the batch, so dL/dtheta = sum_i (dE_i/dtheta)^T dL/dE_i over any split
of the batch into mini-batches i. Per replica:

  1. embed every mini-batch (all its views) without a gradient tape;
  2. compute L on all the embeddings (gathered across replicas as the plain loss
     does) under a tape that watches only them: g_i = dL/dE_i;
  3. embed each mini-batch again under a tape and accumulate the gradient of
     <E_i, stop_gradient(g_i)> with respect to the variables.

Only one mini-batch's activations are alive at a time. A method provides two pieces,
`embed(mini_batch) -> (views, sums)` and `loss(views, sums) -> {"loss": ...}`: `views`
are per-example tensors (concatenated over mini-batches), `sums` per-mini-batch scalars
(summed over mini-batches), e.g. DeCLUTR's MLM cross-entropy sum, whose gradient is
cached the same way (it is ordinary gradient accumulation, weighted by the loss).

Dropout is replayed: the dropout seed-generator states (Keras' `SeedGenerator`
variables) are recorded before each mini-batch's first pass and restored before its
second, so the second pass sees the first pass's masks; after the step they hold the
values the first passes left, a deterministic function of the states before the step
(resumed runs stay exact). Every mini-batch draws its own masks, so with dropout the
step equals a plain step over the mini-batches in turn, not one over the whole batch.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf

from common.errors import UserError
from common.training.config import option

Views = Dict[str, tf.Tensor]
Sums = Dict[str, tf.Tensor]
EmbedFn = Callable[[object], Tuple[Views, Sums]]
LossFn = Callable[[Views, Sums], Dict[str, tf.Tensor]]


@dataclasses.dataclass(frozen=True)
class GradCacheOptions:
    """`--mini_batch_size`, shared by the options of every method with an in-batch contrastive loss.

    A method's options dataclass inherits it, and its `validate` calls `super().validate(config)`.
    """

    mini_batch_size: int = option(
        0, "Gradient caching (GradCache): embed and back-propagate this many examples (in --batch_size's unit) "
           "at a time, so that a contrastive batch larger than memory fits; the update is the plain step's. "
           "0: off. Must divide the per-replica batch.", lower_bound=0)

    def validate(self, config) -> None:
        mini_batch_chunks(self.mini_batch_size, config.run.batch_size, replicas=1)


def mini_batch_chunks(mini_batch_size: int, batch_size: int, replicas: Optional[int] = None) -> int:
    """How many mini-batches one replica's batch is cached in; 0 when caching is off.

    Args:
        mini_batch_size: int. `--mini_batch_size` (0: off).
        batch_size: int. The global batch size.
        replicas: int. Replicas in sync; None: those of the current strategy (call it in
            the strategy's scope, as `build_model` is).

    Raises:
        UserError: naming the flags when the batch does not split evenly.
    """
    if not mini_batch_size:
        return 0
    if replicas is None:
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if batch_size % replicas:
        raise UserError(f"--mini_batch_size needs --batch_size to split evenly over the {replicas} replicas; "
                         f"got --batch_size={batch_size}.")
    per_replica = batch_size // replicas
    if per_replica % mini_batch_size:
        where = f"--batch_size={batch_size}" if replicas == 1 else \
            f"the per-replica batch (--batch_size={batch_size} over {replicas} replicas: {per_replica})"
        raise UserError(f"--mini_batch_size must divide {where}; got --mini_batch_size={mini_batch_size}.")
    return per_replica // mini_batch_size


def split_batch(data, num_chunks: int):
    """`data` (any nest of tensors with a leading batch axis) as `num_chunks` equal parts:
    returns i -> the i-th part. Each tensor is split on its own leading axis, so tensors
    with k rows per example (DeCLUTR's positives) stay aligned with the others."""
    def chunked(x):
        x = tf.convert_to_tensor(x)
        rows = tf.shape(x)[0]
        checked = tf.debugging.assert_equal(
            rows % num_chunks, 0, message=f"a batch tensor's rows do not split into {num_chunks} mini-batches")
        with tf.control_dependencies([checked]):
            return tf.reshape(x, tf.concat([[num_chunks, rows // num_chunks], tf.shape(x)[1:]], 0))  # [k, rows/k, ...]

    parts = tf.nest.map_structure(chunked, data)
    return lambda i: tf.nest.map_structure(lambda x: x[i], parts)


def _read_states(states: Sequence) -> tf.Tensor:
    """The seed-generator states as one [n, 2] int64 tensor."""
    if not states:
        return tf.zeros([0, 2], tf.int64)
    return tf.stack([tf.cast(s.value, tf.int64) for s in states])  # [n, 2]


def _restore_states(states: Sequence, values: tf.Tensor) -> None:
    for i, s in enumerate(states):
        s.assign(tf.cast(values[i], s.dtype))


def _while(num_chunks: int, body, loop_vars):
    """Runs body(i, *vars) for i in 1..num_chunks-1, one iteration at a time (parallel
    iterations would keep several mini-batches' activations alive and race on the seed states)."""
    if num_chunks == 1:
        return loop_vars
    out = tf.while_loop(lambda i, *_: i < num_chunks, lambda i, *v: (i + 1, *body(i, *v)),
                        (tf.constant(1), *loop_vars), parallel_iterations=1)
    return out[1:]


def cached_gradients(embed: EmbedFn, loss: LossFn, data, num_chunks: int, variables: Sequence,
                     rng_states: Sequence = (), loss_scale: Optional[tf.Tensor] = None
                     ) -> Tuple[List[Optional[tf.Tensor]], Dict[str, tf.Tensor]]:
    """The gradient of `loss` over `data` through `num_chunks` mini-batches (see the module docstring).

    Args:
        embed: mini-batch -> (views: name -> [rows, ...] embeddings, sums: name -> scalar),
            in training mode. Views of the whole batch are the mini-batches' concatenated
            in order; sums are added up.
        loss: (views, sums) of the replica's whole batch -> dict with "loss" (this
            replica's share of the global loss, as `MethodModel.compute_losses`) and any
            scalars to log.
        data: this replica's batch, a nest of tensors with a leading batch axis.
        num_chunks: int. Mini-batches per replica batch (>= 1).
        variables: the variables to differentiate.
        rng_states: the dropout seed-generator state variables (`loop.rng_variables`).
        loss_scale: scalar or None. fp16's loss scale: the gradients that flow back
            through the encoder (step 3) are multiplied by it, and the returned
            gradients divided by it again.

    Returns:
        (gradients, one per variable, None where a variable gets none; loss's dict).
    """
    chunk = split_batch(data, num_chunks)
    rng_states = list(rng_states)

    # (1) Every mini-batch embedded without a tape, recording the seed states before each.
    starts = tf.TensorArray(tf.int64, size=num_chunks, element_shape=[len(rng_states), 2])
    starts = starts.write(0, _read_states(rng_states))
    views0, sums0 = embed(chunk(0))
    names, sum_names = sorted(views0), sorted(sums0)
    arrays = [tf.TensorArray(views0[n].dtype, size=num_chunks, infer_shape=False,
                             element_shape=tf.TensorShape([None]).concatenate(views0[n].shape[1:])).write(0, views0[n])
              for n in names]
    totals = [sums0[n] for n in sum_names]

    def first_pass(i, starts, arrays, totals):
        starts = starts.write(i, _read_states(rng_states))
        views, sums = embed(chunk(i))
        return (starts, [a.write(i, views[n]) for a, n in zip(arrays, names)],
                [t + sums[n] for t, n in zip(totals, sum_names)])

    starts, arrays, totals = _while(num_chunks, first_pass, (starts, arrays, totals))
    ends = _read_states(rng_states)
    views = {n: tf.stop_gradient(a.concat()) for n, a in zip(names, arrays)}
    sums = {n: tf.stop_gradient(t) for n, t in zip(sum_names, totals)}

    # (2) The loss on all embeddings; its gradient with respect to them (and to any
    # variable of the loss itself, e.g. a learnt temperature; usually none).
    with tf.GradientTape() as tape:
        tape.watch([views, sums])
        out = loss(views, sums)
    d_views, d_sums, direct = tape.gradient(out["loss"], [views, sums, list(variables)])
    zero_if_none = lambda g, x: tf.zeros_like(x) if g is None else g  # noqa: E731
    d_views = {n: zero_if_none(d_views[n], views[n]) for n in names}
    d_sums = {n: zero_if_none(d_sums[n], sums[n]) for n in sum_names}
    if loss_scale is not None:
        # Step 2 ran in float32; the encoder's float16 backward pass needs the scaled gradients.
        d_views = {n: g * tf.cast(loss_scale, g.dtype) for n, g in d_views.items()}
        d_sums = {n: g * tf.cast(loss_scale, g.dtype) for n, g in d_sums.items()}
    d_chunk = split_batch(d_views, num_chunks)
    d_sum_list = [d_sums[n] for n in sum_names]

    # (3) Each mini-batch again, with the masks of its first pass, under a tape.
    def backward(i):
        _restore_states(rng_states, starts.read(i))
        with tf.GradientTape() as inner:
            views_i, sums_i = embed(chunk(i))
        d_i = d_chunk(i)
        targets = [views_i[n] for n in names] + [sums_i[n] for n in sum_names]
        seeds = [d_i[n] for n in names] + d_sum_list
        grads = inner.gradient(targets, list(variables), output_gradients=seeds)
        return [None if g is None else tf.convert_to_tensor(g) for g in grads]

    grads0 = backward(0)
    present = [k for k, g in enumerate(grads0) if g is not None]

    def second_pass(i, accumulated):
        grads = backward(i)
        return ([a + grads[k] for a, k in zip(accumulated, present)],)

    (accumulated,) = _while(num_chunks, second_pass, ([grads0[k] for k in present],))
    _restore_states(rng_states, ends)
    grads: List[Optional[tf.Tensor]] = [None] * len(grads0)
    for k, g in zip(present, accumulated):
        grads[k] = g if loss_scale is None else g / tf.cast(loss_scale, g.dtype)
    for k, g in enumerate(direct):
        if g is not None:
            grads[k] = tf.convert_to_tensor(g) if grads[k] is None else grads[k] + tf.convert_to_tensor(g)
    return grads, out
