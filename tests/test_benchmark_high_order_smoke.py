"""Smoke test of benchmarks/high_order.py --quick: it runs, writes its JSON and figure, and the
orders it measures are the declared ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # 28 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_high_order_quick(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "high_order.py"), "--quick", "--out",
                           str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "high_order.json").read_text())
    assert (tmp_path / "high_order.png").stat().st_size > 10_000
    for name, row in doc["order"].items():
        assert abs(row["observed_order"] - row["declared_order"]) < 0.4, (name, row)
    assert doc["accuracy_100Hz"]["radau2"]["eiv"] < 1e-3 < doc["accuracy_100Hz"]["midpoint"]["eiv"]
    assert set(doc["cost"]) == {"midpoint", "trapezoidal", "hermite-simpson", "radau2", "radau3"}
    assert doc["cost"]["midpoint"]["total_ratio"] == 1.0
    assert "radau2" in proc.stdout and "versions" in doc
