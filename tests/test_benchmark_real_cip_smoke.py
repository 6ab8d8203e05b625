"""Smoke test of benchmarks/real_cip_study.py on one shipped real trial, 10 s halves (ML, PID)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_real_cip_study_quick(tmp_path):
    out = tmp_path / "real.json"
    proc = subprocess.run([sys.executable, "benchmarks/real_cip_study.py", "--quick", "--trials", "1",
                           "--half", "10", "--models", "PID", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["summary"]["trials"] == 1
    row = doc["trials"][0]
    assert row["trial"] == "BDS00001.txt.gz" and "status" in row
    assert row["observed"]["rms_m"] > 0 and "PID" in row["models"]
    if row.get("success"):
        assert {"KP", "KI", "KD", "A", "B", "sigma"} <= set(row["parameters"])
        assert row["predicted"]["rms_m"] > 0 and row["chosen_by_heldout_nll"] == "PID"
        assert doc["summary"]["conditions"]["Open/Firm"]["trials"] == 1


def test_real_cip_study_refuses_an_unknown_model(tmp_path):
    proc = subprocess.run([sys.executable, "benchmarks/real_cip_study.py", "--quick", "--models", "PID,LQR",
                           "--out", str(tmp_path / "x.json")], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "--models: unknown LQR" in proc.stderr and "Traceback" not in proc.stderr


def test_sampling_ceiling_matches_the_normal_probability_it_estimates():
    """Halves drawn as two windows of a known log-normal fluctuation: the ceiling recovers
    the window's spread and the hit probability, computed here from the normal CDF."""
    from scipy.stats import norm

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from real_cip_study import sampling_ceiling
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    rng = np.random.default_rng(1)
    sd = {"rms_m": 0.2, "speed_m_s": 0.1}  # independent fluctuations of one window's log statistic
    rows = []
    for _ in range(4000):
        truth = {"rms_m": rng.uniform(2e-3, 8e-3), "speed_m_s": rng.uniform(5e-3, 2e-2)}  # differs per trial
        half = [{k: v * np.exp(sd[k] * rng.standard_normal()) for k, v in truth.items()} for _ in range(2)]
        rows.append({"first_half": half[0], "observed": half[1]})
    got = sampling_ceiling(rows, draws=100_000)
    expected = {k: norm.cdf(np.log(1 / 0.75) / s) - norm.cdf(np.log(1 / 1.25) / s) for k, s in sd.items()}
    for k in sd:
        assert got["window_log_sd"][k] == pytest.approx(sd[k], rel=0.05)
    assert got["hit_rate_rms"] == pytest.approx(expected["rms_m"], abs=0.01)
    assert got["hit_rate_speed"] == pytest.approx(expected["speed_m_s"], abs=0.01)
    assert got["hit_rate_both"] == pytest.approx(expected["rms_m"] * expected["speed_m_s"], abs=0.015)
    assert got["hit_rate_both_5_95"][0] < got["hit_rate_both"] < got["hit_rate_both_5_95"][1]
    assert abs(got["correlation"]) < 0.1
