"""The hybrid fit's standard errors when the elimination that keeps the switching times beside
the parameters fails (:func:`colloc.solving.hybrid.estimate_hybrid`): the parameters' covariance
is taken alone, and the switching times' standard errors are left unknown.  On the pushed ball
of ``test_hybrid_inputs`` (a record of SciPy's ``solve_ivp`` apart from the library), the
failure forced, against the same fit without it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import test_hybrid_inputs as pushed  # tests/ is on the path

import colloc as co
from colloc.inference.covariance import Covariance
from colloc.solving import hybrid as solving


def test_the_parameters_keep_their_standard_errors_when_the_switching_times_spoil_the_elimination(monkeypatch):
    tr = pushed.trial(noisy=True)
    solver = co.Ipopt(simulate=False)
    good = co.solve(pushed.problem(tr, input_noise={"push": pushed.SIGMA_U}), co.Radau(), solver=solver)
    real = solving.parameter_covariance

    def spoiled(jr, res, jg, eq, keep, scale, *args, **kwargs):
        if len(keep) > 2:  # the parameters and the switching times: fails as heel-off's did
            return Covariance(np.full((len(keep), len(keep)), np.nan), 1.0, 1, "reduced Hessian is not positive "
                              "definite; parameters not identifiable", (0, 1))
        return real(jr, res, jg, eq, keep, scale, *args, **kwargs)

    monkeypatch.setattr(solving, "parameter_covariance", spoiled)
    res = co.solve(pushed.problem(tr, input_noise={"push": pushed.SIGMA_U}), co.Radau(), solver=solver)
    assert res.success
    for k in pushed.TRUTH:
        assert res.standard_errors[k] == pytest.approx(good.standard_errors[k], rel=1e-6)
    assert "switching times' standard errors not estimated" in res.info["covariance_note"]
    taus = res.info["phases"]["noisy"]["switch_standard_errors"]
    assert taus and all(math.isnan(v) for v in taus)
    assert all(math.isfinite(v) for v in good.info["phases"]["noisy"]["switch_standard_errors"])
