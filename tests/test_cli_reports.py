"""What the command line shows must be true, complete and safe (issue 16).

Records are written here by hand (constant angles, pure noise) or by the pendulum generator;
every expectation is about what a user sees: exit codes, one-line errors before any work,
named diagnostics, standard errors that are null rather than 0 or NaN, files written.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import colloc.solving.solve as solve_module
from colloc.cli import main
from colloc.results.diagnostics import diagnose
from colloc.results.result import Result
from colloc_problems import pendulum

REPO = Path(__file__).resolve().parents[1]


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(code, err, expected_code=2):
    assert code == expected_code, err
    assert err.count("\n") == 1 and err.startswith("colloc: "), err
    assert "Traceback" not in err


def _pendulum_csv(path: Path, theta) -> Path:
    t = np.arange(0.0, 4.0, 0.01)
    pd.DataFrame({"time": t, "theta": np.broadcast_to(theta, t.shape)}).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def good_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "good.csv"
    pendulum.simulate_trial(duration=3.0, noise_std=0.01, seed=4).to_csv(path)
    return path


@pytest.fixture
def no_solve(monkeypatch):
    """Fail the test if a solve starts: the checks must come first."""
    def refuse(*a, **k):
        raise AssertionError("the solve started before the bad argument was refused")
    monkeypatch.setattr(solve_module, "solve", refuse)


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder nobody may write in (root ignores permissions; /proc refuses everyone)."""
    if os.geteuid() == 0:
        return Path("/proc")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


# ---- every check before the solve --------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["out-is-folder", "out-read-only", "out-no-folder", "out-suffix", "plot-suffix",
                                  "plot-read-only", "out-equals-plot"])
def test_identify_output_paths_are_checked_first(capsys, tmp_path, good_csv, no_solve, case):
    ro = _unwritable_folder(tmp_path)
    (tmp_path / "existing.json").mkdir()
    extra = {
        "out-is-folder": ["--out", tmp_path / "existing.json"],
        "out-read-only": ["--out", ro / "r.json"],
        "out-no-folder": ["--out", tmp_path / "nope" / "r.json"],
        "out-suffix": ["--out", tmp_path / "r.txt"],  # JSON in a .txt: refused
        "plot-suffix": ["--plot", tmp_path / "f.xyz"],
        "plot-read-only": ["--plot", ro / "f.png"],
        "out-equals-plot": ["--out", tmp_path / "f.png", "--plot", tmp_path / "f.png"],
    }[case]
    code, out, err = run(capsys, "identify", "pendulum", "--data", good_csv, *extra)
    _one_line_error(code, err)
    assert out == ""
    if case in ("out-suffix", "out-equals-plot"):
        assert "--out" in err and "unknown file type" in err and "use one of .json" in err, err


def test_demo_and_compare_output_folders_are_checked_first(capsys, tmp_path, good_csv, no_solve):
    ro = _unwritable_folder(tmp_path)
    code, _, err = run(capsys, "demo", "--out", ro / "demo")
    _one_line_error(code, err)
    assert "--out" in err
    afile = tmp_path / "a-file"
    afile.write_text("x")
    code, _, err = run(capsys, "compare", "pendulum", "--data", good_csv, "--methods", "midpoint", "--out", afile)
    _one_line_error(code, err)
    assert "not a folder" in err


def test_an_unexpected_error_is_one_line_not_a_traceback(capsys, good_csv, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("something inside broke\nwith a second line")
    monkeypatch.setattr(solve_module, "solve", broken)
    code, out, err = run(capsys, "identify", "pendulum", "--data", good_csv)
    _one_line_error(code, err, expected_code=1)
    assert "internal error: RuntimeError: something inside broke" in err


# ---- honest reports ---------------------------------------------------------------------------------------
def test_constant_zero_record_has_null_standard_errors_and_named_warnings(capsys, tmp_path):
    data = _pendulum_csv(tmp_path / "c0.csv", 0.0)
    out_json = tmp_path / "r.json"
    code, out, err = run(capsys, "identify", "pendulum", "--data", data, "--out", out_json)
    doc = json.loads(out_json.read_text())
    assert doc["standard_errors"]["p"] is None  # never 0, never NaN
    codes = {w["code"] for w in doc["warnings"]}
    assert {"not_identifiable", "constant_signal"} <= codes, doc["warnings"]
    assert "warning [not_identifiable]" in out and "p" in out
    assert "nan" not in out.lower().replace("n/a", "")


def test_parameter_on_a_bound_is_reported(capsys, tmp_path):
    data = _pendulum_csv(tmp_path / "c05.csv", 0.5)
    code, out, err = run(capsys, "identify", "pendulum", "--data", data, "--json")
    doc = json.loads(out)
    at = [w for w in doc["warnings"] if w["code"] == "parameter_at_bound"]
    assert at and at[0]["parameters"] == ["p"]
    assert doc["parameters"]["p"] == pytest.approx(0.01, rel=1e-3)  # the declared lower bound
    assert all(v is None or math.isfinite(v) for s in doc["simulation"].values() for v in s["nrmse"].values())


def test_pure_noise_two_link_keeps_library_output_off_the_terminal(capsys, tmp_path):
    rng = np.random.default_rng(1)
    t = np.arange(0.0, 3.0, 0.01)
    cols = ["theta_a", "theta_h", "omega_a", "omega_h", "platform_acc"]
    pd.DataFrame({"time": t, **{c: rng.normal(size=t.size) for c in cols}}).to_csv(tmp_path / "n.csv", index=False)
    code, out, err = run(capsys, "identify", "two-link", "--data", tmp_path / "n.csv")
    assert code == 1  # never a success
    foreign = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("colloc:")
               and not ln.lstrip().startswith("iter ")]
    assert foreign == [], foreign
    assert "FAILED" in out and "warning [" in out


