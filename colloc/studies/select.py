"""Choose among stochastic models by what they predict on data they were not fitted to.

:func:`select_model` fits every candidate :class:`colloc.StochasticProblem` on the first part of a
record (:class:`colloc.KalmanML`), predicts the rest ``h`` seconds ahead for each horizon
(the Kalman filter's k-step predictive distribution), and scores the predictions by their mean
log density (nats a sample) and 95 % coverage, beside two references fitted on the same first
part: persistence (``y(t − h)`` with the SD of the h-sample changes) and an AR(p) by least
squares — the black box that shows how much a mechanistic model leaves on the table.  The
choice is the successful candidate with the best mean held-out log score over the horizons; a
candidate whose fit fails (an estimate on a search-range bound, not converged, unstable) is not
chosen, whatever it scores.  A fit's own likelihood is not the criterion: a richer model always
fits the first part at least as well.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.errors import OptionsError
from ..definition.stochastic import StochasticProblem
from ..definition.trial import Trial
from ..results.prediction import StochasticModel, predict
from ..signals.forecast import coverage, fit_ar, ljung_box, log_score, persistence_forecast
from ..solving.kalman_ml import KalmanML, on_one_grid
from ..solving.solve import solve

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ModelSelection", "select_model"]


@dataclass
class ModelSelection:
    """The outcome of :func:`select_model`.

    ``table``: one row per candidate and reference (``kind`` ``model`` or ``reference``) with
    ``status``, ``free`` (parameters), ``aic`` (of the fit on the first part), and per horizon
    ``score_<h>`` (mean log density, nats a sample), ``coverage_<h>`` (95 % interval) and
    ``vs_persistence_<h>``; ``ljung_box_p``: the held-out one-step innovations' whiteness
    (10 lags); ``cpu_s``: the CPU seconds of a candidate's fit and scoring (its nested model's
    fit, when another candidate's, is not counted again).  ``best``: the chosen candidate (None
    if no fit succeeded).  ``results``: the candidates' fits on the first part."""

    table: pd.DataFrame
    best: str | None
    split: float
    horizons: tuple[float, ...]
    results: dict = field(default_factory=dict)
    cpu_s: float = 0.0

    def text(self) -> str:
        """The comparison table as printed lines."""
        hs = [f"{h:g}" for h in self.horizons]
        head = (f"{'model':<12}{'status':<20}{'free':>5}{'AIC(fit)':>12}"
                + "".join(f"{'score ' + h + ' s':>12}{'cov ' + h:>9}" for h in hs) + f"{'LB p':>8}{'CPU s':>7}")
        lines = [(f"held-out comparison: fitted before t = {self.split:g} s, scored after it "
                 "(mean log density, nats a sample; higher is better)"), head]
        for name, row in self.table.iterrows():
            aic = "" if not np.isfinite(row["aic"]) else f"{row['aic']:.6g}"
            free = "" if not np.isfinite(row["free"]) else f"{int(row['free'])}"
            lb = "" if not np.isfinite(row["ljung_box_p"]) else f"{row['ljung_box_p']:.2g}"
            cpu = "" if not np.isfinite(row.get("cpu_s", math.nan)) else f"{row['cpu_s']:.1f}"
            mark = " ←" if name == self.best else ""
            lines.append(f"{name:<12}{row['status']:<20}{free:>5}{aic:>12}"
                         + "".join(f"{row['score_' + h]:>12.4g}{row['coverage_' + h]:>9.3f}" for h in hs)
                         + f"{lb:>8}{cpu:>7}{mark}")
        lines.append("chosen: " + (f"{self.best} (the best held-out score among the fits that succeeded)"
                                   if self.best else "none: no candidate's fit succeeded"))
        return "\n".join(lines)

    def to_info(self) -> dict:
        """A JSON-ready copy (for ``Result.info["model_selection"]``)."""
        rows = {name: {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                       for k, v in row.items()} for name, row in self.table.to_dict(orient="index").items()}
        return {"split_s": self.split, "horizons_s": list(self.horizons), "best": self.best, "table": rows,
                "criterion": "mean held-out log score over the horizons, among the fits that succeeded",
                "cpu_s": self.cpu_s}


def _model_of(problem: StochasticProblem, result, trial: Trial) -> StochasticModel:
    dt = float(np.median(np.diff(trial.time)))
    lgm = problem.model_at(dt)
    output = problem.outputs[0]
    theta = {k: result.parameters[k] for k in lgm.parameter_names}
    return StochasticModel(lgm, theta, output, float(result.parameters.get(f"{output}_offset", 0.0)))


