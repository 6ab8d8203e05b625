"""Per-trial fit weights of a hybrid problem (``HybridProblem(trial_weights=...)``): a weight of 2
on a record must give what the record given twice gives (the same estimate and, with the
weights taken as the true 1/σ², the same standard errors), for the fitted states and for an
errors-in-variables input alike.  The records come from the event-driven simulators of
``test_hybrid_user_models`` and ``test_hybrid_inputs`` (SciPy's ``solve_ivp`` with events, not
the library)."""

from __future__ import annotations

import numpy as np
import pytest
import test_hybrid_inputs as pushed  # tests/ is on the path
from test_hybrid_user_models import BALL, SIGMA_H, ball_model, ball_record

import colloc as co


def _drops(copies: bool) -> list[co.Trial]:
    trials = []
    for k, h0 in enumerate((1.2, 0.8)):
        t, h, _ = ball_record(**BALL, h0=h0, duration=2.0)
        y = h + np.random.default_rng(40 + k).normal(0.0, SIGMA_H, t.size)
        trials.append(co.Trial(t, {"h": y}, name=f"drop{k}"))
    if copies:
        trials.append(trials[1].renamed("drop1-again"))
    return trials


def _ball(trials, **options) -> co.HybridProblem:
    seqs = {"drop0": ["flight"] * 4, "drop1": ["flight"] * 5, "drop1-again": ["flight"] * 5}
    return co.HybridProblem(ball_model(), trials, guess={"e": 0.7, "c": 0.02}, bounds={"e": (0, 1), "c": (0, 1)},
                            fit={"h": 1 / SIGMA_H**2}, sequence=[seqs[t.name] for t in trials], **options)


def _same(weighted: co.Result, doubled: co.Result) -> None:
    assert weighted.success and doubled.success
    for name in weighted.parameters:
        assert weighted.parameters[name] == pytest.approx(doubled.parameters[name], rel=1e-6, abs=1e-9)
        assert weighted.standard_errors[name] == pytest.approx(doubled.standard_errors[name], rel=1e-4)


def test_a_weight_of_two_counts_a_record_as_if_it_were_recorded_twice():
    solver = co.Ipopt(absolute_sigma=True)
    weighted = co.solve(_ball(_drops(False), trial_weights={"drop1": 2.0}), co.Radau(degree=3), solver=solver)
    doubled = co.solve(_ball(_drops(True)), co.Radau(degree=3), solver=solver)
    plain = co.solve(_ball(_drops(False)), co.Radau(degree=3), solver=solver)
    _same(weighted, doubled)
    # and the weight does something: the estimate moves and the standard errors shrink
    assert abs(weighted.parameters["e"] - plain.parameters["e"]) > 1e-6
    assert weighted.standard_errors["e"] < plain.standard_errors["e"]
    # the verdict still judges each record's residuals against its declared noise
    assert weighted.fit_verdict["verdict"] == "good"


def test_the_weight_reaches_an_errors_in_variables_input():
    one = pushed.trial(noisy=True, seed=3)
    other = pushed.trial(noisy=True, seed=5).renamed("second")
    options = {"fit": {"h": 1 / pushed.SIGMA_H**2}, "input_noise": {"push": pushed.SIGMA_U}}

    def problem(trials, **more):
        low = []
        for tr in trials:
            h = tr["h"]
            low.append([float(tr.time[i]) for i in range(1, len(h) - 1)
                        if h[i] < 0.05 and h[i] <= h[i - 1] and h[i] <= h[i + 1]])
        return co.HybridProblem(pushed.model(), trials, guess=pushed.GUESS, sequence=[["flight"] * (len(s) + 1)
                                                                                       for s in low],
                                switch_times=low, **options, **more)

    solver = co.Ipopt(absolute_sigma=True)
    weighted = co.solve(problem([one, other], trial_weights={"second": 2.0}), co.Radau(degree=3), solver=solver)
    doubled = co.solve(problem([one, other, other.renamed("second-again")]), co.Radau(degree=3), solver=solver)
    _same(weighted, doubled)


@pytest.mark.parametrize("weights, message", [({"drop9": 2.0}, "no trial named 'drop9'"),
                                              ({"drop1": 0.0}, "weight of trial 'drop1'"),
                                              ({"drop1": float("nan")}, "weight of trial 'drop1'"),
                                              ({"drop1": "2"}, "weight of trial 'drop1'")])
def test_bad_trial_weights_are_refused_by_name(weights, message):
    with pytest.raises(co.ProblemError, match=message):
        _ball(_drops(False), trial_weights=weights)


def test_with_fit_sets_replaces_and_removes_fit_weights_without_touching_the_original():
    problem = _ball(_drops(False), noise={"h": SIGMA_H})
    heavier = problem.with_fit({"h": 4.0})
    assert heavier.fit == {"h": 4.0} and problem.fit == {"h": 1 / SIGMA_H**2}
    heavier.bounds["e"] = (0.5, 0.9)  # the copy's dictionaries are its own
    assert problem.bounds["e"] == (0.0, 1.0)
    with pytest.raises(co.ProblemError, match="'x', which is not a state"):
        problem.with_fit({"v": 1.0, "x": 1.0})
    with pytest.raises(co.ProblemError, match="would hold none of the fitted states"):
        problem.with_fit({"h": 0.0})
    with pytest.raises(co.ProblemError, match="must be finite and >= 0"):
        problem.with_fit({"h": -1.0})
