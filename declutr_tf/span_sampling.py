"""Anchor and positive span sampling of DeCLUTR (Giorgi et al., ACL 2021, section 3.2).

The algorithm is the one of the official `sample_anchor_positive_pairs`
(JohnGiorgi/DeCLUTR, declutr/common/contrastive_utils.py), restated here; N is the
document length, A the anchors, P the positives per anchor, spans are [start, end).

1. The document must have N >= 2 * A * l_max tokens (shorter ones are skipped).
2. Candidate anchor cells start at 0, l_max, 2 * l_max, ... while a whole cell of
   l_max tokens fits: floor(N / l_max) >= 2A cells, kept in a list in document order.
3. For each anchor i = 0 .. A-1, in turn:
   a. l_anchor = floor(p * (l_max - l_min) + l_min), p ~ Beta(4, 2).
   b. With k = A - i anchors still to place and C candidates left, pick a list index:
      the first or the last candidate (equal odds) when C // k < k, otherwise any
      index uniformly.
   c. The anchor start is uniform in [c, c + l_max - l_anchor] for that cell's start
      c, so the anchor lies inside its cell.
   d. The picked candidate and its neighbours in the remaining list (indices
      index-1 .. index+1) are removed. Those are the nearest cells not yet removed,
      so two anchors are always at least l_max tokens apart. The list never runs
      out: with k anchors left and C >= 2k candidates, an end pick leaves
      C - 2 >= 2(k - 1); a free pick needs C >= k^2, which leaves C - 3 >= 2(k - 1)
      for k >= 3, and at least one candidate for the last anchor when k = 2.
   e. The anchor's P positives are drawn before the next anchor (step 4).
4. A positive of the anchor [s, e):
   - "all" (the official default): l_pos = floor(p * (l_max - l_min) + l_min),
     p ~ Beta(2, 4); start uniform in [max(0, s - l_pos), min(e, N - l_pos)], so the
     positive is adjacent to, overlaps or lies inside the anchor and stays in the
     document.
   - "subsumed" (the official "subsuming"): l_pos = floor(p * (l_anchor - l_min) + l_min),
     p ~ Beta(2, 4), the Beta scaled to the anchor's length rather than cut at it;
     start uniform in [s, e - l_pos].
   - "adjacent": l_pos as for "all"; the start is s - l_pos or e, picked with equal
     odds among those that keep the positive in the document. One always does: an
     anchor's cell has at least l_max tokens before it or after it.

Tokens are whitespace words of the document. Where and why this differs from the
official code: docs/methods/declutr.md.

On the grid, anchors never cover the last N mod l_max tokens, and an end cell is as
likely as any other: in a 4,096-token document (A=2, l_max=512: 8 cells) a quarter of
the anchors lie within 192 tokens of an edge (`span_statistics` counts this; the official
sampler's shares beside ours: docs/design/span-sampling.md).

All randomness comes from a `np.random.Generator` passed in, drawn in the official
order (anchor length, cell, start, then each positive's length and start): the same
seed gives the same spans.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Sequence, Tuple

import numpy as np

from common.errors import UserError

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
            positives), "adjacent" or "subsumed" (the paper's ablation; the
            official code calls it "subsuming"). Defaults to "all".
    """

    num_anchors: int = 2
    num_positives: int = 2
    min_span_len: int = 32
    max_span_len: int = 512
    sampling_strategy: str = "all"

    def __post_init__(self):
        if self.num_anchors < 1 or self.num_positives < 1:
            raise UserError("num_anchors and num_positives must be >= 1.")
        if not 1 <= self.min_span_len <= self.max_span_len:
            raise UserError(f"Need 1 <= min_span_len <= max_span_len, got {self.min_span_len}, {self.max_span_len}.")
        if self.sampling_strategy not in SAMPLING_STRATEGIES:
            raise UserError(f"sampling_strategy must be one of {SAMPLING_STRATEGIES}, got {self.sampling_strategy!r}.")

    @property
    def min_document_len(self) -> int:
        """Documents shorter than this many tokens are skipped (num_anchors * max_span_len * 2)."""
        return self.num_anchors * self.max_span_len * 2


Span = Tuple[int, int]  # [start, end) in tokens


def _length(rng: np.random.Generator, a: float, b: float, shortest: int, longest: int) -> int:
    """floor(p * (longest - shortest) + shortest) with p ~ Beta(a, b)."""
    return int(np.floor(rng.beta(a, b) * (longest - shortest) + shortest))


