"""Property tests of the collocation transcriptions and grid helpers.

Every expected value comes from a closed form (polynomial solutions, exact integrals) or
from an independent high-accuracy integration (scipy ``solve_ivp``), never from colloc.
"""

from __future__ import annotations


import casadi as ca
import numpy as np
import pytest

import colloc as co
from colloc import OptionsError
from colloc.transcription.collocation import transcribe
from colloc.transcription.grid import locate, node_times, trapezoid_weights
from colloc.transcription.nlp import NLP
from test_high_order import CASES  # noqa: E402  (tests/property is on the path; shared cases)
from test_high_order import collocation_end_state as _collocation_end_state

METHODS = [co.BackwardEuler, co.Midpoint, co.Trapezoidal]
METHOD_IDS = [m.name for m in METHODS]

GRIDS = {
    "uniform": np.linspace(0.3, 1.3, 11),
    "nonuniform": 0.3 + np.concatenate([[0.0], np.cumsum(np.random.default_rng(7).uniform(0.03, 0.25, 12))]),
}


def _dynamics_rows(nlp: NLP, g: np.ndarray, trial: int = 0) -> np.ndarray:
    """Constraint values of the dynamics block of ``trial``, shape (num_intervals, num_eq)."""
    b = next(i for i, blk in enumerate(nlp.blocks) if blk.name == "dynamics" and blk.trial == trial)
    blk = nlp.blocks[b]
    rows = g[nlp.row_offsets[b] : nlp.row_offsets[b] + blk.num_rows * blk.count]
    return rows.reshape(blk.count, blk.num_rows)


# ---- 1. defect exactness on polynomial solutions -------------------------------------------
M_MASS = np.array([[2.0, 0.5], [0.3, 1.5]])
SCALES = {"x": 2.0, "y": 1.0, "z": 0.5, "v_0": 2.0, "v_1": 0.25}
PARAM_SCALES = {"a": 4.0, "b": 0.5, "c": 1.0, "d": 3.0}
EQ_SCALES = np.array([2.0, 1.0, 0.5, 3.0, 0.7])  # set_der uses the state scale; residual given


def _poly_model() -> co.Model:
    """ẋ = a + b·t, ẏ = c, ż = d·y, and the mass-matrix form M·v̇ = F(t) with F a known input."""
    m = co.Model("poly")
    x = m.state("x", scale=SCALES["x"])
    y = m.state("y", scale=SCALES["y"])
    z = m.state("z", scale=SCALES["z"])
    v = m.state("v", 2, scale=[SCALES["v_0"], SCALES["v_1"]])
    F = m.known_input("F", 2)
    a, b, c, d = (m.parameter(n, bounds=(-10.0, 10.0), scale=s) for n, s in PARAM_SCALES.items())
    m.set_der(x, a + b * m.time)
    m.set_der(y, c)
    m.set_der(z, d * y)
    m.add_residual(ca.DM(M_MASS) @ m.der(v) - F, name="mass", scale=EQ_SCALES[3:])
    return m


def _poly_solution(t, coef):
    """Exact node values of every state and the known input F (closed forms)."""
    a, b, c, d, f0, f1 = coef["a"], coef["b"], coef["c"], coef["d"], coef["f0"], coef["f1"]
    x0, y0, z0, v0 = 0.7, -0.4, 1.1, np.array([0.2, -0.3])
    vt = v0[:, None] + np.linalg.solve(M_MASS, np.outer(f0, t) + np.outer(f1, t**2 / 2))
    return {
        "x": x0 + a * t + b * t**2 / 2,
        "y": y0 + c * t,
        "z": z0 + d * (y0 * t + c * t**2 / 2),
        "v_0": vt[0],
        "v_1": vt[1],
        "F_0": f0[0] + f1[0] * t,
        "F_1": f0[1] + f1[1] * t,
    }


COEFS = {
    # every state linear in t
    "linear": {"a": 1.3, "b": 0.0, "c": -0.8, "d": 0.0, "f0": np.array([0.5, -1.0]), "f1": np.zeros(2)},
    # quadratic states: b ≠ 0, d·c ≠ 0, F varying in time
    "quadratic": {"a": 1.3, "b": 2.5, "c": -0.8, "d": 1.7, "f0": np.array([0.5, -1.0]),
                  "f1": np.array([1.2, 0.9])},
}


