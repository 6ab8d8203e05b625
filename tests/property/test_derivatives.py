"""The assembled NLP's derivatives against central finite differences.

``jac_g``, ``grad_f``, ``jac_res`` and the exact ``hess_lag`` are compared with central
differences at a seeded random point; the Gauss–Newton ``hess_lag`` with the closed form
``objective_scale · J_resᵀ J_res`` (upper triangle).
"""

from __future__ import annotations

import functools

import casadi as ca
import numpy as np
import pytest

import colloc as co
from colloc.transcription.collocation import transcribe
from colloc.transcription.nlp import NLP
from colloc_problems import pendulum

METHODS = [co.BackwardEuler, co.Midpoint, co.Trapezoidal]
RTOL = 1e-6
EPS = 1e-6


def _pendulum_problem() -> co.Problem:
    return pendulum.problem(pendulum.simulate_trial(noise_std=0.05, duration=0.5))


def _forced_problem() -> co.Problem:
    """Two states, a free and a known input, two parameters, an output and every extra term."""
    m = co.Model("forced")
    x = m.state("x", scale=0.5)
    v = m.state("v", scale=2.0)
    r = m.free_input("r", scale=3.0)
    u = m.known_input("u", scale=1.5)
    k = m.parameter("k", bounds=(0.1, 100.0), guess=5.0, scale=10.0)
    c = m.parameter("c", bounds=(0.0, 10.0), guess=0.5)
    m.set_der(x, v)
    m.add_residual((1 + 0.2 * x**2) * m.der(v) + k * ca.sin(x) + c * v**3 - u * ca.cos(m.time) - r,
                   name="momentum", scale=4.0)
    m.output("y", x * v + ca.exp(-c) * x**2)

    rng = np.random.default_rng(1)
    t_a = np.linspace(0.0, 0.5, 21)
    t_b = np.concatenate([[0.0], np.cumsum(rng.uniform(0.02, 0.06, 14))])
    trial_a = co.Trial(t_a, {"x": np.sin(3 * t_a), "y": 0.3 * t_a, "u": np.cos(t_a)}, name="a")
    trial_b = co.Trial(t_b, {"x": 1 - t_b**2, "u": t_b}, name="b")
    problem = co.Problem(m, [trial_a, trial_b], fit={"x": 4.0, "y": 1.5})
    problem.add_regularization(ca.vertcat(r, 0.5 * r * x), 0.3, name="effort")
    problem.add_objective(0.05 * r, name="linear")  # linear: adds to f, not to any Hessian
    problem.add_path_constraint(v**2 + r * x, upper=10.0, name="power")
    problem.add_point_constraint(x * v - k * 0.01, 0.2, lower=0.0, upper=0.0, trial="b", name="touch")
    problem.add_point_constraint(x + v, 0.1, lower=-1.0, upper=1.0, name="window")
    return problem


PROBLEMS = {"pendulum": _pendulum_problem, "forced": _forced_problem}


@functools.cache
def _build(problem_name: str, method_cls, hessian: str):
    problem = PROBLEMS[problem_name]()
    layout, blocks, x0, _, _ = transcribe(problem, method_cls())
    scale = 1.0 / problem.num_observations
    nlp = NLP(layout.size, blocks, hessian=hessian, objective_scale=scale)
    rng = np.random.default_rng(12345)
    w = x0 + rng.uniform(-0.5, 0.5, x0.size)
    lam_g = rng.standard_normal(nlp.num_rows)
    return nlp, w, lam_g


def _eval(fn, *args) -> list[np.ndarray]:
    out = fn(*args)
    out = out if isinstance(out, (tuple, list)) else [out]
    return [np.array(ca.DM(o).full()) for o in out]


def _central_fd(func, w: np.ndarray) -> np.ndarray:
    """Columns (func(w + ε e_j) − func(w − ε e_j)) / 2ε, func returning a 1-D array."""
    cols = []
    for j in range(w.size):
        e = np.zeros_like(w)
        e[j] = EPS
        cols.append((func(w + e) - func(w - e)) / (2 * EPS))
    return np.stack(cols, axis=1)


