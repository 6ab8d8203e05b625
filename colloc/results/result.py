"""The result of an identification: numbers only, no symbols.

Field names follow :class:`scipy.optimize.OptimizeResult` (``success``, ``status``,
``message``, …).  Arrays are user-facing, so rows are time: each trajectory is a pandas
DataFrame indexed by time with one column per signal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.files import dumps_compact_arrays, json_safe, write_atomic

if TYPE_CHECKING:  # imported where a table is made: 0.15-0.2 s, beside the solve (base/prefetch.py)
    import pandas as pd

    from ..definition.problem import Problem
    from ..definition.trial import Trial
    from .figure import Figure
    from .prediction import StochasticModel

__all__ = ["FIT_REJECTED", "INTERVAL_Z", "Estimate", "Result"]

#: Standard normal quantile of a two-sided 95 % interval.
INTERVAL_Z = 1.959963984540054

#: Statuses :func:`colloc.finalize` gives a solve that converged but whose fit it does not accept
#: (``Result.solver_status`` keeps the solver's own ending).
FIT_REJECTED = ("poor_fit", "parameter_at_bound")


def _frame_to_dict(frame: pd.DataFrame) -> dict:
    out = {"time": frame.index.to_numpy()}
    out.update({c: frame[c].to_numpy() for c in frame.columns})
    return out


def _frame_from_dict(d: dict) -> pd.DataFrame:
    import pandas as pd

    d = {k: np.array([np.nan if v is None else v for v in vals], dtype=float) for k, vals in d.items()}
    time = d.pop("time")
    return pd.DataFrame(d, index=pd.Index(time, name="time"))


@dataclass
class Estimate:
    """What an estimator found, before it is judged: the input of :func:`colloc.finalize`.

    Every estimator (collocation, shooting, the Kalman maximum likelihood, the hybrid fits)
    fills one and hands it to :func:`~colloc.results.report.finalize`, which decides the
    verdict, the warnings, the intervals and the final ``success``/``status``/``message``, and
    only then builds the :class:`Result`: a result is made once, already judged, and its status
    is never rewritten.  The fields are :class:`Result`'s of the same names; ``success``,
    ``status`` and ``message`` are the estimator's own (``solver_status``, when empty, becomes
    ``status``), and ``fit_verdict`` is a verdict the estimator made itself (at its own
    threshold), used when ``finalize`` is asked not to make one.
    """

    problem: str
    method: str
    success: bool
    status: str
    message: str
    iterations: int
    objective: float
    parameters: dict[str, float]
    standard_errors: dict[str, float | None] | None
    covariance: pd.DataFrame | None
    trajectories: dict[str, pd.DataFrame]
    measurements: dict[str, pd.DataFrame]
    residuals: dict[str, pd.DataFrame]
    timings: dict[str, float]
    num_nodes: int
    trials: list[str]
    versions: dict[str, str]
    violations: list[dict] = field(default_factory=list)
    simulation: dict[str, dict] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    initial_parameters: dict[str, float] = field(default_factory=dict)
    solver_status: str = ""
    descriptions: dict[str, str] = field(default_factory=dict)
    trajectory_label: str = ""
    notes: list[str] = field(default_factory=list)
    fit_verdict: dict[str, Any] = field(default_factory=dict)
    initial_estimate: dict[str, Any] = field(default_factory=dict)
    starts: dict[str, Any] = field(default_factory=dict)
    local_minima: list[dict[str, Any]] | None = None
    model_evaluation: str = ""


@dataclass
class Result:
    """Outcome of :func:`colloc.solve`.

    Attributes
    ----------
    problem, method : str
    success : bool
    status : str
        The solver's return status (``"Solve_Succeeded"``, ``"Maximum_Iterations_Exceeded"``…),
        or ``"poor_fit"`` when the solver converged but the residuals are far above the
        declared noise (see :mod:`colloc.results.verdict`; details in :attr:`fit_verdict`).
    message : str
    iterations : int
    objective : float
        ``½ Σ w (y − ŷ)²`` plus extra terms, in the problem's units (not solver-scaled).
    parameters : dict of str to float
        Identified parameters by element name.
    standard_errors : dict of str to float or None
        From the Gauss–Newton covariance; NaN where not estimable.
    covariance : pandas.DataFrame or None
        Parameter covariance, rows and columns named.
    trajectories : dict of str to pandas.DataFrame
        Per trial (by name): node times × (states, free inputs, outputs).
    measurements : dict of str to pandas.DataFrame
        Per trial: sample times × fitted signals, as measured.
    residuals : dict of str to pandas.DataFrame
        Per trial: sample times × fitted signals, model minus measurement (unweighted).
    timings : dict
        ``build_s``, ``solve_s``, ``total_s`` and more.
    num_nodes : int
        Collocation nodes over all trials.
    trials : list of str
    versions : dict of str to str
    violations : list of dict
        Worst constraint violations by name (filled when the solve failed).
    simulation : dict
        Per trial: ``status``, ``message`` and ``nrmse`` (signal → value), the identified
        model simulated with CVODES from the identified initial state.
    units : dict of str to str
    info : dict
        Everything else, particular to a method (residual variance, degrees of freedom,
        objective history…).
    initial_parameters : dict of str to float
        The parameters the solver started from (by default the equation-error estimate).
    solver_status : str
        The solver's (or baseline's) own return status, kept when ``status`` becomes
        ``"poor_fit"``; equal to ``status`` otherwise.
    warnings : list of dict
        Diagnostics (``code``, ``message``, names concerned): a parameter at a bound, not
        identifiable, strongly correlated estimates, a failed simulation, a poor fit… (see
        :mod:`colloc.results.diagnostics`).
    descriptions : dict of str to str
        What each parameter element means, where the model says so.
    intervals : dict of str to (float, float)
        95 % interval of each parameter, on a scale that keeps it in the parameter's domain
        (log for a positive parameter; see :func:`colloc.results.report.parameter_intervals`);
        ``(nan, nan)`` where no standard error exists.
    interval_scales : dict of str to str
        The scale of each interval: ``"log"``, ``"-log"``, ``"logit"``, ``"truncated"`` (a Wald
        interval cut at zero, for a one-signed parameter within one standard error of it),
        ``"linear"`` or ``"none"`` (:func:`colloc.results.report.parameter_intervals`).
    simulation_note : str
        Why there is no forward-simulation check, when :attr:`simulation` is empty.
    trajectory_label : str
        What :attr:`trajectories` are, when they are not the fitted model's own trajectory (a
        Kalman filter's one-step-ahead prediction); figures and reports name them so.
    notes : list of str
        Quantities derived from the estimates that a reader judges them by (a gain over m·g·h,
        an information criterion), one line each, printed under the table.
    fit_verdict : dict
        The fit verdict (:func:`colloc.fit_verdict`): ``verdict`` (``"good"``, ``"poor_fit"``,
        ``"not_applicable"`` …), ``reason``, the per-signal and per-trial checks; empty when the
        result was not judged against a declared noise.
    initial_estimate : dict
        How the start was found (:class:`colloc.solving.start.InitialEstimate`'s summary:
        ``source``, ``message``, ``time_s``…, and ``auto_starts`` when the first solve was not
        acceptable and several starts followed); empty when the method chose no start.
    starts : dict
        After several starts: ``count``, ``converged``, ``failed``, ``best_start``, every run
        (:func:`colloc.solving.starts.solve_starts`); for the Kalman maximum likelihood, ``count``.
    local_minima : list of dict or None
        After several starts, the distinct local minima reached (``objective``, ``parameters``,
        ``starts``: how many starts reached it, ``start_indices``); ``None`` after one start.
    model_evaluation : str
        How the model was evaluated: ``"compiled (cache hit)"``, ``"compiled (2.1 s)"``,
        ``"interpreted (small problem)"`` … (the summary's timing line prints it).

    Notes
    -----
    A result is made by :func:`colloc.finalize` from an :class:`Estimate`, already judged
    (its ``success``, ``status``, ``warnings`` and ``intervals`` decided before it exists).
    """

    problem: str
    method: str
    success: bool
    status: str
    message: str
    iterations: int
    objective: float
    parameters: dict[str, float]
    standard_errors: dict[str, float | None] | None
    covariance: pd.DataFrame | None
    trajectories: dict[str, pd.DataFrame]
    measurements: dict[str, pd.DataFrame]
    residuals: dict[str, pd.DataFrame]
    timings: dict[str, float]
    num_nodes: int
    trials: list[str]
    versions: dict[str, str]
    violations: list[dict] = field(default_factory=list)
    simulation: dict[str, dict] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    initial_parameters: dict[str, float] = field(default_factory=dict)
    solver_status: str = ""
    warnings: list[dict] = field(default_factory=list)
    descriptions: dict[str, str] = field(default_factory=dict)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    interval_scales: dict[str, str] = field(default_factory=dict)
    simulation_note: str = ""
    trajectory_label: str = ""
    notes: list[str] = field(default_factory=list)
    fit_verdict: dict[str, Any] = field(default_factory=dict)
    initial_estimate: dict[str, Any] = field(default_factory=dict)
    starts: dict[str, Any] = field(default_factory=dict)
    local_minima: list[dict[str, Any]] | None = None
    model_evaluation: str = ""

    def __post_init__(self) -> None:
        if not self.solver_status:
            self.solver_status = self.status

    def interval(self, name: str) -> tuple[float, float]:
        """The 95 % interval of parameter ``name``: :attr:`intervals`, else ±1.96 standard
        errors (a result made before intervals were computed), ``(nan, nan)`` without one."""
        if name in self.intervals:
            lo, hi = self.intervals[name]
            return (float("nan") if lo is None else float(lo), float("nan") if hi is None else float(hi))
        se = (self.standard_errors or {}).get(name)
        value = self.parameters.get(name, float("nan"))
        if se is None or not np.isfinite(se):
            return float("nan"), float("nan")
        return value - INTERVAL_Z * se, value + INTERVAL_Z * se

    # ---- convenience --------------------------------------------------------------------
    @property
    def converged(self) -> bool:
        """Whether the solver (or baseline) converged, whatever the judgement of the fit: the
        result succeeded, or :func:`colloc.finalize` rejected its fit after convergence
        (:data:`FIT_REJECTED`)."""
        return bool(self.success) or self.status in FIT_REJECTED

    @property
    def x(self) -> np.ndarray:
        """Identified parameters as an array, in declaration order (scipy's name)."""
        return np.array(list(self.parameters.values()))

    def parameter_table(self, truth: dict[str, float] | None = None) -> pd.DataFrame:
        """Parameters with standard errors (and truth and % error when ``truth`` is given)."""
        import pandas as pd

        rows = []
        for name, value in self.parameters.items():
            row = {"parameter": name, "identified": value}
            if truth is not None and name in truth:
                row["true"] = truth[name]
                row["error_%"] = 100.0 * (value - truth[name]) / truth[name] if truth[name] else np.nan
            se = (self.standard_errors or {}).get(name, np.nan)
            se = np.nan if se is None else float(se)
            row["std_error"] = se
            row["ci95_low"], row["ci95_high"] = self.interval(name)
            row["unit"] = self.units.get(name, "")
            row["description"] = self.descriptions.get(name, "")
            rows.append(row)
        table = pd.DataFrame(rows).set_index("parameter")
        cols = [c for c in ("true", "identified", "error_%", "std_error", "ci95_low", "ci95_high", "unit",
                            "description") if c in table.columns]
        return table[cols]

    def format_table(self, truth: dict[str, float] | None = None) -> str:
        """Parameter table as text: name, (true,) identified, (% error,) standard error, 95 %
        interval (:attr:`intervals`: log scale for positive parameters), unit and description.
        A standard error that cannot be estimated prints as ``n/a`` (the reason is among
        :attr:`warnings`)."""
        se = self.standard_errors or {}
        describe = any(self.descriptions.get(n) for n in self.parameters)
        width = max([9, *(len(n) for n in self.parameters)]) + 1
        head = f"{'parameter':<{width}}" + (f"{'true':>12}" if truth else "") + f"{'identified':>14}"
        head += (f"{'error':>10}" if truth else "") + f"{'std error':>12}  {'95 % interval':<28}{'unit':<12}"
        if describe:
            head += "meaning"
        lines = [head.rstrip()]
        for name, value in self.parameters.items():
            line = f"{name:<{width}}"
            if truth:
                line += f"{truth.get(name, float('nan')):>12.6g}"
            line += f"{value:>14.6g}"
            if truth:
                t = truth.get(name, float("nan"))
                line += f"{100 * (value - t) / t:>+9.2f}%" if t else f"{'':>10}"
            e = se.get(name)
            lo, hi = self.interval(name)
            if e is not None and np.isfinite(e) and np.isfinite(lo) and np.isfinite(hi):
                line += f"{e:>12.4g}  " + (f"[{lo:.5g}, {hi:.5g}]".ljust(27) + " ")
            elif e is not None and np.isfinite(e):
                line += f"{e:>12.4g}  " + "".ljust(28)
            else:
                line += f"{'n/a':>12}  " + "".ljust(28)
            line += f"{self.units.get(name, ''):<12}"
            if describe:
                line += self.descriptions.get(name, "")
            lines.append(line.rstrip())
        if truth:
            errs = [abs(self.parameters[k] / truth[k] - 1) * 100 for k in self.parameters if truth.get(k)]
            if errs:
                lines.append(f"|error|: mean {np.mean(errs):.2f}%, max {np.max(errs):.2f}%")
        logs = [n for n, k in self.interval_scales.items() if k in ("log", "-log", "logit")]
        if logs:
            lines.append(f"95 % intervals of {', '.join(logs)} on the "
                         + ("log scale (parameters of one sign)"
                            if all(self.interval_scales[n] != "logit" for n in logs)
                            else "log or logit scale (inside their physical bounds)"))
        cut = [n for n, k in self.interval_scales.items() if k == "truncated"]
        if cut:
            lines.append(f"95 % intervals of {', '.join(cut)} cut at zero: within one standard error of it")
        return "\n".join(lines)

    def timing_line(self) -> str:
        """``build … · solve … · covariance … · simulation … · total …`` (total: the whole call),
        then how the model was evaluated (:attr:`model_evaluation`, e.g. ``model compiled (cache hit)``)."""
        t = self.timings
        parts = [(k, t.get(f"{k}_s")) for k in ("start", "build", "solve", "covariance", "simulation")]
        shown = " · ".join(f"{k} {v:.2f} s" for k, v in parts
                           if v is not None and np.isfinite(v) and (v >= 0.005 or k in ("build", "solve")))
        total = t.get("total_s", float("nan"))
        model = f" · model {self.model_evaluation}" if self.model_evaluation else ""
        return f"nodes {self.num_nodes} · {shown} · total {total:.2f} s{model}"

    def summary(self, truth: dict[str, float] | None = None) -> str:
        """A human-readable report: status, timings, parameter table, simulation check."""
        ending = (self.status if self.solver_status in ("", self.status)
                  else f"{self.status}; solver: {self.solver_status}")
        model = "".join(f" · {label} {self.info[key]}" for key, label in (("controller", "controller"),
                                                                          ("noise_model", "noise model"))
                        if isinstance(self.info.get(key), str))
        lines = [
            (f"{self.problem} · {self.method}{model} · {'success' if self.success else 'FAILED'} "
            f"({ending}) · {self.iterations} iterations · objective {self.objective:.6g}"),
            self.timing_line(),
            "",
            self.format_table(truth),
        ]
        lines += self.notes
        if self.fit_verdict:
            from .verdict import verdict_line

            lines.append("")
            lines.append(verdict_line(self.fit_verdict))
            if not self.success and self.status == "poor_fit":
                lines.append(f"  {self.fit_verdict['reason']}")
        if self.simulation:
            lines.append("")
            for trial, sim in self.simulation.items():
                nrmse = ", ".join(f"{k} {v:.3%}" if v is not None and np.isfinite(v) else f"{k} n/a (constant)"
                                  for k, v in sim.get("nrmse", {}).items())
                detail = f" · NRMSE {nrmse}" if nrmse else f" · {sim['message']}"
                lines.append(f"forward simulation of '{trial}': {sim['status']}{detail}")
        elif self.simulation_note:
            lines += ["", f"forward simulation: none ({self.simulation_note})"]
        if self.initial_parameters:
            start = ", ".join(f"{k} {v:.4g}" for k, v in list(self.initial_parameters.items())[:8])
            source = f" ({self.initial_estimate['source']})" if "source" in self.initial_estimate else ""
            more = " …" if len(self.initial_parameters) > 8 else ""
            lines += ["", f"started from{source}: {start}{more}"]
        minima = self.local_minima
        if minima is not None:
            runs = self.starts
            found = "; ".join(f"objective {m['objective']:.6g} ({m['starts']} start{'s' if m['starts'] != 1 else ''})"
                              for m in minima[:5])
            lines.append(f"{runs.get('count', '?')} starts · {runs.get('failed', 0)} failed · "
                         f"{len(minima)} distinct local minim{'um' if len(minima) == 1 else 'a'}: {found or 'none'}")
        if self.warnings:
            from .diagnostics import warning_line

            lines.append("")
            lines += [warning_line(w) for w in self.warnings]
        if self.violations:
            lines.append("")
            lines.append("worst constraint violations:")
            lines += [f"  {v['violation']:.3g}  {v['constraint']}" for v in self.violations]
        return "\n".join(lines)

    # ---- JSON ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The result document (docs/contracts.md §4 keys plus extras), JSON-safe."""
        doc = {
            "problem": self.problem,
            "method": self.method,
            "success": self.success,
            "status": self.status,
            "solver_status": self.solver_status,
            "message": self.message,
            "iterations": self.iterations,
            "objective": self.objective,
            "parameters": self.parameters,
            "initial_parameters": self.initial_parameters,
            "timings": self.timings,
            "num_nodes": self.num_nodes,
            "trials": self.trials,
            "versions": self.versions,
        }
        if self.standard_errors is not None:
            doc["standard_errors"] = self.standard_errors  # NaN (not estimable) becomes null
        doc["warnings"] = self.warnings
        doc["fit_verdict"] = self.fit_verdict
        doc["descriptions"] = self.descriptions
        doc["covariance"] = None if self.covariance is None else {
            "names": list(self.covariance.columns),
            "matrix": self.covariance.to_numpy(),
        }
        doc["intervals"] = {k: list(v) for k, v in self.intervals.items()}
        doc["interval_scales"] = self.interval_scales
        doc["violations"] = self.violations
        doc["simulation"] = self.simulation
        doc["simulation_note"] = self.simulation_note
        doc["trajectory_label"] = self.trajectory_label
        doc["notes"] = self.notes
        doc["units"] = self.units
        doc["initial_estimate"] = self.initial_estimate
        doc["starts"] = self.starts
        doc["local_minima"] = self.local_minima
        doc["model_evaluation"] = self.model_evaluation
        doc["info"] = self.info
        doc["trajectories"] = {k: _frame_to_dict(v) for k, v in self.trajectories.items()}
        doc["measurements"] = {k: _frame_to_dict(v) for k, v in self.measurements.items()}
        doc["residuals"] = {k: _frame_to_dict(v) for k, v in self.residuals.items()}
        return json_safe(doc)

    def to_json(self, path: str | os.PathLike | None = None, *, indent: int | None = 1) -> str:
        """The result document as JSON text; written atomically to ``path`` when given.

        With ``indent``, long arrays of numbers (the trajectories, measurements and residuals)
        are written on one line each (:func:`dumps_compact_arrays`)."""
        text = dumps_compact_arrays(self.to_dict(), indent)
        if path is not None:
            write_atomic(path, text + "\n")
        return text

    @classmethod
    def from_json(cls, source: str | os.PathLike) -> Result:
        """Read a result document from a path or a JSON string."""
        text = str(source)
        if not text.lstrip().startswith("{"):
            text = Path(source).read_text(encoding="utf-8")
        doc = json.loads(text)
        nan = float("nan")

        def num(d):
            return None if d is None else {k: nan if v is None else float(v) for k, v in d.items()}

        cov = None
        if doc.get("covariance"):
            import pandas as pd

            names = doc["covariance"]["names"]
            m = np.array([[nan if v is None else v for v in row] for row in doc["covariance"]["matrix"]], dtype=float)
            cov = pd.DataFrame(m, index=names, columns=names)
        old = doc.get("info", {})
        return cls(
            problem=doc["problem"],
            method=doc["method"],
            success=bool(doc["success"]),
            status=doc["status"],
            message=doc.get("message", ""),
            iterations=int(doc["iterations"]),
            objective=nan if doc["objective"] is None else float(doc["objective"]),
            parameters=num(doc["parameters"]),
            standard_errors=num(doc.get("standard_errors")),
            covariance=cov,
            trajectories={k: _frame_from_dict(v) for k, v in doc.get("trajectories", {}).items()},
            measurements={k: _frame_from_dict(v) for k, v in doc.get("measurements", {}).items()},
            residuals={k: _frame_from_dict(v) for k, v in doc.get("residuals", {}).items()},
            timings=doc["timings"],
            num_nodes=int(doc["num_nodes"]),
            trials=list(doc["trials"]),
            versions=doc["versions"],
            violations=doc.get("violations", []),
            simulation=doc.get("simulation", {}),
            units=doc.get("units", {}),
            info=doc.get("info", {}),
            initial_parameters=num(doc.get("initial_parameters")) or {},
            solver_status=doc.get("solver_status", doc["status"]),
            warnings=list(doc.get("warnings", [])),
            descriptions=dict(doc.get("descriptions", {})),
            intervals={k: (nan if v[0] is None else float(v[0]), nan if v[1] is None else float(v[1]))
                       for k, v in doc.get("intervals", {}).items()},
            interval_scales=dict(doc.get("interval_scales", {})),
            simulation_note=doc.get("simulation_note", ""),
            trajectory_label=doc.get("trajectory_label", ""),
            notes=list(doc.get("notes", [])),
            # documents written before the verdict had a field of its own kept it in ``info``
            fit_verdict=dict(doc.get("fit_verdict") or old.get("fit_verdict") or {}),
            # and so did documents written before these four had fields (2026-11-29)
            initial_estimate=dict(doc.get("initial_estimate") or old.get("initial_estimate") or {}),
            starts=dict(doc.get("starts") or (old["starts"] if isinstance(old.get("starts"), dict) else {})),
            local_minima=doc["local_minima"] if "local_minima" in doc else old.get("local_minima"),
            model_evaluation=str(doc.get("model_evaluation") or old.get("compiled") or ""),
        )

    # ---- prediction ---------------------------------------------------------------------
    def predict(self, trial: Trial, *, horizon: float, window: tuple[float | None, float | None] | None = None,
                model: Problem | StochasticModel | None = None) -> pd.DataFrame:
        """``horizon``-ahead predictive distributions on ``trial`` (``time, observed, mean, sd``):
        see :func:`colloc.results.prediction.predict`.  ``model``: the problem (or a
        :class:`~colloc.results.prediction.StochasticModel`); by default the registered problem's."""
        from .prediction import predict, registered_model

        return predict(self, trial, horizon=horizon, window=window,
                       model=model if model is not None else registered_model(self, trial))

    # ---- plots --------------------------------------------------------------------------
    def plot_fit(self, trial: str | int | None = None, *, signals: Sequence[str] | None = None,
                 path: str | os.PathLike[str] | None = None) -> Figure:
        """Measured vs identified trajectories, one panel per signal.

        See :func:`colloc.results.plotting.plot_fit`.
        """
        from .plotting import plot_fit

        return plot_fit(self, trial=trial, signals=signals, path=path)

    def plot_residuals(self, trial: str | int | None = None, *, signals: Sequence[str] | None = None,
                       path: str | os.PathLike[str] | None = None) -> Figure:
        """Residuals (model − measurement) per fitted signal. See :mod:`colloc.results.plotting`."""
        from .plotting import plot_residuals

        return plot_residuals(self, trial=trial, signals=signals, path=path)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v:.6g}" for k, v in list(self.parameters.items())[:8])
        return (
            f"Result({self.problem}, {self.method}, success={self.success}, "
            f"iterations={self.iterations}, {params})"
        )
