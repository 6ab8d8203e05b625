"""Is the fit as good as the declared noise allows?  :func:`fit_verdict`.

A solver that converges has found a local optimum; it has not shown that the model explains
the data.  The fit weights of a :class:`~colloc.Problem` are ``1/σ²``, a declaration of the
measurement noise.  After the solve the residuals (model − measurement) are compared with it:

* **reduced χ²** of each fitted signal, ``χ²_red = Σ w r² / n`` over all its samples in every
  trial (``w`` the signal's fit weight, ``n`` its number of samples), and overall
  ``Σ w r² / (N − p)`` over all ``N`` fitted samples and ``p`` parameters.  With noise of
  the declared size it is close to 1 (its standard deviation is ``√(2/n)``); ``χ²_red = 4``
  means residuals twice the declared σ.
* **whiteness**: the lag-1 autocorrelation ``ρ₁`` of each signal's residuals (pooled over
  trials) against its null band ``±1.96/√n``, and the Ljung–Box statistic
  ``Q = n(n+2) Σ_{k=1..h} ρ_k²/(n−k)`` with ``h = min(10, n/5)`` lags and its p-value
  (χ² with ``h`` degrees of freedom, summed over trials).  White residuals that are too large
  point at a declared noise that is too small; correlated ones at a model that misses part
  of the dynamics.
* the **forward simulation's NRMSE** (already in ``result.simulation``), reported beside
  them.  It does not decide the verdict: an unstable closed loop or a chaotic model drifts
  away from the data under exact parameters, and the NRMSE has no noise reference.

The verdict is ``"poor_fit"`` when any signal's ``χ²_red`` exceeds :data:`CHI2_POOR`
(residual RMS more than twice the declared σ).  At that level the chance that correctly
declared noise produces it is nil for any record longer than a few samples, and a misfit
that small would be hard to see in a plot.  Correlated residuals below that level are
reported (``"coloured"`` in ``whiteness``) but do not fail the fit: measured signals are
often filtered, which colours their noise without making the model wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..base.errors import OptionsError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CHI2_POOR", "LJUNG_BOX_MAX_LAGS", "fit_verdict", "verdict_line"]

#: A signal whose reduced χ² exceeds this (residual RMS > 2σ) makes the fit ``poor_fit``.
CHI2_POOR = 4.0
#: Largest number of lags in the Ljung–Box statistic (fewer for short records: n/5).
LJUNG_BOX_MAX_LAGS = 10


def _autocorrelation(r: np.ndarray, lags: int) -> np.ndarray:
    """Sample autocorrelation ``ρ_1 … ρ_lags`` of ``r`` (mean removed)."""
    d = r - r.mean()
    c0 = float(d @ d)
    if c0 <= 0 or lags < 1:
        return np.zeros(max(lags, 0))
    return np.array([float(d[k:] @ d[:-k]) / c0 for k in range(1, lags + 1)])


def fit_verdict(
    residuals: Mapping[str, pd.DataFrame],
    weights: Mapping[str, float],
    *,
    num_parameters: int = 0,
    simulation: Mapping[str, dict] | None = None,
    chi2_poor: float = CHI2_POOR,
) -> dict:
    """Compare fit residuals with the declared noise.

    Parameters
    ----------
    residuals : mapping of str to pandas.DataFrame
        Per trial: sample times × fitted signals, model − measurement (``Result.residuals``).
    weights : mapping of str to float
        Fit weight ``1/σ²`` of each signal (``Problem.fit``).
    num_parameters : int
        Identified parameters (for the overall degrees of freedom).
    simulation : mapping, optional
        ``Result.simulation``; its NRMSE values are copied into the verdict.
    chi2_poor : float
        Reduced-χ² threshold above which a signal makes the fit poor.

    Returns
    -------
    dict
        ``verdict`` (``"good"``, ``"poor_fit"`` or ``"not_applicable"`` when nothing was
        fitted), ``reason`` (one line), ``chi2_red`` (overall), ``dof``, ``threshold``,
        ``signals`` (signal → ``chi2_red``, ``rms_over_sigma``, ``n``,
        ``lag1_autocorrelation``, ``lag1_null_band``, ``ljung_box_q``, ``ljung_box_lags``,
        ``ljung_box_p``, ``whiteness`` (``"white"`` or ``"coloured"``), ``verdict``),
        ``trials`` (trial → signal → ``chi2_red``) and ``simulation_nrmse``.
    """
    if not np.isfinite(chi2_poor) or chi2_poor <= 1:
        raise OptionsError(f"fit_verdict(chi2_poor={chi2_poor!r}): expected a finite number > 1")
    per_signal: dict[str, dict] = {}
    per_trial: dict[str, dict[str, float]] = {}
    total, count = 0.0, 0
    for trial, frame in residuals.items():
        per_trial[trial] = {}
        for name in frame.columns:
            if name not in weights:
                continue
            r = frame[name].to_numpy(dtype=float)
            r = r[np.isfinite(r)]
            if r.size == 0:
                continue
            w = float(weights[name])
            ss = float(w * (r @ r))
            per_trial[trial][name] = ss / r.size
            acc = per_signal.setdefault(name, {"ss": 0.0, "n": 0, "rho_num": 0.0, "q": 0.0, "lags": 0})
            acc["ss"] += ss
            acc["n"] += r.size
            lags = int(min(LJUNG_BOX_MAX_LAGS, r.size // 5))
            rho = _autocorrelation(r, max(lags, 1))
            acc["rho_num"] += rho[0] * r.size
            if lags >= 1:
                n = r.size
                acc["q"] += n * (n + 2) * float(np.sum(rho[:lags] ** 2 / (n - np.arange(1, lags + 1))))
                acc["lags"] += lags
            total += ss
            count += r.size
    signals: dict[str, dict] = {}
    worst = None
    for name, acc in per_signal.items():
        n = acc["n"]
        chi2 = acc["ss"] / n
        rho1 = acc["rho_num"] / n
        band = 1.96 / math.sqrt(n)
        # chi2.sf(q, lags) is chdtrc(lags, q) (scipy.stats, 0.4 s to import, calls it)
        from scipy import special  # here, not at import: SciPy costs 0.25 s before the solve

        p = float(special.chdtrc(acc["lags"], acc["q"])) if acc["lags"] else float("nan")
        coloured = abs(rho1) > band and (not np.isfinite(p) or p < 0.01)
        poor = chi2 > chi2_poor
        signals[name] = {
            "chi2_red": chi2,
            "rms_over_sigma": math.sqrt(chi2),
            "n": n,
            "lag1_autocorrelation": rho1,
            "lag1_null_band": band,
            "ljung_box_q": acc["q"],
            "ljung_box_lags": acc["lags"],
            "ljung_box_p": p,
            "whiteness": "coloured" if coloured else "white",
            "verdict": "poor_fit" if poor else "good",
        }
        if poor and (worst is None or chi2 > signals[worst]["chi2_red"]):
            worst = name
    dof = count - int(num_parameters)
    overall = total / dof if dof > 0 else (total / count if count else float("nan"))
    nrmse = {t: dict(s.get("nrmse", {})) for t, s in (simulation or {}).items()}
    if not signals:
        verdict, reason = "not_applicable", "no least-squares fit terms: nothing to compare with a noise level"
    elif worst is not None:
        s = signals[worst]
        cause = ("residuals are correlated (the model misses part of the dynamics, or a local minimum)"
                 if s["whiteness"] == "coloured" else
                 "residuals are white (is the declared noise too small?)")
        verdict = "poor_fit"
        reason = (f"'{worst}' residuals are {s['rms_over_sigma']:.3g}× the declared noise "
                  f"(reduced chi² {s['chi2_red']:.3g} > {chi2_poor:g}); {cause}")
    else:
        coloured = [k for k, v in signals.items() if v["whiteness"] == "coloured"]
        verdict = "good"
        reason = (f"every signal within {math.sqrt(chi2_poor):g}× the declared noise "
                  f"(overall reduced chi² {overall:.3g})")
        if coloured:
            reason += f"; correlated residuals in {', '.join(coloured)}"
    return {
        "verdict": verdict,
        "reason": reason,
        "chi2_red": overall,
        "dof": dof,
        "threshold": chi2_poor,
        "signals": signals,
        "trials": per_trial,
        "simulation_nrmse": nrmse,
    }


def verdict_line(verdict: Mapping) -> str:
    """One line for :meth:`Result.summary`: verdict, overall and worst signal χ²_red."""
    if not verdict:
        return ""
    if verdict.get("verdict") == "not_applicable":
        return "fit verdict: not applicable (no least-squares fit)"
    signals = verdict.get("signals", {})
    parts = ", ".join(f"{k} {v['chi2_red']:.3g}" + (" (coloured)" if v["whiteness"] == "coloured" else "")
                      for k, v in signals.items())
    return (f"fit verdict: {verdict['verdict']} · reduced chi² {verdict['chi2_red']:.3g} overall"
            + (f" · per signal {parts}" if parts else ""))