def sample_spans(num_tokens: int, config: SpanConfig, rng: np.random.Generator) -> Tuple[List[Span], List[List[Span]]]:
    """Samples A anchors and P positives per anchor in a document of `num_tokens` tokens.

    Args:
        num_tokens: int. Document length; must be >= config.min_document_len.
        config: SpanConfig.
        rng: np.random.Generator. The only source of randomness.

    Returns:
        (anchors, positives): A spans in the order they were drawn (not sorted), and
        for each anchor P spans, as [start, end).

    Raises:
        ValueError: when the document is shorter than config.min_document_len.
    """
    if num_tokens < config.min_document_len:
        raise ValueError(f"Document of {num_tokens} tokens is shorter than {config.min_document_len}.")
    cell = config.max_span_len
    candidates = list(range(0, num_tokens - cell + 1, cell))
    anchors, positives = [], []
    for i in range(config.num_anchors):
        length = _length(rng, 4.0, 2.0, config.min_span_len, cell)
        left = config.num_anchors - i
        # Too few candidates to pick freely: an end one removes only two, so the rest suffice.
        if len(candidates) // left < left:
            index = int(rng.choice([0, len(candidates) - 1]))
        else:
            index = int(rng.integers(len(candidates)))
        start = int(rng.integers(candidates[index], candidates[index] + cell - length + 1))
        del candidates[max(0, index - 1):index + 2]
        anchor = (start, start + length)
        anchors.append(anchor)
        positives.append([_positive(anchor, num_tokens, config, rng) for _ in range(config.num_positives)])
    return anchors, positives


def _positive(anchor: Span, num_tokens: int, config: SpanConfig, rng: np.random.Generator) -> Span:
    a_start, a_end = anchor
    if config.sampling_strategy == "subsumed":
        length = _length(rng, 2.0, 4.0, config.min_span_len, a_end - a_start)
        start = int(rng.integers(a_start, a_end - length + 1))
    elif config.sampling_strategy == "adjacent":
        length = _length(rng, 2.0, 4.0, config.min_span_len, config.max_span_len)
        options = [s for s in (a_start - length, a_end) if 0 <= s and s + length <= num_tokens]
        start = int(rng.choice(options))
    else:
        length = _length(rng, 2.0, 4.0, config.min_span_len, config.max_span_len)
        start = int(rng.integers(max(0, a_start - length), min(a_end, num_tokens - length) + 1))
    return start, start + length


def view_of(anchor: Span, positive: Span) -> str:
    """How a positive relates to its anchor; the three views are exclusive.

    "subsumed": inside the anchor (a_start <= p_start and p_end <= a_end; equal
    spans included). "adjacent": no shared token and touching (p_end == a_start or
    p_start == a_end). "overlapping": at least one shared token, not subsumed (a
    positive containing the anchor counts here). "disjoint": none of these, which
    sampling never gives.
    """
    (a0, a1), (p0, p1) = anchor, positive
    if a0 <= p0 and p1 <= a1:
        return "subsumed"
    if p1 == a0 or p0 == a1:
        return "adjacent"
    if p0 < a1 and a0 < p1:
        return "overlapping"
    return "disjoint"


def span_statistics(draws: Sequence[Tuple[List[Span], List[List[Span]]]], num_tokens: int, config: SpanConfig,
                    edge_distances: Sequence[int] = ()) -> Dict[str, float]:
    """Summary of many `sample_spans` draws on documents of `num_tokens` tokens.

    Args:
        draws: sequence of (anchors, positives) as `sample_spans` returns them.
        num_tokens: int. The documents' length.
        config: SpanConfig. The settings the draws were made with.
        edge_distances: ints d. For each, the share of anchors within d tokens of an
            edge: fewer than d tokens lie between the anchor and the document's
            start or end (min(start, num_tokens - end) < d). Defaults to none.

    Returns:
        "anchor_length_fraction" and "positive_length_fraction" (mean length over
        max_span_len), the shares of positives per `view_of` view ("subsumed",
        "overlapping", "adjacent", "disjoint"), and "anchors_within_<d>_of_edge".
    """
    anchors = [a for spans, _ in draws for a in spans]
    pairs = [(a, p) for spans, groups in draws for a, group in zip(spans, groups) for p in group]
    views = [view_of(a, p) for a, p in pairs]
    stats = {
        "anchor_length_fraction": float(np.mean([e - s for s, e in anchors])) / config.max_span_len,
        "positive_length_fraction": float(np.mean([e - s for _, (s, e) in pairs])) / config.max_span_len,
    }
    for view in ("subsumed", "overlapping", "adjacent", "disjoint"):
        stats[view] = views.count(view) / len(views)
    for d in edge_distances:
        stats[f"anchors_within_{d}_of_edge"] = float(np.mean([min(s, num_tokens - e) < d for s, e in anchors]))
    return stats
