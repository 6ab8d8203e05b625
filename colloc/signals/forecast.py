"""Reference forecasts and the scores that judge a model by its predictions.

A stochastic model of a record is judged by what it predicts on data it was not fitted to,
against forecasts that need no model: **persistence** (``y(t)`` predicted by ``y(t − h)``) and a
black-box **autoregression** AR(p) fitted on the same data as the model.  Each forecast is a
Gaussian predictive distribution (mean, SD) per sample, scored by

* the **log score**: the mean log predictive density of the observations (nats a sample; higher
  is better, and it rewards calibrated spreads as well as accurate means);
* the **coverage** of the central 95 % intervals (0.95 for calibrated forecasts);
* the **Ljung–Box** statistic of the standardised one-step errors (white for a model that has
  captured the record's dynamics).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special

__all__ = ["ARModel", "coverage", "fit_ar", "innovation_predictability", "ljung_box", "log_score",
           "persistence_forecast"]

#: Two-sided 95 % standard normal quantile.
Z95 = 1.959963984540054


def log_score(observed, mean, sd) -> float:
    """Mean Gaussian log predictive density (nats a sample) over the finite entries."""
    y, m, s = (np.asarray(a, dtype=float) for a in (observed, mean, sd))
    ok = np.isfinite(y) & np.isfinite(m) & np.isfinite(s) & (s > 0)
    if not ok.any():
        return math.nan
    z = (y[ok] - m[ok]) / s[ok]
    return float(np.mean(-0.5 * z**2 - np.log(s[ok]) - 0.5 * math.log(2 * math.pi)))


def coverage(observed, mean, sd, z: float = Z95) -> float:
    """Fraction of the finite observations inside ``mean ± z·sd``."""
    y, m, s = (np.asarray(a, dtype=float) for a in (observed, mean, sd))
    ok = np.isfinite(y) & np.isfinite(m) & np.isfinite(s)
    return float(np.mean(np.abs(y[ok] - m[ok]) <= z * s[ok])) if ok.any() else math.nan


def ljung_box(x, lags: int = 10) -> tuple[float, float]:
    """Ljung–Box ``Q = n(n+2) Σ_{k≤lags} ρ_k²/(n−k)`` of ``x`` (finite entries, mean removed)
    and its p-value (χ² with ``lags`` degrees of freedom)."""
    r = np.asarray(x, dtype=float)
    r = r[np.isfinite(r)]
    n = r.size
    if n <= lags + 1:
        raise ValueError(f"ljung_box: {n} values for {lags} lags")
    d = r - r.mean()
    c0 = float(d @ d)
    rho = np.array([float(d[k:] @ d[:-k]) / c0 for k in range(1, lags + 1)])
    q = n * (n + 2) * float(np.sum(rho**2 / (n - np.arange(1, lags + 1))))
    return q, float(special.chdtrc(lags, q))


def persistence_forecast(y, steps: int, fit=None) -> tuple[np.ndarray, np.ndarray]:
    """``y(t)`` predicted by ``y(t − steps)``, with the SD of the ``steps``-sample changes of
    ``fit`` (default ``y``): arrays like ``y``, NaN for the first ``steps`` samples."""
    y = np.asarray(y, dtype=float)
    ref = y if fit is None else np.asarray(fit, dtype=float)
    change = ref[steps:] - ref[:-steps]
    sd = float(np.sqrt(np.nanmean(change**2)))
    mean = np.full(y.size, np.nan)
    mean[steps:] = y[:-steps]
    return mean, np.where(np.isfinite(mean), sd, np.nan)


@dataclass(frozen=True)
class ARModel:
    """``y_t − μ = Σ_i a_i (y_{t−i} − μ) + ε_t``, ``ε_t ~ N(0, σ²)``."""

    coefficients: np.ndarray
    mean: float
    sigma: float

    @property
    def order(self) -> int:
        return int(self.coefficients.size)

    def forecast(self, y, steps: int) -> tuple[np.ndarray, np.ndarray]:
        """``steps``-ahead predictive mean and SD of every sample of ``y`` from the samples up
        to ``t − steps`` (the recursion run forward with unknown future values at their
        forecasts; SD from the ψ-weights: ``σ √Σ_{i<steps} ψ_i²``).  NaN where fewer than
        ``order + steps − 1`` samples precede."""
        y = np.asarray(y, dtype=float) - self.mean
        p, n = self.order, y.size
        a = self.coefficients
        # windows of the p most recent known values before each anchor, newest first
        out = np.full(n, np.nan)
        first = p + steps - 1
        if n > first:
            anchors = np.arange(p - 1, n - steps)  # the last known sample
            hist = np.stack([y[anchors - i] for i in range(p)], axis=1)  # (J, p), newest first
            for _ in range(steps):
                nxt = hist @ a
                hist = np.concatenate([nxt[:, None], hist[:, :-1]], axis=1)
            out[anchors + steps] = hist[:, 0]
        psi = np.zeros(steps)
        psi[0] = 1.0
        for j in range(1, steps):
            psi[j] = sum(a[i] * psi[j - 1 - i] for i in range(min(p, j)))
        sd = self.sigma * math.sqrt(float(psi @ psi))
        return out + self.mean, np.where(np.isfinite(out), sd, np.nan)


def fit_ar(y, order: int) -> ARModel:
    """AR(``order``) by least squares on the lagged values of ``y`` (mean removed)."""
    y = np.asarray(y, dtype=float)
    if not np.all(np.isfinite(y)):
        raise ValueError("fit_ar: the record has missing values")
    if y.size <= 2 * order + 1:
        raise ValueError(f"fit_ar: {y.size} samples for an AR({order})")
    mu = float(y.mean())
    d = y - mu
    X = np.stack([d[order - i - 1: d.size - i - 1] for i in range(order)], axis=1)
    target = d[order:]
    coef, *_ = np.linalg.lstsq(X, target, rcond=None)
    resid = target - X @ coef
    sigma = float(np.sqrt(resid @ resid / max(resid.size - order, 1)))
    return ARModel(coef, mu, sigma)


def innovation_predictability(z, *, fit=None, order: int = 20, folds: int | None = None) -> dict:
    """How much of the standardised innovations ``z`` their own past predicts: an AR(``order``)
    fitted by least squares predicts each entry of ``z`` from the ``order`` before it.

    The AR is fitted to ``fit`` (default ``z`` itself, in sample), or, with ``folds``, cross-validated
    over ``folds`` contiguous blocks of ``z``: each block predicted by the AR fitted to the entries
    outside it (those in the ``order`` entries after it left out too, since their lags reach into it).
    Returns ``gain``, the log score it adds (nats a sample, each Gaussian predictor at its own error
    variance): ``½ log(Σ (z − z̄)² / Σ e²)`` over the predicted entries, ``e`` the AR's errors (per
    block with ``folds``); ``share``, the fraction of ``z``'s variance it explains,
    ``1 − exp(−2·gain)``; and ``expected_null``, the gain of a least-squares fit of ``order``
    coefficients on white noise in sample (``order/(2n)``, ``n`` the entries fitted), 0 out of
    sample.  Out of sample (``fit`` the first part of a record and ``z`` the rest, or ``folds``) the
    gain is structure that a model fitted to the rest could have used; about −``order``/(2n) on white
    noise, less where the structure changes along the record.  Entries that are not finite are
    dropped (the record is taken as contiguous).
    """
    if int(order) != order or order < 1:
        raise ValueError(f"innovation_predictability: order must be an integer >= 1, got {order!r}")
    if folds is not None and (fit is not None or int(folds) != folds or folds < 2):
        raise ValueError(f"innovation_predictability: folds must be an integer >= 2 without fit, got {folds!r}")
    x = np.asarray(z, dtype=float).ravel()
    x = x[np.isfinite(x)]
    src = x if fit is None else np.asarray(fit, dtype=float).ravel()
    src = src[np.isfinite(src)]
    need = 2 * order + 1 if folds is None else folds * (2 * order + 1)
    for what, a in (("z", x), ("fit", src)):
        if a.size <= need:
            raise ValueError(f"innovation_predictability: {a.size} finite values in {what} for order {order}"
                             + (f" and {folds} folds" if folds else ""))
    if folds is None:
        model = fit_ar(src, order)
        d = x - model.mean
        X = np.stack([d[order - i - 1: d.size - i - 1] for i in range(order)], axis=1)
        target = x[order:]
        err = target - model.mean - X @ model.coefficients
        centred = target - target.mean()
        num, den = float(centred @ centred), float(err @ err)
    else:
        d = x - x.mean()
        X = np.stack([d[order - i - 1: d.size - i - 1] for i in range(order)], axis=1)
        target = d[order:]
        at = np.arange(order, x.size)
        edges = np.linspace(order, x.size, int(folds) + 1).astype(int)
        num = den = 0.0
        for a, b in itertools.pairwise(edges):
            block = (at >= a) & (at < b)
            train = ~block & ~((at >= b) & (at < b + order))
            coef, *_ = np.linalg.lstsq(X[train], target[train], rcond=None)
            err = target[block] - X[block] @ coef
            centred = target[block] - target[block].mean()
            num, den = num + float(centred @ centred), den + float(err @ err)
    gain = 0.5 * math.log(num / den)
    return {"gain": gain, "share": 1.0 - math.exp(-2.0 * gain), "order": int(order), "samples": int(target.size),
            "expected_null": order / (2.0 * src.size) if fit is None and folds is None else 0.0}
