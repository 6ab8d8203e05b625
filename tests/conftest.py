"""Shared fixtures: seeded data, a headless matplotlib, strict numerics."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from colloc_problems import pendulum  # noqa: E402


@pytest.fixture(autouse=True)
def _strict_numerics():
    old = np.seterr(divide="raise", over="raise", invalid="raise")
    yield
    np.seterr(**old)


@pytest.fixture(scope="session")
def clean_pendulum_trial():
    """4 s of noise-free pendulum data at 100 Hz (p = 10)."""
    return pendulum.simulate_trial(duration=4.0, noise_std=0.0, name="clean.csv")


@pytest.fixture(scope="session")
def noisy_pendulum_trial():
    """10 s of pendulum data at 100 Hz with σ = 0.05 rad (seed 1)."""
    return pendulum.simulate_trial(noise_std=0.05, seed=1, name="noisy.csv")
