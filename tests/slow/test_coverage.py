"""Statistical check of the standard errors (slow: run with `python -m pytest -m slow`)."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc_problems import pendulum


@pytest.mark.slow
def test_standard_error_covers_truth_in_at_least_90_percent_of_20_seeds():
    covered, errors = 0, []
    for seed in range(20):
        trial = pendulum.simulate_trial(noise_std=0.05, seed=100 + seed, name=f"seed{seed}")
        result = co.solve(pendulum.problem(trial), co.Midpoint(num_nodes=4001),
                          solver=co.Ipopt(simulate=False))
        p, se = result.parameters["p"], result.standard_errors["p"]
        errors.append(p / 10 - 1)
        assert abs(p / 10 - 1) < 0.01
        covered += abs(p - 10) <= 1.96 * se
    assert covered >= 18, f"95% interval covered the truth in {covered}/20 seeds"
    # the spread of the estimates agrees with the reported standard error (within 50%)
    assert 0.5 < np.std(errors) * 10 / se < 1.5
