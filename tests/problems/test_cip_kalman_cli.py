"""`colloc identify cip --method kalman-ml [--controller ...]`: the exact Kalman ML of a real COP
trial through the CLI, its refusals, and an honest failure when the model cannot fit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from colloc_problems import cip

from colloc.cli import main
from colloc.inference.kalman import k_step_predictions, negative_log_likelihood, one_step_predictions

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "data" / "bds" / "BDS00001.txt.gz"  # subject 1: 157.5 cm, 54.2 kg (BDSinfoCOP)
BODY = ["--column", "cop=COPx", "--height", "1.575", "--mass", "54.2"]
CONTRACT = {"problem", "method", "success", "status", "iterations", "objective", "parameters", "standard_errors",
            "timings", "num_nodes", "trials", "versions"}


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_real_trial_by_kalman_ml(capsys, tmp_path):
    out_json = tmp_path / "r.json"
    code, out, err = run(capsys, "identify", "cip", "--data", REAL, *BODY, "--method", "kalman-ml",
                         "--noise", "paper", "--out", out_json)
    assert code == 0, err
    doc = json.loads(out_json.read_text())
    assert CONTRACT <= set(doc) and {"build_s", "solve_s", "total_s"} <= set(doc["timings"])
    assert doc["success"] and doc["status"] == "Solve_Succeeded" and doc["method"] == "kalman-ml"
    assert doc["num_nodes"] == 6000
    info = doc["info"]
    assert info["stable"] and info["KP_over_mgh"] > 1.0  # stiffer than gravity (Peterka 2002)
    for k in ("KP", "KI", "KD", "A", "B", "sigma"):
        assert doc["standard_errors"][k] is not None and doc["standard_errors"][k] > 0, k
    # the plate's origin is not the ankle: the offset is the record's mean, about -8 cm here
    cop = np.loadtxt(REAL, skiprows=1, usecols=7) / 100
    assert doc["parameters"]["cop_offset"] == pytest.approx(cop.mean(), rel=1e-12)
    # the objective is the exact NLL of the centred record at the estimate
    lgm = cip.ml_model("PID", dt=0.01, body=info["body"], fit_disturbance=True)
    theta = {k: doc["parameters"][k] for k in lgm.parameter_names}
    assert doc["objective"] == pytest.approx(negative_log_likelihood(lgm, cop - cop.mean(), theta), rel=1e-9)
    # innovations are close to white with unit variance under the fitted model
    assert 0.9 < info["innovations_std"] < 1.1
    # the one report: a verdict on the standardised innovations, intervals above zero, what the
    # trajectory is, no simulation and why, the gains over m·g·h printed under the table
    assert doc["fit_verdict"]["verdict"] == "good" and "innovations" in doc["fit_verdict"]["residuals"]
    # never below zero (on the log scale, or cut at zero where the robust standard error exceeds the value)
    assert all(doc["intervals"][k][0] >= 0 for k in ("KP", "KI", "KD", "A", "B", "sigma"))
    assert doc["trajectory_label"].startswith("one-step-ahead prediction") and doc["simulation"] == {}
    assert "stochastic model" in doc["simulation_note"]
    mgh = info["body"]["m"] * info["body"]["g"] * info["body"]["h"]
    assert f"K_P/(m·g·h) {doc['parameters']['KP'] / mgh:.3g}" in out and "K_P/(m·g·h)" in doc["notes"][0]


def test_one_step_predictions_reproduce_the_likelihood():
    # the prediction-error decomposition by hand from the predictions and their spreads
    trial = cip.simulate_trial(cip.TRUE, duration=10.0, rate=100.0, seed=3, cop_noise=1e-4)
    lgm = cip.ml_model("PID-delay", dt=0.01)
    theta = {**cip.TRUE, "tau": 0.1, "sigma": 1e-4}
    pred, sd = one_step_predictions(lgm, trial["cop"], theta)
    e = (trial["cop"] - pred[:, 0]) / sd[:, 0]
    by_hand = 0.5 * float(np.sum(np.log(2 * np.pi * sd[:, 0] ** 2) + e**2))
    assert by_hand == pytest.approx(negative_log_likelihood(lgm, trial["cop"], theta), rel=1e-10)


def test_a_gain_held_off_the_data_is_a_failure_not_a_success(capsys, tmp_path):
    # K_P capped far below what the subject uses (the paper's noise model: under the sway model
    # K_P ≈ 590 N·m/rad is a local optimum of this record, as likely as ≈ 1100): the fit ends on
    # the bound -> exit 1, named status
    code, out, _err = run(capsys, "identify", "cip", "--data", REAL, *BODY, "--method", "kalman-ml",
                         "--noise", "paper", "--bounds", "KP=:600", "--guess", "KP=550", "--json")
    assert code == 1
    doc = json.loads(out)
    assert not doc["success"] and doc["status"] in ("parameter_at_bound", "unstable", "not_identifiable")
    assert any(w["code"] in ("parameter_at_bound", "unstable") for w in doc["warnings"])


@pytest.mark.parametrize("extra, message", [
    (["--method", "kalman-ml", "--controller", "PIDD"], "--controller PIDD: one of PID, PD, PD-delay, PID-delay or auto"),
    (["--method", "radau2", "--controller", "PD-delay"], "--controller applies to --method kalman-ml"),
    (["--method", "kalman-ml", "--nodes", "100"], "--nodes does not apply to --method kalman-ml"),
    (["--method", "kalman-ml", "--data", ROOT / "data" / "bds" / "BDS00004.txt.gz"], "fits one trial at a time, got 2"),
    (["--method", "kalman-ml", "--guess", "tau=0.1"], "--guess: tau not allowed with --method kalman-ml"),
    (["--method", "radau2", "--errors", "robust"], "--errors applies to --method kalman-ml"),
    (["--method", "kalman-ml", "--errors", "hac"], "argument --errors: invalid choice: 'hac'"),
])
def test_refusals_are_one_line_exit_2(capsys, extra, message):
    code, _out, err = run(capsys, "identify", "cip", "--data", REAL, *BODY, *extra)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_uneven_sampling_is_refused_by_name_and_a_hole_needs_missing_allow(capsys, tmp_path):
    t = np.arange(0.0, 20.0, 0.01)
    cop = 0.002 * np.sin(2 * np.pi * 0.3 * t)
    holed = tmp_path / "holed.csv"
    keep = np.ones(t.size, bool)
    keep[500:510] = False  # ten rows missing: a hole in time
    holed.write_text("time,cop\n" + "".join(f"{a:.2f},{b:.6f}\n" for a, b in zip(t[keep], cop[keep])))
    code, _out, err = run(capsys, "identify", "cip", "--data", holed, "--height", "1.7", "--mass", "70")
    assert code == 2 and "not evenly sampled" in err and "t = 4.99 s to 5.1 s" in err, err
    assert "a hole of 10 samples: --missing allow" in err and len(err.strip().splitlines()) == 1, err
    jitter = tmp_path / "jitter.csv"
    times = t.copy()
    times[700:] += 0.004  # a step of 14 ms: not on the grid, even with --missing allow
    jitter.write_text("time,cop\n" + "".join(f"{a:.3f},{b:.6f}\n" for a, b in zip(times, cop)))
    code, _out, err = run(capsys, "identify", "cip", "--data", jitter, "--height", "1.7", "--mass", "70",
                         "--missing", "allow")
    assert code == 2 and "t = 6.99 s to 7.004 s is not 0.01 s" in err and "hole" not in err, err
    sparse = tmp_path / "sparse.csv"
    sparse.write_text("time,cop\n" + "".join(f"{a:.2f},{b:.6f}\n" if i % 25 == 0 else f"{a:.2f},\n"
                                             for i, (a, b) in enumerate(zip(t, cop))))
    code, _out, err = run(capsys, "identify", "cip", "--data", sparse, "--height", "1.7", "--mass", "70",
                         "--missing", "allow")
    assert code == 2 and "80 measured COP samples; at least 100" in err, err


def test_a_real_trial_with_gaps_gives_the_complete_trials_estimate(capsys, tmp_path):
    """The real 100 Hz record, its first 30 s, with 3 % of it lost: eight runs of 0.05-0.15 s,
    half as empty cells and half as rows dropped from the file. The gapped fit must land
    within a fraction of a standard error of the complete one (3 % less data moves an
    estimate by about √0.03 ≈ 0.2 SE), and report the missing samples."""
    import pandas as pd

    table = pd.read_csv(REAL, sep="\t")
    table = table[table["Time[s]"] < 30.0].reset_index(drop=True)
    rng = np.random.default_rng(3)
    starts = np.sort(rng.choice(np.arange(100, 2800, 300), 8, replace=False)) + rng.integers(0, 200, 8)
    lengths = rng.permutation([5, 8, 10, 12, 12, 13, 15, 15])  # 90 samples, 3 % of 3000
    runs = [np.arange(a, a + n) for a, n in zip(starts, lengths)]
    gapped = table.copy()
    for run_ in runs[::2]:
        gapped.loc[run_, "COPx[cm]"] = np.nan
    gapped = gapped.drop(index=np.concatenate(runs[1::2]))
    complete_csv, gapped_csv = tmp_path / "complete.txt", tmp_path / "gapped.txt"
    table.to_csv(complete_csv, sep="\t", index=False)
    gapped.to_csv(gapped_csv, sep="\t", index=False, na_rep="")
    lost = int(sum(len(r) for r in runs))
    docs = {}
    gapped_extra = ["--missing", "allow", "--plot", tmp_path / "gapped.png"]  # the plot too, through the gaps
    for name, path, extra in (("complete", complete_csv, []), ("gapped", gapped_csv, gapped_extra)):
        out_json = tmp_path / f"{name}.json"
        code, _out, err = run(capsys, "identify", "cip", "--data", path, *BODY, "--method", "kalman-ml",
                             # model-based standard errors: less data must not give sharper ones, a property
                             # the sandwich's own sampling noise would blur
                             "--noise", "paper", "--errors", "model", *extra, "--out", out_json)
        assert code == 0, err
        docs[name] = json.loads(out_json.read_text())
    full, holes = docs["complete"], docs["gapped"]
    assert holes["info"]["missing_samples"] == lost and full["info"]["missing_samples"] == 0
    assert (tmp_path / "gapped.png").stat().st_size > 10_000
    assert holes["num_nodes"] == full["num_nodes"] == len(table)
    for k in ("KP", "KI", "KD", "A", "B", "sigma"):
        se = full["standard_errors"][k]
        assert abs(holes["parameters"][k] - full["parameters"][k]) < 0.75 * se, k
        assert holes["standard_errors"][k] >= 0.95 * se, k  # less data: not sharper (up to the shift)


def test_a_cop_in_centimetres_read_as_metres_is_refused(capsys, tmp_path):
    """The real record's COPx is in cm; without --unit cop=cm (and with the unit dropped from
    the header) it would be read as metres: a COP spanning metres is refused, not fitted."""
    import pandas as pd

    table = pd.read_csv(REAL, sep="\t").rename(columns={"Time[s]": "time", "COPx[cm]": "cop"})
    path = tmp_path / "no_units.csv"
    table[["time", "cop"]].iloc[:3000].to_csv(path, index=False)
    code, _out, err = run(capsys, "identify", "cip", "--data", path, "--height", "1.575", "--mass", "54.2")
    assert code == 2 and "spans" in err and "is it in cm or mm? (--unit cop=cm)" in err, err
    assert len(err.strip().splitlines()) == 1
    code, _out, err = run(capsys, "identify", "cip", "--data", path, "--height", "1.575", "--mass", "54.2",
                         "--unit", "cop=cm", "--noise", "sway", "--controller", "PID", "--out", tmp_path / "r.json")
    assert code == 0, err


@pytest.mark.parametrize("dt", [0.01, 0.02])
def test_the_sway_models_disturbance_is_a_continuous_time_intensity(dt):
    """T_d + B·T_d' = w(t), E w(t)w(s) = q_d² δ(t − s): the discretised disturbance has the
    stationary variance q_d²/(2B) of the continuous process at any sample rate (the paper model's
    unit sample held over each step does not: its variance scales with the step)."""
    theta = {"KP": 1000.0, "KI": 20.0, "KD": 200.0, "q_d": 12.0, "B": 4.0, "f_c": 5.0, "sigma": 1e-5}
    model = cip.ml_model("PID", dt=dt, body=cip.body(1.575, 54.2), noise="sway")
    assert model.parameter_names == ("KP", "KI", "KD", "q_d", "B", "f_c", "sigma")
    d = model.discretize(theta)
    td = 3  # u, v, w, td, then the low-pass states
    phi, q = d["Phi"][td, td], d["Q"][td, td]
    # the OU closed form of the torque's noise over one step, exact (Van Loan), not the held q_d²/dt
    B = theta["B"]
    assert phi == pytest.approx(np.exp(-dt / B), rel=1e-13)
    assert q == pytest.approx(theta["q_d"] ** 2 / (2 * B) * (1 - np.exp(-2 * dt / B)), rel=1e-9)
    assert q / (1 - phi**2) == pytest.approx(theta["q_d"] ** 2 / (2 * B), rel=1e-9)


def test_a_real_trial_by_the_sway_model_and_its_prediction(capsys, tmp_path):
    """``--noise sway`` (not the default): the fit and the prediction run; with σ at the record's
    floor its shallower low-pass leaves σ on its physical bound, a warning, not a failure."""
    out_json, pred = tmp_path / "r.json", tmp_path / "p.csv"
    code, out, err = run(capsys, "identify", "cip", "--data", REAL, *BODY, "--noise", "sway", "--window", "0:30",
                         "--controller", "PID", "--out", out_json)  # the noise model under test, one controller
    assert code == 0, err
    doc = json.loads(out_json.read_text())
    assert doc["info"]["noise_model"] == "sway" and "noise model sway" in out
    assert {"q_d", "B", "f_c", "sigma"} <= set(doc["parameters"]) and 0.5 < doc["parameters"]["f_c"] < 45
    # a real subject's standard errors are the robust ones, and the report says so
    robust = doc["info"]["robust_standard_errors"]
    assert "standard errors: robust" in out and "sandwich" in doc["info"]["standard_errors"]
    for k, se in robust["standard_errors"].items():
        assert doc["standard_errors"][k] == pytest.approx(se)
        assert se >= robust["model_based_standard_errors"][k] * (1 - 1e-12)
    code, out, err = run(capsys, "predict", out_json, "--data", REAL, "--column", "cop=COPx", "--window", "30:60",
                         "--horizon", "0.1", "--out", pred)
    assert code == 0, err
    table = np.loadtxt(pred, delimiter=",", skiprows=1)
    assert table.shape == (2990, 4)
    persistence = float(out.split("(persistence ")[1].split(")")[0])
    model = float(out.split("log score ")[1].split(" nats")[0])
    assert model > persistence + 0.3  # benchmarks/README.md: +0.62 nat a sample on this trial
    # the intervals hold the estimate's uncertainty: wider than the plug-in filter's, by its share
    import colloc as co

    result = co.Result.from_json(out_json)
    trial = cip.load_trial(str(REAL), columns={"cop": "COPx"})
    used = cip.prediction_model(result, trial)
    assert used.covariance is not None and set(used.covariance[0]) == {
        k for k, v in doc["standard_errors"].items() if v is not None and np.isfinite(v) and k != "cop_offset"}
    y = np.asarray(trial["cop"]) - used.offset
    _, plug = k_step_predictions(used.model, y, dict(used.theta), 10)
    rows = np.searchsorted(trial.time, table[:, 0])
    assert np.all(table[:, 3] >= plug[rows, 0] * (1 - 1e-12)) and np.any(table[:, 3] > plug[rows, 0] * 1.0001)


@pytest.mark.slow
def test_a_real_trial_by_the_default_model_and_its_prediction(capsys, tmp_path):
    """Issue 17's held-out test on one trial by the default model for a real subject (``sway-lp``,
    the held-out choice among the controllers): fit 0-30 s, predict 30-60 s 0.1 s ahead."""
    out_json, pred = tmp_path / "r.json", tmp_path / "p.csv"
    code, out, err = run(capsys, "identify", "cip", "--data", REAL, *BODY, "--window", "0:30", "--out", out_json)
    assert code == 0, err
    doc = json.loads(out_json.read_text())
    assert doc["info"]["noise_model"] == "sway-lp" and "noise model sway-lp" in out
    assert {"q_d", "B", "tau_m", "sigma"} <= set(doc["parameters"])
    assert 2e-9 < doc["parameters"]["sigma"] < 4e-9  # the files' rounding noise, 1e-8 m / √12
    code, out, err = run(capsys, "predict", out_json, "--data", REAL, "--column", "cop=COPx", "--window", "30:60",
                         "--horizon", "0.1", "--out", pred)
    assert code == 0, err
    table = np.loadtxt(pred, delimiter=",", skiprows=1)
    inside = np.abs(table[:, 1] - table[:, 2]) <= 1.96 * table[:, 3]
    assert 0.90 <= inside.mean() <= 0.99  # benchmarks/README.md: 0.967 on this trial (PD-delay chosen)
    persistence = float(out.split("(persistence ")[1].split(")")[0])
    model = float(out.split("log score ")[1].split(" nats")[0])
    assert model > persistence + 0.8  # benchmarks/README.md: +1.18 nat a sample on this trial


def test_the_sway_held_variant_is_the_zero_order_hold_of_the_same_density():
    """``noise="sway-held"``: the disturbance noise held over each sample with variance q_d²/dt, so
    the torque's noise over one step is (q_d/B)²/dt · (∫₀^dt e^{−τ/B} dτ)², not the OU closed form
    of ``"sway"``; both give the same parameters and matrices A, C."""
    theta = {"KP": 1000.0, "KI": 20.0, "KD": 200.0, "q_d": 12.0, "B": 0.05, "f_c": 5.0, "sigma": 1e-5}
    dt = 0.02
    held = cip.ml_model("PID", dt=dt, body=cip.body(1.575, 54.2), noise="sway-held")
    exact = cip.ml_model("PID", dt=dt, body=cip.body(1.575, 54.2), noise="sway")
    assert held.noise == "held" and exact.noise == "continuous"
    assert held.parameter_names == exact.parameter_names
    np.testing.assert_allclose(held.continuous(theta)["A"], exact.continuous(theta)["A"])
    td, B, q = 3, theta["B"], theta["q_d"]
    zoh = (q / B) ** 2 / dt * (B * (1 - np.exp(-dt / B))) ** 2
    ou = q**2 / (2 * B) * (1 - np.exp(-2 * dt / B))
    assert held.discretize(theta)["Q"][td, td] == pytest.approx(zoh, rel=1e-9)
    assert exact.discretize(theta)["Q"][td, td] == pytest.approx(ou, rel=1e-9)
    assert abs(zoh / ou - 1) > 0.01  # B comparable to dt: the two differ (by 1.3 % here)


@pytest.mark.slow  # four controllers on the halves of 30 s, then the chosen one on the whole (about 30 s of CPU)
def test_a_real_subjects_default_is_the_comparison_and_its_choice(capsys, tmp_path):
    """`colloc identify cip --height --mass` with no --controller: the comparison table of the four
    controllers and the references is printed, and the result is the controller it marks, chosen
    by its rule: it succeeded and is plausible where any other is, and no candidate with fewer free
    parameters scored within one standard error of the best."""
    out_json = tmp_path / "r.json"
    code, out, err = run(capsys, "identify", "cip", "--data", REAL, *BODY, "--window", "0:30", "--out", out_json)
    assert code == 0, err
    doc = json.loads(out_json.read_text())
    selection = doc["info"]["model_selection"]
    chosen = selection["best"]
    assert chosen in cip.CONTROLLERS and selection["ranking"][0] == chosen
    # the chosen one, or the next in the ranking if its whole-record fit failed or was implausible
    fitted = selection["fitted"]
    assert doc["info"]["controller"] == fitted and fitted in selection["ranking"]
    tried = [f.split(" (")[0] for f in selection["whole_record_failures"]]
    if doc["success"] and "implausible" not in [w["code"] for w in doc["warnings"]]:
        # each one before it in the ranking failed, was implausible, or was skipped as implausible on the half
        before = selection["ranking"][:selection["ranking"].index(fitted)]
        assert all(b in tried or not selection["table"][b]["plausible"] for b in before)
    assert "held-out comparison" in out and f"chosen: {chosen} (" in out and "AR(20)" in out
    (line,) = [ln for ln in out.splitlines() if ln.startswith(chosen + " ") and ln.endswith("←")]
    table = selection["table"]
    models = {k: r for k, r in table.items() if r["kind"] == "model"}
    assert set(models) == set(cip.CONTROLLERS) and all(r["cpu_s"] > 0 for r in models.values())
    row = models[chosen]
    assert row["success"] and (row["plausible"] or not any(r["success"] and r["plausible"] for r in models.values()))
    for name, r in models.items():
        if r["success"] and r["plausible"] == row["plausible"] and r["free"] < row["free"]:
            assert r["deficit"] > r["deficit_se"], name  # a simpler one within 1 SE would have been chosen
    for ref in ("persistence", "AR(20)"):
        assert table[ref]["kind"] == "reference"
