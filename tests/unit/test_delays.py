"""Delayed states: the interpolation kernel, the transcription, derivatives in τ, the DDE
simulator and the shooting baseline for delayed models."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

import colloc as co
from colloc.transcription.collocation import transcribe
from colloc.transcription.interpolation import keys_kernel, keys_weights
from colloc.transcription.nlp import NLP


def _k(s):
    return float(keys_kernel(s))


def test_kernel_interpolates_sums_to_one_and_is_exact_for_quadratics():
    assert _k(0.0) == 1.0 and _k(1.0) == 0.0 and _k(-1.0) == 0.0 and _k(2.0) == 0.0 and _k(2.5) == 0.0
    rng = np.random.default_rng(0)
    for s in rng.uniform(-3, 3, 50):
        j = np.arange(-6, 7)
        w = np.array([_k(s - jj) for jj in j])
        assert w.sum() == pytest.approx(1.0, abs=1e-14)
        assert w @ j == pytest.approx(s, abs=1e-13)
        assert w @ j**2 == pytest.approx(s**2, abs=1e-12)


def test_kernel_is_continuously_differentiable():
    s = ca.SX.sym("s")
    dk = ca.Function("dk", [s], [ca.jacobian(keys_kernel(s), s)])
    for knot in (0.0, 1.0, 2.0, -1.0, -2.0):
        left, right = float(dk(knot - 1e-9)), float(dk(knot + 1e-9))
        assert left == pytest.approx(right, abs=1e-7), knot


def test_window_weights_equal_the_kernel_per_offset_with_derivatives():
    """keys_weights (floor + four cubics) is the kernel at every offset, derivative included,
    also where s crosses an integer (the weights move to the next offsets)."""
    s = ca.SX.sym("s")
    offsets = np.arange(-10, 2)
    fast = keys_weights(s, offsets)
    slow = ca.vertcat(*[keys_kernel(-float(o) - s) for o in offsets])
    f = ca.Function("f", [s], [fast, ca.jacobian(fast, s), slow, ca.jacobian(slow, s)])
    values = np.concatenate([np.random.default_rng(1).uniform(0.0, 8.0, 100), np.arange(9.0), np.arange(8) + 1e-12])
    for v in values:
        w, dw, k, dk = (np.array(a).ravel() for a in f(v))
        assert np.allclose(w, k, rtol=0, atol=1e-13) and np.allclose(dw, dk, rtol=0, atol=1e-12), v
        assert w.sum() == pytest.approx(1.0, abs=1e-14)


def _chain_model(tau):
    """ẏ = 2t (y = t²) and ż = y(t − τ): z's defect tests the interpolation of y."""
    m = co.Model("chain")
    y = m.state("y")
    z = m.state("z")
    tau_sym = tau if isinstance(tau, float) else m.parameter("tau", bounds=tau, guess=0.0337, scale=0.01)
    yd = m.delayed(y, tau_sym)
    m.set_der(y, 2 * m.time)
    m.set_der(z, yd)
    return m


@pytest.mark.parametrize("tau", [0.0337, (0.01, 0.06)], ids=["known", "parameter"])
def test_transcription_interpolates_the_delayed_state_exactly_for_quadratics(tau):
    """With y = t² at the nodes, x(t − τ) by the kernel is exact, so the midpoint defect of
    ż = y(t − τ) vanishes when z follows the midpoint recursion with the exact delayed value
    at each interval's centre (once the kernel no longer reaches the constant history)."""
    m = _chain_model(tau)
    t = np.linspace(0.0, 1.0, 101)
    trial = co.Trial(t, {"y": t**2}, name="q")
    prob = co.Problem(m, trial, fit={"y": 1.0})
    layout, blocks, x0, _, _ = transcribe(prob, co.Midpoint())
    nlp = NLP(layout.size, blocks)
    tau_v = 0.0337
    centre = (t[:-1] + t[1:]) / 2 - tau_v
    yd = np.where(centre >= 0, centre**2, 0.0)  # constant history y(0) = 0 before t = 0
    z = np.concatenate([[0.0], np.cumsum(np.diff(t) * yd)])
    assert layout.z_names == ["y", "z"]  # x(t − τ) is substituted, not a node variable
    x = np.zeros(layout.size)
    phys = np.stack([t**2, z])
    x[layout.z_index(0)] = phys / layout.scale[layout.z_index(0)]
    if layout.param_names:
        x[layout.p_index] = tau_v / layout.scale[layout.p_index]
    g = np.array(nlp.functions["g"](x, nlp.data)).ravel()
    rows = {b.name: g[off : off + b.num_rows * b.count] for b, off in zip(nlp.blocks, nlp.row_offsets)}
    assert "delay" not in rows
    dyn = rows["dynamics"].reshape(t.size - 1, 2)  # instance-major: [ẏ row, ż row] per interval
    assert np.max(np.abs(dyn[:, 0])) < 1e-13
    # the kernel reaches back to the (constant) history within two steps of t = τ; exact after
    h = t[1] - t[0]
    far = t[:-1] > tau_v + 3 * h
    assert np.max(np.abs(dyn[far, 1])) < 1e-12
    assert np.max(np.abs(dyn[~far, 1])) > 1e-8  # …and only the history differs from t²


def _delayed_problem(duration=0.6, rate=50.0):
    from colloc_problems import two_link_delay as d

    trial = d.simulate_trial(duration=duration, rate=rate, seed=3)
    return d.problem(trial, tau_bounds=(0.0, 0.08))


