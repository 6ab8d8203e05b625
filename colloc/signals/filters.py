"""Filtering, differentiation and integration of one uniformly sampled signal."""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike
from scipy.signal import butter, sosfiltfilt

from ..base.errors import CollocInputError

__all__ = ["cumulative_integral", "derivative", "lowpass"]


def _signal(signal, min_len: int, purpose: str, name: str = "signal") -> np.ndarray:
    """Return ``signal`` as a finite 1-D float array of at least ``min_len`` samples; error
    messages call it ``name``."""
    arr = np.asarray(signal)
    if np.iscomplexobj(arr):
        raise CollocInputError(f"{name} must be real-valued, got a complex array")
    try:
        arr = arr.astype(float, copy=False)
    except (TypeError, ValueError):
        raise CollocInputError(f"{name} must be numeric, got dtype {arr.dtype}") from None
    if arr.ndim != 1:
        raise CollocInputError(f"{name} must be 1-D, got an array of shape {arr.shape}")
    if arr.size < min_len:
        raise CollocInputError(f"{name} must have at least {min_len} samples for {purpose}, "
                               f"got {arr.size}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        kind = "NaN" if np.isnan(arr[bad[0]]) else "an infinite value"
        raise CollocInputError(f"{name} contains {kind} at index {bad[0]} "
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


def lowpass(signal: ArrayLike, dt: float, cutoff: float, order: int = 4) -> np.ndarray:
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


def derivative(signal: ArrayLike, dt: float, order: int = 1) -> np.ndarray:
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


def cumulative_integral(signal: ArrayLike, dt: float, initial: float = 0.0) -> np.ndarray:
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
