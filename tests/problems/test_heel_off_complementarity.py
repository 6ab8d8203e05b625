"""`heel-off` by the complementarity formulation (modes out of the fit, fixed grid).

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


@pytest.mark.slow
def test_clean_record_modes_and_switching_times_come_out_of_the_fit(short_heel_off):
    trial, sim = short_heel_off
    assert [e.kind for e in sim.events] == ["lift-off", "landing"]
    # from kp 500, kd 100 (not the equation-error start); no mode sequence given
    out = hc.identify([trial], POOR, start="guess")
    assert out["success"], out["status"]
    assert out["modes"] == [["flat", "toe", "flat"]] and out["polished"]
    # the fixed grid's own fit: its events within one sample
    stage = out["complementarity"]
    assert [s["kind"] for s in stage["switches"][0]] == ["lift-off", "landing"]
    np.testing.assert_allclose([s["time"] for s in stage["switches"][0]], sim.event_times(), atol=0.01)
    # polished (the switching times free): the acceptance, gains within 0.5 %, events within a sample
    np.testing.assert_allclose([s["time"] for s in out["switches"][0]], sim.event_times(), atol=0.01)
    for k in heel_off.NAMES:
        assert abs(out["parameters"][k] / heel_off.TRUE[k] - 1) < 0.005, (k, out["parameters"])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noisy_records_truth_within_3_standard_errors(seed):
    # 1.3 s, one heel-off, the seed records' noise (0.1°, 1°/s); before the polish the fixed
    # grid's fit missed kd by −4.2 SE on seed 0 and reported a success
    trial, sim = heel_off.make_trial(1.3, pulses=((0.3, -6.0, 0.5),), noise=True, seed=seed)
    out = hc.identify([trial], POOR)
    assert out["success"], out["status"]
    assert out["modes"] == [["flat", "toe", "flat"]]
    for k in heel_off.NAMES:
        assert abs(out["parameters"][k] - heel_off.TRUE[k]) < 3 * out["standard_errors"][k], (k, out)
    np.testing.assert_allclose([s["time"] for s in out["switches"][0]], sim.event_times(), atol=0.01)


@pytest.mark.slow
def test_the_shipped_clean_8s_record_is_recovered():
    # three heel-offs (toe, heel, toe) in 8 s: the windows find the modes, the polish the gains;
    # the expected events are the simulator's (data/heel_off/events.json, generate.py).  The
    # window 3.0–4.5 s fails its homotopy but its modes, its chatter read as one switch, are
    # right; the polish must succeed and meet the acceptance (benchmarks/README.md, 234 s)
    from colloc_problems._data import data_path

    trial = heel_off.load_trial(data_path("heel_off", "heel_off_clean.csv"))
    events = json.loads(data_path("heel_off", "events.json").read_text())["heel_off_clean.csv"]
    out = hc.identify([trial], POOR, time_limit=1200)
    assert out["success"], (out["status"], out.get("window"))
    assert [s["kind"] for s in out["switches"][0]] == [e["kind"] for e in events]
    np.testing.assert_allclose([s["time"] for s in out["switches"][0]], [e["time"] for e in events], atol=0.01)
    for k in heel_off.NAMES:
        assert abs(out["parameters"][k] / heel_off.TRUE[k] - 1) < 0.005, (k, out["parameters"])


@pytest.mark.slow
def test_a_record_the_model_cannot_fit_is_a_failure():
    # the body angle of a flat record played at a third of its speed: no gains make the
    # platform's pulse move the body like that
    trial, _sim = heel_off.make_trial(0.6, pulses=((0.05, -2.0, 0.5),), noise=False, name="slow.csv")
    t = trial.time
    slow = {k: np.interp(t / 3, t, v) for k, v in trial.signals.items()}
    bad = heel_off.HeelOffTrial("slow.csv", t, slow, trial.platform_acc)
    out = hc.identify([bad], POOR)
    assert not out["success"] and out["status"] in ("poor_fit", "homotopy_failed", "parameter_on_bound")


def test_bad_options_are_refused():
    trial, _sim = heel_off.make_trial(0.1, pulses=(), noise=False)
    with pytest.raises(co.OptionsError, match="eps_end"):
        hc.identify([trial], eps_start=1e-6, eps_end=1e-4)
    with pytest.raises(co.OptionsError, match="formulation 'smooth'"):
        hc.identify([trial], formulation="smooth")
    with pytest.raises(co.OptionsError, match="unknown parameter"):
        hc.identify_result([trial], guess={"kq": 1.0})


def test_the_equation_error_start_is_near_the_simulators_gains():
    # the body's equation of motion on the smoothed record (no collocation, no contact force):
    # a start: close to the simulator's gains on a clean record, within 10 % on a noisy one (smoothing
    # biases it: kd −7 % on this one)
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
    assert len(res.info["homotopy"]) <= 1
    if res.info["homotopy"]:  # the build took less than the limit: the stop came inside the first solve
        assert res.info["homotopy"][0]["status"] == "User_Requested_Stop"
    # a failed fit still reports where it stopped: the states of the fixed grid (its mesh and
    # collocation points), the residuals at the samples, the simulation check and the verdict
    traj, r = res.trajectories["short.csv"], res.residuals["short.csv"]
    assert list(traj.columns) == list(heel_off.STATE_NAMES) and np.all(np.diff(traj.index) >= 0)
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
    with pytest.raises(co.OptionsError, match="start 'zero'"):
        hc.identify([trial], start="zero")


def test_the_windows_switches_are_stitched_into_phases_or_their_disagreement_named():
    sw = [{"time": 0.7, "from": "flat", "to": "toe"}, {"time": 0.85, "from": "toe", "to": "flat"},
          {"time": 3.2, "from": "flat", "to": "heel"}]
    assert hc._stitch("flat", sw[::-1], 0.0, 8.0) == [("flat", 0.0, 0.7), ("toe", 0.7, 0.85), ("flat", 0.85, 3.2),
                                                      ("heel", 3.2, 8.0)]
    assert hc._stitch("flat", [], 0.0, 4.0) == [("flat", 0.0, 4.0)]
    # a later window saw the landing that the earlier one had not: the sequence breaks there
    assert hc._stitch("flat", [sw[0], sw[2]], 0.0, 8.0) == 3.2


def test_chatter_shorter_than_a_phase_is_merged_into_its_neighbours():
    # hand-made: a heel pivot 3.184–3.65 s, then the grid's chatter (touch, lift, both open)
    # for 40 ms after the landing, then flat; and a record that starts with a 10 ms blip
    seq = [("flat", 0.0, 3.184), ("heel", 3.184, 3.65), ("flat", 3.65, 3.653), ("heel", 3.653, 3.66),
           (None, 3.66, 3.663), ("flat", 3.663, 3.67), ("heel", 3.67, 3.69), ("flat", 3.69, 4.5)]
    # the run of chatter is one switch, at its start (the landing is the first touch)
    assert hc._without_chatter(seq) == [("flat", 0.0, 3.184), ("heel", 3.184, 3.65), ("flat", 3.65, 4.5)]
    # the failing window of heel_off_clean.csv as read (3.0–4.5 s, rounded): heel pivot broken by
    # 3 ms gaps, then 40 ms of chatter whose longest piece is a 13 ms toe phase: heel → flat
    win = [("flat", 3.0, 3.1975), ("heel", 3.1975, 3.33), (None, 3.33, 3.333), ("heel", 3.333, 3.34),
           (None, 3.34, 3.343), ("heel", 3.343, 3.65), (None, 3.65, 3.653), ("toe", 3.653, 3.66),
           (None, 3.66, 3.663), ("flat", 3.663, 3.67), ("toe", 3.67, 3.683), (None, 3.683, 3.69), ("flat", 3.69, 4.5)]
    assert hc._without_chatter(win) == [("flat", 3.0, 3.1975), ("heel", 3.1975, 3.65), ("flat", 3.65, 4.5)]
    # chatter only: left as it is (no mode to keep)
    blips = [("toe", 0.0, 0.01), (None, 0.01, 0.02)]
    assert hc._without_chatter(blips) == blips
    assert hc._without_chatter([("toe", 0.0, 0.01), ("flat", 0.01, 1.0)]) == [("flat", 0.0, 1.0)]
    # an 84 ms pivot (the shortest of the shipped records) is a mode, kept
    real = [("flat", 5.0, 5.672), ("toe", 5.672, 5.756), ("flat", 5.756, 6.0)]
    assert hc._without_chatter(real) == real


def test_the_fits_of_the_windows_are_stitched_core_by_core():
    # hand-made fits of three windows of a 0–3 s record sampled at 0.5 s (nodes at the samples and
    # half-way); the cores: [−∞, 1.25), [1.25, 2.25) and the last window's from 2.25 (its own core
    # would start at 1.75: it overlaps the one before by more than the others)
    t = np.arange(7) * 0.5

    def window(a, b, value):
        nodes = np.arange(t[a], t[b] + 1e-9, 0.25)
        samples = np.arange(b - a + 1)
        return {"name": "r", "node_time": nodes, "node_states": np.full((nodes.size, 4), value),
                "initial_state": np.full(4, value), "noise": {"theta_body": 1.0}, "samples": samples,
                "residuals": {"theta_body": np.full(samples.size, value)}}

    parts = [(0, -np.inf, 1.25, window(0, 3, 1.0)), (2, 1.25, 2.25, window(2, 5, 2.0)),
             (3, 1.75, np.inf, window(3, 6, 3.0))]
    rec = hc._stitched(t, parts)
    np.testing.assert_array_equal(rec["node_time"], np.arange(0, 3.01, 0.25))
    np.testing.assert_array_equal(rec["node_states"][:, 0], [1] * 5 + [2] * 4 + [3] * 4)
    np.testing.assert_array_equal(rec["samples"], np.arange(7))
    np.testing.assert_array_equal(rec["residuals"]["theta_body"], [1, 1, 1, 2, 2, 3, 3])
    assert rec["initial_state"][0] == 1.0


def test_lift_off_time_is_where_the_force_line_reaches_zero():
    # a force falling linearly (hand-made: 300 N at t = 0, zero at t = 0.0537 s) with the
    # relaxation's tail of a few N after it: the tail is not extrapolated
    t = np.arange(0.0, 0.06, 0.005)
    force = np.where(t < 0.045, 300.0 * (1 - t / 0.0537), 3.0) / hc.FORCE
    assert abs(hc._force_zero(t, force, 0.06) - 0.0537) < 1e-9
    assert hc._force_zero(t, force, 0.05) == 0.05  # never past the first point the contact is open


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
