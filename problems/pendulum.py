"""Simple pendulum stiffness (Vyasarayani et al. 2011, as used by Moore & van den Bogert 2015).

    θ' = ω,    ω' = −p·sin θ

One unknown parameter ``p`` (1/s², g/l for a point-mass pendulum).  The Moore & van den
Bogert slides use this system to show that shooting has many local minima while
collocation started from the measured trajectory finds the true ``p``.

The synthetic case shipped in ``data/pendulum/pendulum.csv``: p = 10 s⁻², θ(0) = 1 rad,
ω(0) = 0, 10 s at 100 Hz, only θ measured with Gaussian noise σ = 0.05 rad (seed 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import casadi as ca
import numpy as np

import colloc as co

__all__ = ["TRUE", "REQUIRED_COLUMNS", "OPTIONAL_COLUMNS", "DEFAULT_DATA", "model", "problem",
           "simulate_trial", "load_trial"]

#: The known answer of the synthetic case.
TRUE = {"p": 10.0}
REQUIRED_COLUMNS = ("theta",)
OPTIONAL_COLUMNS = ("omega",)
#: Shipped dataset (relative to the data folder).
DEFAULT_DATA = ("pendulum", "pendulum.csv")
#: Noise of the shipped dataset (rad), used as the fit weight 1/σ².
NOISE_STD = 0.05


def model() -> co.Model:
    """The pendulum model with ``p`` searched in [0.01, 10⁴] s⁻² (a decade beyond the records of
    interest, p ≤ 1000, so that none of them ends on the search range's bound) and guessed at 1."""
    m = co.Model("pendulum")
    theta = m.state("theta", unit="rad")
    omega = m.state("omega", unit="rad/s", scale=3.0)
    p = m.parameter("p", unit="1/s^2", bounds=(0.01, 1e4), guess=1.0, scale=10.0)
    m.set_der(theta, omega)
    m.set_der(omega, -p * ca.sin(theta))
    return m


def problem(trials: co.Trial | Sequence[co.Trial], noise_std: float = NOISE_STD) -> co.Problem:
    """Fit θ (and ω where a trial measures it) with weights 1/σ²."""
    w = 1.0 / noise_std**2
    return co.Problem(model(), trials, fit={"theta": w, "omega": w}, name="pendulum")


def load_trial(path, missing: str = "error") -> co.Trial:
    """Read a pendulum CSV (columns ``time, theta[, omega]``); ``missing="allow"`` reads an
    empty cell as a sample not measured (θ and ω at different rates, gaps)."""
    return co.Trial.from_csv(path, required=REQUIRED_COLUMNS, optional=OPTIONAL_COLUMNS, min_rows=3,
                             missing=missing)


def simulate_trial(
    p: float = TRUE["p"],
    *,
    duration: float = 10.0,
    rate: float = 100.0,
    theta0: float = 1.0,
    omega0: float = 0.0,
    noise_std: float = 0.0,
    seed: int = 0,
    measure_omega: bool = False,
    name: str = "pendulum",
) -> co.Trial:
    """Synthetic trial: simulate with CVODES (rtol 1e-12) and add seeded Gaussian noise.

    Parameters
    ----------
    p : float
        True stiffness (1/s²).
    duration, rate : float
        Record length (s) and sampling rate (Hz).
    theta0, omega0 : float
        Initial state.
    noise_std : float
        Standard deviation of the noise added to every measured signal (rad, rad/s).
    seed : int
        Seed of ``numpy.random.default_rng``.
    measure_omega : bool
        Also provide an ``omega`` column.
    """
    time = np.arange(int(round(duration * rate)) + 1) / rate
    sim = co.simulate(model(), [theta0, omega0], [p], time, rtol=1e-12, atol=1e-12)
    if not sim.success:
        raise RuntimeError(f"pendulum simulation failed: {sim.message}")
    rng = np.random.default_rng(seed)
    signals = {"theta": sim.states[:, 0] + noise_std * rng.standard_normal(time.size)}
    if measure_omega:
        signals["omega"] = sim.states[:, 1] + noise_std * rng.standard_normal(time.size)
    return co.Trial(time, signals, name=name)
