"""Compare identification methods on one problem from several initial guesses.

:func:`compare` runs every method (a collocation transcription or a shooting baseline)
from the same ``starts`` initial parameter guesses and collects the results in a
:class:`Comparison`: a summary table, the ``comparison.json`` document of docs/contracts.md §3 and
two figures (objective history, estimates per start).  Nothing here prints.

Initial guesses
---------------
Start 0 uses the guesses declared in the model.  Starts ``1 … K−1`` draw each parameter
independently with ``numpy.random.default_rng(seed)``:

* both bounds finite and positive → log-uniform in ``[lower, upper]``;
* both bounds finite otherwise → uniform in ``[lower, upper]``;
* an infinite bound → ``guess · (1 + U(−0.5, 0.5))`` (the declared guess ± 50 %; a zero
  guess uses ± 50 % of the parameter's scale instead), clipped to the finite bound if any.

The draws depend only on ``seed``, the number of starts and the parameter declarations,
so every method starts from exactly the same points (passed as ``guess=`` to
:func:`colloc.solve`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..base.engine import check_client, pack, single_threaded, unpack
from ..base.errors import OptionsError
from ..base.files import json_safe, write_atomic
from ..base.versions import versions
from ..definition.problem import Problem
from ..results.report import solver_converged
from ..results.result import Result
from ..solving.ipopt import Ipopt
from ..solving.solve import solve
from ..transcription.methods import AbstractMethod

__all__ = ["CompareEvent", "Comparison", "Run", "compare", "initial_guesses"]

#: Parameters shown in the estimates figure (one panel each).
MAX_PANELS = 8

START_RULE = (
    "start 0: declared guesses; starts >= 1: log-uniform within finite positive bounds, "
    "uniform within other finite bounds, else declared guess x (1 +/- 50 %)"
)


@dataclass(frozen=True)
class Run:
    """One method from one start."""

    method: str  #: the label the method was given in :func:`compare`
    start: int
    initial_guess: dict[str, float]
    result: Result

    @property
    def time_s(self) -> float:
        """Wall time of the run (``result.timings["total_s"]``: the whole solve call)."""
        return float(self.result.timings.get("total_s", float("nan")))

    def history(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """``(iteration, objective, wall time s, time_estimated)`` per recorded iteration.

        The wall time counts from the start of the run (build included).  Methods that do
        not time their iterations (collocation with IPOPT, multiple shooting) get the solve
        time spread evenly over the iterations; ``time_estimated`` is then ``True``.
        """
        info = self.result.info
        obj = np.asarray(info.get("objective_history") or [], dtype=float)
        it = np.arange(obj.size)
        build = float(self.result.timings.get("build_s", 0.0) or 0.0)
        times = np.asarray(info.get("time_history") or [], dtype=float)
        if times.size == obj.size and times.size and np.all(np.isfinite(times)):
            return it, obj, build + times, False
        solve_s = float(self.result.timings.get("solve_s", self.time_s - build))
        if obj.size == 1:
            return it, obj, np.array([build + solve_s]), True
        return it, obj, build + solve_s * it / max(obj.size - 1, 1), True


@dataclass(frozen=True)
class CompareEvent:
    """What :func:`compare`'s ``progress`` callback receives before and after each run.

    ``result`` is ``None`` before the run starts.
    """

    index: int  #: 0-based position of the run
    total: int
    method: str
    start: int
    initial_guess: dict[str, float]
    result: Result | None = None


def _check_truth(truth, names: list[str]) -> dict[str, float] | None:
    if truth is None:
        return None
    if not isinstance(truth, Mapping):
        raise OptionsError("compare(truth=...): expected a mapping of parameter name to value, "
                           f"got {type(truth).__name__}")
    unknown = [k for k in truth if k not in names]
    if unknown:
        raise OptionsError(f"compare(truth=...): unknown parameter(s) {', '.join(map(str, unknown))}; "
                           f"parameters: {', '.join(names)}")
    return {k: float(v) for k, v in truth.items()}


def initial_guesses(problem: Problem, starts: int, seed: int = 0) -> list[dict[str, float]]:
    """The ``starts`` initial parameter guesses of :func:`compare` (see the module notes)."""
    if isinstance(starts, bool) or not isinstance(starts, (int, np.integer)) or starts < 1:
        raise OptionsError(f"compare(starts={starts!r}): expected an integer >= 1")
    model = problem.model
    names = model.element_names("parameter")
    lower, upper = (np.asarray(b, dtype=float) for b in model.bounds("parameter"))
    guess = np.asarray(model.guesses("parameter"), dtype=float)
    scale = np.asarray(model.scales("parameter"), dtype=float)
    rng = np.random.default_rng(seed)
    out = [dict(zip(names, guess.tolist()))]
    for _ in range(1, int(starts)):
        values = []
        for lo, hi, g, s in zip(lower, upper, guess, scale):
            if np.isfinite(lo) and np.isfinite(hi) and lo > 0 and hi > lo:
                v = math.exp(rng.uniform(math.log(lo), math.log(hi)))
            elif np.isfinite(lo) and np.isfinite(hi):
                v = rng.uniform(lo, hi)
            else:
                u = rng.uniform(-0.5, 0.5)
                v = g * (1 + u) if g != 0 else u * (s if s else 1.0)
                v = min(max(v, lo), hi)
            values.append(float(v))
        out.append(dict(zip(names, values)))
    return out


@dataclass
class Comparison:
    """Runs of several methods from several starts on one problem.

    Attributes
    ----------
    problem : str
    runs : list of Run
        In the order method, then start.
    methods : dict of str to str
        Label → the method's own name (``"single-shooting(adjoint, lbfgs)"`` …).
    parameter_names : list of str
    truth : dict of str to float or None
    starts, seed : int
    """

    problem: str
    runs: list[Run]
    methods: dict[str, str]
    parameter_names: list[str]
    truth: dict[str, float] | None = None
    starts: int = 1
    seed: int = 0
    notes: dict[str, Any] = field(default_factory=dict)

    # ---- derived numbers ---------------------------------------------------------------
    def parameter_error(self, run: Run) -> float:
        """Largest relative error ``|estimate/true − 1|`` over the parameters with a known,
        non-zero true value (NaN without truth)."""
        if not self.truth:
            return float("nan")
        errs = [abs(run.result.parameters[k] / t - 1.0) for k, t in self.truth.items()
                if t != 0 and k in run.result.parameters and np.isfinite(run.result.parameters[k])]
        return float(max(errs)) if errs else float("nan")

    def fastest_time(self) -> float:
        """Wall time of the fastest successful run (NaN when none succeeded)."""
        times = [r.time_s for r in self.runs if r.result.success and np.isfinite(r.time_s)]
        return float(min(times)) if times else float("nan")

    def time_ratio(self, run: Run) -> float:
        """``run`` time over the fastest successful run's time."""
        fastest = self.fastest_time()
        return float(run.time_s / fastest) if fastest > 0 else float("nan")

    @property
    def all_succeeded(self) -> bool:
        """Every run succeeded (its solver converged and its fit is accepted)."""
        return all(r.result.success for r in self.runs)

    @property
    def any_succeeded(self) -> bool:
        """At least one run succeeded (``colloc compare`` exits 1 when none did)."""
        return any(r.result.success for r in self.runs)

    # ---- outputs -----------------------------------------------------------------------
    def table(self) -> pd.DataFrame:
        """One row per run: method, start, solver_converged (the solver's own ending),
        success (the fit accepted too), status, iterations, time_s, objective, max_error_%
        (when the truth is known), time_ratio (to the fastest successful run), and the
        estimates themselves when there are at most 4 parameters."""
        rows = []
        for run in self.runs:
            r = run.result
            row = {"method": run.method, "start": run.start, "solver_converged": solver_converged(r),
                   "success": bool(r.success), "status": r.status,
                   "iterations": int(r.iterations), "time_s": run.time_s, "objective": float(r.objective)}
            if self.truth:
                row["max_error_%"] = 100.0 * self.parameter_error(run)
            row["time_ratio"] = self.time_ratio(run)
            if len(self.parameter_names) <= 4:
                row.update({k: r.parameters.get(k, float("nan")) for k in self.parameter_names})
            rows.append(row)
        return pd.DataFrame(rows)

    def format_table(self) -> str:
        """:meth:`table` as aligned text."""
        table = self.table()
        fmt = {"time_s": "{:.3f}".format, "objective": "{:.6g}".format, "time_ratio": "{:.2f}".format,
               "max_error_%": "{:.3g}".format}
        fmt.update({k: "{:.6g}".format for k in self.parameter_names if k in table.columns})
        return table.to_string(index=False, formatters=fmt, na_rep="-")

    def to_dict(self) -> dict:
        """The ``comparison.json`` document (docs/contracts.md §3 keys plus extras), JSON-safe."""
        runs = []
        for run in self.runs:
            r = run.result
            _, obj, times, estimated = run.history()
            runs.append({
                "method": run.method,
                "start": run.start,
                "success": bool(r.success),
                "iterations": int(r.iterations),
                "time_s": run.time_s,
                "objective": float(r.objective),
                "parameters": dict(r.parameters),
                "solver_converged": solver_converged(r),
                "status": r.status,
                "solver_status": r.solver_status,
                "message": r.message,
                "method_name": r.method,
                "initial_guess": dict(run.initial_guess),
                "parameter_error": self.parameter_error(run),
                "time_ratio_to_fastest": self.time_ratio(run),
                "standard_errors": r.standard_errors,
                "timings": dict(r.timings),
                "objective_history": obj,
                "time_history": times,
                "time_history_estimated": estimated,
            })
        return json_safe({
            "problem": self.problem,
            "runs": runs,
            "methods": dict(self.methods),
            "parameter_names": list(self.parameter_names),
            "truth": self.truth,
            "starts": self.starts,
            "seed": self.seed,
            "start_rule": START_RULE,
            "notes": self.notes,
            "versions": versions(),
        })

    def to_json(self, path: str | os.PathLike | None = None, *, indent: int | None = 1) -> str:
        """The document as JSON text; written atomically to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            write_atomic(path, text + "\n")
        return text

    def plot_objective_history(self, path=None):
        """See :func:`colloc.results.plotting.plot_objective_history`."""
        from ..results.plotting import plot_objective_history

        return plot_objective_history(self, path=path)

    def plot_estimates(self, path=None):
        """See :func:`colloc.results.plotting.plot_estimates`."""
        from ..results.plotting import plot_estimates

        return plot_estimates(self, path=path)

    def write(self, directory: str | os.PathLike) -> dict[str, Path]:
        """Write ``comparison.json``, ``objective_history.png`` and ``estimates.png`` into
        ``directory`` (created if needed; each file atomically).  Returns the paths by kind."""
        out = Path(directory)
        if out.exists() and not out.is_dir():
            raise OptionsError(f"{out}: exists and is not a folder")
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": out / "comparison.json", "objective_history": out / "objective_history.png",
                 "estimates": out / "estimates.png"}
        self.to_json(paths["json"])
        self.plot_objective_history(path=paths["objective_history"])
        self.plot_estimates(path=paths["estimates"])
        return paths

    def __repr__(self) -> str:
        ok = sum(r.result.success for r in self.runs)
        converged = sum(solver_converged(r.result) for r in self.runs)
        return (f"Comparison({self.problem}, methods={list(self.methods)}, starts={self.starts}, "
                f"{converged}/{len(self.runs)} runs converged, {ok} succeeded)")


def _run_task(blob: bytes, label: str, guess: dict[str, float]) -> Result:
    """Worker task: one run of :func:`compare` (single-threaded), the same call as the serial loop."""
    single_threaded()
    problem, methods, solver = unpack(blob)
    return solve(problem, methods[label], solver=solver, guess=guess, throw=False)


def compare(
    problem: Problem,
    methods: Mapping[str, AbstractMethod],
    *,
    starts: int = 1,
    seed: int = 0,
    truth: Mapping[str, float] | None = None,
    solver: Ipopt | None = None,
    progress: Callable[[CompareEvent], None] | None = None,
    client=None,
) -> Comparison:
    """Run every method from the same ``starts`` initial guesses.

    Parameters
    ----------
    problem : Problem
    methods : mapping of str to AbstractMethod
        Label → method object, e.g. ``{"midpoint": Midpoint(), "adjoint":
        SingleShooting(Adjoint(), LBFGS())}``.  The labels name the runs.
    starts : int
        Number of initial guesses (start 0 = the declared guesses; see the module notes for
        how the others are drawn).
    seed : int
        Seed of the random starts.
    truth : mapping of str to float, optional
        Known parameter values (synthetic data): adds the relative parameter error.
    solver : Ipopt, optional
        Passed to :func:`colloc.solve` for every run.
    progress : callable, optional
        Called with a :class:`CompareEvent` before (``result=None``) and after every run.
        With a client, every "before" event comes first (all runs are submitted at once) and
        the "after" events follow in run order.
    client : dask.distributed.Client, optional
        Run every (method, start) as a task on this Dask client (the engine of
        ``solve(starts=N)`` and ``colloc batch``): each run is the same ``solve`` call as
        without a client, on a single-threaded worker, so the estimates are the same.

    Returns
    -------
    Comparison

    Notes
    -----
    A run that does not converge is recorded (``success`` false), never raised.  Errors in
    the set-up (a method that cannot handle the problem …) propagate.
    """
    if not isinstance(problem, Problem):
        raise OptionsError(f"compare() needs a colloc.Problem, got {type(problem).__name__}")
    if not isinstance(methods, Mapping) or not methods:
        raise OptionsError("compare(methods=...): expected a non-empty mapping of label to method object")
    for label, method in methods.items():
        if not isinstance(label, str) or not label:
            raise OptionsError(f"compare(methods=...): labels must be non-empty strings, got {label!r}")
        if not isinstance(method, AbstractMethod):
            raise OptionsError(f"compare(methods=...): '{label}' is {method!r}, expected a method object "
                               "such as colloc.Midpoint() or colloc.SingleShooting()")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise OptionsError(f"compare(seed={seed!r}): expected an integer")
    if solver is not None and not isinstance(solver, Ipopt):
        raise OptionsError(f"compare(solver=...): expected colloc.Ipopt, got {type(solver).__name__}")
    names = problem.model.element_names("parameter")
    truth = _check_truth(truth, names)
    guesses = initial_guesses(problem, starts, seed)
    total = len(methods) * len(guesses)
    check_client(client, "compare")
    runs: list[Run] = []
    if client is None:
        for label, method in methods.items():
            for k, guess in enumerate(guesses):
                if progress is not None:
                    progress(CompareEvent(len(runs), total, label, k, dict(guess)))
                result = solve(problem, method, solver=solver, guess=guess, throw=False)
                runs.append(Run(label, k, dict(guess), result))
                if progress is not None:
                    progress(CompareEvent(len(runs) - 1, total, label, k, dict(guess), result))
    else:
        blob = client.scatter(pack((problem, dict(methods), solver)), broadcast=True, hash=False)
        order = [(label, k, dict(guess)) for label in methods for k, guess in enumerate(guesses)]
        futures = []
        for i, (label, k, guess) in enumerate(order):
            if progress is not None:
                progress(CompareEvent(i, total, label, k, dict(guess)))
            futures.append(client.submit(_run_task, blob, label, guess, pure=False))
        for i, ((label, k, guess), future) in enumerate(zip(order, futures)):
            result = future.result()
            runs.append(Run(label, k, guess, result))
            if progress is not None:
                progress(CompareEvent(i, total, label, k, dict(guess), result))
    return Comparison(problem=problem.name, runs=runs,
                      methods={label: m.name for label, m in methods.items()},
                      parameter_names=names, truth=truth, starts=int(starts), seed=int(seed))
