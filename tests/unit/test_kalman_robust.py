"""Robust (sandwich) standard errors of the Kalman maximum likelihood,
``co.KalmanML(errors="robust")`` and ``colloc.inference.kalman.robust``.

The records are simulated here with NumPy from the exact discretisation of an Ornstein–Uhlenbeck
position (written out, not colloc's); the per-sample likelihood terms are checked against
statsmodels' state-space Kalman filter; and the standard errors against the spread of estimates
over many records, of the right model and of a wrong one (noise with heavy tails, Student's t with
5 degrees of freedom, while the model says Gaussian: the Gaussian likelihood's estimate is still
right, but the model-based standard errors of the noise intensities are too small by about
√((κ − 1)/2) = 2 for the kurtosis κ = 9; White 1982).
"""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.tsa.statespace.kalman_filter import KalmanFilter

import colloc as co
from colloc import kalman
from colloc.inference.kalman.robust import long_run_covariance, politis_bandwidth, sample_nll

DT = 0.01
TRUTH = {"a": 2.0, "q": 0.3, "sigma": 0.01}
P0 = 0.05**2


def ou(dt: float) -> kalman.LinearGaussianModel:
    """x' = −a x + q w (w continuous white noise of unit intensity), y = x + white noise σ."""
    import casadi as ca

    def mats(th):
        return ca.reshape(-th[0], 1, 1), ca.reshape(th[1], 1, 1), ca.DM([[1.0]]), th[2] ** 2

    return kalman.LinearGaussianModel(["a", "q", "sigma"], mats, dt=dt, name="ou", initial_covariance=[[P0]],
                                      noise="continuous")


def exact(theta: dict) -> tuple[float, float]:
    """Φ = e^{−a·dt} and the exact process-noise variance q²(1 − e^{−2a·dt})/(2a)."""
    phi = np.exp(-theta["a"] * DT)
    return phi, theta["q"] ** 2 * (1 - phi**2) / (2 * theta["a"])


def simulate(n: int, seed: int, tails: float | None = None) -> np.ndarray:
    """An OU record with white measurement noise: Gaussian, or (``tails``) both noises Student's t
    with that many degrees of freedom, scaled to the same variance (what the model does not know)."""
    rng = np.random.default_rng(seed)

    def draw(size=None):
        if tails is None:
            return rng.normal(size=size)
        return rng.standard_t(tails, size=size) * np.sqrt((tails - 2) / tails)

    phi, var = exact(TRUTH)
    x = np.empty(n)
    s = rng.normal(0.0, np.sqrt(P0))
    w = draw(n)
    for i in range(n):
        x[i] = s
        s = phi * s + np.sqrt(var) * w[i]
    return x + TRUTH["sigma"] * draw(n)


def problem(y: np.ndarray) -> co.StochasticProblem:
    return co.StochasticProblem(ou, co.Trial(DT * np.arange(y.size), {"x": y}, name="ou"), outputs=["x"],
                                start={"a": 1.0, "q": 0.5, "sigma": 0.02},
                                bounds={"a": (1e-2, 100.0), "q": (1e-3, 10.0), "sigma": (1e-5, 1.0)},
                                physical={"sigma": (True, False)}, name="ou")


def test_per_sample_terms_are_statsmodels_loglikelihood_of_each_observation():
    y = simulate(800, seed=1)
    y[[50, 51, 400]] = np.nan
    thetas = [TRUTH, {"a": 3.0, "q": 0.2, "sigma": 0.02}]
    terms = sample_nll(ou(DT), y[:, None], thetas, missing=True)
    for theta, row in zip(thetas, terms):
        phi, var = exact(theta)
        kf = KalmanFilter(k_endog=1, k_states=1, k_posdef=1)
        kf.bind(y[:, None].copy())
        kf["design"] = np.array([[1.0]])
        kf["obs_cov"] = np.array([[theta["sigma"] ** 2]])
        kf["transition"] = np.array([[phi]])
        kf["selection"] = np.array([[1.0]])
        kf["state_cov"] = np.array([[var]])
        kf.initialize_known(np.zeros(1), np.array([[P0]]))
        kf.tolerance = 0.0  # no switch to a steady-state gain: the exact filter at every sample
        theirs = -kf.loglikeobs()
        assert np.all(row[[50, 51, 400]] == 0.0)  # a missing sample adds nothing
        np.testing.assert_allclose(row, theirs, rtol=1e-10, atol=1e-12)


