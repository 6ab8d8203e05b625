"""Exact ML for linear-Gaussian state-space models: discretisation, likelihood, derivatives, recovery."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import scipy.linalg as sla

import colloc as co
from colloc import CollocInputError, DataError, ModelError
from colloc.inference.kalman import (
    LinearGaussianModel,
    MLResult,
    expm,
    expm_squarings,
    expm_squarings_for,
    maximum_likelihood,
    negative_log_likelihood,
    simulate,
)

# -- models -----------------------------------------------------------------------------------

# controlled inverted pendulum (Barauskas & Krušinskienė 2007), SI units
INERTIA, MASS, HEIGHT, GRAVITY, A_D, B_D = 76.0, 60.0, 0.87, 9.81, 1000.0, 80.0
CIP_NAMES = ["KP", "KI", "KD", "sigma"]
CIP_TRUE = np.array([1117.27, 14.32, 257.83, 1e-4])
CIP_BOUNDS = {"sigma": (1e-9, None)}


def cip_matrices(theta):
    """State [u, v, w, Td]: sway angle, angular velocity, ∫u, disturbance torque; output CoP (m)."""
    kp, ki, kd, sigma = theta[0], theta[1], theta[2], theta[3]
    mgh = MASS * GRAVITY * HEIGHT
    A = ca.vertcat(
        ca.horzcat(0, 1, 0, 0),
        ca.horzcat((mgh - kp) / INERTIA, -kd / INERTIA, -ki / INERTIA, 1 / INERTIA),
        ca.horzcat(1, 0, 0, 0),
        ca.horzcat(0, 0, 0, -1 / B_D),
    )
    G = ca.vertcat(0, 0, 0, A_D / B_D)
    C = ca.horzcat(kp, kd, ki, -1) / (MASS * GRAVITY)
    return A, G, C, sigma**2


OSC_NAMES = ["omega", "zeta", "b", "d", "r1", "r2", "p0"]
OSC_TRUE = np.array([6.0, 0.15, 2.0, 0.7, 0.05, 0.2, 0.3])


def oscillator_matrices(theta):
    """Two states, two inputs, two outputs, and feedthrough D: the noises are correlated."""
    w, z, b, d, r1, r2 = theta[0], theta[1], theta[2], theta[3], theta[4], theta[5]
    A = ca.vertcat(ca.horzcat(0, 1), ca.horzcat(-w**2, -2 * z * w))
    G = ca.vertcat(ca.horzcat(0.3, 0), ca.horzcat(0, b))
    C = ca.DM([[1.0, 0.0], [0.2, 1.0]])
    R = ca.diag(ca.vertcat(r1**2, r2**2))
    D = ca.vertcat(ca.horzcat(0, 0), ca.horzcat(0.5, d))
    return A, G, C, R, D


def oscillator_m0(theta):
    return ca.vertcat(theta[2], 0)


def oscillator_p0(theta):
    return theta[6] ** 2 * ca.DM([[1.0, 0.3], [0.3, 2.0]])


@pytest.fixture(scope="module")
def cip():
    return LinearGaussianModel(CIP_NAMES, cip_matrices, dt=0.01, name="cip")


@pytest.fixture(scope="module")
def cip_uncertain_start():
    """CIP with a non-zero initial mean and a full initial covariance."""
    P0 = np.diag([1e-4, 1e-3, 1e-5, 4.0])
    P0[0, 1] = P0[1, 0] = 2e-4
    return LinearGaussianModel(CIP_NAMES, cip_matrices, dt=0.01, initial_mean=[0.01, -0.02, 0.0, 3.0],
                               initial_covariance=P0, name="cip0")


@pytest.fixture(scope="module")
def oscillator():
    return LinearGaussianModel(OSC_NAMES, oscillator_matrices, dt=0.05, initial_mean=oscillator_m0,
                               initial_covariance=oscillator_p0, name="osc")


def dense_moments(model, theta, N):
    """Mean and covariance of the stacked record ``(y_0, …, y_{N-1})``, built explicitly."""
    d = model.discretize(theta)
    Phi, Gam, C, D, R, m0, P0 = (d[k] for k in ["Phi", "Gamma", "C", "D", "R", "m0", "P0"])
    p = C.shape[0]
    n, q = Gam.shape
    powers = [np.eye(n)]
    for _ in range(N):
        powers.append(Phi @ powers[-1])
    H = np.vstack([C @ powers[k] for k in range(N)])  # y from s_0
    J = np.zeros((N * p, N * q))  # y from x_0 … x_{N-1}
    for k in range(N):
        for j in range(k):
            J[k * p:(k + 1) * p, j * q:(j + 1) * q] = C @ powers[k - 1 - j] @ Gam
        J[k * p:(k + 1) * p, k * q:(k + 1) * q] = D
    return H @ m0, H @ P0 @ H.T + J @ J.T + np.kron(np.eye(N), R)


def dense_nll(model, y, theta):
    """The Gaussian NLL of the measured values of a record (NaN: not measured), from the dense
    mean and covariance of the stacked record: the marginal of the measured entries."""
    y = np.asarray(y, float).reshape(len(y), -1)
    mean, cov = dense_moments(model, theta, len(y))
    keep = np.isfinite(y.ravel())
    mean, cov = mean[keep], cov[np.ix_(keep, keep)]
    r = y.ravel()[keep] - mean
    factor = sla.cho_factor(cov, lower=True)
    logdet = 2.0 * np.sum(np.log(np.diag(factor[0])))
    return 0.5 * (logdet + r @ sla.cho_solve(factor, r) + keep.sum() * np.log(2 * np.pi))


# -- matrix exponential and discretisation ----------------------------------------------------


@pytest.mark.parametrize("norm", [1e-3, 0.5, 5.0, 40.0, 600.0])
def test_expm_matches_scipy(norm):
    rng = np.random.default_rng(int(norm * 1000))
    M = rng.standard_normal((5, 5))
    M *= norm / np.abs(M).sum(axis=0).max()
    s = expm_squarings(norm)
    assert s == (0 if norm <= 5.37 else int(np.ceil(np.log2(norm / 5.371920351148152))))
    expected = sla.expm(M)
    got = np.array(expm(ca.DM(M), s))
    assert np.max(np.abs(got - expected)) <= 1e-13 * max(1.0, np.max(np.abs(expected))) * max(1, 2**s)
    # the symbolic version is the same expression
    X = ca.SX.sym("X", 5, 5)
    f = ca.Function("e", [X], [expm(X, s)])
    np.testing.assert_allclose(np.array(f(M)), got, rtol=1e-12, atol=1e-14 * np.max(np.abs(expected)))


def test_squarings_from_the_norms_of_powers_are_fewer_and_more_accurate_on_a_sway_model():
    """The real-subject PD-delay sway model (a low-pass and a Padé delay in companion form, far from
    normal) at a stiff-family point: ‖A dt‖₁ asks for 17 squarings, the norms of its powers
    (Al-Mohy & Higham 2009) for one, and Φ is then 1.7e-10 of its largest entry from a 30-digit
    exponential instead of 5.3e-7 (each squaring multiplies the rounding)."""
    import mpmath as mp
    from colloc_problems import cip

    trial = co.Trial(np.arange(3000) / 100.0, {"cop": np.zeros(3000)})
    problem = cip.stochastic_problem(trial, controller="PD-delay", body=cip.body(1.575, 54.2), noise="sway-lp")
    model = problem.model_at(0.01)
    point = {**problem.start, "KP": 2000.0, "tau": 0.02, "B": 0.7, "tau_m": 0.6, "q_d": 13.0}
    theta = np.array([point[k] for k in model.parameter_names])
    block = np.asarray(model._block(theta))
    old, new = expm_squarings(np.abs(block).sum(axis=0).max()), expm_squarings_for(block)
    assert model.squarings(theta) == new <= 1 < 10 < old
    A = np.asarray(model.continuous(theta)["A"]) * model.dt
    with mp.workdps(30):
        exact = np.array(mp.expm(mp.matrix(A.tolist())).tolist(), dtype=float)

    def error(s):
        return np.abs(np.asarray(model._discrete(s)(theta)[0]) - exact).max() / np.abs(exact).max()
    assert error(new) < 1e-9 and error(new) < error(old) / 100
    # a normal matrix: the powers' norms are the norm's powers, and the two agree
    assert expm_squarings_for(np.diag([-300.0, -2.0, 0.5])) == expm_squarings(300.0)
    assert expm_squarings_for(np.zeros((3, 3))) == 0
    # powers beyond the floating-point range: the 1-norm's count, not an overflow
    huge = np.array([[0.0, 1e200], [1e-200, 1e100]])
    assert expm_squarings_for(huge) == expm_squarings(np.abs(huge).sum(axis=0).max())
    with pytest.raises(CollocInputError, match="square"):
        expm_squarings_for(np.ones((2, 3)))
    with pytest.raises(CollocInputError, match="finite"):
        expm_squarings_for(np.array([[np.inf]]))


def test_expm_rejects_bad_input():
    with pytest.raises(CollocInputError, match="square"):
        expm(ca.DM.ones(2, 3), 0)
    with pytest.raises(CollocInputError, match="squarings"):
        expm(ca.DM.eye(2), -1)
    with pytest.raises(CollocInputError, match="finite"):
        expm_squarings(float("nan"))


def _rk4_zoh(A, G, s0, x, dt, steps):
    """Integrate s' = A s + G x (x held constant) over one interval with fine RK4."""
    h = dt / steps
    s = s0.copy()

    def f(v):
        return A @ v + G @ x

    for _ in range(steps):
        k1 = f(s)
        k2 = f(s + 0.5 * h * k1)
        k3 = f(s + 0.5 * h * k2)
        k4 = f(s + h * k3)
        s = s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return s


