"""Smoke tests of the shooting benchmarks (their --quick modes, ~30 s together).

benchmarks/pendulum_basin.py, benchmarks/collocation_vs_shooting.py and
benchmarks/two_link_unstable.py each run in a subprocess from the repository root; the test
checks the exit code and that the JSON report is complete and sane (not the targets).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASIN_METHODS = {"midpoint", "ss-adjoint-lbfgs", "ss-adjoint-sd", "ss-forward-lbfgs", "ms"}


def _run(script: str, out: Path) -> tuple[subprocess.CompletedProcess, dict]:
    proc = subprocess.run([sys.executable, f"benchmarks/{script}", "--quick", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads(out.read_text(encoding="utf-8"))


def _common(report: dict, name: str) -> None:
    assert report["benchmark"] == name and report["quick"] is True
    assert {"colloc", "casadi", "ipopt"} <= set(report["versions"])
    assert {"platform", "cpu_count"} <= set(report["machine"])
    assert all(t["pass"] in (True, False, None) for t in report.get("targets", []))


@pytest.mark.slow  # 9 s alone (2026-11-29): out of the default suite's 10 minutes
def test_pendulum_basin_quick(tmp_path):
    proc, report = _run("pendulum_basin.py", tmp_path / "basin.json")
    _common(report, "pendulum_basin")
    cfg = report["config"]
    assert len(cfg["p_grid"]) == 5 and cfg["guesses"] == ["measured", "zero", "random"]
    assert len(report["runs"]) == 5 * 3 * len(BASIN_METHODS)
    assert set(report["summary"]) == BASIN_METHODS
    for s in report["summary"].values():
        assert 0.0 <= s["all"]["fraction"] <= 1.0 and s["all"]["runs"] == 15
        assert s["all"]["exceptions"] == 0
    # collocation from the measured trajectory finds p_true from every initial p
    assert report["summary"]["midpoint"]["measured"]["fraction"] == 1.0
    for r in report["runs"]:
        assert r["p_final"] is None or math.isfinite(r["p_final"])
        assert r["total_s"] > 0
    assert Path(report["figure"]).is_file() and Path(report["figure"]).stat().st_size > 10_000
    assert "PASS" in proc.stdout or "FAIL" in proc.stdout


@pytest.mark.slow  # 78 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_collocation_vs_shooting_quick(tmp_path):
    proc, report = _run("collocation_vs_shooting.py", tmp_path / "cvs.json")
    _common(report, "collocation_vs_shooting")
    cases = {c["case"]: c for c in report["cases"]}
    assert any(k.startswith("pendulum") for k in cases) and any(k.startswith("two-link") for k in cases)
    for c in cases.values():
        col = c["rows"][0]
        assert col["method"] == "midpoint" and col["success"], col
        assert math.isfinite(c["eps"]) and c["eps"] >= col["error"]
        assert col["time_to_eps"] is not None and col["time_to_eps"] > 0
        assert len(c["rows"]) >= 4
        for r in c["rows"][1:]:
            assert not str(r["status"]).startswith("exception"), r
            assert r["total_s"] > 0 and r["iterations"] is not None
            if r["time_to_eps"] is not None:
                assert r["ratio_time_to_eps"] > 0
    assert "cip_speed.py" in report["cip"] and "CIP" in proc.stdout
    assert set(report["basin"]["summary"]) == BASIN_METHODS
    assert len(report["targets"]) == 2


@pytest.mark.slow  # 20 s at load 2.5 (2026-11-29): kept out of the default suite's 10 minutes
def test_two_link_unstable_quick(tmp_path):
    proc, report = _run("two_link_unstable.py", tmp_path / "unstable.json")
    _common(report, "two_link_unstable")
    assert report["open_loop"]["falls_past_90deg_at_s"] is not None  # K = 0 is unstable
    assert report["closed_loop_true_k"]["falls_past_90deg_at_s"] is None
    rows = {r["method"]: r for r in report["rows"]}
    assert {"midpoint", "ss-adjoint-lbfgs/cvodes", "ss-adjoint-lbfgs/rk4", "ms/rk4", "ms/cvodes"} == set(rows)
    for r in rows.values():
        assert r["verdict"] in ("ok", "false convergence", "failed"), r  # never "crashed"
        assert isinstance(r["status"], str) and r["status"]
        assert r["total_s"] > 0
    assert rows["midpoint"]["success"] and rows["midpoint"]["verdict"] == "ok"
    assert "PASS: no method crashed" in proc.stdout
