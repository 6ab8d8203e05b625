"""colloc.StaticOptimization: least-effort activations at an equilibrium, with a stiffness margin.

Two postures that are not the spine, each with an answer worked out without the library:

* one joint held by two antagonists (a flexor and an extensor) against a load: on the line of
  equilibrium activations every quantity is a linear function of one activation, so the
  optima are the solutions of 2 × 2 linear systems;
* a double inverted pendulum (ankle and hip) held by two one-joint muscles and one two-joint
  muscle: the equilibrium activations form a segment ``a(s) = a_p + s n`` (``n`` spans the null
  space of the moment matrix), the smallest eigenvalue of the 2 × 2 stiffness has a closed form
  and is concave in ``s``, so the optima are one-dimensional searches (SciPy's bounded scalar
  minimiser and ``brentq``).
"""

from __future__ import annotations

import math

import casadi as ca
import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar

import colloc as co

# ----------------------------------------------------------------- one joint, two antagonists

F = np.array([800.0, 600.0])          # maximum forces (N)
R = np.array([0.04, -0.03])           # moment arms (m): flexor, extensor
LOAD = 5.0                            # N·m the muscles must supply
K_GRAVITY = -3.0 * 9.81 * 0.3         # N·m/rad: an inverted segment (3 kg, centre of mass 0.3 m)
K_MUSCLE = 20.0 * F * R**2 / np.array([0.30, 0.25])   # short-range stiffness per activation, q F r² / L
SIGMA = 20.0


def _joint(stiffness=True, **kw):
    st = co.StiffnessConstraint([[K_GRAVITY]], K_MUSCLE.reshape(1, 1, 2), SIGMA, scale=50.0) if stiffness else None
    return co.StaticOptimization([F * R], [LOAD], lambda a: ca.sumsqr(a), stiffness=st, **kw)


def test_one_joint_equilibrium_alone_is_the_flexor_alone():
    sol = _joint(stiffness=False).minimize()
    # on the line 32 a1 − 18 a2 = 5, a1² + a2² grows with a2 ≥ 0: a2 = 0, a1 = 5/32
    assert sol.success and sol.status == "Solve_Succeeded"
    assert sol.activations == pytest.approx([LOAD / (F[0] * R[0]), 0.0], abs=1e-8)
    assert sol.objective == pytest.approx((LOAD / (F[0] * R[0])) ** 2, rel=1e-7)
    assert sol.equilibrium_residual < 1e-7 and sol.min_stiffness_eigenvalue is None
    assert K_GRAVITY + K_MUSCLE[0] * LOAD / (F[0] * R[0]) < SIGMA  # so the margin below is active


def test_one_joint_stiffness_margin_adds_the_antagonist():
    sol = _joint().minimize(start=[0.9, 0.9])
    # equilibrium and K = σ (both linear): the least effort is where the margin is just met
    expected = np.linalg.solve([F * R, K_MUSCLE], [LOAD, SIGMA - K_GRAVITY])
    assert np.all((expected > 0) & (expected < 1))
    assert sol.success
    assert sol.activations == pytest.approx(expected, rel=1e-7)
    assert sol.min_stiffness_eigenvalue == pytest.approx(SIGMA, rel=1e-7)
    assert sol.objective == pytest.approx(float(expected @ expected), rel=1e-7)


def test_one_joint_reserve_and_least_force():
    opt = _joint()
    res = opt.stiffness_reserve()
    # K grows with a2 along the line, a1 = (5 + 18 a2)/32 stays below 1: a2 = 1
    a1 = (LOAD - F[1] * R[1]) / (F[0] * R[0])
    assert res.success and res.activations == pytest.approx([a1, 1.0], abs=1e-7)
    assert res.objective == pytest.approx(K_GRAVITY + K_MUSCLE @ [a1, 1.0], rel=1e-7)
    lp = _joint(stiffness=False).minimize_linear(F)  # the total force grows with a2 too
    assert lp.success and lp.activations == pytest.approx([LOAD / (F[0] * R[0]), 0.0], abs=1e-9)
    assert lp.objective == pytest.approx(F[0] * LOAD / (F[0] * R[0]), rel=1e-9)