def test_json_and_plot_are_both_written(capsys, tmp_path, good_csv):
    fig = tmp_path / "fit.svg"
    code, out, err = run(capsys, "identify", "pendulum", "--data", good_csv, "--json", "--plot", fig)
    assert code == 0
    doc = json.loads(out)  # stdout holds the document and nothing else
    assert doc["parameters"]["p"] == pytest.approx(10, rel=0.02)
    assert fig.read_text().lstrip().startswith("<?xml") and "figure written" in err


def test_timings_are_the_whole_call(capsys, good_csv):
    code, out, _ = run(capsys, "identify", "pendulum", "--data", good_csv, "--json")
    t = json.loads(out)["timings"]
    parts = sum(t[k] for k in ("start_s", "build_s", "solve_s", "postprocess_s"))
    assert t["total_s"] >= parts and t["total_s"] < 5 * parts + 1.0
    # the simulation check runs beside the standard errors: each inside the post-processing
    assert 0 < t["covariance_s"] <= t["postprocess_s"] and 0 < t["simulation_s"] <= t["postprocess_s"]


def test_the_command_adds_its_import_and_write_phases(capsys, good_csv, tmp_path):
    """In process the libraries are already imported: the import phase is then short, yet
    measured; the write phase is there when a document is written (--out)."""
    import time

    out_json = tmp_path / "r.json"
    start = time.perf_counter()
    code, out, _ = run(capsys, "identify", "pendulum", "--data", good_csv, "--out", out_json)
    wall = time.perf_counter() - start
    t = json.loads(out_json.read_text())["timings"]
    assert code == 0 and 0 < t["import_s"] < wall and 1e-7 < t["write_s"] < wall  # a time, not the placeholder
    assert json.loads(out_json.read_text())["timings"] == Result.from_json(out_json).timings
    assert t["import_s"] + t["total_s"] + t["write_s"] <= wall
    code, out, _ = run(capsys, "identify", "pendulum", "--data", good_csv, "--json")
    assert "import_s" in json.loads(out)["timings"] and "write_s" not in json.loads(out)["timings"]


def test_the_figure_is_timed_in_the_document_and_a_failed_figure_keeps_it(capsys, good_csv, tmp_path, monkeypatch):
    """--plot is drawn before the document is written, so the document has its time (plot_s);
    total_s stays the solve call's (README "timings"): the parts add up within the command."""
    import time

    import colloc.results.plotting as plotting

    out_json, fig = tmp_path / "r.json", tmp_path / "f.png"
    start = time.perf_counter()
    code, out, _ = run(capsys, "identify", "pendulum", "--data", good_csv, "--out", out_json, "--plot", fig)
    wall = time.perf_counter() - start
    t = json.loads(out_json.read_text())["timings"]
    assert code == 0 and fig.read_bytes()[:4] == b"\x89PNG" and 0 < t["plot_s"] < wall
    assert t["import_s"] + t["total_s"] + t["plot_s"] + t["write_s"] <= wall
    code, out, _ = run(capsys, "identify", "pendulum", "--data", good_csv, "--json", "--plot", tmp_path / "g.png")
    assert code == 0 and json.loads(out)["timings"]["plot_s"] > 0

    def broken(*a, **k):
        raise RuntimeError("the figure broke")
    monkeypatch.setattr(plotting, "plot_fit", broken)
    code, out, err = run(capsys, "identify", "pendulum", "--data", good_csv, "--out", tmp_path / "kept.json",
                         "--plot", tmp_path / "h.png")
    _one_line_error(code, err, expected_code=1)
    assert "internal error: RuntimeError: the figure broke" in err
    kept = json.loads((tmp_path / "kept.json").read_text())
    assert kept["success"] and kept["timings"]["plot_s"] >= 0 and not (tmp_path / "h.png").exists()


