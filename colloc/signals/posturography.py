"""Summary measures of a two-dimensional centre-of-pressure (COP) record.

Every function takes the antero-posterior (``ap``) and medio-lateral (``ml``) COP coordinates of
one record, uniformly sampled, in metres, and (where time enters) the sampling interval ``dt``
in seconds; results are in SI units (m², m, m/s, Hz).  The definitions are those of the public
data set of Santos & Duarte (2016), whose per-trial ``COParea``, ``COPvelo`` and ``COPmfreq``
(``BDSinfoCOP.txt``, in cm², cm/s and Hz) they reproduce from the raw files of the data set: the
whole record as shipped (60 s, 6000 samples at 100 Hz; the files are already low-pass filtered
at 10 Hz, PhysioNet doi:10.13026/C2WW2W) with no further filtering, trimming or detrending
(``tests/unit/test_posturography.py``).

* :func:`ellipse_area` -- area of the 95 % prediction ellipse;
* :func:`path_length` and :func:`mean_speed` -- length of the sampled COP path, and that length
  over the record's duration;
* :func:`mean_power_frequency` -- mean frequency of the Welch power spectrum of one coordinate;
* :func:`mean_frequency` -- the two coordinates' mean power frequencies, weighted by their power;
* :func:`sway_metrics` -- the three measures of the data set at once.

Bad input raises :class:`colloc.CollocInputError` naming the argument.

References
----------
Santos, D. A. & Duarte, M. (2016). A public data set of human balance evaluations. PeerJ 4,
e2648.  The authors' functions (MIT licence; read, not copied): ``functions/hyperellipsoid.py``
(commit 32a3c7d2725bd7d412acf531aa537833e826b11a) and ``functions/psd.py`` (commit
40698d1cb422f8d8afc78a2bcafb1a3ce4466b64) of github.com/BMClab/BMC, both imported by the data
set's analysis notebook (``BalanceDatasetAnalysis.ipynb`` of github.com/BMClab/datasets, read in
the fork regifukuchi/datasets at commit 13490dc9b5ecd309422ee45a28afcc0abc6e3325).
Duarte, M. (2015). Comments on "Ellipse area calculations and their applicability in
posturography" (Schubert and Kirchner, 2014). Gait Posture 41, 44-45.
Chew, V. (1966). Confidence, prediction, and tolerance regions for the multivariate normal
distribution. J. Am. Stat. Assoc. 61, 605-617.
Prieto, T. E., Myklebust, J. B., Hoffmann, R. G., Lovett, E. G. & Myklebust, B. M. (1996).
Measures of postural steadiness. IEEE Trans. Biomed. Eng. 43, 956-966.
Welch, P. D. (1967). The use of fast Fourier transform for the estimation of power spectra.
IEEE Trans. Audio Electroacoust. 15, 70-73.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike
from scipy.integrate import trapezoid
from scipy.signal import welch
from scipy.stats import f as fisher_f

from ..base.errors import CollocInputError
from .filters import _positive, _signal

__all__ = ["ellipse_area", "mean_frequency", "mean_power_frequency", "mean_speed", "path_length",
           "sway_metrics"]


def _pair(ap, ml, min_len: int, purpose: str) -> tuple[np.ndarray, np.ndarray]:
    """``ap`` and ``ml`` as finite 1-D float arrays of one length, at least ``min_len``."""
    x = _signal(ap, min_len, purpose, name="ap")
    y = _signal(ml, min_len, purpose, name="ml")
    if x.size != y.size:
        raise CollocInputError(f"ap and ml must have the same number of samples, got {x.size} "
                               f"and {y.size}")
    return x, y


def _welch(signal: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Welch power spectral density of ``signal`` (Hz, units² per Hz).

    Segments of ``ceil(N / 2)`` samples overlapping by half, periodic Hann window, each
    segment's mean removed: the defaults of the authors' ``psd.py``.
    """
    nperseg = math.ceil(signal.size / 2)
    return welch(signal, fs=1.0 / dt, window="hann", nperseg=nperseg, noverlap=nperseg // 2,
                 detrend="constant")


