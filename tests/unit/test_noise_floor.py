"""colloc.signals.noise.white_noise_floor: a record's white-noise floor, from its rounding quantum
or from the level of the top of its spectrum.  The records are made here with a known noise: a
sum of slow sines (no power near Nyquist) plus seeded white noise at 100 Hz, optionally rounded
to a quantum; the expected floor is the generator's σ or δ/√12, never the function's output."""

from __future__ import annotations

import math

import numpy as np
import pytest

import colloc as co
from colloc.signals.noise import NoiseFloor, white_noise_floor

DT = 0.01  # 100 Hz


def record(sigma: float, seconds: float = 60.0, seed: int = 0) -> np.ndarray:
    t = DT * np.arange(int(round(seconds / DT)))
    sway = 0.004 * np.sin(2 * np.pi * 0.15 * t + 0.3) + 0.002 * np.sin(2 * np.pi * 0.6 * t)
    return sway + np.random.default_rng(seed).normal(0.0, sigma, t.size)


@pytest.mark.parametrize("sigma", [1e-6, 3e-5])
def test_an_unrounded_record_gives_its_white_noise_sd(sigma):
    floor = white_noise_floor(record(sigma), DT)
    assert floor.source == "spectrum" and floor.band == 0.4
    assert floor.sd == pytest.approx(sigma, rel=0.05)


def test_a_rounded_record_gives_the_rounding_noise_of_its_quantum():
    delta = 1e-6  # far above the white noise: the record is a rounded slow sway
    y = np.round(record(1e-8) / delta) * delta
    floor = white_noise_floor(y, DT)
    assert floor.source == "rounding"
    assert floor.sd == pytest.approx(delta / math.sqrt(12), rel=1e-6)


def test_samples_not_measured_are_left_out():
    y = record(2e-5, seed=3)
    gappy = y.copy()
    gappy[100:160] = np.nan
    gappy[-1] = np.inf
    kept = np.concatenate([y[:100], y[160:-1]])
    assert white_noise_floor(gappy, DT) == white_noise_floor(kept, DT)


def test_the_band_is_where_the_level_is_read():
    """White noise through a first-order low-pass at 5 Hz: over the top 40 % of 0-50 Hz its level is
    far below the unfiltered σ, and a wider band (with the flat low frequencies) reads higher."""
    white = np.random.default_rng(5).normal(0.0, 1e-4, 6000)
    a = math.exp(-2 * math.pi * 5.0 * DT)
    y = np.zeros_like(white)
    for k in range(1, y.size):
        y[k] = a * y[k - 1] + (1 - a) * white[k]
    top = white_noise_floor(y, DT)
    wide = white_noise_floor(y, DT, band=1.0)
    assert top.sd < 0.25 * 1e-4 and wide.sd > top.sd


@pytest.mark.parametrize("args, message", [
    ((np.zeros((10, 2)), DT), "1-D real array"),
    ((np.array(["a"] * 20), DT), "1-D real array"),
    ((np.ones(20), 0.0), "dt must be a number in"),
    ((np.ones(20), DT, 1.5), "band must be a number in"),
    ((np.ones(20), True), "dt must be a number in"),
    ((np.r_[np.ones(10), np.full(20, np.nan)], DT), "10 finite samples"),
])
def test_bad_input_is_named(args, message):
    with pytest.raises(co.CollocInputError, match=message):
        white_noise_floor(*args)


def test_the_result_is_a_value():
    floor = white_noise_floor(record(1e-5), DT)
    assert isinstance(floor, NoiseFloor) and floor == white_noise_floor(record(1e-5), DT)
