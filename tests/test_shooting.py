"""Shooting baselines: gradients, agreement with collocation, failure statuses."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

import colloc as co
from colloc import OptionsError
from colloc.shooting.methods import _Shooting
from colloc_problems import pendulum
from colloc_problems import two_link as tl


def central_difference(f, x, h):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def problems_for_gradients():
    a = pendulum.simulate_trial(duration=1.0, theta0=0.8, noise_std=0.02, seed=1, name="a")
    b = pendulum.simulate_trial(duration=1.0, theta0=1.2, noise_std=0.02, seed=2, name="b")
    two = tl.problem([tl.simulate_trial(duration=1.0, seed=s, name=f"t{s}") for s in (1, 2)],
                     errors_in_variables=False)
    return {"pendulum-2-trials": pendulum.problem([a, b]), "two-link-2-trials": two}


@pytest.mark.parametrize("name", ["pendulum-2-trials", "two-link-2-trials"])
@pytest.mark.parametrize("integrator, rtol", [(co.RungeKutta(substeps=2), 1e-6),
                                              (co.Cvodes(rtol=1e-12, atol=1e-12), 1e-5)])
def test_adjoint_and_forward_gradients_match_finite_differences(name, integrator, rtol):
    problem = problems_for_gradients()[name]
    setup = _Shooting(problem, integrator, segments=1)
    rng = np.random.default_rng(0)
    x = setup.x0 * (1 + 0.05 * rng.standard_normal(setup.x0.size))
    if name.startswith("two"):
        x[setup.p_offset:] = tl.K_TRUE.ravel() / setup.scale[setup.p_offset:] * 0.9
    value = setup.J(setup.theta)
    grads = {}
    for strategy in (co.Adjoint(), co.Forward()):
        fn = ca.Function("g", [setup.theta], [strategy.gradient(setup.J, setup.theta, value)])
        grads[strategy.name] = np.array(fn(x)).ravel()
    fd = central_difference(lambda z: float(setup.J(z)), x, 1e-6)
    scale = np.max(np.abs(fd))
    np.testing.assert_allclose(grads["adjoint"], fd, rtol=0, atol=rtol * scale * 10)
    np.testing.assert_allclose(grads["forward"], grads["adjoint"], rtol=0, atol=1e-9 * scale)


def test_shooting_and_collocation_agree_on_clean_data():
    trial = pendulum.simulate_trial(duration=3.0, noise_std=0.0)
    problem = pendulum.problem(trial)
    colloc_fine = co.solve(problem, co.Midpoint(num_nodes=6001), solver=co.Ipopt(simulate=False))
    # CVODES at 1e-8 puts p within 1.5e-6 of the truth (1e-10 gives the same digits at twice the time)
    shooting = co.solve(problem, co.SingleShooting(integrator=co.Cvodes(rtol=1e-8, atol=1e-8)),
                        guess={"p": 9.0})
    multiple = co.solve(problem, co.MultipleShooting(segments=5, integrator=co.Cvodes(rtol=1e-8, atol=1e-8)),
                        guess={"p": 9.0})
    for r in (shooting, multiple):
        assert r.success, r.status
        assert r.parameters["p"] == pytest.approx(colloc_fine.parameters["p"], rel=1e-5)
        assert r.parameters["p"] == pytest.approx(10.0, rel=1e-5)
    # same Result type, same names, trajectories per trial
    assert list(shooting.trajectories[trial.name].columns) == list(colloc_fine.trajectories[trial.name].columns)
    assert shooting.standard_errors["p"] > 0
    assert shooting.info["objective_history"][-1] <= shooting.info["objective_history"][0]


def test_steepest_descent_follows_the_papers_stopping_rule():
    trial = pendulum.simulate_trial(duration=1.5, noise_std=0.0)
    method = co.SingleShooting(optimizer=co.SteepestDescent(rtol=5e-4), integrator=co.RungeKutta(2))
    r = co.solve(pendulum.problem(trial), method, guess={"p": 9.0})
    assert r.success and r.status == "converged" and "0.05%" in r.message
    assert abs(r.parameters["p"] / 10 - 1) < 1e-2
    assert r.model_evaluation == ("interpreted (shooting runs it inside CasADi's RungeKutta integrator, "
                                  "whose graphs are not compiled)")
    hist = r.info["objective_history"]
    assert all(b <= a for a, b in zip(hist, hist[1:]))  # monotone decrease (Armijo)


def blow_up_problem():
    m = co.Model("blowup")
    x = m.state("x")
    p = m.parameter("p", bounds=(0.0, 10.0), guess=5.0)
    m.set_der(x, p * x**2)  # finite-time blow-up at t = 1/(p x0)
    t = np.linspace(0, 1, 51)
    trial = co.Trial(t, {"x": 1.0 / (1.0 - 0.5 * t)}, name="blow")  # p = 0.5 truth, x0 = 1
    return co.Problem(m, trial)


@pytest.mark.parametrize("method", [co.SingleShooting(), co.SingleShooting(optimizer=co.SteepestDescent()),
                                    co.SingleShooting(optimizer=co.ReducedIpopt())])
def test_diverging_simulation_ends_with_a_named_status(method):
    result = co.solve(blow_up_problem(), method, throw=False)  # start p = 5 blows up at t = 0.2
    assert not result.success
    assert result.status == "simulation_failed"
    assert "cannot be simulated" in result.message
    with pytest.raises(co.SolveFailed, match=r"simulation_failed"):
        co.solve(blow_up_problem(), method)


def test_unstable_open_loop_start_does_not_crash():
    trial = tl.simulate_trial(duration=3.0, seed=4)
    problem = tl.problem(trial, errors_in_variables=False)
    result = co.solve(problem, co.SingleShooting(integrator=co.RungeKutta(2)), throw=False)  # K0 = 0
    assert isinstance(result.status, str) and result.status
    assert np.all(np.isfinite(list(result.parameters.values())))


def test_shooting_refuses_constraints_it_cannot_honour():
    problem = pendulum.problem(pendulum.simulate_trial(duration=1.0))
    problem.add_path_constraint(problem.model.variable("theta").symbol, -2, 2, name="range")
    with pytest.raises(OptionsError, match=r"path constraint 'range'.*use a collocation transcription"):
        co.solve(problem, co.SingleShooting())
    with pytest.raises(OptionsError, match=r"segments=0"):
        co.MultipleShooting(segments=0)
    with pytest.raises(OptionsError, match=r"substeps=0"):
        co.RungeKutta(substeps=0)


def test_shooting_reports_progress_like_collocation():
    seen = []
    problem = pendulum.problem(pendulum.simulate_trial(duration=1.0))
    result = co.solve(problem, co.SingleShooting(integrator=co.RungeKutta(2)), guess={"p": 9.0},
                      progress=seen.append)
    assert [s.iteration for s in seen] == list(range(result.iterations + 1))
    assert seen[-1].objective <= seen[0].objective
