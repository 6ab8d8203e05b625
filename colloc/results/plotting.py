"""Figures of a :class:`~colloc.Result` (matplotlib is imported only when plotting).

Figures are built with :class:`matplotlib.figure.Figure` directly, so no display and no
global pyplot state are needed; pass ``path`` to write a PNG (atomically).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..base.files import atomic_path
from .report import solver_converged

__all__ = ["parameter_lines", "plot_estimates", "plot_fit", "plot_objective_history", "plot_residuals", "save_figure"]


def save_figure(fig, path: str | os.PathLike, dpi: int = 120) -> Path:
    """Write ``fig`` to ``path`` through a temporary file and a rename; return the path."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format=Path(path).suffix.lstrip(".") or "png")
    return Path(path)


def _trial_names(result, trial) -> list[str]:
    names = list(result.trajectories)
    if trial is None:
        return names
    if isinstance(trial, int):
        return [names[trial]]
    if trial not in names:
        raise KeyError(f"no trial '{trial}' in result; trials: {', '.join(names)}")
    return [trial]


def _label(result, signal: str) -> str:
    unit = result.units.get(signal, "")
    return f"{signal} ({unit})" if unit else signal


#: Trials longer than this (s) get a zoomed panel beside the full record.
ZOOM_AFTER_S = 20.0
#: Width of the zoomed window (s).
ZOOM_WINDOW_S = 4.0


def _zoom_window(result, t: str, signals: list[str]) -> tuple[float, float]:
    """A window of :data:`ZOOM_WINDOW_S` seconds around the largest standardised residual."""
    traj = result.trajectories[t]
    t0, t1 = float(traj.index[0]), float(traj.index[-1])
    centre = 0.5 * (t0 + t1)
    res = result.residuals.get(t)
    if res is not None and len(res):
        cols = [s for s in signals if s in res]
        if cols:
            scaled = np.abs(res[cols].to_numpy(dtype=float)) / (np.nanstd(res[cols].to_numpy(dtype=float), axis=0) + 1e-300)
            if np.isfinite(scaled).any():  # rows not measured at all (gaps) are NaN: never the centre
                rowmax = np.max(np.where(np.isfinite(scaled), scaled, -np.inf), axis=1)
                centre = float(res.index[int(np.argmax(rowmax))])
    lo = min(max(centre - ZOOM_WINDOW_S / 2, t0), t1 - ZOOM_WINDOW_S)
    return lo, lo + ZOOM_WINDOW_S


def parameter_lines(result) -> list[str]:
    """``name = value ± SE unit`` for every parameter (``± n/a`` when not estimable)."""
    se = result.standard_errors or {}
    lines = []
    for k, v in result.parameters.items():
        e = se.get(k)
        spread = f" ± {e:.3g}" if e is not None and np.isfinite(e) else " ± n/a"
        unit = result.units.get(k, "")
        lines.append(f"{k} = {v:.5g}{spread}" + (f" {unit}" if unit else ""))
    return lines


