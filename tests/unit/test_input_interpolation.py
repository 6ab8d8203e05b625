"""Known inputs between their samples: the cubic spline (default) or linear interpolation,
and where each transcription reads them."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc import OptionsError
from colloc.transcription.collocation import transcribe
from colloc.transcription.interpolation import known_inputs


def _trial(t, r):
    return co.Trial(t, {"r": r, "x": np.zeros_like(t)}, name="inputs")


def test_cubic_is_exact_at_samples_and_for_cubic_polynomials_linear_is_not():
    t = np.linspace(0.0, 2.0, 21)
    poly = lambda s: 0.3 - s + 2 * s**2 - 0.7 * s**3  # noqa: E731
    trial = _trial(t, poly(t))
    mid = t[:-1] + 0.05
    cubic = known_inputs(trial, ["r"], mid, "cubic")[0]
    linear = known_inputs(trial, ["r"], mid, "linear")[0]
    assert np.max(np.abs(cubic - poly(mid))) < 1e-12
    assert np.max(np.abs(linear - poly(mid))) > 1e-3  # h²/8·r'' is not small here
    assert np.array_equal(known_inputs(trial, ["r"], t, "cubic")[0], poly(t))


def test_fewer_than_four_samples_fall_back_to_linear():
    t = np.array([0.0, 1.0, 2.0])
    trial = _trial(t, np.array([0.0, 1.0, 4.0]))
    assert known_inputs(trial, ["r"], np.array([0.5, 1.5]), "cubic")[0] == pytest.approx([0.5, 2.5])


def test_the_midpoint_rule_readsknown_inputs_at_the_interval_centre():
    """ẋ = r with r = sin(5t) sampled at 10 Hz: the midpoint defect must see r(t + h/2)
    from the spline (linear: averaged ends), the trapezoidal rule the end samples."""
    m = co.Model("integrator")
    x = m.state("x")
    r = m.known_input("r")
    m.parameter("p", guess=1.0)
    m.set_der(x, r)
    t = np.linspace(0.0, 3.0, 31)
    trial = _trial(t, np.sin(5 * t))
    prob = co.Problem(m, trial, fit={"x": 1.0})
    centre = t[:-1] + 0.05
    for method, expected in ((co.Midpoint(), known_inputs(trial, ["r"], centre, "cubic")[0]),
                             (co.Midpoint(input_interpolation="linear"), (np.sin(5 * t[:-1]) + np.sin(5 * t[1:])) / 2)):
        _, blocks, *_ = transcribe(prob, method)
        dyn = next(b for b in blocks if b.name == "dynamics")
        assert np.allclose(dyn.data[0], expected, atol=1e-15) and np.allclose(dyn.data[1], expected, atol=1e-15)
    # the spline is much closer to the true centre value than the average of the ends
    cubic_err = np.max(np.abs(known_inputs(trial, ["r"], centre, "cubic")[0] - np.sin(5 * centre)))
    linear_err = np.max(np.abs((np.sin(5 * t[:-1]) + np.sin(5 * t[1:])) / 2 - np.sin(5 * centre)))
    assert cubic_err < linear_err / 5
    _, blocks, *_ = transcribe(prob, co.Trapezoidal())
    dyn = next(b for b in blocks if b.name == "dynamics")
    assert np.allclose(dyn.data[0], np.sin(5 * t[:-1])) and np.allclose(dyn.data[1], np.sin(5 * t[1:]))


def test_bad_interpolation_option_names_the_argument():
    with pytest.raises(OptionsError, match=r"Midpoint\(input_interpolation='spline'\): expected 'cubic' or 'linear'"):
        co.Midpoint(input_interpolation="spline")
