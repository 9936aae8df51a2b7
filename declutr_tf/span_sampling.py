"""Anchor and positive span sampling of DeCLUTR (Giorgi et al., ACL 2021, section 3.2).

Spans are counted in whitespace tokens of the document. For each anchor:
    l_anchor   = floor(p_anchor * (l_max - l_min) + l_min),  p_anchor ~ Beta(4, 2)
    l_positive = floor(p_positive * (l_max - l_min) + l_min), p_positive ~ Beta(2, 4)
The anchor start is uniform where the anchor fits; the positive start is uniform
in [anchor_start - l_positive, anchor_end] (kept inside the document), so a
positive is adjacent to, overlaps, or is subsumed by its anchor. The A anchors of
a document are drawn from A disjoint, equal sections of it, so they never overlap.

All randomness comes from a `np.random.Generator`: the same seed gives the same spans.
"""

from __future__ import annotations

import dataclasses
from typing import List, Tuple

import numpy as np

SAMPLING_STRATEGIES = ("all", "adjacent", "subsumed")


@dataclasses.dataclass(frozen=True)
class SpanConfig:
    """DeCLUTR's span hyperparameters (paper names; defaults as in the paper).

    Attributes:
        num_anchors: int. A, anchors per document. Defaults to 2.
        num_positives: int. P, positives per anchor. Defaults to 2.
        min_span_len: int. l_min in tokens. Defaults to 32.
        max_span_len: int. l_max in tokens. Defaults to 512.
        sampling_strategy: str. "all" (adjacent, overlapping or subsumed
            positives), "adjacent" or "subsumed" (the paper's ablation).
    """

    num_anchors: int = 2
    num_positives: int = 2
    min_span_len: int = 32
    max_span_len: int = 512
    sampling_strategy: str = "all"

    def __post_init__(self):
        if self.num_anchors < 1 or self.num_positives < 1:
            raise ValueError("num_anchors and num_positives must be >= 1.")
        if not 1 <= self.min_span_len <= self.max_span_len:
            raise ValueError(f"Need 1 <= min_span_len <= max_span_len, got {self.min_span_len}, {self.max_span_len}.")
        if self.sampling_strategy not in SAMPLING_STRATEGIES:
            raise ValueError(f"sampling_strategy must be one of {SAMPLING_STRATEGIES}, got {self.sampling_strategy!r}.")

    @property
    def min_document_len(self) -> int:
        """Documents shorter than this many tokens are skipped (num_anchors * max_span_len * 2)."""
        return self.num_anchors * self.max_span_len * 2


Span = Tuple[int, int]  # [start, end) in tokens


def _length(rng: np.random.Generator, a: float, b: float, config: SpanConfig) -> int:
    p = rng.beta(a, b)
    return int(np.floor(p * (config.max_span_len - config.min_span_len) + config.min_span_len))


def sample_spans(num_tokens: int, config: SpanConfig, rng: np.random.Generator) -> Tuple[List[Span], List[List[Span]]]:
    """Samples A anchors and P positives per anchor in a document of `num_tokens` tokens.

    Args:
        num_tokens: int. Document length; must be >= config.min_document_len.
        config: SpanConfig.
        rng: np.random.Generator.

    Returns:
        (anchors, positives): A spans, and for each anchor P spans, as [start, end).
    """
    if num_tokens < config.min_document_len:
        raise ValueError(f"Document of {num_tokens} tokens is shorter than {config.min_document_len}.")
    section = num_tokens // config.num_anchors
    anchors, positives = [], []
    for i in range(config.num_anchors):
        length = _length(rng, 4.0, 2.0, config)
        lo = i * section
        start = int(rng.integers(lo, lo + section - length + 1))
        anchor = (start, start + length)
        anchors.append(anchor)
        positives.append([_positive(anchor, num_tokens, config, rng) for _ in range(config.num_positives)])
    return anchors, positives


def _positive(anchor: Span, num_tokens: int, config: SpanConfig, rng: np.random.Generator) -> Span:
    a_start, a_end = anchor
    length = _length(rng, 2.0, 4.0, config)
    if config.sampling_strategy == "subsumed":
        length = min(length, a_end - a_start)
        start = int(rng.integers(a_start, a_end - length + 1))
    elif config.sampling_strategy == "adjacent":
        before, after = a_start - length, a_end
        options = [s for s in (before, after) if 0 <= s and s + length <= num_tokens]
        start = options[int(rng.integers(len(options)))]
    else:
        lo = max(0, a_start - length)
        hi = min(a_end, num_tokens - length)
        start = int(rng.integers(lo, hi + 1))
    return start, start + length


def view_of(anchor: Span, positive: Span) -> str:
    """"subsumed", "adjacent" or "overlapping" (or "disjoint", which sampling never gives)."""
    (a0, a1), (p0, p1) = anchor, positive
    if a0 <= p0 and p1 <= a1:
        return "subsumed"
    if p1 == a0 or p0 == a1:
        return "adjacent"
    if p0 < a1 and a0 < p1:
        return "overlapping"
    return "disjoint"