# -------------------------------------------------- double inverted pendulum, three muscles

G = 9.81
# gravity stiffness of the upright double pendulum (legs 30 kg, 0.5 m to their centre, 0.9 m
# long; trunk 40 kg, 0.3 m to its centre): −∂²V/∂q² at the top
K0 = -np.array([[30 * G * 0.5 + 40 * G * 0.9, 40 * G * 0.3], [40 * G * 0.3, 40 * G * 0.3]])
MOMENTS = np.array([[0.05, 0.0, -0.04],     # moment arms (m) at the ankle ...
                    [0.0, 0.06, 0.05]])      # ... and at the hip; muscle 3 spans both
FORCES = np.array([2500.0, 1500.0, 1200.0])
LENGTHS = np.array([0.25, 0.20, 0.45])
A2 = MOMENTS * FORCES
K2 = np.stack([80 * FORCES[k] / LENGTHS[k] * np.outer(MOMENTS[:, k], MOMENTS[:, k]) for k in range(3)], axis=2)
TORQUE = np.array([40.0, 25.0])
VOLUME = np.array([0.8, 0.6, 0.5])


def _lam_min(K):
    """Smallest eigenvalue of a symmetric 2 × 2 matrix, in closed form."""
    return 0.5 * (K[0, 0] + K[1, 1] - math.hypot(K[0, 0] - K[1, 1], 2 * K[0, 1]))


def _segment():
    """``a(s) = a_p + s n`` and the interval of ``s`` that keeps 0 ≤ a ≤ 1."""
    a_p = np.linalg.lstsq(A2, TORQUE, rcond=None)[0]
    n = np.linalg.svd(A2)[2][-1]
    lo, hi = -np.inf, np.inf
    for ap, nk in zip(a_p, n):
        ends = sorted(((0 - ap) / nk, (1 - ap) / nk))
        lo, hi = max(lo, ends[0]), min(hi, ends[1])
    assert lo < hi
    return a_p, n, lo, hi


def _effort(a):
    return float(np.sum(VOLUME * np.abs(a) ** 3))


def _pendulum(sigma=None):
    st = None if sigma is None else co.StiffnessConstraint(K0, K2, sigma, scale=100.0)
    return co.StaticOptimization(A2, TORQUE, lambda a: ca.dot(ca.DM(VOLUME), a**3), stiffness=st)


def test_pendulum_reserve_is_the_largest_smallest_eigenvalue():
    a_p, n, lo, hi = _segment()
    best = minimize_scalar(lambda s: -_lam_min(K0 + K2 @ (a_p + s * n)), bounds=(lo, hi), method="bounded",
                           options={"xatol": 1e-12})
    res = _pendulum(sigma=1.0).stiffness_reserve()
    assert res.success and res.equilibrium_residual < 1e-7
    assert res.objective == pytest.approx(-best.fun, rel=1e-7)
    assert res.activations == pytest.approx(a_p + best.x * n, abs=1e-5)
    assert res.objective > 50  # a stable equilibrium exists


def test_a_reserve_solve_that_stops_short_is_solved_again_from_its_result(monkeypatch):
    # the Cholesky form has stationary points below the maximum where IPOPT reports success
    # (seen on the spine); here the first solve is made to stop at an equilibrium away from it
    a_p, n, lo, hi = _segment()
    short = a_p + (0.9 * hi + 0.1 * lo) * n
    best = minimize_scalar(lambda s: -_lam_min(K0 + K2 @ (a_p + s * n)), bounds=(lo, hi), method="bounded",
                           options={"xatol": 1e-12})
    real, calls = co.StaticOptimization._run, []

    def first_stops_short(self, kind, x0, lbx, ubx):
        calls.append(np.array(x0[:3]))
        a, run = real(self, kind, x0, lbx, ubx)
        return (short, run) if len(calls) == 1 else (a, run)

    monkeypatch.setattr(co.StaticOptimization, "_run", first_stops_short)
    res = _pendulum(sigma=1.0).stiffness_reserve()
    assert _lam_min(K0 + K2 @ short) < -best.fun - 10  # well below the maximum
    assert len(calls) == 3 and calls[1] == pytest.approx(short)  # restarted from where it stopped, then confirmed
    assert res.objective == pytest.approx(-best.fun, rel=1e-7)
    assert res.activations == pytest.approx(a_p + best.x * n, abs=1e-5)


