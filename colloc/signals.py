"""Signal tools for centre-of-pressure (COP) posturography records.

All functions take one uniformly sampled, one-dimensional signal (one COP coordinate at a
time) and its sampling interval ``dt`` in seconds:

* :func:`lowpass` -- zero-phase Butterworth low-pass filter;
* :func:`derivative` -- first or second derivative, second-order accurate everywhere;
* :func:`cumulative_integral` -- running trapezoidal integral;
* :func:`sdf` -- stabilogram diffusion function, computed in O(N log N).

Bad input raises :class:`colloc.errors.CollocInputError` (a :class:`ValueError`) whose message
names the offending argument.

References
----------
Collins, J. J. & De Luca, C. J. (1993). Open-loop and closed-loop control of posture: a
random-walk analysis of center-of-pressure trajectories. Exp. Brain Res. 95, 308-318.
Benda, B. J., Riley, P. O. & Krebs, D. E. (1994). Biomechanical relationship between center of
gravity and center of pressure during standing. IEEE Trans. Rehabil. Eng. 2, 3-10.
Barauskas, R. & Krušinskienė, R. (2007).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.fft import irfft, next_fast_len, rfft
from scipy.signal import butter, sosfiltfilt

from .errors import CollocInputError

__all__ = ["cumulative_integral", "derivative", "lowpass", "sdf"]


def _signal(signal, min_len: int, purpose: str) -> np.ndarray:
    """Return ``signal`` as a finite 1-D float array of at least ``min_len`` samples."""
    arr = np.asarray(signal)
    if np.iscomplexobj(arr):
        raise CollocInputError("signal must be real-valued, got a complex array")
    try:
        arr = arr.astype(float, copy=False)
    except (TypeError, ValueError):
        raise CollocInputError(f"signal must be numeric, got dtype {arr.dtype}") from None
    if arr.ndim != 1:
        raise CollocInputError(f"signal must be 1-D, got an array of shape {arr.shape}")
    if arr.size < min_len:
        raise CollocInputError(f"signal must have at least {min_len} samples for {purpose}, "
                               f"got {arr.size}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        kind = "NaN" if np.isnan(arr[bad[0]]) else "an infinite value"
        raise CollocInputError(f"signal contains {kind} at index {bad[0]} "
                               f"({bad.size} non-finite sample(s) in all)")
    return arr


def _positive(value, name: str) -> float:
    """Return ``value`` as a float after checking it is a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise CollocInputError(f"{name} must be a positive number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > 0.0):
        raise CollocInputError(f"{name} must be a positive finite number, got {value!r}")
    return value


def _order(value, allowed=None) -> int:
    """Return ``value`` as an int after checking it is a positive integer (in ``allowed``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise CollocInputError(f"order must be a positive integer, got {value!r}")
    if allowed is not None and value not in allowed:
        raise CollocInputError(f"order must be one of {allowed}, got {value!r}")
    return int(value)


def _head_tail_sums(w: np.ndarray, k_max: int) -> tuple[np.ndarray, np.ndarray]:
    """Sums of the first k and of the last k elements of ``w`` for k = 0 .. k_max."""
    return (np.concatenate(([0.0], np.cumsum(w[:k_max]))),
            np.concatenate(([0.0], np.cumsum(w[::-1][:k_max]))))


def lowpass(signal, dt, cutoff, order=4) -> np.ndarray:
    """Zero-phase Butterworth low-pass filter.

    A digital Butterworth filter of order ``order`` with -3 dB frequency ``cutoff`` is
    designed in second-order sections (:func:`scipy.signal.butter`) and applied forwards and
    backwards (:func:`scipy.signal.sosfiltfilt`), which cancels the phase shift.

    Forward-backward filtering doubles the effective order (roll-off ``40 * order`` dB per
    decade instead of ``20 * order``) and squares the magnitude response: the zero-phase gain
    is ``G(f) = 1 / (1 + (tan(pi f dt) / tan(pi cutoff dt)) ** (2 * order))``.  Hence the gain
    at ``cutoff`` is 1/2 (-6 dB), not 1/sqrt(2), and the -3 dB point of the applied filter
    lies *below* ``cutoff``, at ``tan(pi f dt) = tan(pi cutoff dt) * (sqrt(2) - 1) ** (1 / (2
    order))``; well below the Nyquist frequency ``f3dB ~= 0.896 * cutoff`` for order 4
    (``0.802 * cutoff`` for order 2).

    Parameters
    ----------
    signal : array_like, shape (N,)
        Uniformly sampled, finite signal.
    dt : float
        Sampling interval in seconds (> 0).
    cutoff : float
        Design cutoff frequency in Hz; ``0 < cutoff < 1 / (2 * dt)`` (the Nyquist frequency).
    order : int, optional
        Order of the designed Butterworth filter (default 4); the applied zero-phase filter
        has order ``2 * order``.

    Returns
    -------
    numpy.ndarray, shape (N,)
        The filtered signal.

    Raises
    ------
    CollocInputError
        If ``signal`` is not 1-D, contains NaN or is too short, or if ``dt``, ``cutoff`` or
        ``order`` is invalid.  Both ends are padded by odd reflection over
        ``3 * (number of filter taps)`` samples (15 for order 4, the
        :func:`scipy.signal.sosfiltfilt` default), so ``signal`` needs more samples than that.
    """
    dt = _positive(dt, "dt")
    cutoff = _positive(cutoff, "cutoff")
    order = _order(order)
    nyquist = 0.5 / dt
    if cutoff >= nyquist:
        raise CollocInputError(f"cutoff = {cutoff:g} Hz must be below the Nyquist frequency "
                               f"1/(2*dt) = {nyquist:g} Hz")
    sos = butter(order, cutoff, btype="low", output="sos", fs=1.0 / dt)
    ntaps = 2 * len(sos) + 1 - min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum()))
    padlen = 3 * ntaps
    x = _signal(signal, padlen + 1, f"lowpass with order={order} (pads {padlen} samples per end)")
    return sosfiltfilt(sos, x, padlen=padlen)


def derivative(signal, dt, order=1) -> np.ndarray:
    """First or second time derivative of a uniformly sampled signal.

    Second-order accurate everywhere.  ``order=1``: central differences
    ``(f[i+1] - f[i-1]) / (2 dt)`` inside and the one-sided stencils
    ``(-3 f[0] + 4 f[1] - f[2]) / (2 dt)`` (mirrored at the end) at the ends
    (:func:`numpy.gradient` with ``edge_order=2``); exact for quadratics.  ``order=2``:
    ``(f[i-1] - 2 f[i] + f[i+1]) / dt**2`` inside and ``(2 f[0] - 5 f[1] + 4 f[2] - f[3]) /
    dt**2`` (mirrored at the end) at the ends; exact for cubics.

    Parameters
    ----------
    signal : array_like, shape (N,)
        Uniformly sampled, finite signal; at least 3 samples (``order=1``) or 4 (``order=2``).
    dt : float
        Sampling interval in seconds (> 0).
    order : {1, 2}, optional
        Order of the derivative (default 1).

    Returns
    -------
    numpy.ndarray, shape (N,)
        The derivative, in signal units per second (``order=1``) or per second squared.
    """
    order = _order(order, allowed=(1, 2))
    x = _signal(signal, order + 2, f"derivative order={order}")
    dt = _positive(dt, "dt")
    if order == 1:
        return np.gradient(x, dt, edge_order=2)
    d2 = np.empty_like(x)
    d2[1:-1] = x[:-2] - 2.0 * x[1:-1] + x[2:]
    d2[0] = 2.0 * x[0] - 5.0 * x[1] + 4.0 * x[2] - x[3]
    d2[-1] = 2.0 * x[-1] - 5.0 * x[-2] + 4.0 * x[-3] - x[-4]
    return d2 / (dt * dt)


def cumulative_integral(signal, dt, initial=0.0) -> np.ndarray:
    """Running integral of a uniformly sampled signal by the trapezoidal rule.

    ``out[0] = initial`` and ``out[i] = initial + dt * sum_{j<i} (f[j] + f[j+1]) / 2``; exact
    for linear signals.

    Parameters
    ----------
    signal : array_like, shape (N,)
        Uniformly sampled, finite signal with at least 2 samples.
    dt : float
        Sampling interval in seconds (> 0).
    initial : float, optional
        Value of the integral at the first sample (default 0).

    Returns
    -------
    numpy.ndarray, shape (N,)
        The running integral, same length as ``signal``.
    """
    x = _signal(signal, 2, "cumulative_integral")
    dt = _positive(dt, "dt")
    if isinstance(initial, bool) or not isinstance(initial, numbers.Real) or not math.isfinite(initial):
        raise CollocInputError(f"initial must be a finite number, got {initial!r}")
    steps = 0.5 * dt * (x[1:] + x[:-1])
    return float(initial) + np.concatenate(([0.0], np.cumsum(steps)))


def sdf(signal, dt, max_lag=10.0) -> tuple[np.ndarray, np.ndarray]:
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
