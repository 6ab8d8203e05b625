"""Smoke test of benchmarks/kalman_speed.py in quick mode (PID, the first 10 s of the shipped
BDS trial): the report's content, never its times."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # 22 s under load 5 (2026-11-29): out of the default suite's 10 minutes
def test_kalman_speed_quick_reports_counts_and_the_fit(tmp_path):
    out = tmp_path / "speed.json"
    proc = subprocess.run([sys.executable, "benchmarks/kalman_speed.py", "--quick", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["controllers"] == ["PID"] and doc["lengths_s"] == [10.0] and doc["repeats"] == 1
    assert len(doc["machine"]["loadavg"]) == 3 and "process_time" in doc["cpu_clock"]
    (case,) = doc["cases"]
    assert case["controller"] == "PID" and case["window"] == [0.0, 10.0] and case["samples"] == 999
    (run,) = case["runs"]
    assert run["cpu_s"] > 0 and run["compiler_cpu_s"] >= 0 and len(run["loadavg_before"]) == 3
    assert run["gradient_evaluations"] > run["iterations"] > 0
    assert run["difference_hessians"] >= 1
    free = [k for k, v in run["standard_errors"].items() if v is not None]
    names = {"KP", "KI", "KD", "q_d", "B", "f_c", "sigma"}
    assert names <= set(run["parameters"]) and set(free) <= names
    assert math.isfinite(run["nll"]) and case["nll"] == run["nll"]
    # the reported NLL is the likelihood of the reported estimate (by the library's uncompiled,
    # nested-AD evaluation, not the compiled gradient the fit used)
    from colloc_problems import cip

    from colloc.inference.kalman import negative_log_likelihood

    trial = cip.load_trial(str(ROOT / "data" / "bds" / "BDS00001.txt.gz"), columns={"cop": "COPx"}).window(0.0, 10.0)
    problem = cip.stochastic_problem(trial, controller="PID", body=cip.body(1.575, 54.2), noise="sway")
    lgm = problem.model_at(0.01)
    y = np.asarray(trial["cop"], dtype=float)
    nll = negative_log_likelihood(lgm, y - y.mean(), {k: run["parameters"][k] for k in lgm.parameter_names})
    assert nll == pytest.approx(run["nll"], rel=1e-9)


def test_kalman_speed_refuses_an_unknown_controller(tmp_path):
    proc = subprocess.run([sys.executable, "benchmarks/kalman_speed.py", "--controllers", "PID,LQR",
                           "--out", str(tmp_path / "x.json")], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "--controllers: unknown LQR" in proc.stderr and "Traceback" not in proc.stderr
