"""`colloc identify cip --method kalman-ml [--controller ...]`: the exact Kalman ML of a real COP
trial through the CLI, its refusals, and an honest failure when the model cannot fit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from colloc.cli import main
from colloc.inference.kalman import negative_log_likelihood, one_step_predictions
from colloc_problems import cip

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
                         "--out", out_json)
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
    # K_P capped far below what the subject uses: the fit ends on the bound -> exit 1, named status
    code, out, err = run(capsys, "identify", "cip", "--data", REAL, *BODY, "--method", "kalman-ml",
                         "--bounds", "KP=:600", "--guess", "KP=550", "--json")
    assert code == 1
    doc = json.loads(out)
    assert not doc["success"] and doc["status"] in ("parameter_at_bound", "unstable", "not_identifiable")
    assert any(w["code"] in ("parameter_at_bound", "unstable") for w in doc["warnings"])


@pytest.mark.parametrize("extra, message", [
    (["--method", "kalman-ml", "--controller", "PIDD"], "--controller PIDD: one of PID, PD-delay, PID-delay"),
    (["--method", "radau2", "--controller", "PD-delay"], "--controller applies to --method kalman-ml"),
    (["--method", "kalman-ml", "--nodes", "100"], "--nodes does not apply to --method kalman-ml"),
    (["--method", "kalman-ml", "--data", ROOT / "data" / "bds" / "BDS00004.txt.gz"], "fits one trial at a time, got 2"),
    (["--method", "kalman-ml", "--guess", "tau=0.1"], "--guess: tau not allowed with --method kalman-ml"),
])
def test_refusals_are_one_line_exit_2(capsys, extra, message):
    code, out, err = run(capsys, "identify", "cip", "--data", REAL, *BODY, *extra)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_gaps_and_uneven_sampling_are_refused_by_name(capsys, tmp_path):
    t = np.arange(0.0, 20.0, 0.01)
    cop = 0.002 * np.sin(2 * np.pi * 0.3 * t)
    uneven = tmp_path / "uneven.csv"
    keep = np.ones(t.size, bool)
    keep[500:510] = False  # ten rows missing: a hole in time
    uneven.write_text("time,cop\n" + "".join(f"{a:.2f},{b:.6f}\n" for a, b in zip(t[keep], cop[keep])))
    code, out, err = run(capsys, "identify", "cip", "--data", uneven, "--height", "1.7", "--mass", "70")
    assert code == 2 and "not evenly sampled" in err and "t = 4.99 s to 5.1 s" in err, err
    holes = tmp_path / "holes.csv"
    holes.write_text("time,cop\n" + "".join(f"{a:.2f},{'' if 300 <= i < 305 else f'{b:.6f}'}\n"
                                             for i, (a, b) in enumerate(zip(t, cop))))
    code, out, err = run(capsys, "identify", "cip", "--data", holes, "--height", "1.7", "--mass", "70",
                         "--missing", "allow")
    assert code == 2 and "5 missing COP samples" in err, err
