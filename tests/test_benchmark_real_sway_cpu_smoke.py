"""Smoke test of benchmarks/real_sway_cpu.py: the default command on one shipped trial's first 40 s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # one default command (five fits of 20 and 40 s): 50 s of CPU, 2 min with its C compiles
def test_real_sway_cpu_quick(tmp_path):
    out = tmp_path / "cpu.json"
    proc = subprocess.run([sys.executable, "benchmarks/real_sway_cpu.py", "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["window"] == "0:40" and doc["jobs"] == 1 and doc["summary"]["trials"] == 1
    run = doc["runs"][0]
    assert run["trial"] == "BDS00001" and run["exit_code"] in (0, 1) and not doc["summary"]["failed_commands"]
    # the comparison of the four controllers, each fitted on the first half: the CPU is shared by them
    assert run["models"] == 4 and set(run["candidates_cpu_s"]) == {"PID", "PD", "PD-delay", "PID-delay"}
    assert run["cpu_s"] > 0 and run["cpu_per_model_s"] == pytest.approx(run["cpu_s"] / 4, rel=1e-12)
    # the comparison's own CPU (the candidates' fits and scores) is part of the process's
    assert 0 < run["comparison_cpu_s"] < run["cpu_s"]
    assert run["fitted"] in run["candidates_cpu_s"]
    assert doc["summary"]["at_or_under_target"] == int(run["cpu_per_model_s"] <= 10.0)
    assert "machine" in doc and "versions" in doc and "BDS00001" in proc.stdout
