"""Smoke test of benchmarks/whole_command.py (its --quick mode: 601 and 1201 nodes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_whole_command_benchmark_runs(tmp_path):
    out = tmp_path / "w.json"
    proc = subprocess.run([sys.executable, "benchmarks/whole_command.py", "--quick", "--out", str(out)],
                          check=False, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [r["nodes"] for r in doc["rows"]] == [601, 1201]
    for r in doc["rows"]:
        # the command itself succeeded and wrote its result, with the phases timed
        assert r["exit_code"] == 0 and r["success"] is True, r
        assert r["cpu_s"] > 0 and r["peak_rss_mb"] > 50
        assert {"build_s", "solve_s", "covariance_s", "simulation_s"} <= set(r["timings"])
    assert "versions" in doc


def test_phases_mode_reports_the_ratio_of_post_processing_to_solve(tmp_path):
    from colloc_problems import two_link as tl

    csv, out = tmp_path / "short.csv", tmp_path / "p.json"
    tl.simulate_trial(duration=3.0, seed=1).to_csv(csv)
    proc = subprocess.run([sys.executable, "benchmarks/whole_command.py", "--phases", "--repeats", "1",
                           "--data", str(csv), "--out", str(out)],
                          check=False, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    (run,) = doc["runs"]
    assert run["exit_code"] == 0 and run["cpu_s"] > 0
    t = run["timings"]
    assert doc["post_over_solve"]["runs"] == [t["postprocess_s"] / t["solve_s"]]
    assert doc["median"]["covariance_s"] == t["covariance_s"] and "post-processing / solve" in proc.stdout
