"""Figures of a :class:`~colloc.Result` (matplotlib is imported only when plotting).

Figures are built with :class:`matplotlib.figure.Figure` directly, so no display and no
global pyplot state are needed; pass ``path`` to write a PNG (atomically).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["plot_fit", "plot_residuals", "save_figure"]


def save_figure(fig, path: str | os.PathLike, dpi: int = 120) -> Path:
    """Write ``fig`` to ``path`` through a temporary file and a rename; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix or ".png", dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=dpi)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


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


def plot_fit(result, trial=None, *, signals=None, path=None):
    """Measured vs identified trajectories: one row per signal, one column per trial.

    Parameters
    ----------
    result : Result
    trial : str or int, optional
        One trial (default: all).
    signals : list of str, optional
        Signals to show (default: every fitted signal).
    path : path-like, optional
        Write the figure as PNG there.

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
    fig = Figure(figsize=(4.2 + 3.8 * len(trials), 1.0 + 2.1 * len(signals)), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(signals), len(trials), sharex="col", squeeze=False))
    for c, t in enumerate(trials):
        meas = result.measurements[t]
        traj = result.trajectories[t]
        for r, s in enumerate(signals):
            ax = axes[r, c]
            if s in meas:
                ax.plot(meas.index, meas[s], ".", ms=2.5, color="0.55", label="measured")
            ax.plot(traj.index, traj[s], "-", lw=1.2, color="C0", label=f"identified ({result.method})")
            ax.set_ylabel(_label(result, s))
            if r == 0:
                ax.set_title(t, fontsize=9)
            if r == len(signals) - 1:
                ax.set_xlabel("time (s)")
        axes[0, c].legend(loc="upper right", fontsize=8, framealpha=0.85)
    params = ", ".join(f"{k} = {v:.4g}" for k, v in list(result.parameters.items())[:8])
    fig.suptitle(f"{result.problem}: {params}", fontsize=10)
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