def test_matrix_gains_carry_their_own_units_and_meaning(capsys):
    code, out, err = run(capsys, "identify", "two-link", "--data", REPO / "data" / "two_link" / "two_link_seed.csv",
                         "--nodes", "400", "--json")
    doc = json.loads(out)
    assert doc["units"]["k_00"] == "N·m/rad" and doc["units"]["k_13"] == "N·m·s/rad"
    assert doc["descriptions"]["k_02"] == "ankle torque from ω_a"
    assert doc["descriptions"]["k_11"] == "hip torque from θ_h"


# ---- parity with the API ----------------------------------------------------------------------------------
def test_same_file_names_in_two_folders_are_two_trials(capsys, tmp_path):
    for sub, theta0 in (("s1", 1.0), ("s2", 0.6)):
        (tmp_path / sub).mkdir()
        pendulum.simulate_trial(duration=2.0, theta0=theta0, noise_std=0.01, seed=3).to_csv(tmp_path / sub / "trial.csv")
    code, out, err = run(capsys, "identify", "pendulum", "--data", tmp_path / "s1" / "trial.csv",
                         "--data", tmp_path / "s2" / "trial.csv", "--json")
    assert code == 0, err
    assert sorted(json.loads(out)["trajectories"]) == ["s1/trial.csv", "s2/trial.csv"]
    code, out, err = run(capsys, "identify", "pendulum", "--data", tmp_path / "s1", "--data", tmp_path / "s2",
                         "--name", "first", "--name", "second", "--json")
    assert code == 0, err
    assert sorted(json.loads(out)["trajectories"]) == ["first", "second"]


def test_guess_bounds_and_fit_weight(capsys, good_csv):
    code, out, err = run(capsys, "identify", "pendulum", "--data", good_csv, "--bounds", "p=:5", "--guess", "p=2",
                         "--json")
    doc = json.loads(out)
    assert doc["initial_parameters"]["p"] == 2.0
    assert doc["parameters"]["p"] == pytest.approx(5.0, rel=1e-4)  # true p = 10 lies outside
    assert "parameter_at_bound" in {w["code"] for w in doc["warnings"]}
    _, out1, _ = run(capsys, "identify", "pendulum", "--data", good_csv, "--json")
    _, out2, _ = run(capsys, "identify", "pendulum", "--data", good_csv, "--fit-weight", "theta=1", "--json",
                     "--absolute-sigma")
    a, b = json.loads(out1), json.loads(out2)
    # weight 1 instead of 1/0.01²; without rescaling the SE grows by 1/sqrt(weight ratio) × sqrt(1/s²)
    assert b["parameters"]["p"] == pytest.approx(a["parameters"]["p"], rel=1e-6)
    assert b["standard_errors"]["p"] > 20 * a["standard_errors"]["p"]


@pytest.mark.parametrize("argv, fragment", [
    (["--guess", "q=3"], "unknown parameter"),
    (["--guess", "p=1_0"], "not a number"),
    (["--guess", "p"], "NAME=VALUE"),
    (["--bounds", "p=5:1"], "lower bound"),
    (["--bounds", "p=5"], "LO:HI"),
    (["--fit-weight", "phi=1"], "unknown signal"),
    (["--fit-weight", "theta=inf"], "finite"),
    (["--name", "a", "--name", "b"], "--name given 2"),
])
def test_bad_parity_options_exit_2(capsys, good_csv, no_solve, argv, fragment):
    code, out, err = run(capsys, "identify", "pendulum", "--data", good_csv, *argv)
    _one_line_error(code, err)
    assert fragment in err


def test_data_folder_without_csv_is_named(capsys, tmp_path, no_solve):
    code, _, err = run(capsys, "identify", "pendulum", "--data", tmp_path)
    _one_line_error(code, err)
    assert "holds no .csv" in err


