"""Franklin (2006) 18-DoF spine: the figures of the Ch. 4–5 experiments (matplotlib, Agg).

Each function draws one figure from the rows an experiment of
:mod:`colloc_problems.spine.sweeps` or :mod:`colloc_problems.spine.sensitivity` computed and
saves it atomically (:func:`colloc.save_figure`); :func:`write_json` writes the experiment's
data beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from colloc import save_figure, write_atomic
from colloc_problems.spine.stability import PHYSIOLOGICAL_DELAY_S

__all__ = ["finish", "plot_delay_margin_vs_gain", "plot_delay_margin_vs_gd", "plot_gain_sweep", "plot_load_position",
           "plot_nonlinear", "write_json"]


def _figure(w: float = 6.0, h: float = 4.2):
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), layout="constrained")


def write_json(out: Path, name: str, data: dict) -> Path:
    """Write ``data`` as ``out/name`` (indented JSON, atomically).

    Parameters
    ----------
    out : Path
        Folder.
    name : str
        File name.
    data : dict
        JSON-ready data (NumPy floats are written as floats).
    """
    path = out / name
    write_atomic(path, json.dumps(data, indent=1, default=float) + "\n")
    return path


def finish(result: dict, out, name: str, plot, *args) -> dict:
    """An experiment's last step: with a folder ``out``, draw ``plot(*args, out)``, list its
    files in ``result["figures"]`` and write ``result`` as ``out/name``; ``result`` either way.

    Parameters
    ----------
    result : dict
        The experiment's data (``figures`` is set).
    out : path-like or None
        Folder (None: nothing is drawn or written).
    name : str
        JSON file name.
    plot : callable
        One of the ``plot_*`` functions of this module.
    *args
        Its arguments before ``out``.
    """
    if out is not None:
        out = Path(out)
        result["figures"] = [str(p) for p in plot(*args, out)]
        write_json(out, name, result)
    return result


def _gain_axis(g):
    """Plot position of a gain on a log axis (G = 0 drawn at 0.1)."""
    return 0.1 if g == 0 else g


def plot_gain_sweep(rows, loads, published: dict, out: Path) -> list[Path]:
    """Figs 5.2 (power) and 4.5 (co-contraction) against the reflex gain, with the printed Table 5.1.

    Parameters
    ----------
    rows : list of dict
        The rows of :func:`colloc_problems.spine.sweeps.reflex_gain_sweep`.
    loads : sequence of float
        External loads (N), one curve each.
    published : dict
        ``(load, gain) -> co-contraction %`` printed in the thesis (None: no stable solution).
    out : Path
        Folder of the PNG files.
    """
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
            for (load, g), pub in published.items():
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


def plot_delay_margin_vs_gain(rows, dampings, loads, out: Path) -> list[Path]:
    """Fig. 5.3 / 4.7: the delay margin against the reflex gain, a curve per damping and load."""
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
    return [save_figure(fig, out / "fig5_3_delay_margin_vs_gain.png")]


def plot_delay_margin_vs_gd(rows, dampings, proportional_gain: float, load: float, out: Path) -> list[Path]:
    """Fig. 4.8: the delay margin against the derivative gain, a curve per damping."""
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
    return [save_figure(fig, out / "fig4_8_delay_margin_vs_gd.png")]


def plot_load_position(rows, anteriors, load: float, out: Path) -> list[Path]:
    """The smallest reflex gain with a stable equilibrium against the load's height, a curve per offset."""
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
    return [save_figure(fig, out / "load_position_threshold.png")]


def plot_nonlinear(curves, delay_margin_s: float, load: float, reflex_gain: float, damping: float,
                   out: Path) -> list[Path]:
    """Figs 4.4 / 4.9: ``D_ss(t)`` of the nonlinear DDE runs at fractions of the delay margin."""
    fig = _figure()
    ax = fig.subplots()
    for pct, t, dss in curves:
        ax.plot(t, dss, lw=1, label=f"{pct:g} % of {1e3 * delay_margin_s:.1f} ms")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("D_ss (eq. 18)")
    ax.set_yscale("log")
    ax.set_title(f"Nonlinear DDE, {load:g} N, G_p = {reflex_gain:g}, b = {damping:g} s (cf. Figs 4.4, 4.9)",
                 fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return [save_figure(fig, out / "nonlinear_dss.png")]
