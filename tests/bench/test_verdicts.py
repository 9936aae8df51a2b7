"""The verdict rules of the reproduction ladder (bench/verdicts.py) on synthetic numbers."""

import math

import pytest

from bench import verdicts
from bench.verdicts import HELD, NOT_HELD, NOT_RUN, NOT_TESTABLE, Row


def seeds(name, *values):
    return Row(name, list(values))


def test_a_clear_difference_holds_or_does_not():
    a, b = seeds("a", 60.0, 61.0, 62.0), seeds("b", 50.0, 51.0, 52.0)
    assert verdicts.above("a above b", a, b).outcome == HELD
    assert verdicts.above("b above a", b, a).outcome == NOT_HELD


def test_a_difference_within_the_seed_standard_error_is_no_verdict():
    a, b = seeds("a", 50.0, 52.0, 54.0), seeds("b", 50.5, 51.5, 52.5)  # d = 0.5, se = sqrt(4/3 + 1/3) = 1.29
    v = verdicts.above("a above b", a, b)
    assert v.outcome == NOT_TESTABLE and "within the seed se" in v.detail
    assert "se 1.29" in v.detail


def test_the_standard_error_uses_sample_deviations_and_fixed_rows_add_none():
    a = seeds("a", 10.0, 12.0, 14.0)  # sd 2
    floor = Row("floor", [11.0], fixed=True)
    assert a.sd == pytest.approx(2.0) and floor.sd == 0.0
    v = verdicts.above("a above floor", a, floor)  # d = 1.0, se = 2 / sqrt(3) = 1.15
    assert v.outcome == NOT_TESTABLE
    v = verdicts.above("a above floor", a, Row("floor", [10.5], fixed=True))  # d = 1.5 > 1.15
    assert v.outcome == HELD


def test_too_few_seeds_of_a_trained_row_is_not_testable():
    v = verdicts.above("a above b", seeds("a", 70.0), Row("b", [40.0], fixed=True))
    assert v.outcome == NOT_TESTABLE and "fewer than 3 seeds" in v.detail


def test_a_margin_claim_whose_family_lies_inside_the_margin_is_not_testable():
    p5, s100 = seeds("pause 5%", 40.0, 40.5, 41.0), seeds("supervised 100%", 41.0, 41.5, 42.0)
    family = [p5, s100, seeds("supervised 1%", 40.2, 40.4, 40.6)]
    v = verdicts.above("pause 5% at most 2 below supervised 100%", p5, s100, margin=-2.0, family=family)
    assert v.outcome == NOT_TESTABLE and "inside the 2-point margin" in v.detail
    wide = family + [seeds("supervised 30%", 50.0, 50.5, 51.0)]
    assert verdicts.above("c", p5, s100, margin=-2.0, family=wide).outcome == HELD  # 1 below, within 2
    far = seeds("pause 5%", 35.0, 35.5, 36.0)
    assert verdicts.above("c", far, s100, margin=-2.0, family=wide + [far]).outcome == NOT_HELD


def test_a_positive_margin_must_be_exceeded():
    a, b = seeds("a", 54.0, 54.5, 55.0), Row("raw", [50.0], fixed=True)
    assert verdicts.above("a 5 above raw", a, b, margin=5.0).outcome == NOT_HELD  # 4.5 < 5 by more than se
    assert verdicts.above("a 4 above raw", a, b, margin=4.0).outcome == HELD


def test_a_missing_row_is_not_run():
    assert verdicts.above("a above b", None, seeds("b", 1.0, 2.0, 3.0)).outcome == NOT_RUN


def test_all_of_holds_only_when_every_part_holds():
    held = verdicts.Verdict("x", HELD, "")
    failed = verdicts.Verdict("y", NOT_HELD, "")
    noise = verdicts.Verdict("z", NOT_TESTABLE, "")
    missing = verdicts.Verdict("w", NOT_RUN, "")
    assert verdicts.all_of("c", [held, held]).outcome == HELD
    assert verdicts.all_of("c", [held, noise, failed]).outcome == NOT_HELD
    assert verdicts.all_of("c", [held, noise]).outcome == NOT_TESTABLE
    assert verdicts.all_of("c", [held, missing]).outcome == NOT_RUN


def test_a_cycle_whose_pseudo_labels_barely_vary_is_degenerate():
    phases = [{"cycle": 1, "kind": "cross", "label_std": 0.20}, {"cycle": 1, "kind": "bi", "label_std": 0.027},
              {"cycle": 2, "kind": "cross", "label_std": 0.20}, {"cycle": 2, "kind": "bi", "label_std": 0.08}]
    found = verdicts.degenerate_cycles(phases)
    assert len(found) == 1 and found[0].startswith("cycle 1:")
    assert verdicts.degenerate_cycles([]) == []


def test_row_statistics():
    row = seeds("r", 1.0, 2.0, 3.0)
    assert row.mean == 2.0 and row.sd == pytest.approx(1.0) and row.n == 3
    assert row.describe() == "2.00 ± 1.00 (3 seeds)"
    assert not math.isnan(Row("f", [5.0], fixed=True).sd)


def test_a_contrastive_run_whose_loss_ends_at_chance_collapsed():
    """ln(128) = 4.852: sup SimCSE with 64 pairs scores each sentence against 128 candidates."""
    assert verdicts.collapsed(4.861, 128) == "final training loss 4.861 vs chance ln(128) = 4.852"
    assert verdicts.collapsed(4.80, 128)  # within 2 % below chance: still nothing learned
    assert verdicts.collapsed(4.0, 128) == "" and verdicts.collapsed(0.1, 64) == ""
    assert verdicts.collapsed(None, 64) == ""


def test_a_model_above_its_start_is_judged_seed_by_seed_against_its_own_start():
    """Starts that differ a lot between seeds, and a model a steady 2 points below its own start in every seed:
    unpaired, the start's spread hides it (NOT TESTABLE); paired, it DID NOT HOLD."""
    starts = seeds("simcse unsup", 56.9, 56.8, 50.0)
    trained = seeds("trans_encoder bi", 54.7, 54.9, 48.1)
    pairs = list(zip(trained.values, starts.values))
    assert verdicts.above("unpaired", trained, starts).outcome == NOT_TESTABLE
    v = verdicts.above_start("paired", trained, starts, pairs)
    assert v.outcome == NOT_HELD
    assert "seed by seed: -2.20, -1.90, -1.90" in v.detail and "mean difference -2.00, paired se 0.10" in v.detail
    above = [(b + d, b) for b, d in zip(starts.values, (1.0, 3.0, -1.5))]  # mean +0.83, se 1.30: within
    assert verdicts.above_start("noisy", trained, starts, above).outcome == NOT_TESTABLE
    steady = [(b + d, b) for b, d in zip(starts.values, (1.0, 1.2, 0.9))]
    assert verdicts.above_start("up", trained, starts, steady).outcome == HELD
    few = verdicts.above_start("two", trained, starts, pairs[:2])
    assert few.outcome == NOT_TESTABLE and "fewer than 3 seeds paired with their start: 2 seeds" in few.detail
    assert verdicts.above_start("none", None, starts, []).outcome == NOT_RUN
