"""`heel-off` by the complementarity formulation (modes out of the fit, fixed grid):
co.solve(heel_off_complementarity.contact_problem(...), co.Complementarity(...)).

The records come from the event-driven contact simulator (heel_off.make_trial →
colloc.simulate_contact, checked against a stiff-penalty reference in
test_heel_off_simulation.py), a different computation from the collocation that fits them; the
expected gains are the simulator's (heel_off.TRUE) and its event times.  Every fit takes
longer than the default lane allows (40–90 s for a 0.6–1.3 s record on the 2-core machine,
loaded), so the fits are in the slow lane; the default lane checks the options and the CLI's
refusals."""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest

import colloc as co
from colloc_problems import heel_off, heel_off_complementarity as hc

POOR = {"kp": 500.0, "kd": 100.0}


@pytest.fixture(scope="module")
def short_heel_off():
    # 1.3 s at 100 Hz: one backwards pulse lifts the heel once (flat, toe, flat)
    return heel_off.make_trial(1.3, pulses=((0.3, -6.0, 0.5),), noise=False, name="short.csv")


def _identify(trials, guess=None, **options):
    return hc.identify_result(trials, guess=guess, **options)


def _times(switches):
    return [s["time"] for s in switches]


@pytest.mark.slow
def test_clean_record_modes_and_switching_times_come_out_of_the_fit(short_heel_off):
    trial, sim = short_heel_off
    assert [e.kind for e in sim.events] == ["lift-off", "landing"]
    # from kp 500, kd 100 (not the equation-error start); no mode sequence given
    res = _identify([trial], POOR, start="guess")
    assert res.success, (res.status, res.message)
    assert res.info["modes"] == [["flat", "toe", "flat"]] and res.info["polished"]
    # the fixed grid's own fit: its events within one sample
    stage = res.info["complementarity"]
    assert [s["kind"] for s in stage["switches"][0]] == ["lift-off", "landing"]
    np.testing.assert_allclose(_times(stage["switches"][0]), sim.event_times(), atol=0.01)
    # polished (the switching times free): the acceptance, gains within 0.5 %, events within a sample
    np.testing.assert_allclose(_times(res.info["switches"][0]), sim.event_times(), atol=0.01)
    for k in heel_off.NAMES:
        assert abs(res.parameters[k] / heel_off.TRUE[k] - 1) < 0.005, (k, res.parameters)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noisy_records_truth_within_3_standard_errors(seed):
    # 1.3 s, one heel-off, the seed records' noise (0.1°, 1°/s); before the polish the fixed
    # grid's fit missed kd by −4.2 SE on seed 0 and reported a success
    # from the equation-error start (a given guess now overrides it; the first form of this
    # method ignored it, so this test ran from the equation error too)
    trial, sim = heel_off.make_trial(1.3, pulses=((0.3, -6.0, 0.5),), noise=True, seed=seed)
    res = _identify([trial])
    assert res.success, (res.status, res.message)
    assert res.info["modes"] == [["flat", "toe", "flat"]]
    for k in heel_off.NAMES:
        assert abs(res.parameters[k] - heel_off.TRUE[k]) < 3 * res.standard_errors[k], (k, res.parameters)
    np.testing.assert_allclose(_times(res.info["switches"][0]), sim.event_times(), atol=0.01)


@pytest.mark.slow
def test_the_shipped_clean_8s_record_is_recovered():
    # three heel-offs (toe, heel, toe) in 8 s: the windows find the modes, the polish the gains;
    # the expected events are the simulator's (data/heel_off/events.json, generate.py)
    from colloc_problems._data import data_path

    trial = heel_off.load_trial(data_path("heel_off", "heel_off_clean.csv"))
    events = json.loads(data_path("heel_off", "events.json").read_text())["heel_off_clean.csv"]
    res = _identify([trial], time_limit=1200)
    assert res.success, (res.status, res.info["complementarity"].get("window"))
    switches = res.info["switches"][0]
    assert [s["kind"] for s in switches] == [e["kind"] for e in events]
    np.testing.assert_allclose(_times(switches), [e["time"] for e in events], atol=0.01)
    for k in heel_off.NAMES:
        assert abs(res.parameters[k] / heel_off.TRUE[k] - 1) < 0.005, (k, res.parameters)


@pytest.mark.slow
def test_a_record_the_model_cannot_fit_is_a_failure():
    # the body angle of a flat record played at a third of its speed: no gains make the
    # platform's pulse move the body like that
    trial, _sim = heel_off.make_trial(0.6, pulses=((0.05, -2.0, 0.5),), noise=False, name="slow.csv")
    t = trial.time
    slow = {k: np.interp(t / 3, t, v) for k, v in trial.signals.items()}
    bad = heel_off.HeelOffTrial("slow.csv", t, slow, trial.platform_acc)
    res = _identify([bad])
    assert not res.success and res.status in ("poor_fit", "homotopy_failed", "parameter_on_bound",
                                              "parameter_at_bound")


def test_bad_options_are_refused():
    trial, _sim = heel_off.make_trial(0.1, pulses=(), noise=False)
    with pytest.raises(co.OptionsError, match="eps_end"):
        _identify([trial], eps_start=1e-6, eps_end=1e-4)
    with pytest.raises(co.OptionsError, match="formulation 'smooth'"):
        _identify([trial], formulation="smooth")
    with pytest.raises(co.OptionsError, match="unknown option"):
        _identify([trial], windw=2.0)
    with pytest.raises(co.OptionsError, match="unknown parameter"):
        hc.identify_result([trial], guess={"kq": 1.0})
    with pytest.raises(co.OptionsError, match="start 'zero'"):
        _identify([trial], start="zero")


