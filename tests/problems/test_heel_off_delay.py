"""`heel-off` with a delayed feedback T = −kp·θ_body(t − τ) − kd·ω_body(t − τ): τ identified with
kp, kd on the library's hybrid path (``heel_off.identify_result(controller="PD-delay")``,
``colloc identify heel-off --controller PD-delay``: heel_off_fit.identify_result(delay=True)).

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


def _fit(trials, guess=None, **options):
    """The delayed fit as the command runs it (a colloc.Result)."""
    return heel_off.identify_result(trials, guess=guess, controller="PD-delay", **options)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "colloc.cli", *args], capture_output=True, text=True)


@pytest.mark.slow  # 41 s at load 7
def test_delay_recovered_on_a_clean_record_from_a_poor_guess():
    # 100 Hz, one heel lift (0.82–1.02 s); τ started at 0.05 s, kp and kd 40 % low
    trial, sim = heel_off.make_trial(1.5, pulses=heel_off.DELAY_PULSES, noise=False, tau=heel_off.TAU_TRUE,
                                     name="delay.csv")
    assert [e.kind for e in sim.events] == ["lift-off", "landing"]
    out = _fit([trial], {"kp": 540.0, "kd": 150.0, "tau": 0.05}, start="guess")
    assert out.success, out.status
    p = out.parameters
    assert abs(p["kp"] / heel_off.TRUE["kp"] - 1) < 5e-4
    assert abs(p["kd"] / heel_off.TRUE["kd"] - 1) < 5e-4
    assert abs(p["tau"] - heel_off.TAU_TRUE) < 1e-4
    assert out.info["rounds"] > 1  # τ walked from its guess over several solves
    assert out.info["modes"] == [["flat", "toe", "flat"]]
    assert [s["kind"] for s in out.info["switches"][0]] == ["lift-off", "landing"]
    for s, e in zip(out.info["switches"][0], sim.events):
        assert abs(s["time"] - e.time) < 0.01
    # the mesh break τ after the landing (ω_body's jump fed back; kp was +0.061 % without it), no event
    landing = out.info["switches"][0][1]["time"]
    assert out.info["phases"]["delay.csv"]["delay_breaks"] == pytest.approx([landing + p["tau"]])


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


# ---------------------------------------------------------------------------------------------
# the start of τ: the equation-error estimate when the guess is far (or none is given)

TRUTH = {**heel_off.TRUE, "tau": heel_off.TAU_TRUE}


@pytest.fixture(scope="module")
def short_noisy():
    # 1.3 s at 100 Hz, seed noise (seed 2), τ = 0.1 s, one heel lift (0.82–1.02 s)
    trial, sim = heel_off.make_trial(1.3, pulses=heel_off.DELAY_PULSES, noise=True, seed=2, tau=heel_off.TAU_TRUE,
                                     name="short.csv")
    assert [e.kind for e in sim.events] == ["lift-off", "landing"]
    return trial


def _within_three_se(out):
    assert out.success, out.status
    for k, v in TRUTH.items():
        assert abs(out.parameters[k] - v) < 3 * out.standard_errors[k], (k, out.parameters[k])
    assert out.info["modes"] == [["flat", "toe", "flat"]]


@pytest.mark.parametrize("tau_guess", [0.2, 0.01])
def test_a_far_tau_guess_starts_from_the_equation_error_and_reaches_the_truth(short_noisy, tau_guess):
    # from τ 0.2 s (IPOPT walked kd to its bound: time_limit or Restoration_Failed) and 0.01 s
    out = _fit([short_noisy], {"tau": tau_guess})
    assert out.info["start"]["source"] == "equation-error" and "rejects" in out.info["start"]["message"]
    assert abs(out.info["start"]["parameters"]["tau"] - heel_off.TAU_TRUE) < 0.03
    _within_three_se(out)


def test_a_tau_guess_the_record_does_not_reject_is_kept(short_noisy):
    out = _fit([short_noisy], {"tau": 0.1})
    assert out.info["start"]["source"] == "guess" and out.info["start"]["parameters"]["tau"] == 0.1
    _within_three_se(out)


def test_start_guess_is_honoured_and_a_fit_that_fails_is_named(short_noisy):
    # --start guess keeps τ 0.3 s (beyond the flat-foot delay margin 0.236 s); two rounds of
    # ten iterations cannot reach the truth from there, and the result says so
    out = _fit([short_noisy], {"tau": 0.3}, start="guess", max_iter=10)
    assert out.info["start"] == {"source": "guess", "parameters": {**heel_off.GUESS, "tau": 0.3},
                                 "message": "the guesses"}
    assert not out.success and out.status not in ("Solve_Succeeded", "Solved_To_Acceptable_Level")
    with pytest.raises(Exception, match="starts from equation-error or guess"):
        _fit([short_noisy], start="nearest")


def test_equation_error_start_finds_tau_on_the_sample_grid_and_rejects_far_guesses(short_noisy):
    far = heel_off.equation_error_start([short_noisy], tau_guess=0.2)
    assert far["usable"] and far["tau_rejected"]
    assert abs(far["parameters"]["tau"] - heel_off.TAU_TRUE) < 0.03
    assert 0.7 < far["parameters"]["kp"] / heel_off.TRUE["kp"] < 1.3
    assert 0.7 < far["parameters"]["kd"] / heel_off.TRUE["kd"] < 1.3
    assert not heel_off.equation_error_start([short_noisy], tau_guess=0.1)["tau_rejected"]
    # a record without a flat stretch long enough: not usable, and why
    bare = heel_off.equation_error_start([short_noisy], [[("toe", 0.0, 1.3)]])
    assert not bare["usable"] and "flat stretch" in bare["message"]


@pytest.mark.slow  # a 2 s record: 2 s to simulate, 9-18 s to fit at load 7
@pytest.mark.parametrize("tau_guess", [0.2, 0.0, 0.01, 0.3])
def test_far_tau_guesses_on_a_two_second_noisy_record(tau_guess):
    trial, _sim = heel_off.make_trial(2.0, pulses=heel_off.DELAY_PULSES, noise=True, seed=3, tau=heel_off.TAU_TRUE)
    out = _fit([trial], {"tau": tau_guess})
    assert out.info["start"]["source"] == "equation-error"
    _within_three_se(out)


@pytest.mark.slow  # 2 s to simulate; 86 s to fit at load 6 (first solve: 303 iterations from the equation-error start)
def test_far_tau_guess_without_measured_rates_and_another_delay():
    # θ only (ω_body, ω_foot not measured), τ = 0.07 s, seed noise (seed 6), guess τ 0.2 s
    tau = 0.07
    trial, _sim = heel_off.make_trial(2.0, pulses=heel_off.DELAY_PULSES, noise=True, seed=6, tau=tau, omegas=False)
    assert "omega_body" not in trial.signals
    out = _fit([trial], {"tau": 0.2})
    assert out.success, out.status
    assert out.info["start"]["source"] == "equation-error"
    for k, v in {**heel_off.TRUE, "tau": tau}.items():
        assert abs(out.parameters[k] - v) < 3 * out.standard_errors[k], (k, out.parameters[k])


def test_two_records_share_kp_kd_tau_from_a_far_guess(short_noisy):
    # several records in one fit (a ValueError before: the fit blocks took the last record's indices)
    other, _sim = heel_off.make_trial(1.3, pulses=heel_off.DELAY_PULSES, noise=True, seed=5, tau=heel_off.TAU_TRUE,
                                      name="other.csv")
    out = _fit([short_noisy, other], {"tau": 0.2})
    assert out.success, out.status
    assert out.info["modes"] == [["flat", "toe", "flat"]] * 2
    for k, v in TRUTH.items():
        assert abs(out.parameters[k] - v) < 3 * out.standard_errors[k], (k, out.parameters[k])