def plot_fit(result, trial=None, *, signals=None, path=None):
    """Measured vs identified trajectories: one row per signal, one column per trial.

    Every parameter (± standard error, unit) is listed in a table under the panels, so
    nothing is cut from a title.  A trial longer than :data:`ZOOM_AFTER_S` seconds gets a
    second column zoomed on a few seconds around its largest residual.

    Parameters
    ----------
    result : Result
    trial : str or int, optional
        One trial (default: all).
    signals : list of str, optional
        Signals to show (default: every fitted signal).
    path : path-like, optional
        Write the figure there (PNG, PDF, SVG… by the suffix).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    trials = _trial_names(result, trial)
    if signals is None:
        signals = list(dict.fromkeys(s for t in trials for s in result.measurements[t].columns))
    else:
        known = set().union(*(result.trajectories[t].columns for t in trials))
        missing = [s for s in signals if s not in known]
        if missing:
            raise KeyError(f"plot_fit: no signal(s) {', '.join(missing)}; available: {', '.join(sorted(known))}")
    columns = []  # (trial, window or None)
    for t in trials:
        index = result.trajectories[t].index
        columns.append((t, None))
        if len(index) and float(index[-1] - index[0]) > ZOOM_AFTER_S:
            columns.append((t, _zoom_window(result, t, signals)))
    lines = parameter_lines(result)
    per_col = 12
    text_cols = max(1, -(-len(lines) // per_col))
    text_rows = min(len(lines), per_col)
    width = max(4.2 + 3.8 * len(columns), 3.4 * text_cols)
    text_h = 0.35 + 0.17 * text_rows
    fig = Figure(figsize=(width, 1.0 + 2.1 * len(signals) + text_h), layout="constrained")
    grid = fig.add_gridspec(len(signals) + 1, len(columns), height_ratios=[2.1] * len(signals) + [text_h],
                            width_ratios=[1.0 if w is None else 0.6 for _, w in columns])
    axes = np.empty((len(signals), len(columns)), dtype=object)
    for c, (t, window) in enumerate(columns):
        meas = result.measurements[t]
        traj = result.trajectories[t]
        for r, s in enumerate(signals):
            ax = fig.add_subplot(grid[r, c], sharex=axes[0, c] if r else None)
            axes[r, c] = ax
            if s in meas:
                ax.plot(meas.index, meas[s], ".", ms=2.5, color="0.55", label="measured")
            ax.plot(traj.index, traj[s], "-", lw=1.2, color="C0", label=f"identified ({result.method})")
            if window is None:
                ax.set_ylabel(_label(result, s))
            else:
                ax.set_xlim(*window)
                inside = (traj.index >= window[0]) & (traj.index <= window[1])
                shown = np.concatenate([traj[s].to_numpy()[inside],
                                        meas[s].to_numpy()[(meas.index >= window[0]) & (meas.index <= window[1])]
                                        if s in meas else []])
                shown = shown[np.isfinite(shown)]
                if shown.size:
                    pad = 0.08 * (np.ptp(shown) or 1.0)
                    ax.set_ylim(shown.min() - pad, shown.max() + pad)
            if r == 0:
                ax.set_title(t if window is None else f"{t}: {window[0]:.1f}–{window[1]:.1f} s", fontsize=9)
            if r == len(signals) - 1:
                ax.set_xlabel("time (s)")
            else:
                ax.tick_params(labelbottom=False)
        if window is None:
            axes[0, c].legend(loc="upper right", fontsize=8, framealpha=0.85)
    table = fig.add_subplot(grid[-1, :])
    table.axis("off")
    for k in range(text_cols):
        chunk = lines[k * per_col:(k + 1) * per_col]
        table.text(k / text_cols, 1.0, "\n".join(chunk), va="top", ha="left", family="monospace", fontsize=8,
                   transform=table.transAxes)
    state = "success" if result.success else f"FAILED ({result.status})"
    fig.suptitle(f"{result.problem} · {result.method} · {state}", fontsize=10)
    if path is not None:
        save_figure(fig, path)
    return fig


def plot_residuals(result, trial=None, *, path=None):
    """Residuals (model − measurement) per fitted signal, with their RMS in the legend.

    Parameters
    ----------
    result : Result
    trial : str or int, optional
    path : path-like, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    trials = _trial_names(result, trial)
    signals = list(dict.fromkeys(s for t in trials for s in result.residuals[t].columns))
    fig = Figure(figsize=(4.2 + 3.8 * len(trials), 1.0 + 1.8 * len(signals)), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(signals), len(trials), sharex="col", squeeze=False))
    for c, t in enumerate(trials):
        res = result.residuals[t]
        for r, s in enumerate(signals):
            ax = axes[r, c]
            if s in res:
                rms = float(np.sqrt(np.mean(res[s] ** 2)))
                ax.plot(res.index, res[s], ".", ms=2.0, color="C3", label=f"RMS {rms:.3g}")
                ax.legend(loc="upper right", fontsize=8, frameon=False)
            ax.axhline(0.0, color="0.3", lw=0.8)
            ax.set_ylabel(_label(result, s))
            if r == 0:
                ax.set_title(t, fontsize=9)
            if r == len(signals) - 1:
                ax.set_xlabel("time (s)")
    fig.suptitle(f"{result.problem}: residuals (model − measured)", fontsize=10)
    if path is not None:
        save_figure(fig, path)
    return fig


