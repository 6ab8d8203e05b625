"""Smoke test of benchmarks/starts.py (its --quick mode: pendulum, 2 starts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # 58 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_starts_benchmark_quick(tmp_path):
    out = tmp_path / "starts.json"
    proc = subprocess.run([sys.executable, "benchmarks/starts.py", "--quick", "--out", str(out)],
                          check=False, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    a, b = report["estimate_vs_solve"], report["starts"]
    assert a["runs"][0]["source"] == "equation-error"
    assert 0 < a["estimate_s"] and 0 < a["solve_s"] and a["ratio"] == a["estimate_s"] / a["solve_s"]
    assert b["starts"] == 2 and b["converged"] == 2 and b["local_minima"] >= 1
    assert b["ratio"] == b["starts_s"] / b["one_start_s"]
    assert "(a) pendulum" in proc.stdout and "(b) pendulum" in proc.stdout
    assert "cpu_count" in report["machine"] and "casadi" in report["versions"]
