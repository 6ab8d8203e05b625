"""Franklin (2006) 18-DoF spine: where the 200 N threshold lies, and the nonlinear check of the margin.

:func:`load_position_sensitivity` (the smallest reflex gain with a stable equilibrium against
the unknown position of the load, data README anomaly 13) and :func:`nonlinear_verification`
(Ch. 4 B.v: nonlinear DDE simulations around the delay margin).
"""

from __future__ import annotations

import math
import time

import casadi as ca
import numpy as np

from colloc import simulate_dde
from colloc_problems.spine.activations import StabilityProblem, _affine_cached
from colloc_problems.spine.figures import finish, plot_load_position, plot_nonlinear
from colloc_problems.spine.model import STATE_NAMES, build_model
from colloc_problems.spine.stability import stability
from colloc_problems.spine.sweeps import _alpha

__all__ = ["load_position_sensitivity", "nonlinear_verification", "state_space_distance"]


def _reserve(model, load: float, gain: float, q: float = 10.0) -> float:
    p = model.parameter_vector(q, 2.0, gain, 0.0, load)
    prob = StabilityProblem(model, _affine_cached(model, tuple(float(v) for v in p), False))
    mf = prob.minimum_force()
    if not mf["success"]:
        return -math.inf
    return prob.stiffness_reserve(mf["alpha"])["reserve"] - prob.sigma


def _threshold(model, load: float, max_gain: float) -> tuple[float, float | None]:
    r0 = _reserve(model, load, 0.0)
    if r0 >= 0:
        return r0, 0.0
    if _reserve(model, load, max_gain) < 0:
        return r0, None
    lo, hi = math.log(1e-3), math.log(max_gain)
    for _ in range(14):
        mid = 0.5 * (lo + hi)
        if _reserve(model, load, math.exp(mid)) >= 0:
            hi = mid
        else:
            lo = mid
    return r0, math.exp(hi)


def load_position_sensitivity(heights=(0.10, 0.20, 0.30, 0.40), anteriors=(0.20, 0.22, 0.24, 0.26), *,
                              load: float = 200.0, max_gain: float = 100.0, out=None) -> dict:
    """Smallest reflex gain with a stable equilibrium vs the (unknown) position of the load.

    The thesis reports no stable solution at 200 N for ``G_R < 10`` (Table 5.1, Ch. 4 C / 5 C)
    but does not give the T4 height, nor whether "20 cm anterior to the trunk" is measured
    from the spine or from the front of the trunk (data README anomaly 13).  For each load
    point (height above the thorax origin T12/L1, anterior offset from the spine axis) the
    threshold ``G*`` where the stiffness reserve ``max_α λ_min K(α)`` reaches the stability
    margin is found by bisection in ``log G`` (the reserve grows with ``G``).

    Parameters
    ----------
    heights : sequence of float
        Load heights above the thorax origin (m).
    anteriors : sequence of float
        Anterior offsets of the load from the spine axis (m); 0.26 = 20 cm in front of the
        trunk surface (lb = 6 cm).
    load : float
        External load (N).
    max_gain : float
        Upper end of the search.
    out : path-like, optional
        Folder for ``load_position.json`` and ``load_position_threshold.png``.

    Returns
    -------
    dict
        ``rows``: height, anterior offset, reserve at ``G = 0`` (N·m/rad, minus the margin),
        threshold gain (0 when stable without reflex, ``None`` when not stable up to
        ``max_gain``).
    """
    rows = []
    for ant in anteriors:
        for h in heights:
            r0, g = _threshold(build_model(load_height_m=h, load_anterior_m=ant), load, max_gain)
            rows.append({"height_m": h, "anterior_m": ant, "reserve_at_zero_gain": r0, "threshold_gain": g})
    result = {"load_N": load, "max_gain": max_gain, "rows": rows, "figures": []}
    return finish(result, out, "load_position.json", plot_load_position, rows, anteriors, load)


def state_space_distance(dx: np.ndarray) -> np.ndarray:
    """Normalized distance from equilibrium ``D_ss`` (Ch. 4 eq. 18).

    Parameters
    ----------
    dx : array_like, shape (m, 36)
        Deviations ``x − x̄`` (18 angles then 18 rates).

    Returns
    -------
    numpy.ndarray, shape (m,)
        ``sqrt(Σ_i (Δθ_i/⟨|Δθ|⟩)² + (Δθ̇_i/⟨|Δθ̇|⟩)²)``: angles are scaled by the mean amplitude of
        all angles, rates by that of all rates (over the whole run).
    """
    dx = np.asarray(dx, dtype=float)
    n = dx.shape[1] // 2
    sa = np.mean(np.abs(dx[:, :n])) or 1.0
    sv = np.mean(np.abs(dx[:, n:])) or 1.0
    return np.sqrt(np.sum((dx[:, :n] / sa) ** 2, axis=1) + np.sum((dx[:, n:] / sv) ** 2, axis=1))


