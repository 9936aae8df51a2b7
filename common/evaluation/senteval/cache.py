"""Sentence embeddings cached per (model, data set, split).

`EmbeddingCache` keeps them in memory for one run. A persistent cache only has
to provide the same `lookup` / `store` pair (for example one `.npy` file per
key, with the fingerprint in its name).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from common.data.fingerprint import fingerprint_rows

CacheKey = Tuple[str, str, str]  # (model name, data set, split)


@dataclasses.dataclass
class EmbeddingCache:
    """In-memory embeddings keyed by (model name, data set, split).

    The data set, not the task, is part of the key, so tasks that read the same
    files (SICK-E and SICK-R) embed them once.

    Attributes:
        hits: int. Look-ups answered from the cache.
        misses: int. Look-ups that had to embed.
    """

    hits: int = 0
    misses: int = 0
    _entries: Dict[CacheKey, Tuple[str, np.ndarray]] = dataclasses.field(default_factory=dict, repr=False)

    def lookup(self, key: CacheKey, digest: str) -> Optional[np.ndarray]:
        """The stored embeddings for `key` if they were computed from sentences with this fingerprint."""
        entry = self._entries.get(key)
        return entry[1] if entry is not None and entry[0] == digest else None

    def store(self, key: CacheKey, digest: str, vectors: np.ndarray) -> None:
        self._entries[key] = (digest, vectors)

    def embed(self, key: CacheKey, sentences: Sequence[str],
              compute: Callable[[Sequence[str]], np.ndarray]) -> np.ndarray:
        """Embeddings [len(sentences), dim] of `sentences`, computed once per key and sentence list.

        Args:
            key: (model name, data set, split).
            sentences: sequence of str.
            compute: callable. Sentences -> float array [n, dim]; called on a miss.

        Raises:
            ValueError: if `compute` returns a wrong number of rows.
        """
        digest = fingerprint_rows(sentences)
        vectors = self.lookup(key, digest)
        if vectors is not None:
            self.hits += 1
            return vectors
        self.misses += 1
        vectors = np.asarray(compute(sentences), np.float32)
        if vectors.ndim != 2 or len(vectors) != len(sentences):
            raise ValueError(f"{key}: the model returned embeddings of shape {vectors.shape} for "
                             f"{len(sentences)} sentences; expected [{len(sentences)}, dim].")
        self.store(key, digest, vectors)
        return vectors
