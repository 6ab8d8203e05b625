"""colloc.signals.splines against FITPACK (SciPy), an implementation written independently of it:
the least-squares spline on given knots, the interpolating spline (FITPACK's knots for s = 0),
the not-a-knot cubic, derivatives and the end pieces beyond the samples; and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import CubicSpline, LSQUnivariateSpline, UnivariateSpline

from colloc.signals import splines
from colloc.signals.splines import BSpline, interpolating_spline, lsq_spline


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@pytest.mark.parametrize("k, spacing, n", [(5, 9, 2001), (5, 136, 2001), (3, 4, 301), (5, 4, 50), (1, 3, 40)])
def test_lsq_spline_is_fitpacks(k, spacing, n):
    rng = np.random.default_rng(k * 1000 + spacing)
    t = np.cumsum(rng.uniform(0.005, 0.015, n))  # uneven sampling, as a record with jitter
    y = np.sin(2 * t) + 0.3 * np.cos(7 * t) + 0.01 * rng.standard_normal(n)
    knots = t[spacing:n - spacing:spacing]
    ours, residual = lsq_spline(t, y, knots, k)
    theirs = LSQUnivariateSpline(t, y, knots, k=k)
    assert residual == pytest.approx(theirs.get_residual(), rel=1e-10)
    x = np.linspace(t[0] - 0.05, t[-1] + 0.05, 997)  # beyond the ends too: the end pieces
    for d in range(k + 1):
        assert _rel(ours.derivative(d)(x), theirs.derivative(d)(x)) < 1e-9, d


@pytest.mark.parametrize("k, spacing, n", [(5, 10, 6001), (5, 7, 6004), (3, 20, 1001), (5, 40, 2001), (1, 2, 101)])
def test_lsq_spline_on_uniform_samples_is_fitpacks(k, spacing, n):
    """Evenly spaced samples with a knot every m-th sample take the periodic path (one knot
    interval's basis values for all the inner ones); it must still be FITPACK's spline."""
    rng = np.random.default_rng(k * 100 + spacing)
    t = 0.25 + np.arange(n) * 0.01  # 100 Hz, a record that does not start at 0
    y = np.sin(2 * t) + 0.3 * np.cos(7 * t) + 0.01 * rng.standard_normal(n)
    knots = t[spacing:n - spacing:spacing]
    assert splines._uniform_spacing(t, knots) == spacing  # the periodic path is the one tested
    ours, residual = lsq_spline(t, y, knots, k)
    theirs = LSQUnivariateSpline(t, y, knots, k=k)
    assert residual == pytest.approx(theirs.get_residual(), rel=1e-9)
    x = np.linspace(t[0] - 0.05, t[-1] + 0.05, 1999)
    for d in range(k + 1):
        assert _rel(ours.derivative(d)(x), theirs.derivative(d)(x)) < 1e-9, d


def test_uneven_samples_or_knots_off_the_samples_take_the_general_path():
    t = np.arange(600) * 0.01
    assert splines._uniform_spacing(t, t[10:590:10]) == 10
    assert splines._uniform_spacing(t, t[10:590:10] + 0.001) is None  # knots between samples
    assert splines._uniform_spacing(np.delete(t, 300), np.delete(t, 300)[10:580:10]) is None  # a gap
    assert splines._uniform_spacing(t, t[[10, 20, 40]]) is None  # knots not evenly spaced


@pytest.mark.parametrize("k, n", [(3, 4), (3, 57), (5, 6), (5, 400)])
def test_interpolating_spline_is_fitpacks(k, n):
    rng = np.random.default_rng(n)
    t = np.sort(rng.uniform(0, 3, n))
    y = rng.standard_normal(n)
    ours = interpolating_spline(t, y, k)
    np.testing.assert_allclose(ours(t), y, atol=1e-12 * np.max(np.abs(y)))
    x = np.linspace(t[0], t[-1], 1001)
    theirs = UnivariateSpline(t, y, k=k, s=0)
    for d in range(k):
        assert _rel(ours.derivative(d)(x), theirs.derivative(d)(x)) < 1e-8, d
    if k == 3:  # FITPACK's knots for s = 0 make the not-a-knot cubic
        assert _rel(ours(x), CubicSpline(t, y)(x)) < 1e-10


def test_a_polynomial_of_the_spline_degree_is_reproduced_exactly():
    t = np.linspace(-1, 2, 200)
    y = 1 - 2 * t + 0.5 * t**3
    spline, residual = lsq_spline(t, y, t[10:-10:10], 3)
    assert residual < 1e-20
    x = np.linspace(-1, 2, 50)
    np.testing.assert_allclose(spline.derivative(1)(x), -2 + 1.5 * x**2, atol=1e-10)
    np.testing.assert_allclose(spline.derivative(3)(x), 3.0, atol=1e-8)
    np.testing.assert_allclose(spline.derivative(4)(x), 0.0, atol=1e-12)


def test_bad_input_is_refused_with_the_reason():
    t = np.linspace(0, 1, 30)
    with pytest.raises(ValueError, match="strictly increasing"):
        lsq_spline(t[::-1], t, [0.5], 3)
    with pytest.raises(ValueError, match="strictly inside"):
        lsq_spline(t, t, [0.0, 0.5], 3)
    with pytest.raises(ValueError, match="cannot determine"):
        lsq_spline(t[:8], t[:8], t[1:7], 3)
    gappy = np.concatenate([np.linspace(0, 0.3, 15), np.linspace(0.7, 1, 15)])
    with pytest.raises(ValueError, match="Schoenberg-Whitney"):
        lsq_spline(gappy, gappy, np.linspace(0.35, 0.65, 6), 3)
    with pytest.raises(ValueError, match="odd degree"):
        interpolating_spline(t, t, 4)
    with pytest.raises(ValueError, match="coefficients"):
        BSpline(np.zeros(8), np.zeros(3), 3)
