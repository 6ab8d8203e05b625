"""``colloc.signals.resolution``/``rounding_sd`` and the CIP's COP noise floor.

The rounded records are written here as text with a fixed number of decimals (as a force
plate's export is) and read back; the expected quantum is the printed one, and the rounding
noise's SD is measured on the written record against the unrounded signal."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest

import colloc as co
from colloc.signals import resolution, rounding_sd

DATA = Path(__file__).resolve().parents[2] / "data" / "bds"


def _sway(n: int, seed: int) -> np.ndarray:
    """A COP-like signal in cm: a random walk smoothed over 0.2 s, a few cm wide."""
    rng = np.random.default_rng(seed)
    walk = np.cumsum(rng.normal(0.0, 0.02, n + 20))
    return np.convolve(walk, np.ones(20) / 20, mode="valid")[:n] - 8.0


def _written(values: np.ndarray, fmt: str) -> np.ndarray:
    text = io.StringIO()
    np.savetxt(text, values, fmt=fmt)
    return np.loadtxt(io.StringIO(text.getvalue()))


def test_a_record_printed_with_six_decimals_of_cm_has_a_quantum_of_1e8_m():
    cm = _sway(6000, seed=1)
    metres = _written(cm, "%.6f") * 0.01  # a unit conversion after reading: float error on every value
    assert resolution(metres) == pytest.approx(1e-8, rel=1e-9)
    # the rounding noise's SD, measured against the unrounded signal, is δ/√12
    measured = float(np.std(metres - cm * 0.01))
    assert rounding_sd(metres) == pytest.approx(measured, rel=0.05)
    assert rounding_sd(metres) == pytest.approx(1e-8 / math.sqrt(12), rel=1e-9)


def test_sparse_values_whose_smallest_gap_spans_several_quanta():
    rng = np.random.default_rng(3)
    quanta = np.sort(rng.choice(100_000, size=40, replace=False))  # gaps of many quanta, none of one
    values = 0.25 * quanta + 3.0
    assert np.diff(np.unique(values)).min() > 0.25
    assert resolution(values) == pytest.approx(0.25, rel=1e-12)


def test_unrounded_or_degenerate_records_have_no_resolution():
    assert math.isnan(resolution(_sway(3000, seed=2)))
    assert math.isnan(rounding_sd(np.ones(100)))
    assert math.isnan(resolution([1.0, np.nan, 2.0]))
    with pytest.raises(co.CollocInputError, match="values is empty"):
        resolution([])


def test_the_cip_sway_noise_starts_at_the_records_floor():
    from colloc_problems import cip

    trial = cip.load_trial(str(DATA / "BDS00001.txt.gz"), columns={"cop": "COPx"})
    floor, source = cip.noise_floor(trial["cop"], 0.01)
    assert floor == pytest.approx(1e-8 / math.sqrt(12), rel=1e-6) and "resolution" in source
    # a record at full precision: the spectral level of its top frequencies, here white noise of
    # 1 µm on a slow sway whose spectrum is far below it there
    rng = np.random.default_rng(4)
    t = 0.01 * np.arange(6000)
    y = 0.005 * np.sin(2 * np.pi * 0.2 * t) + rng.normal(0.0, 1e-6, t.size)
    floor, source = cip.noise_floor(y, 0.01)
    assert floor == pytest.approx(1e-6, rel=0.1) and "unrounded" in source
    problem = cip.stochastic_problem(trial.window(0.0, 20.0), body=cip.body(1.575, 54.2), noise="sway-lp")
    assert problem.start["sigma"] == pytest.approx(1e-8 / math.sqrt(12), rel=1e-6)
    assert problem.bounds["sigma"][0] == pytest.approx(cip.SIGMA_BELOW_FLOOR * problem.start["sigma"])


def test_the_functions_are_not_shadowed_by_their_modules():
    # a submodule named like a function it holds replaces that function on the package once
    # it is imported (colloc.signals.resolution was the module after `import colloc.signals.resolution`)
    import importlib

    import colloc.signals as signals

    for name in signals.__all__:
        importlib.import_module(f"colloc.signals.{signals._LAZY[name]}")
        assert callable(getattr(signals, name)), name
