"""Smoke test of benchmarks/ship_stance.py (its --quick mode: a clean 2 s record; evaluated
by CasADi's virtual machine, so that a cold cache of compiled models costs no compile time;
tests/unit/test_compiled.py covers the compiled path)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # 20 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_quick_mode_writes_a_report(tmp_path):
    out = tmp_path / "ship_stance.json"
    proc = subprocess.run([sys.executable, "benchmarks/ship_stance.py", "--quick", "--interpreted", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["success"] and report["quick"] and report["duration_s"] == 2.0
    assert set(report["gain_error_pct"]) == {f"{k}_{j}_{a}" for j in ("ankle", "knee", "hip", "neck")
                                             for a in "xy" for k in ("kp", "kd")}
    assert report["max_abs_gain_error_pct"] < 0.5      # clean record: the gains come back
    assert report["timings"]["total_s"] > 0