def nonlinear_verification(*, load: float = 0.0, reflex_gain: float = 100.0, damping: float = 2.0,
                           differential_gain: float = 0.0, percentages=(50.0, 99.0, 101.0, 150.0),
                           t_end: float = 5.0, perturbation_deg: float = 0.01, perturbed_state: str = "T0",
                           max_step: float = 4e-4, starts: int = 1, seed: int = 0, out=None) -> dict:
    """Simulate the nonlinear delayed model at fractions of the linear delay margin (Ch. 4 B.v, C).

    The optimized activations are held, the state starts (constant history) at the
    equilibrium with ``perturbation_deg`` added to ``perturbed_state`` — the thorax (``T0``)
    by default, as the text says; spinesim.m perturbs state 1 (``T5``), data README anomaly 10 —
    and the slope of the least-squares line through ``D_ss(t)`` (eq. 18) tells contraction
    (negative, stable) from expansion (positive).  RK4 with the method of steps
    (:func:`colloc.dde.simulate_dde`).

    Parameters
    ----------
    load, reflex_gain, damping, differential_gain : float
        The system (N, ``G_p``, ``b`` in s, ``G_d`` in s).
    percentages : sequence of float
        Simulated delays in % of the delay margin.
    t_end : float
        Simulated time (s; thesis 5 s).
    perturbation_deg : float
        Initial perturbation (deg).
    perturbed_state : str
        One of ``STATE_NAMES``.
    max_step : float
        Largest RK4 step (s); the lumbar modes are fast (``|λ| ≈ 5·10³ 1/s``).
    starts, seed : int
        Optimization starts.
    out : path-like, optional
        Folder for ``nonlinear_verification.json`` and ``nonlinear_dss.png``.

    Returns
    -------
    dict
        Delay margin, crossing frequency and per percentage the delay, status and ``D_ss`` slope.
    """
    if perturbed_state not in STATE_NAMES:
        raise ValueError(f"perturbed_state must be one of {', '.join(STATE_NAMES)}, got {perturbed_state!r}")
    model = build_model()
    r = stability(load=load, reflex_gain=reflex_gain, damping=damping, differential_gain=differential_gain,
                  starts=starts, seed=seed)
    result = {"load_N": load, "reflex_gain": reflex_gain, "damping": damping, "differential_gain": differential_gain,
              "stable": r["stable"], "delay_margin_s": r["delay_margin_s"],
              "crossing_frequency_rad_s": r["crossing_frequency_rad_s"], "perturbed_state": perturbed_state,
              "perturbation_deg": perturbation_deg, "rows": [], "figures": []}
    if not r["stable"] or not r["delay_margin_s"]:
        return result
    alpha = _alpha(model, r)
    p = model.parameter_vector(10.0, damping, reflex_gain, differential_gain, load)
    F = model.functions["rhs"]
    X, XD = ca.MX.sym("x", 36), ca.MX.sym("x_d", 36)
    f = ca.Function("f", [X, XD], [F(X, XD, ca.DM(alpha), ca.DM(p))])
    x0 = model.x0.copy()
    x0[STATE_NAMES.index(perturbed_state)] += math.radians(perturbation_deg)
    curves = []
    for pct in percentages:
        tau = r["delay_margin_s"] * pct / 100.0
        t0 = time.perf_counter()
        sim = simulate_dde(lambda t, x, xd: np.asarray(f(x, xd)).ravel(), x0, tau, t_end, min(max_step, tau / 4))
        dss = state_space_distance(sim.x - model.x0)
        slope = float(np.polyfit(sim.t, dss, 1)[0]) if sim.t.size > 2 else float("nan")
        result["rows"].append({"pct_delay_margin": pct, "delay_s": tau, "status": sim.status,
                               "final_time_s": float(sim.t[-1]), "dss_slope": slope,
                               "max_abs_angle_deviation_deg":
                                   float(np.degrees(np.max(np.abs(sim.x[:, :18] - model.q0)))),
                               "time_s": time.perf_counter() - t0})
        curves.append((pct, sim.t, dss))
    return finish(result, out, "nonlinear_verification.json", plot_nonlinear, curves, r["delay_margin_s"], load,
                  reflex_gain, damping)
