"""Smoke test of benchmarks/covariance.py (one small problem, one repeat)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_covariance_benchmark_runs(tmp_path):
    out = tmp_path / "c.json"
    proc = subprocess.run(
        [sys.executable, "benchmarks/covariance.py", "--problems", "pendulum", "semibatch", "--repeat", "1",
         "--out", str(out)],
        check=False, cwd=ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert [r["problem"] for r in rows] == ["pendulum", "semibatch"]
    for r in rows:
        assert r["standard_errors_finite"] and r["solver_success"], r
        assert r["solve_s"] > 0 and r["covariance_s"] > 0
        assert r["ratio"] == r["covariance_s"] / r["solve_s"]
    assert "cov/solve" in proc.stdout
