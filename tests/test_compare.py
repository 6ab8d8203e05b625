"""`colloc.compare` and `colloc compare`: runs per (method, start), the comparison.json
contract (docs/contracts.md §3), the figures, the table, and the command's exit codes.

Kept short: 1 s of pendulum data (101 samples); single shooting with CVODES takes a few
seconds per run, so only the library comparison and one `identify` run use it.
"""

from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest

import colloc as co
from colloc.cli import BASELINES, METHODS, main, make_method, method_names
from colloc.studies.compare import Comparison, compare, initial_guesses
from colloc_problems import pendulum

# one worker builds the module's costly fixtures once (xdist would build them on both)
pytestmark = pytest.mark.xdist_group("compare")

RUN_KEYS = {"method", "start", "success", "iterations", "time_s", "objective", "parameters"}
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def trial():
    return pendulum.simulate_trial(duration=1.0, noise_std=0.01, seed=3, name="short.csv")


@pytest.fixture(scope="module")
def csv(trial, tmp_path_factory):
    path = tmp_path_factory.mktemp("compare-data") / "short.csv"
    trial.to_csv(path)
    return path


@pytest.fixture(scope="module")
def comparison(trial):
    """Midpoint collocation vs adjoint single shooting, 2 starts (the costly fixture)."""
    events = []
    cmp = compare(pendulum.problem([trial]),
                  {"midpoint": co.Midpoint(), "shooting-adjoint": co.SingleShooting(co.Adjoint(), co.LBFGS())},
                  starts=2, seed=0, truth=pendulum.TRUE, progress=events.append)
    return cmp, events


@pytest.fixture(scope="module")
def written(comparison, tmp_path_factory):
    out = tmp_path_factory.mktemp("compare-out") / "cmp"
    return comparison[0].write(out)


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# ---- library --------------------------------------------------------------------------------
def test_one_run_per_method_and_start_from_the_same_guesses(comparison):
    cmp, events = comparison
    assert isinstance(cmp, Comparison)
    assert [(r.method, r.start) for r in cmp.runs] == [
        ("midpoint", 0), ("midpoint", 1), ("shooting-adjoint", 0), ("shooting-adjoint", 1)]
    # start 0 = the declared guess, start 1 drawn log-uniformly within the bounds
    guesses = {r.start: r.initial_guess for r in cmp.runs}
    assert guesses[0] == {"p": 1.0}
    assert 0.01 <= guesses[1]["p"] <= 1e4 and guesses[1]["p"] != 1.0
    for r in cmp.runs:
        assert r.initial_guess == guesses[r.start]
    # progress: before (result None) and after every run
    assert len(events) == 8 and events[0].result is None and events[1].result is cmp.runs[0].result
    assert {e.total for e in events} == {4}


def test_collocation_and_shooting_agree_where_both_converge(comparison):
    cmp, _ = comparison
    by = {(r.method, r.start): r.result for r in cmp.runs}
    assert by[("midpoint", 0)].success and by[("shooting-adjoint", 0)].success
    for start in (0, 1):
        a, b = by[("midpoint", start)], by[("shooting-adjoint", start)]
        if a.success and b.success:
            assert a.parameters["p"] == pytest.approx(b.parameters["p"], rel=1e-3)
    assert by[("midpoint", 0)].parameters["p"] == pytest.approx(10.0, rel=0.02)


def test_table_columns_and_values(comparison):
    cmp, _ = comparison
    table = cmp.table()
    assert isinstance(table, pd.DataFrame) and len(table) == 4
    for col in ("method", "start", "solver_converged", "success", "status", "iterations", "time_s", "objective",
                "max_error_%", "time_ratio"):
        assert col in table.columns, col
    ok = table[table.success]
    assert ok.time_ratio.min() == pytest.approx(1.0)
    assert table["max_error_%"].max() < 5.0
    text = cmp.format_table()
    assert "shooting-adjoint" in text and "time_ratio" in text


