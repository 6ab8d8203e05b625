"""The free-simulation check of a fitted stochastic model.

One realization of a stochastic model cannot match a record sample by sample, so the check
compares distributions: the fitted model is simulated many times from its own stationary
regime (a burn-in as long as the record, started at rest), and each record statistic is set
against its 95 % predictive interval over the draws.  The statistics are the record's RMS
about its mean, its mean speed (mean |Δy|/Δt, the posturography literature's "mean velocity"),
its mean power frequency, and its power spectrum in log-spaced bands (Welch's averaged
periodogram with a Hann window), each band against the draws' 95 % envelope.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import ArrayLike

from .model import LinearGaussianModel, ParameterValues

__all__ = ["free_simulation_check", "record_statistics"]

#: Log-spaced frequency bands of the spectrum comparison.
SPECTRUM_BANDS = 10


def _segment(n: int) -> int:
    """Welch's segment length: the largest power of two up to an eighth of the record (≥ 16)."""
    return max(16, 1 << int(np.floor(np.log2(max(n // 8, 16)))))


def _band_edges(n: int, dt: float) -> np.ndarray:
    length = _segment(n)
    f_lo, f_hi = 2.0 / (length * dt), 0.5 / dt
    return np.geomspace(f_lo, f_hi, SPECTRUM_BANDS + 1)


def _welch(y: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Frequencies and one-sided power spectral density of the columns of ``y`` (samples ×
    series), Hann window, half-overlapping segments."""
    n = y.shape[0]
    length = _segment(n)
    step = length // 2
    window = np.hanning(length)
    scale = 1.0 / (np.sum(window**2) / dt)
    starts = range(0, n - length + 1, step)
    psd = np.zeros((length // 2 + 1, y.shape[1]))
    count = 0
    for a in starts:
        seg = y[a:a + length] - y[a:a + length].mean(axis=0)
        spec = np.fft.rfft(seg * window[:, None], axis=0)
        psd += np.abs(spec) ** 2 * scale
        count += 1
    psd /= max(count, 1)
    psd[1:-1] *= 2.0  # one-sided
    return np.fft.rfftfreq(length, dt), psd


def record_statistics(y: np.ndarray, dt: float) -> dict[str, np.ndarray]:
    """RMS about the mean, mean speed, mean power frequency and band powers of the columns of
    ``y`` (samples × series, finite, uniform step ``dt``)."""
    y = np.asarray(y, dtype=float)
    if y.ndim == 1:
        y = y[:, None]
    centred = y - y.mean(axis=0)
    f, psd = _welch(y, dt)
    edges = _band_edges(y.shape[0], dt)
    bands = np.stack([psd[(f >= lo) & (f < hi)].mean(axis=0) for lo, hi in itertools.pairwise(edges)])
    inside = f > 0
    return {
        "rms": np.sqrt(np.mean(centred**2, axis=0)),
        "mean_speed": np.mean(np.abs(np.diff(y, axis=0)), axis=0) / dt,
        "mean_power_frequency": (f[inside, None] * psd[inside]).sum(axis=0) / psd[inside].sum(axis=0),
        "bands": bands,
    }


def _draws(model: LinearGaussianModel, theta, num_samples: int, draws: int,
           rng: np.random.Generator) -> np.ndarray | None:
    """``draws`` records of the model's first outputs, shape (num_samples, draws, outputs),
    after a burn-in of ``num_samples`` from rest; None when the discrete loop is unstable."""
    d = model.discretize(theta)
    Phi, C, R = d["Phi"], d["C"], d["R"]
    if np.max(np.abs(np.linalg.eigvals(Phi))) > 1.0 + 1e-12:
        return None
    n, p = model.num_states, model.num_outputs
    if model.noise == "continuous":
        Q = 0.5 * (d["Q"] + d["Q"].T)
        w, V = np.linalg.eigh(Q)
        G = V * np.sqrt(np.clip(w, 0.0, None))
        D = np.zeros((p, n))
    else:
        G, D = d["Gamma"], d["D"]
    r, U = np.linalg.eigh(0.5 * (R + R.T))
    Rh = U * np.sqrt(np.clip(r, 0.0, None))
    s = np.zeros((draws, n))
    out = np.empty((num_samples, draws, p))
    for k in range(2 * num_samples):
        x = rng.standard_normal((draws, G.shape[1]))
        if k >= num_samples:
            e = rng.standard_normal((draws, p)) @ Rh.T
            out[k - num_samples] = s @ C.T + x @ D.T + e
        s = s @ Phi.T + x @ G.T
    return out


def free_simulation_check(model: LinearGaussianModel, theta: ParameterValues, y: ArrayLike, dt: float, *,
                          outputs: list[str], units: dict[str, str] | None = None, draws: int = 200,
                          seed: int = 0) -> dict:
    """The record ``y`` (samples × outputs) against ``draws`` free simulations of ``model`` at
    ``theta`` (seeded): for each output, each statistic of :func:`record_statistics` with its
    95 % predictive interval, whether the record lies inside, and the number of spectrum bands
    inside the draws' envelope.  ``{"skipped": why}`` when the loop is unstable (no stationary
    regime) or the record has missing samples."""
    y = np.asarray(y, dtype=float)
    if y.ndim == 1:
        y = y[:, None]
    if not np.all(np.isfinite(y)):
        return {"skipped": "the record has missing samples (the spectrum needs a continuous record)"}
    rng = np.random.default_rng(seed)
    sims = _draws(model, theta, y.shape[0], draws, rng)
    if sims is None:
        return {"skipped": "the identified loop is unstable: the model has no stationary regime to draw from"}
    measured = record_statistics(y, dt)
    units = units or {}
    result: dict = {"draws": draws, "seed": seed, "outputs": {}}
    for j, name in enumerate(outputs):
        simulated = record_statistics(sims[:, :, j], dt)
        unit = units.get(name, "")
        per: dict = {}
        for stat, unit_of in (("rms", unit), ("mean_speed", f"{unit}/s" if unit else "1/s"),
                              ("mean_power_frequency", "Hz")):
            lo, hi = np.percentile(simulated[stat], [2.5, 97.5])
            value = float(measured[stat][j])
            per[stat] = {"measured": value, "interval": [float(lo), float(hi)], "inside": bool(lo <= value <= hi),
                         "unit": unit_of}
        lo, hi = np.percentile(simulated["bands"], [2.5, 97.5], axis=1)
        band = measured["bands"][:, j]
        inside = (band >= lo) & (band <= hi)
        edges = _band_edges(y.shape[0], dt)
        per["spectrum"] = {"bands_hz": [[float(a), float(b)] for a, b in itertools.pairwise(edges)],
                           "inside": [bool(v) for v in inside], "bands_inside": int(inside.sum()),
                           "bands": int(inside.size)}
        result["outputs"][name] = per
    return result