@pytest.mark.parametrize("which", ["cip", "oscillator_coarse"])
def test_discretization_matches_block_expm_and_rk4(which, cip):
    if which == "cip":
        model, theta = cip, CIP_TRUE
    else:  # a coarse step so that the exponential needs squarings
        model = LinearGaussianModel(OSC_NAMES, oscillator_matrices, dt=0.8)
        theta = OSC_TRUE * np.array([5, 1, 1, 1, 1, 1, 1])
    assert (model.squarings(theta) > 0) == (which != "cip")
    c = model.continuous(theta)
    d = model.discretize(theta)
    A, G = c["A"], c["G"]
    n, q = G.shape
    block = sla.expm(np.block([[A, G], [np.zeros((q, n)), np.zeros((q, q))]]) * model.dt)
    # to roundoff relative to the exponential's size: Padé-13 with squaring is accurate normwise, to
    # about u·‖M‖ (1.6e-13 for the coarse oscillator's ‖M dt‖₁ = 720); against a 50-digit exponential
    # (mpmath) its largest error is 1.4e-13 as matrix operations, 1.4e-14 expanded into scalars
    tol = 1e-12 * np.abs(block).max()
    np.testing.assert_allclose(d["Phi"], block[:n, :n], rtol=1e-12, atol=tol)
    np.testing.assert_allclose(d["Gamma"], block[:n, n:], rtol=1e-12, atol=tol)
    np.testing.assert_allclose(d["Q"], d["Gamma"] @ d["Gamma"].T)
    np.testing.assert_allclose(d["S"], d["Gamma"] @ d["D"].T)
    rng = np.random.default_rng(3)
    for _ in range(3):
        s0, x = rng.standard_normal(n), rng.standard_normal(q)
        exact = _rk4_zoh(A, G, s0, x, model.dt, 2000 if which == "cip" else 20000)
        np.testing.assert_allclose(d["Phi"] @ s0 + d["Gamma"] @ x, exact,
                                   rtol=1e-9, atol=1e-12 * np.abs(exact).max())