def _path(x: np.ndarray, y: np.ndarray) -> float:
    """Sum of the planar distances between successive samples."""
    return float(np.sum(np.hypot(np.diff(x), np.diff(y))))


def _mean_of_spectrum(freq: np.ndarray, power: np.ndarray) -> float:
    """Trapezoid-rule mean frequency of a spectrum with positive total power."""
    return float(trapezoid(freq * power, freq) / trapezoid(power, freq))


def _has_power(signal: np.ndarray, freq: np.ndarray, power: np.ndarray) -> bool:
    """False for a constant signal (whose segment means may not cancel exactly in floating
    point) and for a spectrum without power."""
    return bool(np.ptp(signal) > 0.0 and trapezoid(power, freq) > 0.0)


def ellipse_area(ap: ArrayLike, ml: ArrayLike, probability: float = 0.95) -> float:
    """Area of the prediction ellipse of the COP samples, in m².

    The ellipse centred on the mean COP whose axes are the principal axes of the sample
    covariance ``C`` (divisor ``N - 1``) and that would contain a new sample with the given
    probability if the samples were independent draws of a bivariate normal distribution
    (Chew 1966): ``area = pi * q * sqrt(det C)`` with ``q = F_p(2, N - 2) * 2 (N - 1) (N + 1)
    / (N (N - 2))``, ``F_p`` the ``p`` quantile of the F distribution.  This is the 95 %
    ellipse of Santos & Duarte (2016) (``hyperellipsoid.py``; Duarte 2015).  Successive COP
    samples are strongly correlated, so the probability describes the spread of the samples,
    not a calibrated coverage.

    Parameters
    ----------
    ap, ml : array_like, shape (N,)
        COP coordinates in metres, finite, with ``N >= 3``.
    probability : float, optional
        Prediction probability, in (0, 1) (default 0.95).

    Returns
    -------
    float
        Area in m² (0 if the samples lie on a line).
    """
    x, y = _pair(ap, ml, 3, "ellipse_area")
    if (isinstance(probability, bool) or not isinstance(probability, numbers.Real)
            or not 0.0 < float(probability) < 1.0):
        raise CollocInputError(f"probability must be a number in (0, 1), got {probability!r}")
    n = x.size
    variances = np.clip(np.linalg.eigvalsh(np.cov(np.vstack((x, y)))), 0.0, None)
    q = fisher_f.ppf(float(probability), 2, n - 2) * 2.0 * (n - 1) * (n + 1) / (n * (n - 2))
    return float(np.pi * q * np.sqrt(variances[0] * variances[1]))


def path_length(ap: ArrayLike, ml: ArrayLike) -> float:
    """Length of the COP path through the samples, ``sum |COP[i+1] - COP[i]|``, in m.

    Parameters
    ----------
    ap, ml : array_like, shape (N,)
        COP coordinates in metres, finite, with ``N >= 2``.

    Returns
    -------
    float
        Sum of the planar distances between successive samples (Prieto et al. 1996's total
        excursion).
    """
    return _path(*_pair(ap, ml, 2, "path_length"))


def mean_speed(ap: ArrayLike, ml: ArrayLike, dt: float) -> float:
    """Mean COP speed: the path length over the record's duration ``N * dt``, in m/s.

    The duration is that of the record, ``N`` samples of ``dt`` each (60 s for 6000 samples at
    100 Hz), as in ``COPvelo`` of Santos & Duarte (2016), not the ``(N - 1) * dt`` spanned by
    the ``N - 1`` steps; the two differ by the factor ``N / (N - 1)``.

    Parameters
    ----------
    ap, ml : array_like, shape (N,)
        COP coordinates in metres, finite, with ``N >= 2``.
    dt : float
        Sampling interval in seconds (> 0).

    Returns
    -------
    float
        Mean speed in m/s.
    """
    x, y = _pair(ap, ml, 2, "mean_speed")
    dt = _positive(dt, "dt")
    return _path(x, y) / (x.size * dt)


