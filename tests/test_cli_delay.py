"""`colloc delay-margin` and `colloc spine one-dof` (docs/contracts.md §3): output, JSON keys, exit codes, errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from colloc.cli import main

CONTRACT_KEYS = ("delay_margin_s", "crossing_frequency_rad_s", "stable_at_zero_delay")


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def write(path, text):
    path.write_text(text)
    return path


@pytest.fixture
def thesis_csv(tmp_path):
    ji = write(tmp_path / "ji.csv", "0,1\n4.88,-1.09\n")
    jd = write(tmp_path / "jd.csv", "0,0\n-8.15,-1.63\n")
    return ji, jd


def test_delay_margin_prints_margin_and_frequency(capsys, thesis_csv):
    ji, jd = thesis_csv
    code, out, err = run(capsys, "delay-margin", "--ji", ji, "--jd", jd)
    assert code == 0, err
    assert "0.317452" in out and "1.89395" in out


@pytest.mark.parametrize("method", ["sweep", "exact"])
def test_delay_margin_json_prints_only_the_document(capsys, thesis_csv, method):
    ji, jd = thesis_csv
    code, out, err = run(capsys, "delay-margin", "--ji", ji, "--jd", jd, "--json", "--method", method)
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert all(k in doc for k in CONTRACT_KEYS)
    assert round(doc["delay_margin_s"], 4) == 0.3175
    assert round(doc["crossing_frequency_rad_s"], 3) == 1.894
    assert doc["stable_at_zero_delay"] is True


def test_delay_margin_stable_for_every_delay_is_null(capsys, tmp_path):
    ji = write(tmp_path / "ji.csv", "-5,1\n-1,-5\n")
    jd = write(tmp_path / "jd.csv", "1,0\n0,-1\n")
    code, out, _ = run(capsys, "delay-margin", "--ji", ji, "--jd", jd, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["delay_margin_s"] is None and doc["crossing_frequency_rad_s"] is None
    assert doc["stable_at_zero_delay"] is True
    code, out, _ = run(capsys, "delay-margin", "--ji", ji, "--jd", jd)
    assert code == 0 and "stable for every delay" in out


def test_delay_margin_unstable_at_zero_delay_exits_1(capsys, tmp_path):
    ji = write(tmp_path / "ji.csv", "0,1\n4.88,-1.09\n")
    jd = write(tmp_path / "jd.csv", "0,0\n0,-1.63\n")
    code, out, _ = run(capsys, "delay-margin", "--ji", ji, "--jd", jd, "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["delay_margin_s"] == 0.0 and doc["stable_at_zero_delay"] is False
    code, out, _ = run(capsys, "delay-margin", "--ji", ji, "--jd", jd)
    assert code == 1 and "unstable at zero delay" in out


def test_delay_margin_tolerates_spaces_blank_lines_and_bom(capsys, tmp_path):
    ji = write(tmp_path / "ji.csv", "\ufeff 0 , 1\n\n4.88, -1.09\n\n")
    jd = write(tmp_path / "jd.csv", "0,0\n-8.15,-1.63")
    code, out, _ = run(capsys, "delay-margin", "--ji", ji, "--jd", jd, "--json")
    assert code == 0 and round(json.loads(out)["delay_margin_s"], 4) == 0.3175


@pytest.mark.parametrize("ji_text, jd_text, fragments", [
    ("0,1,2\n4.88,-1.09,3\n", "0,0\n-8.15,-1.63\n", ["--ji", "ji.csv", "2×3", "not square"]),
    ("0,1\n4.88,-1.09\n", "1\n", ["ji.csv", "2×2", "jd.csv", "1×1"]),
    ("0,1\n4.88,abc\n", "0,0\n-8.15,-1.63\n", ["--ji", "ji.csv", "row 2, column 2", "'abc'", "not a number"]),
    ("a,b\n0,1\n4.88,-1.09\n", "0,0\n-8.15,-1.63\n", ["ji.csv", "row 1, column 1", "not a number"]),
    ("0,1\n4.88,-1.09\n", "0,0\nnan,-1.63\n", ["--jd", "jd.csv", "row 2, column 1", "NaN"]),
    ("0,1\n4.88,-1.09\n", "0,0\n-8.15,inf\n", ["jd.csv", "row 2, column 2", "NaN/inf"]),
    ("0,1\n4.88\n", "0,0\n-8.15,-1.63\n", ["ji.csv", "row 2 has 1 values", "first row has 2"]),
    ("0,1\n4.88,\n", "0,0\n-8.15,-1.63\n", ["ji.csv", "row 2, column 2", "not a number"]),
    ("", "0,0\n-8.15,-1.63\n", ["ji.csv", "empty"]),
])
def test_delay_margin_bad_input_is_a_one_line_error(capsys, tmp_path, ji_text, jd_text, fragments):
    ji = write(tmp_path / "ji.csv", ji_text)
    jd = write(tmp_path / "jd.csv", jd_text)
    code, out, err = run(capsys, "delay-margin", "--ji", ji, "--jd", jd)
    assert code == 2 and out == ""
    assert err.startswith("colloc: error:") and err.count("\n") == 1 and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_delay_margin_missing_file_and_missing_option(capsys, tmp_path):
    jd = write(tmp_path / "jd.csv", "0,0\n-8.15,-1.63\n")
    code, _, err = run(capsys, "delay-margin", "--ji", tmp_path / "nope.csv", "--jd", jd)
    assert code == 2 and "nope.csv" in err and "no such file" in err
    code, _, err = run(capsys, "delay-margin", "--jd", jd)
    assert code == 2 and "--ji" in err
    code, _, err = run(capsys, "delay-margin", "--ji", jd, "--jd", jd, "--method", "newton")
    assert code == 2 and "newton" in err


@pytest.mark.parametrize("argv, fragment", [
    (["delay-margin", "--help"], "--ji"),
    (["spine", "--help"], "one-dof"),
    (["spine", "one-dof", "--help"], "--alpha2"),
])
def test_help(capsys, argv, fragment):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: colloc") and fragment in out


def test_console_script(tmp_path, thesis_csv):
    ji, jd = thesis_csv
    command = [shutil.which("colloc")] if shutil.which("colloc") else [sys.executable, "-m", "colloc.cli"]
    proc = subprocess.run([*command, "delay-margin", "--ji", str(ji), "--jd", str(jd), "--json"],
                          check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert round(json.loads(proc.stdout)["delay_margin_s"], 4) == 0.3175


# --------------------------------------------------------------------------- spine one-dof

def test_spine_one_dof_default_prints_the_thesis_system(capsys):
    code, out, err = run(capsys, "spine", "one-dof")
    assert code == 0, err
    for fragment in ("J_i", "J_d", "4.8786", "-1.0871", "-8.1534", "-1.6307", "0.317029", "1.89582"):
        assert fragment in out, fragment


def test_spine_one_dof_json(capsys):
    code, out, err = run(capsys, "spine", "one-dof", "--json", "--q", 20, "--b", 2, "--alpha2", 0.5,
                         "--gp", 15, "--gd", 3)
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert all(k in doc for k in CONTRACT_KEYS + ("J_i", "J_d"))
    np.testing.assert_array_equal(np.round(doc["J_i"], 2), [[0, 1], [4.88, -1.09]])
    np.testing.assert_array_equal(np.round(doc["J_d"], 2), [[0, 0], [-8.15, -1.63]])
    assert round(doc["delay_margin_s"], 4) == 0.3170 and round(doc["crossing_frequency_rad_s"], 3) == 1.896
    assert doc["parameters"]["gp"] == 15


def test_spine_one_dof_other_values(capsys):
    code, out, _ = run(capsys, "spine", "one-dof", "--gp", 30, "--g", 9.8, "--json", "--method", "exact")
    assert code == 0
    doc = json.loads(out)
    assert doc["parameters"]["g"] == 9.8 and 0 < doc["delay_margin_s"] < 0.3170


def test_spine_one_dof_unstable_exits_1(capsys):
    code, out, _ = run(capsys, "spine", "one-dof", "--gp", 0, "--gd", 0, "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["stable_at_zero_delay"] is False and doc["delay_margin_s"] == 0.0


@pytest.mark.parametrize("args, fragment", [
    (["--alpha2", "1.5"], "alpha2"),
    (["--q", "abc"], "--q"),
    (["--gp", "nan"], "gp"),
    (["--b", "-1"], "b must be >= 0"),
    (["--lm1", "0"], "lm1"),
])
def test_spine_one_dof_bad_values(capsys, args, fragment):
    code, out, err = run(capsys, "spine", "one-dof", *args)
    assert code == 2 and out == ""
    assert err.startswith("colloc: error:") and err.count("\n") == 1 and fragment in err


def test_spine_needs_a_known_analysis(capsys):
    code, _, err = run(capsys, "spine")
    assert code == 2 and "ANALYSIS" in err
    code, _, err = run(capsys, "spine", "stability", "--load", "200")  # --reflex-gain is required
    assert code == 2 and "reflex-gain" in err
