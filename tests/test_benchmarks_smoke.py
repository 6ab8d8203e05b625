"""Smoke test of benchmarks/pendulum_scaling.py (its --quick mode: 200 and 500 nodes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_pendulum_scaling_quick(tmp_path):
    out = tmp_path / "x.json"
    proc = subprocess.run(
        [sys.executable, "benchmarks/pendulum_scaling.py", "--quick", "--out", str(out)],
        check=False, cwd=ROOT, capture_output=True, text=True, timeout=300,
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
