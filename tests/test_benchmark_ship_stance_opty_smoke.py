"""Smoke test of benchmarks/ship_stance_vs_opty.py: its --quick mode (a clean 1 s record) with colloc
alone (opty is an optional peer, and its build of the 4-link equations takes far longer than a
test may), interpreted so that a cold cache of compiled models costs no compile time; and the
opty equations' layout when opty is installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # 26 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_quick_mode_times_colloc_with_both_hessians(tmp_path):
    out = tmp_path / "vs_opty.json"
    proc = subprocess.run([sys.executable, "benchmarks/ship_stance_vs_opty.py", "--quick", "--no-opty",
                           "--interpreted", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = report["rows"]
    assert [r["tool"] for r in rows] == ["colloc (exact Hessian)", "colloc (gauss-newton Hessian)"]
    for row in rows:
        assert row["success"] and row["duration_s"] == 1.0
        assert row["build_s"] > 0 and row["solve_s"] > 0
        assert row["max_abs_gain_error_pct"] < 0.5, row    # clean record: the gains come back
    assert report["machine"]["loadavg"]


@pytest.mark.slow
def test_opty_equations_are_the_contract_model():
    """The KanesMethod equations handed to opty: 24 rows, the 24 states, 12 known ship
    trajectories, 16 gains, nothing else free."""
    pytest.importorskip("opty")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import ship_stance_vs_opty as bench

    eom, states, known, gains = bench.opty_equations()
    assert eom.shape == (24, 1) and len(states) == 24 and len(known) == 12 and len(gains) == 16
