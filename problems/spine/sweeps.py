"""Franklin (2006) Ch. 4–5 on the 18-DoF spine: co-contraction, power and delay margin against the gains.

Table 5.1 and Figs 5.2 / 4.5 / 4.6 (:func:`reflex_gain_sweep`), Figs 5.3 / 4.7
(:func:`delay_margin_vs_reflex_gain`) and Fig. 4.8 (:func:`delay_margin_vs_differential_gain`).
Because the optimized activations depend only on the load, ``q`` and ``G_p`` (the zero-delay
stability constraint ``K(α) ⪰ σI`` does not involve ``b`` or ``G_d``; see
:mod:`colloc_problems.spine.activations`), the delay margins for several ``b`` and ``G_d``
reuse one optimization per (load, ``G_p``) and only re-linearize.
"""

from __future__ import annotations

import math
import time

import numpy as np

from colloc import delay_margin
from colloc_problems.spine.figures import finish, plot_delay_margin_vs_gain, plot_delay_margin_vs_gd, plot_gain_sweep
from colloc_problems.spine.model import build_model, linearization
from colloc_problems.spine.stability import PHYSIOLOGICAL_DELAY_S, stability

__all__ = [
    "DAMPINGS",
    "DEFAULT_GAINS",
    "MARGIN_GAINS",
    "PUBLISHED_TABLE_5_1",
    "delay_margin_vs_differential_gain",
    "delay_margin_vs_reflex_gain",
    "max_tolerable_gain",
    "reflex_gain_sweep",
]

#: Table 5.1 (co-contraction %, q = 10, zero delay); None = "no stable solution".
PUBLISHED_TABLE_5_1 = {(0, 1): 38.0, (0, 10): 9.4, (0, 100): 0.0, (200, 1): None, (200, 10): 56.0, (200, 100): 3.4}
DEFAULT_GAINS = (0.0, 1.0, 3.0, 10.0, 30.0, 100.0)
DAMPINGS = (0.2, 2.0, 20.0)
MARGIN_GAINS = (0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 50.0, 100.0)


def _alpha(model, res: dict) -> np.ndarray:
    return np.array([res["activations"][n] for n in model.muscle_names])


def _margin(model, alpha, load: float, gp: float, b: float, gd: float = 0.0, q: float = 10.0) -> dict:
    p = model.parameter_vector(q, b, gp, gd, load)
    Ji, Jd = linearization(model, alpha, p)
    dm = delay_margin(Ji, Jd)
    return {"delay_margin_s": dm.delay_margin_s, "crossing_frequency_rad_s": dm.crossing_frequency_rad_s,
            "stable_at_zero_delay": dm.stable_at_zero_delay, "max_real_eigenvalue": dm.max_real_eigenvalue_zero_delay,
            "time_s": dm.elapsed_s}


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
    return finish(result, out, "reflex_gain.json", plot_gain_sweep, rows, loads, PUBLISHED_TABLE_5_1)


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
    return finish(result, out, "delay_margin_vs_gain.json", plot_delay_margin_vs_gain, rows, dampings, loads)


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
    return finish(result, out if rows else None, "delay_margin_vs_gd.json", plot_delay_margin_vs_gd, rows, dampings,
                  proportional_gain, load)