# -- likelihood -------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["cip", "cip_uncertain_start", "oscillator"])
def test_nll_equals_dense_gaussian_likelihood(which, request):
    model = request.getfixturevalue(which)
    truth = OSC_TRUE if which == "oscillator" else CIP_TRUE
    rng = np.random.default_rng(11)
    y = simulate(model, truth, 40, rng)
    for theta in (truth, truth * (1 + 0.1 * rng.standard_normal(truth.size))):
        expected = dense_nll(model, y, theta)
        got = negative_log_likelihood(model, y, theta)
        assert abs(got - expected) <= 1e-8 * abs(expected), (got, expected)
    # a one-output record is accepted as (N,) or (N, 1) alike
    if model.num_outputs == 1:
        assert negative_log_likelihood(model, y.ravel(), truth) == negative_log_likelihood(model, y, truth)


def _with_gaps(y, rng):
    """A run of missing samples, scattered ones, and (two outputs) the second output at half rate."""
    y = np.array(y, float).reshape(len(y), -1)
    y[7:13] = np.nan
    y[rng.choice(np.arange(15, len(y)), 4, replace=False), 0] = np.nan
    if y.shape[1] > 1:
        y[1::2, 1] = np.nan
    return y


@pytest.mark.parametrize("which", ["cip", "cip_uncertain_start", "oscillator"])
def test_nll_with_missing_values_equals_the_dense_marginal_likelihood(which, request):
    model = request.getfixturevalue(which)
    truth = OSC_TRUE if which == "oscillator" else CIP_TRUE
    rng = np.random.default_rng(5)
    y = _with_gaps(simulate(model, truth, 40, rng), rng)
    theta = truth * (1 + 0.1 * rng.standard_normal(truth.size))
    expected = dense_nll(model, y, theta)
    got, grad = negative_log_likelihood(model, y, theta, gradient=True, missing=True)
    assert abs(got - expected) <= 1e-8 * abs(expected), (got, expected)
    # the gradient of the gapped likelihood against central differences of the dense one
    for i in range(theta.size):
        h = 1e-6 * abs(theta[i])
        e = np.zeros(theta.size)
        e[i] = h
        fd = (dense_nll(model, y, theta + e) - dense_nll(model, y, theta - e)) / (2 * h)
        assert grad[i] == pytest.approx(fd, rel=1e-4, abs=1e-6 * np.abs(grad).max()), i
    # a complete record gives the same value with and without missing=True
    full = simulate(model, truth, 40, rng)
    assert negative_log_likelihood(model, full, theta, missing=True) == pytest.approx(
        negative_log_likelihood(model, full, theta), rel=1e-14)


