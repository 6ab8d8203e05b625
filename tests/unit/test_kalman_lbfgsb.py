"""The L-BFGS-B + Newton path of the Kalman ML (``optimizer="lbfgsb"``): the same estimate as
IPOPT with the exact AD Hessian, from a poor guess, and difference Hessians that agree with
the AD Hessian."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc.inference.kalman import maximum_likelihood, negative_log_likelihood
from colloc.inference.kalman.estimation import _gradient_function, _hessian_by_differences, _steps
from colloc_problems import cip

RATE = 100.0  # a force plate's rate, as users record


@pytest.fixture(scope="module")
def record():
    # the problem module's exact ZOH generator (scipy expm, its own code path), 20 s, COP noise
    trial = cip.simulate_trial(cip.TRUE, duration=20.0, rate=RATE, seed=4, cop_noise=2e-4)
    return trial["cop"] - 0.0


# the gradient of the delay τ carries rounding noise (the Padé states): two exact reverse sweeps
# of the same filter that sum in different orders (the compiled gradient's flat sweep, and CasADi's
# nested one inside the AD Hessian) differ there by ~1e-5 of that entry, 1e-10 of the largest
@pytest.mark.parametrize("controller, tolerance, gradient_atol", [("PID", 1e-7, 1e-12), ("PID-delay", 1e-3, 1e-9)])
def test_difference_hessian_matches_the_ad_hessian(record, controller, tolerance, gradient_atol):
    lgm = cip.ml_model(controller, dt=1 / RATE, fit_disturbance=True)
    values = {**cip.TRUE, "tau": 0.12, "A": 900.0, "B": 60.0, "sigma": 2e-4}
    theta = lgm.parameter_vector({k: values[k] for k in lgm.parameter_names})
    y = record[:500, None]
    f_ad, g_ad, H_ad = negative_log_likelihood(lgm, y, theta, hessian=True)
    grad = _gradient_function(lgm, y.shape[0], lgm.squarings(theta), False)
    f, g, H = _hessian_by_differences(grad, theta, lgm.observed(y.T), _steps(theta, range(theta.size), np.ones(theta.size)))
    assert f == pytest.approx(f_ad, rel=1e-13)
    np.testing.assert_allclose(g, g_ad, rtol=1e-9, atol=gradient_atol * np.abs(g_ad).max())
    # relative to each entry's natural size sqrt(|H_ii H_jj|)
    size = np.sqrt(np.outer(np.abs(np.diag(H_ad)), np.abs(np.diag(H_ad))))
    assert np.abs((H - H_ad) / size).max() < tolerance
    # the standard errors' central differences and the Newton steps' forward ones: less accurate,
    # still far below what a standard error (or a Newton step) needs
    steps = _steps(theta, range(theta.size), np.ones(theta.size))
    for kind, limit in (("central", max(tolerance, 1e-4)), ("forward", 3e-2)):
        H_kind = _hessian_by_differences(grad, theta, lgm.observed(y.T), steps, kind)[2]
        assert np.abs((H_kind - H_ad) / size).max() < limit, kind


@pytest.mark.slow  # 39 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_lbfgsb_reaches_the_ipopt_estimate_from_a_poor_guess(record):
    trial = co.Trial(np.arange(1000) / RATE, {"cop": record[:1000]})
    poor = {"KP": 2500.0, "KI": 5.0, "KD": 60.0}  # far from the truth (1180, 40, 245)
    kw = dict(cop_noise=None, gains0=poor, bounds="wide", fit_disturbance=True, center=True)
    fast = cip.ml_estimate(trial, optimizer="lbfgsb", compiled=False, **kw)
    ref = cip.ml_estimate(trial, optimizer="ipopt", hessian="exact", **kw)
    assert fast.success and ref.success, (fast.message, ref.message)
    assert fast.nll == pytest.approx(ref.nll, rel=1e-9, abs=1e-6)
    for k, v in ref.parameters.items():
        assert fast.parameters[k] == pytest.approx(v, rel=1e-3), k
    for k, v in ref.standard_errors.items():
        assert fast.standard_errors[k] == pytest.approx(v, rel=1e-3), k
    for k in cip.GAINS:  # and the truth within 3 standard errors
        assert abs(fast.parameters[k] - cip.TRUE[k]) < 3 * fast.standard_errors[k], k


def test_a_parameter_on_its_bound_gets_no_standard_error_and_the_others_do(record):
    trial = co.Trial(np.arange(record.size) / RATE, {"cop": record})
    # KI held below its truth by an upper bound: it ends on the bound
    fit = cip.ml_estimate(trial, cop_noise=None, bounds={"KP": (600, 3000), "KI": (0.0, 5.0), "KD": (50, 600)},
                          compiled=False)
    assert "KI" in fit.active_bounds
    assert np.isnan(fit.standard_errors["KI"])
    assert all(np.isfinite(fit.standard_errors[k]) for k in ("KP", "KD", "sigma"))


def test_unknown_optimizer_is_refused(record):
    lgm = cip.ml_model("PID", dt=1 / RATE)
    with pytest.raises(co.CollocInputError, match="optimizer"):
        maximum_likelihood(lgm, record, [1100.0, 20.0, 250.0, 1e-4], optimizer="newton")


def test_a_newton_step_hidden_by_the_nlls_evaluation_noise_is_taken_when_the_gradient_confirms_it():
    """The sway models' NLL carries evaluation noise of ~1e-8 of its size (``NOISE_RTOL``) while its
    gradient is smooth.  Here a quadratic of size 8.4e4 whose value is raised by 2e-3 (below the
    tolerance 1e-7·|NLL| = 8.4e-3) everywhere but at the start: the exact Newton step, 0.002 nats
    down, looks like a rise; it is taken because the gradient there is zero, and the optimum reached.
    A step whose NLL rises beyond the noise is still refused."""
    from colloc.inference.kalman.estimation import NOISE_RTOL, _newton_polish

    H = np.array([[4.0, 1.0], [1.0, 0.5]])
    z0 = np.linalg.solve(H, np.array([0.06, 0.1])) * 0.5  # a decrement of a few millinats
    decrement = 0.5 * z0 @ H @ z0
    assert 1e-3 < decrement < 0.01

    def polish(bump):
        def fun(z):
            f = -8.4e4 + 0.5 * z @ H @ z + (0.0 if np.array_equal(z, z0) else bump)
            return f, H @ z

        def hessian(theta):
            return fun(theta)[0], H @ theta, H
        return _newton_polish(hessian, lambda z: z.copy(), fun, z0.copy(), np.arange(2), lambda z: np.ones(2),
                              np.zeros(2, bool), np.full(2, -10.0), np.full(2, 10.0))

    assert 2e-3 < NOISE_RTOL * 8.4e4
    z, steps, saddle, converged = polish(2e-3)
    assert steps >= 1 and converged and not saddle
    np.testing.assert_allclose(z, 0.0, atol=1e-12)
    z, steps, saddle, converged = polish(5 * NOISE_RTOL * 8.4e4)  # a real rise: refused, not converged
    assert steps == 0 and not converged and np.array_equal(z, z0)


def test_a_newton_step_hidden_by_noise_measured_above_the_tolerance_is_taken_when_the_gradient_confirms_it():
    """Where the NLL's evaluation noise is larger than ``NOISE_RTOL`` of it (BDS00012's whole record,
    PD-delay: SD 0.02 nats at |NLL| 8.4e4, against 0.0084), the noise is measured at the point
    (``_evaluation_noise``) and a step whose rise stays within three times it is taken when the
    gradient confirms it.  Here the noise is a fixed pseudo-random function of the point with SD
    0.02, and the optimum's value is raised by 0.03 (a rise of 0.018 over the start, twice the
    tolerance); with every value but the start's raised by 0.3, far beyond the noise, no step is
    taken."""
    from colloc.inference.kalman.estimation import NOISE_RTOL, _evaluation_noise, _newton_polish

    H = np.array([[4.0, 1.0], [1.0, 0.5]])
    z0 = np.linalg.solve(H, np.array([0.06, 0.1])) * 0.9
    decrement = 0.5 * z0 @ H @ z0
    assert 0.01 < decrement < 0.02  # above what the caller accepts as converged (0.005)

    def noise(z):
        seed = int.from_bytes(np.asarray(z, dtype=float).tobytes()[-8:], "little") % (2**32)
        return 0.02 * np.random.default_rng(seed).standard_normal()

    def polish(at_optimum, rise_elsewhere=0.0):
        def fun(z):
            bump = 0.0 if np.array_equal(z, z0) else at_optimum if not np.any(z) else noise(z) + rise_elsewhere
            return -8.4e4 + 0.5 * z @ H @ z + bump, H @ z

        def hessian(theta):
            return fun(theta)[0], H @ theta, H
        return fun, _newton_polish(hessian, lambda z: z.copy(), fun, z0.copy(), np.arange(2), lambda z: np.ones(2),
                                   np.zeros(2, bool), np.full(2, -10.0), np.full(2, 10.0))

    rise = 0.03 - decrement
    assert NOISE_RTOL * 8.4e4 < rise
    fun, (z, steps, saddle, converged) = polish(0.03)
    measured = _evaluation_noise(fun, z0, fun(z0)[0], H @ z0, np.full(2, -10.0), np.full(2, 10.0))
    assert 0.01 < measured < 0.04 and rise < 3 * measured
    assert steps == 1 and converged and not saddle
    np.testing.assert_allclose(z, 0.0, atol=1e-12)
    _, (z, steps, saddle, converged) = polish(0.3, 0.3)  # the noise as before, on a real rise
    assert steps == 0 and not converged and np.array_equal(z, z0)


def test_negative_curvature_of_the_cheap_hessian_is_confirmed_by_the_fine_one_before_a_saddle_step():
    """In a narrow ridge the forward-difference Hessian can be indefinite where the likelihood is not
    (BDS00010's whole record, PD-delay): the fine Hessian decides.  Here the cheap one has a negative
    eigenvalue and the fine one is the quadratic's own: the Newton step is taken and the optimum
    reached, no saddle reported.  Where the fine one agrees that the curvature is negative, the
    saddle step is taken as before."""
    from colloc.inference.kalman.estimation import _newton_polish

    H = np.array([[4.0, 1.0], [1.0, 0.5]])
    bad = np.array([[4.0, 1.0], [1.0, -0.5]])
    z0 = np.array([0.3, -0.2])

    def fun(z):
        return -8.4e4 + 0.5 * z @ H @ z, H @ z

    def polish(fine):
        return _newton_polish(lambda th: (fun(th)[0], H @ th, bad), lambda z: z.copy(), fun, z0.copy(),
                              np.arange(2), lambda z: np.ones(2), np.zeros(2, bool), np.full(2, -10.0),
                              np.full(2, 10.0), fine_hessian=lambda th: (fun(th)[0], H @ th, fine))

    z, steps, saddle, converged = polish(H)
    assert steps >= 1 and converged and not saddle
    np.testing.assert_allclose(z, 0.0, atol=1e-12)
    z, steps, saddle, converged = polish(bad)
    assert saddle and not converged and fun(z)[0] < fun(z0)[0]


def _ou_with_stationary_start():
    """An OU process seen in white noise, x' = −a·x + q·w, y = x + s·v, whose first state has the
    stationary variance q²/(2a): no likelihood for a ≤ 0.  Simulated here by its exact AR(1)."""
    import casadi as ca

    from colloc.inference.kalman import LinearGaussianModel

    def matrices(th):
        return ca.reshape(-th[0], 1, 1), ca.reshape(th[1], 1, 1), ca.DM.ones(1, 1), ca.reshape(th[2] ** 2, 1, 1)

    model = LinearGaussianModel(["a", "q", "s"], matrices, dt=0.1, name="ou_stationary", noise="continuous",
                                initial_covariance=lambda th: ca.reshape(th[1] ** 2 / (2 * th[0]), 1, 1))
    rng = np.random.default_rng(3)
    a, q, s, dt, n = 0.05, 1.0, 0.3, 0.1, 3000
    phi = np.exp(-a * dt)
    x = np.empty(n)
    x[0] = rng.normal(0.0, np.sqrt(q**2 / (2 * a)))
    for k in range(1, n):
        x[k] = phi * x[k - 1] + rng.normal(0.0, np.sqrt(q**2 / (2 * a) * (1 - phi**2)))
    return model, x + s * rng.normal(size=n)


@pytest.mark.parametrize("a0", [1.0, 4.0])
def test_a_search_whose_first_step_leaves_the_likelihoods_domain_steps_back(a0):
    # the first L-BFGS-B step (unit length in a/a0) crosses a = 0, where there is no likelihood; a
    # search given a huge value with a zero gradient there ended where it began (on BDS00010's first
    # 57.5 s, two of the three starts of PD-delay did): it must take a shorter step instead
    model, y = _ou_with_stationary_start()
    assert not np.isfinite(negative_log_likelihood(model, y[:, None], np.array([-0.2, 1.0, 0.3])))
    kw = dict(bounds={"a": (-1.0, 5.0), "q": (1e-3, 10.0), "s": (1e-3, 10.0)}, optimizer="lbfgsb", compiled=False)
    near = maximum_likelihood(model, y, {"a": 0.05, "q": 1.0, "s": 0.3}, **kw)
    far = maximum_likelihood(model, y, {"a": a0, "q": 1.0, "s": 0.3}, search_only=True, **kw)
    assert near.success
    assert 0.02 < near.parameters["a"] < 0.1  # the simulated 0.05
    assert far.nll == pytest.approx(near.nll, abs=1e-3)
    assert far.parameters["a"] == pytest.approx(near.parameters["a"], rel=1e-2)