def test_comparison_json_has_the_contract_keys(comparison, written):
    cmp, _ = comparison
    doc = json.loads(written["json"].read_text())
    assert written["json"].name == "comparison.json"
    assert doc["problem"] == "pendulum"
    assert len(doc["runs"]) == 4
    for run_doc, r in zip(doc["runs"], cmp.runs):
        assert RUN_KEYS <= set(run_doc), RUN_KEYS - set(run_doc)
        assert run_doc["method"] == r.method and run_doc["start"] == r.start
        assert isinstance(run_doc["success"], bool) and isinstance(run_doc["iterations"], int)
        assert run_doc["time_s"] > 0 and math.isfinite(run_doc["objective"])
        assert set(run_doc["parameters"]) == {"p"}
        # extras: the solver's ending apart from the fit's judgement
        assert run_doc["solver_converged"] is True and run_doc["status"] == r.result.status
        assert run_doc["solver_status"] == r.result.solver_status
        assert run_doc["initial_guess"] == r.initial_guess
        assert run_doc["parameter_error"] == pytest.approx(abs(r.result.parameters["p"] / 10.0 - 1))
        assert run_doc["time_ratio_to_fastest"] > 0
    assert cmp.to_dict()["runs"][0].keys() == doc["runs"][0].keys()


def test_figures_are_written(written):
    for kind in ("objective_history", "estimates"):
        path = written[kind]
        assert path.name == f"{kind}.png"
        data = path.read_bytes()
        assert data.startswith(PNG) and len(data) > 15_000, (kind, len(data))


def test_collocation_history_time_is_spread_evenly(comparison):
    cmp, _ = comparison
    colloc_run = next(r for r in cmp.runs if r.method == "midpoint")
    shoot_run = next(r for r in cmp.runs if r.method == "shooting-adjoint")
    _, obj, t, estimated = colloc_run.history()
    assert estimated and len(t) == len(obj) == colloc_run.result.iterations + 1
    timings = colloc_run.result.timings
    assert t[-1] == pytest.approx(timings["build_s"] + timings["solve_s"])
    assert colloc_run.time_s >= t[-1]  # the whole call: start, covariance, simulation too
    assert all(d == pytest.approx(t[1] - t[0]) for d in (t[1:] - t[:-1]))
    _, obj_s, t_s, estimated_s = shoot_run.history()
    assert not estimated_s and len(t_s) == len(obj_s) and (t_s[1:] >= t_s[:-1]).all()


def test_initial_guesses_rules():
    m = co.Model("toy")
    x = m.state("x")
    a = m.parameter("a", bounds=(0.1, 10.0), guess=1.0)    # finite positive: log-uniform
    b = m.parameter("b", bounds=(-1.0, 1.0), guess=0.0)    # finite: uniform
    c = m.parameter("c", guess=4.0)                        # unbounded: guess ± 50 %
    m.set_der(x, -a * x + b + c)
    prob = co.Problem(m, co.Trial([0.0, 0.1, 0.2], {"x": [1.0, 0.9, 0.8]}), fit={"x": 1.0})
    starts = initial_guesses(prob, 50, seed=1)
    assert starts[0] == {"a": 1.0, "b": 0.0, "c": 4.0}
    assert starts == initial_guesses(prob, 50, seed=1)  # seeded
    assert starts != initial_guesses(prob, 50, seed=2)
    for s in starts[1:]:
        assert 0.1 <= s["a"] <= 10.0 and -1.0 <= s["b"] <= 1.0 and 2.0 <= s["c"] <= 6.0
    below_one = sum(s["a"] < 1.0 for s in starts[1:])
    assert 10 < below_one < 40  # log-uniform: about half below the geometric mean 1


def test_library_errors(trial):
    prob = pendulum.problem([trial])
    with pytest.raises(co.OptionsError, match="non-empty mapping"):
        compare(prob, {})
    with pytest.raises(co.OptionsError, match="'mid' is 'midpoint', expected a method object"):
        compare(prob, {"mid": "midpoint"})
    with pytest.raises(co.OptionsError, match=r"starts=0.*integer >= 1"):
        compare(prob, {"mid": co.Midpoint()}, starts=0)
    with pytest.raises(co.OptionsError, match="unknown parameter.*q; parameters: p"):
        compare(prob, {"mid": co.Midpoint()}, truth={"q": 1.0})
    with pytest.raises(co.OptionsError, match="needs a colloc.Problem"):
        compare(trial, {"mid": co.Midpoint()})


