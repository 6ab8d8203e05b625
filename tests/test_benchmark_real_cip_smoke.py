"""Smoke test of benchmarks/real_cip_study.py on one shipped real trial, 10 s halves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_real_cip_study_quick(tmp_path):
    out = tmp_path / "real.json"
    proc = subprocess.run([sys.executable, "benchmarks/real_cip_study.py", "--quick", "--trials", "1",
                           "--half", "10", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["summary"]["trials"] == 1
    row = doc["trials"][0]
    assert row["trial"] == "BDS00001.txt.gz" and "status" in row
    if row.get("success"):
        assert {"KP", "KI", "KD", "cop_offset"} <= set(row["parameters"])
        assert row["observed"]["rms_m"] > 0 and row["predicted"]["rms_m"] > 0