def test_bartlett_long_run_covariance_of_an_ar1_series_and_the_bandwidth_that_follows_it():
    rng = np.random.default_rng(5)
    n, rho = 20000, 0.8
    x = np.empty(n)
    x[0] = rng.normal()
    for i in range(1, n):
        x[i] = rho * x[i - 1] + np.sqrt(1 - rho**2) * rng.normal()
    L = politis_bandwidth(x[:, None])
    assert 20 < L < 200  # the autocorrelation 0.8^j falls under the band ≈ 0.03 near lag 16
    # the long-run variance of a unit-variance AR(1), per sample: (1 + ρ)/(1 − ρ) = 9
    lrv = long_run_covariance(x[:, None], L)[0, 0] / n
    assert lrv == pytest.approx(9.0, rel=0.2)
    white = rng.normal(size=(n, 1))
    assert politis_bandwidth(white) <= 10
    assert long_run_covariance(white, politis_bandwidth(white))[0, 0] / n == pytest.approx(1.0, rel=0.1)


def _spread(tails: float | None, records: int, n: int) -> dict:
    est, model, robust = [], [], []
    for seed in range(records):
        r = co.solve(problem(simulate(n, seed=100 + seed, tails=tails)), co.KalmanML(errors="robust", free_draws=0),
                     throw=False)
        assert r.success, r.summary()
        info = r.info["robust_standard_errors"]
        est.append([r.parameters[k] for k in TRUTH])
        model.append([info["model_based_standard_errors"][k] for k in TRUTH])
        robust.append([r.standard_errors[k] for k in TRUTH])
    est, model, robust = map(np.asarray, (est, model, robust))
    sd = est.std(axis=0, ddof=1)
    return {k: {"sd": sd[j], "model": float(np.sqrt(np.mean(model[:, j] ** 2))),
                "robust": float(np.sqrt(np.mean(robust[:, j] ** 2)))} for j, k in enumerate(TRUTH)}


@pytest.mark.slow
def test_robust_standard_errors_match_the_spread_of_estimates_where_the_model_based_ones_do_not():
    # the right model: both kinds describe the spread over 40 records
    right = _spread(None, 40, 3000)
    for k, v in right.items():
        assert 0.7 < v["robust"] / v["model"] < 1.3, (k, v)
        assert 0.7 < v["sd"] / v["robust"] < 1.45, (k, v)
    # noise with heavy tails while the model says Gaussian: the noise intensities' estimates spread
    # more than the model-based standard errors say, and the robust ones follow the spread
    wrong = _spread(5.0, 40, 3000)
    worst = max(wrong, key=lambda k: wrong[k]["sd"] / wrong[k]["model"])
    assert wrong[worst]["sd"] / wrong[worst]["model"] > 1.5, wrong
    for k, v in wrong.items():
        assert abs(np.log(v["sd"] / v["robust"])) < abs(np.log(v["sd"] / v["model"])) or \
            abs(np.log(v["sd"] / v["robust"])) < np.log(1.3), (k, v)


def test_the_report_says_which_standard_errors_it_shows():
    y = simulate(3000, seed=7, tails=5.0)
    model = co.solve(problem(y), co.KalmanML(free_draws=0))
    robust = co.solve(problem(y), co.KalmanML(errors="robust", free_draws=0))
    assert model.success and robust.success
    assert "robust_standard_errors" not in model.info
    info = robust.info["robust_standard_errors"]
    for k in TRUTH:
        assert robust.parameters[k] == model.parameters[k]  # the same estimate
        assert info["model_based_standard_errors"][k] == pytest.approx(model.standard_errors[k], rel=1e-12)
        assert robust.standard_errors[k] == pytest.approx(info["standard_errors"][k])
        # the larger of the two, per parameter
        assert robust.standard_errors[k] == pytest.approx(max(info["sandwich_standard_errors"][k],
                                                              model.standard_errors[k]), rel=1e-9)
        assert robust.covariance.loc[k, k] == pytest.approx(robust.standard_errors[k] ** 2)
    assert "sandwich" in robust.info["standard_errors"] and "white" in model.info["standard_errors"]
    # heavy tails: the noise intensities' sandwich is wider than the model-based standard error
    assert info["sandwich_standard_errors"]["q"] > 1.2 * model.standard_errors["q"]
    assert any(n.startswith("standard errors: robust") for n in robust.notes)
    with pytest.raises(co.OptionsError, match="errors='hac'"):
        co.KalmanML(errors="hac")