# ---- command line -----------------------------------------------------------------------------
def test_make_method_maps_every_name():
    assert method_names() == [*METHODS, *BASELINES]
    for name in method_names():
        assert isinstance(make_method(name), co.AbstractMethod)
    fwd, steep, ipopt = (make_method(f"shooting-{k}") for k in ("forward", "steepest", "ipopt"))
    assert isinstance(fwd.gradient, co.Forward) and isinstance(fwd.optimizer, co.LBFGS)
    assert isinstance(steep.gradient, co.Adjoint) and isinstance(steep.optimizer, co.SteepestDescent)
    assert isinstance(ipopt.optimizer, co.ReducedIpopt)
    assert isinstance(make_method("multiple-shooting"), co.MultipleShooting)
    assert make_method("midpoint", 50).num_nodes == 50
    with pytest.raises(co.CollocInputError, match="--nodes applies to the collocation methods"):
        make_method("shooting-adjoint", 50)


def test_cli_compare_succeeds(capsys, csv, tmp_path):
    out = tmp_path / "cmp"
    code, stdout, err = run(capsys, "compare", "pendulum", "--data", csv, "--methods", "midpoint,trapezoidal",
                            "--starts", "2", "--seed", "4", "--out", out)
    assert code == 0, err
    # start 1 (seed 4, drawn in p's search range 0.01-1e4) lands in another basin: converged, fit rejected
    assert re.search(r"^\s*trapezoidal\s+0\s+True\s+True\s+Solve_Succeeded\s+\d+", stdout, re.MULTILINE), stdout
    assert re.search(r"^\s*trapezoidal\s+1\s+True\s+False\s+poor_fit\s+\d+", stdout, re.MULTILINE), stdout
    assert "4/4 runs converged, 2 succeeded" in stdout
    assert "max_error_%" in stdout and str(out / "comparison.json") in stdout
    doc = json.loads((out / "comparison.json").read_text())
    assert [(r["method"], r["start"]) for r in doc["runs"]] == [
        ("midpoint", 0), ("midpoint", 1), ("trapezoidal", 0), ("trapezoidal", 1)]
    assert doc["seed"] == 4 and doc["truth"] == {"p": 10.0}
    assert (out / "objective_history.png").stat().st_size > 10_000
    assert (out / "estimates.png").stat().st_size > 10_000


def test_cli_compare_on_workers_equals_the_serial_run(capsys, csv, tmp_path):
    args = ["compare", "pendulum", "--data", csv, "--methods", "midpoint,trapezoidal", "--starts", "2",
            "--seed", "4"]
    code, _, err = run(capsys, *args, "--out", tmp_path / "serial")
    assert code == 0, err
    code, stdout, err = run(capsys, *args, "--workers", "2", "--out", tmp_path / "parallel")
    assert code == 0, err
    serial = json.loads((tmp_path / "serial" / "comparison.json").read_text())
    parallel = json.loads((tmp_path / "parallel" / "comparison.json").read_text())
    assert [(r["method"], r["start"]) for r in parallel["runs"]] == [(r["method"], r["start"]) for r in serial["runs"]]
    for a, b in zip(serial["runs"], parallel["runs"]):
        assert a["parameters"] == b["parameters"] and a["objective"] == b["objective"]
    assert parallel["notes"]["parallel"] == "2 local worker process(es)"


@pytest.mark.parametrize("extra, message", [
    (["--workers", "0"], "--workers must be >= 1"),
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "not allowed with argument"),
    (["--scheduler", "tcp://127.0.0.1:1"], "cannot reach the Dask scheduler"),
])
def test_cli_compare_bad_parallel_options_exit_2(capsys, csv, tmp_path, extra, message):
    code, out, err = run(capsys, "compare", "pendulum", "--data", csv, "--methods", "midpoint",
                         *extra, "--out", tmp_path / "cmp")
    assert code == 2, err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2, err  # argparse adds its usage line


def test_cli_compare_exit_1_when_no_run_succeeds(capsys, csv, tmp_path):
    code, stdout, err = run(capsys, "compare", "pendulum", "--data", csv, "--methods", "midpoint",
                            "--max-iter", "1", "--out", tmp_path / "cmp")
    assert code == 1, err
    assert re.search(r"^\s*midpoint\s+0\s+False\s+False\s+Maximum_Iterations_Exceeded", stdout, re.MULTILINE), stdout
    assert "no run succeeded" in err
    assert (tmp_path / "cmp" / "comparison.json").is_file()  # written all the same


