"""The stabilogram diffusion function of a posturography record (Collins & De Luca 1993)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.fft import irfft, next_fast_len, rfft

from ..base.errors import CollocInputError
from .filters import _positive, _signal

__all__ = ["sdf"]


def _head_tail_sums(w: np.ndarray, k_max: int) -> tuple[np.ndarray, np.ndarray]:
    """Sums of the first k and of the last k elements of ``w`` for k = 0 .. k_max."""
    return (np.concatenate(([0.0], np.cumsum(w[:k_max]))),
            np.concatenate(([0.0], np.cumsum(w[::-1][:k_max]))))


def sdf(signal: ArrayLike, dt: float, max_lag: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
    """Stabilogram diffusion function (Collins & De Luca 1993).

    ``SDF(k dt) = 1 / (N - k) * sum_{i=0}^{N-1-k} (u[i+k] - u[i]) ** 2`` for every lag
    ``k = 0 .. K`` with ``K = floor(max_lag / dt)`` (a relative tolerance of 1e-12 absorbs
    round-off in the ratio).  Computed in O(N log N): the square is expanded, the sums of
    squares come from cumulative sums and the lagged products from a zero-padded FFT
    autocorrelation.  To limit cancellation, the least-squares line through the signal is
    removed first and its (exact) contribution added back, so the absolute round-off error is
    of order ``eps * mean(r**2) * N / (N - k)`` with ``r`` the detrended signal; tiny negative
    values are clipped to 0.  The lags with ``N - k <= sqrt(N)``, where this bound would be
    large relative to an average over so few terms, are summed directly (O(N) in all).

    Parameters
    ----------
    signal : array_like, shape (N,)
        Uniformly sampled, finite signal (e.g. one COP coordinate) with at least 2 samples.
    dt : float
        Sampling interval in seconds (> 0).
    max_lag : float, optional
        Largest lag in seconds (default 10 s); ``floor(max_lag / dt)`` must be less than N,
        i.e. ``max_lag`` must not exceed the record duration ``(N - 1) * dt``.

    Returns
    -------
    lags : numpy.ndarray, shape (K + 1,)
        Lags ``k * dt`` in seconds, starting at 0.
    values : numpy.ndarray, shape (K + 1,)
        SDF values in squared signal units; ``values[0] == 0``.
    """
    x = _signal(signal, 2, "sdf")
    dt = _positive(dt, "dt")
    max_lag = _positive(max_lag, "max_lag")
    n = x.size
    k_max = math.floor(max_lag / dt * (1.0 + 1e-12))
    if k_max >= n:
        raise CollocInputError(
            f"max_lag = {max_lag:g} s is {k_max} samples but the record has only {n} samples; "
            f"max_lag must not exceed the record duration (N - 1) * dt = {(n - 1) * dt:g} s")
    # Work with the residual v of a least-squares line a * i + b; with u = v + a * i,
    # (u[i+k] - u[i])^2 = (v[i+k] - v[i])^2 + 2 a k (v[i+k] - v[i]) + (a k)^2.
    centred_index = np.arange(n) - 0.5 * (n - 1)
    slope = np.dot(centred_index, x - x.mean()) / np.dot(centred_index, centred_index)
    v = x - x.mean() - slope * centred_index
    # sum_{i<N-k} v[i]^2 + sum_{i>=k} v[i]^2 = 2 * total - (first k squares) - (last k squares),
    # and likewise for the drift term; running sums over k <= K terms only.
    head_sq, tail_sq = _head_tail_sums(v * v, k_max)
    head, tail = _head_tail_sums(v, k_max)
    nfft = next_fast_len(2 * n, real=True)
    spectrum = rfft(v, nfft)
    lagged = irfft(spectrum.real ** 2 + spectrum.imag ** 2, nfft)[: k_max + 1]  # sum v[i] v[i+k]
    k = np.arange(k_max + 1)
    values = (2.0 * np.dot(v, v) - head_sq - tail_sq - 2.0 * lagged
              + 2.0 * slope * k * (tail - head)) / (n - k) + (slope * k) ** 2
    values[0] = 0.0
    np.clip(values, 0.0, None, out=values)
    # The last lags average only a few terms, so the expansion loses relative accuracy there;
    # sum them directly instead (at most isqrt(N) lags of at most isqrt(N) terms: O(N)).
    for lag in range(max(1, n - math.isqrt(n)), k_max + 1):
        step = x[lag:] - x[: n - lag]
        values[lag] = np.dot(step, step) / (n - lag)
    return k * dt, values