def mean_power_frequency(signal: ArrayLike, dt: float) -> float:
    """Mean frequency of the Welch power spectrum of one COP coordinate, in Hz.

    ``integral f P(f) df / integral P(f) df`` by the trapezoid rule over the one-sided Welch
    spectrum ``P`` (segments of ``ceil(N / 2)`` samples overlapping by half, periodic Hann
    window, each segment's mean removed), as ``psd.py`` of Santos & Duarte (2016).

    Parameters
    ----------
    signal : array_like, shape (N,)
        One COP coordinate in metres (any unit: the result does not depend on it), finite,
        with ``N >= 4``.
    dt : float
        Sampling interval in seconds (> 0).

    Returns
    -------
    float
        Mean power frequency in Hz, between 0 and the Nyquist frequency ``1 / (2 dt)``.

    Raises
    ------
    CollocInputError
        If the spectrum has no power (a constant signal).
    """
    x = _signal(signal, 4, "mean_power_frequency")
    dt = _positive(dt, "dt")
    freq, power = _welch(x, dt)
    if not _has_power(x, freq, power):
        raise CollocInputError("signal has no spectral power (it is constant): its mean frequency "
                               "is undefined")
    return _mean_of_spectrum(freq, power)


def mean_frequency(ap: ArrayLike, ml: ArrayLike, dt: float) -> float:
    """Mean frequency of the planar COP displacement, in Hz (``COPmfreq`` of Santos & Duarte
    2016).

    The mean power frequencies ``f_ap`` and ``f_ml`` of the two coordinates
    (:func:`mean_power_frequency`), weighted by each coordinate's spectral power
    ``W = sum_k P(f_k)`` (rectangle rule over the same Welch spectrum):
    ``(W_ap f_ap + W_ml f_ml) / (W_ap + W_ml)``.  A coordinate without power has weight 0.
    The published ``COPmfreq`` of the data set is reproduced by this combination to 5e-15
    (relative) on all 12 trials of its subject 1; its code is not public, and the trapezoid
    power (``psd.py``'s ``Ptotal``) as weight differs from the table by up to 0.55 %.

    Parameters
    ----------
    ap, ml : array_like, shape (N,)
        COP coordinates in metres, finite, with ``N >= 4``.
    dt : float
        Sampling interval in seconds (> 0).

    Returns
    -------
    float
        Mean frequency in Hz.

    Raises
    ------
    CollocInputError
        If neither coordinate has spectral power (a COP at rest).
    """
    x, y = _pair(ap, ml, 4, "mean_frequency")
    dt = _positive(dt, "dt")
    weighted = weights = 0.0
    for coordinate in (x, y):
        freq, power = _welch(coordinate, dt)
        if _has_power(coordinate, freq, power):
            weight = float(np.sum(power))
            weighted += weight * _mean_of_spectrum(freq, power)
            weights += weight
    if weights == 0.0:
        raise CollocInputError("ap and ml have no spectral power (the COP is at rest): the mean "
                               "frequency is undefined")
    return weighted / weights


def sway_metrics(ap: ArrayLike, ml: ArrayLike, dt: float) -> dict[str, float]:
    """The three COP measures of Santos & Duarte (2016) of one record, in SI units.

    Parameters
    ----------
    ap, ml : array_like, shape (N,)
        COP coordinates in metres, finite, with ``N >= 4``.
    dt : float
        Sampling interval in seconds (> 0).

    Returns
    -------
    dict
        ``ellipse_area`` (m², :func:`ellipse_area` at 95 %; the data set's ``COParea`` in
        cm²), ``mean_speed`` (m/s, :func:`mean_speed`; ``COPvelo`` in cm/s) and
        ``mean_frequency`` (Hz, :func:`mean_frequency`; ``COPmfreq``).
    """
    return {"ellipse_area": ellipse_area(ap, ml), "mean_speed": mean_speed(ap, ml, dt),
            "mean_frequency": mean_frequency(ap, ml, dt)}