def test_cli_compare_exit_0_when_some_runs_fail(capsys, csv, tmp_path):
    """A comparison in which some starts fail (a local minimum, an iteration limit) is the
    result the command exists to show: exit 0 once it is written and one run succeeded."""
    code, stdout, err = run(capsys, "compare", "pendulum", "--data", csv, "--methods", "midpoint",
                            "--starts", "3", "--seed", "4", "--max-iter", "6", "--out", tmp_path / "cmp")
    doc = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    succeeded = [r["success"] for r in doc["runs"]]
    assert any(succeeded) and not all(succeeded), succeeded  # the case this test is about: mixed
    assert code == 0, err
    failed = next(r for r in doc["runs"] if not r["success"])
    assert failed["solver_converged"] is False and failed["status"] == "Maximum_Iterations_Exceeded"


def test_cli_compare_names_converged_and_accepted_apart(capfd, tmp_path):
    """Noise four times the declared σ: every solve converges, no fit is accepted (poor_fit).
    The table, the JSON and the figures' legends say both; no run succeeded: exit 1."""
    noisy = tmp_path / "noisy.csv"
    pendulum.simulate_trial(duration=1.0, noise_std=0.2, seed=3).to_csv(noisy)
    code = main(["compare", "pendulum", "--data", str(noisy), "--methods", "midpoint,trapezoidal",
                 "--out", str(tmp_path / "cmp")])
    stdout, err = capfd.readouterr()  # the progress lines go to the terminal's file descriptor
    assert code == 1, err
    assert "2/2 runs converged, 0 succeeded" in stdout, stdout
    assert re.search(r"^\s*midpoint\s+0\s+True\s+False\s+poor_fit\s+\d+", stdout, re.MULTILINE), stdout
    assert "converged, fit NOT accepted (poor_fit)" in err
    doc = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    for r in doc["runs"]:
        assert RUN_KEYS <= set(r)
        assert (r["solver_converged"], r["success"], r["status"]) == (True, False, "poor_fit")
        assert r["solver_status"] == "Solve_Succeeded"


def test_figure_legends_tell_a_rejected_fit_from_a_failed_solver(comparison):
    from dataclasses import replace

    cmp, _ = comparison
    runs = list(cmp.runs)
    runs[1] = replace(runs[1], result=replace(runs[1].result, success=False, status="poor_fit"))
    runs[3] = replace(runs[3], result=replace(runs[3].result, success=False, status="Maximum_Iterations_Exceeded",
                                              solver_status="Maximum_Iterations_Exceeded"))
    mixed = replace(cmp, runs=runs)
    fig = mixed.plot_estimates()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    labels = {t.get_text() for legend in legends for t in legend.get_texts()}
    assert {"midpoint", "midpoint (converged, fit not accepted)", "shooting-adjoint",
            "shooting-adjoint (solver did not converge)"} <= labels, labels
    title = mixed.plot_objective_history()._suptitle.get_text()
    assert "× = solver did not converge" in title and "○ = converged, fit not accepted" in title


def test_cli_compare_unknown_method_exit_2(capsys, csv, tmp_path):
    code, out, err = run(capsys, "compare", "pendulum", "--data", csv, "--methods", "midpoint,bogus",
                         "--out", tmp_path / "cmp")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "bogus" in err and all(name in err for name in method_names())
    assert not (tmp_path / "cmp").exists()


def test_cli_compare_missing_out_exit_2(capsys, csv):
    code, out, err = run(capsys, "compare", "pendulum", "--data", csv, "--methods", "midpoint")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--out" in err, err


def test_cli_compare_bad_starts_exit_2(capsys, csv, tmp_path):
    code, _, err = run(capsys, "compare", "pendulum", "--data", csv, "--methods", "midpoint",
                       "--starts", "0", "--out", tmp_path / "cmp")
    assert code == 2 and "--starts must be >= 1" in err


def test_cli_identify_with_shooting(capsys, csv):
    code, out, err = run(capsys, "identify", "pendulum", "--data", csv, "--method", "shooting-adjoint")
    assert code == 0, err
    assert "single-shooting(adjoint, " in out
    m = re.search(r"^p\s+(\d+\.\d+)\s+\d", out, re.MULTILINE)
    assert m, out
    assert float(m.group(1)) == pytest.approx(10.0, rel=0.05)


def test_cli_identify_unknown_method_lists_shooting(capsys, csv):
    code, _, err = run(capsys, "identify", "pendulum", "--data", csv, "--method", "nope")
    assert code == 2 and "shooting-adjoint" in err and "multiple-shooting" in err