def test_pendulum_least_effort_with_and_without_the_margin():
    a_p, n, lo, hi = _segment()

    def lam(s):
        return _lam_min(K0 + K2 @ (a_p + s * n))

    def effort(s):
        return _effort(a_p + s * n)

    free = minimize_scalar(effort, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
    sol = _pendulum().minimize()
    assert sol.success and sol.activations == pytest.approx(a_p + free.x * n, abs=1e-6)
    assert sol.objective == pytest.approx(free.fun, rel=1e-7)
    sigma = 120.0
    assert lam(free.x) < sigma  # the equilibrium alone is not stiff enough: the margin is active
    top = minimize_scalar(lambda s: -lam(s), bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}).x
    # the stiff-enough equilibria: an interval of s around the reserve's maximiser (λ_min is concave)
    s1 = brentq(lambda s: lam(s) - sigma, lo, top, xtol=1e-14) if lam(lo) < sigma else lo
    s2 = brentq(lambda s: lam(s) - sigma, top, hi, xtol=1e-14) if lam(hi) < sigma else hi
    stiff = minimize_scalar(effort, bounds=(s1, s2), method="bounded", options={"xatol": 1e-12})
    for start in (None, [0.1, 0.9, 0.5], [1.0, 0.0, 0.0]):
        sol = _pendulum(sigma).minimize(start)
        assert sol.success, start
        assert sol.activations == pytest.approx(a_p + stiff.x * n, abs=1e-6), start
        assert sol.min_stiffness_eigenvalue == pytest.approx(sigma, rel=1e-6)
        assert sol.objective == pytest.approx(stiff.fun, rel=1e-7)


# ------------------------------------------------------------------------------ bad input


def test_bad_input_names_the_argument():
    with pytest.raises(co.CollocInputError, match="symmetric"):
        co.StiffnessConstraint([[1.0, 2.0], [0.0, 1.0]], np.zeros((2, 2, 1)), 1.0)
    with pytest.raises(co.CollocInputError, match="K_a must have the shape"):
        co.StiffnessConstraint(np.eye(2), np.zeros((3, 3, 1)), 1.0)
    with pytest.raises(co.CollocInputError, match="margin must be a finite number > 0"):
        co.StiffnessConstraint(np.eye(2), np.zeros((2, 2, 1)), 0.0)
    with pytest.raises(co.CollocInputError, match="A must be an n × m matrix"):
        co.StaticOptimization(np.ones((2, 3, 1)), TORQUE)
    with pytest.raises(co.CollocInputError, match="lower, upper"):
        co.StaticOptimization(A2, TORQUE, upper=[1.0, 1.0])
    with pytest.raises(co.CollocInputError, match="lower must be <= upper"):
        co.StaticOptimization(A2, TORQUE, lower=0.5, upper=0.2)
    with pytest.raises(co.CollocInputError, match="b must have the shape"):
        co.StaticOptimization(A2, [1.0, 2.0, 3.0])
    with pytest.raises(co.CollocInputError, match=r"expected 2 × 2 × 3"):
        co.StaticOptimization(A2, TORQUE, stiffness=co.StiffnessConstraint(np.eye(2), np.zeros((2, 2, 2)), 1.0))
    with pytest.raises(co.OptionsError, match="needs an effort"):
        co.StaticOptimization(A2, TORQUE).minimize()
    with pytest.raises(co.OptionsError, match="needs a stiffness constraint"):
        co.StaticOptimization(A2, TORQUE).stiffness_reserve()
    with pytest.raises(co.OptionsError, match="no linear program"):
        _pendulum(sigma=1.0).minimize_linear(FORCES)
    with pytest.raises(co.CollocInputError, match="start must be 3 finite activations"):
        _pendulum().minimize([0.5, 0.5])


def test_an_impossible_equilibrium_is_a_result():
    lp = co.StaticOptimization([F * R], [100.0]).minimize_linear(F)  # 32 N·m at most
    assert not lp.success and np.all(np.isnan(lp.activations)) and math.isnan(lp.objective)