def test_per_sample_terms_of_two_outputs_with_one_of_them_missing_at_times():
    """x seen by two sensors (noise σ and 2σ); the second misses some samples, the first others."""
    import casadi as ca

    def mats(th):
        return (ca.reshape(-th[0], 1, 1), ca.reshape(th[1], 1, 1), ca.DM([[1.0], [1.0]]),
                ca.diag(ca.vertcat(th[2] ** 2, 4 * th[2] ** 2)))

    model = kalman.LinearGaussianModel(["a", "q", "sigma"], mats, dt=DT, name="ou2", initial_covariance=[[P0]],
                                       noise="continuous")
    rng = np.random.default_rng(3)
    x = simulate(600, seed=3)  # the OU record, with its own noise: the first sensor
    y = np.column_stack([x, x + 2 * TRUTH["sigma"] * rng.normal(size=x.size)])
    y[[10, 11, 300], 1] = np.nan
    y[[12, 500], 0] = np.nan
    y[[400], :] = np.nan
    theta = {"a": 2.5, "q": 0.25, "sigma": 0.012}
    row = sample_nll(model, y, [theta], missing=True)[0]
    phi, var = exact(theta)
    kf = KalmanFilter(k_endog=2, k_states=1, k_posdef=1)
    kf.bind(y.copy())
    kf["design"] = np.array([[1.0], [1.0]])
    kf["obs_cov"] = np.diag([theta["sigma"] ** 2, 4 * theta["sigma"] ** 2])
    kf["transition"] = np.array([[phi]])
    kf["selection"] = np.array([[1.0]])
    kf["state_cov"] = np.array([[var]])
    kf.initialize_known(np.zeros(1), np.array([[P0]]))
    kf.tolerance = 0.0
    np.testing.assert_allclose(row, -kf.loglikeobs(), rtol=1e-10, atol=1e-12)
    assert row[400] == 0.0


def test_the_estimates_share_of_a_predictions_variance_is_the_spread_of_predictions_over_parameter_draws():
    """The delta method (Ansley & Kohn 1986) against draws of the parameters from their covariance,
    each predicted by colloc's own k-step filter (another code path than the batched one)."""
    from colloc.inference.kalman.robust import prediction_variance

    y = simulate(300, seed=9)[:, None]
    model, steps = ou(DT), 20
    theta = {"a": 2.2, "q": 0.28, "sigma": 0.011}
    names = ("a", "q", "sigma")
    sd = np.array([0.02, 0.002, 0.0002])  # small: the means are linear in θ over this spread
    V = np.diag(sd) @ np.array([[1.0, 0.5, 0.0], [0.5, 1.0, -0.3], [0.0, -0.3, 1.0]]) @ np.diag(sd)
    added = prediction_variance(model, y, theta, names, V, steps)[:, 0]
    rng = np.random.default_rng(4)
    draws = rng.multivariate_normal([theta[k] for k in names], V, size=250)
    means = np.array([kalman.k_step_predictions(model, y, dict(zip(names, d)), steps)[0][:, 0] for d in draws])
    spread = means.var(axis=0, ddof=1)
    rows = slice(steps, None)
    # 250 draws: the variance's own sampling error is about √(2/249) ≈ 9 %
    np.testing.assert_allclose(added[rows], spread[rows], rtol=0.25)
    assert np.median(added[rows] / spread[rows]) == pytest.approx(1.0, abs=0.1)


def test_held_after_a_transient_the_terms_are_the_steady_state_likelihoods():
    """``hold_after``: the covariance updated over the first samples and held after (the steady-state
    likelihood the estimator maximises), against a scalar filter written here that does the same;
    held long before the filter settles, so that the two differ from the exact filter's terms."""
    y = simulate(500, seed=12)
    theta = {"a": 2.5, "q": 0.25, "sigma": 0.012}
    phi, var = exact(theta)
    r = theta["sigma"] ** 2

    def held(transient):
        m, p, out = 0.0, P0, []
        for k, yk in enumerate(y):
            s = p + r
            out.append(0.5 * (np.log(2 * np.pi * s) + (yk - m) ** 2 / s))
            gain = phi * p / s
            m = phi * m + gain * (yk - m)
            if k < transient:
                p = phi * p * phi + var - gain * gain * s
        return np.array(out)

    for transient in (3, 40):
        ours = sample_nll(ou(DT), y[:, None], [theta], hold_after=transient)[0]
        np.testing.assert_allclose(ours, held(transient), rtol=1e-10, atol=1e-12)
    assert not np.allclose(held(3), held(len(y)), rtol=1e-6)  # held at 3 samples is not the exact filter