def test_one_step_predictions_through_a_gap_are_the_dense_conditional_means(cip):
    from colloc.inference.kalman import one_step_predictions

    rng = np.random.default_rng(8)
    y = _with_gaps(simulate(cip, CIP_TRUE, 30, rng), rng)
    pred, sd = one_step_predictions(cip, y, CIP_TRUE, missing=True)
    mean, cov = dense_moments(cip, CIP_TRUE, len(y))
    for k in (8, 12, 13, 20, 29):  # inside the gap, its last sample, just after it, later ones
        before = np.flatnonzero(np.isfinite(y[:k, 0]))
        gain = np.linalg.solve(cov[np.ix_(before, before)], cov[before, k])
        assert pred[k, 0] == pytest.approx(mean[k] + gain @ (y[before, 0] - mean[before]), rel=1e-8, abs=1e-12)
        assert sd[k, 0] ** 2 == pytest.approx(cov[k, k] - gain @ cov[before, k], rel=1e-7)
    with pytest.raises(DataError, match="non-finite"):
        one_step_predictions(cip, y, CIP_TRUE)


def test_ml_through_gaps_recovers_the_gains_at_100_hz_from_a_poor_guess(cip):
    """10 % of a 100 Hz record lost in runs of 5-40 samples: the truth within 3 SE, and the
    standard errors of the gapped fit a little larger than those of the complete one."""
    rng = np.random.default_rng(21)
    y = simulate(cip, CIP_TRUE, 3000, rng)
    gapped = y.copy()
    lost = 0
    while lost < 300:
        start, length = rng.integers(0, 2950), rng.integers(5, 41)
        gapped[start:start + length] = np.nan
        lost = int(np.isnan(gapped).sum())
    poor = np.array([2500.0, 2.0, 80.0, 1e-3])
    # KI is weakly determined by 30 s (its SE is comparable to its value): no bound near the truth
    kw = dict(bounds={"KP": (600, 3000), "KI": (-300, 300), "KD": (20, 600), "sigma": (1e-6, 1e-2)},
              optimizer="lbfgsb", compiled=True)
    fit = maximum_likelihood(cip, gapped, poor, missing=True, **kw)
    full = maximum_likelihood(cip, y, poor, **kw)
    assert fit.success and full.success, (fit.message, full.message)
    for i, k in enumerate(CIP_NAMES):
        assert abs(fit.parameters[k] - CIP_TRUE[i]) < 3 * fit.standard_errors[k], k
        assert fit.standard_errors[k] >= 0.98 * full.standard_errors[k], k
    with pytest.raises(DataError, match="non-finite"):
        maximum_likelihood(cip, gapped, poor, **kw)
    # a zero noise: the start is refused by the compiled gradient's NLL as by the VM's
    unbounded_sigma = {**kw, "bounds": {k: v for k, v in kw["bounds"].items() if k != "sigma"}}
    with pytest.raises(ValueError, match="not finite at theta0"):
        maximum_likelihood(cip, y, [*poor[:3], 0.0], **unbounded_sigma)


