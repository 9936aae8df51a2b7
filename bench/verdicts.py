"""Verdicts on the papers' claims, by rules computed from the ladder's numbers.

Every claim ends in exactly one of HELD, DID NOT HOLD, NOT TESTABLE HERE (or NOT RUN while a
row it needs has no score yet). The rules, as `RULES` states them on the results page:

1. A trained row needs at least `MIN_SEEDS` seeds; untrained rows (the floors, the pretrained
   start) are fixed models and carry no seed noise.
2. A claim "A above B by at least m" compares d = mean(A) - mean(B) - m with its seed standard
   error se = sqrt(sd_A^2 / n_A + sd_B^2 / n_B) (sample standard deviations; 0 for a fixed row):
   |d| <= se is no verdict (NOT TESTABLE HERE: within seed noise); d > se HELD; d < -se DID NOT HOLD.
3. A margin claim (A at most m below B) is NOT TESTABLE HERE when every row of its family lies
   inside the margin (max - min <= m): then no setting at this scale can tell the rows apart.
4. A Trans-Encoder claim is NOT TESTABLE HERE when any cycle is degenerate: pseudo-labels whose
   standard deviation is below a quarter of the bi-encoder's cosine spread (the standard deviation
   of the scores the cross-encoder learned from) teach the next model nothing but a constant.
5. A claim made of several (one per label percentage) HOLDS when each part holds, DID NOT HOLD
   when any part did not, and is otherwise NOT TESTABLE HERE (or NOT RUN).
6. A SimCSE claim is NOT TESTABLE HERE when a run of a row it compares collapsed: its training loss
   ended within `COLLAPSE_SHARE` of the chance level ln(candidates), the loss of embeddings that tell
   no candidate from another (every sentence equally similar to all of them).
7. A claim "A above the model it started from" (a Trans-Encoder row above its SimCSE start) pairs
   each seed of A with the seed of B it was trained from: d = mean(A_s - B_s), se = sd(A_s - B_s) /
   sqrt(n), with the thresholds of rule 2 and at least `MIN_SEEDS` pairs. The start's spread between
   seeds is not noise in such a comparison, so it does not widen the se.
"""

from __future__ import annotations

import dataclasses
import math
from typing import List, Optional, Sequence, Tuple

HELD, NOT_HELD, NOT_TESTABLE, NOT_RUN = "HELD", "DID NOT HOLD", "NOT TESTABLE HERE", "NOT RUN"
MIN_SEEDS = 3
# A cycle is degenerate when its pseudo-labels' std is below this share of the bi-encoder's cosine spread.
DEGENERATE_SHARE = 0.25
# A contrastive run collapsed when its final training loss is above (1 - this) x ln(candidates).
COLLAPSE_SHARE = 0.02

RULES = (
    f"Verdict rules: a trained row needs at least {MIN_SEEDS} seeds (floors and the pretrained start are fixed "
    "models); a claim \"A above B by m\" compares d = mean(A) - mean(B) - m with the seed standard error "
    "se = sqrt(sd_A²/n_A + sd_B²/n_B): |d| <= se is NOT TESTABLE HERE (within seed noise), d > se HELD, "
    "d < -se DID NOT HOLD; a margin claim is NOT TESTABLE HERE when every row of its family lies inside the "
    f"margin; a Trans-Encoder claim is NOT TESTABLE HERE when a cycle's pseudo-labels have a standard deviation "
    f"below {DEGENERATE_SHARE:g} of the bi-encoder's cosine spread (degenerate); a SimCSE claim is NOT TESTABLE "
    f"HERE when a run it compares collapsed: its training loss ended within {100 * COLLAPSE_SHARE:g} % of the "
    "chance level ln(candidates), where no candidate is told from another; a claim over several label "
    "percentages holds when every part holds and fails when any part fails; a claim that a model is above the "
    "one it started from pairs each seed with its own start: d = mean(A_s - B_s) against "
    "se = sd(A_s - B_s)/sqrt(n), with the same thresholds.")


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of the table: its scores over seeds.

    Attributes:
        name: str.
        values: tuple of float. One score per seed (one for a fixed model).
        fixed: bool. An untrained model (a floor, the pretrained start): no seed noise.
    """

    name: str
    values: Sequence[float]
    fixed: bool = False

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return sum(self.values) / self.n

    @property
    def sd(self) -> float:
        if self.fixed or self.n < 2:
            return 0.0
        m = self.mean
        return math.sqrt(sum((v - m) ** 2 for v in self.values) / (self.n - 1))

    def describe(self) -> str:
        if self.fixed or self.n == 1:
            return f"{self.mean:.2f}"
        return f"{self.mean:.2f} ± {self.sd:.2f} ({self.n} seeds)"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A claim's outcome and the numbers behind it."""

    claim: str
    outcome: str
    detail: str

    def line(self) -> str:
        return f"- {self.claim}: **{self.outcome}** ({self.detail})"


def _too_few_seeds(rows: Sequence[Row]) -> List[str]:
    return [f"{r.name}: {r.n} seed{'s' if r.n != 1 else ''}" for r in rows if not r.fixed and r.n < MIN_SEEDS]


