"""Measured ship-motion files into the ship columns of docs/contracts.md §1–2 (``ship-stance``)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping

import numpy as np
from scipy.interpolate import InterpolatedUnivariateSpline, UnivariateSpline

from ..base.errors import DataError, OptionsError
from ..definition.trial import Trial
from .motion import SHIP_COLUMNS

__all__ = ["read_ship_motion"]

_ANGLES = SHIP_COLUMNS[0:3]
_DERIVED = SHIP_COLUMNS[3:9]
_TRANSLATION = SHIP_COLUMNS[9:12]


def read_ship_motion(path: str | os.PathLike[str], *, columns: Mapping[str, str] | None = None,
                     units: Mapping[str, str] | None = None, derivatives: str = "auto", sigma: float | None = None,
                     name: str | None = None) -> Trial:
    """Read a measured ship-motion file into the 12 ship columns (rad, rad/s, rad/s², m/s²).

    The file is read by :meth:`colloc.Trial.from_csv` (CSV or TSV, gzip, units in the header
    such as ``roll[deg]``, ``RollRate (deg/s)``, ``AccX[m/s^2]`` or ``[g]``, converted to SI),
    with the same ``columns`` (ship column → the file's column) and ``units`` (ship column →
    unit, for headers without one) mappings.  The Bryant angles ``ship_roll/pitch/yaw`` and the
    deck-frame accelerations ``ship_acc_x/y/z`` are required; an angle beyond ±π rad after the
    unit conversion is refused (degrees written without a unit).

    Parameters
    ----------
    derivatives : {"auto", "spline", "none"}
        Where the angle rates and accelerations (``ship_*_rate``, ``ship_*_acc``) come from.
        ``"auto"`` (default): the file's columns when it has them, the smoothing spline for
        those it lacks; ``"spline"``: always the spline (the file's are ignored); ``"none"``:
        they must be in the file.
    sigma : float, optional
        Noise standard deviation of the angles (rad) for the spline.  By default it is
        estimated from the data: 1.4826·MAD(Δ³y)/√20, the third differences of a smooth
        record being noise (whose variance they multiply by 20).  That holds for records
        sampled well above the motion's frequencies (20 Hz for wave periods of seconds); on
        a coarsely sampled record the third differences are signal and oversmooth: give
        ``sigma`` then.
    name : str, optional
        Trial name (default the file name).

    Notes
    -----
    The spline is a quintic smoothing spline through (time, angle) with weights 1/σ and
    smoothing s = n (``scipy.interpolate.UnivariateSpline``, Reinsch's criterion Σ((y − f)/σ)² ≤ n),
    differentiated exactly once and twice; with σ = 0 it interpolates.

    Returns
    -------
    Trial
        With exactly the 12 ship columns.  Join it with the body's columns by
        ``trial.with_signals(...)`` or write both into one file.
    """
    if derivatives not in ("auto", "spline", "none"):
        raise OptionsError(f"derivatives must be 'auto', 'spline' or 'none', got {derivatives!r}")
    if sigma is not None and (isinstance(sigma, bool) or not isinstance(sigma, (int, float))
                              or not np.isfinite(sigma) or sigma < 0):
        raise OptionsError(f"sigma must be a finite number ≥ 0 (rad), got {sigma!r}")
    optional = () if derivatives == "none" else _DERIVED
    required = _ANGLES + _TRANSLATION + (_DERIVED if derivatives == "none" else ())
    trial = Trial.from_csv(path, columns=columns, units=units, name=name, min_rows=6,
                           required=required, optional=optional)
    for column in _ANGLES:
        bad = np.flatnonzero(np.abs(trial[column]) > np.pi)
        if bad.size:
            row = int(bad[0])
            raise DataError(f"{path}: column '{column}', data row {row + 1} (time {trial.time[row]:g} s): "
                            f"{trial[column][row]:g} is beyond ±π; angles must be in radians — if the file "
                            f"is in degrees, say so in its header ({column}[deg]) or by units=")
    made = {}
    for k, angle in enumerate(_ANGLES):
        rate, acc = _DERIVED[k], _DERIVED[3 + k]
        if derivatives == "spline" or (derivatives == "auto" and (rate not in trial or acc not in trial)):
            spline = _smoothing_spline(trial.time, trial[angle], sigma, f"{path}: column '{angle}'")
            if derivatives == "spline" or rate not in trial:
                made[rate] = spline.derivative(1)(trial.time)
            if derivatives == "spline" or acc not in trial:
                made[acc] = spline.derivative(2)(trial.time)
    if made:
        trial = trial.with_signals(**made)
    return Trial(trial.time, {c: trial[c] for c in SHIP_COLUMNS}, name=trial.name)


def _smoothing_spline(time: np.ndarray, values: np.ndarray, sigma: float | None, where: str):
    if sigma is None:
        d3 = np.diff(values, 3)
        sigma = 1.4826 * float(np.median(np.abs(d3 - np.median(d3)))) / np.sqrt(20.0)
    if sigma <= 1e-12 * max(1.0, float(np.ptp(values))):
        return InterpolatedUnivariateSpline(time, values, k=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return UnivariateSpline(time, values, w=np.full(time.size, 1.0 / sigma), k=5, s=float(time.size))
        except UserWarning as exc:   # FITPACK could not meet s: say so, do not return a poor fit
            raise DataError(f"{where}: the smoothing spline failed ({str(exc).splitlines()[0]}); "
                            f"give sigma= (the angle noise, rad) or the rate and acceleration columns") from None