def test_missing_values_still_refuse_infinities_and_empty_records(cip):
    y = simulate(cip, CIP_TRUE, 20, 0)
    bad = y.copy()
    bad[3, 0] = np.inf
    with pytest.raises(DataError, match="1 infinite values.*sample 3"):
        negative_log_likelihood(cip, bad, CIP_TRUE, missing=True)
    with pytest.raises(DataError, match="no measured value"):
        negative_log_likelihood(cip, np.full((20, 1), np.nan), CIP_TRUE, missing=True)


def test_feedthrough_correlation_matters(oscillator):
    """Ignoring the correlation Γ Dᵀ between process and measurement noise gives another NLL."""
    y = simulate(oscillator, OSC_TRUE, 40, 5)
    d = oscillator.discretize(OSC_TRUE)
    assert np.abs(d["S"]).max() > 0.01

    def no_cross(theta):
        A, G, C, R, D = oscillator_matrices(theta)
        # same marginal measurement covariance D Dᵀ + R, but independent of the process noise
        return A, G, C, R + D @ D.T

    independent = LinearGaussianModel(OSC_NAMES, no_cross, dt=0.05, initial_mean=oscillator_m0,
                                      initial_covariance=oscillator_p0)
    a = negative_log_likelihood(oscillator, y, OSC_TRUE)
    b = negative_log_likelihood(independent, y, OSC_TRUE)
    assert abs(a - b) > 1.0
    assert abs(a - dense_nll(oscillator, y, OSC_TRUE)) <= 1e-8 * abs(a)


@pytest.mark.parametrize("which", ["cip_uncertain_start", "oscillator"])
def test_gradient_and_hessian_match_central_differences(which, request):
    model = request.getfixturevalue(which)
    truth = OSC_TRUE if which == "oscillator" else CIP_TRUE
    y = simulate(model, truth, 200, 2)
    theta = truth * np.linspace(0.9, 1.1, truth.size)
    f, g, H = negative_log_likelihood(model, y, theta, hessian=True)
    f2, g2 = negative_log_likelihood(model, y, theta, gradient=True)
    assert f == f2
    np.testing.assert_allclose(g, g2, rtol=1e-12, atol=0)
    fd_g = np.empty_like(theta)
    fd_H = np.empty((theta.size, theta.size))
    for i in range(theta.size):
        h = 1e-5 * abs(theta[i])
        e = np.zeros_like(theta)
        e[i] = h
        fd_g[i] = (negative_log_likelihood(model, y, theta + e)
                   - negative_log_likelihood(model, y, theta - e)) / (2 * h)
        fd_H[:, i] = (negative_log_likelihood(model, y, theta + e, gradient=True)[1]
                      - negative_log_likelihood(model, y, theta - e, gradient=True)[1]) / (2 * h)
    # compare in relative parameter units, where every entry is of similar size
    scale = np.abs(theta)
    np.testing.assert_allclose(g * scale, fd_g * scale, rtol=1e-5, atol=1e-6 * np.abs(g * scale).max())
    Hs, fd_Hs = H * np.outer(scale, scale), fd_H * np.outer(scale, scale)
    np.testing.assert_allclose(Hs, Hs.T, rtol=1e-10, atol=1e-10 * np.abs(Hs).max())
    np.testing.assert_allclose(Hs, fd_Hs, rtol=1e-4, atol=1e-6 * np.abs(Hs).max())