def select_model(candidates: Mapping[str, Callable[[Trial], StochasticProblem]], trial: Trial, *,
                 split: float | None = None, horizons: Sequence[float] = (0.1, 0.5), ar_order: int = 20,
                 method: KalmanML | None = None, progress: Callable[[str], None] | None = None) -> ModelSelection:
    """Fit each candidate on ``trial`` before ``split`` and score its predictions after it.

    Parameters
    ----------
    candidates : mapping
        Name → ``make(trial) -> StochasticProblem`` (one output).
    trial : Trial
        The record (evenly sampled; missing samples allowed in the fits, not in the references).
    split : float, optional
        Where the held-out part starts (s, the record's own time; default its middle).
    horizons : sequence of float
        Prediction horizons (s), each a whole number of samples.
    ar_order : int
        Order of the AR reference.
    method : KalmanML, optional
        The estimator (default ``KalmanML()``).
    progress : callable, optional
        Called with one line per candidate as it is done.
    """
    import pandas as pd

    if not candidates:
        raise OptionsError("select_model: no candidates")
    c0 = time.process_time()
    t = np.asarray(trial.time, dtype=float)
    split = float(0.5 * (t[0] + t[-1]) if split is None else split)
    if not t[0] < split < t[-1]:
        raise OptionsError(f"select_model: split {split:g} s lies outside the record '{trial.name}' "
                           f"({t[0]:g}–{t[-1]:g} s)")
    first = trial.window(None, split)
    method = KalmanML() if method is None else method
    horizons = tuple(float(h) for h in horizons)
    rows: dict[str, dict[str, Any]] = {}
    results = {}
    any_output = None
    for name, make in candidates.items():
        c_model = time.process_time()
        problem = make(first)
        if len(problem.outputs) != 1:
            raise OptionsError(f"select_model: candidate '{name}' has {len(problem.outputs)} outputs; one is needed")
        any_output = problem.outputs[0]
        result = solve(problem, method, throw=False)
        results[name] = result
        row = {"kind": "model", "status": result.status, "success": bool(result.success),
               "free": float(result.info.get("num_parameters", math.nan)),
               "aic": float(result.info.get("aic", math.nan))}
        model = _model_of(make(trial), result, trial)
        for h in horizons:
            table = predict(result, trial, horizon=h, window=(split, None), model=model)
            y, m, s = table["observed"], table["mean"], table["sd"]
            row[f"score_{h:g}"] = log_score(y, m, s)
            row[f"coverage_{h:g}"] = coverage(y, m, s)
        dt = float(np.median(np.diff(t)))
        one = predict(result, trial, horizon=dt, window=(split, None), model=model)
        z = ((one["observed"] - one["mean"]) / one["sd"]).to_numpy()
        row["ljung_box_p"] = ljung_box(z, 10)[1] if np.isfinite(z).sum() > 20 else math.nan
        row["cpu_s"] = time.process_time() - c_model
        rows[name] = row
        if progress is not None:
            progress(f"  {name}: {result.status}, held-out score "
                     + ", ".join(f"{row[f'score_{h:g}']:.4g} at {h:g} s" for h in horizons))
    assert any_output is not None  # there is at least one candidate (checked above)
    grid = on_one_grid(trial, [any_output])
    y_all = np.asarray(grid[any_output], dtype=np.float64)
    tg = np.asarray(grid.time, dtype=np.float64)
    before = tg < split
    y_fit = y_all[before]
    refs: dict[str, dict[str, Any]] = {"persistence": {"kind": "reference", "status": "reference", "success": False,
                            "free": 1.0, "aic": math.nan, "ljung_box_p": math.nan, "cpu_s": math.nan}}
    dt = float(np.median(np.diff(tg)))
    finite_fit = np.isfinite(y_fit).all() and np.isfinite(y_all).all()
    ar = fit_ar(y_fit, ar_order) if finite_fit and y_fit.size > 2 * ar_order + 1 else None
    if ar is not None:
        refs[f"AR({ar_order})"] = {"kind": "reference", "status": "reference", "success": False,
                                   "free": float(ar_order + 2), "aic": math.nan, "ljung_box_p": math.nan,
                                   "cpu_s": math.nan}
    for h in horizons:
        steps = round(h / dt)
        rows_h = np.flatnonzero(tg >= split + h - 1e-9 * dt)
        y = y_all[rows_h]
        pm, ps = persistence_forecast(y_all, steps, fit=y_fit)
        refs["persistence"][f"score_{h:g}"] = log_score(y, pm[rows_h], ps[rows_h])
        refs["persistence"][f"coverage_{h:g}"] = coverage(y, pm[rows_h], ps[rows_h])
        if ar is not None:
            am, asd = ar.forecast(y_all, steps)
            refs[f"AR({ar_order})"][f"score_{h:g}"] = log_score(y, am[rows_h], asd[rows_h])
            refs[f"AR({ar_order})"][f"coverage_{h:g}"] = coverage(y, am[rows_h], asd[rows_h])
    for name, row in rows.items():
        for h in horizons:
            row[f"vs_persistence_{h:g}"] = row[f"score_{h:g}"] - refs["persistence"][f"score_{h:g}"]
    for ref in refs.values():
        for h in horizons:
            ref[f"vs_persistence_{h:g}"] = ref[f"score_{h:g}"] - refs["persistence"][f"score_{h:g}"]
    rows.update(refs)
    table = pd.DataFrame.from_dict(rows, orient="index")
    ok = [n for n, r in rows.items() if r["kind"] == "model" and r["success"]]
    mean_score = {n: float(np.mean([rows[n][f"score_{h:g}"] for h in horizons])) for n in ok}
    best = max(mean_score, key=mean_score.__getitem__) if ok else None
    return ModelSelection(table, best, split, horizons, results, time.process_time() - c0)
