"""Per-trial fit weights and resampled problems."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc_problems import pendulum

QUIET = co.Ipopt(print_level=0)


def two_trials():
    a = pendulum.simulate_trial(duration=3.0, theta0=0.5, noise_std=0.05, seed=3, name="a.csv")
    b = pendulum.simulate_trial(duration=3.0, theta0=1.2, noise_std=0.05, seed=4, name="b.csv")
    return a, b


def test_weight_two_equals_the_trial_twice():
    a, b = two_trials()
    model = pendulum.model()
    weighted = co.solve(co.Problem(model, [a, b], fit={"theta": 400.0}, trial_weights={"a.csv": 2.0}),
                        solver=QUIET)
    a2 = co.Trial(a.time, a.signals, name="a2.csv")
    doubled = co.solve(co.Problem(model, [a, a2, b], fit={"theta": 400.0}), solver=QUIET)
    plain = co.solve(co.Problem(model, [a, b], fit={"theta": 400.0}), solver=QUIET)
    assert weighted.parameters["p"] == pytest.approx(doubled.parameters["p"], rel=1e-8)
    assert weighted.objective == pytest.approx(doubled.objective, rel=1e-8)
    assert abs(weighted.parameters["p"] - plain.parameters["p"]) > 1e-5  # the weight matters
    # the residuals reported are unweighted model − measurement, the same in both
    np.testing.assert_allclose(weighted.residuals["a.csv"]["theta"], doubled.residuals["a.csv"]["theta"],
                               atol=1e-8)
    # the verdict compares with the declared noise (1/σ² = 400), not with the trial weight
    assert 0.7 < weighted.fit_verdict["signals"]["theta"]["chi2_red"] < 1.3


def test_weight_applies_to_shooting_too():
    a = pendulum.simulate_trial(duration=1.0, theta0=0.5, noise_std=0.05, seed=3, name="a.csv")
    b = pendulum.simulate_trial(duration=1.0, theta0=1.2, noise_std=0.05, seed=4, name="b.csv")
    method = co.SingleShooting(integrator=co.RungeKutta(substeps=2))
    weighted = co.solve(co.Problem(pendulum.model(), [a, b], fit={"theta": 400.0}, trial_weights={"b.csv": 2.0}),
                        method, solver=co.Ipopt(print_level=0, standard_errors=False), guess={"p": 9.0})
    b2 = co.Trial(b.time, b.signals, name="b2.csv")
    doubled = co.solve(co.Problem(pendulum.model(), [a, b, b2], fit={"theta": 400.0}), method,
                       solver=co.Ipopt(print_level=0, standard_errors=False), guess={"p": 9.0})
    assert weighted.parameters["p"] == pytest.approx(doubled.parameters["p"], rel=1e-6)
    plain = co.solve(co.Problem(pendulum.model(), [a, b], fit={"theta": 400.0}), method,
                     solver=co.Ipopt(print_level=0, standard_errors=False), guess={"p": 9.0})
    assert abs(plain.parameters["p"] / weighted.parameters["p"] - 1) > 1e-4  # the weight matters


def test_unknown_trial_names_are_refused_by_name():
    a, b = two_trials()
    with pytest.raises(co.ProblemError, match=r"trial_weights for unknown trial\(s\) 'c.csv', 'd.csv'; trials: a.csv, b.csv"):
        co.Problem(pendulum.model(), [a, b], trial_weights={"c.csv": 2.0, "a.csv": 1.0, "d.csv": 3.0})


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "2"])
def test_bad_trial_weight_is_refused(bad):
    a, b = two_trials()
    with pytest.raises(co.ProblemError, match=r"trial_weights\['a.csv'\] must be a finite number > 0"):
        co.Problem(pendulum.model(), [a, b], trial_weights={"a.csv": bad})


def test_weights_follow_the_trials_into_copies_and_resamples():
    a, b = two_trials()
    problem = co.Problem(pendulum.model(), [a, b], fit={"theta": 400.0}, trial_weights={"a.csv": 3.0})
    problem.add_point_constraint(problem.model.variable("omega").symbol, 0.0, 0.0, 0.0, trial=1, name="rest")
    again = problem.resampled([1, 0, 0])
    assert [t.name for t in again.trials] == ["b.csv", "a.csv", "a.csv#2"]
    assert again.trial_weights == {"b.csv": 1.0, "a.csv": 3.0, "a.csv#2": 3.0}
    assert [(t.name, t.trial) for t in again.terms] == [("rest", 0)]  # follows trial b to position 0
    assert problem.copy().trial_weights == problem.trial_weights
    with pytest.raises(co.ProblemError, match="indices in 0..1"):
        problem.resampled([0, 2])
