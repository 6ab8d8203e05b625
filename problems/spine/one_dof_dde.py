"""Franklin (2006) §3.D.v: nonlinear DDE simulations of the 1-DoF pendulum and Table 3.D.1.

Stability of the nonlinear delayed system is judged by the normalised state-space distance
``D_ss`` (eq. 3.D.v.1) and the slope of its least-squares line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from colloc import DDESimulation, OptionsError, simulate_dde
from colloc_problems.spine.one_dof_model import OneDof, one_dof

__all__ = ["SlopeRow", "simulate", "slope_table", "state_space_distance", "state_space_slope"]


def simulate(
    system: OneDof,
    delay: float,
    *,
    t_end: float = 20.0,
    steps_per_delay: int = 20,
    theta0_deg: float = 10.0,
) -> DDESimulation:
    """Nonlinear DDE simulation of the 1-DoF model after a step perturbation (§3.D.v).

    Parameters
    ----------
    system : OneDof
        Result of :func:`one_dof` (its ``rhs`` is integrated).
    delay : float
        Reflex delay τ (s, > 0).
    t_end : float
        Simulated time (s).
    steps_per_delay : int
        RK4 steps per delay (step ``τ/steps_per_delay``).
    theta0_deg : float
        Initial angle (deg) held as the constant history for ``t ≤ 0`` with zero velocity
        (the thesis starts at 10°).

    Returns
    -------
    DDESimulation
        ``t``, ``x = [θ, θ']`` (rad, rad/s), ``status`` ``"ok"``/``"diverged"``.
    """
    if system.rhs is None:
        raise OptionsError("system has no rhs; build it with one_dof()")
    if not delay > 0:
        raise OptionsError(f"delay must be > 0, got {delay}")
    if steps_per_delay < 1:
        raise OptionsError(f"steps_per_delay must be >= 1, got {steps_per_delay}")
    F = system.rhs

    def rhs(t, x, x_delayed):
        return np.asarray(F(x, x_delayed)).ravel()

    x0 = np.array([math.radians(theta0_deg), 0.0])
    return simulate_dde(rhs, x0, float(delay), float(t_end), float(delay) / steps_per_delay)


def state_space_distance(x: np.ndarray) -> np.ndarray:
    """Normalised distance from equilibrium ``D_ss`` (Franklin 2006, eq. 3.D.v.1).

    Parameters
    ----------
    x : array_like, shape (m, 2)
        ``[θ, θ']`` samples (deviations from the equilibrium ``[0, 0]``).

    Returns
    -------
    numpy.ndarray, shape (m,)
        ``sqrt((θ/⟨|θ|⟩)² + (θ'/⟨|θ'|⟩)²)``.  Eq. 3.D.v.1 writes ``mean(θ)``; the text
        (§3.D.v, Ch. 4 B.v) says each signal is scaled by its mean *amplitude*, which is
        used here (the plain mean of an oscillation about 0 is ≈ 0).
    """
    x = np.asarray(x, dtype=float)
    scale = np.mean(np.abs(x), axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return np.sqrt(np.sum((x / scale) ** 2, axis=1))


def state_space_slope(t: np.ndarray, x: np.ndarray) -> float:
    """Slope of the least-squares line through ``D_ss(t)`` (Table 3.D.1's "state space slope").

    Parameters
    ----------
    t : array_like, shape (m,)
        Times (s).
    x : array_like, shape (m, 2)
        ``[θ, θ']`` samples.

    Returns
    -------
    float
        Negative: contracting toward equilibrium (stable); positive: expanding.
    """
    t = np.asarray(t, dtype=float)
    return float(np.polyfit(t, state_space_distance(x), 1)[0])


@dataclass(frozen=True)
class SlopeRow:
    """One row of Table 3.D.1: a simulation at a percentage of the delay margin.

    Attributes
    ----------
    pct_delay_margin : float
        Delay as a percentage of the delay margin.
    delay_s : float
        Simulated delay (s).
    state_space_slope : float
        Slope of ``D_ss`` (1/s); ``nan`` when the run diverged before two samples.
    status : str
        Status of the DDE simulation.
    final_time_s : float
        Last simulated time.
    """

    pct_delay_margin: float
    delay_s: float
    state_space_slope: float
    status: str
    final_time_s: float


def slope_table(
    system: OneDof | None = None,
    percentages=(50.0, 99.0, 101.0, 150.0),
    *,
    t_end: float = 20.0,
    steps_per_delay: int = 20,
    theta0_deg: float = 10.0,
) -> list[SlopeRow]:
    """Reproduce Table 3.D.1: the ``D_ss`` slope at percentages of the delay margin.

    Parameters
    ----------
    system : OneDof, optional
        Default: ``one_dof()`` (the thesis' parameters, exact geometry).
    percentages : sequence of float
        Delays as a percentage of ``system.delay_margin_s``.
    t_end, steps_per_delay, theta0_deg : float, int, float
        Passed to :func:`simulate`.

    Returns
    -------
    list of SlopeRow
    """
    system = system if system is not None else one_dof()
    if not system.delay_margin_s:
        raise OptionsError("the system has no finite positive delay margin")
    rows = []
    for pct in percentages:
        tau = system.delay_margin_s * pct / 100.0
        sim = simulate(system, tau, t_end=t_end, steps_per_delay=steps_per_delay, theta0_deg=theta0_deg)
        slope = state_space_slope(sim.t, sim.x) if sim.t.size > 2 else float("nan")
        rows.append(SlopeRow(float(pct), tau, slope, sim.status, float(sim.t[-1])))
    return rows
