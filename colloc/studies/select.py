"""Choose among stochastic models by what they predict on data they were not fitted to.

:func:`select_model` fits every candidate :class:`colloc.StochasticProblem` on the first part of a
record (:class:`colloc.KalmanML`), predicts the rest ``h`` seconds ahead for each horizon
(the Kalman filter's k-step predictive distribution), and scores the predictions by their mean
log density (nats a sample) and 95 % coverage, beside two references fitted on the same first
part: persistence (``y(t − h)`` with the SD of the h-sample changes) and an AR(p) by least
squares — the black box that shows how much a mechanistic model leaves on the table.  The
choice is made among the candidates whose fit succeeded and, where any of those is, whose fit
raised no ``implausible`` warning (a problem's ``checks``: estimates outside the ranges its
field reports): of those whose mean held-out log score over the horizons is within one standard
error of the best one's, the one with the fewest free parameters (the one-standard-error rule,
Breiman et al. 1984, *Classification and Regression Trees*, §3.4.3; Hastie, Tibshirani & Friedman
2009, *The Elements of Statistical Learning*, §7.10), ties to the better score.  A deficit of at
most 1 nat over all the held-out samples (a likelihood ratio under e, "not worth more than a bare
mention" on the scale of Kass & Raftery 1995, JASA 90:773) counts as within as well: two nested
models whose predictions nearly coincide (a gain at 0) have differences so steady that their
standard error alone would call a thousandth of a nat significant.  The standard error
is that of the mean per-sample difference of log densities, paired sample by sample, by Bartlett
weights over a bandwidth read from the differences' own autocorrelation (the k-step errors of
neighbouring samples are correlated).  A candidate whose fit fails (an estimate on a search-range
bound, not converged, unstable) is not chosen, whatever it scores.  A fit's own likelihood is not
the criterion: a richer model always fits the first part at least as well.
"""

from __future__ import annotations

import dataclasses
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

__all__ = ["ModelSelection", "flagged_implausible", "select_model"]


def flagged_implausible(warnings: Sequence[Mapping[str, Any]] | None) -> bool:
    """A fit's warnings (a :class:`colloc.Result`'s, or a result document's list) carry the
    problem's ``implausible`` warning: an estimate outside the ranges the problem states as
    physiological (its ``checks``)."""
    return any(isinstance(w, dict) and w.get("code") == "implausible" for w in warnings or [])


