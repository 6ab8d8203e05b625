"""Inputs given by their samples, read between them: the cubic Hermite piece of each sample step
with the Catmull–Rom slopes (central differences; one-sided at the record's ends), in numbers
for a simulator and in CasADi expressions for a transcription (an errors-in-variables input,
whose samples are unknowns).  The hybrid simulator (:func:`colloc.simulate_hybrid`) and the
hybrid transcription (:mod:`colloc.transcription.hybrid_fit`) read an input the same way, so a
fit and its simulation check see the same input between samples.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

import casadi as ca
import numpy as np

__all__ = ["HERMITE", "input_values", "read_input"]


def _hermite() -> ca.Function:
    s, v0, v1, d0, d1 = (ca.SX.sym(n) for n in ("s", "v0", "v1", "d0", "d1"))
    s2, s3 = s * s, s * s * s
    return ca.Function("hermite", [s, v0, v1, d0, d1], [(2 * s3 - 3 * s2 + 1) * v0 + (s3 - 2 * s2 + s) * d0
                                                         + (3 * s2 - 2 * s3) * v1 + (s3 - s2) * d1])


#: The cubic Hermite piece (s, v0, v1, d0, d1) → value as a CasADi Function.
HERMITE = _hermite()


def read_input(time: np.ndarray | list, values, k: int, t):
    """An input at ``t`` in the sample step ``k`` (``time[k] ≤ t ≤ time[k + 1]``, or a little
    outside it): the cubic Hermite piece through ``values[k]``, ``values[k + 1]`` with the
    Catmull–Rom slopes (central differences; one-sided at the record's ends).  ``values`` may be
    numbers or CasADi symbols (an errors-in-variables input), ``t`` a number or an expression."""
    n = len(time)

    def slope(i):
        lo, hi = max(i - 1, 0), min(i + 1, n - 1)
        return (values[hi] - values[lo]) / (time[hi] - time[lo])

    h = time[k + 1] - time[k]
    args = ((t - time[k]) / h, values[k], values[k + 1], h * slope(k), h * slope(k + 1))
    if all(isinstance(a, float | np.floating) for a in args):  # numbers (the simulator): no CasADi call
        s, v0, v1, d0, d1 = (float(a) for a in args)
        return (((2 * s - 3) * s * s + 1) * v0 + ((s - 2) * s + 1) * s * d0 + (3 - 2 * s) * s * s * v1
                + (s - 1) * s * s * d1)
    out = HERMITE(*args)
    return float(out) if isinstance(out, ca.DM) else out


def input_values(time, samples: dict) -> Callable:
    """``t → {input: value}`` of inputs given by their ``samples`` at ``time`` (numbers), by
    :func:`read_input`: what the simulator reads (:func:`colloc.simulate_hybrid`)."""
    # Python lists and bisect: the simulator reads the inputs at every evaluation of the rates
    times = np.asarray(time, dtype=float).tolist()
    lists = {u: np.asarray(v, dtype=float).tolist() for u, v in samples.items()}
    last = len(times) - 2

    def at(t) -> dict:
        t = float(t)
        k = min(max(bisect.bisect_right(times, t) - 1, 0), last)
        return {u: read_input(times, v, k, t) for u, v in lists.items()}

    return at
