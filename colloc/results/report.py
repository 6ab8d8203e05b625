"""The one place where a result is judged: :func:`finalize`.

Every estimator (collocation, shooting, the Kalman maximum likelihood, the multi-phase hybrid
fits) ends here, so that every result carries the same facts in the same fields:

1. the **fit verdict** (:func:`colloc.results.verdict.fit_verdict`): reduced χ² and whiteness
   of every fitted signal against its declared noise; a converged fit that is poor is not a
   success (``status "poor_fit"``);
2. the **warnings** (:func:`colloc.results.diagnostics.diagnose`): parameters at or near a
   bound, not identifiable, strongly correlated, a failed simulation…; a result without a
   forward-simulation check says why (``result.simulation_note``);
3. an estimate on a bound that is only a **search range** (a bound not declared physical,
   ``Model.parameter(physical=...)``) is a failure, ``status "parameter_at_bound"``: the model's
   optimum lies beyond where it was sought;
4. the **95 % intervals** (:func:`parameter_intervals`), which respect the parameters' domains:
   on the log scale for a positive parameter, so that an interval of a gain or a noise
   intensity never reaches below zero.

The solver's own ending stays in ``result.solver_status``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .diagnostics import diagnose
from .result import FIT_REJECTED, INTERVAL_Z, Estimate, Result
from .verdict import fit_verdict

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FIT_REJECTED", "INTERVAL_Z", "POOR_FIT_HINT", "finalize", "judge", "model_bounds", "parameter_intervals",
           "solver_converged"]

#: What to try when a converged fit is poor (shown in the message and by the CLI).
POOR_FIT_HINT = ("try several starts (colloc identify --starts N, solve(starts=N)) or other guesses, "
                 "a model that captures the missing dynamics, or check the declared noise (fit weights 1/σ²)")


def solver_converged(result) -> bool:
    """Whether the solver (or baseline) converged, whatever the judgement of the fit
    (:attr:`colloc.Result.converged`)."""
    return bool(result.success) or result.status in FIT_REJECTED


def _exp(x: float) -> float:
    """``exp(x)``, ``inf`` beyond the largest float (a standard error far above the estimate)."""
    return math.inf if x > 709.0 else math.exp(x)


def _sides(flag) -> tuple[bool, bool]:
    """A physical flag, one for both bounds or ``(lower, upper)``, as a pair."""
    if isinstance(flag, tuple | list):
        return bool(flag[0]), bool(flag[1])
    return bool(flag), bool(flag)


def model_bounds(model) -> dict:
    """``bounds``, ``physical`` and ``scales`` of every parameter element of a
    :class:`~colloc.Model`, as keyword arguments of :func:`finalize`."""
    names = model.element_names("parameter")
    lower, upper = model.bounds("parameter")
    return {"bounds": {n: (float(lo), float(hi)) for n, lo, hi in zip(names, lower.tolist(), upper.tolist())},
            "physical": {n: model.physical_bounds(n) for n in names},
            "scales": dict(zip(names, [abs(float(v)) for v in model.scales("parameter")]))}


def parameter_intervals(parameters: Mapping[str, float], standard_errors: Mapping[str, float | None] | None,
                        bounds: Mapping[str, tuple[float, float]] | None = None,
                        physical: Mapping[str, tuple[bool, bool]] | None = None,
                        ) -> tuple[dict[str, tuple[float, float]], dict[str, str]]:
    """95 % intervals of the estimates from their standard errors, on a scale that keeps them
    in the parameter's domain (the delta method on that scale).

    * ``"logit"``: both bounds finite and physical (an activation in [0, 1]):
      ``lo + (hi − lo)·expit(logit(z) ± 1.96·se/((v − lo)(hi − v)/(hi − lo)))``;
    * ``"log"``: a positive parameter (lower bound ≥ 0, estimate > 0):
      ``v·exp(±1.96·se/v)``; likewise ``"-log"`` for a negative one (upper bound ≤ 0);
    * ``"truncated"``: such a parameter whose standard error exceeds its distance from zero
      (``se > |v|``), where the log scale's delta method fails (K_I = 0.2 ± 7 gave
      [5e-10, 9e7]): the Wald interval cut at zero, ``[max(0, v − 1.96·se), v + 1.96·se]`` (or
      its mirror for a negative one), which says what the data say: not distinguished from zero;
    * ``"linear"``: otherwise, ``v ± 1.96·se`` (Wald).

    A parameter without a finite standard error, or outside the open interval of physical bounds,
    gets ``(nan, nan)`` and the scale ``"none"`` (:func:`finalize` does the same for a parameter
    on any bound).  Returns ``(intervals, scales)``, both keyed by parameter name.
    """
    se = standard_errors or {}
    bounds = bounds or {}
    physical = physical or {}
    intervals: dict[str, tuple[float, float]] = {}
    scales: dict[str, str] = {}
    nan = (math.nan, math.nan)
    for name, value in parameters.items():
        e = se.get(name)
        value = float(value)
        if e is None or not math.isfinite(float(e)) or not math.isfinite(value):
            intervals[name], scales[name] = nan, "none"
            continue
        e = float(e)
        lo, hi = bounds.get(name, (-math.inf, math.inf))
        both = _sides(physical.get(name, False))
        if math.isfinite(lo) and math.isfinite(hi) and both[0] and both[1] and hi > lo:
            if not lo < value < hi:
                intervals[name], scales[name] = nan, "none"
                continue
            z = (value - lo) / (hi - lo)
            half = INTERVAL_Z * e / (hi - lo) / (z * (1 - z))
            centre = math.log(z / (1 - z))
            ends = [lo + (hi - lo) / (1 + _exp(-(centre + s * half))) for s in (-1.0, 1.0)]
            intervals[name], scales[name] = (ends[0], ends[1]), "logit"
        elif (lo >= 0 and value > 0 or hi <= 0 and value < 0) and e > abs(value):
            low, high = value - INTERVAL_Z * e, value + INTERVAL_Z * e
            intervals[name] = (max(low, 0.0), high) if value > 0 else (low, min(high, 0.0))
            scales[name] = "truncated"
        elif lo >= 0 and value > 0:
            half = INTERVAL_Z * e / value
            intervals[name], scales[name] = (value * _exp(-half), value * _exp(half)), "log"
        elif hi <= 0 and value < 0:
            half = INTERVAL_Z * e / -value
            intervals[name], scales[name] = (value * _exp(half), value * _exp(-half)), "-log"
        else:
            intervals[name], scales[name] = (value - INTERVAL_Z * e, value + INTERVAL_Z * e), "linear"
    return intervals, scales


def finalize(estimate: Estimate, *, bounds: Mapping[str, tuple[float, float]] | None = None,
             physical: Mapping[str, tuple[bool, bool]] | None = None, scales: Mapping[str, float] | None = None,
             fit: Mapping[str, float] | None = None,
             verdict: bool = True, verdict_residuals: Mapping[str, pd.DataFrame] | None = None,
             verdict_note: str | None = None,
             no_simulation: str | None = None, warnings: list[dict] | None = None,
             derived: Mapping[str, str] | None = None, chi2_poor: float | None = None) -> Result:
    """Judge ``estimate`` (an :class:`~colloc.results.result.Estimate`) and build its
    :class:`~colloc.Result`, once: the verdict, the warnings, the intervals and the final
    ``success``/``status``/``message`` are decided first, then the result is made with them.

    Parameters
    ----------
    estimate : Estimate
        As the estimator left it: parameters, standard errors, covariance, residuals,
        simulation check, its own ``success``/``status``/``message``.
    bounds, physical : mapping, optional
        Each parameter's ``(lower, upper)`` bounds and whether each side is a limit of the model
        (a bool for both, or a pair)
        (:func:`model_bounds` gives both for a model).  A parameter with no entry is unbounded.
    scales : mapping of str to float, optional
        Each parameter's typical size (``Model.parameter(scale=...)``): how close to a bound is
        "on" it.
    fit : mapping of str to float, optional
        Fit weight ``1/σ²`` of each signal (a problem's ``fit``).
    verdict : bool
        Judge the fit against the declared noise (False: data whose noise is unknown, or an
        estimator that judged it itself and left its verdict in ``estimate.fit_verdict``).
    verdict_residuals : mapping of str to DataFrame, optional
        What the verdict judges instead of ``estimate.residuals``: an estimator whose residuals
        have a per-sample σ gives them standardised (a Kalman filter's innovations divided by
        their predicted SD), with weights 1 in ``fit``.
    verdict_note : str, optional
        What the verdict's residuals are, kept in ``result.fit_verdict["residuals"]``.
    no_simulation : str, optional
        Why the result has no forward-simulation check (``result.simulation_note``, printed
        by the summary, when ``result.simulation`` is empty).
    warnings : list of dict, optional
        Diagnostics the estimator found itself (an unstable identified loop …), kept first.
    derived : mapping of str to str, optional
        Parameters reported without a standard error by design (a record's mean taken as an
        offset), each with what it is: they are not called "not identifiable".
    chi2_poor : float, optional
        The reduced χ² above which a signal makes the fit poor (default
        :data:`colloc.results.verdict.CHI2_POOR`); a problem whose noise σ is read from the
        records themselves may judge more strictly.
    """
    if not isinstance(estimate, Estimate):
        raise TypeError(f"finalize: expected a colloc.results.result.Estimate, got {type(estimate).__name__} "
                        "(a Result is already judged)")
    bounds, physical = dict(bounds or {}), dict(physical or {})
    solver_status = estimate.solver_status or estimate.status
    success, status, message, judged, found = judge(
        estimate, bounds=bounds, physical=physical, scales=scales, fit=fit, verdict=verdict,
        verdict_residuals=verdict_residuals, verdict_note=verdict_note, warnings=warnings, derived=derived,
        chi2_poor=chi2_poor)
    intervals, interval_scales = parameter_intervals(estimate.parameters, estimate.standard_errors, bounds, physical)
    for w in found:  # on a bound the standard error does not describe the estimate
        if w.get("code") == "parameter_at_bound":
            for name in w.get("parameters", []):
                intervals[name], interval_scales[name] = (math.nan, math.nan), "none"
    raw = {f.name: getattr(estimate, f.name) for f in dataclasses.fields(Estimate)}
    raw.update(success=success, status=status, message=message, solver_status=solver_status, fit_verdict=judged)
    return Result(**raw, warnings=found, intervals=intervals, interval_scales=interval_scales,
                  simulation_note="" if estimate.simulation else (no_simulation or "the estimator made none"))


def judge(estimate: Estimate, *, bounds: Mapping[str, tuple[float, float]] | None = None,
          physical: Mapping[str, tuple[bool, bool]] | None = None, scales: Mapping[str, float] | None = None,
          fit: Mapping[str, float] | None = None, verdict: bool = True, verdict_residuals=None,
          verdict_note: str | None = None, warnings: list[dict] | None = None,
          derived: Mapping[str, str] | None = None,
          chi2_poor: float | None = None) -> tuple[bool, str, str, dict, list[dict]]:
    """What :func:`finalize` decides, without making a result: ``(success, status, message,
    fit_verdict, warnings)``.  The arguments are :func:`finalize`'s; :func:`colloc.solve`
    also asks it whether a solve from its default start is acceptable before it tries more
    starts."""
    bounds, physical = dict(bounds or {}), dict(physical or {})
    success, status, message = bool(estimate.success), estimate.status, estimate.message
    residuals = estimate.residuals if verdict_residuals is None else verdict_residuals
    judged = dict(estimate.fit_verdict)
    if verdict and residuals and fit:
        judged = fit_verdict(residuals, fit, num_parameters=len(estimate.parameters), simulation=estimate.simulation,
                             **({} if chi2_poor is None else {"chi2_poor": float(chi2_poor)}))
        judged["residuals"] = verdict_note or "model − measurement, weighted by the declared noise 1/σ²"
        judged["weights"] = {k: float(w) for k, w in fit.items()}
        if success and judged["verdict"] == "poor_fit":
            success, status = False, "poor_fit"
            message = f"{message} But the fit is poor: {judged['reason']}. To do: {POOR_FIT_HINT}."
    elif verdict:
        why = ("no fitted signal with a declared noise" if not fit else "no residuals")
        judged = {"verdict": "not_applicable", "reason": why, "signals": {}, "trials": {}, "simulation_nrmse": {}}
    found = list(warnings or [])
    codes = {w.get("code") for w in found}
    for w in diagnose(estimate, bounds=bounds, scales=scales, verdict=judged):
        if w.get("code") in codes:
            continue
        if w.get("code") == "not_identifiable" and derived:
            concerned = [n for n in w["parameters"] if n not in derived]
            if not concerned:
                continue
            w = {**w, "parameters": concerned,
                 "message": f"not identifiable from these data: {', '.join(concerned)}; standard errors are null"}
        found.append(w)
    at = _on_search_bounds(estimate.parameters, found, bounds, physical)
    if success and at:
        success, status = False, "parameter_at_bound"
        message = (f"{message} But {', '.join(at)} ended on the bound of "
                   f"{'its' if len(at) == 1 else 'their'} search range: widen the range (--bounds), "
                   "declare the bound physical (Model.parameter(physical=True)) if it is a limit of the "
                   "model, or question the model.")
    return success, status, message, judged, found


def _on_search_bounds(parameters: Mapping[str, float], found: list[dict], bounds: Mapping[str, tuple[float, float]],
                      physical: Mapping[str, tuple[bool, bool]]) -> list[str]:
    """The parameters on a bound that is only a search range.  A converged fit with one fails:
    the data push it beyond where it was sought, so the estimate is an optimum of the box, not
    of the model."""
    at = []
    for w in found:
        if w.get("code") != "parameter_at_bound":
            continue
        for name in w.get("parameters", []):
            lo, hi = bounds.get(name, (-math.inf, math.inf))
            value = parameters.get(name, math.nan)
            side = 0 if abs(value - lo) <= abs(value - hi) else 1
            if not _sides(physical.get(name, False))[side]:
                at.append(name)
    return at
