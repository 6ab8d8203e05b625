"""The high-order transcriptions (Hermite–Simpson, Radau of degree d): exactness on
polynomials, measured order of convergence, the interior nodes and the fixed interpolation of
errors-in-variables inputs.

Expected values come from closed forms or from scipy's ``solve_ivp`` at tight tolerances,
never from colloc.
"""

from __future__ import annotations

import functools
import re

import casadi as ca
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import colloc as co
from colloc.transcription.collocation import transcribe
from colloc.transcription.grid import differentiation_matrix, interpolation_stencil, mesh_nodes, radau_points
from colloc.transcription.nlp import NLP
from colloc_problems import pendulum

HIGH = {
    "hermite-simpson": co.HermiteSimpson(),
    "radau1": co.Radau(degree=1),
    "radau2": co.Radau(degree=2),
    "radau3": co.Radau(degree=3),
    "radau4": co.Radau(degree=4),
}
#: The highest polynomial degree of the state each scheme reproduces exactly.
EXACT_DEGREE = {"hermite-simpson": 3, "radau1": 1, "radau2": 2, "radau3": 3, "radau4": 4}

MESH = 0.2 + np.concatenate([[0.0], np.cumsum(np.random.default_rng(3).uniform(0.05, 0.2, 9))])


def _rows(nlp: NLP, g: np.ndarray, name: str) -> np.ndarray:
    b = next(i for i, blk in enumerate(nlp.blocks) if blk.name == name)
    blk = nlp.blocks[b]
    return g[nlp.row_offsets[b] : nlp.row_offsets[b] + blk.num_rows * blk.count].reshape(blk.count, blk.num_rows)


# ---- the pieces, against closed forms --------------------------------------------------------
def test_radau_points_are_the_zeros_of_the_radau_polynomial():
    """c₁ … c_d on (0, 1], c_d = 1, zeros of P_d(2c − 1) − P_{d−1}(2c − 1) (Legendre)."""
    from numpy.polynomial import legendre

    for d in range(1, 6):
        c = radau_points(d)
        assert c.size == d and c[-1] == pytest.approx(1.0, abs=1e-14) and np.all(np.diff(c) > 0)
        coef = np.zeros(d + 1)
        coef[d], coef[d - 1] = 1.0, -1.0
        np.testing.assert_allclose(legendre.legval(2 * c - 1, coef), 0.0, atol=1e-12)


def test_differentiation_matrix_is_exact_for_polynomials_of_its_degree():
    tau = np.array([0.0, *radau_points(4)])
    D = differentiation_matrix(tau)
    for k in range(5):
        np.testing.assert_allclose(D @ tau**k, k * tau ** max(k - 1, 0) * (k > 0), atol=1e-11)


def test_mesh_nodes_put_the_samples_on_the_mesh():
    samples = np.array([0.0, 0.1, 0.25, 0.3])
    mesh, nodes = mesh_nodes(samples, None, 2, (0.0, 0.5, 1.0))
    np.testing.assert_allclose(mesh, [0.0, 0.05, 0.1, 0.175, 0.25, 0.275, 0.3])
    assert nodes.size == 2 * (mesh.size - 1) + 1
    np.testing.assert_array_equal(nodes[::2], mesh)  # mesh points are copies, not round-offs
    np.testing.assert_allclose(nodes[1::2], (mesh[:-1] + mesh[1:]) / 2)


def test_interpolation_stencil_is_exact_for_cubics():
    known = np.array([0.0, 0.1, 0.3, 0.35, 0.6, 0.9])
    times = np.array([0.0, 0.05, 0.2, 0.34, 0.5, 0.75, 0.9])
    idx, w = interpolation_stencil(known, times)
    f = lambda t: 2 - t + 3 * t**2 - 5 * t**3  # noqa: E731
    np.testing.assert_allclose((w * f(known)[idx]).sum(axis=0), f(times), atol=1e-12)
    assert np.all(idx.min(axis=0) >= 0) and np.all(idx.max(axis=0) < known.size)


# ---- 1. defects vanish on polynomial solutions of the scheme's degree ------------------------
def _poly_model(k: int) -> co.Model:
    """ẋ = Σ a_j t^j (j < k), and M·v̇ = F with F = f₀ + f₁ t a known input (mass-matrix form)."""
    m = co.Model("poly")
    x = m.state("x", scale=2.0)
    v = m.state("v", 2, scale=[0.5, 3.0])
    F = m.known_input("F", 2)
    a = m.parameter("a", k, bounds=(-10.0, 10.0), scale=2.0)
    m.set_der(x, sum(a[j] * m.time**j for j in range(k)))
    m.add_residual(ca.DM([[2.0, 0.5], [0.3, 1.5]]) @ m.der(v) - F, name="mass", scale=[2.0, 0.7])
    return m