@pytest.mark.parametrize("grid", list(GRIDS))
@pytest.mark.parametrize("degree_name", list(COEFS))
@pytest.mark.parametrize("method_cls", METHODS, ids=METHOD_IDS)
def test_defects_vanish_on_polynomials_of_the_schemes_order(method_cls, degree_name, grid):
    coef, t = COEFS[degree_name], GRIDS[grid]
    sol = _poly_solution(t, coef)
    trial = co.Trial(t, {"x": sol["x"], "F_0": sol["F_0"], "F_1": sol["F_1"]})
    problem = co.Problem(_poly_model(), trial, fit={"x": 1.0})
    method = method_cls()
    layout, blocks, *_ = transcribe(problem, method)
    nlp = NLP(layout.size, blocks)

    # NLP variables are value / scale: build the vector from the declared scales
    node_scale = [SCALES[n] for n in layout.z_names]
    expected_scale = np.concatenate([np.tile(node_scale, t.size), [PARAM_SCALES[n] for n in "abcd"]])
    np.testing.assert_array_equal(layout.scale, expected_scale)
    w = np.zeros(layout.size)
    idx = layout.z_index(0)
    for e, name in enumerate(layout.z_names):
        w[idx[e]] = sol[name] / SCALES[name]
    w[layout.p_index] = np.array([coef[n] for n in layout.param_names]) / expected_scale[layout.p_index]
    g = _dynamics_rows(nlp, np.array(nlp.functions["g"](w, nlp.data)).ravel())

    h = np.diff(t)[:, None]
    degree = 1 if degree_name == "linear" else 2
    if degree <= method.order:
        expected = np.zeros_like(g)
    else:
        # backward Euler on a quadratic: slope − ẋ(t₁) = −(ẍ)·h/2, and the constraint is h·defect/scale
        second = np.concatenate([[coef["b"], 0.0, coef["d"] * coef["c"]], coef["f1"]])
        expected = -(h**2) / 2 * second[None, :] / EQ_SCALES[None, :]
        assert method.order == 1 and np.abs(g).max() > 1e-3  # backward Euler is NOT exact here
    np.testing.assert_allclose(g, expected, rtol=0, atol=1e-12)


# ---- 2. measured order of convergence ------------------------------------------------------
@pytest.mark.parametrize("case_name", list(CASES))
@pytest.mark.parametrize("method_cls", METHODS, ids=METHOD_IDS)
def test_measured_order_of_convergence(method_cls, case_name):
    case, method = CASES[case_name], method_cls()
    Ns = np.array([20, 40, 80, 160])
    exact_end = np.asarray(case["exact"](np.array([case["T"]]))).ravel()
    errors = np.array([np.linalg.norm(_collocation_end_state(case, method, N) - exact_end) for N in Ns])
    slope = np.polyfit(np.log(case["T"] / Ns), np.log(errors), 1)[0]
    assert abs(slope - method.order) < 0.2, f"errors {errors}, observed order {slope:.3f}"


# ---- 3. grid helpers -----------------------------------------------------------------------
@pytest.mark.parametrize("grid", list(GRIDS))
def test_trapezoid_weights_against_closed_forms(grid):
    t = GRIDS[grid]
    w = trapezoid_weights(t)
    t0, t1 = t[0], t[-1]
    alpha, beta = 1.7, -3.2
    exact = alpha * (t1 - t0) + beta * (t1**2 - t0**2) / 2
    np.testing.assert_allclose(w @ (alpha + beta * t), exact, rtol=1e-13)
    # t² is not integrated exactly: the trapezoid error is Σ h³/6 (f'' = 2)
    np.testing.assert_allclose(w @ t**2 - (t1**3 - t0**3) / 3, np.sum(np.diff(t) ** 3) / 6, rtol=1e-9)
    assert np.all(w > 0)


def test_locate_intervals_and_fractions():
    nodes = np.array([0.0, 0.1, 0.35, 0.4, 1.0])
    times = np.array([0.0, 0.05, 0.1, 0.2, 0.35, 0.39, 0.4, 0.7, 1.0, 1.0 + 1e-12, -1e-12])
    j, theta = locate(nodes, times)
    expected_j = [0, 0, 1, 1, 2, 2, 3, 3, 3, 3, 0]
    expected_theta = [0.0, 0.5, 0.0, 0.4, 0.0, 0.8, 0.0, 0.5, 1.0, 1.0, 0.0]
    np.testing.assert_array_equal(j, expected_j)
    np.testing.assert_allclose(theta, expected_theta, atol=1e-12)
    # linear interpolation with (j, θ) reproduces any linear function exactly
    f = 2.0 - 3.0 * nodes
    interpolated = (1 - theta) * f[j] + theta * f[j + 1]
    np.testing.assert_allclose(interpolated, 2.0 - 3.0 * np.clip(times, 0, 1), atol=1e-12)
    for outside in (-1e-3, 1.001):
        with pytest.raises(OptionsError):
            locate(nodes, np.array([outside]))


def test_node_times():
    samples = GRIDS["nonuniform"]
    np.testing.assert_array_equal(node_times(samples, None), samples)
    nodes = node_times(samples, 7)
    np.testing.assert_allclose(nodes, samples[0] + (samples[-1] - samples[0]) * np.arange(7) / 6, rtol=1e-14)
    with pytest.raises(OptionsError):
        node_times(samples, 1)
