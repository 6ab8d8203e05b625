"""Figures of a :class:`~colloc.Result` (matplotlib is imported only when plotting).

Figures are built without pyplot, as :class:`colloc.results.figure.Figure` (a
:class:`matplotlib.figure.Figure` with an image form for Jupyter), so no display and no global
pyplot state are needed, and a figure returned as a cell's value is shown once; pass ``path``
to write a PNG (atomically), headless.

The fit and residual figures place their panels themselves (no layout engine: it costs more
than the drawing and cannot promise a size): one block of panels per trial, a trial's signals
in as many columns as the height allows, the blocks side by side and then below each other.
A figure is never larger than :data:`MAX_WIDTH_IN` × :data:`MAX_HEIGHT_IN` at :data:`DPI`, nor
holds more than :data:`MAX_PANELS` panels; what does not fit is left out, and a line under
the title says which trials or signals are shown.  The legend sits in that heading, above
every panel.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..base.files import atomic_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure

__all__ = ["parameter_lines", "plot_estimates", "plot_fit", "plot_objective_history", "plot_residuals", "save_figure"]

#: Resolution of the written figures (dots per inch); the size limits hold at it.
DPI = 120
#: Tallest figure: two full-HD screens stacked (2 × 1080 px).
MAX_HEIGHT_IN = 2 * 1080 / DPI
#: Widest figure (2400 px).
MAX_WIDTH_IN = 2400 / DPI
#: Most panels in one figure (each costs about the same to draw, whatever its data).
MAX_PANELS = 48
#: Most points drawn per curve and panel (a panel is about 340 px wide); a longer curve is
#: thinned so that its envelope, or its scatter and outliers, stay as they look (:func:`_thin`).
MAX_POINTS = 5000

#: The zoomed window spans this many autocorrelation times of the trial's identified signals
#: (the lag at which the autocorrelation falls to 1/e: 0.19 period for a sine, so about three
#: periods) …
ZOOM_TIMESCALES = 16.0
#: … and never fewer samples than this.
ZOOM_MIN_SAMPLES = 20
#: A trial gets a zoomed panel only when its record is longer than this many windows.
ZOOM_AFTER_WINDOWS = 4.0

# Geometry in inches: a panel, the zoomed panel beside it, the room left of each for tick
# labels and the y label, the gaps between rows (with titles: residual figures) and between
# the blocks of two trials (x tick labels, x label, the next block's titles).
_PANEL_W, _ZOOM_W, _PANEL_H = 2.8, 1.7, 1.25
_LEFT, _ZOOM_LEFT, _RIGHT = 0.85, 0.8, 0.25
_ROW_GAP, _TITLED_ROW_GAP, _BLOCK_GAP = 0.14, 0.3, 0.75
_TOP, _LINE, _TITLE_ROOM = 0.08, 0.28, 0.25  # margin, a heading line (title, legend, note), panel titles
_CHAR_W, _TEXT_LINE, _TABLE_ROWS = 0.067, 0.14, 12  # parameter table: monospace 8 pt, most lines


def save_figure(fig: MplFigure, path: str | os.PathLike, dpi: int = DPI) -> Path:
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
    """``signal (unit)``; a signal without a declared unit says so."""
    return f"{signal} ({result.units.get(signal) or 'unit not declared'})"


def _short(name: str, most: int = 36) -> str:
    """``name``, or its end behind an ellipsis when longer than ``most`` characters."""
    return name if len(name) <= most else "…" + name[-(most - 1):]


def parameter_lines(result) -> list[str]:
    """``name = value unit [low, high]`` (95 % interval, :meth:`Result.interval`) for every
    parameter; ``(SE not estimable)`` in place of the interval when there is no standard error."""
    se = result.standard_errors or {}
    lines = []
    for k, v in result.parameters.items():
        unit = result.units.get(k, "")
        lo, hi = result.interval(k)
        e = se.get(k)
        if np.isfinite(lo) and np.isfinite(hi):
            spread = f" [{lo:.5g}, {hi:.5g}]"
        elif e is not None and np.isfinite(e):
            spread = f" (SE {e:.3g}, no interval)"
        else:
            spread = " (SE not estimable)"
        lines.append(f"{k} = {v:.5g}" + (f" {unit}" if unit else "") + spread)
    return lines


# ---- what to show ---------------------------------------------------------------------------------
def _rms(values: np.ndarray) -> np.ndarray:
    """Root mean square of each column over its finite entries (NaN where there are none)."""
    finite = np.isfinite(values)
    count = finite.sum(axis=0)
    total = np.where(finite, values, 0.0) ** 2
    return np.sqrt(total.sum(axis=0) / np.where(count > 0, count, np.nan))


def _thin(t: np.ndarray, y: np.ndarray, *, dots: bool = False,
          most: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most about ``most`` points of ``(t, y)``, in order.

    A line keeps the lowest and the highest sample of each of ``most // 2`` equal runs of
    samples, which draws the same envelope (a run with no finite value keeps a NaN, so a gap
    stays a gap).  Dots keep every k-th sample, whose scatter looks like the whole one, and the
    ``most // 100`` samples farthest from the median, so that the largest outliers stay.
    """
    n = len(y)
    if n <= most:
        return t, y
    if dots:
        finite = np.isfinite(y)
        far = np.abs(y - np.median(y[finite])) if finite.any() else np.zeros(n)
        extreme = np.argpartition(np.where(finite, far, -1.0), n - most // 100)[n - most // 100:]
        keep = np.union1d(np.arange(0, n, -(-n // (most - most // 100))), extreme)
        return t[keep], y[keep]
    k = -(-n // (most // 2))
    runs = np.concatenate([y, np.full((-n) % k, np.nan)]).reshape(-1, k)
    finite = np.isfinite(runs)
    start = np.arange(runs.shape[0]) * k
    low = start + np.argmin(np.where(finite, runs, np.inf), axis=1)
    high = start + np.argmax(np.where(finite, runs, -np.inf), axis=1)
    keep = np.unique(np.concatenate([low, high]))
    keep = keep[keep < n]
    return t[keep], y[keep]


def _timescale(t: np.ndarray, y: np.ndarray) -> float:
    """Autocorrelation time of ``y(t)``: the first lag at which the autocorrelation of the
    signal (resampled on a uniform grid, mean removed) falls below 1/e (the record's length when
    it never does), NaN for a constant or too short signal.  Repeated times (a hybrid model's
    mode switch) keep their last value."""
    ok = np.isfinite(y)
    t, y = t[ok], y[ok]
    if len(t) > 1:
        last = np.r_[np.diff(t) > 0, True]
        t, y = t[last], y[last]
    if len(t) < 3 or np.ptp(y) == 0:
        return float("nan")
    n = min(len(t), 1 << 15)
    grid = np.linspace(t[0], t[-1], n)
    x = np.interp(grid, t, y)
    x -= x.mean()
    spectrum = np.fft.rfft(x, 2 * n)
    acf = np.fft.irfft(spectrum.real ** 2 + spectrum.imag ** 2, 2 * n)[:n]
    below = np.flatnonzero(acf < acf[0] / np.e)
    return float(below[0] * (grid[1] - grid[0])) if below.size else float(t[-1] - t[0])


def _worst_time(result, t: str, signals: list[str], default: float) -> float:
    """Time of the largest residual of trial ``t``, each signal's scaled by its RMS."""
    res = result.residuals.get(t)
    cols = [s for s in signals if res is not None and s in res]
    if not cols:
        return default
    values = np.abs(res[cols].to_numpy(dtype=float))
    rms = _rms(values)
    scaled = np.where(np.isfinite(values) & (rms > 0), values / np.where(rms > 0, rms, 1.0), -1.0)
    if not np.max(scaled, initial=-1.0) > 0:
        return default
    return float(res.index[np.unravel_index(np.argmax(scaled), scaled.shape)[0]])


def _zoom_window(result, t: str, signals: list[str]) -> tuple[float, float] | None:
    """The zoomed window ``(start, end)`` of trial ``t``: :data:`ZOOM_TIMESCALES` times the
    median autocorrelation time of its identified signals, at least :data:`ZOOM_MIN_SAMPLES`
    samples, around the largest scaled residual; None when the record is shorter than
    :data:`ZOOM_AFTER_WINDOWS` windows."""
    traj = result.trajectories[t]
    meas = result.measurements.get(t)
    times = np.asarray(meas.index if meas is not None and len(meas) else traj.index, dtype=float)
    steps = np.diff(times)
    steps = steps[steps > 0]
    scales = [_timescale(traj.index.to_numpy(dtype=float), traj[s].to_numpy(dtype=float))
              for s in signals if s in traj]
    scales = [v for v in scales if not np.isnan(v)]
    if not steps.size or not scales:
        return None
    width = max(ZOOM_TIMESCALES * float(np.median(scales)), ZOOM_MIN_SAMPLES * float(np.median(steps)))
    t0, t1 = float(times[0]), float(times[-1])
    if not t1 - t0 > ZOOM_AFTER_WINDOWS * width:
        return None
    centre = _worst_time(result, t, signals, 0.5 * (t0 + t1))
    lo = min(max(centre - width / 2, t0), t1 - width)
    return lo, lo + width


# ---- where it goes --------------------------------------------------------------------------------
@dataclass
class _Grid:
    """Panels of ``trials`` × ``signals``: a block of ``rows`` × ``cols`` panels per trial (the
    signals down the columns), ``across`` blocks side by side; lengths in inches."""

    trials: list[str]
    signals: list[str]
    zoom: bool
    cols: int
    rows: int
    across: int
    row_gap: float
    notes: list[str]

    @property
    def cell_w(self) -> float:
        return _LEFT + _PANEL_W + (_ZOOM_LEFT + _ZOOM_W if self.zoom else 0.0)

    @property
    def block_h(self) -> float:
        return self.rows * (_PANEL_H + self.row_gap) - self.row_gap + _BLOCK_GAP

    @property
    def width(self) -> float:
        return self.across * self.cols * self.cell_w + _RIGHT

    @property
    def top(self) -> float:
        return _TOP + _LINE * (2 + len(self.notes)) + _TITLE_ROOM

    @property
    def height(self) -> float:
        return self.top + -(-len(self.trials) // self.across) * self.block_h

    def place(self, i: int, j: int) -> tuple[float, float, int]:
        """Left and top of the panel of the i-th trial's j-th signal, and its row in the block."""
        block_row, block_col = divmod(i, self.across)
        col, row = divmod(j, self.rows)
        return ((block_col * self.cols + col) * self.cell_w + _LEFT,
                self.top + block_row * self.block_h + row * (_PANEL_H + self.row_gap), row)


def _arrange(trials: list[str], signals: list[str], zoom: bool, reserved: float, row_gap: float) -> _Grid:
    """The largest part of ``trials`` × ``signals`` (first ones first) that fits the size limits,
    with ``reserved`` inches of the height taken by the parameter table."""
    per_panel = 2 if zoom else 1
    cell_w = _LEFT + _PANEL_W + (_ZOOM_LEFT + _ZOOM_W if zoom else 0.0)
    max_cols = max(1, int((MAX_WIDTH_IN - _RIGHT) // cell_w))
    room = MAX_HEIGHT_IN - reserved - (_TOP + 4 * _LINE + _TITLE_ROOM)  # with two lines of notes
    max_rows = max(1, int((room - _BLOCK_GAP + row_gap) // (_PANEL_H + row_gap)))
    shown = signals[:min(max_cols * max_rows, max(1, MAX_PANELS // per_panel))]
    cols = -(-len(shown) // max_rows)
    rows = -(-len(shown) // cols)
    block_h = rows * (_PANEL_H + row_gap) - row_gap + _BLOCK_GAP
    side = max(1, max_cols // cols)
    n = min(len(trials), side * max(1, int(room // block_h)), max(1, MAX_PANELS // (per_panel * len(shown))))
    down = -(-n // side)
    notes = []
    if n < len(trials):
        notes.append(f"showing {n} of {len(trials)} trials: {_short(trials[0], 24)} … "
                     f"{_short(trials[n - 1], 24)} (plot one with trial=NAME)")
    if len(shown) < len(signals):
        notes.append(f"showing the first {len(shown)} of {len(signals)} signals (choose with signals=[…])")
    return _Grid(trials[:n], shown, zoom, cols, rows, -(-n // down), row_gap, notes)


def _table(result) -> tuple[list[list[str]], float, float]:
    """The parameter lines in columns that fit :data:`MAX_WIDTH_IN`, at most :data:`_TABLE_ROWS`
    deep; the width of a column and the table's height (inches)."""
    lines = parameter_lines(result)
    if not lines:
        return [], 0.0, 0.0
    col_w = _CHAR_W * max(map(len, lines)) + 0.35
    ncol = max(1, min(-(-len(lines) // 6), int((MAX_WIDTH_IN - 0.3) // col_w)))
    rows = -(-len(lines) // ncol)
    if rows > _TABLE_ROWS:
        rows, keep = _TABLE_ROWS, _TABLE_ROWS * ncol - 1
        lines = lines[:keep] + [f"… and {len(lines) - keep} more parameters"]
    return [lines[k * rows:(k + 1) * rows] for k in range(ncol)], col_w, 0.15 + _TEXT_LINE * (rows + 1)


def _figure(grid: _Grid, title: str, table_w: float, table_h: float):
    """An empty figure for ``grid`` with its title and notes; the x offset of the panels."""
    from .figure import Figure

    width = max(grid.width, table_w + 0.3, 5.0)
    height = grid.height + table_h + 0.1
    fig = Figure(figsize=(width, height))
    fig.suptitle(title, fontsize=10, y=1 - _TOP / height, va="top")
    for k, note in enumerate(grid.notes):
        fig.text(0.5, 1 - (_TOP + _LINE * (2 + k)) / height, note, ha="center", va="top", fontsize=8,
                 style="italic")
    return fig, 0.5 * (width - grid.width)


def _add_axes(fig, left: float, top: float, width: float, sharex=None):
    w, h = fig.get_size_inches()
    ax = fig.add_axes((left / w, 1 - (top + _PANEL_H) / h, width / w, _PANEL_H / h), sharex=sharex)
    ax.tick_params(labelsize=7)
    return ax


def _bottom(ax, last: bool) -> None:
    """x label and tick labels on the last row of a column only (the column shares x)."""
    if last:
        ax.set_xlabel("time (s)", fontsize=8)
    else:
        ax.tick_params(labelbottom=False)


def _inside(index, window) -> slice:
    """The rows of a sorted ``index`` in ``window``, with one more on each side (a line reaches the edges)."""
    t = np.asarray(index, dtype=float)
    return slice(max(int(np.searchsorted(t, window[0], "left")) - 1, 0),
                 int(np.searchsorted(t, window[1], "right")) + 1)


def _draw_fit(ax, meas, traj, signal: str, window) -> None:
    """The measured dots and the identified line of ``signal`` (in ``window`` only, when given)."""
    for frame, dots, style in ((meas, True, {"ls": "none", "marker": ".", "ms": 2.5, "color": "0.55"}),
                               (traj, False, {"lw": 1.2, "color": "C0"})):
        if frame is not None and signal in frame:
            part = frame[signal] if window is None else frame[signal].iloc[_inside(frame.index, window)]
            ax.plot(*_thin(part.index.to_numpy(dtype=float), part.to_numpy(dtype=float), dots=dots), **style)


def _signals(result, trials: list[str], signals, frames: str) -> list[str]:
    """``signals`` checked against the trials' trajectories and ``frames`` (measurements or
    residuals); by default every column of ``frames`` (of the trajectories when there are none)."""
    if signals is None:
        found = list(dict.fromkeys(s for t in trials for s in getattr(result, frames).get(t, ())))
        return found or list(dict.fromkeys(s for t in trials for s in result.trajectories[t].columns))
    known = set().union(*(result.trajectories[t].columns for t in trials),
                        *(getattr(result, frames).get(t, ()) for t in trials))
    missing = [s for s in signals if s not in known]
    if missing:
        raise KeyError(f"no signal(s) {', '.join(missing)}; available: {', '.join(sorted(known))}")
    return list(signals)


def plot_fit(result, trial=None, *, signals=None, path=None):
    """Measured vs identified trajectories: a block of panels (one per signal) per trial.

    A trial whose record is long in units of its own dynamics (more than
    :data:`ZOOM_AFTER_WINDOWS` windows of :data:`ZOOM_TIMESCALES` autocorrelation times) gets
    a zoomed panel beside each full one, on the window (shaded in the full panel) around its
    largest scaled residual.  Every parameter with its 95 % interval and unit is listed under
    the panels.  Trials and signals that do not fit the size limits (module docstring) are
    left out, and the figure says so.

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
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    trials = _trial_names(result, trial)
    signals = _signals(result, trials, signals, "measurements") if trials else []
    chunks, col_w, table_h = _table(result)
    state = "success" if result.success else f"FAILED ({result.status})"
    title = f"{result.problem} · {result.method} · {state}"
    if not signals:
        grid = _Grid([], [], False, 1, 1, 1, _ROW_GAP, ["nothing to plot: the result holds no trajectories"])
    else:
        windows = {t: _zoom_window(result, t, signals) for t in trials}
        grid = _arrange(trials, signals, any(windows.values()), table_h, _ROW_GAP)
        if grid.zoom and not any(windows[t] for t in grid.trials):
            grid = _arrange(trials, signals, False, table_h, _ROW_GAP)
    fig, x0 = _figure(grid, title, len(chunks) * col_w, table_h)
    for i, t in enumerate(grid.trials):
        meas, traj = result.measurements.get(t), result.trajectories[t]
        window = windows[t] if grid.zoom else None
        shared: dict[str, object] = {}
        for j, s in enumerate(grid.signals):
            left, top, row = grid.place(i, j)
            last = row == grid.rows - 1 or j == len(grid.signals) - 1
            panels = [(None, left, _PANEL_W)]
            if window is not None:
                panels.append((window, left + _PANEL_W + _ZOOM_LEFT, _ZOOM_W))
            for win, x, width in panels:
                key = "full" if win is None else "zoom"
                ax = _add_axes(fig, x0 + x, top, width, sharex=shared.get(key))
                shared.setdefault(key, ax)
                _draw_fit(ax, meas, traj, s, win)
                ax.set_ylabel(_label(result, s), fontsize=8 if win is None else 7)
                if win is None and window is not None:
                    # the edges keep a narrow window visible
                    ax.axvspan(*window, facecolor="C1", edgecolor="C1", alpha=0.25, lw=1.0, zorder=3)
                elif win is not None:
                    ax.set_xlim(*win)
                if row == 0:
                    ax.set_title(_short(t) if win is None else f"zoom {win[0]:.4g}–{win[1]:.4g} s",
                                 fontsize=8, loc="right")
                _bottom(ax, last)
    w, h = fig.get_size_inches()
    if grid.trials:
        model_label = getattr(result, "trajectory_label", "") or f"identified ({result.method})"
        handles = [Line2D([], [], ls="none", marker=".", ms=6, color="0.55", label="measured"),
                   Line2D([], [], lw=1.2, color="C0", label=model_label)]
        if grid.zoom:
            handles.append(Patch(facecolor="C1", edgecolor="C1", alpha=0.25, label="zoomed window"))
        fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1 - (_TOP + _LINE) / h),
                   ncols=len(handles), frameon=False, fontsize=8)
    if chunks:
        top = 1 - grid.height / h
        fig.text(0.15 / w, top, "parameters, 95 % interval", va="top", fontsize=8, weight="bold")
        for k, chunk in enumerate(chunks):
            fig.text((0.15 + k * col_w) / w, top - _TEXT_LINE / h, "\n".join(chunk), va="top", ha="left",
                     family="monospace", fontsize=8)
    if path is not None:
        save_figure(fig, path)
    return fig


def plot_residuals(result, trial=None, *, signals=None, path=None):
    """Residuals (model − measurement) per fitted signal, with their RMS above each panel.

    Laid out as :func:`plot_fit` (without zoomed panels or parameter table).

    Parameters
    ----------
    result : Result
    trial : str or int, optional
        One trial (default: all).
    signals : list of str, optional
        Signals to show (default: every fitted signal).
    path : path-like, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    trials = _trial_names(result, trial)
    signals = _signals(result, trials, signals, "residuals") if trials else []
    title = f"{result.problem}: residuals (model − measured)"
    if not any(s in result.residuals.get(t, ()) for t in trials for s in signals):
        grid = _Grid([], [], False, 1, 1, 1, _TITLED_ROW_GAP,
                     ["nothing to plot: the result holds no residuals"])
    else:
        grid = _arrange(trials, signals, False, 0.0, _TITLED_ROW_GAP)
    fig, x0 = _figure(grid, title, 0.0, 0.0)
    for i, t in enumerate(grid.trials):
        res = result.residuals.get(t)
        shared = None
        for j, s in enumerate(grid.signals):
            left, top, row = grid.place(i, j)
            ax = _add_axes(fig, x0 + left, top, _PANEL_W, sharex=shared)
            shared = shared or ax
            name = f"{_short(t, 24)} · " if row == 0 else ""
            if res is not None and s in res:
                values = res[s].to_numpy(dtype=float)
                ax.plot(*_thin(res.index.to_numpy(dtype=float), values, dots=True), ls="none", marker=".",
                        ms=2.0, color="C3")
                unit = result.units.get(s, "")
                ax.set_title(f"{name}RMS {_rms(values[:, None])[0]:.3g}" + (f" {unit}" if unit else ""),
                             fontsize=8, loc="right")
            elif name:
                ax.set_title(name.rstrip(" ·"), fontsize=8, loc="right")
            ax.axhline(0.0, color="0.3", lw=0.8)
            ax.set_ylabel(_label(result, s), fontsize=8)
            _bottom(ax, row == grid.rows - 1 or j == len(grid.signals) - 1)
    if path is not None:
        save_figure(fig, path)
    return fig


# ---- method comparisons (colloc.studies.compare) ---------------------------------------------------
def _run_kind(result) -> str:
    """``"success"``, ``"rejected"`` (the solver converged, the fit is not accepted) or ``"failed"``."""
    return "success" if result.success else "rejected" if result.converged else "failed"


def _method_colors(comparison) -> dict[str, str]:
    return {label: f"C{i % 10}" for i, label in enumerate(comparison.methods)}


def _legend_under(fig, axes, fontsize: float, caption: str | None = None) -> None:
    """One legend of every labelled artist of ``axes`` (and ``caption`` above its entries), under
    the panels (the constrained layout makes room for it), so that it covers no data."""
    entries: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        fig.legend(list(entries.values()), list(entries), loc="outside lower center",
                   ncols=min(len(entries), 3), fontsize=fontsize, frameon=False, title=caption,
                   title_fontproperties={"size": fontsize, "style": "italic"})


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
    from matplotlib.ticker import MaxNLocator

    from .figure import Figure

    colors = _method_colors(comparison)
    fig = Figure(figsize=(11.0, 5.2), layout="constrained")
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
                ax.plot(x[keep][-1], obj[keep][-1], "o" if run.result.converged else "x",
                        color=color, ms=7, mew=1.8, mfc="none")
    for ax in (ax_it, ax_t):
        ax.set_yscale("log")
        ax.grid(True, which="major", alpha=0.3)
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
    caption = ("Dashed (time panel): no per-iteration timing is recorded for this method (IPOPT "
               "collocation / multiple shooting); its solve time is spread evenly over the iterations.")
    _legend_under(fig, (ax_it, ax_t), 8, caption if any_estimated else None)
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
    from .figure import Figure

    names = list(comparison.parameter_names)[:8]
    n = max(len(names), 1)
    ncols = min(n, 4)
    nrows = -(-n // ncols)
    fig = Figure(figsize=(max(3.4 * ncols + 0.6, 6.0), 2.9 * nrows + 1.4), layout="constrained")
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
    _legend_under(fig, axes[:len(names)], 7)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    more = len(comparison.parameter_names) - len(names)
    fig.suptitle(f"{comparison.problem}: estimates per start" +
                 (f" (first 8 of {len(comparison.parameter_names)} parameters)" if more > 0 else ""),
                 fontsize=10)
    if path is not None:
        save_figure(fig, path)
    return fig
