"""Standing balance with a delayed feedback: the gains K and the delay τ.

The two-link model of docs/contracts.md §2 (``two-link``) with the closed loop
``[T_a, T_h]ᵀ = −K·x(t − τ)``; τ is identified with K (``two-link-delay``).  Same columns,
body and excitation as :mod:`colloc_problems.two_link`; the state before the first sample is the
initial state (constant history).

The synthetic case: the seed-case K, τ = 23.7 ms (deliberately not a multiple of the 10 ms
sample step), 60 s at 100 Hz, the seed-case noise.  The seed-case gains are stiff: the
loop's delay margin is only 32.9 ms (``colloc.delay_margin(*linearization())``, crossing at
9.2 rad/s), so a physiological 100 ms delay would make it fall.  τ is bounded to
[0, 0.08] s: the bounds fix how many nodes a collocation interval couples with (12 at
100 Hz; a narrower window is a cheaper solve).

How well a record determines τ: to first order a delay acts like a change of the velocity
gains (K·x(t − τ) ≈ K·x − τK·ẋ), so only second-order effects separate τ from K.  With
the seed-case noise a 60 s record holds about ±3 ms (one standard deviation, from the
profile likelihood of :func:`multisine_problem`); a 240 s record (one period of the
multisine) about half that.  See ``benchmarks/two_link_delay.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np

import colloc as co
from colloc_problems import two_link as tl

__all__ = ["TAU_TRUE", "TRUE", "TAU_BOUNDS", "REQUIRED_COLUMNS", "OPTIONAL_COLUMNS", "DEFAULT_DATA", "model",
           "problem", "multisine_problem", "simulate_trial", "load_trial", "linearization"]

#: The delay of the synthetic case (s).
TAU_TRUE = 0.0237
#: The known answer by result name.
TRUE = {**tl.TRUE, "tau": TAU_TRUE}
#: Bounds of the delay parameter (s).
TAU_BOUNDS = (0.0, 0.08)
REQUIRED_COLUMNS = tl.REQUIRED_COLUMNS
OPTIONAL_COLUMNS = tl.OPTIONAL_COLUMNS
DEFAULT_DATA = ("two_link", "two_link_delay.csv")
STATE_NAMES = tl.STATE_NAMES


def model(tau: float | None = None, body: Mapping[str, float] | None = None, *, acceleration=None,
          tau_bounds: tuple[float, float] = TAU_BOUNDS, tau_guess: float = 0.01,
          multisine_guess=None) -> co.Model:
    """The two-link model with the delayed feedback −K·x(t − τ).

    Parameters
    ----------
    tau : float, optional
        A known delay (s); ``None`` (default) makes τ the parameter ``tau``.
    body : mapping, optional
        Overrides of :data:`colloc_problems.two_link.BODY`.
    acceleration : callable, optional
        ``a(t)`` as a CasADi expression (for simulating the true excitation); by default the
        measured input ``platform_acc``.
    tau_bounds : (float, float)
        Bounds of ``tau`` when it is unknown.
    tau_guess : float
        Initial guess of ``tau``.
    multisine_guess : array of 24 floats, optional
        Drive the body with the latent excitation ``a(t) = Σ c_i sin ω_i t + d_i cos ω_i t``
        at the designed frequencies (:data:`colloc_problems.two_link.HARMONICS`, period 240 s)
        instead of the measured input; its coefficients ``[c; d]`` become the parameter
        ``acc_coef`` with this guess (see :func:`multisine_problem`).
    """
    pars = dict(tl.BODY)
    pars.update(body or {})
    m = co.Model("two-link-delay")
    qa = m.state("theta_a", unit="rad", scale=0.05)
    qh = m.state("theta_h", unit="rad", scale=0.05)
    wa = m.state("omega_a", unit="rad/s", scale=0.2)
    wh = m.state("omega_h", unit="rad/s", scale=0.2)
    a = m.known_input("platform_acc", unit="m/s^2", scale=1.0) if acceleration is None else acceleration(m.time)
    if multisine_guess is not None:
        coef = m.parameter("acc_coef", shape=2 * len(tl.HARMONICS), unit="m/s^2", guess=np.asarray(multisine_guess))
        a = ca.dot(_multisine_basis(m.time), coef)
    K = m.parameter("k", shape=(2, 4), unit=tl.GAIN_UNITS, description=tl.GAIN_DESCRIPTIONS, scale=100.0,
                    guess=0.0)
    if tau is None:
        delay = m.parameter("tau", unit="s", bounds=tau_bounds, guess=tau_guess, scale=0.05,
                            description="feedback delay")
    else:
        delay = float(tau)
    x = ca.vertcat(qa, qh, wa, wh)
    xd = m.delayed(x, delay)
    M, F = tl.mass_matrix_forcing(ca.vertcat(qa, qh), ca.vertcat(wa, wh), a, -K @ xd, pars)
    m.set_der(qa, wa)
    m.set_der(qh, wh)
    m.add_residual(M @ ca.vertcat(m.der(wa), m.der(wh)) - F, name="eom", scale=50.0)
    return m


def _multisine_basis(t):
    omega = 2 * np.pi * np.asarray(tl.HARMONICS, dtype=float) / 240.0
    if isinstance(t, (ca.SX, ca.MX)):
        return ca.vertcat(*[ca.sin(w * t) for w in omega], *[ca.cos(w * t) for w in omega])
    t = np.asarray(t, dtype=float)
    return np.hstack([np.sin(np.outer(t, omega)), np.cos(np.outer(t, omega))])


def multisine_problem(trial: co.Trial, *, tau: float | None = None, sigma_theta: float = tl.SIGMA_THETA,
                      sigma_omega: float = tl.SIGMA_OMEGA, sigma_acc: float = tl.SIGMA_ACC,
                      tau_bounds: tuple[float, float] = TAU_BOUNDS, tau_guess: float = 0.01) -> co.Problem:
    """The exact parametric model of the synthetic experiment: the platform acceleration is
    the designed multisine with unknown amplitudes and phases (24 nuisance parameters
    ``acc_coef``), measured with noise σ_a at every sample.

    The objective is the negative log-likelihood of all the data (states and measured
    acceleration) with a fixed number of nuisance parameters, so its profile over τ is the
    profile likelihood and its curvature the information about τ that the record holds.
    Use it to ask how well a record *can* determine τ; it is slow (every coefficient
    couples every node) and needs the excitation's frequencies, which
    :func:`problem` (errors-in-variables on each sample) does not.
    """
    basis = _multisine_basis(trial.time)
    coef, *_ = np.linalg.lstsq(basis, trial["platform_acc"], rcond=None)
    m = model(tau, tau_bounds=tau_bounds, tau_guess=tau_guess, multisine_guess=coef)
    fit = {"theta_a": sigma_theta**-2, "theta_h": sigma_theta**-2,
           "omega_a": sigma_omega**-2, "omega_h": sigma_omega**-2}
    prob = co.Problem(m, trial, fit=fit, name="two-link-delay-multisine")
    latent = ca.dot(_multisine_basis(m.time), m.variable("acc_coef").symbol)
    prob.add_regularization((m.variable("platform_acc").symbol - latent) / sigma_acc, 1.0, integral=False,
                            name="acceleration")
    return prob


def linearization(K=tl.K_TRUE, body: Mapping[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """J_i, J_d of ẋ = J_i x + J_d x(t − τ) at upright stance without platform motion (AD)."""
    pars = dict(tl.BODY)
    pars.update(body or {})
    x = ca.SX.sym("x", 4)
    xd = ca.SX.sym("xd", 4)
    K = ca.DM(np.asarray(K, dtype=float).reshape(2, 4))
    M, F = tl.mass_matrix_forcing(x[:2], x[2:], 0.0, -K @ xd, pars)
    f = ca.vertcat(x[2:], ca.solve(M, F))
    zero = np.zeros(4)
    Ji = np.array(ca.Function("ji", [x, xd], [ca.jacobian(f, x)])(zero, zero))
    Jd = np.array(ca.Function("jd", [x, xd], [ca.jacobian(f, xd)])(zero, zero))
    return Ji, Jd


def problem(trials: co.Trial | Sequence[co.Trial], *, tau: float | None = None, errors_in_variables: bool = True,
            sigma_theta: float = tl.SIGMA_THETA, sigma_omega: float = tl.SIGMA_OMEGA,
            sigma_acc: float = tl.SIGMA_ACC, body: Mapping[str, float] | None = None,
            tau_bounds: tuple[float, float] = TAU_BOUNDS, tau_guess: float = 0.01) -> co.Problem:
    """Fit the four states (weights 1/σ²); K and τ unknown (τ known if ``tau`` is given);
    the platform acceleration as errors-in-variables unless ``errors_in_variables=False``."""
    fit = {"theta_a": sigma_theta**-2, "theta_h": sigma_theta**-2,
           "omega_a": sigma_omega**-2, "omega_h": sigma_omega**-2}
    noise = {"platform_acc": sigma_acc} if errors_in_variables else None
    return co.Problem(model(tau, body, tau_bounds=tau_bounds, tau_guess=tau_guess), trials, fit=fit,
                      input_noise=noise, name="two-link-delay")


def load_trial(path, missing: str = "error") -> co.Trial:
    """Read a two-link CSV (``time, theta_a, theta_h, omega_a, omega_h, platform_acc``), as
    :func:`colloc_problems.two_link.load_trial`."""
    return tl.load_trial(path, missing=missing)


def simulate_trial(K=tl.K_TRUE, tau: float = TAU_TRUE, *, duration: float = 60.0, rate: float = 100.0,
                   seed: int = 0, noise: bool = True, x0=(0.0, 0.0, 0.0, 0.0),
                   body: Mapping[str, float] | None = None, name: str = "two_link_delay.csv",
                   return_clean: bool = False):
    """Synthetic trial: the delayed closed loop integrated by the method of steps (RK4 on a
    step of at most 2.5 ms and τ/4, exact sum-of-sines acceleration), with
    the seed-case noise from ``numpy.random.default_rng([seed, 1])`` (phases from ``seed``).

    Raises
    ------
    RuntimeError
        If the closed loop diverges (a delay beyond the margin: an angle beyond 90°, the
        model has fallen over); the message says so.
    """
    K = np.asarray(K, dtype=float).reshape(2, 4)
    numeric, symbolic = tl.excitation(seed)
    time = np.arange(int(round(duration * rate)) + 1) / rate
    m = model(float(tau), body, acceleration=symbolic)
    sim = co.simulate(m, np.asarray(x0, dtype=float), K.ravel(), time, divergence_bound=100.0)
    if sim.success and np.max(np.abs(sim.states[:, :2])) > np.pi / 2:  # an angle beyond 90°: fallen
        k = int(np.argmax(np.max(np.abs(sim.states[:, :2]), axis=1) > np.pi / 2))
        sim.success, sim.status = False, "diverged"
        sim.message = f"the model fell over (an angle beyond 90°) at t = {time[k]:.6g} s"
    if not sim.success:
        raise RuntimeError(f"two-link-delay simulation with tau = {tau:g} s failed ({sim.status}): {sim.message}")
    rng = np.random.default_rng([seed, 1])
    acc = numeric(time)
    clean = {s: sim.states[:, i] for i, s in enumerate(tl.STATE_NAMES)} | {"platform_acc": acc}
    sig = {"theta_a": tl.SIGMA_THETA, "theta_h": tl.SIGMA_THETA, "omega_a": tl.SIGMA_OMEGA,
           "omega_h": tl.SIGMA_OMEGA, "platform_acc": tl.SIGMA_ACC}
    noisy = {s: v + (sig[s] * rng.standard_normal(time.size) if noise else 0.0) for s, v in clean.items()}
    trial = co.Trial(time, noisy, name=name)
    if return_clean:
        return trial, co.Trial(time, clean, name=name)
    return trial
