"""Problem set-up: model/trial agreement, weights, extras, guesses, option errors."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc import OptionsError, ProblemError
from colloc_problems import pendulum


def input_model():
    m = co.Model("driven")
    x = m.state("x")
    u = m.known_input("u")
    r = m.free_input("r")
    k = m.parameter("k", guess=1.0)
    m.set_der(x, -k * x + u + r)
    return m


def trial(name="t.csv", **signals):
    t = np.linspace(0, 1, 11)
    return co.Trial(t, {k: np.full(t.size, v) for k, v in signals.items()}, name=name)


CASES = [
    (lambda: co.Problem(input_model(), trial(x=0.0)), r"trial 't.csv' is missing known input\(s\) u; it has: x"),
    (lambda: co.Problem(input_model(), trial(x=0, u=0), fit={"y": 1.0}), r"fit weight for 'y', which is not a signal of model 'driven'; signals: x, r"),
    (lambda: co.Problem(input_model(), trial(x=0, u=0), fit={"x": -1.0}), r"fit weight of 'x' must be finite and > 0"),
    (lambda: co.Problem(input_model(), trial(u=0)), r"trial 't.csv' contains none of the fitted signals"),
    (lambda: co.Problem(input_model(), [trial(x=0, u=0), trial(x=1, u=0)]), r"trial names must be unique, 't.csv'"),
    (lambda: co.Problem(input_model(), []), r"at least one trial"),
    (lambda: co.Problem(input_model(), [np.zeros(3)]), r"trials\[0\] is a ndarray, expected colloc.Trial"),
    (lambda: co.Problem("model", trial(x=0)), r"needs a colloc.Model, got str"),
]


@pytest.mark.parametrize("make, match", CASES)
def test_problem_errors(make, match):
    with pytest.raises(ProblemError, match=match):
        make()


def test_extras_validate_their_arguments():
    m = input_model()
    prob = co.Problem(m, trial(x=0, u=0))
    x = m.variable("x").symbol
    with pytest.raises(ProblemError, match=r"time 5 s is outside trial 't.csv' \(0 to 1 s\)"):
        prob.add_point_constraint(x, time=5.0, lower=0, upper=0)
    with pytest.raises(ProblemError, match=r"constraint 'c': lower bound > upper bound"):
        prob.add_path_constraint(x, 1.0, 0.0, name="c")
    with pytest.raises(ProblemError, match=r"weight must be > 0"):
        prob.add_regularization(x, 0.0)
    with pytest.raises(ProblemError, match=r"set_guess\('k'\): expected a state or free-input element"):
        prob.set_guess("k", 1.0)
    with pytest.raises(ProblemError, match=r"no trial named 'zz'; trials: t.csv"):
        prob.trial_index("zz")


def test_guess_uses_data_and_differentiates_positions(clean_pendulum_trial):
    prob = pendulum.problem(clean_pendulum_trial)
    t = clean_pendulum_trial.time
    guess = prob.guess_trajectories(0, t)
    np.testing.assert_array_equal(guess["theta"], clean_pendulum_trial["theta"])
    # omega is unmeasured but is θ': initialised by differentiating θ (close to the truth)
    truth = co.simulate(pendulum.model(), [1.0, 0.0], [10.0], t, rtol=1e-10, atol=1e-10).states[:, 1]
    assert np.max(np.abs(guess["omega"] - truth)) < 0.02 * np.ptp(truth)


def test_set_guess_overrides():
    prob = co.Problem(input_model(), trial(x=0, u=0))
    prob.set_guess("r", lambda t: 2 * t)
    np.testing.assert_allclose(prob.guess_trajectories(0, np.array([0.0, 0.5]))["r"], [0.0, 1.0])


OPTION_CASES = [
    (lambda: co.Midpoint(num_nodes=1), r"num_nodes=1\): expected an int >= 2 or None"),
    (lambda: co.Ipopt(hessian="bfgs"), r"hessian='bfgs'\): expected one of exact, gauss-newton, limited-memory"),
    (lambda: co.Ipopt(tol=0.0), r"tol=0.0\): must be > 0"),
    (lambda: co.Ipopt(max_iter=-1), r"max_iter=-1\): must be an integer >= 0"),
]


@pytest.mark.parametrize("make, match", OPTION_CASES)
def test_option_errors(make, match):
    with pytest.raises(OptionsError, match=match):
        make()


def test_solve_rejects_strings_and_unknown_guesses(clean_pendulum_trial):
    prob = pendulum.problem(clean_pendulum_trial)
    with pytest.raises(OptionsError, match=r"expected a method object such as colloc.Midpoint\(\)"):
        co.solve(prob, "midpoint")
    with pytest.raises(OptionsError, match=r"guess for unknown parameter\(s\) q; parameters: p"):
        co.solve(prob, guess={"q": 1.0})
