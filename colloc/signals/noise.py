"""The white-noise floor of a record: where a fitted measurement noise can start.

A stochastic model fitted to a recorded signal (a Kalman likelihood with a white measurement
noise σ) needs a start and a lower bound for σ that suit the record, not a constant that suits
one data set.  Two facts of the record give one:

* a record written with a fixed number of decimals holds every value as a multiple of its
  quantum δ, and rounding adds a white error of standard deviation δ/√12
  (:func:`colloc.signals.rounding_sd`): no white measurement noise of that record is smaller;
* a record written at full precision: the level of its spectrum over the top of its frequency
  band, where a smooth signal has no power left and a white noise of standard deviation σ has
  the flat one-sided density 2σ²·dt.  That level is an upper bound of the white noise's SD.

:func:`white_noise_floor` returns the first when the record is rounded, else the second.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import CollocInputError

__all__ = ["NoiseFloor", "white_noise_floor"]

#: Samples in a Welch segment of the spectral estimate (fewer when the record is shorter).
SEGMENT = 256
#: Fewest finite samples a floor is estimated from.
MIN_SAMPLES = 16


@dataclass(frozen=True)
class NoiseFloor:
    """A record's white-noise floor.

    Attributes
    ----------
    sd : float
        Standard deviation of the floor, in the record's units.
    source : {"rounding", "spectrum"}
        ``"rounding"``: δ/√12 of the record's quantum δ; ``"spectrum"``: the spectral level over
        the top ``band`` of the frequencies (an unrounded record).
    band : float
        The fraction of the frequencies up to Nyquist whose median level was used.
    """

    sd: float
    source: str
    band: float


def white_noise_floor(values: ArrayLike, dt: float, band: float = 0.4) -> NoiseFloor:
    """The white-noise floor of the record ``values`` sampled every ``dt`` seconds.

    Non-finite samples (not measured) are left out.  When the record is rounded to a quantum δ
    (:func:`colloc.signals.resolution`) the floor is δ/√12.  Otherwise it is
    √(median one-sided Welch PSD over the top ``band`` of the frequencies · f_s/2), with
    segments of ``SEGMENT`` (256) samples: the SD of a white noise whose flat density is that
    level (a white noise of SD σ has the one-sided density 2σ²·dt)."""
    y = np.asarray(values)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.number) or np.iscomplexobj(y):
        raise CollocInputError(f"white_noise_floor: values must be a 1-D real array, got shape {y.shape} "
                               f"of dtype {y.dtype}")
    for name, value, upper in (("dt", dt, math.inf), ("band", band, 1.0)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < float(value) <= upper:
            raise CollocInputError(f"white_noise_floor: {name} must be a number in (0, {upper:g}], got {value!r}")
    y = y.astype(float)
    y = y[np.isfinite(y)]
    if y.size < MIN_SAMPLES:
        raise CollocInputError(f"white_noise_floor: values has {y.size} finite samples; at least "
                               f"{MIN_SAMPLES} are needed")
    # imported here, not with the module: importing the submodule ``resolution`` binds that name of
    # the package to the module, over the function the package's lazy names give (as asking the
    # package for ``rounding_sd`` first does too)
    from .rounding import rounding_sd

    floor = rounding_sd(y)
    if np.isfinite(floor) and floor > 0:
        return NoiseFloor(float(floor), "rounding", float(band))
    from scipy.signal import welch

    f, p = welch(y - y.mean(), fs=1.0 / dt, nperseg=min(SEGMENT, y.size))
    level = float(np.sqrt(np.median(p[f >= (1.0 - band) * f[-1]]) / (2.0 * dt)))
    return NoiseFloor(level, "spectrum", float(band))
