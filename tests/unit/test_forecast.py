"""Reference forecasts and scores (colloc.signals.forecast), against closed forms and statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest

from colloc.signals.forecast import (
    ARModel,
    coverage,
    fit_ar,
    innovation_predictability,
    ljung_box,
    log_score,
    persistence_forecast,
)


def _ar2(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    e = 0.1 * rng.standard_normal(n)
    for t in range(2, n):
        y[t] = 1.5 * y[t - 1] - 0.7 * y[t - 2] + e[t]
    return y + 3.0


def test_fit_ar_recovers_a_simulated_ar2():
    ar = fit_ar(_ar2(), 2)
    np.testing.assert_allclose(ar.coefficients, [1.5, -0.7], atol=0.02)
    assert ar.mean == pytest.approx(3.0, abs=0.05) and ar.sigma == pytest.approx(0.1, rel=0.03)


def test_ar_forecast_is_the_recursion_and_its_sd_the_psi_weights():
    ar = ARModel(np.array([0.9]), 0.0, 2.0)
    y = np.array([1.0, 2.0, -1.0, 0.5, 4.0])
    mean, sd = ar.forecast(y, 3)
    assert np.isnan(mean[:3]).all()
    np.testing.assert_allclose(mean[3:], 0.9**3 * y[:2])
    # AR(1): the 3-step error variance is σ²(1 + a² + a⁴)
    assert sd[4] == pytest.approx(2.0 * math.sqrt(1 + 0.81 + 0.81**2))
    two = ARModel(np.array([1.5, -0.7]), 1.0, 1.0)
    m2, s2 = two.forecast(np.array([1.0, 2.0, 3.0, 0.0]), 2)
    # y3 = 1 + 1.5·(ŷ2 − 1) − 0.7·(y1 − 1), ŷ2 = 1 + 1.5·(y1 − 1) − 0.7·(y0 − 1)
    y2 = 1 + 1.5 * 1.0 - 0.7 * 0.0
    assert m2[3] == pytest.approx(1 + 1.5 * (y2 - 1) - 0.7 * 1.0)
    assert s2[3] == pytest.approx(math.sqrt(1 + 1.5**2))


def test_persistence_and_the_scores():
    y = np.arange(10.0)
    mean, sd = persistence_forecast(y, 2)
    np.testing.assert_array_equal(mean[2:], y[:-2])
    assert np.isnan(mean[:2]).all() and sd[5] == pytest.approx(2.0)
    rng = np.random.default_rng(3)
    z = rng.standard_normal(200000)
    assert log_score(z, np.zeros_like(z), np.ones_like(z)) == pytest.approx(-0.5 * math.log(2 * math.pi) - 0.5,
                                                                           abs=0.01)
    assert coverage(z, np.zeros_like(z), np.ones_like(z)) == pytest.approx(0.95, abs=0.005)
    assert math.isnan(log_score([np.nan], [0.0], [1.0]))


def test_ljung_box_agrees_with_statsmodels():
    from statsmodels.stats.diagnostic import acorr_ljungbox  # a test dependency (pyproject's test extra)

    x = _ar2(500, seed=4)
    q, p = ljung_box(x, 10)
    ref = acorr_ljungbox(x, lags=[10])
    assert q == pytest.approx(float(ref["lb_stat"].iloc[0]), rel=1e-10)
    assert p == pytest.approx(float(ref["lb_pvalue"].iloc[0]), rel=1e-8, abs=1e-300)
    white = np.random.default_rng(5).standard_normal(2000)
    assert ljung_box(white, 10)[1] > 0.01
    with pytest.raises(ValueError, match="values for 10 lags"):
        ljung_box(white[:5], 10)


def _ar(coefficients, n, seed):
    """An AR process driven by unit Gaussian noise, 500 samples of burn-in dropped."""
    rng = np.random.default_rng(seed)
    a = np.asarray(coefficients, dtype=float)
    e = rng.standard_normal(n + 500)
    y = np.zeros(n + 500)
    for t in range(a.size, n + 500):
        y[t] = a @ y[t - a.size:t][::-1] + e[t]
    return y[500:]


def test_innovation_predictability_of_white_and_coloured_innovations():
    # white: out of sample nothing to gain (a fitted AR(20) costs about 20/(2n) there), in sample
    # about the least-squares fit's own 20/(2n)
    w = np.random.default_rng(7).standard_normal(6000)
    out = innovation_predictability(w[3000:], fit=w[:3000], order=20)
    assert -0.01 < out["gain"] < 0.002 and out["expected_null"] == 0.0 and out["samples"] == 2980
    ins = innovation_predictability(w, order=20)
    assert ins["expected_null"] == pytest.approx(20 / 12000)
    assert abs(ins["gain"] - ins["expected_null"]) < 0.003
    # AR(1) with ρ = 0.3: its past explains ρ² of the variance, a gain of −½ log(1 − ρ²) nats a sample
    y = _ar([0.3], 40000, seed=8)
    one = innovation_predictability(y[20000:], fit=y[:20000], order=5)
    assert one["gain"] == pytest.approx(-0.5 * math.log(1 - 0.09), abs=0.006)
    assert one["share"] == pytest.approx(0.09, abs=0.011)
    # AR(2) (1.0, −0.5): var(y)/σ² = (1 − a₂)/((1 + a₂)((1 − a₂)² − a₁²)) = 1.5/(0.5·1.25) = 2.4
    y2 = _ar([1.0, -0.5], 40000, seed=9)
    two = innovation_predictability(y2[20000:], fit=y2[:20000], order=4)
    assert two["gain"] == pytest.approx(0.5 * math.log(2.4), abs=0.015)


def test_innovation_predictability_of_structure_that_changed_is_not_a_gain():
    """Structure in the first part that the second does not share predicts nothing there: the
    AR fitted to ρ = +0.4 applied to ρ = −0.4 loses (a negative gain)."""
    a, b = _ar([0.4], 5000, seed=10), _ar([-0.4], 5000, seed=11)
    assert innovation_predictability(b, fit=a, order=3)["gain"] < -0.1
    assert innovation_predictability(b, order=3)["gain"] > 0.05


def test_innovation_predictability_cross_validated_over_blocks():
    w = np.random.default_rng(12).standard_normal(3000)
    white = innovation_predictability(w, order=20, folds=5)
    assert -0.012 < white["gain"] < 0.0 and white["expected_null"] == 0.0
    y = _ar([0.3], 30000, seed=13)
    assert innovation_predictability(y, order=5, folds=5)["gain"] == pytest.approx(-0.5 * math.log(1 - 0.09),
                                                                                   abs=0.006)
    # a colour that flips sign halfway: the blocks' ARs, fitted mostly to the other sign, lose
    flipped = np.r_[_ar([0.5], 3000, seed=14), _ar([-0.5], 3000, seed=15)]
    assert innovation_predictability(flipped, order=5, folds=5)["gain"] < 0.0
    assert innovation_predictability(flipped, order=5)["gain"] > 0.0  # in sample the halves' colours average


def test_innovation_predictability_bad_input():
    with pytest.raises(ValueError, match="order must be an integer"):
        innovation_predictability(np.zeros(100), order=0)
    with pytest.raises(ValueError, match="folds must be an integer >= 2 without fit"):
        innovation_predictability(np.zeros(1000), fit=np.zeros(1000), folds=5)
    with pytest.raises(ValueError, match="200 finite values in z for order 20 and 5 folds"):
        innovation_predictability(np.ones(200), folds=5)
    with pytest.raises(ValueError, match="30 finite values in fit"):
        innovation_predictability(np.ones(200), fit=np.r_[np.ones(30), np.nan], order=20)