def above(claim: str, a: Optional[Row], b: Optional[Row], margin: float = 0.0,
          family: Sequence[Row] = (), note: str = "") -> Verdict:
    """"`a` above `b` by at least `margin`" (a negative margin: "at most -margin below").

    Args:
        claim: str. The claim as the results page states it.
        a, b: Row or None (None: not run yet).
        margin: float. Points `a` must exceed `b` by (negative: may fall short by).
        family: sequence of Row. With a margin: every row the claim's margin could separate (rule 3).
        note: str. Appended to the detail (e.g. the paper's own effect size).
    """
    if a is None or b is None:
        missing = [name for name, row in (("A", a), ("B", b)) if row is None]
        return Verdict(claim, NOT_RUN, f"no score yet for {' and '.join(missing)}" + (f"; {note}" if note else ""))
    d = a.mean - b.mean
    se = math.sqrt(a.sd ** 2 / a.n + b.sd ** 2 / b.n)
    numbers = f"{a.name} {a.describe()} vs {b.name} {b.describe()}: difference {d:+.2f}, seed se {se:.2f}"
    if note:
        numbers += f"; {note}"
    few = _too_few_seeds([a, b])
    if few:
        return Verdict(claim, NOT_TESTABLE, f"{numbers}; fewer than {MIN_SEEDS} seeds: {', '.join(few)}")
    if margin and family:
        means = [r.mean for r in family]
        spread = max(means) - min(means)
        if spread <= abs(margin):
            return Verdict(claim, NOT_TESTABLE, f"{numbers}; every one of the {len(family)} rows lies within "
                                                f"{spread:.2f} points, inside the {abs(margin):g}-point margin")
    excess = d - margin
    if abs(excess) <= se:
        return Verdict(claim, NOT_TESTABLE, f"{numbers}; |{excess:+.2f}| against the margin is within the seed se")
    return Verdict(claim, HELD if excess > 0 else NOT_HELD, numbers)


def above_start(claim: str, a: Optional[Row], b: Optional[Row], pairs: Sequence[Tuple[float, float]]) -> Verdict:
    """Rule 7: "`a` above the model it started from", paired by seed.

    Args:
        claim: str.
        a, b: Row or None. The trained rows (for their description; None: not run yet).
        pairs: sequence of (a_s, b_s). Each seed of `a` with the score of the seed of `b` it started from.
    """
    if a is None or b is None or not pairs:
        missing = [name for name, row in (("A", a), ("B", b)) if row is None] or ["a seed of A with its start"]
        return Verdict(claim, NOT_RUN, f"no score yet for {' and '.join(missing)}")
    diffs = Row("paired differences", [x - y for x, y in pairs])
    d, se = diffs.mean, diffs.sd / math.sqrt(diffs.n)
    numbers = (f"{a.name} {a.describe()} vs {b.name} {b.describe()}; paired with its own start, seed by seed: "
               f"{', '.join(f'{v:+.2f}' for v in diffs.values)}; mean difference {d:+.2f}, paired se {se:.2f}")
    if diffs.n < MIN_SEEDS:
        return Verdict(claim, NOT_TESTABLE, f"{numbers}; fewer than {MIN_SEEDS} seeds paired with their start: "
                                            f"{diffs.n} seed{'s' if diffs.n != 1 else ''}")
    if abs(d) <= se:
        return Verdict(claim, NOT_TESTABLE, f"{numbers}; |{d:+.2f}| is within the paired se")
    return Verdict(claim, HELD if d > 0 else NOT_HELD, numbers)


def all_of(claim: str, parts: Sequence[Verdict]) -> Verdict:
    """Rule 5: several parts (one per label percentage) as one claim; the parts' details joined."""
    outcomes = [p.outcome for p in parts]
    if NOT_HELD in outcomes:
        outcome = NOT_HELD
    elif outcomes and all(o == HELD for o in outcomes):
        outcome = HELD
    elif NOT_TESTABLE in outcomes or not outcomes:
        outcome = NOT_TESTABLE
    else:
        outcome = NOT_RUN
    return Verdict(claim, outcome, "; ".join(f"{p.claim}: {p.outcome} ({p.detail})" for p in parts))


def degenerate_cycles(phases: Sequence[dict]) -> List[str]:
    """Rule 4 over a Trans-Encoder run's phase records (config.json's `phases`).

    A bi-encoder phase learns from the cross-encoder's scores and a cross-encoder phase from the
    bi-encoder's cosines; a cycle is degenerate when the cross-encoder's pseudo-labels (the bi phase's
    `label_std`) spread less than DEGENERATE_SHARE of the cosines it was taught (the cross phase's).

    Returns:
        One description per degenerate cycle (empty when none is).
    """
    out = []
    for cycle in sorted({p["cycle"] for p in phases}):
        cross = [p["label_std"] for p in phases if p["cycle"] == cycle and p["kind"] == "cross"]
        bi = [p["label_std"] for p in phases if p["cycle"] == cycle and p["kind"] == "bi"]
        if cross and bi and min(bi) < DEGENERATE_SHARE * max(cross):
            out.append(f"cycle {cycle}: pseudo-label std {min(bi):.4f} < {DEGENERATE_SHARE:g} x bi-encoder cosine "
                       f"std {max(cross):.4f}")
    return out


def collapsed(loss: Optional[float], candidates: int) -> str:
    """Rule 6 for one contrastive run: a description if its final training loss sits at chance, else "".

    Args:
        loss: float or None. The run's training loss over its last logged steps.
        candidates: int. What each sentence is scored against (unsup SimCSE: the batch's second views;
            sup: those and the hard negatives); chance is ln(candidates).
    """
    if loss is None or candidates < 2:
        return ""
    chance = math.log(candidates)
    if loss < (1.0 - COLLAPSE_SHARE) * chance:
        return ""
    return f"final training loss {loss:.3f} vs chance ln({candidates}) = {chance:.3f}"
