"""The controlled inverted pendulum (Barauskas & Krušinskienė 2007): model, data, formulations.

Expected values come from the paper (Table 1 ranges, the COP equation) or from the
generator's own truth, never from the estimator under test.
"""

from __future__ import annotations

import itertools

import casadi as ca
import numpy as np
import pytest

import colloc as co
from colloc.transcription.collocation import transcribe
from colloc.transcription.nlp import NLP
from colloc_problems import cip


@pytest.fixture(scope="module")
def clean():
    """60 s at 100 Hz, no COP noise (the acceptance case), with the true states."""
    return cip.simulate_trial(seed=3, cop_noise=0.0, return_states=True)


def test_generator_matches_the_model_equations(clean):
    """The exact discretisation satisfies I·u'' − m g h·u = T_d − T_c and the COP law (eq. 1, 4)."""
    trial, S, x = clean
    b, g = cip.BODY, cip.TRUE
    dt = trial.time[1] - trial.time[0]
    u, v, w, td = S.T
    tc = g["KP"] * u + g["KI"] * w + g["KD"] * v
    acc = (b["m"] * b["g"] * b["h"] * u + td - tc) / b["I"]  # u'' by eq. 1
    # increments of u and u' against the trapezoidal rule of u' and u'' (smooth within a sample)
    assert np.max(np.abs(np.diff(v) - dt * (acc[1:] + acc[:-1]) / 2)) < 5e-3 * np.max(np.abs(np.diff(v)))
    assert np.max(np.abs(np.diff(u) - dt * (v[1:] + v[:-1]) / 2)) < 5e-3 * np.max(np.abs(np.diff(u)))
    # COP law, eq. 4: u_cop = h u − I u''/(m g)
    cop_def = b["h"] * u - b["I"] * acc / (b["m"] * b["g"])
    assert np.allclose(cop_def, trial["cop"], rtol=0, atol=1e-12)
    # the integral state is ∫₀ᵗ u and the disturbance obeys T_d + B T_d' = A x (held x)
    assert w[0] == 0 and np.allclose(np.diff(w), dt * (u[1:] + u[:-1]) / 2, atol=1e-4 * np.abs(w).max())
    a = np.exp(-dt / cip.FILTER["B"])
    assert np.allclose(td[1:], a * td[:-1] + cip.FILTER["A"] * (1 - a) * x[:-1], atol=1e-9)
    # physiological magnitudes: COP a few mm, as in the paper's Fig. 2
    assert 1e-3 < np.std(trial["cop"]) < 2e-2


def test_com_from_cop_inverts_the_cop_equation(clean):
    trial, S, _ = clean
    dt = trial.time[1] - trial.time[0]
    u = cip.com_from_cop(trial["cop"], dt)
    inner = slice(300, -300)  # the ends decay as exp(−ω₀ t), ω₀ = 2.6 /s
    err = np.max(np.abs(u[inner] - S[inner, 0]))
    assert err < 1e-3 * np.max(np.abs(S[:, 0]))


def _corners():
    lo_hi = [cip.RANGES[k] for k in cip.GAINS]
    for combo in itertools.product(*lo_hi):
        yield dict(zip(cip.GAINS, combo))
    yield dict(cip.CENTRE_NORMAL)


@pytest.mark.parametrize("guess", list(_corners()), ids=lambda g: "-".join(f"{v:g}" for v in g.values()))
def test_known_disturbance_gains_within_one_percent_from_every_start(clean, guess):
    """Acceptance: clean COP, disturbance known, every corner of Table 1's box as the start."""
    trial, _, _ = clean
    prob = cip.problem(trial, "known", cop_noise=1e-5)
    res = co.solve(prob, co.Midpoint(), guess=guess)
    for k in cip.GAINS:
        assert res.parameters[k] == pytest.approx(cip.TRUE[k], rel=0.01), (k, guess)


