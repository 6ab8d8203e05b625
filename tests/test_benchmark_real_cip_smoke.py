"""Smoke test of benchmarks/real_cip_study.py on one shipped real trial, 10 s halves (ML, PID)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_real_cip_study_quick(tmp_path):
    out = tmp_path / "real.json"
    proc = subprocess.run([sys.executable, "benchmarks/real_cip_study.py", "--quick", "--trials", "1",
                           "--half", "10", "--models", "PID", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["summary"]["trials"] == 1
    row = doc["trials"][0]
    assert row["trial"] == "BDS00001.txt.gz" and "status" in row
    assert row["observed"]["rms_m"] > 0 and "PID" in row["models"]
    if row.get("success"):
        assert {"KP", "KI", "KD", "A", "B", "sigma"} <= set(row["parameters"])
        assert row["predicted"]["rms_m"] > 0 and row["chosen_by_heldout_nll"] == "PID"
        assert doc["summary"]["conditions"]["Open/Firm"]["trials"] == 1


def test_real_cip_study_refuses_an_unknown_model(tmp_path):
    proc = subprocess.run([sys.executable, "benchmarks/real_cip_study.py", "--quick", "--models", "PID,LQR",
                           "--out", str(tmp_path / "x.json")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 2 and "--models: unknown LQR" in proc.stderr and "Traceback" not in proc.stderr
