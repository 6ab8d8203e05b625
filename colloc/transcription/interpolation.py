"""Values between the nodes or samples: the cubic-convolution kernel that reads delayed states
at any time from the node values, and the spline that reads measured inputs between samples."""

from __future__ import annotations

import casadi as ca
import numpy as np

__all__ = ["keys_kernel", "keys_weights", "known_inputs"]


def keys_kernel(s):
    """Cubic-convolution interpolation kernel (Keys 1981, a = −½): C¹, interpolating,
    exact for quadratics, support |s| < 2; works on numbers and CasADi expressions."""
    a = ca.fabs(s)
    inner = 1.5 * a**3 - 2.5 * a**2 + 1
    outer = -0.5 * a**3 + 2.5 * a**2 - 4 * a + 2
    return ca.if_else(a <= 1, inner, ca.if_else(a < 2, outer, 0))


def keys_weights(s, offsets) -> ca.SX:
    """``[K(o + s) for o in offsets]`` (the kernel is even) for an expression ``s``, with
    the four non-zero weights computed once as cubics in the fractional part of ``s`` and
    placed by comparing integers: the same values and derivatives as evaluating
    :func:`keys_kernel` per offset, at a fraction of the operations."""
    n = ca.floor(s)
    f = s - n
    inner = lambda a: 1.5 * a**3 - 2.5 * a**2 + 1  # noqa: E731  (|x| ≤ 1)
    outer = lambda a: -0.5 * a**3 + 2.5 * a**2 - 4 * a + 2  # noqa: E731  (1 < |x| < 2)
    weight = {-2: outer(2 - f), -1: inner(1 - f), 0: inner(f), 1: outer(1 + f)}  # by o + n
    out = []
    for o in offsets:
        w = 0
        for m, c in weight.items():
            w = w + ca.if_else(n == m - float(o), c, 0)
        out.append(w)
    return ca.vertcat(*out)


def known_inputs(trial, names: list[str], times: np.ndarray, interpolation: str) -> np.ndarray:
    """Measured inputs ``names`` of ``trial`` at ``times`` (within the record), shape
    ``(len(names), len(times))``: exact at the samples, between them by the not-a-knot
    cubic spline (``"cubic"``, needs four samples, else linear) or linearly."""
    if not names:
        return np.zeros((0, len(times)))
    values = np.stack([trial[u] for u in names])
    if interpolation == "linear" or trial.num_samples < 4:
        return np.stack([np.interp(times, trial.time, v) for v in values])
    from scipy.interpolate import CubicSpline

    t = np.clip(times, trial.time[0], trial.time[-1])
    out = np.atleast_2d(CubicSpline(trial.time, values, axis=1)(t))
    j = np.clip(np.searchsorted(trial.time, t), 0, trial.num_samples - 1)
    at_sample = trial.time[j] == t  # the samples themselves, not their round-off image
    out[:, at_sample] = values[:, j[at_sample]]
    return out