def test_the_equation_error_start_is_near_the_simulators_gains():
    # the flat-foot equation of motion on the smoothed record (no collocation): a start, close
    # to the simulator's gains on a clean record, within 10 % on a noisy one
    for noise, tol in ((False, 0.01), (True, 0.1)):
        trial, _sim = heel_off.make_trial(3.0, noise=noise, seed=3)
        est = hc.equation_error([trial])
        for k in heel_off.NAMES:
            assert abs(est[k] / heel_off.TRUE[k] - 1) < tol, (noise, est)


def test_the_time_limit_stops_a_solve_inside_it(short_heel_off, tmp_path):
    # the first homotopy step of this record takes hundreds of iterations; a limit of a few
    # seconds ends inside it (IPOPT asks the clock after every iteration), reported as time_limit
    from colloc.results.plotting import plot_fit

    trial, _sim = short_heel_off
    res = hc.identify_result([trial], time_limit=4.0)
    assert not res.success and res.status == "time_limit" and "time limit" in res.message
    homotopy = res.info["complementarity"]["homotopy"]
    assert len(homotopy) <= 1
    if homotopy:  # the build took less than the limit: the stop came inside the first solve
        assert homotopy[0]["status"] == "User_Requested_Stop"
    # a failed fit still reports where it stopped: the states of the fixed grid (its mesh and
    # collocation points), the residuals at the samples, the simulation check and the verdict
    traj, r = res.trajectories["short.csv"], res.residuals["short.csv"]
    assert set(heel_off.STATE_NAMES) <= set(traj.columns) and np.all(np.diff(traj.index) >= 0)
    assert len(traj) == 3 * (len(trial.time) - 1) + 1  # degree 2: the mesh points and two points per interval
    assert np.array_equal(r.index, trial.time) and list(r.columns) == list(heel_off.STATE_NAMES)
    mesh = traj[np.isin(traj.index, trial.time)].groupby(level=0).last()  # after any impulse
    np.testing.assert_allclose(r["theta_body"] + trial.signals["theta_body"], mesh["theta_body"], atol=1e-12)
    check = res.simulation["short.csv"]  # from where the fit stopped: it ran, or it says why not
    if check["status"] == "ok":
        assert set(check["nrmse"]) == set(heel_off.STATE_NAMES)
    else:
        assert check["message"]
    assert res.fit_verdict["verdict"] != "not_applicable"
    plot_fit(res, path=tmp_path / "stopped.png")
    assert (tmp_path / "stopped.png").stat().st_size > 0


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "colloc.cli", *args], capture_output=True, text=True)


def test_cli_bad_option_of_the_complementarity_method_exits_2_in_one_line():
    from colloc_problems._data import data_path

    path = str(data_path("heel_off", "flat.csv"))
    for extra in (("--bounds", "kp=1:2000"), ("--nodes", "50")):
        r = _cli("identify", "heel-off", "--data", path, "--method", "complementarity", *extra)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
        assert extra[0] in r.stderr and "complementarity" in r.stderr
    r = _cli("identify", "heel-off", "--data", path, "--method", "midpoint")
    assert r.returncode == 2 and "--method complementarity" in r.stderr


@pytest.mark.slow
def test_cli_complementarity_on_the_shipped_flat_record(tmp_path):
    from colloc_problems._data import data_path

    out, plot = tmp_path / "flat.json", tmp_path / "flat.png"
    r = _cli("identify", "heel-off", "--data", str(data_path("heel_off", "flat.csv")), "--method", "complementarity",
             "--out", str(out), "--json", "--plot", str(plot))
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    keys = {"problem", "method", "success", "status", "iterations", "objective", "parameters", "standard_errors",
            "timings", "num_nodes", "trials", "versions", "warnings", "intervals", "simulation"}
    assert keys <= set(doc) and json.loads(out.read_text())["status"] == doc["status"]
    assert doc["fit_verdict"]["verdict"] == "good" or not doc["success"]
    assert plot.stat().st_size > 0
    (name,) = doc["trajectories"]
    assert doc["simulation"][name]["status"] == "ok" and len(doc["residuals"][name]["time"]) == 401
    assert doc["method"] == "complementarity" and doc["problem"] == "heel-off"
    assert doc["success"] == (r.returncode == 0)
    if r.returncode == 0:
        assert doc["info"]["modes"] == [["flat"]]  # the foot never leaves the ground (events.json: none)
        for k in heel_off.NAMES:
            assert abs(doc["parameters"][k] - heel_off.TRUE[k]) < 3 * doc["standard_errors"][k]


def test_the_delayed_controller_is_refused_by_the_complementarity_method(tmp_path):
    """--controller PD-delay belongs to the multi-phase method; the complementarity method
    fits the undelayed feedback only and says so in one line (exit 2)."""
    data = Path(__file__).resolve().parents[2] / "data" / "heel_off" / "heel_off_delay.csv"
    run = _cli("identify", "heel-off", "--data", str(data), "--method", "complementarity", "--controller", "PD-delay",
               "--out", str(tmp_path / "o.json"))
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "--controller PD-delay" in run.stderr and "complementarity" in run.stderr