def test_default_formulation_follows_the_columns(clean):
    trial, _, _ = clean
    assert "disturbance" in cip.problem(trial).model.element_names("known_input")
    cop_only = co.Trial(trial.time, {"cop": trial["cop"]}, name="cop.csv")
    assert "noise" in cip.problem(cop_only).model.element_names("free_input")
    with pytest.raises(co.ProblemError, match="disturbance"):
        cip.problem(cop_only, "known")
    with pytest.raises(co.ProblemError, match="formulation"):
        cip.problem(trial, "J_x")


def test_initial_trajectories_are_data_driven_and_consistent(clean):
    trial, S, _ = clean
    g = cip.initial_trajectories(trial)
    assert np.corrcoef(g["sway"], S[:, 0])[0, 1] > 0.99
    # T_d from T_c − m g u_cop with the guessed gains reproduces the COP exactly
    cop = cip.cop_from_states(np.column_stack([g["sway"], g["sway_rate"], g["sway_integral"]]),
                              cip.CENTRE_NORMAL, g["disturbance"])
    assert np.allclose(cop, trial["cop"], atol=1e-12)


def test_jt_inverse_dynamics_is_the_least_squares_minimiser(clean):
    """The paper's J_T is quadratic in the gains: its bounded minimiser has a zero projected
    gradient (checked by finite differences of J_T itself)."""
    trial, _, _ = clean
    out = cip.jt_inverse_dynamics(trial, bounds={"KP": (0, 5000), "KI": (-500, 500), "KD": (0, 1000)})
    p = out["parameters"]
    jt = lambda gains: _jt_value(trial, gains)  # noqa: E731
    for k, step in (("KP", 1.0), ("KI", 0.1), ("KD", 0.5)):
        up, dn = dict(p), dict(p)
        up[k] += step
        dn[k] -= step
        grad = (jt(up) - jt(dn)) / (2 * step)
        curv = (jt(up) - 2 * jt(p) + jt(dn)) / step**2
        assert abs(grad) <= 1e-6 * curv * abs(p[k]) + 1e-9, k
    assert out["objective"] == pytest.approx(_jt_value(trial, p), rel=1e-9)


def _jt_value(trial, gains, cutoff=0.5):
    """½ Σ T_d'² dt with T_d from inverse dynamics (eq. 18–19), written independently."""
    b = cip.BODY
    dt = trial.time[1] - trial.time[0]
    u = co.signals.lowpass(trial["cop"], dt, cutoff) / b["h"]
    du = co.signals.derivative(u, dt)
    d2u = co.signals.derivative(u, dt, order=2)
    td = (b["I"] * d2u + gains["KD"] * du + (gains["KP"] - b["m"] * b["g"] * b["h"]) * u
          + gains["KI"] * co.signals.cumulative_integral(u, dt))
    # the estimator differentiates I u'' once more; use the same derivative operator
    tdot = (b["I"] * co.signals.derivative(d2u, dt) + gains["KD"] * d2u
            + (gains["KP"] - b["m"] * b["g"] * b["h"]) * du + gains["KI"] * u)
    assert np.allclose(co.signals.derivative(td, dt)[5:-5], tdot[5:-5], rtol=1e-2, atol=1e-2 * np.abs(tdot).max())
    return 0.5 * float(np.sum(tdot**2) * dt)


@pytest.fixture(scope="module")
def short():
    return cip.simulate_trial(seed=5, duration=2.0, cop_noise=1e-4)


