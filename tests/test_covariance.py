"""Standard errors: equal to a dense reduced Gauss–Newton computation done here, finite on the
nine-experiment semibatch reactor."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import scipy.linalg
from scipy.integrate import solve_ivp

import colloc as co
from colloc_problems import semibatch
from colloc_problems._data import data_path

P_TRUE, C_TRUE, SIGMA = 10.0, 0.3, 0.02


def damped_model() -> co.Model:
    m = co.Model("damped")
    th = m.state("theta", unit="rad")
    om = m.state("omega", unit="rad/s", scale=3.0)
    p = m.parameter("p", bounds=(0.1, 100.0), guess=8.0, scale=10.0)
    c = m.parameter("c", bounds=(0.0, 5.0), guess=0.5, scale=1.0)
    m.set_der(th, om)
    m.set_der(om, -p * ca.sin(th) - c * om)
    return m


def damped_trial(seed: int = 0) -> co.Trial:
    t = np.arange(0, 3.0 + 1e-9, 0.05)
    sol = solve_ivp(lambda _, y: [y[1], -P_TRUE * np.sin(y[0]) - C_TRUE * y[1]], (0, t[-1]), [1.0, 0.0],
                    t_eval=t, rtol=1e-11, atol=1e-12)
    return co.Trial(t, {"theta": sol.y[0] + SIGMA * np.random.default_rng(seed).standard_normal(t.size)},
                    name="damped.csv")


def midpoint_defects(z: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The implicit midpoint rule written out here: x_{k+1} − x_k − h f((x_k + x_{k+1})/2)."""
    n = nodes.size
    th, om, p, c = z[:n], z[n : 2 * n], z[2 * n], z[2 * n + 1]
    h = np.diff(nodes)
    thm, omm = 0.5 * (th[1:] + th[:-1]), 0.5 * (om[1:] + om[:-1])
    return np.concatenate([th[1:] - th[:-1] - h * omm, om[1:] - om[:-1] - h * (-p * np.sin(thm) - c * omm)])


@pytest.mark.parametrize("row_set", ["touching", "matched"])
@pytest.mark.parametrize("route", ["ordered", "casadi-ldl", "qdldl"])
@pytest.mark.parametrize("nodes_per_sample", [1, 2])
def test_standard_errors_equal_a_dense_reduced_gauss_newton_reference(nodes_per_sample, route, row_set, monkeypatch,
                                                                    covariance_route):
    """The three LDLᵀ routes of the KKT solve (the time ordering of colloc.inference.ldl
    when a compiler exists; CasADi's ldl; qdldl when installed), with every constraint row
    that touches an unseen variable added as ρ·ÂᵀÂ (small problems) or one matched row per
    unseen variable (what large problems try first)."""
    from colloc.inference import covariance
    used = covariance_route(route)
    if row_set == "matched":
        monkeypatch.setattr(covariance, "_MATCH_ABOVE", 0.0)
        chosen = []
        choices = covariance._row_choices
        monkeypatch.setattr(covariance, "_row_choices",
                            lambda A, unseen, touch: chosen.append(choices(A, unseen, touch)) or chosen[-1])
        outcomes = []
        solve_reduced = covariance._solve_reduced
        monkeypatch.setattr(covariance, "_solve_reduced",
                            lambda *a: outcomes.append(solve_reduced(*a)) or outcomes[-1])
    trial = damped_trial()
    num_nodes = nodes_per_sample * (trial.num_samples - 1) + 1  # 2: a node between samples (unseen)
    problem = co.Problem(damped_model(), trial, fit={"theta": SIGMA**-2})
    result = co.solve(problem, co.Midpoint(num_nodes=num_nodes), solver=co.Ipopt(print_level=0, tol=1e-12))
    traj = result.trajectories["damped.csv"]
    nodes = traj.index.to_numpy()
    z = np.concatenate([traj["theta"], traj["omega"], [result.parameters["p"], result.parameters["c"]]])
    # constraint Jacobian by central differences of the defects written above
    A = np.empty((2 * (nodes.size - 1), z.size))
    for j in range(z.size):
        step = 1e-6 * max(1.0, abs(z[j]))
        e = np.zeros_like(z)
        e[j] = step
        A[:, j] = (midpoint_defects(z + e, nodes) - midpoint_defects(z - e, nodes)) / (2 * step)
    # fit residuals (θ at the sample nodes − measurement)/σ: a selection matrix
    rows = np.searchsorted(nodes, trial.time)
    Jr = np.zeros((trial.num_samples, z.size))
    Jr[np.arange(trial.num_samples), rows] = 1.0 / SIGMA
    r = (z[rows] - trial["theta"]) / SIGMA
    Z = scipy.linalg.null_space(A)
    reduced = Z.T @ Jr.T @ Jr @ Z
    dof = trial.num_samples - Z.shape[1]
    cov = (r @ r / dof) * (Z @ np.linalg.inv(reduced) @ Z.T)[-2:, -2:]
    got = result.covariance.loc[["p", "c"], ["p", "c"]].to_numpy()
    # the Schur complement K_pp − K_spᵀ K_ss⁻¹ K_sp cancels digits: refined until it stops
    # gaining, every route agrees with the reference to 7.5e-10 (the reference's own error:
    # its A is a central difference); stopped at a backward error of 1e-10, as before, the
    # routes were 1e-6 off (the bias of the δ-shifted system)
    tol = 5e-9
    np.testing.assert_allclose(got, cov, rtol=tol)
    assert result.standard_errors["p"] == pytest.approx(np.sqrt(cov[0, 0]), rel=tol)
    assert result.standard_errors["c"] == pytest.approx(np.sqrt(cov[1, 1]), rel=tol)
    assert result.info["covariance_message"] == ""
    if route == "ordered":  # the structure's order was used, not a fallback
        assert used and all(f is not None for f in used)
    if row_set == "matched" and nodes_per_sample == 2:
        # ω is never measured: one row per unseen variable, fewer than the rows touching them
        first, touching = chosen[0][0], chosen[0][1]
        assert first.size < touching.size
        assert not isinstance(outcomes[0], str), outcomes[0]  # the matched rows were enough


def test_non_identifiable_parameter_gives_nan_and_a_reason():
    m = co.Model("twice")
    x = m.state("x")
    a = m.parameter("a", bounds=(-10, 10), guess=0.5)
    b = m.parameter("b", bounds=(-10, 10), guess=0.5)
    m.set_der(x, -(a + b) * x)  # only a + b is identifiable
    t = np.linspace(0, 2, 41)
    trial = co.Trial(t, {"x": np.exp(-t) + 0.01 * np.random.default_rng(0).standard_normal(t.size)})
    r = co.solve(co.Problem(m, trial, fit={"x": 1e4}), co.Midpoint(), solver=co.Ipopt(print_level=0))
    assert all(np.isnan(v) for v in r.standard_errors.values())
    assert "identifiable" in r.info["covariance_message"]


def test_nine_experiment_semibatch_standard_errors_are_finite():
    trials = [semibatch.load_trial(data_path(*f)) for f in semibatch.DATA_FILES]
    result = co.solve(semibatch.problem(trials), co.Midpoint(num_nodes=241), solver=co.Ipopt(print_level=0),
                      throw=False)
    assert result.solver_status == "Solve_Succeeded"
    se = result.standard_errors
    assert all(np.isfinite(v) and v > 0 for v in se.values()), se
    assert result.info["covariance_message"] == ""
    for name, truth in semibatch.TRUE.items():  # the values the data were made with
        assert abs(result.parameters[name] - truth) < 3 * se[name], (name, result.parameters[name], se[name])