def test_model_built_from_mx(cip):
    """A matrices() callable that only works on MX is accepted and gives the same numbers."""

    def mx_only(theta):
        if not isinstance(theta, ca.MX):
            raise TypeError("MX please")
        return cip_matrices(theta)

    model = LinearGaussianModel(CIP_NAMES, mx_only, dt=0.01)
    y = simulate(cip, CIP_TRUE, 50, 4)
    a = negative_log_likelihood(model, y, CIP_TRUE, gradient=True)
    b = negative_log_likelihood(cip, y, CIP_TRUE, gradient=True)
    assert a[0] == pytest.approx(b[0], rel=1e-13)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-9)


def test_simulated_moments_match_the_model():
    """Stationary lag-0 and lag-1 covariances of a long simulated record (with feedthrough)."""
    dt = 0.05
    base = LinearGaussianModel(OSC_NAMES, oscillator_matrices, dt=dt)
    d = base.discretize(OSC_TRUE)
    Pinf = sla.solve_discrete_lyapunov(d["Phi"], d["Q"])
    model = LinearGaussianModel(OSC_NAMES, oscillator_matrices, dt=dt, initial_covariance=Pinf)
    y = simulate(model, OSC_TRUE, 100_000, 8)
    C, D, R, Phi = d["C"], d["D"], d["R"], d["Phi"]
    lag0 = C @ Pinf @ C.T + D @ D.T + R
    lag1 = C @ Phi @ Pinf @ C.T + C @ d["S"]  # Cov(y_{k+1}, y_k)
    np.testing.assert_allclose(np.cov(y.T), lag0, rtol=0.05, atol=0.02 * np.abs(lag0).max())
    emp1 = (y[1:] - y.mean(0)).T @ (y[:-1] - y.mean(0)) / (len(y) - 1)
    np.testing.assert_allclose(emp1, lag1, rtol=0.05, atol=0.02 * np.abs(lag1).max())
    ys, states = simulate(model, OSC_TRUE, 5, 1, return_states=True)
    assert ys.shape == (5, 2) and states.shape == (5, 2)


# -- maximum likelihood -----------------------------------------------------------------------

RECORD = 3000  # 30 s at 100 Hz keeps the default suite fast; the slow test uses 60 s


@pytest.mark.slow  # 13 s alone (2026-11-29): out of the default suite's 10 minutes
def test_recovers_cip_gains_on_simulated_data(cip):
    z = []
    for seed in (0, 1):
        y = simulate(cip, CIP_TRUE, RECORD, seed)
        fit = maximum_likelihood(cip, y, [1000.0, 40.0, 240.0, 2e-4], bounds=CIP_BOUNDS)
        assert isinstance(fit, MLResult)
        assert fit.success, fit.message
        assert set(fit.parameters) == set(CIP_NAMES) and set(fit.standard_errors) == set(CIP_NAMES)
        est = np.array([fit.parameters[k] for k in CIP_NAMES])
        se = np.array([fit.standard_errors[k] for k in CIP_NAMES])
        z.append((est - CIP_TRUE) / se)
        # ballpark of the standard errors for 30 s at σ = 0.1 mm
        assert 40 < se[0] < 250 and 3 < se[1] < 150 and 10 < se[2] < 80
        assert 1e-6 < se[3] < 1e-5
        # the estimate is a stationary point (gradient ≈ 0 in relative units) and NLL matches
        g = np.array([fit.gradient[k] for k in CIP_NAMES]) * np.abs(est)
        assert np.abs(g).max() < 1e-3
        assert 0 <= fit.newton_decrement < 1e-6
        assert fit.nll == pytest.approx(negative_log_likelihood(cip, y, est), rel=1e-14)
        cov = fit.covariance.to_numpy()
        np.testing.assert_allclose(cov, cov.T)
        np.testing.assert_allclose(np.diag(fit.correlation.to_numpy()), 1.0)
        assert 1 < fit.fisher_condition < 1e6
        assert fit.iterations > 0 and fit.time_s > 0
    z = np.abs(np.array(z))
    assert z.max() < 4.0, z


