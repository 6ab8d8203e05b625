"""Smoke test of benchmarks/duffing_sysid.py on a short record: it runs both fits and its report
holds what the README quotes (parameters against the truth, the user code's length, the held
input, the timings' fields); timings themselves are not judged here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRUE = {"M": 5.625e-6, "c": 2.3e-4, "k": 1.0, "k_nl": 4.69}  # examples/python/sysid.py of CasADi


def test_duffing_sysid_small(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "duffing_sysid.py"), "--samples", "400",
                           "--out", str(tmp_path)], check=False, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "duffing_sysid.json").read_text())
    assert doc["samples"] == 400 and doc["noise"] == "none" and doc["truth"] == TRUE
    assert 5 <= doc["user_code_lines"] <= 20
    fit = doc["colloc"]
    assert fit["success"] and fit["input_interpolation"] == {"sysid": {"u": "hold"}}
    for name, truth in TRUE.items():
        assert abs(fit["parameters"][name] / truth - 1) < 1e-3, name
        assert fit["relative_error"][name] == abs(fit["parameters"][name] / truth - 1)
    assert fit["simulation"]["sysid"]["status"] == "ok" and fit["simulation"]["sysid"]["nrmse"]["y"] < 1e-3
    assert fit["whole_over_build_solve"] == fit["solve_wall_s"] / fit["build_plus_solve_s"]
    ms = doc["multiple_shooting"]
    assert ms["success"]
    for name, truth in TRUE.items():
        assert abs(ms["parameters"][name] / truth - 1) < 1e-3, name
    assert doc["colloc_over_multiple_shooting"] == fit["solve_wall_s"] / ms["total_s"]
    assert "loadavg" in doc["machine"]
    assert "[PASS] parameters within 0.1 %" in proc.stdout and "colloc / multiple shooting" in proc.stdout
