"""Smoke test of benchmarks/heel_off_complementarity.py (slow lane: one complementarity fit of a
1.5 s record takes about a minute)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quick_run_writes_one_row_per_fit(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "heel_off_complementarity.py"), "--quick",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    (row,) = doc["rows"]
    assert row["method"] == "complementarity" and row["record"] == "quick"
    assert row["events_true"] == 2 and set(row["parameters"]) == {"kp", "kd"}
    assert "versions" in doc