@pytest.mark.parametrize("formulation", ["known", "J_u", "J_S", "J_T", "MAP", "MAP-OM"])
def test_collocation_gradient_of_every_error_function(short, formulation):
    """∇f of each formulation's NLP against central differences along random directions."""
    prob = cip.problem(short, formulation, sdf_lag_step=0.05, sdf_max_lag=1.0)
    prob_sdf = any(t.kind == "trajectory" for t in prob.terms)
    layout, blocks, x0, lbx, ubx = transcribe(prob, co.Midpoint())
    nlp = NLP(layout.size, blocks, hessian="limited-memory" if prob_sdf else "exact")
    fg = nlp.functions["grad_f"]
    rng = np.random.default_rng(0)
    x = x0 * (1 + 0.05 * rng.standard_normal(x0.size))
    f0, g = (np.array(v).ravel() for v in fg(x, nlp.data))
    for _ in range(4):
        d = rng.standard_normal(x.size)
        d /= np.linalg.norm(d)
        eps = 1e-6 * max(1.0, np.linalg.norm(x))
        fp = float(nlp.functions["f"](x + eps * d, nlp.data))
        fm = float(nlp.functions["f"](x - eps * d, nlp.data))
        fd = (fp - fm) / (2 * eps)
        assert g @ d == pytest.approx(fd, rel=1e-5, abs=1e-8 * max(1.0, abs(f0[0]))), formulation


@pytest.mark.parametrize("formulation", ["known", "J_u", "J_S", "MAP", "MAP-OM"])
def test_adjoint_gradient_of_every_error_function(short, formulation):
    """The shooting baseline's adjoint gradient (the paper's conjugate-variable method)
    against central differences of the simulated objective."""
    from colloc.shooting.methods import _Shooting

    prob = cip.problem(short, formulation, sdf_lag_step=0.05, sdf_max_lag=1.0)
    setup = _Shooting(prob, co.RungeKutta(), segments=1)
    value = setup.J(setup.theta)
    grad = co.Adjoint().gradient(setup.J, setup.theta, value)
    fg = ca.Function("fg", [setup.theta], [value, grad])
    rng = np.random.default_rng(1)
    x = setup.x0 * (1 + 0.02 * rng.standard_normal(setup.x0.size))
    f0, g = (np.array(v).ravel() for v in fg(x))
    for _ in range(3):
        d = rng.standard_normal(x.size)
        d /= np.linalg.norm(d)
        eps = 1e-6 * max(1.0, np.linalg.norm(x))
        fd = (float(setup.J(x + eps * d)) - float(setup.J(x - eps * d))) / (2 * eps)
        assert g @ d == pytest.approx(fd, rel=1e-5, abs=1e-8 * max(1.0, abs(f0[0]))), formulation


def test_sdf_objective_matches_the_signal_tool(short):
    """The CasADi J_S uses the same SDF estimator as colloc.signals.sdf (eq. 5)."""
    f = cip.sdf_objective(max_lag=1.0, lag_step=0.1, unit=1.0)
    c = ca.MX.sym("c", short.num_samples)
    J = ca.Function("J", [c], [f({"cop": c}, short.time, short)])
    assert float(J(short["cop"])) == pytest.approx(0.0, abs=1e-20)
    other = short["cop"] * 1.1  # SDF scales by 1.21
    lags, ref = co.signals.sdf(short["cop"], 0.01, max_lag=1.0)
    k = np.arange(10, 101, 10)
    w = np.full(k.size, 0.1)
    w[-1] /= 2
    expected = float(np.sum(w * 0.5 * (0.21 * ref[k]) ** 2))
    assert float(J(other)) == pytest.approx(expected, rel=1e-9)


def test_shooting_accepts_the_integral_initial_condition(short):
    """w(0) = 0 is a point constraint; single shooting turns it into a bound on the initial state."""
    from colloc.shooting.methods import _Shooting

    setup = _Shooting(cip.problem(short, "known"), co.RungeKutta(), segments=1)
    i = setup.names.index("sway_integral(t=0)")
    assert setup.lb[i] == setup.ub[i] == 0.0


def test_held_noise_input_reproduces_the_exact_discretisation():
    """MAP's model with the true held noise and the true start reproduces the generated COP."""
    trial, S, x = cip.simulate_trial(seed=2, duration=5.0, cop_noise=0.0, return_states=True)
    m = cip.model("filtered")
    sim = co.simulate(m, S[0], [cip.TRUE[k] for k in cip.GAINS], trial.time, free_inputs=x[:, None],
                      rtol=1e-11, atol=1e-12)
    assert sim.success
    assert np.allclose(sim.signals["cop"], trial["cop"], atol=1e-9 * np.abs(trial["cop"]).max() + 1e-12)