@dataclass
class ModelSelection:
    """The outcome of :func:`select_model`.

    ``table``: one row per candidate and reference (``kind`` ``model`` or ``reference``) with
    ``status``, ``free`` (parameters), ``aic`` (of the fit on the first part), and per horizon
    ``score_<h>`` (mean log density, nats a sample), ``coverage_<h>`` (95 % interval) and
    ``vs_persistence_<h>``; ``ljung_box_p``: the held-out one-step innovations' whiteness
    (10 lags); ``plausible``: the fit raised no ``implausible`` warning; ``deficit``/``deficit_se``:
    the mean held-out score below the best eligible one's (nats a sample, the horizons' mean) and its
    standard error; ``cpu_s``: the CPU seconds of a candidate's fit and scoring (its nested model's
    fit, when another candidate's, is not counted again).  ``best``: the chosen candidate (None
    if no fit succeeded).  ``results``: the candidates' fits on the first part."""

    table: pd.DataFrame
    best: str | None
    split: float
    horizons: tuple[float, ...]
    results: dict = field(default_factory=dict)
    cpu_s: float = 0.0
    reason: str = ""
    #: The candidates that may be chosen, in the rule's order: ``best`` first, then the others of its
    #: pool by score, then the remaining fits that succeeded by score (a caller whose fit of ``best``
    #: on the whole record fails takes the next).
    ranking: tuple[str, ...] = ()

    def text(self) -> str:
        """The comparison table as printed lines."""
        hs = [f"{h:g}" for h in self.horizons]
        head = (f"{'model':<12}{'status':<20}{'free':>5}{'AIC(fit)':>12}"
                + "".join(f"{'score ' + h + ' s':>12}{'cov ' + h:>9}" for h in hs)
                + f"{'below best':>16}{'LB p':>8}{'CPU s':>7}")
        lines = [(f"held-out comparison: fitted before t = {self.split:g} s, scored after it "
                 "(mean log density, nats a sample; higher is better)"), head]
        implausible = False
        for name, row in self.table.iterrows():
            aic = "" if not np.isfinite(row["aic"]) else f"{row['aic']:.6g}"
            free = "" if not np.isfinite(row["free"]) else f"{int(row['free'])}"
            lb = "" if not np.isfinite(row["ljung_box_p"]) else f"{row['ljung_box_p']:.2g}"
            cpu = "" if not np.isfinite(row.get("cpu_s", math.nan)) else f"{row['cpu_s']:.1f}"
            deficit = row.get("deficit", math.nan)
            below = "" if not np.isfinite(deficit) else f"{deficit:.2g}±{row['deficit_se']:.1g}"
            status = row["status"] + ("" if row.get("plausible", True) is not False else " *")
            implausible |= row.get("plausible", True) is False
            mark = " ←" if name == self.best else ""
            lines.append(f"{name:<12}{status:<20}{free:>5}{aic:>12}"
                         + "".join(f"{row['score_' + h]:>12.4g}{row['coverage_' + h]:>9.3f}" for h in hs)
                         + f"{below:>16}{lb:>8}{cpu:>7}{mark}")
        if implausible:
            lines.append("* estimates outside the ranges reported for the field (an implausible warning)")
        lines.append("chosen: " + (f"{self.best} ({self.reason})" if self.best
                                   else "none: no candidate's fit succeeded"))
        return "\n".join(lines)

    def to_info(self) -> dict:
        """A JSON-ready copy (for ``Result.info["model_selection"]``)."""
        rows = {name: {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                       for k, v in row.items()} for name, row in self.table.to_dict(orient="index").items()}
        return {"split_s": self.split, "horizons_s": list(self.horizons), "best": self.best, "table": rows,
                "criterion": ("the fewest free parameters among the fits that succeeded (and are plausible, where "
                              "any is) whose mean held-out log score over the horizons is within one standard "
                              "error, or 1 nat over the held-out samples, of the best"),
                "reason": self.reason, "ranking": list(self.ranking),
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
        The estimator (default ``KalmanML()``); the candidates are fitted without its free
        simulations, with model-based standard errors (neither enters the choice) and with their
        starts finished until one succeeds (``finish_all=False``).
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
    # what chooses is the held-out score, so the candidates' fits skip the report's free-simulation
    # check and robust standard errors, and finish their starts from the lowest search until one
    # succeeds (the chosen model's fit on the whole record has them all)
    method = dataclasses.replace(method, free_draws=0, errors="model", finish_all=False)
    horizons = tuple(float(h) for h in horizons)
    rows: dict[str, dict[str, Any]] = {}
    results = {}
    densities: dict[str, list] = {}  # per candidate and horizon: the held-out log densities by time
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
               "plausible": not flagged_implausible(result.warnings),
               "free": float(result.info.get("num_parameters", math.nan)),
               "aic": float(result.info.get("aic", math.nan))}
        densities[name] = []
        model = _model_of(make(trial), result, trial)
        for h in horizons:
            table = predict(result, trial, horizon=h, window=(split, None), model=model)
            y, m, s = table["observed"], table["mean"], table["sd"]
            row[f"score_{h:g}"] = log_score(y, m, s)
            row[f"coverage_{h:g}"] = coverage(y, m, s)
            densities[name].append(_densities(table))
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
                            "free": 1.0, "aic": math.nan, "ljung_box_p": math.nan, "cpu_s": math.nan,
                            "plausible": True}}
    dt = float(np.median(np.diff(tg)))
    finite_fit = np.isfinite(y_fit).all() and np.isfinite(y_all).all()
    ar = fit_ar(y_fit, ar_order) if finite_fit and y_fit.size > 2 * ar_order + 1 else None
    if ar is not None:
        refs[f"AR({ar_order})"] = {"kind": "reference", "status": "reference", "success": False,
                                   "free": float(ar_order + 2), "aic": math.nan, "ljung_box_p": math.nan,
                                   "cpu_s": math.nan, "plausible": True}
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
    best, reason = _choose(rows, densities, horizons)
    ranking = _ranking(rows, best, horizons)
    rows.update(refs)
    table = pd.DataFrame.from_dict(rows, orient="index")
    return ModelSelection(table, best, split, horizons, results, time.process_time() - c0, reason, ranking)


