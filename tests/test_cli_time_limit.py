"""`colloc identify --time-limit SECONDS`: one option for every problem (IPOPT's max_wall_time
for the library's collocation, the own fit's ``time_limit`` for a problem that transcribes
itself, refused by a problem whose fit has none)."""

from __future__ import annotations

import json

import pytest
from colloc_problems import pendulum
from colloc_problems._data import data_path

from colloc.cli import main


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def good_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "good.csv"
    pendulum.simulate_trial(duration=3.0, noise_std=0.01, seed=2).to_csv(path)
    return path


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_time_limit_not_above_zero_exits_2_in_one_line(capsys, good_csv, value):
    code, out, err = run(capsys, "identify", "pendulum", "--data", good_csv, "--time-limit", value)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--time-limit" in err and "Traceback" not in err


def test_the_time_limit_reaches_ipopt_for_a_library_problem(capsys, good_csv, tmp_path):
    out_json = tmp_path / "r.json"
    code, _out, err = run(capsys, "identify", "pendulum", "--data", good_csv, "--time-limit", "1e-9",
                          "--out", out_json)
    doc = json.loads(out_json.read_text())
    assert code == 1 and doc["status"] == "Maximum_WallTime_Exceeded" and not doc["success"], err
    code, _out, err = run(capsys, "identify", "pendulum", "--data", good_csv, "--time-limit", "600",
                          "--out", out_json)
    assert code == 0 and json.loads(out_json.read_text())["success"], err


def test_a_problem_whose_own_fit_has_no_time_limit_refuses_it_by_name(capsys):
    code, out, err = run(capsys, "identify", "cip", "--method", "kalman-ml", "--data",
                         data_path("cip", "cip_cop_only.csv"), "--time-limit", "5")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--time-limit" in err and "cip" in err


def test_the_time_limit_reaches_ipopt_for_a_hybrid_problem(capsys, tmp_path):
    # fes-muscle is a colloc.HybridProblem solved by co.solve: the budget is IPOPT's wall time
    out_json = tmp_path / "r.json"
    code, _out, err = run(capsys, "identify", "fes-muscle", "--data", data_path("fes_muscle", "clean_10hz.csv"),
                          "--time-limit", "1e-9", "--out", out_json)
    doc = json.loads(out_json.read_text())
    assert code == 1 and doc["status"] == "Maximum_WallTime_Exceeded" and not doc["success"], err