def test_identify_help_lists_the_problems(capsys):
    with pytest.raises(SystemExit):
        main(["identify", "--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in ("pendulum", "two-link", "cip"))


def test_delay_margin_refuses_underscored_numbers(capsys, tmp_path):
    (tmp_path / "ji.csv").write_text("0,1\n1_0,-1\n")
    (tmp_path / "jd.csv").write_text("0,0\n-8,-1\n")
    code, _, err = run(capsys, "delay-margin", "--ji", tmp_path / "ji.csv", "--jd", tmp_path / "jd.csv")
    _one_line_error(code, err)
    assert "'1_0' is not a number" in err


def test_a_users_problems_module_does_not_shadow_ours(tmp_path):
    (tmp_path / "problems.py").write_text("raise SystemExit('the user module was imported')\n")
    proc = subprocess.run([sys.executable, "-m", "colloc.cli", "problems"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0 and "pendulum" in proc.stdout, proc.stderr


# ---- the diagnostics themselves ---------------------------------------------------------------------------
def test_diagnose_names_strongly_correlated_pairs():
    import colloc as co

    m = co.Model("m")
    x = m.state("x")
    a = m.parameter("a", bounds=(0, 10))
    b = m.parameter("b")
    m.set_der(x, -a * x + b)
    cov = pd.DataFrame([[1.0, 0.98, 0.0], [0.98, 1.0, 0.0], [0.0, 0.0, 1.0]], index=list("abc"), columns=list("abc"))
    fake = types.SimpleNamespace(parameters={"a": 10.0, "b": 1.0, "c": 0.0}, standard_errors={"a": 1.0, "b": 1.0, "c": 1.0},
                                 covariance=cov, info={}, simulation={"t": {"status": "diverged", "message": "blew up"}},
                                 measurements={})
    codes = {w["code"]: w for w in diagnose(fake, m)}
    assert codes["strong_correlation"]["pairs"] == [["a", "b", 0.98]]
    assert codes["parameter_at_bound"]["parameters"] == ["a"]
    assert codes["simulation_failed"]["trials"] == ["t"]


def test_zero_residuals_give_null_not_zero_and_absolute_sigma_keeps_the_weights():
    import casadi as ca

    from colloc.inference.covariance import parameter_covariance

    J = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    args = (ca.DM(J), np.zeros(3), ca.DM(0, 2), np.zeros(0, dtype=bool), np.array([0, 1]), np.ones(2), 3)
    rescaled = parameter_covariance(*args, np.zeros(3))
    assert np.isnan(rescaled.matrix).all() and "residuals are zero" in rescaled.message
    exact = parameter_covariance(*args, np.zeros(3), absolute_sigma=True)
    np.testing.assert_allclose(exact.matrix, np.linalg.inv(J.T @ J), rtol=1e-10)


@pytest.mark.parametrize("search_range", [True, False])
def test_an_estimate_on_a_search_range_bound_fails_and_on_a_physical_bound_warns(search_range):
    """x' = −a·x measured at 100 Hz with noise, true a = 3 (exact exponential: an independent
    generator). The bound a ≤ 2 holds it off the data. Declared a search range, that is a
    failure named parameter_at_bound; declared a physical limit, a success with the warning."""
    import colloc as co

    rng = np.random.default_rng(2)
    t = np.arange(0.0, 2.0, 0.01)
    trial = co.Trial(t, {"x": 1.5 * np.exp(-3.0 * t) + 0.01 * rng.standard_normal(t.size)}, name="decay")
    m = co.Model("decay")
    x = m.state("x")
    a = m.parameter("a", bounds=(0.1, 2.0), guess=1.0, search_range=search_range)
    m.set_der(x, -a * x)
    assert m.search_ranges == (("a",) if search_range else ())
    result = co.solve(co.Problem(m, trial, fit={"x": 1e4}), throw=False, verdict=False)
    assert result.parameters["a"] == pytest.approx(2.0, abs=1e-4)
    assert "parameter_at_bound" in {w["code"] for w in result.warnings}
    if search_range:
        assert not result.success and result.status == "parameter_at_bound"
        assert "a ended on the bound of its search range" in result.message
    else:
        assert result.success and result.status == "Solve_Succeeded"
    # within the range the same problem is a success either way
    m.set_bounds("a", 0.1, 10.0)
    inside = co.solve(co.Problem(m, trial, fit={"x": 1e4}), throw=False)
    assert inside.success and inside.parameters["a"] == pytest.approx(3.0, rel=0.02)


def test_a_problem_module_sets_its_own_ipopt_options(monkeypatch):
    """``IPOPT_OPTIONS`` in a problem's module (ship-stance: the Gauss–Newton Hessian) reach
    IPOPT through identify_files, the path of `colloc identify` and `colloc batch`; the
    caller's own options (max_iter) still apply."""
    from colloc.studies.identify import identify_files
    from colloc_problems import pendulum, ship_stance

    assert ship_stance.IPOPT_OPTIONS == {"hessian": "gauss-newton"}
    data = [str(REPO / "data" / "pendulum" / "pendulum.csv")]
    plain = identify_files("pendulum", data)
    assert plain.info["hessian"] == "exact"
    monkeypatch.setattr(pendulum, "IPOPT_OPTIONS", {"hessian": "gauss-newton", "max_iter": 1}, raising=False)
    gn = identify_files("pendulum", data, max_iter=200)
    assert gn.info["hessian"] == "gauss-newton" and gn.success
    assert gn.parameters["p"] == pytest.approx(plain.parameters["p"], rel=1e-6)
