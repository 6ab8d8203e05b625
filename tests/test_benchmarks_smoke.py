"""Smoke test of benchmarks/pendulum_scaling.py (its --quick mode: 200 and 500 nodes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_pendulum_scaling_quick(tmp_path):
    out = tmp_path / "x.json"
    proc = subprocess.run(
        [sys.executable, "benchmarks/pendulum_scaling.py", "--quick", "--out", str(out)],
        check=False, cwd=ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = report["rows"]
    assert [r["nodes"] for r in rows] == [200, 500]
    for r in rows:
        assert r["success"], r
        assert r["solve_s"] > 0
        assert r["p_rel_error"] < 1e-2
        assert r["peak_rss_mb"] > 0
    assert report["exponent"] is not None
    assert {"platform", "cpu_count"} <= set(report["machine"])
    assert "casadi" in report["versions"]


def test_two_link_bias_small(tmp_path):
    out = tmp_path / "bias.json"
    proc = subprocess.run(
        [sys.executable, "benchmarks/two_link_bias.py", "--realizations", "2", "--duration", "10",
         "--out", str(out)],
        check=False, cwd=ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    summary = report["summary"]
    assert set(summary) == {"exact", "eiv"}
    assert len(report["raw"]["eiv"]["estimates"]) == 2
    assert summary["eiv"]["_all"]["mean_abs_error_pct"] < summary["exact"]["_all"]["mean_abs_error_pct"]
    assert "coverage 95" not in proc.stdout and "cover95" in proc.stdout


@pytest.mark.slow  # 18 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_two_link_scaling_small(tmp_path):
    out = tmp_path / "scaling.json"
    proc = subprocess.run(
        [sys.executable, "benchmarks/two_link_scaling.py", "--nodes", "501", "1001", "--out", str(out)],
        check=False, cwd=ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [r["nodes"] for r in report["rows"]] == [501, 1001]
    assert all(r["success"] and r["peak_rss_mb"] > 0 for r in report["rows"])
    assert report["exponent"] is not None
