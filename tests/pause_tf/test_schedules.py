import numpy as np
import pytest

from common.training.schedules import WarmupPolynomialDecay
from pause_tf.annealing import pu_weight


def test_global_annealing_reaches_one():
    assert float(pu_weight(0, 1000)) == 0.0
    assert float(pu_weight(500, 1000)) == pytest.approx(0.125)
    assert float(pu_weight(1000, 1000)) == pytest.approx(1.0)
    assert float(pu_weight(2000, 1000)) == pytest.approx(1.0)


def test_annealing_off_is_zero():
    assert float(pu_weight(900, 1000, mode="off")) == 0.0


def test_per_epoch_annealing_reproduces_the_original_restart():
    # 10 epochs of 500 steps: the original's weight restarts each epoch and peaks at (499/5000)^3 ~ 1e-3.
    kwargs = dict(total_steps=5000, mode="per_epoch", steps_per_epoch=500)
    assert float(pu_weight(499, **kwargs)) == pytest.approx((499 / 5000) ** 3)
    assert float(pu_weight(500, **kwargs)) == 0.0
    assert max(float(pu_weight(s, **kwargs)) for s in range(0, 5000, 7)) < 1.0e-3
    with pytest.raises(ValueError, match="needs steps_per_epoch"):
        pu_weight(1, 10, mode="per_epoch")


def test_learning_rate_warms_up_then_decays_without_a_jump():
    schedule = WarmupPolynomialDecay(peak_lr=7.5e-5, total_steps=1000, warmup_steps=100, end_lr=5e-6)
    lrs = np.array([float(schedule(s)) for s in range(0, 1001)])
    assert lrs[0] == 0.0 and lrs[50] == pytest.approx(3.75e-5)
    assert lrs[100] == pytest.approx(7.5e-5) and lrs[1000] == pytest.approx(5e-6)
    assert lrs[550] == pytest.approx((7.5e-5 + 5e-6) / 2)
    # No step larger than one warm-up increment (float32 rounding aside).
    assert np.abs(np.diff(lrs)).max() <= 7.5e-5 / 100 * (1 + 1e-5)
    assert float(schedule(5000)) == pytest.approx(5e-6)


def test_decay_from_start_is_the_original_warmup_over_polynomial_decay():
    # The original PAUSE code: WarmUp(peak * step / warm-up) until the warm-up ends, then
    # PolynomialDecay(peak, decay_steps=total, end, power 1) of the step counted from 0.
    peak, end, total, warm = 7.5e-5, 5e-6, 1000, 100
    schedule = WarmupPolynomialDecay(peak, total, warm, end, decay_from_start=True)
    steps = np.arange(0, 1201)
    original = np.where(steps < warm, peak * steps / warm, (peak - end) * (1 - np.minimum(steps, total) / total) + end)
    lrs = np.array([float(schedule(s)) for s in steps])
    np.testing.assert_allclose(lrs, original, rtol=1e-5, atol=1e-12)
    # The jump at the end of warm-up: from 99 % of the peak to the decay's value at step 100.
    assert lrs[99] == pytest.approx(0.99 * peak) and lrs[100] == pytest.approx(peak - 0.1 * (peak - end))
    assert WarmupPolynomialDecay.from_config(schedule.get_config()).decay_from_start