def _assert_close(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.shape == expected.shape
    ref = np.abs(expected).max()
    assert ref > 0, f"{what}: the reference is identically zero, the check would be vacuous"
    err = np.abs(actual - expected)
    i = np.unravel_index(np.argmax(err), err.shape)
    assert err.max() <= RTOL * ref, f"{what}: max error {err.max():.3e} at {i} (max entry {ref:.3e})"


def _full_from_upper(H: np.ndarray) -> np.ndarray:
    assert not np.any(np.tril(H, -1)), "hess_lag must return the upper triangle only"
    return H + H.T - np.diag(np.diag(H))


parametrize = pytest.mark.parametrize
PARAMS = [
    pytest.param(p, m, id=f"{p}-{m.name}") for p in PROBLEMS for m in METHODS
]


@parametrize("problem_name, method_cls", PARAMS)
def test_jac_g_matches_finite_differences(problem_name, method_cls):
    nlp, w, _ = _build(problem_name, method_cls, "exact")
    g_fn = nlp.functions["g"]
    g, J = _eval(nlp.functions["jac_g"], w, nlp.data)
    np.testing.assert_array_equal(g, _eval(g_fn, w, nlp.data)[0])
    J_fd = _central_fd(lambda x: _eval(g_fn, x, nlp.data)[0].ravel(), w)
    _assert_close(J, J_fd, "jac_g")


@parametrize("problem_name, method_cls", PARAMS)
def test_grad_f_matches_finite_differences(problem_name, method_cls):
    nlp, w, _ = _build(problem_name, method_cls, "exact")
    f_fn = nlp.functions["f"]
    f, grad = _eval(nlp.functions["grad_f"], w, nlp.data)
    assert f.item() == pytest.approx(_eval(f_fn, w, nlp.data)[0].item(), rel=1e-14)
    grad_fd = _central_fd(lambda x: _eval(f_fn, x, nlp.data)[0].ravel(), w)
    _assert_close(grad.T, grad_fd, "grad_f")


@parametrize("problem_name, method_cls", PARAMS)
def test_jac_res_matches_finite_differences(problem_name, method_cls):
    nlp, w, _ = _build(problem_name, method_cls, "exact")
    res_fn = nlp.functions["res"]
    (J,) = _eval(nlp.functions["jac_res"], w, nlp.data)
    J_fd = _central_fd(lambda x: _eval(res_fn, x, nlp.data)[0].ravel(), w)
    _assert_close(J, J_fd, "jac_res")
    # f = objective_scale · (½‖res‖² + linear objective terms); the pendulum has only the former
    if problem_name == "pendulum":
        res = _eval(res_fn, w, nlp.data)[0].ravel()
        f = _eval(nlp.functions["f"], w, nlp.data)[0].item()
        assert f == pytest.approx(nlp.objective_scale * 0.5 * res @ res, rel=1e-12)


@parametrize("problem_name, method_cls", PARAMS)
def test_exact_hessian_matches_finite_differences_of_the_lagrangian_gradient(problem_name, method_cls):
    nlp, w, lam_g = _build(problem_name, method_cls, "exact")
    lam_f = 0.7
    fns = nlp.functions

    def lagrangian_gradient(x):
        _, grad = _eval(fns["grad_f"], x, nlp.data)
        _, J = _eval(fns["jac_g"], x, nlp.data)
        return lam_f * grad.ravel() + J.T @ lam_g

    (H,) = _eval(fns["hess_lag"], w, nlp.data, lam_f, lam_g)
    D = _central_fd(lagrangian_gradient, w)
    _assert_close(_full_from_upper(H), (D + D.T) / 2, "hess_lag (exact)")


@parametrize("problem_name, method_cls", PARAMS)
def test_gauss_newton_hessian_is_scaled_jres_t_jres(problem_name, method_cls):
    nlp, w, lam_g = _build(problem_name, method_cls, "gauss-newton")
    (H,) = _eval(nlp.functions["hess_lag"], w, nlp.data, 1.0, lam_g)
    (J,) = _eval(nlp.functions["jac_res"], w, nlp.data)
    expected = nlp.objective_scale * np.triu(J.T @ J)
    assert not np.any(np.tril(H, -1)), "hess_lag must return the upper triangle only"
    _assert_close(H, expected, "hess_lag (gauss-newton)")
    # constraint curvature is ignored: the multipliers do not enter
    (H0,) = _eval(nlp.functions["hess_lag"], w, nlp.data, 1.0, np.zeros_like(lam_g))
    np.testing.assert_array_equal(H, H0)
