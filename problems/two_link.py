"""Standing balance on a moving platform: the 2×4 feedback gain matrix K.

The case study of Moore & van den Bogert (2015, slides "Human Control Parameter
Identification"): a torque-driven two-link (legs, torso) inverted pendulum whose ankle moves
with the horizontal platform acceleration a(t), under full-state feedback

    [T_a, T_h]ᵀ = −K·x,   x = [θ_a, θ_h, ω_a, ω_h],

written in implicit mass-matrix form M(q)·[ω_a', ω_h']ᵀ = F(q, ω, a, T) with the equations,
body parameters and seed case of docs/contracts.md §2 (`two-link`)::

            o  head/torso (m_T, I_T, COM at d_T from the hip)
           /
          o  hip, torso angle θ_h relative to the legs
          |
          |  legs (m_L, I_L, COM at d_L from the ankle, length l_L)
          |  angle θ_a from vertical
        __o__ ankle on the platform ──► a(t)

Seed case: K = [[950, 175, 185, 50], [45, 290, 60, 26]], a(t) a sum of 12 sines, 60 s at
100 Hz, measurement noise σ_θ = 0.3°, σ_ω = 4°/s, σ_a = 0.42 m/s².
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import casadi as ca
import numpy as np

import colloc as co

__all__ = [
    "BODY", "K_TRUE", "TRUE", "HARMONICS", "SIGMA_THETA", "SIGMA_OMEGA", "SIGMA_ACC",
    "STATE_NAMES", "REQUIRED_COLUMNS", "OPTIONAL_COLUMNS", "DEFAULT_DATA",
    "mass_matrix_forcing", "model", "problem", "excitation", "simulate_trial", "load_trial",
]

#: Body parameters (docs/contracts.md §2; SI units).
BODY: dict[str, float] = {
    "l_L": 0.878,
    "d_L": 0.5715983152736843,
    "d_T": 0.3144918235286859,
    "m_L": 32.12595518400256,
    "m_T": 48.830566595091696,
    "I_L": 1.7991738234932386,
    "I_T": 2.4811635063274338,
    "g": 9.81,
}
#: The seed case's gains: row 0 ankle torque, row 1 hip torque; columns in state order.
K_TRUE = np.array([[950.0, 175.0, 185.0, 50.0], [45.0, 290.0, 60.0, 26.0]])
#: The known answer by result name (k_00 … k_13).
TRUE = {f"k_{i}{j}": float(K_TRUE[i, j]) for i in range(2) for j in range(4)}
#: Harmonic numbers n_i of the excitation, ω_i = 2π n_i / 240 rad/s.
HARMONICS = (7, 11, 16, 25, 38, 61, 103, 131, 151, 181, 313, 523)
SIGMA_THETA = float(np.deg2rad(0.3))
SIGMA_OMEGA = float(np.deg2rad(4.0))
SIGMA_ACC = 0.42
STATE_NAMES = ("theta_a", "theta_h", "omega_a", "omega_h")
REQUIRED_COLUMNS = (*STATE_NAMES, "platform_acc")
OPTIONAL_COLUMNS: tuple[str, ...] = ()
DEFAULT_DATA = ("two_link", "two_link_seed.csv")


def mass_matrix_forcing(q, w, a, torque, body: Mapping[str, float]):
    """M(q) and F(q, ω, a, T) of docs/contracts.md §2 (CasADi expressions).

    Parameters
    ----------
    q : (θ_a, θ_h);  w : (ω_a, ω_h);  a : platform acceleration;  torque : (T_a, T_h)
    body : mapping with l_L, d_L, d_T, m_L, m_T, I_L, I_T, g
    """
    lL, dL, dT = body["l_L"], body["d_L"], body["d_T"]
    mL, mT, IL, IT, g = body["m_L"], body["m_T"], body["I_L"], body["I_T"], body["g"]
    qa, qh = q[0], q[1]
    wa, wh = w[0], w[1]
    Ta, Th = torque[0], torque[1]
    M11 = IL + IT + dL**2 * mL + mT * (dT**2 + 2 * dT * lL * ca.cos(qh) + lL**2)
    M12 = IT + dT * mT * (dT + lL * ca.cos(qh))
    M22 = IT + dT**2 * mT
    F1 = (Ta + a * dL * mL * ca.cos(qa) + a * dT * mT * ca.cos(qa + qh) + a * lL * mT * ca.cos(qa)
          + dL * g * mL * ca.sin(qa) + dT * g * mT * ca.sin(qa + qh)
          + 2 * dT * lL * mT * wa * wh * ca.sin(qh) + dT * lL * mT * wh**2 * ca.sin(qh)
          + g * lL * mT * ca.sin(qa))
    F2 = Th + a * dT * mT * ca.cos(qa + qh) + dT * g * mT * ca.sin(qa + qh) - dT * lL * mT * wa**2 * ca.sin(qh)
    M = ca.vertcat(ca.horzcat(M11, M12), ca.horzcat(M12, M22))
    return M, ca.vertcat(F1, F2)


def model(body: Mapping[str, float] | None = None, *,
          acceleration: Callable[[ca.SX], ca.SX] | None = None) -> co.Model:
    """The closed-loop two-link model with the gain matrix ``k`` (2×4) unknown.

    Parameters
    ----------
    body : mapping, optional
        Overrides of :data:`BODY` entries.
    acceleration : callable, optional
        ``a(t)`` as a CasADi expression of time (used to simulate the true excitation);
        by default the platform acceleration is the measured input ``platform_acc``.
    """
    pars = dict(BODY)
    unknown = set(body or {}) - set(BODY)
    if unknown:
        raise co.ModelError(f"two-link body: unknown parameter(s) {', '.join(sorted(unknown))}; "
                            f"known: {', '.join(BODY)}")
    pars.update(body or {})
    m = co.Model("two-link")
    qa = m.state("theta_a", unit="rad", scale=0.05)
    qh = m.state("theta_h", unit="rad", scale=0.05)
    wa = m.state("omega_a", unit="rad/s", scale=0.2)
    wh = m.state("omega_h", unit="rad/s", scale=0.2)
    if acceleration is None:
        a = m.known_input("platform_acc", unit="m/s^2", scale=1.0)
    else:
        a = acceleration(m.time)
    K = m.parameter("k", shape=(2, 4), unit=GAIN_UNITS, description=GAIN_DESCRIPTIONS, scale=100.0, guess=0.0)
    x = ca.vertcat(qa, qh, wa, wh)
    M, F = mass_matrix_forcing(ca.vertcat(qa, qh), ca.vertcat(wa, wh), a, -K @ x, pars)
    m.set_der(qa, wa)
    m.set_der(qh, wh)
    m.add_residual(M @ ca.vertcat(m.der(wa), m.der(wh)) - F, name="eom", scale=50.0)
    return m


#: Units of the gain matrix K (row: joint torque; column: θ_a, θ_h, ω_a, ω_h).
GAIN_UNITS = [["N·m/rad", "N·m/rad", "N·m·s/rad", "N·m·s/rad"]] * 2
#: What each gain means: T = −K·x, rows ankle and hip torque, columns the fed-back state.
GAIN_DESCRIPTIONS = [[f"{joint} torque from {state}" for state in ("θ_a", "θ_h", "ω_a", "ω_h")]
                     for joint in ("ankle", "hip")]


def problem(trials: co.Trial | Sequence[co.Trial], *, errors_in_variables: bool = True,
            sigma_theta: float = SIGMA_THETA, sigma_omega: float = SIGMA_OMEGA,
            sigma_acc: float = SIGMA_ACC, body: Mapping[str, float] | None = None) -> co.Problem:
    """Fit the four states with weights 1/σ²; the platform acceleration is estimated as an
    errors-in-variables input (weight 1/σ_a²) unless ``errors_in_variables=False``."""
    fit = {"theta_a": sigma_theta**-2, "theta_h": sigma_theta**-2,
           "omega_a": sigma_omega**-2, "omega_h": sigma_omega**-2}
    noise = {"platform_acc": sigma_acc} if errors_in_variables else None
    return co.Problem(model(body), trials, fit=fit, input_noise=noise, name="two-link")


def load_trial(path, missing: str = "error") -> co.Trial:
    """Read a two-link CSV (``time, theta_a, theta_h, omega_a, omega_h, platform_acc``).

    ``missing="allow"`` reads an empty cell as a sample not measured (angles and
    acceleration at different rates, gaps); the platform acceleration may step at a time
    written on two rows (:class:`colloc.Trial`, ``jump_columns``).
    """
    return co.Trial.from_csv(path, required=REQUIRED_COLUMNS, optional=OPTIONAL_COLUMNS, min_rows=10,
                             missing=missing, jump_columns=("platform_acc",))


def excitation(seed: int = 0, harmonics: Sequence[int] = HARMONICS, period: float = 240.0,
               displacement: float = 0.01):
    """The sum-of-sines platform acceleration with seeded random phases.

    a(t) = Σ A_i sin(ω_i t + φ_i),  ω_i = 2π n_i / period,  A_i = −displacement·ω_i²,
    φ_i uniform on [0, 2π) from ``numpy.random.default_rng(seed)``.

    Returns
    -------
    (numeric, symbolic) : callables of time for numpy arrays and for CasADi expressions.
    """
    omega = 2 * np.pi * np.asarray(harmonics, dtype=float) / period
    amp = -displacement * omega**2
    phase = np.random.default_rng(seed).uniform(0.0, 2 * np.pi, omega.size)

    def numeric(t):
        t = np.asarray(t, dtype=float)
        return np.sin(np.multiply.outer(t, omega) + phase) @ amp

    def symbolic(t):
        return ca.dot(ca.DM(amp), ca.sin(t * ca.DM(omega) + ca.DM(phase)))

    return numeric, symbolic


def simulate_trial(K=K_TRUE, *, duration: float = 60.0, rate: float = 100.0, seed: int = 0,
                   noise: bool = True, x0=(0.0, 0.0, 0.0, 0.0), body: Mapping[str, float] | None = None,
                   harmonics: Sequence[int] = HARMONICS, name: str = "two_link.csv",
                   return_clean: bool = False):
    """Synthetic trial of the seed case (or other gains, durations, seeds).

    The closed loop is integrated by CVODES (rtol = atol = 1e-10) with the exact
    sum-of-sines acceleration; Gaussian noise σ_θ, σ_ω, σ_a is added to the samples.
    Phases and noise come from ``numpy.random.default_rng(seed)`` (phases first).

    Returns
    -------
    Trial, or (noisy Trial, clean Trial) with ``return_clean=True``.
    """
    K = np.asarray(K, dtype=float).reshape(2, 4)
    numeric, symbolic = excitation(seed, harmonics)
    time = np.arange(int(round(duration * rate)) + 1) / rate
    m = model(body, acceleration=symbolic)
    sim = co.simulate(m, np.asarray(x0, dtype=float), K.ravel(), time, rtol=1e-10, atol=1e-10)
    if not sim.success:
        raise RuntimeError(f"two-link simulation failed ({sim.status}): {sim.message}")
    rng = np.random.default_rng([seed, 1])
    acc = numeric(time)
    clean = {s: sim.states[:, i] for i, s in enumerate(STATE_NAMES)} | {"platform_acc": acc}
    sig = {"theta_a": SIGMA_THETA, "theta_h": SIGMA_THETA, "omega_a": SIGMA_OMEGA,
           "omega_h": SIGMA_OMEGA, "platform_acc": SIGMA_ACC}
    noisy = {s: v + (sig[s] * rng.standard_normal(time.size) if noise else 0.0) for s, v in clean.items()}
    trial = co.Trial(time, noisy, name=name)
    if return_clean:
        return trial, co.Trial(time, clean, name=name)
    return trial
