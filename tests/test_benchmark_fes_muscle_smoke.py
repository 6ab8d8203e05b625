"""Smoke test of benchmarks/fes_muscle.py --quick."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # 18 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_fes_muscle_benchmark_quick(tmp_path):  # ~7 s (one 0.3 s train, both formulations)
    out = tmp_path / "fes.json"
    proc = subprocess.run([sys.executable, "benchmarks/fes_muscle.py", "--quick", "--out", str(out)],
                          check=False, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    row = doc["simulation"][0]
    assert row["event_driven_vs_shipped_max_N"] < 1e-6
    assert row["smoothed_max_error_N"] > 0
    assert doc["identification"]["success"]
    assert max(abs(v) for v in doc["identification"]["relative_errors"].values()) < 1e-3
    smooth = doc["smoothed_identification"]  # the no-events baseline, side by side
    assert smooth["formulation"] == "smoothed" and smooth["time_s"] > 0
    assert smooth["max_abs_relative_error"] > doc["identification"]["max_abs_relative_error"]
