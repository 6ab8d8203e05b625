"""Profile of the objective over one parameter held fixed at a grid of values.

For a least-squares objective ``½ Σ r²`` with weights ``1/σ²`` (a negative log-likelihood
up to a constant), the profile ``Δ(v) = min_{others} J(v) − min J`` gives the
likelihood-ratio confidence interval ``{v : Δ(v) ≤ ½ χ²₁(0.95) = 1.92}``, which, unlike
the standard error, does not assume the objective is quadratic in the parameter.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from ..base.engine import check_client, pack, single_threaded, unpack
from ..base.errors import OptionsError
from ..definition.problem import Problem
from ..solving.ipopt import Ipopt
from ..solving.solve import solve
from ..transcription.methods import AbstractTranscription, default_method

if TYPE_CHECKING:
    from distributed import Client
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["Profile", "profile"]

#: ½ χ²₁ quantile at 95 %.
HALF_CHI2_95 = 1.920729410347062


@dataclass
class Profile:
    """Objective and re-optimised parameters along a grid of one fixed parameter.

    Attributes
    ----------
    name : str
        The profiled parameter.
    values : ndarray
        Grid values.
    objective : ndarray
        Optimal objective at each value (NaN where the solve failed).
    parameters : pandas.DataFrame
        The other parameters' optimal values, one row per grid value.
    success : ndarray of bool
    """

    name: str
    values: np.ndarray
    objective: np.ndarray
    parameters: pd.DataFrame
    success: np.ndarray

    @property
    def delta(self) -> np.ndarray:
        """Objective minus its smallest value on the grid."""
        return self.objective - np.nanmin(self.objective)

    def interval(self, threshold: float = HALF_CHI2_95) -> tuple[float, float]:
        """Where ``delta`` crosses ``threshold`` (linear interpolation on the grid); an end
        of the grid when the profile does not rise that far (``±inf`` is not returned: the
        interval is then only known to reach at least that end)."""
        v, d = self.values, self.delta
        i = int(np.nanargmin(d))
        lo = v[0]
        for j in range(i, 0, -1):
            if d[j - 1] > threshold >= d[j]:
                lo = v[j - 1] + (threshold - d[j - 1]) * (v[j] - v[j - 1]) / (d[j] - d[j - 1])
                break
        hi = v[-1]
        for j in range(i, len(v) - 1):
            if d[j + 1] > threshold >= d[j]:
                hi = v[j] + (threshold - d[j]) * (v[j + 1] - v[j]) / (d[j + 1] - d[j])
                break
        return float(lo), float(hi)

    def plot(self, path: str | os.PathLike[str] | None = None, *, ax: Axes | None = None,
             threshold: float = HALF_CHI2_95) -> Figure | Axes:
        """Δ objective against the value, with the 95 % likelihood-ratio threshold.

        Without ``ax``: drawn on a new figure (built without pyplot, shown once as a Jupyter
        cell's value), which is returned.  With ``ax``: drawn into it and ``ax`` is returned
        (its figure is the caller's to show).  ``path``: the figure is also written there."""
        fig = None
        if ax is None:
            from ..results.figure import Figure

            fig = Figure(figsize=(6, 3.6), layout="constrained")
            ax = fig.subplots()
        ok = self.success
        ax.plot(self.values[ok], self.delta[ok], "o-", ms=3)
        if (~ok).any():
            ax.plot(self.values[~ok], np.zeros((~ok).sum()), "x", color="C3", label="solve failed")
        ax.axhline(threshold, color="0.4", ls="--", lw=1, label="95 % likelihood-ratio level")
        lo, hi = self.interval(threshold)
        ax.axvspan(lo, hi, color="C2", alpha=0.15, label=f"95 % interval [{lo:.4g}, {hi:.4g}]")
        ax.set_xlabel(self.name)
        ax.set_ylabel("Δ objective")
        ax.set_title(f"profile of the objective over {self.name}")
        ax.legend(fontsize=8)
        if path is not None:
            from ..results.plotting import save_figure

            save_figure(cast("Figure", ax.figure), path)  # a subfigure's axes: savefig fails as before
        return ax if fig is None else fig


def _walk(problem: Problem, name: str, values: Sequence[float], method, solver, progress=None) -> list:
    """Solve at each of ``values`` in turn, each from the previous converged optimum;
    ``progress(i, value, result)`` after each solve."""
    var = problem.model.variable(name)
    symbol = var.flat[var.element_names.index(name)]
    results = []
    guess = None
    for i, v in enumerate(values):
        p = problem.copy()
        p.add_point_constraint(symbol, float(p.trials[0].time[0]), v, v, trial=0, name=f"profile:{name}")
        g = dict(guess or {})
        g[name] = float(v)
        res = solve(p, method, solver=solver, guess=g, throw=False, verdict=False)  # off-optimum on purpose
        results.append(res)
        if res.success:
            guess = dict(res.parameters)
        if progress is not None:
            progress(i, float(v), res)
    return results


def _walk_task(blob: bytes, values: list[float]) -> list:
    """Worker task: one segment of the grid (single-threaded)."""
    single_threaded()
    problem, name, method, solver = unpack(blob)
    return _walk(problem, name, values, method, solver)


def profile(problem: Problem, name: str, values: Sequence[float], *, method: AbstractTranscription | None = None,
            solver: Ipopt | None = None, progress: Callable[[int, float, object], None] | None = None,
            client: Client | None = None,
            segments: int | None = None) -> Profile:
    """Solve ``problem`` with parameter ``name`` held at each of ``values``.

    Parameters
    ----------
    problem : Problem
    name : str
        A scalar parameter element of the model.
    values : sequence of float
        Grid (sorted ascending); each solve starts from the previous optimum.
    method : transcription, optional
        Default ``Radau(degree=2)``, as :func:`colloc.solve` (a collocation method: the value is
        imposed as a constraint).
    solver : Ipopt, optional
    progress : callable, optional
        ``progress(i, value, result)`` after each solve (with a client: as each segment returns).
    client : dask.distributed.Client, optional
        Solve the grid as tasks on this Dask client (the engine of ``solve(starts=N)`` and
        ``colloc batch``).  The grid is cut into ``segments`` contiguous pieces, one task
        each, and each piece is walked with warm starts as without a client; so with
        ``segments=1`` the profile is the serial one exactly, and with more segments only
        the first value of each piece starts from the declared guesses instead of its
        neighbour's optimum (the same optimum when the profile is well posed).
    segments : int, optional
        Number of pieces with a client (default: the client's number of workers, at most
        the number of values).
    """
    method = default_method() if method is None else method
    if not isinstance(method, AbstractTranscription):
        raise OptionsError("profile() needs a collocation transcription (the value is a constraint)")
    names = problem.model.element_names("parameter")
    if name not in names:
        raise OptionsError(f"profile: '{name}' is not a parameter; parameters: {', '.join(names)}")
    grid = np.asarray(values, dtype=float)
    if grid.ndim != 1 or grid.size < 2 or np.any(np.diff(grid) <= 0):
        raise OptionsError("profile: values must be a strictly increasing 1-D grid of at least two values")
    solver = Ipopt(simulate=False, standard_errors=False) if solver is None else solver
    check_client(client, "profile")
    if client is None:
        if segments is not None:
            raise OptionsError("profile(segments=...) needs client= (it splits the grid between workers)")
        results = _walk(problem, name, grid.tolist(), method, solver, progress)
    else:
        if segments is None:
            segments = max(1, len(client.scheduler_info().get("workers", {})))
        if isinstance(segments, bool) or not isinstance(segments, (int, np.integer)) or segments < 1:
            raise OptionsError(f"profile(segments={segments!r}): expected a positive integer")
        pieces = [list(map(float, piece)) for piece in np.array_split(grid, min(int(segments), grid.size))]
        # hash=False: a unique key, so a release of an earlier identical scatter cannot drop it
        blob = client.scatter(pack((problem, name, method, solver)), broadcast=True, hash=False)
        futures = [client.submit(_walk_task, blob, piece, pure=False) for piece in pieces]
        results = []
        for future in futures:
            part = future.result()
            if progress is not None:
                for j, res in enumerate(part):
                    progress(len(results) + j, float(grid[len(results) + j]), res)
            results.extend(part)
    objective = [res.objective if res.success else np.nan for res in results]
    success = [bool(res.success) for res in results]
    rows = [{k: val for k, val in res.parameters.items() if k != name} for res in results]
    return Profile(name, grid, np.array(objective, dtype=float), pd.DataFrame(rows, index=grid),
                   np.array(success))
