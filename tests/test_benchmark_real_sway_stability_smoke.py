"""Smoke test of benchmarks/real_sway_stability.py on one shipped real trial (three fits)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # 22 s at load 2.5 (2026-11-29): kept out of the default suite's 10 minutes
def test_real_sway_stability_quick(tmp_path):
    out = tmp_path / "stability.json"
    proc = subprocess.run([sys.executable, "benchmarks/real_sway_stability.py", "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["summary"]["trials"] == 1 and doc["noise"] == "sway" and doc["shift_s"] == 2.5
    run = doc["runs"][0]
    assert run["trial"] == "BDS00001" and len(run["success"]) == len(run["cpu_s"]) == 3
    for k, v in run["parameters"].items():  # the ratios are the changes over the reference's SE
        assert v["se"] > 0, k
        assert abs(v["shift_in_se"] - abs(v["shifted"] - v["ref"]) / v["se"]) < 1e-12, k
    assert {"KP", "KD", "q_d", "f_c"} <= set(run["parameters"])
    assert "machine" in doc and "versions" in doc
