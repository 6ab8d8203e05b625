"""`heel-off` with a delayed feedback T = −kp·θ_body(t − τ) − kd·ω_body(t − τ): τ identified with
kp, kd (``identify(delay=True)``, ``colloc identify heel-off --controller PD-delay``).

The records are made by the delayed contact simulator (heel_off.simulate with ``tau``: the method
of steps over colloc.simulate_contact, checked against a delayed stiff-penalty reference and a
method-of-steps pendulum in test_heel_off_simulation.py), not by the collocation that fits them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from colloc_problems import heel_off

DATA = Path(__file__).resolve().parents[2] / "data" / "heel_off"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "colloc.cli", *args], capture_output=True, text=True, timeout=900)


@pytest.mark.slow  # 18 s alone, 50 s with two other solves on the machine
def test_delay_recovered_on_a_clean_record_from_a_poor_guess():
    # 100 Hz, one heel lift (0.82–1.02 s); τ started at 0.05 s, kp and kd 40 % low
    trial, sim = heel_off.make_trial(1.5, pulses=heel_off.DELAY_PULSES, noise=False, tau=heel_off.TAU_TRUE,
                                     name="delay.csv")
    assert [e.kind for e in sim.events] == ["lift-off", "landing"]
    out = heel_off.identify([trial], {"kp": 540.0, "kd": 150.0, "tau": 0.05}, delay=True)
    assert out["success"], out["status"]
    p = out["parameters"]
    assert abs(p["kp"] / heel_off.TRUE["kp"] - 1) < 0.005
    assert abs(p["kd"] / heel_off.TRUE["kd"] - 1) < 0.005
    assert abs(p["tau"] - heel_off.TAU_TRUE) < 0.01  # within one sample
    assert len(out["rounds"]) > 1  # τ walked from its guess over several rounds


def test_bad_controller_exits_2_in_one_line():
    r = _cli("identify", "heel-off", "--data", str(DATA / "heel_off_delay.csv"), "--controller", "PID")
    assert r.returncode == 2 and "--controller PID" in r.stderr and "PD-delay" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = _cli("identify", "heel-off", "--data", str(DATA / "heel_off_delay.csv"), "--guess", "tau=0.1")
    assert r.returncode == 2 and "PD-delay" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_cli_pd_delay_on_the_shipped_noisy_record_truth_within_three_se(tmp_path):
    # the shipped record: 2 s, seed noise, τ = 0.1 s; the default start (kp 600, kd 120, τ 0.05)
    out = tmp_path / "fit.json"
    r = _cli("identify", "heel-off", "--data", str(DATA / "heel_off_delay.csv"), "--controller", "PD-delay",
             "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["success"] and set(doc["parameters"]) == {"kp", "kd", "tau"}
    assert doc["info"]["controller"] == "PD-delay"
    truth = {**heel_off.TRUE, "tau": heel_off.TAU_TRUE}
    for k, v in truth.items():
        assert abs(doc["parameters"][k] - v) < 3 * doc["standard_errors"][k], (k, doc["parameters"][k])
    assert abs(doc["parameters"]["tau"] - heel_off.TAU_TRUE) < 0.01
