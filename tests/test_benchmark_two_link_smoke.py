"""Smoke test of benchmarks/two_link_vs_opty.py (its --quick mode: a 5 s record).

CI does not install opty, so the default test hides it (a stub package on PYTHONPATH whose
import fails) and checks the colloc-only path the same way on every machine. The slow test
runs the script as it is: with opty when it is importable, colloc alone otherwise.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "benchmarks/two_link_vs_opty.py"
GAINS = [f"k_{i}{j}" for i in range(2) for j in range(4)]


def _run(tmp_path, env=None):
    out = tmp_path / "two_link_vs_opty.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--quick", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads(out.read_text(encoding="utf-8"))


def _check_colloc_rows(report):
    rows = {r["tool"]: r for r in report["rows"]}
    assert {"colloc-exact", "colloc-eiv"} <= set(rows)
    for tool in ("colloc-exact", "colloc-eiv"):
        r = rows[tool]
        assert r["success"], r
        assert set(r["k_error_pct"]) == set(GAINS)
        assert all(math.isfinite(v) for v in r["k_error_pct"].values())
        assert math.isfinite(r["max_abs_k_error_pct"]) and math.isfinite(r["mean_abs_k_error_pct"])
        assert r["build_s"] > 0 and r["solve_s"] > 0 and r["iterations"] > 0
        assert r["peak_rss_mib"] > 0
    # the errors-in-variables estimate beats the input-taken-as-exact one even on 5 s of data
    assert rows["colloc-eiv"]["mean_abs_k_error_pct"] < rows["colloc-exact"]["mean_abs_k_error_pct"]
    assert report["config"]["duration_s"] == 5.0
    assert {"colloc", "casadi", "ipopt"} <= set(report["versions"])
    assert {"platform", "cpu_count"} <= set(report["machine"])
    return rows


def test_quick_without_opty(tmp_path):
    hidden = tmp_path / "hide"
    (hidden / "opty").mkdir(parents=True)
    (hidden / "opty" / "__init__.py").write_text('raise ImportError("opty hidden by the smoke test")\n')
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(hidden), *filter(None, [env.get("PYTHONPATH")])])
    proc, report = _run(tmp_path, env)
    assert "opty not installed" in proc.stdout
    assert report["opty"] == "not installed"
    rows = _check_colloc_rows(report)
    assert "opty" not in rows and report["ratios"] == []


@pytest.mark.slow
def test_quick_as_installed(tmp_path):
    proc, report = _run(tmp_path)
    rows = _check_colloc_rows(report)
    if report["opty"] == "installed":
        assert math.isfinite(rows["opty"]["max_abs_k_error_pct"])
        assert {r["variant"] for r in report["ratios"]} == {"colloc-exact", "colloc-eiv"}
    else:
        assert "opty not installed" in proc.stdout
