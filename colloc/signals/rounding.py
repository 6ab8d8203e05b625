"""The resolution a record was written with, and the noise its rounding adds.

A file of numbers printed with a fixed number of decimals (a force plate's COP in cm with six
decimals) holds every value as an integer multiple of one quantum δ.  Rounding a signal that
moves over many quanta between samples adds an error that is uniform on (−δ/2, δ/2) and white,
with standard deviation δ/√12 (Bennett 1948, "Spectra of quantized signals", Bell System
Technical Journal 27:446–472; Widrow & Kollár 2008, *Quantization Noise*, Cambridge UP): a floor
under any measurement noise estimated from the record, and where its spectrum flattens out
above the signal's band.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import CollocInputError

__all__ = ["resolution", "rounding_sd"]

#: How far (in quanta) a gap between two of the record's values may lie from a whole number of
#: quanta: far above the error of a unit conversion (cm → m: ~1e-9 of a quantum of 1e-8 m) and
#: far below what a chance fit of thousands of real-valued gaps would reach.
TOLERANCE = 0.01
#: The largest number of quanta the smallest gap between distinct values may span.
MAX_DIVISOR = 1000
#: A quantum at most this many float64 spacings of the record's largest value is the float
#: format's own resolution, not the file's: the record is taken as unrounded.
FLOAT_SPACINGS = 1e3


def resolution(values: ArrayLike) -> float:
    """The quantum δ of which every finite value of ``values`` is an integer multiple (up to an
    offset), or NaN when there is none (values written at full precision, fewer than 3 distinct
    values, or a quantum within :data:`FLOAT_SPACINGS` of float64's own spacing).

    The smallest gap between distinct values spans a whole number n of quanta; the smallest n
    (up to :data:`MAX_DIVISOR`) for which every gap is a whole number of ``gap_min / n`` within
    :data:`TOLERANCE` gives δ, refined as the span divided by its number of quanta (so that a
    unit conversion's float error does not carry over)."""
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise CollocInputError("resolution: values is empty")
    x = x[np.isfinite(x)]
    distinct = np.unique(x)
    if distinct.size < 3:
        return math.nan
    gaps = np.diff(distinct)
    smallest = float(gaps.min())
    if smallest <= FLOAT_SPACINGS * float(np.spacing(np.abs(distinct).max())):
        return math.nan
    for n in range(1, MAX_DIVISOR + 1):
        quanta = gaps / (smallest / n)
        if np.all(np.abs(quanta - np.rint(quanta)) <= TOLERANCE):
            return float((distinct[-1] - distinct[0]) / np.rint(quanta).sum())
    return math.nan


def rounding_sd(values: ArrayLike) -> float:
    """δ/√12: the standard deviation of the error of rounding to the record's :func:`resolution`
    (NaN when the record is not rounded)."""
    return resolution(values) / math.sqrt(12.0)