@pytest.mark.parametrize("name", list(HIGH))
def test_defects_vanish_on_polynomials_up_to_the_schemes_degree(name):
    method = HIGH[name]
    for k in (EXACT_DEGREE[name], EXACT_DEGREE[name] + 1):  # x of degree k: exact, then not
        coef = np.linspace(0.7, -1.1, k)
        M = np.array([[2.0, 0.5], [0.3, 1.5]])
        f0, f1 = np.array([0.5, -1.0]), np.array([1.2, 0.9])
        # F linear keeps v quadratic: exact for every scheme of degree >= 2 (and F is read exactly)
        x_of = lambda t: 0.3 + sum(coef[j] * t ** (j + 1) / (j + 1) for j in range(k))  # noqa: E731
        v_of = lambda t: np.array([0.2, -0.3])[:, None] + np.linalg.solve(M, np.outer(f0, t) + np.outer(f1, t**2 / 2))  # noqa: E731
        F_of = lambda t: f0[:, None] + np.outer(f1, t)  # noqa: E731
        Ft = F_of(MESH)
        trial = co.Trial(MESH, {"x": x_of(MESH), "F_0": Ft[0], "F_1": Ft[1]})
        problem = co.Problem(_poly_model(k), trial, fit={"x": 1.0})
        layout, blocks, *_ = transcribe(problem, method)
        nlp = NLP(layout.size, blocks)
        tn = layout.nodes[0]
        assert tn.size == (len(method.node_fractions) - 1) * (MESH.size - 1) + 1
        w = np.zeros(layout.size)
        idx = layout.z_index(0)
        values = {"x": x_of(tn), "v_0": v_of(tn)[0], "v_1": v_of(tn)[1]}
        for e, z in enumerate(layout.z_names):
            w[idx[e]] = values[z] / layout.scale[idx[e]]
        w[layout.p_index] = coef / layout.scale[layout.p_index]
        g = _rows(nlp, np.array(nlp.functions["g"](w, nlp.data)).ravel(), "dynamics")
        # rows of x: "ode(x) @c1" (Radau), "simpson x" / "hermite x" (Hermite–Simpson)
        x_rows = [i for i, r in enumerate(blocks[0].row_names) if re.search(r"(\(x\)| x$)", r.split(" @")[0])]
        assert x_rows, blocks[0].row_names
        other = np.setdiff1d(np.arange(g.shape[1]), x_rows)
        if name == "radau1":  # backward Euler: v quadratic is not exact
            assert np.abs(g[:, other]).max() > 1e-4
        else:
            np.testing.assert_allclose(g[:, other], 0.0, atol=1e-11)
        if k <= EXACT_DEGREE[name]:
            np.testing.assert_allclose(g[:, x_rows], 0.0, atol=1e-11)
        else:
            assert np.abs(g[:, x_rows]).max() > 1e-6, f"{name} should not be exact for degree {k}"


# ---- 2. measured order of convergence --------------------------------------------------------
@functools.cache
def _pendulum_reference(T):
    p = pendulum.TRUE["p"]
    sol = solve_ivp(lambda t, s: [s[1], -p * np.sin(s[0])], (0.0, T), [1.0, 0.0], method="DOP853",
                    rtol=1e-13, atol=1e-13, dense_output=True)
    return sol.sol


def _decay_model() -> co.Model:
    m = co.Model("decay")
    x = m.state("x", scale=0.5)
    m.set_der(x, -x * ca.cos(m.time))
    return m


CASES = {
    "pendulum": {"model": pendulum.model, "x0": [1.0, 0.0], "params": [pendulum.TRUE["p"]], "T": 1.0,
                 "exact": lambda t: _pendulum_reference(1.0)(t)},
    "decay": {"model": _decay_model, "x0": [2.0], "params": [], "T": 3.0,
              "exact": lambda t: np.atleast_2d(2.0 * np.exp(-np.sin(t)))},
}


def collocation_end_state(case, method, N):
    """Solve the dynamics rows for every node but the first (pinned to x₀) by Newton."""
    model = case["model"]()
    states = model.element_names("state")
    t = np.linspace(0.0, case["T"], N + 1)
    problem = co.Problem(model, co.Trial(t, {states[0]: np.zeros(t.size)}), fit={states[0]: 1.0})
    layout, blocks, *_ = transcribe(problem, method)
    nlp = NLP(layout.size, blocks)
    tn = layout.nodes[0]
    idx = layout.z_index(0)
    free = idx[:, 1:].ravel()
    w = np.zeros(layout.size)
    w[idx] = case["exact"](tn) / layout.scale[idx]
    w[idx[:, 0]] = np.asarray(case["x0"]) / layout.scale[idx[:, 0]]
    w[layout.p_index] = np.asarray(case["params"]) / layout.scale[layout.p_index]
    assert nlp.blocks[0].name == "dynamics" and nlp.row_offsets[0] == 0
    for _ in range(30):
        g, J = nlp.functions["jac_g"](w, nlp.data)
        g = np.array(g).ravel()[: free.size]
        J = J.full()[: free.size, free]
        step = np.linalg.solve(J, -g)
        w[free] += step
        if np.abs(step).max() < 1e-14:
            break
    return (w * layout.scale)[idx[:, -1]]


