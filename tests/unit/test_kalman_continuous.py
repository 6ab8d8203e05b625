"""Continuous-time process noise in ``LinearGaussianModel`` (``noise="continuous"``).

References independent of colloc's discretisation: Van Loan's block exponential written here with
SciPy's ``expm``, the closed form of a scalar Ornstein–Uhlenbeck process, the sample covariance of
an Euler–Maruyama simulation on a fine grid, and statsmodels' Kalman filter for the likelihood.
"""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import scipy.linalg
import scipy.optimize
from statsmodels.tsa.statespace.kalman_filter import KalmanFilter

from colloc import kalman
from colloc.base.errors import CollocInputError, ModelError

OSC = {"k": 4.0, "c": 0.8, "q1": 0.6, "q2": 0.3, "rho": 0.4, "sigma": 0.02}
OSC_NAMES = list(OSC)
P0 = np.diag([0.5**2, 1.0**2])


def _osc_continuous(theta: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, G, Q_c of a unit mass on a spring ``k`` with damper ``c``, pushed by two correlated
    white forces (densities ``q1², q2²`` N²/Hz, correlation ``rho``), one on the position's rate."""
    A = np.array([[0.0, 1.0], [-theta["k"], -theta["c"]]])
    G = np.array([[0.0, 0.3], [1.0, 1.0]])
    sd = np.array([theta["q1"], theta["q2"]])
    Qc = np.outer(sd, sd) * np.array([[1.0, theta["rho"]], [theta["rho"], 1.0]])
    return A, G, Qc


def oscillator(dt: float) -> kalman.LinearGaussianModel:
    def mats(th):
        A = ca.SX.zeros(2, 2)
        A[0, 1] = 1
        A[1, 0] = -th[0]
        A[1, 1] = -th[1]
        G = ca.DM([[0.0, 0.3], [1.0, 1.0]])
        Qc = ca.SX.zeros(2, 2)
        Qc[0, 0], Qc[1, 1] = th[2] ** 2, th[3] ** 2
        Qc[0, 1] = Qc[1, 0] = th[4] * th[2] * th[3]
        return {"A": A, "G": G, "C": ca.DM([[1.0, 0.0]]), "R": th[5] ** 2, "Qc": Qc}

    return kalman.LinearGaussianModel(OSC_NAMES, mats, dt=dt, name="osc_ct", noise="continuous",
                                      initial_covariance=P0)


def van_loan(A: np.ndarray, G: np.ndarray, Qc: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Φ and Q_d by Van Loan (1978) with SciPy: expm([[−A, G Qc Gᵀ], [0, Aᵀ]] dt)."""
    n = A.shape[0]
    M = np.zeros((2 * n, 2 * n))
    M[:n, :n], M[:n, n:], M[n:, n:] = -A, G @ Qc @ G.T, A.T
    E = scipy.linalg.expm(M * dt)
    Phi = E[n:, n:].T
    return Phi, Phi @ E[:n, n:]


def ou(dt: float, noise: str = "continuous") -> kalman.LinearGaussianModel:
    """Scalar OU ``s' = −a s + √q x(t)``, measured with noise ``sigma``; with ``noise="held"`` the
    same matrices mean unit noise held over each sample (the sample-rate-dependent form)."""

    def mats(th):
        return ca.reshape(-th[0], 1, 1), ca.reshape(ca.sqrt(th[1]), 1, 1), ca.DM(1.0), th[2] ** 2

    return kalman.LinearGaussianModel(["a", "q", "sigma"], mats, dt=dt, name="ou_" + noise, noise=noise,
                                      initial_covariance=[[1.0]])


@pytest.mark.parametrize("dt", [0.01, 0.1, 0.7])
@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_discretisation_matches_scipy_van_loan(dt, scale):
    theta = dict(OSC, q1=OSC["q1"] * scale, q2=OSC["q2"] * scale)
    A, G, Qc = _osc_continuous(theta)
    Phi, Qd = van_loan(A, G, Qc, dt)
    d = oscillator(dt).discretize(theta)
    np.testing.assert_allclose(d["Phi"], Phi, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(d["Q"], Qd, rtol=1e-10, atol=1e-13 * np.abs(Qd).max())
    np.testing.assert_allclose(d["Q"], d["Q"].T)
    assert np.all(d["S"] == 0.0) and np.all(d["D"] == 0.0)
    assert "Gamma" not in d


@pytest.mark.parametrize("a, q, dt", [(2.0, 3.0, 0.05), (0.01, 1.0, 0.01), (40.0, 0.5, 0.1)])
def test_ou_matches_closed_form(a, q, dt):
    d = ou(dt).discretize([a, q, 0.1])
    assert d["Phi"][0, 0] == pytest.approx(np.exp(-a * dt), rel=1e-13)
    assert d["Q"][0, 0] == pytest.approx(q / (2 * a) * (1 - np.exp(-2 * a * dt)), rel=1e-11)


def test_process_noise_matches_euler_maruyama_sample_covariance():
    dt, substeps, paths = 0.2, 400, 40000
    A, G, Qc = _osc_continuous(OSC)
    h = dt / substeps
    rng = np.random.default_rng(5)
    s0 = np.array([0.3, -0.5])
    s = np.tile(s0, (paths, 1))
    chol = np.linalg.cholesky(Qc * h)  # increments of the two Wiener processes over h
    for _ in range(substeps):
        s = s + h * s @ A.T + (rng.standard_normal((paths, 2)) @ chol.T) @ G.T
    d = oscillator(dt).discretize(OSC)
    mean, cov = s.mean(axis=0), np.cov(s.T)
    Q = d["Q"]
    se_mean = np.sqrt(np.diag(Q) / paths)
    assert np.all(np.abs(mean - d["Phi"] @ s0) < 4 * se_mean)
    se_cov = np.sqrt((np.outer(np.diag(Q), np.diag(Q)) + Q**2) / paths)  # SE of a Gaussian sample covariance
    assert np.all(np.abs(cov - Q) < 4 * se_cov), (cov, Q, se_cov)


def test_likelihood_matches_statsmodels():
    dt = 0.02
    model = oscillator(dt)
    truth = dict(OSC)
    y = kalman.simulate(model, truth, 1200, rng=2)[:, 0]
    y[[50, 51, 600]] = np.nan
    theta = dict(OSC, k=3.0, c=0.5, q1=0.8, sigma=0.03)
    nll = kalman.negative_log_likelihood(model, y[:, None], theta, missing=True)
    A, G, Qc = _osc_continuous(theta)
    Phi, Qd = van_loan(A, G, Qc, dt)
    kf = KalmanFilter(k_endog=1, k_states=2, k_posdef=2)
    kf.bind(y[:, None].copy())
    kf["design"] = np.array([[1.0, 0.0]])
    kf["obs_cov"] = np.array([[theta["sigma"] ** 2]])
    kf["transition"] = Phi
    kf["selection"] = np.eye(2)
    kf["state_cov"] = Qd
    kf.initialize_known(np.zeros(2), P0)
    assert nll == pytest.approx(-kf.loglike(), rel=1e-9)


def test_simulated_record_has_the_stationary_variance():
    """``simulate`` draws the sampled process exactly: an OU record's variance is q/(2a)."""
    a, q = 1.5, 2.0
    y = kalman.simulate(ou(0.05), [a, q, 1e-6], 40000, rng=3)[2000:, 0]
    # the AR(1) sample variance's SE is about v·√(2(1+φ²)/((1−φ²)N))
    phi = np.exp(-a * 0.05)
    v = q / (2 * a)
    se = v * np.sqrt(2 * (1 + phi**2) / ((1 - phi**2) * y.size))
    assert abs(y.var() - v) < 4 * se


def test_gradient_and_hessian_are_exact():
    model = oscillator(0.05)
    y = kalman.simulate(model, OSC, 400, rng=4)
    theta = np.array([OSC[k] for k in OSC_NAMES]) * np.array([1.1, 0.9, 1.2, 0.8, 0.5, 1.3])
    f, g, H = kalman.negative_log_likelihood(model, y, theta, hessian=True)
    f2, g2 = kalman.negative_log_likelihood(model, y, theta, gradient=True)
    assert f2 == pytest.approx(f, rel=1e-12)
    np.testing.assert_allclose(g2, g, rtol=1e-8, atol=1e-8)
    step = 1e-6 * np.maximum(np.abs(theta), 1e-3)
    fd = np.array([(kalman.negative_log_likelihood(model, y, theta + step * e)
                    - kalman.negative_log_likelihood(model, y, theta - step * e)) / (2 * step[i])
                   for i, e in enumerate(np.eye(theta.size))])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-4)
    hfd = np.array([(kalman.negative_log_likelihood(model, y, theta + step * e, gradient=True)[1]
                     - kalman.negative_log_likelihood(model, y, theta - step * e, gradient=True)[1]) / (2 * step[i])
                    for i, e in enumerate(np.eye(theta.size))])
    np.testing.assert_allclose(H, hfd, rtol=1e-4, atol=1e-3)


def _fit(model, y):
    return kalman.maximum_likelihood(model, y, [1.0, 1.0, 0.05],
                                     bounds={"a": (1e-3, 100), "q": (1e-4, 100), "sigma": (1e-4, 1)})


@pytest.mark.slow  # 71 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_continuous_density_estimate_does_not_depend_on_the_sample_rate():
    """Ten OU paths, each recorded at 100 Hz and at 50 Hz (every second sample).  With continuous
    noise the density ``q`` has no systematic change between the rates (the mean change over the
    paths within 3 of its standard errors, from the paths' own spread) and is within one standard
    error (of the 50 Hz fit) on ≥ 80 % of the paths: the decimated record holds less information,
    so the two estimates differ by sampling noise of about the 100 Hz fit's SE.  The held-noise
    reading of the same matrices gives ``q`` half as large at 50 Hz, many SEs away."""
    truth = {"a": 2.0, "q": 0.5, "sigma": 0.02}
    diffs, within, ratios = [], 0, []
    for seed in range(10):
        y100 = kalman.simulate(ou(0.01), list(truth.values()), 3000, rng=seed)
        fit100, fit50 = _fit(ou(0.01), y100), _fit(ou(0.02), y100[::2])
        assert fit100.success and fit50.success
        assert abs(fit100.parameters["q"] - truth["q"]) < 4 * fit100.standard_errors["q"]
        diffs.append(fit50.parameters["q"] - fit100.parameters["q"])
        within += abs(diffs[-1]) < fit50.standard_errors["q"]
        if seed < 2:
            held100, held50 = _fit(ou(0.01, "held"), y100), _fit(ou(0.02, "held"), y100[::2])
            ratios.append(held50.parameters["q"] / held100.parameters["q"])
            assert abs(held50.parameters["q"] - held100.parameters["q"]) > 5 * held50.standard_errors["q"]
    d = np.array(diffs)
    assert abs(d.mean()) < 3 * d.std(ddof=1) / np.sqrt(d.size), d
    assert within >= 8, d
    np.testing.assert_allclose(ratios, 0.5, rtol=0.1)  # the held unit noise is q·dt² a sample


def test_bad_continuous_noise_input_is_refused():
    def with_d(th):
        return {"A": ca.reshape(-th[0], 1, 1), "G": 1.0, "C": 1.0, "R": th[1] ** 2, "D": 1.0}

    with pytest.raises(ModelError, match="D is not allowed with noise='continuous'"):
        kalman.LinearGaussianModel(["a", "s"], with_d, dt=0.1, noise="continuous")
    with pytest.raises(ModelError, match="not allowed with noise='continuous'"):
        kalman.LinearGaussianModel(["a", "s"], lambda th: (-th[0], 1.0, 1.0, th[1] ** 2, 1.0), dt=0.1,
                                   noise="continuous")

    def with_qc(th):
        return {"A": ca.reshape(-th[0], 1, 1), "G": 1.0, "C": 1.0, "R": th[1] ** 2, "Qc": ca.DM.eye(2)}

    with pytest.raises(ModelError, match="Qc must be 1x1"):
        kalman.LinearGaussianModel(["a", "s"], with_qc, dt=0.1, noise="continuous")
    with pytest.raises(ModelError, match="Qc needs noise='continuous'"):
        kalman.LinearGaussianModel(["a", "s"], with_qc, dt=0.1)
    with pytest.raises(ModelError, match="noise must be one of held, continuous"):
        kalman.LinearGaussianModel(["a", "s"], lambda th: (-th[0], 1.0, 1.0, th[1] ** 2), dt=0.1, noise="white")


@pytest.mark.parametrize("n, scale", [(1, 40.0), (3, 3.0), (6, 0.2), (6, 25.0)])
def test_van_loan_blocks_match_scipy(n, scale):
    """The n×n-block evaluation equals SciPy's exponential of the 2n×2n block matrix (A unstable
    and non-normal too: a random matrix)."""
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n)) * scale
    G = rng.standard_normal((n, 2))
    H = G @ G.T * scale
    M = np.block([[-A, H], [np.zeros((n, n)), A.T]])
    E = scipy.linalg.expm(M)
    Phi_ref = E[n:, n:].T
    Q_ref = Phi_ref @ E[:n, n:]
    Phi, Q = kalman.van_loan(ca.DM(A), ca.DM(H), kalman.expm_squarings(np.abs(M).sum(axis=0).max()))
    cond = np.linalg.cond(Phi_ref)
    np.testing.assert_allclose(np.array(Phi), Phi_ref, atol=1e-13 * cond * np.abs(Phi_ref).max())
    np.testing.assert_allclose(np.array(Q), Q_ref, atol=1e-13 * cond * np.abs(Q_ref).max())
    with pytest.raises(CollocInputError, match="van_loan: A and H must be square and of one size"):
        kalman.van_loan(ca.DM(A), ca.DM.eye(n + 1), 0)
