"""What a user must be told about a result besides its numbers: :func:`diagnose`.

Each diagnostic is a dict with a stable ``code`` (for scripts), a one-line ``message`` (for
people) and the names it concerns.  The codes:

``parameter_at_bound``
    A parameter sits on one of its bounds: the optimum lies outside the allowed range, or
    the data push it there; neither its standard error nor its interval means anything.
``parameter_near_bound``
    A parameter is within 1.96 standard errors of a bound (its Wald interval reaches it).
``not_identifiable``
    The reduced Hessian is not positive definite (or the covariance could not be computed):
    the data do not determine the named parameters; their standard errors are null.
``zero_residuals``
    The model reproduces the data exactly, so standard errors rescaled by the residual
    variance would be 0; they are null.
``strong_correlation``
    Two parameter estimates correlate with |ρ| > 0.95: the data determine mostly a
    combination of them.
``simulation_failed``
    The forward simulation of the identified model (from the identified initial state)
    did not reach the end of a trial.
``constant_signal``
    A fitted signal is constant in a trial: its NRMSE (divided by the range) is undefined.
``poor_fit``
    The residuals are far above the declared noise (the fit verdict).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..definition.model import Model

__all__ = ["CORRELATION_LIMIT", "diagnose", "warning_line"]

#: |ρ| above which two estimates are reported as strongly correlated.
CORRELATION_LIMIT = 0.95


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def diagnose(result, model: Model | None = None, *, bounds: Mapping[str, tuple[float, float]] | None = None,
             scales: Mapping[str, float] | None = None, verdict: Mapping | None = None) -> list[dict]:
    """The diagnostics of ``result`` (a :class:`~colloc.Result`, or the
    :class:`~colloc.results.result.Estimate` it is made from); the parameters' bounds and
    nominal scales come from ``model`` or, for an estimator without one, from ``bounds`` (name →
    (lower, upper)) and ``scales`` (name → typical size); ``verdict``: the fit verdict (default
    ``result.fit_verdict``)."""
    found: list[dict] = []
    names = list(result.parameters)
    se = result.standard_errors or {}
    if model is not None:
        lower, upper = model.bounds("parameter")
        bounds = dict(zip(model.element_names("parameter"), zip(lower.tolist(), upper.tolist())))
        scales = dict(zip(model.element_names("parameter"), np.abs(model.scales("parameter")).tolist()))
    bounds = dict(bounds or {})
    scales = dict(scales or {})
    if names:
        at, near = [], []
        for name in names:
            if name not in bounds:
                continue
            value = result.parameters[name]
            for side, b in zip(("lower", "upper"), bounds[name]):
                if not math.isfinite(b):
                    continue
                width = bounds[name][1] - bounds[name][0]
                # an interior-point solver stops ~1e-6-1e-5 of the variable's own size short of an
                # active bound: its nominal scale (else the bound's or the value's magnitude), not
                # the range's width (a range over six decades would swallow its lowest one)
                size = max(abs(b), scales[name]) if name in scales else max(abs(b), abs(value), 1.0)
                tol = 1e-5 * (min(width, size) if math.isfinite(width) and width > 0 else size)
                if abs(value - b) <= tol:
                    at.append((name, side, b))
                elif _finite(se.get(name)) and abs(value - b) <= 1.96 * se[name]:
                    near.append((name, side, b))
        if at:
            found.append({
                "code": "parameter_at_bound",
                "parameters": [a[0] for a in at],
                "message": "; ".join(f"{n} = {result.parameters[n]:.6g} is at its {side} bound {b:g}"
                                     for n, side, b in at)
                + " (the data push it beyond: its standard error and interval do not hold; widen the bound "
                  "or question the model)",
            })
        if near:
            found.append({
                "code": "parameter_near_bound",
                "parameters": [a[0] for a in near],
                "message": "; ".join(f"{n} is within 1.96 standard errors of its {side} bound {b:g}"
                                     for n, side, b in near)
                + " (the normal approximation behind its standard error is doubtful there)",
            })
    info = result.info or {}
    message = info.get("covariance_message") or ""
    if result.standard_errors is not None and names:
        missing = [n for n in names if not _finite(se.get(n))]
        if "residuals are zero" in message:
            found.append({"code": "zero_residuals", "parameters": names,
                          "message": "the model reproduces the data exactly (zero residuals): standard errors "
                                     "are not estimable from the residual variance and are null"})
        elif missing:
            concerned = info.get("not_identifiable") or missing
            found.append({
                "code": "not_identifiable",
                "parameters": list(concerned),
                "message": f"not identifiable from these data: {', '.join(concerned)} "
                           f"({message or 'covariance not positive definite'}); standard errors are null",
            })
    cov = result.covariance
    if cov is not None and len(names) > 1:
        c = cov.to_numpy(dtype=float)
        d = np.sqrt(np.diag(c))
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = c / np.outer(d, d)
        pairs = [(names[i], names[j], float(rho[i, j])) for i in range(len(names)) for j in range(i + 1, len(names))
                 if np.isfinite(rho[i, j]) and abs(rho[i, j]) > CORRELATION_LIMIT]
        if pairs:
            pairs.sort(key=lambda p: -abs(p[2]))
            shown = ", ".join(f"{a}–{b} {r:+.3f}" for a, b, r in pairs[:6])
            more = f" and {len(pairs) - 6} more" if len(pairs) > 6 else ""
            found.append({"code": "strong_correlation", "pairs": [[a, b, r] for a, b, r in pairs],
                          "message": f"strongly correlated estimates (|ρ| > {CORRELATION_LIMIT}): {shown}{more}"})
    failed = {t: s for t, s in (result.simulation or {}).items() if s.get("status") not in (None, "ok")}
    if failed:
        found.append({"code": "simulation_failed", "trials": list(failed),
                      "message": "forward simulation of the identified model failed: "
                                 + "; ".join(f"'{t}' {s.get('status')}"
                                             + (f": {s['message']}" if s.get("message") else "")
                                             for t, s in failed.items())})
    constant = sorted({(t, k) for t, frame in (result.measurements or {}).items() for k in frame.columns
                       if np.ptp(frame[k].to_numpy(dtype=float)[np.isfinite(frame[k].to_numpy(dtype=float))]
                                 if frame[k].notna().any() else [0.0]) == 0})
    if constant:
        found.append({"code": "constant_signal", "signals": [f"{t}:{k}" for t, k in constant],
                      "message": "constant measured signal(s), NRMSE undefined: "
                                 + ", ".join(f"{k} in '{t}'" for t, k in constant)})
    v = getattr(result, "fit_verdict", None) if verdict is None else verdict
    if isinstance(v, dict) and v.get("verdict") == "poor_fit":
        reason = v.get("reason", "residuals far above the declared noise")
        found.append({"code": "poor_fit", "message": f"poor fit: {reason}"})
    return found


def warning_line(w: dict) -> str:
    """One printable line for a diagnostic."""
    return f"warning [{w['code']}]: {w['message']}"
