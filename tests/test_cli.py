"""The `colloc` command: every exit code of docs/contracts.md §3 and every CSV error of §1."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from colloc.cli import main
from colloc_problems import pendulum

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def good_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "good.csv"
    pendulum.simulate_trial(duration=3.0, noise_std=0.01, seed=2).to_csv(path)
    return path


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_identify_prints_table_and_writes_result(capsys, good_csv, tmp_path):
    out_json = tmp_path / "r.json"
    code, out, err = run(capsys, "identify", "pendulum", "--data", good_csv, "--out", out_json,
                         "--plot", tmp_path / "fit.png")
    assert code == 0, err
    assert re.search(r"^p\s+\d+\.\d+\s+\d", out, re.M), out
    assert json.loads(out_json.read_text())["parameters"]["p"] == pytest.approx(10, rel=0.01)
    assert (tmp_path / "fit.png").stat().st_size > 10_000


def test_identify_json_prints_only_the_document(capsys, good_csv):
    code, out, err = run(capsys, "identify", "pendulum", "--data", good_csv, "--json",
                         "--method", "backward-euler", "--nodes", "400")
    assert code == 0
    doc = json.loads(out)
    assert doc["method"] == "backward-euler" and doc["num_nodes"] == 400
    assert doc["problem"] == "pendulum" and doc["trials"] == [str(good_csv)]
    assert "standard_errors" in doc and doc["standard_errors"]["p"] > 0


def test_several_data_files_are_several_trials(capsys, good_csv, tmp_path):
    second = tmp_path / "second.csv"
    pendulum.simulate_trial(duration=2.0, theta0=0.4, noise_std=0.01, seed=9).to_csv(second)
    code, out, _ = run(capsys, "identify", "pendulum", "--data", good_csv, "--data", second, "--json")
    assert code == 0
    assert json.loads(out)["trials"] == [str(good_csv), str(second)]


def test_solver_failure_exits_1(capsys, good_csv):
    code, out, _ = run(capsys, "identify", "pendulum", "--data", good_csv, "--max-iter", "1")
    assert code == 1
    assert "Maximum_Iterations_Exceeded" in out and "worst constraint violations" in out


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def rows(n=5, fmt="{t},{v}"):
    return "".join(fmt.format(t=i / 100, v=0.1 * i) + "\n" for i in range(n))


CSV_ERRORS = {
    "nan value": ("time,theta\n" + rows(3) + "0.03,nan\n" + rows(2).replace("0.0,", "0.04,").replace("0.01,", "0.05,"),
                  r"column 'theta'.*row 4"),
    "inf value": ("time,theta\n0,1\n0.01,inf\n0.02,1\n", r"column 'theta'.*row 2"),
    "empty cell": ("time,theta\n0,1\n0.01,\n0.02,1\n", r"column 'theta'.*row 2"),
    "text cell": ("time,theta\n0,1\n0.01,abc\n0.02,1\n", r"column 'theta'.*row 2"),
    "duplicate time": ("time,theta\n0,1\n0.01,1\n0.01,1\n", r"column 'time'.*row 3"),
    "decreasing time": ("time,theta\n0,1\n0.02,1\n0.01,1\n", r"column 'time'.*row 3"),
    "missing column": ("time,angle\n" + rows(4), r"theta"),
    "first column not time": ("theta,time\n" + rows(4), r"time"),
    "too few rows": ("time,theta\n0,1\n", r"row"),
    "ragged row": ("time,theta\n0,1\n0.01,1,5\n0.02,1\n", r"line 3"),
    "empty file": ("", r"empty"),
}


@pytest.mark.parametrize("case", list(CSV_ERRORS))
def test_bad_csv_exits_2_with_one_line_naming_file(capsys, tmp_path, case):
    text, match = CSV_ERRORS[case]
    path = write(tmp_path / "bad.csv", text)
    code, out, err = run(capsys, "identify", "pendulum", "--data", path)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("colloc: error: "), err
    assert "bad.csv" in lines[0]
    assert re.search(match, lines[0]), lines[0]


def test_extra_column_is_ignored_with_a_named_warning(capsys, tmp_path):
    trial = pendulum.simulate_trial(duration=2.0, noise_std=0.01)
    frame = trial.to_dataframe()
    frame["marker_x"] = 0.0
    path = tmp_path / "extra.csv"
    frame.to_csv(path, index=False)
    code, _, err = run(capsys, "identify", "pendulum", "--data", path, "--json")
    assert code == 0
    assert re.search(r"colloc: warning: .*marker_x", err)


USAGE_ERRORS = [
    (["identify", "no-such-problem", "--data", "{good}"], r"unknown problem 'no-such-problem'; available: .*pendulum"),
    (["identify", "pendulum", "--data", "{missing}"], r"absent.csv"),
    (["identify", "pendulum", "--data", "{good}", "--method", "rk4"], r"unknown method 'rk4'; available: radau2, radau3, hermite-simpson, midpoint, backward-euler, trapezoidal"),
    (["identify", "pendulum", "--data", "{good}", "--nodes", "1"], r"--nodes must be >= 2"),
    (["identify", "pendulum"], r"required: --data"),
    (["identify", "pendulum", "--data", "{good}", "--bogus"], r"unrecognized arguments: --bogus"),
    ([], r"required: command"),
    (["identify", "two-link-unknown", "--help"], r"unknown problem 'two-link-unknown'"),
]


@pytest.mark.parametrize("argv, match", USAGE_ERRORS)
def test_bad_usage_exits_2(capsys, good_csv, tmp_path, argv, match):
    args = [a.format(good=good_csv, missing=tmp_path / "absent.csv") for a in argv]
    code, _, err = run(capsys, *args)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert re.search(match, err), err


@pytest.mark.parametrize("sub", ["identify", "demo", "problems"])
def test_every_subcommand_has_help(capsys, sub):
    with pytest.raises(SystemExit) as exc:
        main([sub, "--help"])
    assert exc.value.code == 0
    assert "usage: colloc" in capsys.readouterr().out


def test_problems_lists_the_registry(capsys):
    code, out, _ = run(capsys, "problems")
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert code == 0 and {"pendulum", "two-link", "cip"} <= set(names)


def test_console_script_demo_runs_headless(tmp_path):
    """The README's main job, through the installed `colloc` command, in a fresh process:
    the two-link gains from the shipped seed-case data, table and figure.  The command is the
    README's first quick-start command less its ``pip install .`` (the suite tests the installed
    package; tests/test_readme.py counts this test as that command's run)."""
    readme = (REPO / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    first = next(line.strip() for line in quick.splitlines() if line.startswith("    "))
    install, demo = first.split(" && ")
    assert install == "pip install ." and demo.split()[0] == "colloc"
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("DISPLAY", None)
    command = [shutil.which("colloc")] if shutil.which("colloc") else [sys.executable, "-m", "colloc.cli"]
    proc = subprocess.run([*command, *demo.split()[1:], "--out", str(tmp_path / "demo")], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name, true in (("k_00", 950), ("k_13", 26)):
        assert re.search(rf"^{name}\s+{true}\s+\d+\.?\d*\s+[+-]\d+\.\d+%\s+\d", proc.stdout, re.M), proc.stdout
    figure = re.search(r"figure written to (\S+\.png)", proc.stdout).group(1)
    assert Path(figure).stat().st_size > 10_000
    doc = json.loads((tmp_path / "demo" / "two_link_result.json").read_text())
    assert set(doc["parameters"]) == {f"k_{i}{j}" for i in range(2) for j in range(4)}
    assert abs(doc["parameters"]["k_00"] / 950 - 1) < 0.1


def test_demo_of_another_problem(capsys, tmp_path):
    code, out, _ = run(capsys, "demo", "--problem", "pendulum", "--out", tmp_path)
    assert code == 0
    assert re.search(r"^p\s+10\s+\d+\.\d+\s+[+-]\d", out, re.M), out
    assert (tmp_path / "pendulum_fit.png").stat().st_size > 10_000
    timings = json.loads((tmp_path / "pendulum_result.json").read_text())["timings"]
    assert timings["plot_s"] > 0 and "total_s" in timings  # the figures' time, apart from the solve call's


def test_demo_data_names_a_file_a_folder_or_several(tmp_path, monkeypatch):
    """``DEFAULT_DATA``: one file, a folder (its .csv files, as ``--data FOLDER``) or several names,
    found through the problems package's ``colloc.data`` entry point (looked up at each call)."""
    from dataclasses import replace

    from colloc.cli import UsageError, _demo_data
    from colloc.definition.registry import problem_spec
    from colloc_problems import _data

    (tmp_path / "recs").mkdir()
    for name in ("b.csv", "a.csv", "notes.md"):
        (tmp_path / "recs" / name).write_text("time\n")
    (tmp_path / "empty").mkdir()
    monkeypatch.setattr(_data, "data_path", lambda *parts: tmp_path.joinpath(*parts))
    recs = tmp_path / "recs"
    spec = problem_spec("pendulum")
    assert _demo_data(replace(spec, default_data=(("recs", "b.csv"),))) == [str(recs / "b.csv")]
    assert _demo_data(replace(spec, default_data=(("recs",),))) == [str(recs / "a.csv"), str(recs / "b.csv")]
    assert _demo_data(replace(spec, default_data=(("recs", "b.csv"), ("recs", "a.csv")))) \
        == [str(recs / "b.csv"), str(recs / "a.csv")]
    with pytest.raises(UsageError, match="empty: folder holds no .csv file"):
        _demo_data(replace(spec, default_data=(("empty",),)))
    # a problem's own data_path hook comes first
    hooked = replace(spec, default_data=(("a.csv",),), data_path_hook=lambda *parts: recs.joinpath(*parts))
    assert _demo_data(hooked) == [str(recs / "a.csv")]
    # fes-muscle's demo fits the four noisy trains (a user's records are noisy), not their clean twins
    monkeypatch.undo()
    names = [Path(p).name for p in _demo_data(problem_spec("fes-muscle"))]
    assert names == ["noisy_10hz.csv", "noisy_20hz.csv", "noisy_30hz.csv", "noisy_50hz.csv"]


def test_readme_quick_start_matches_ci():
    """README has exactly two quick-start commands; CI runs the second verbatim."""
    readme = (REPO / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [line.strip() for line in quick.splitlines() if line.startswith("    ")]
    assert commands == ['pip install . && colloc demo', 'pip install ".[test]" && python -m pytest']
    ci = (REPO / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines()


def test_the_quick_start_output_is_ignored_by_git(tmp_path):
    """`colloc demo` in the checkout (the README's quick start) leaves `git status` clean: the
    repository's .gitignore, in a fresh repository of its own, ignores the demo's files."""
    from colloc.cli import build_parser

    (tmp_path / ".gitignore").write_text((REPO / ".gitignore").read_text())
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    demo = build_parser()._subparsers._group_actions[0].choices["demo"]
    folder = demo.get_default("out")
    names = [f"{folder}/{stem}" for stem in ("two_link_result.json", "two_link_fit.png", "fes_muscle_result.json")]
    proc = subprocess.run(["git", "check-ignore", "--no-index", *names], cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout.split() == names, proc.stdout + proc.stderr


def test_module_entry_point_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "colloc.cli", "problems"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0 and "pendulum" in proc.stdout
    np.testing.assert_equal(proc.stderr, "")
