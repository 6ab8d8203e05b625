"""NLP.residual_values (the post-solve residuals and their Jacobian, block by block) against
the NLP's graph functions ``res`` and ``jac_res`` and against central differences."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc.transcription.collocation import transcribe
from colloc.transcription.nlp import NLP
from colloc_problems import pendulum


@pytest.mark.parametrize("method", [co.Midpoint(), co.Radau(degree=2)], ids=["midpoint", "radau2"])
def test_residual_values_equal_the_graphs_and_differences(method):
    trials = [pendulum.simulate_trial(duration=1.0, seed=s, name=f"t{s}.csv") for s in (0, 1)]
    problem = pendulum.problem(trials)
    layout, blocks, x0, _, _ = transcribe(problem, method)
    nlp = NLP(layout.size, blocks, hessian="exact", objective_scale=1.0, residual_jacobian=True)
    x = x0 + 0.01 * np.random.default_rng(0).standard_normal(x0.size)  # away from the data
    res, jac = nlp.residual_values(x, jacobian=True)
    np.testing.assert_array_equal(res, np.array(nlp.functions["res"](x, nlp.data)).ravel())
    graph = nlp.sparse_value("jac_res", x)
    assert (abs(jac - graph)).max() == 0.0
    assert nlp.residual_values(x)[1] is None
    # an independent check of the Jacobian: central differences of the residuals
    rng = np.random.default_rng(1)
    for j in rng.choice(x.size, size=12, replace=False):
        e = np.zeros_like(x)
        e[j] = 1e-6
        fd = (nlp.residual_values(x + e)[0] - nlp.residual_values(x - e)[0]) / 2e-6
        np.testing.assert_allclose(jac[:, j].toarray().ravel(), fd, rtol=1e-6, atol=1e-6)
