"""Experiments of Franklin (2006) chapters 4–5 on the 18-DoF spine, with figures.

Each experiment is a function that computes its table, writes figures (matplotlib Agg,
atomically via :func:`colloc.plotting.save_figure`) and a JSON file into ``out``, and returns
the data.  Command line::

    python -m colloc_problems.spine.experiments NAME [--out DIR] [--quick]

with ``NAME`` one of ``reflex-gain`` (Table 5.1, Figs 5.2 / 4.5 / 4.6), ``delay-margin``
(Figs 5.3 / 4.7), ``differential-gain`` (Fig. 4.8), ``load-position`` (sensitivity of the
200 N feasibility threshold to the unknown load point, data README anomaly 13), ``nonlinear``
(Ch. 4 B.v: nonlinear DDE simulations around the delay margin) or ``all``.

Because the optimized activations depend only on the load, ``q`` and ``G_p`` (the zero-delay
stability constraint ``K(α) ⪰ σI`` does not involve ``b`` or ``G_d``; see
:mod:`colloc_problems.spine.stability`), the delay margins for several ``b`` and ``G_d`` reuse one
optimization per (load, ``G_p``) and only re-linearize (:func:`colloc_problems.spine.model.linearization`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from colloc import delay_margin, save_figure, simulate_dde, write_atomic
from colloc_problems.spine.activations import StabilityProblem, _affine_cached
from colloc_problems.spine.model import STATE_NAMES, build_model, linearization
from colloc_problems.spine.stability import PHYSIOLOGICAL_DELAY_S, stability

__all__ = [
    "EXPERIMENTS",
    "PUBLISHED_TABLE_5_1",
    "delay_margin_vs_differential_gain",
    "delay_margin_vs_reflex_gain",
    "load_position_sensitivity",
    "main",
    "max_tolerable_gain",
    "nonlinear_verification",
    "reflex_gain_sweep",
    "state_space_distance",
]

#: Table 5.1 (co-contraction %, q = 10, zero delay); None = "no stable solution".
PUBLISHED_TABLE_5_1 = {(0, 1): 38.0, (0, 10): 9.4, (0, 100): 0.0, (200, 1): None, (200, 10): 56.0, (200, 100): 3.4}
DEFAULT_GAINS = (0.0, 1.0, 3.0, 10.0, 30.0, 100.0)
DAMPINGS = (0.2, 2.0, 20.0)
MARGIN_GAINS = (0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 50.0, 100.0)


def _figure(w: float = 6.0, h: float = 4.2):
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), layout="constrained")


def _alpha(model, res: dict) -> np.ndarray:
    return np.array([res["activations"][n] for n in model.muscle_names])


def _margin(model, alpha, load: float, gp: float, b: float, gd: float = 0.0, q: float = 10.0) -> dict:
    p = model.parameter_vector(q, b, gp, gd, load)
    Ji, Jd = linearization(model, alpha, p)
    dm = delay_margin(Ji, Jd)
    return {"delay_margin_s": dm.delay_margin_s, "crossing_frequency_rad_s": dm.crossing_frequency_rad_s,
            "stable_at_zero_delay": dm.stable_at_zero_delay, "max_real_eigenvalue": dm.max_real_eigenvalue_zero_delay,
            "time_s": dm.elapsed_s}


def _write_json(out: Path, name: str, data: dict) -> Path:
    path = out / name
    write_atomic(path, json.dumps(data, indent=1, default=float) + "\n")
    return path


def max_tolerable_gain(gains, margins, delay: float = PHYSIOLOGICAL_DELAY_S) -> float | None:
    """Largest reflex gain whose delay margin still exceeds ``delay`` (log–log interpolation).

    Parameters
    ----------
    gains : sequence of float
        Increasing reflex gains (> 0).
    margins : sequence of float or None
        Delay margins (s) at those gains; ``None`` = infinite.
    delay : float
        Physiological delay (s), default 60 ms (Ch. 5 C).

    Returns
    -------
    float or None
        ``None`` when the margin exceeds ``delay`` on the whole grid (or is below it everywhere:
        then 0.0 is returned).
    """
    g = np.asarray(gains, dtype=float)
    m = np.array([np.inf if v is None else v for v in margins], dtype=float)
    above = m > delay
    if above.all():
        return None
    if not above.any():
        return 0.0
    k = int(np.argmin(above)) - 1  # last index above before the first below
    if k < 0:
        return 0.0
    if not np.isfinite(m[k]):
        return float(g[k])
    lg = np.interp(math.log(delay), [math.log(m[k + 1]), math.log(m[k])], [math.log(g[k + 1]), math.log(g[k])])
    return float(math.exp(lg))


# ---------------------------------------------------------------------------------------
# Table 5.1, Fig. 5.2 (4.6), Fig. 4.5
# ---------------------------------------------------------------------------------------

def reflex_gain_sweep(gains=DEFAULT_GAINS, loads=(0.0, 200.0), *, damping: float = 2.0, starts: int = 3,
                      seed: int = 0, out=None) -> dict:
    """Co-contraction and metabolic power vs proportional reflex gain (Table 5.1, Figs 5.2, 4.5, 4.6).

    Parameters
    ----------
    gains : sequence of float
        Reflex gains ``G_R = G_p`` (≥ 0).
    loads : sequence of float
        External loads (N).
    damping : float
        Intrinsic damping ``b`` (s) used for the reported delay margin.
    starts, seed : int
        Random starts per optimization and their seed.
    out : path-like, optional
        Folder for ``reflex_gain.json``, ``fig5_2_power_vs_gain.png`` and
        ``fig4_5_cocontraction_vs_gain.png``.

    Returns
    -------
    dict
        ``rows`` (one per load and gain: stable, power, co-contraction by both references,
        delay margin, max real eigenvalue, residual, timings), ``table_5_1`` (ours vs
        printed) and ``figures``.
    """
    rows = []
    for load in loads:
        for g in gains:
            r = stability(load=load, reflex_gain=g, damping=damping, starts=starts, seed=seed)
            rows.append({k: r.get(k) for k in (
                "load_N", "reflex_gain", "stable", "metabolic_power_w", "co_contraction_pct",
                "co_contraction_min_force_pct", "equilibrium_metabolic_power_w", "delay_margin_s",
                "crossing_frequency_rad_s", "max_real_eigenvalue", "equilibrium_residual",
                "stiffness_reserve_nm_per_rad", "objective_spread_rel")}
                        | {"optimization_s": r["timings"].get("optimization_s"), "total_s": r["timings"]["total_s"]})
    table = []
    for (load, g), pub in PUBLISHED_TABLE_5_1.items():
        ours = next((r for r in rows if r["load_N"] == load and r["reflex_gain"] == g), None)
        if ours is not None:
            table.append({"load_N": load, "G_R": g, "published_pct": pub,
                          "ours_pct": ours["co_contraction_pct"] if ours["stable"] else None,
                          "ours_min_force_pct": ours["co_contraction_min_force_pct"] if ours["stable"] else None,
                          "ours_stable": ours["stable"]})
    result = {"damping": damping, "rows": rows, "table_5_1": table, "figures": []}
    if out is not None:
        out = Path(out)
        result["figures"] = [str(p) for p in _plot_gain_sweep(rows, loads, out)]
        _write_json(out, "reflex_gain.json", result)
    return result


def _gain_axis(g):
    """Plot position of a gain on a log axis (G = 0 drawn at 0.1)."""
    return 0.1 if g == 0 else g


def _plot_gain_sweep(rows, loads, out: Path):
    paths = []
    for key, ylabel, fname, title in (
        ("metabolic_power_w", "metabolic power (W)", "fig5_2_power_vs_gain.png",
         "Metabolic power vs reflex gain (cf. Fig. 5.2 / 4.6)"),
        ("co_contraction_pct", "co-contraction (%)", "fig4_5_cocontraction_vs_gain.png",
         "Co-contraction vs reflex gain (cf. Fig. 4.5, Table 5.1)"),
    ):
        fig = _figure()
        ax = fig.subplots()
        for k, load in enumerate(loads):
            sel = [r for r in rows if r["load_N"] == load]
            ok = [r for r in sel if r["stable"]]
            ax.plot([_gain_axis(r["reflex_gain"]) for r in ok], [r[key] for r in ok], "o-", color=f"C{k}",
                    label=f"{load:g} N")
            bad = [r for r in sel if not r["stable"]]
            if bad:
                ax.plot([_gain_axis(r["reflex_gain"]) for r in bad], [0.0] * len(bad), "x", color=f"C{k}", ms=9,
                        label=f"{load:g} N: no stable solution")
            if key == "metabolic_power_w":
                eq = [r["equilibrium_metabolic_power_w"] for r in sel if r["equilibrium_metabolic_power_w"]]
                if eq:
                    ax.axhline(eq[0], color=f"C{k}", ls=":", lw=1, label=f"{load:g} N: equilibrium alone")
        if key == "co_contraction_pct":
            for (load, g), pub in PUBLISHED_TABLE_5_1.items():
                if pub is not None and load in loads:
                    ax.plot(_gain_axis(g), pub, "s", mfc="none", color=f"C{list(loads).index(load)}", ms=9)
            ax.plot([], [], "s", mfc="none", color="0.3", label="Table 5.1 (printed)")
        ax.set_xscale("log")
        ax.set_xlabel("proportional reflex gain G_R (G_R = 0 drawn at 0.1)")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="center left" if key == "co_contraction_pct" else "best")
        paths.append(save_figure(fig, out / fname))
    return paths


# ---------------------------------------------------------------------------------------
# Fig. 5.3 / 4.7: delay margin vs reflex gain for several b; both loads
# ---------------------------------------------------------------------------------------

def delay_margin_vs_reflex_gain(gains=MARGIN_GAINS, dampings=DAMPINGS, loads=(0.0, 200.0), *, starts: int = 3,
                                seed: int = 0, out=None) -> dict:
    """Delay margin vs proportional reflex gain for several damping gains (Figs 5.3, 4.7).

    Parameters
    ----------
    gains : sequence of float
        Increasing reflex gains (> 0).
    dampings : sequence of float
        Intrinsic damping gains ``b`` (s).
    loads : sequence of float
        External loads (N).
    starts, seed : int
        Random starts per optimization and their seed.
    out : path-like, optional
        Folder for ``delay_margin_vs_gain.json`` and ``fig5_3_delay_margin_vs_gain.png``.

    Returns
    -------
    dict
        ``rows`` (load, gain, b, stable, delay margin, crossing frequency),
        ``max_tolerable_gain`` (per load and b, at 60 ms), ``timings``.
    """
    model = build_model()
    rows, t_opt, t_dm = [], 0.0, []
    for load in loads:
        for g in gains:
            t0 = time.perf_counter()
            r = stability(load=load, reflex_gain=g, damping=dampings[0], starts=starts, seed=seed)
            t_opt += time.perf_counter() - t0
            for b in dampings:
                if not r["stable"]:
                    rows.append({"load_N": load, "reflex_gain": g, "damping": b, "stable": False,
                                 "delay_margin_s": 0.0, "crossing_frequency_rad_s": None})
                    continue
                m = _margin(model, _alpha(model, r), load, g, b)
                t_dm.append(m.pop("time_s"))
                rows.append({"load_N": load, "reflex_gain": g, "damping": b, "stable": True, **m})
    gmax = {}
    for load in loads:
        for b in dampings:
            sel = [r for r in rows if r["load_N"] == load and r["damping"] == b and r["stable"]]
            gmax[f"{load:g} N, b={b:g}"] = max_tolerable_gain([r["reflex_gain"] for r in sel],
                                                              [r["delay_margin_s"] for r in sel])
    result = {"rows": rows, "max_tolerable_gain": gmax, "physiological_delay_s": PHYSIOLOGICAL_DELAY_S,
              "timings": {"optimizations_s": t_opt, "delay_margin_mean_s": float(np.mean(t_dm)) if t_dm else None,
                          "delay_margin_max_s": float(np.max(t_dm)) if t_dm else None}, "figures": []}
    if out is not None:
        out = Path(out)
        fig = _figure()
        ax = fig.subplots()
        for i, b in enumerate(dampings):
            for j, load in enumerate(loads):
                sel = [r for r in rows if r["load_N"] == load and r["damping"] == b and r["stable"]
                       and r["delay_margin_s"]]
                ax.plot([r["reflex_gain"] for r in sel], [1e3 * r["delay_margin_s"] for r in sel],
                        ["o-", "x--"][j % 2], color=f"C{i}", label=f"b = {b:g} s, {load:g} N")
        ax.axhline(1e3 * PHYSIOLOGICAL_DELAY_S, color="k", lw=1, ls=":", label="60 ms")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("proportional reflex gain G_R")
        ax.set_ylabel("delay margin (ms)")
        ax.set_title("Delay margin vs reflex gain (cf. Figs 5.3, 4.7)", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        result["figures"] = [str(save_figure(fig, out / "fig5_3_delay_margin_vs_gain.png"))]
        _write_json(out, "delay_margin_vs_gain.json", result)
    return result


# ---------------------------------------------------------------------------------------
# Fig. 4.8: delay margin vs differential gain
# ---------------------------------------------------------------------------------------

def delay_margin_vs_differential_gain(differential_gains=(0.0, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0),
                                      dampings=DAMPINGS, *, proportional_gain: float = 10.0, load: float = 0.0,
                                      starts: int = 3, seed: int = 0, out=None) -> dict:
    """Delay margin vs derivative reflex gain ``G_d`` for several ``b`` (Fig. 4.8).

    Parameters
    ----------
    differential_gains : sequence of float
        ``G_d`` values (s, ≥ 0).
    dampings : sequence of float
        Intrinsic damping gains ``b`` (s).
    proportional_gain : float
        ``G_p`` (not given for Fig. 4.8 in the thesis; default 10).
    load : float
        External load (N).
    starts, seed : int
        Random starts of the (single) optimization.
    out : path-like, optional
        Folder for ``delay_margin_vs_gd.json`` and ``fig4_8_delay_margin_vs_gd.png``.

    Returns
    -------
    dict
        ``rows`` (b, G_d, delay margin, crossing frequency, max real eigenvalue at zero delay).
    """
    model = build_model()
    r = stability(load=load, reflex_gain=proportional_gain, starts=starts, seed=seed)
    rows = []
    if r["stable"]:
        alpha = _alpha(model, r)
        for b in dampings:
            for gd in differential_gains:
                m = _margin(model, alpha, load, proportional_gain, b, gd)
                m.pop("time_s")
                rows.append({"damping": b, "differential_gain": gd, **m})
    result = {"load_N": load, "proportional_gain": proportional_gain, "stable": r["stable"], "rows": rows,
              "figures": []}
    if out is not None and rows:
        out = Path(out)
        fig = _figure()
        ax = fig.subplots()
        for i, b in enumerate(dampings):
            sel = [x for x in rows if x["damping"] == b and x["delay_margin_s"]]
            ax.plot([max(x["differential_gain"], 1e-2) for x in sel], [1e3 * x["delay_margin_s"] for x in sel], "o-",
                    color=f"C{i}", label=f"b = {b:g} s")
            ax.axvline(b, color=f"C{i}", lw=0.8, ls="--")
        ax.axhline(1e3 * PHYSIOLOGICAL_DELAY_S, color="k", lw=1, ls=":", label="60 ms")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("differential reflex gain G_d (s)  (G_d = 0 drawn at 0.01; dashed: G_d = b)")
        ax.set_ylabel("delay margin (ms)")
        ax.set_title(f"Delay margin vs G_d, G_p = {proportional_gain:g}, {load:g} N (cf. Fig. 4.8)", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        result["figures"] = [str(save_figure(fig, out / "fig4_8_delay_margin_vs_gd.png"))]
        _write_json(out, "delay_margin_vs_gd.json", result)
    return result


# ---------------------------------------------------------------------------------------
# improvement: where is the 200 N feasibility threshold, as a function of the T4 height?
# ---------------------------------------------------------------------------------------

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
    if out is not None:
        out = Path(out)
        fig = _figure()
        ax = fig.subplots()
        for i, ant in enumerate(anteriors):
            sel = [r for r in rows if r["anterior_m"] == ant]
            ax.plot([100 * r["height_m"] for r in sel],
                    [max(r["threshold_gain"], 1e-2) if r["threshold_gain"] is not None else np.nan for r in sel],
                    "o-", color=f"C{i}", label=f"{100 * ant:g} cm anterior")
        ax.axhline(10, color="k", ls=":", lw=1, label="thesis: stable only for G_R ≥ 10")
        ax.axvline(20, color="0.5", ls="--", lw=1, label="default: 20 cm high, 20 cm anterior")
        ax.set_yscale("log")
        ax.set_xlabel("load height above T12/L1 (cm)")
        ax.set_ylabel("smallest reflex gain with a stable equilibrium")
        ax.set_title(f"{load:g} N: feasibility threshold vs load position (G = 0 drawn at 0.01)", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        result["figures"] = [str(save_figure(fig, out / "load_position_threshold.png"))]
        _write_json(out, "load_position.json", result)
    return result


# ---------------------------------------------------------------------------------------
# Ch. 4 B.v: nonlinear verification of the delay margin
# ---------------------------------------------------------------------------------------

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
    import casadi as ca

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
                               "max_abs_angle_deviation_deg": float(np.degrees(np.max(np.abs(sim.x[:, :18] - model.q0)))),
                               "time_s": time.perf_counter() - t0})
        curves.append((pct, sim.t, dss))
    if out is not None:
        out = Path(out)
        fig = _figure()
        ax = fig.subplots()
        for pct, t, dss in curves:
            ax.plot(t, dss, lw=1, label=f"{pct:g} % of {1e3 * r['delay_margin_s']:.1f} ms")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("D_ss (eq. 18)")
        ax.set_yscale("log")
        ax.set_title(f"Nonlinear DDE, {load:g} N, G_p = {reflex_gain:g}, b = {damping:g} s (cf. Figs 4.4, 4.9)",
                     fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        result["figures"] = [str(save_figure(fig, out / "nonlinear_dss.png"))]
        _write_json(out, "nonlinear_verification.json", result)
    return result


EXPERIMENTS = {
    "reflex-gain": reflex_gain_sweep,
    "delay-margin": delay_margin_vs_reflex_gain,
    "differential-gain": delay_margin_vs_differential_gain,
    "load-position": load_position_sensitivity,
    "nonlinear": nonlinear_verification,
}


def _summary(name: str, res: dict) -> list[str]:
    lines = [f"== {name} =="]
    if name == "reflex-gain":
        lines.append(f"{'load':>5} {'G_R':>6} {'stable':>6} {'power W':>9} {'cocon %':>8} {'minF %':>8} "
                     f"{'margin ms':>10} {'maxRe':>9} {'resid':>8} {'opt s':>6}")
        for r in res["rows"]:
            dm = r["delay_margin_s"]
            lines.append(
                f"{r['load_N']:5.0f} {r['reflex_gain']:6g} {r['stable']!s:>6} "
                f"{_num(r['metabolic_power_w'], '9.4f')} {_num(r['co_contraction_pct'], '8.2f')} "
                f"{_num(r['co_contraction_min_force_pct'], '8.2f')} "
                f"{'inf' if dm is None else format(1e3 * dm, '10.2f'):>10} {_num(r['max_real_eigenvalue'], '9.3g')} "
                f"{_num(r['equilibrium_residual'], '8.1e')} {_num(r['optimization_s'], '6.2f')}")
        lines.append("Table 5.1 (published vs ours): " + "; ".join(
            f"{t['load_N']} N G_R={t['G_R']}: {t['published_pct']} vs "
            f"{'no stable solution' if not t['ours_stable'] else format(t['ours_pct'], '.1f')}"
            for t in res["table_5_1"]))
    elif name == "delay-margin":
        for r in res["rows"]:
            dm = r["delay_margin_s"]
            lines.append(f"{r['load_N']:5.0f} N  G_R {r['reflex_gain']:6g}  b {r['damping']:5g}  margin "
                         f"{'inf' if dm is None else format(1e3 * dm, '.2f')} ms")
        lines.append(f"max tolerable gain at 60 ms: {res['max_tolerable_gain']}")
        lines.append(f"timings: {res['timings']}")
    elif name == "differential-gain":
        for r in res["rows"]:
            dm = r["delay_margin_s"]
            lines.append(f"b {r['damping']:5g}  G_d {r['differential_gain']:6g}  margin "
                         f"{'inf' if dm is None else format(1e3 * dm, '.2f')} ms")
    elif name == "nonlinear":
        lines.append(f"delay margin {1e3 * (res['delay_margin_s'] or 0):.3f} ms at {res['crossing_frequency_rad_s']} rad/s")
        for r in res["rows"]:
            lines.append(f"{r['pct_delay_margin']:6g} %  tau {1e3 * r['delay_s']:.3f} ms  {r['status']}  "
                         f"D_ss slope {r['dss_slope']:+.4g} 1/s  ({r['time_s']:.1f} s)")
    elif name == "load-position":
        for r in res["rows"]:
            g = r["threshold_gain"]
            lines.append(f"height {r['height_m']:.2f} m, anterior {r['anterior_m']:.2f} m: reserve(G=0) − margin "
                         f"{r['reserve_at_zero_gain']:.3g} N·m/rad, threshold G_R "
                         f"{'> ' + format(res['max_gain'], 'g') if g is None else format(g, '.3g')}")
    lines.extend(f"figure: {f}" for f in res.get("figures", []))
    return lines


def _num(v, spec):
    return "n/a" if v is None else format(v, spec)


def main(argv=None) -> int:
    """``python -m colloc_problems.spine.experiments NAME [--out DIR] [--quick]``.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).
    """
    ap = argparse.ArgumentParser(prog="python -m colloc_problems.spine.experiments",
                                 description="Franklin (2006) Ch. 4-5 experiments on the 18-DoF spine model.")
    ap.add_argument("name", choices=[*EXPERIMENTS, "all"])
    ap.add_argument("--out", default="spine-experiments", help="output folder (default ./spine-experiments)")
    ap.add_argument("--quick", action="store_true", help="coarser grids and one start (smoke run)")
    args = ap.parse_args(argv)
    names = list(EXPERIMENTS) if args.name == "all" else [args.name]
    for name in names:
        t0 = time.perf_counter()
        kwargs = {"out": args.out}
        if args.quick:
            kwargs.update({"reflex-gain": {"gains": (0.0, 10.0), "loads": (0.0,), "starts": 1},
                           "delay-margin": {"gains": (1.0, 10.0), "loads": (0.0,), "starts": 1},
                           "differential-gain": {"differential_gains": (0.0, 1.0), "starts": 1},
                           "load-position": {"heights": (0.2,), "anteriors": (0.2,)},
                           "nonlinear": {"percentages": (50.0, 150.0), "t_end": 1.0}}[name])
        res = EXPERIMENTS[name](**kwargs)
        print("\n".join(_summary(name, res)))
        print(f"({name}: {time.perf_counter() - t0:.1f} s)")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