def test_fixed_sigma_and_fixed_by_name(cip):
    y = simulate(cip, CIP_TRUE, RECORD, 7)
    fit = maximum_likelihood(cip, y, [1000.0, 40.0, 240.0, 5e-4], fixed={"sigma": 1e-4})
    assert fit.fixed == ("sigma",)
    assert fit.parameters["sigma"] == 1e-4
    assert set(fit.standard_errors) == {"KP", "KI", "KD"}
    assert list(fit.covariance.index) == ["KP", "KI", "KD"]
    for k, truth in zip(CIP_NAMES[:3], CIP_TRUE[:3]):
        assert abs(fit.parameters[k] - truth) < 4 * fit.standard_errors[k]
    summary = fit.summary()
    assert bool(summary.loc["sigma", "fixed"]) and np.isnan(summary.loc["sigma", "std_error"])
    # fixing by name holds the theta0 value
    again = maximum_likelihood(cip, y, dict(zip(CIP_NAMES, [1000.0, 40.0, 240.0, 1e-4])), fixed=["sigma"])
    assert again.parameters["sigma"] == 1e-4
    for k in ("KP", "KI", "KD"):
        assert again.parameters[k] == pytest.approx(fit.parameters[k], rel=1e-5)


@pytest.mark.slow
def test_cip_standard_errors_are_calibrated_over_many_seeds(cip):
    """60 s records: the reported standard errors match the spread of the estimates.

    KI is the exception: with KP/KI ≈ 80 s, about the record length, its likelihood is far from
    quadratic (the estimates are skewed upwards and the Wald standard error grows with the
    estimate), so only its z-scores are checked, not the spread.
    """
    est, se = [], []
    for seed in range(100, 120):
        y = simulate(cip, CIP_TRUE, 6000, seed)
        fit = maximum_likelihood(cip, y, [1000.0, 40.0, 240.0, 2e-4], bounds=CIP_BOUNDS)
        assert fit.success, fit.message
        est.append([fit.parameters[k] for k in CIP_NAMES])
        se.append([fit.standard_errors[k] for k in CIP_NAMES])
    est, se = np.array(est), np.array(se)
    z = (est - CIP_TRUE) / se
    assert np.abs(z).max() < 4.5
    mean_z2 = (z**2).mean(axis=0)
    assert np.all((mean_z2 > 0.3) & (mean_z2 < 2.5)), mean_z2
    ratio = est.std(axis=0, ddof=1) / se.mean(axis=0)
    quadratic = [CIP_NAMES.index(k) for k in ("KP", "KD", "sigma")]
    assert np.all((ratio[quadratic] > 0.55) & (ratio[quadratic] < 1.6)), ratio


# -- input errors -----------------------------------------------------------------------------