# ---- method comparisons (colloc.studies.compare) ---------------------------------------------------
def _run_kind(result) -> str:
    """``"success"``, ``"rejected"`` (the solver converged, the fit is not accepted) or ``"failed"``."""
    return "success" if result.success else "rejected" if solver_converged(result) else "failed"


def _method_colors(comparison) -> dict[str, str]:
    return {label: f"C{i % 10}" for i, label in enumerate(comparison.methods)}


def plot_objective_history(comparison, *, path=None):
    """Objective vs iteration and vs wall time for every run of a comparison (log y).

    One colour per method; start 0 is drawn thicker; a cross marks the last iterate of a
    run that did not converge.  Methods that do not time their iterations (collocation
    with IPOPT, multiple shooting) get their solve time spread evenly over the iterations:
    those curves are dashed in the time panel, and the legend and caption say so.

    Parameters
    ----------
    comparison : colloc.studies.compare.Comparison
    path : path-like, optional
        Write the figure as PNG there.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    colors = _method_colors(comparison)
    fig = Figure(figsize=(11.0, 4.6), layout="constrained")
    ax_it, ax_t = fig.subplots(1, 2, sharey=True)
    labelled: set[tuple[str, int]] = set()
    any_estimated = False
    for run in comparison.runs:
        it, obj, times, estimated = run.history()
        keep = np.isfinite(obj) & (obj > 0)
        if not keep.any():
            continue
        any_estimated |= estimated
        color = colors[run.method]
        lw = 1.8 if run.start == 0 else 0.9
        for ax, x, panel in ((ax_it, it, 0), (ax_t, times, 1)):
            label = None
            if (run.method, panel) not in labelled:
                labelled.add((run.method, panel))
                label = run.method + (" (time spread evenly)" if panel == 1 and estimated else "")
            ls = "--" if panel == 1 and estimated else "-"
            ax.plot(x[keep], obj[keep], ls, color=color, lw=lw, alpha=0.9, label=label)
            if not run.result.success:  # ×: the solver failed; ○: it converged, the fit is not accepted
                ax.plot(x[keep][-1], obj[keep][-1], "o" if solver_converged(run.result) else "x",
                        color=color, ms=7, mew=1.8, mfc="none")
    for ax in (ax_it, ax_t):
        ax.set_yscale("log")
        ax.grid(True, which="major", alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8, loc="upper right", framealpha=0.85)
    ax_it.xaxis.set_major_locator(MaxNLocator(integer=True))
    t_all = np.concatenate([ln.get_xdata() for ln in ax_t.lines]) if ax_t.lines else np.zeros(0)
    t_pos = t_all[np.isfinite(t_all) & (t_all > 0)]
    if t_pos.size and t_pos.size == t_all.size and t_pos.max() / t_pos.min() > 20:
        ax_t.set_xscale("log")  # runs differ by orders of magnitude in time
    ax_it.set_xlabel("iteration")
    ax_it.set_ylabel("objective")
    ax_t.set_xlabel("wall time since start of run (s)")
    ax_it.set_title("objective vs iteration", fontsize=10)
    ax_t.set_title("objective vs wall time", fontsize=10)
    fig.suptitle(f"{comparison.problem}: {len(comparison.runs)} runs "
                 f"({len(comparison.methods)} methods × {comparison.starts} starts; thick = start 0, "
                 f"× = solver did not converge, ○ = converged, fit not accepted)", fontsize=10)
    if any_estimated:
        fig.text(0.5, 0.005, "Dashed (time panel): no per-iteration timing is recorded for this method "
                 "(IPOPT collocation / multiple shooting); its solve time is spread evenly over the iterations.",
                 ha="center", va="bottom", fontsize=8, style="italic")
        fig.get_layout_engine().set(rect=(0, 0.04, 1, 0.96))
    if path is not None:
        save_figure(fig, path)
    return fig


def plot_estimates(comparison, *, path=None):
    """Parameter estimates per start, one panel per parameter (at most 8), every method.

    Filled markers: successful runs; half-filled: the solver converged but the fit is not
    accepted (poor fit, a parameter on its search range's bound); open: the solver did not
    converge; grey crosses: the initial guesses; dashed line: the true value when known.  A
    panel uses a log scale when its positive values span more than two decades.

    Parameters
    ----------
    comparison : colloc.studies.compare.Comparison
    path : path-like, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    names = list(comparison.parameter_names)[:8]
    n = max(len(names), 1)
    ncols = min(n, 4)
    nrows = -(-n // ncols)
    fig = Figure(figsize=(3.4 * ncols + 0.6, 2.9 * nrows + 0.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    colors = _method_colors(comparison)
    labels = list(comparison.methods)
    width = 0.6
    offsets = {lab: (i - (len(labels) - 1) / 2) * (width / max(len(labels), 1)) for i, lab in enumerate(labels)}
    markers = "osD^v<>ph*"
    truth = comparison.truth or {}
    for j, name in enumerate(names):
        ax = axes[j]
        values = []
        for s in range(comparison.starts):
            g = next((r.initial_guess.get(name) for r in comparison.runs if r.start == s), None)
            if g is not None and np.isfinite(g):
                ax.plot(s, g, "x", color="0.6", ms=6, label="initial guess" if s == 0 else None)
                values.append(g)
        for i, lab in enumerate(labels):
            runs = [r for r in comparison.runs if r.method == lab]
            for kind, fill, suffix in (("success", "full", ""),
                                       ("rejected", "bottom", " (converged, fit not accepted)"),
                                       ("failed", "none", " (solver did not converge)")):
                sel = [r for r in runs if _run_kind(r.result) == kind]
                xs = [r.start + offsets[lab] for r in sel]
                ys = [r.result.parameters.get(name, np.nan) for r in sel]
                if not sel:
                    continue
                values += [y for y in ys if np.isfinite(y)]
                ax.plot(xs, ys, markers[i % len(markers)], ls="none", color=colors[lab], ms=6,
                        fillstyle=fill, mfc=colors[lab] if fill != "none" else "none", label=lab + suffix)
        if name in truth:
            ax.axhline(truth[name], color="k", ls="--", lw=1.0, label="truth")
            values.append(truth[name])
        pos = [v for v in values if v > 0]
        if pos and len(pos) == len(values) and max(pos) / min(pos) > 100:
            ax.set_yscale("log")
        unit = comparison.runs[0].result.units.get(name, "") if comparison.runs else ""
        ax.set_ylabel(f"{name} ({unit})" if unit else name)
        ax.set_xlabel("start")
        ax.set_xticks(range(comparison.starts))
        ax.set_xlim(-0.6, comparison.starts - 0.4)
        ax.grid(True, alpha=0.3)
        if j == 0:
            ax.legend(fontsize=7, loc="best", framealpha=0.85)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    more = len(comparison.parameter_names) - len(names)
    fig.suptitle(f"{comparison.problem}: estimates per start" +
                 (f" (first 8 of {len(comparison.parameter_names)} parameters)" if more > 0 else ""),
                 fontsize=10)
    if path is not None:
        save_figure(fig, path)
    return fig
