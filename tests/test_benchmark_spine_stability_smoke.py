"""Smoke test of benchmarks/spine_stability.py --quick (one start of the spine's activation
optimisation: the timings the test suite no longer asserts, reported against their targets)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # 29 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_spine_stability_benchmark_reports_the_timings(tmp_path):  # ~12 s (the model's build)
    out = tmp_path / "spine.json"
    proc = subprocess.run([sys.executable, "benchmarks/spine_stability.py", "--quick", "--out", str(out)],
                          check=False, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["case"]["starts"] == 1
    assert doc["targets_s"] == {"optimization_s": 30.0, "total_s": 60.0, "delay_margin_s": 2.0}
    (solve,) = doc["solves"]
    assert solve["stable"] is True and solve["delay_margin"] > 0
    assert set(solve["targets"]) == set(doc["targets_s"]) and set(solve["targets"].values()) <= {"PASS", "FAIL"}
    t = solve["timings"]
    assert {"build_s", "optimization_s", "delay_margin_s", "total_s"} <= set(t)
    assert t["total_s"] >= t["build_s"] + t["optimization_s"] + t["delay_margin_s"]
    assert "optimization PASS" in proc.stdout or "optimization FAIL" in proc.stdout
