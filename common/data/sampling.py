"""Seeded, resumable batch sampling shared by every training method.

tf.data's seeded `shuffle`/`sample_from_datasets` give a different order for
each new dataset object in a process, so a resumed run could not continue the
exact data stream. Here the stream of batches is a pure function of the seed:
step k of a run is the same batch whether the run was interrupted or not, and
a resumed run fast-forwards by replaying the (cheap) index draws.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import tensorflow as tf


class StreamSampler:
    """Endless batches of row indices drawn from several groups ("streams").

    Every slot of a batch picks a stream with probability `weights` (as
    `tf.data.Dataset.sample_from_datasets` does), and each stream yields its rows
    in a fresh random permutation every time it is exhausted (shuffle + repeat).

    Args:
        groups: sequence of int arrays. Row indices of each stream.
        weights: sequence of float. Sampling probability of each stream (empty
            streams must have weight 0).
        batch_size: int.
        seed: int.
    """

    def __init__(self, groups: Sequence[np.ndarray], weights: Sequence[float], batch_size: int, seed: int):
        if len(groups) != len(weights):
            raise ValueError(f"{len(groups)} streams but {len(weights)} weights.")
        weights = np.asarray(weights, np.float64)
        if (weights < 0).any() or weights.sum() <= 0:
            raise ValueError(f"Stream weights must be >= 0 and not all 0, got {weights.tolist()}.")
        for g, w in zip(groups, weights):
            if w > 0 and len(g) == 0:
                raise ValueError("A stream with a positive weight has no rows.")
        self.groups = [np.asarray(g, np.int64) for g in groups]
        self.weights = weights / weights.sum()
        self.batch_size = batch_size
        self.seed = seed

    def batches(self, start_step: int = 0) -> Iterator[np.ndarray]:
        """Yields int64 [batch_size] index arrays, starting at batch `start_step`."""
        rng = np.random.default_rng(self.seed)
        perms = [np.empty(0, np.int64) for _ in self.groups]
        cursors = [0] * len(self.groups)
        step = 0
        while True:
            choice = rng.choice(len(self.groups), size=self.batch_size, p=self.weights)
            batch = np.empty(self.batch_size, np.int64)
            for s, group in enumerate(self.groups):
                slots = np.flatnonzero(choice == s)
                taken = []
                need = len(slots)
                while need:
                    if cursors[s] == len(perms[s]):
                        perms[s], cursors[s] = rng.permutation(group), 0
                    part = perms[s][cursors[s]:cursors[s] + need]
                    cursors[s] += len(part)
                    need -= len(part)
                    taken.append(part)
                if len(slots):
                    batch[slots] = np.concatenate(taken)
            if step >= start_step:
                yield batch
            step += 1


def batches_dataset(sampler: StreamSampler, columns: Sequence[np.ndarray], start_step: int = 0) -> tf.data.Dataset:
    """A tf.data stream of `tuple(column[indices])` for each sampled batch.

    Args:
        sampler: StreamSampler.
        columns: sequence of arrays indexed by row (str columns as object arrays).
        start_step: int. First batch to produce (resume).
    """
    columns = [np.asarray(c, dtype=object) if isinstance(c[0], str) else np.asarray(c) for c in columns]
    signature = tuple(
        tf.TensorSpec([sampler.batch_size], tf.string if c.dtype == object else tf.as_dtype(c.dtype))
        for c in columns
    )

    def generate():
        for idx in sampler.batches(start_step):
            yield tuple(c[idx] for c in columns)

    return tf.data.Dataset.from_generator(generate, output_signature=signature)