def test_clear_errors_for_bad_data_and_parameters(cip):
    y = simulate(cip, CIP_TRUE, 20, 0)
    bad = y.copy()
    bad[5, 0] = np.nan
    with pytest.raises(DataError, match="non-finite.*sample 5"):
        negative_log_likelihood(cip, bad, CIP_TRUE)
    with pytest.raises(ValueError, match="non-finite"):
        maximum_likelihood(cip, bad, CIP_TRUE)
    with pytest.raises(DataError, match="shape"):
        negative_log_likelihood(cip, np.hstack([y, y]), CIP_TRUE)
    with pytest.raises(DataError, match="shape"):
        negative_log_likelihood(cip, y.reshape(1, 20, 1), CIP_TRUE)
    with pytest.raises(DataError, match="no samples"):
        negative_log_likelihood(cip, np.empty((0, 1)), CIP_TRUE)
    with pytest.raises(ValueError, match="4 entries"):
        negative_log_likelihood(cip, y, CIP_TRUE[:3])
    with pytest.raises(ValueError, match="4 entries"):
        maximum_likelihood(cip, y, list(CIP_TRUE) + [1.0])
    with pytest.raises(ValueError, match="not finite"):
        negative_log_likelihood(cip, y, [np.nan, 1, 1, 1])
    with pytest.raises(ValueError, match="unknown names"):
        negative_log_likelihood(cip, y, {"KP": 1.0, "bogus": 2.0})
    with pytest.raises(ValueError, match=r"unknown parameters \['Kp'\]"):
        maximum_likelihood(cip, y, CIP_TRUE, fixed={"Kp": 1000.0})
    with pytest.raises(ValueError, match=r"unknown parameters \['tau'\]"):
        maximum_likelihood(cip, y, CIP_TRUE, fixed=["sigma", "tau"])
    with pytest.raises(ValueError, match="unknown parameters"):
        maximum_likelihood(cip, y, CIP_TRUE, bounds={"s": (0, 1)})
    with pytest.raises(ValueError, match="outside the bounds"):
        maximum_likelihood(cip, y, CIP_TRUE, bounds={"KP": (0, 10)})
    with pytest.raises(ValueError, match="every parameter is fixed"):
        maximum_likelihood(cip, y, CIP_TRUE, fixed=CIP_NAMES)
    with pytest.raises(ValueError, match="hessian"):
        maximum_likelihood(cip, y, CIP_TRUE, hessian="bfgs")
    with pytest.raises(ValueError, match="not finite at theta0"):
        maximum_likelihood(cip, y, [*CIP_TRUE[:3], 0.0])
    # a zero noise with a known initial state: the first innovation has zero variance
    assert negative_log_likelihood(cip, y, [*CIP_TRUE[:3], 0.0]) == np.inf


def test_clear_errors_for_bad_models():
    def shapes(bad):
        def f(theta):
            A, G, C, R = cip_matrices(theta)
            return {"A": A, "G": G, "C": C, "R": R, **bad}
        return f

    with pytest.raises(ModelError, match="duplicate"):
        LinearGaussianModel(["a", "a"], cip_matrices, dt=0.01)
    with pytest.raises(ModelError, match="dt"):
        LinearGaussianModel(CIP_NAMES, cip_matrices, dt=0.0)
    with pytest.raises(ModelError, match="A must be square"):
        LinearGaussianModel(CIP_NAMES, shapes({"A": ca.DM.ones(4, 3)}), dt=0.01)
    with pytest.raises(ModelError, match="G must have 4 rows"):
        LinearGaussianModel(CIP_NAMES, shapes({"G": ca.DM.ones(3, 1)}), dt=0.01)
    with pytest.raises(ModelError, match="C must have 4 columns"):
        LinearGaussianModel(CIP_NAMES, shapes({"C": ca.DM.ones(1, 3)}), dt=0.01)
    with pytest.raises(ModelError, match="D must be 1x1"):
        LinearGaussianModel(CIP_NAMES, shapes({"D": ca.DM.ones(1, 2)}), dt=0.01)
    with pytest.raises(ModelError, match="unknown"):
        LinearGaussianModel(CIP_NAMES, shapes({"Q": 1.0}), dt=0.01)
    with pytest.raises(ModelError, match="returned 3 items"):
        LinearGaussianModel(CIP_NAMES, lambda th: cip_matrices(th)[:3], dt=0.01)
    with pytest.raises(ModelError, match="theta only"):
        LinearGaussianModel(CIP_NAMES, shapes({"R": ca.SX.sym("r")}), dt=0.01)
    with pytest.raises(ModelError, match="failed"):
        LinearGaussianModel(CIP_NAMES, lambda th: th[9], dt=0.01)
    with pytest.raises(ModelError, match="initial_covariance must be positive semidefinite"):
        LinearGaussianModel(CIP_NAMES, cip_matrices, dt=0.01, initial_covariance=-np.eye(4))
    with pytest.raises(ModelError, match="initial_mean must have shape"):
        LinearGaussianModel(CIP_NAMES, cip_matrices, dt=0.01, initial_mean=[0, 0])