def test_derivatives_in_tau_and_everything_else_match_finite_differences():
    """grad f, jac g and the exact Hessian of the Lagrangian, at a point where the delay
    windows clamp at the record start (a variable listed twice in one block)."""
    prob = _delayed_problem()
    layout, blocks, x0, lbx, ubx = transcribe(prob, co.Midpoint())
    nlp = NLP(layout.size, blocks, hessian="exact")
    rng = np.random.default_rng(2)
    x = x0 + 0.05 * rng.standard_normal(x0.size)
    x[layout.p_index[-1]] = 0.0283 / layout.scale[layout.p_index[-1]]  # τ between nodes
    p = nlp.data
    lam = rng.standard_normal(nlp.num_rows)
    f = lambda xx: float(nlp.functions["f"](xx, p))  # noqa: E731
    g = lambda xx: np.array(nlp.functions["g"](xx, p)).ravel()  # noqa: E731
    _, grad = nlp.functions["grad_f"](x, p)
    grad = np.array(grad).ravel()
    _, J = nlp.functions["jac_g"](x, p)
    J = np.array(ca.densify(J))
    H = np.array(ca.densify(nlp.functions["hess_lag"](x, p, 1.0, lam)))
    H = np.triu(H) + np.triu(H, 1).T
    eps = 1e-6
    cols = list(layout.p_index) + list(rng.choice(layout.param_offset, 12, replace=False))
    for j in cols:
        e = np.zeros_like(x)
        e[j] = eps
        assert grad[j] == pytest.approx((f(x + e) - f(x - e)) / (2 * eps), rel=1e-5, abs=1e-7)
        np.testing.assert_allclose(J[:, j], (g(x + e) - g(x - e)) / (2 * eps), rtol=1e-5, atol=1e-6)

        def lag_grad(xx):
            _, gf = nlp.functions["grad_f"](xx, p)
            _, jg = nlp.functions["jac_g"](xx, p)
            return np.array(gf).ravel() + np.array(ca.mtimes(jg.T, lam)).ravel()

        fd = (lag_grad(x + e) - lag_grad(x - e)) / (2 * eps)
        np.testing.assert_allclose(H[:, j], fd, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(fd).max()))


def test_delay_beyond_the_margin_is_a_status_not_a_crash():
    from colloc_problems import two_link_delay as d

    Ji, Jd = d.linearization()
    margin = co.delay_margin(Ji, Jd).delay_margin_s
    assert 0.02 < margin < 0.04
    m = d.model(margin * 1.5, acceleration=lambda t: 0.0 * t)
    t = np.arange(0, 20.0, 0.01)
    sim = co.simulate(m, [0.01, 0.0, 0.0, 0.0], d.tl.K_TRUE.ravel(), t, divergence_bound=np.pi / 2)
    assert not sim.success and sim.status == "diverged" and "t =" in sim.message
    stable = co.simulate(d.model(margin * 0.7, acceleration=lambda t: 0.0 * t), [0.01, 0, 0, 0],
                         d.tl.K_TRUE.ravel(), t, divergence_bound=np.pi / 2)
    assert stable.success and abs(stable.states[-1, 0]) < 1e-3
    with pytest.raises(RuntimeError, match="diverged"):
        d.simulate_trial(tau=margin * 1.5, duration=20.0)


def test_delayed_simulation_matches_an_independent_method_of_steps():
    """ẋ = −x(t − 1), x = 1 for t ≤ 0: x = 1 − t on [0, 1], 1 − t + (t − 1)²/2 on [1, 2]."""
    m = co.Model("dde")
    x = m.state("x")
    m.set_der(x, -m.delayed(x, 1.0))
    t = np.linspace(0, 2, 201)
    sim = co.simulate(m, [1.0], [], t)
    exact = np.where(t <= 1, 1 - t, 1 - t + (t - 1) ** 2 / 2)
    assert sim.success and np.max(np.abs(sim.states[:, 0] - exact)) < 1e-9


def test_model_refuses_bad_delays():
    m = co.Model("bad")
    x = m.state("x")
    k = m.parameter("k", bounds=(0, 1))
    free = m.parameter("free")
    with pytest.raises(co.ModelError, match="delay"):
        m.delayed(x, -0.1)
    with pytest.raises(co.ModelError, match="finite bounds"):
        m.delayed(x, free)
    with pytest.raises(co.ModelError, match="states"):
        m.delayed(k, 0.1)
    xd = m.delayed(x, k)
    with pytest.raises(co.ModelError, match="not declared"):
        m.output("y", xd)


def test_shooting_baseline_for_delayed_models():
    """Adjoint gradient through the method-of-steps RK4 (delayed values from the buffer)
    against finite differences, including the derivative in τ; clear errors otherwise."""
    from colloc.shooting.methods import _Shooting

    prob = _delayed_problem(duration=1.0)
    setup = _Shooting(prob, co.RungeKutta(substeps=2), segments=1)
    value = setup.J(setup.theta)
    fg = ca.Function("fg", [setup.theta], [value, co.Adjoint().gradient(setup.J, setup.theta, value)])
    x = setup.x0.copy()
    j = setup.names.index("tau")
    x[j] = 0.0231 / setup.scale[j]
    _, g = fg(x)
    g = np.array(g).ravel()
    for i in [j, setup.names.index("k_00"), setup.names.index("k_13")]:
        e = np.zeros_like(x)
        e[i] = 1e-6
        fd = (float(setup.J(x + e)) - float(setup.J(x - e))) / 2e-6
        assert g[i] == pytest.approx(fd, rel=1e-5), setup.names[i]
    with pytest.raises(co.OptionsError, match="RungeKutta"):
        _Shooting(prob, co.Cvodes(), segments=1)
    with pytest.raises(co.OptionsError, match="SingleShooting"):
        _Shooting(prob, co.RungeKutta(), segments=4)