def test_cli_identify_cip_known_and_cop_only(tmp_path):
    from colloc.cli import main
    from colloc_problems._data import data_path

    out = tmp_path / "r.json"
    assert main(["identify", "cip", "--data", str(data_path("cip", "cip.csv")), "--out", str(out)]) == 0
    import json

    doc = json.loads(out.read_text())
    assert set(doc["parameters"]) == {"KP", "KI", "KD"} and set(doc["standard_errors"]) == {"KP", "KI", "KD"}
    for k in cip.GAINS:  # 0.1 mm COP noise: within 3 standard errors of the truth
        assert abs(doc["parameters"][k] - cip.TRUE[k]) < 3 * doc["standard_errors"][k]
    assert main(["identify", "cip", "--data", str(data_path("cip", "cip_cop_only.csv")), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc["standard_errors"]) == {"KP", "KI", "KD"}
    assert all(np.isfinite(v) and v > 0 for v in doc["standard_errors"].values())


def test_onsager_machlup_term_is_half_the_drift_divergence(short):
    """For the CIP, ∇·f = −K_D/I − 1/B (trace of the closed-loop matrix), so the term is
    ½(−K_D/I − 1/B) per unit time: linear in K_D, independent of K_P and K_I."""
    prob = cip.problem(short, "MAP-OM")
    term = next(t for t in prob.terms if t.name == "onsager_machlup")
    m = prob.model
    f = ca.Function("om", [m._vec("state"), m._vec("free_input"), m._vec("parameter")], [term.expr])
    for kp, ki, kd in ((1100.0, 10.0, 250.0), (1200.0, 90.0, 240.0)):
        val = float(f([0.01, -0.02, 0.3, 5.0], [0.7], [kp, ki, kd]))
        assert val == pytest.approx(0.5 * (-kd / cip.BODY["I"] - 1 / cip.FILTER["B"]), rel=1e-12)
    assert term.integral


def test_covariance_equals_the_dense_null_space_formula():
    """Regression: the sparse KKT covariance must equal Z (Zᵀ JᵀJ Z)⁻¹ Zᵀ computed densely
    (a too-large regularisation of the constraint block once inflated the CIP's standard
    errors twentyfold)."""
    import scipy.linalg as sl

    trial = cip.simulate_trial(seed=100, duration=2.5)  # the dense null space costs n³: 2.5 s, not 5 s
    prob = cip.problem(trial, "known")
    res = co.solve(prob, co.Midpoint(), solver=co.Ipopt(simulate=False))
    layout, blocks, _, _, _ = transcribe(prob, co.Midpoint())
    nlp = NLP(layout.size, blocks)
    traj = res.trajectories[trial.name]
    x = np.empty(layout.size)
    x[layout.z_index(0)] = np.stack([traj[n].to_numpy() for n in layout.z_names]) / layout.scale[layout.z_index(0)]
    x[layout.p_index] = np.array([res.parameters[k] for k in layout.param_names]) / layout.scale[layout.p_index]
    J = np.array(ca.densify(nlp.functions["jac_res"](x, nlp.data)))
    _, A = nlp.functions["jac_g"](x, nlp.data)
    A = np.array(ca.densify(A))[nlp.lbg == nlp.ubg]
    Z = sl.null_space(A)
    C = Z @ np.linalg.solve(Z.T @ J.T @ J @ Z, Z.T)
    sp = layout.scale[layout.p_index]
    se_dense = np.sqrt(np.diag(C[np.ix_(layout.p_index, layout.p_index)])) * sp * np.sqrt(res.info["residual_variance"])
    np.testing.assert_allclose([res.standard_errors[k] for k in layout.param_names], se_dense, rtol=1e-3)
