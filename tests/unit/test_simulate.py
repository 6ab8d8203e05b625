"""``co.simulate``: the step-doubling RK4 path and its CVODES fallback, against exact
solutions of linear systems with inputs linear between samples (matrix exponentials of an
augmented system, written here independently of colloc)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm

import colloc as co


def _exact_linear(A: np.ndarray, B: np.ndarray, x0: np.ndarray, t: np.ndarray, u: np.ndarray) -> np.ndarray:
    """States of ẋ = A x + B u with u linear between the samples: per interval, the state
    [x, u, u̇] of the augmented system (u̇ constant) is propagated by one matrix exponential."""
    n = A.shape[0]
    out = np.empty((t.size, n))
    out[0] = x0
    x = x0.copy()
    for k in range(t.size - 1):
        h = t[k + 1] - t[k]
        slope = (u[k + 1] - u[k]) / h
        M = np.zeros((n + 2, n + 2))
        M[:n, :n], M[:n, n] = A, B
        M[n, n + 1] = 1.0
        z = expm(M * h) @ np.concatenate([x, [u[k], slope]])
        x = z[:n]
        out[k + 1] = x
    return out


def _oscillator(zeta: float, omega: float) -> co.Model:
    m = co.Model("forced oscillator")
    x, v = m.state("x"), m.state("v")
    u = m.known_input("u")
    m.set_der(x, v)
    m.set_der(v, u - 2 * zeta * omega * v - omega**2 * x)
    return m


def test_smooth_system_at_100_hz_takes_the_rk4_path_within_tolerance():
    t = np.arange(0, 10.0 + 1e-12, 0.01)
    u = np.sin(2.3 * t) + 0.5 * np.sin(7.1 * t)
    zeta, omega = 0.1, 6.0
    A = np.array([[0.0, 1.0], [-omega**2, -2 * zeta * omega]])
    want = _exact_linear(A, np.array([0.0, 1.0]), np.array([0.05, -0.1]), t, u)
    for tol in (1e-9, 1e-6):
        sim = co.simulate(_oscillator(zeta, omega), [0.05, -0.1], [], t, known_inputs=u[:, None], rtol=tol, atol=tol)
        assert sim.success and "RK4" in sim.message
        # the step-doubling estimate bounds the global error (a factor 10 of slack for the
        # estimate itself)
        assert np.all(np.abs(sim.states - want) <= 10 * (tol * np.abs(want) + tol))
    np.testing.assert_allclose(sim.signals["x"], sim.states[:, 0])


def test_stiff_system_falls_back_to_cvodes_and_stays_accurate():
    # ẋ = −k (x − u): k h = 1000 at 100 Hz, far outside RK4's stability region
    k = 1e5
    m = co.Model("stiff lag")
    x = m.state("x")
    u = m.known_input("u")
    m.set_der(x, -k * (x - u))
    t = np.arange(0, 2.0 + 1e-12, 0.01)
    uu = np.cos(3.0 * t)
    sim = co.simulate(m, [0.2], [], t, known_inputs=uu[:, None])
    assert sim.success and "RK4" not in sim.message
    want = _exact_linear(np.array([[-k]]), np.array([k]), np.array([0.2]), t, uu)
    np.testing.assert_allclose(sim.states, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("rate", [1.0, 3.0])
def test_unstable_linear_growth_is_integrated_not_called_divergent(rate):
    # e^{rate·t} stays far below the divergence bound: a large error estimate must not be
    # mistaken for a divergence
    m = co.Model("growth")
    x = m.state("x")
    m.set_der(x, rate * x)
    t = np.linspace(0, 3, 301)
    sim = co.simulate(m, [1e-3], [], t)
    assert sim.success
    np.testing.assert_allclose(sim.states[:, 0], 1e-3 * np.exp(rate * t), rtol=1e-7)
