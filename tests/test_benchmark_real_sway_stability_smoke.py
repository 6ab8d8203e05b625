"""Smoke test of benchmarks/real_sway_stability.py on one shipped real trial (three fits)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import chi2

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
    for k, v in run["parameters"].items():  # on the report's interval scale: log where SE < value > 0
        expected = (abs(math.log(v["shifted"] / v["ref"])) * v["ref"] / v["se"]
                    if v["ref"] > 0 and v["shifted"] > 0 and v["se"] < v["ref"] else v["shift_in_se"])
        assert v["shift_in_se_report_scale"] == pytest.approx(expected, rel=1e-12), k
    # each window's NLL at the other's estimate is not below its own optimum (beyond the NLL's noise)
    assert len(run["cross_dnll"]) == 2 and all(d > -0.01 for d in run["cross_dnll"])
    k = len(run["parameters"])
    assert doc["summary"]["cross_dnll_reference_95"]["BDS00001"] == pytest.approx(2.5 / 30 * chi2.ppf(0.95, k))
    assert "machine" in doc and "versions" in doc
