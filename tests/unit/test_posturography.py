"""colloc.signals.posturography: closed-form cases, bad input, and the published per-trial COP
measures of the BDS data set (Santos & Duarte 2016) reproduced from its shipped raw files."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from colloc import CollocInputError, Trial
from colloc.signals import (ellipse_area, mean_frequency, mean_power_frequency, mean_speed,
                            path_length, sway_metrics)

BDS = Path(__file__).resolve().parents[2] / "data" / "bds"
DT = 0.01  # 100 Hz


def f_quantile_2(p, d2):
    """Quantile of F(2, d2) in closed form: the cdf is 1 - (1 + 2 x / d2) ** (-d2 / 2)."""
    return d2 / 2.0 * math.expm1(-2.0 / d2 * math.log1p(-p))


def prediction_factor(n, p=0.95):
    """q of the prediction ellipse of n samples: its area is pi * q * sqrt(det C)."""
    return f_quantile_2(p, n - 2) * 2.0 * (n - 1) * (n + 1) / (n * (n - 2))


def whole_periods(f0, n=2000):
    """Sample times of a record of n samples at 100 Hz and its phase 2 pi f0 t."""
    t = np.arange(n) * DT
    return t, 2.0 * np.pi * f0 * t


# -- closed-form cases ------------------------------------------------------------------------
def test_circle_area_path_speed_and_frequency():
    # 20 s at 100 Hz, 10 turns of radius R at 0.5 Hz: sums over whole turns are exact, so the
    # sample covariance is R**2 / 2 * N / (N - 1) on both axes and 0 off the diagonal; the path is
    # N - 1 chords 2 R sin(pi f0 dt); each Welch segment (1000 samples) holds 5 whole turns, the
    # Hann window puts the power on 3 bins symmetric about f0, so the mean frequency is f0
    radius, f0, n = 0.012, 0.5, 2000
    _, phase = whole_periods(f0, n)
    ap, ml = 0.05 + radius * np.cos(phase), -0.02 + radius * np.sin(phase)
    variance = radius ** 2 / 2.0 * n / (n - 1)
    assert ellipse_area(ap, ml) == pytest.approx(np.pi * prediction_factor(n) * variance, rel=1e-12)
    chord = 2.0 * radius * math.sin(math.pi * f0 * DT)
    assert path_length(ap, ml) == pytest.approx((n - 1) * chord, rel=1e-12)
    assert mean_speed(ap, ml, DT) == pytest.approx((n - 1) * chord / (n * DT), rel=1e-12)
    assert mean_power_frequency(ap, DT) == pytest.approx(f0, rel=1e-12)
    assert mean_frequency(ap, ml, DT) == pytest.approx(f0, rel=1e-12)
    # in centimetres: area x 1e4, speed x 100, frequency unchanged
    cm = sway_metrics(100 * ap, 100 * ml, DT)
    si = sway_metrics(ap, ml, DT)
    assert cm["ellipse_area"] == pytest.approx(1e4 * si["ellipse_area"], rel=1e-12)
    assert cm["mean_speed"] == pytest.approx(100 * si["mean_speed"], rel=1e-12)
    assert cm["mean_frequency"] == pytest.approx(si["mean_frequency"], rel=1e-12)


@pytest.mark.parametrize("angle", [0.0, 0.3, 1.2, -2.0])
def test_rotated_ellipse_area_and_frequency(angle):
    # semi-axes a, b traced at f0 and turned by `angle`: covariance eigenvalues a**2 / 2 and
    # b**2 / 2 (times N / (N - 1)) whatever the angle
    a, b, f0, n = 0.02, 0.007, 0.8, 2500
    _, phase = whole_periods(f0, n)
    u, v = a * np.cos(phase), b * np.sin(phase)
    ap = math.cos(angle) * u - math.sin(angle) * v
    ml = math.sin(angle) * u + math.cos(angle) * v
    expected = np.pi * prediction_factor(n) * a * b / 2.0 * n / (n - 1)
    assert ellipse_area(ap, ml) == pytest.approx(expected, rel=1e-12)
    assert ellipse_area(ap, ml, probability=0.5) == pytest.approx(
        expected * f_quantile_2(0.5, n - 2) / f_quantile_2(0.95, n - 2), rel=1e-12)
    assert mean_frequency(ap, ml, DT) == pytest.approx(f0, rel=1e-12)


def test_mean_frequency_weights_the_directions_by_their_power():
    # AP at f1, ML at f2, both on Welch bins: each spectrum is 3 bins of relative power 1, 1/4,
    # 1/4 about its frequency, so each coordinate's power is proportional to its amplitude squared
    f1, f2, a1, a2 = 0.5, 1.2, 0.01, 0.004
    _, p1 = whole_periods(f1)
    _, p2 = whole_periods(f2)
    ap, ml = a1 * np.sin(p1), a2 * np.sin(p2)
    assert mean_power_frequency(ml, DT) == pytest.approx(f2, rel=1e-12)
    expected = (f1 * a1 ** 2 + f2 * a2 ** 2) / (a1 ** 2 + a2 ** 2)
    assert mean_frequency(ap, ml, DT) == pytest.approx(expected, rel=1e-12)
    # a coordinate at rest has no weight
    assert mean_frequency(ap, np.full_like(ap, 0.3), DT) == pytest.approx(f1, rel=1e-12)


def test_uniform_motion_along_a_line():
    # COP moving at v along AP: the path is v (N - 1) dt over a record of N dt; no area
    v, n = 0.004, 1000
    ap = -0.03 + v * np.arange(n) * DT
    ml = np.full(n, 0.01)
    assert mean_speed(ap, ml, DT) == pytest.approx(v * (n - 1) / n, rel=1e-12)
    assert ellipse_area(ap, ml) == pytest.approx(0.0, abs=1e-15)


# -- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize("call, message", [
    (lambda: ellipse_area(np.zeros(10), np.zeros(9)), "ap and ml must have the same number"),
    (lambda: mean_speed(np.zeros(10), [0.0, 1.0, np.nan] + [0.0] * 7, DT), "ml contains NaN at index 2"),
    (lambda: path_length(np.zeros((5, 2)), np.zeros(5)), "ap must be 1-D"),
    (lambda: ellipse_area([0.0, 1.0], [1.0, 0.0]), "ap must have at least 3 samples"),
    (lambda: ellipse_area(np.arange(5.0), np.ones(5), probability=1.0), "probability must be"),
    (lambda: ellipse_area(np.arange(5.0), np.ones(5), probability=True), "probability must be"),
    (lambda: mean_speed(np.arange(5.0), np.ones(5), 0.0), "dt must be a positive"),
    (lambda: mean_frequency(np.arange(5.0), np.ones(5), -1.0), "dt must be a positive"),
    (lambda: mean_frequency(np.ones(50), np.ones(50), DT), "no spectral power"),
    (lambda: mean_power_frequency(np.full(50, 2.0), DT), "no spectral power"),
])
def test_bad_input_is_refused_naming_the_argument(call, message):
    with pytest.raises(CollocInputError, match=message):
        call()


# -- the published table ----------------------------------------------------------------------
def table_units(metrics):
    """Our SI measures in the units of BDSinfoCOP.txt: cm², cm/s, Hz."""
    return {"COParea": 1e4 * metrics["ellipse_area"], "COPvelo": 100.0 * metrics["mean_speed"],
            "COPmfreq": metrics["mean_frequency"]}


def test_published_cop_measures_of_the_shipped_trials_are_reproduced():
    """All 12 trials of subject 1, read as the lab wrote them (cm -> m from the header), whole
    60 s record, no filtering: COParea, COPvelo and COPmfreq of BDSinfoCOP.txt.

    The table prints float64 values (16-17 significant digits).  COPvelo and COPmfreq agree to
    5e-15 relative (a sum of 6000 steps and FFTs rounded in another order by another NumPy and
    SciPy); the tolerance 1e-13 leaves room for other BLAS/FFT builds and is still 10 digits
    beyond any change of definition (dividing by (N - 1) dt instead of N dt moves COPvelo by
    1.7e-4, the trapezoid power as weight moves COPmfreq by up to 5.5e-3).  Every published
    COParea is 7.50e-13 (relative) smaller than ours, the same factor for all 12 trials (a data-independent
    factor): of the formula's factors only the F(2, 5998) quantile is computed numerically, so
    this is the quantile the authors' SciPy returned.  Ours is exact (the closed form for 2
    numerator degrees of freedom, checked here), so the test pins that constant factor instead
    of loosening the tolerance."""
    with open(BDS / "BDSinfoCOP_subset.txt", newline="", encoding="utf-8") as handle:
        table = {row["Trial"]: row for row in csv.DictReader(handle, delimiter="\t")}
    assert sorted(table) == [f"BDS{i:05d}" for i in range(1, 13)]
    area_factor = []
    for name, row in table.items():
        trial = Trial.from_csv(BDS / f"{name}.txt.gz", columns={"ap": "COPx", "ml": "COPy"})
        assert trial.num_samples == 6000 and trial.is_uniform()
        dt = trial.duration / (trial.num_samples - 1)
        assert dt == pytest.approx(0.01, rel=1e-12)
        ours = table_units(sway_metrics(trial["ap"], trial["ml"], dt))
        for column in ("COPvelo", "COPmfreq"):
            assert ours[column] == pytest.approx(float(row[column]), rel=1e-13, abs=0), (name, column)
        area_factor.append(float(row["COParea"]) / ours["COParea"] - 1.0)
    assert max(area_factor) - min(area_factor) < 1e-14, area_factor
    assert -7.6e-13 < np.mean(area_factor) < -7.4e-13, area_factor
    from scipy.stats import f as fisher_f

    assert fisher_f.ppf(0.95, 2, 5998) == pytest.approx(f_quantile_2(0.95, 5998), rel=1e-15)
