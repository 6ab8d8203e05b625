"""Parametric bootstrap: replicate spread agrees with the Gauss–Newton standard error."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc import OptionsError
from colloc_problems import pendulum


def test_bootstrap_matches_gauss_newton_on_the_pendulum():
    trial = pendulum.simulate_trial(duration=5.0, noise_std=0.05, seed=8, name="b.csv")
    problem = pendulum.problem(trial)
    result = co.solve(problem, co.Midpoint(), solver=co.Ipopt(simulate=False))
    calls = []
    boot = co.bootstrap(problem, result, co.Midpoint(), replicates=30, seed=1,
                        progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (30, 30) and boot.failures == 0
    assert boot.estimates.shape == (30, 1)
    ratio = boot.standard_errors["p"] / result.standard_errors["p"]
    # 30 replicates: the sample standard deviation is within ±35 % of the truth at ~95 %
    assert 0.65 < ratio < 1.35
    lo, hi = boot.intervals["p"]
    assert lo < result.parameters["p"] < hi
    assert abs(boot.bias["p"]) < 3 * result.standard_errors["p"]
    table = boot.table(result)
    assert list(table.columns) == ["estimate", "se_gauss_newton", "se_bootstrap", "ratio", "lower", "upper"]
    # seeded: the same seed gives the same replicates
    again = co.bootstrap(problem, result, co.Midpoint(), replicates=3, seed=1)
    np.testing.assert_array_equal(again.estimates.to_numpy(), boot.estimates.to_numpy()[:3])


def test_bootstrap_keeps_errors_in_variables_and_extra_terms():
    from colloc_problems import two_link as tl

    trial = tl.simulate_trial(duration=5.0, seed=3)
    problem = tl.problem(trial)
    copy = problem.with_trials([trial])
    assert copy.input_noise == problem.input_noise and copy.fit == problem.fit
    result = co.solve(problem, co.Midpoint(), solver=co.Ipopt(simulate=False))
    boot = co.bootstrap(problem, result, replicates=3, seed=0)
    assert boot.failures == 0 and set(boot.standard_errors) == set(tl.TRUE)


@pytest.mark.parametrize("kwargs, match", [({"replicates": 1}, r"need at least 2"),
                                           ({"level": 1.5}, r"must be between 0 and 1")])
def test_bootstrap_rejects_bad_options(kwargs, match, clean_pendulum_trial):
    problem = pendulum.problem(clean_pendulum_trial)
    result = co.solve(problem, co.Midpoint(), solver=co.Ipopt(simulate=False))
    with pytest.raises(OptionsError, match=match):
        co.bootstrap(problem, result, **kwargs)


def _eight_trials():
    return [pendulum.simulate_trial(duration=2.0, theta0=0.4 + 0.1 * k, noise_std=0.05, seed=20 + k,
                                    name=f"t{k}.csv") for k in range(8)]


@pytest.mark.slow  # 48 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_trial_bootstrap_spread_matches_the_between_trial_spread():
    trials = _eight_trials()
    quiet = co.Ipopt(print_level=0, simulate=False)
    # independent reference: each trial alone.  The pooled estimate is about the information-
    # weighted mean of the single-trial estimates; resampling trials gives it the spread
    # √(Σ I_k² (p_k − p̄)²) / Σ I_k (I_k = 1/SE_k², the sandwich form of the between-trial spread)
    fits = [co.solve(pendulum.problem(t), co.Midpoint(), solver=quiet) for t in trials]
    p_k = np.array([f.parameters["p"] for f in fits])
    info = np.array([f.standard_errors["p"] ** -2 for f in fits])
    p_bar = info @ p_k / info.sum()
    expected = np.sqrt(np.sum(info**2 * (p_k - p_bar) ** 2)) / info.sum()
    problem = pendulum.problem(trials)
    result = co.solve(problem, co.Midpoint(), solver=quiet)
    boot = co.bootstrap(problem, result, co.Midpoint(), replicates=40, seed=2, kind="trials")
    assert boot.kind == "trials" and boot.failures == 0 and boot.estimates.shape == (40, 1)
    ratio = boot.standard_errors["p"] / expected
    assert 0.6 < ratio < 1.6, (boot.standard_errors["p"], expected)
    again = co.bootstrap(problem, result, co.Midpoint(), replicates=4, seed=2, kind="trials")
    np.testing.assert_array_equal(again.estimates.to_numpy(), boot.estimates.to_numpy()[:4])
    other = co.bootstrap(problem, result, co.Midpoint(), replicates=4, seed=3, kind="trials")
    assert not np.array_equal(other.estimates.to_numpy(), again.estimates.to_numpy())


def test_bootstrap_kind_is_checked():
    trial = pendulum.simulate_trial(duration=2.0, noise_std=0.05, seed=1)
    problem = pendulum.problem(trial)
    result = co.solve(problem, co.Midpoint(), solver=co.Ipopt(print_level=0, simulate=False))
    with pytest.raises(OptionsError, match=r"bootstrap\(kind='residual'\): expected one of 'parametric', 'trials'"):
        co.bootstrap(problem, result, kind="residual")
    with pytest.raises(OptionsError, match=r"kind='trials'.*has 1, need at least 2"):
        co.bootstrap(problem, result, kind="trials")