def measured_order(case, method, Ns):
    exact_end = np.asarray(case["exact"](np.array([case["T"]]))).ravel()
    errors = np.array([np.linalg.norm(collocation_end_state(case, method, N) - exact_end) for N in Ns])
    return np.polyfit(np.log(case["T"] / np.asarray(Ns)), np.log(errors), 1)[0], errors


@pytest.mark.parametrize("case_name", list(CASES))
@pytest.mark.parametrize("name", list(HIGH))
def test_measured_order_of_convergence(name, case_name):
    method = HIGH[name]
    # high orders reach round-off on fine grids: coarser grids for them
    Ns = [20, 40, 80, 160] if method.order <= 3 else [6, 12, 24, 48] if method.order <= 5 else [4, 6, 8, 12]
    slope, errors = measured_order(CASES[case_name], method, Ns)
    assert abs(slope - method.order) < 0.35, f"errors {errors}, observed order {slope:.3f}"


# ---- 3. errors-in-variables inputs at interior nodes -----------------------------------------
@pytest.mark.parametrize("name", ["hermite-simpson", "radau3"])
def test_latent_inputs_at_interior_nodes_interpolate_the_samples(name):
    """The estimated input has one value per sample; at the interior nodes it is the fixed
    cubic interpolation of those (an extra node never adds a free value)."""
    m = co.Model("driven")
    x = m.state("x")
    u = m.known_input("u")
    c = m.parameter("c", guess=1.0)
    m.set_der(x, -c * x + u)
    t = np.linspace(0.0, 2.0, 21)
    u_t = np.sin(2 * t)
    x_t = np.exp(-t)  # any values: only the interpolation rows are checked
    problem = co.Problem(m, co.Trial(t, {"x": x_t, "u": u_t}), fit={"x": 1.0}, input_noise={"u": 0.1})
    method = HIGH[name]
    layout, blocks, *_ = transcribe(problem, method)
    interp = next(b for b in blocks if b.name == "eiv-interpolation")
    tn = layout.nodes[0]
    off_samples = np.setdiff1d(tn, t)
    assert interp.count == off_samples.size == tn.size - t.size
    assert layout.z_names == ["x", "u"] and layout.num_states == 1
    nlp = NLP(layout.size, blocks)
    w = np.zeros(layout.size)
    idx = layout.z_index(0)
    cubic = lambda s: 0.4 - s + 0.8 * s**2 - 0.3 * s**3  # noqa: E731  reproduced exactly
    w[idx[1]] = cubic(tn) / layout.scale[idx[1]]
    g = _rows(nlp, np.array(nlp.functions["g"](w, nlp.data)).ravel(), "eiv-interpolation")
    np.testing.assert_allclose(g, 0.0, atol=1e-12)
    w[idx[1][1]] += 0.01  # an interior value off the interpolant violates its row
    g = _rows(nlp, np.array(nlp.functions["g"](w, nlp.data)).ravel(), "eiv-interpolation")
    assert abs(g[0, 0]) > 1e-3


def test_hermite_simpson_refuses_a_dae_and_names_radau():
    m = co.Model("dae")
    x = m.state("x")
    y = m.state("y")
    m.set_der(x, -y)
    m.add_residual(y - 2 * x, name="algebraic")
    t = np.linspace(0, 1, 11)
    problem = co.Problem(m, co.Trial(t, {"x": np.exp(-2 * t)}), fit={"x": 1.0})
    with pytest.raises(co.ModelError, match="hermite-simpson.*DAE.*Radau"):
        co.solve(problem, co.HermiteSimpson())
    result = co.solve(problem, co.Radau(), solver=co.Ipopt(simulate=False))
    np.testing.assert_allclose(result.trajectories[problem.trials[0].name]["x"].to_numpy()[::3],
                               np.exp(-2 * t), rtol=1e-4)


def test_bad_options_name_the_argument():
    with pytest.raises(co.OptionsError, match=r"Radau\(degree=0\)"):
        co.Radau(degree=0)
    with pytest.raises(co.OptionsError, match=r"HermiteSimpson\(refine=0\)"):
        co.HermiteSimpson(refine=0)
    with pytest.raises(co.OptionsError, match=r"Midpoint\(refine=1.5\)"):
        co.Midpoint(refine=1.5)
    assert co.Radau().name == "radau3" and co.Radau(degree=2).name == "radau2"