def _ranking(rows: dict, best: str | None, horizons) -> tuple[str, ...]:
    """``best``, then the other plausible fits that succeeded by mean score, then the rest that did."""
    if best is None:
        return ()

    def score(n):
        return float(np.mean([rows[n][f"score_{h:g}"] for h in horizons]))
    ok = [n for n, r in rows.items() if r["kind"] == "model" and r["success"] and n != best]
    plausible = sorted((n for n in ok if rows[n]["plausible"]), key=score, reverse=True)
    rest = sorted((n for n in ok if not rows[n]["plausible"]), key=score, reverse=True)
    return (best, *plausible, *rest)


def _densities(table) -> np.ndarray:
    """``(time, log density)`` of a prediction table's finite entries."""
    y, m, s = (table[c].to_numpy(dtype=float) for c in ("observed", "mean", "sd"))
    ok = np.isfinite(y) & np.isfinite(m) & np.isfinite(s) & (s > 0)
    z = (y[ok] - m[ok]) / s[ok]
    return np.column_stack([table["time"].to_numpy(dtype=float)[ok],
                            -0.5 * z**2 - np.log(s[ok]) - 0.5 * math.log(2 * math.pi)])


def _paired_deficit(a: list, b: list) -> tuple[float, float, int]:
    """Mean and standard error of ``b``'s held-out log density below ``a``'s, per sample, averaged
    over the horizons on the times all of them score (Bartlett weights over the differences'
    own Politis bandwidth), and the number of those times."""
    from ..inference.kalman.robust import long_run_covariance, politis_bandwidth

    times = None
    for x in (*a, *b):
        times = x[:, 0] if times is None else np.intersect1d(times, x[:, 0])
    if times is None or times.size < 20:
        return math.nan, math.nan, 0
    d = np.zeros(times.size)
    for xa, xb in zip(a, b):
        d += (xa[np.searchsorted(xa[:, 0], times), 1] - xb[np.searchsorted(xb[:, 0], times), 1]) / len(a)
    lrv = float(long_run_covariance(d[:, None], max(1.0, politis_bandwidth(d[:, None])))[0, 0])
    return float(d.mean()), math.sqrt(max(lrv, 0.0)) / d.size, int(d.size)


def _choose(rows: dict, densities: dict, horizons) -> tuple[str | None, str]:
    """The module docstring's rule; the deficits go into ``rows``."""
    ok = [n for n, r in rows.items() if r["success"]]
    pool = [n for n in ok if rows[n]["plausible"]] or ok
    for r in rows.values():
        r["deficit"], r["deficit_se"] = math.nan, math.nan
    if not pool:
        return None, ""
    mean_score = {n: float(np.mean([rows[n][f"score_{h:g}"] for h in horizons])) for n in pool}
    top = max(mean_score, key=mean_score.__getitem__)
    close = []
    for n in pool:
        deficit, se, count = (0.0, 0.0, 0) if n == top else _paired_deficit(densities[top], densities[n])
        rows[n]["deficit"], rows[n]["deficit_se"] = deficit, se
        if n == top or (np.isfinite(deficit) and deficit <= max(se, 1.0 / max(count, 1))):
            close.append(n)
    free = {n: rows[n]["free"] if np.isfinite(rows[n]["free"]) else math.inf for n in close}
    best = min(close, key=lambda n: (free[n], -mean_score[n]))
    among = "the fits that succeeded" + (" and are plausible" if len(pool) < len(ok) else "")
    if best == top:
        reason = f"the best held-out score among {among}"
    else:
        reason = (f"the fewest free parameters among {among} within one standard error (or 1 nat in all) of the "
                  f"best held-out score, {top}'s: {rows[best]['deficit']:.2g} ± {rows[best]['deficit_se']:.1g} nats "
                  "a sample below it")
    return best, reason
