"""Every registered problem through the two commands a newcomer runs first: ``colloc demo
--problem P`` and ``colloc identify P --data <its shipped records> --plot f.png --out r.json``.

Each must end in exit 0 with a successful result, or exit 1 with a failure its document names
(``status``, printed too), never an internal error; write a figure that is a valid PNG; and
write a result document with the same top-level keys for every problem (docs/contracts.md §4's keys,
``warnings``, ``simulation`` and ``fit_verdict`` among them).

The default suite runs ``identify`` for every problem and ``demo`` for all but the long ones
(:data:`LONG_DEMOS`: their two figures alone take seconds) in this process, on the first
seconds of each shipped record (:data:`QUICK_SECONDS`, copies in ``tmp_path``); both commands,
as a user runs them on the whole shipped records, run for every problem with ``-m slow``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from colloc.cli import _demo_data, main
from colloc.studies.identify import problem_registry, problem_spec

REPO = Path(__file__).resolve().parents[1]
PROBLEMS = sorted(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["colloc.problems"])
#: docs/contracts.md §4 (``standard_errors`` is there for every shipped method).
CONTRACT_KEYS = {"problem", "method", "success", "status", "iterations", "objective", "parameters",
                 "standard_errors", "timings", "num_nodes", "trials", "versions"}
REPORT_KEYS = CONTRACT_KEYS | {"warnings", "simulation", "info"}
VERDICTS = {"good", "poor_fit", "not_applicable"}
#: Seconds of each shipped record (from its first sample) fitted by the quick tests; None: all of it.
QUICK_SECONDS = {"pendulum": 3.0, "two-link": 5.0, "two-link-delay": 4.0, "cip": 4.0, "semibatch": None,
                 "ship-stance": 1.0, "fes-muscle": 0.25, "heel-off": 3.0}
#: Problems whose demo runs only with ``-m slow`` (on the shipped records).
LONG_DEMOS = {"ship-stance", "fes-muscle"}
PNG = b"\x89PNG\r\n\x1a\n"


def test_every_problem_of_pyproject_is_registered_and_has_a_quick_length():
    assert set(PROBLEMS) <= set(problem_registry())
    assert set(PROBLEMS) == set(QUICK_SECONDS) and LONG_DEMOS < set(PROBLEMS)


def _shortened(path: Path, folder: Path, seconds: float | None) -> Path:
    """A copy of the first ``seconds`` of a shipped CSV record (its lines as they are); a folder
    (a demo's default data) is copied record by record."""
    if path.is_dir():
        copies = folder / path.name
        for record in sorted(path.glob("*.csv")):
            _shortened(record, copies, seconds)
        return copies
    folder.mkdir(parents=True, exist_ok=True)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if seconds is not None:
        t0 = float(lines[1].split(",", 1)[0])
        lines = [lines[0]] + [ln for ln in lines[1:] if float(ln.split(",", 1)[0]) <= t0 + seconds]
    copy = folder / path.name
    copy.write_text("".join(lines), encoding="utf-8")
    return copy


def _valid_png(path: Path) -> None:
    from PIL import Image

    assert path.is_file(), f"no figure at {path}"
    assert path.read_bytes()[:8] == PNG, f"{path} is not a PNG"
    with Image.open(path) as image:
        image.verify()  # a truncated or corrupt file raises
    with Image.open(path) as image:
        assert image.width > 100 and image.height > 100, image.size


def _outcome(code: int, out: str, err: str, doc: dict) -> None:
    """Exit 0 with a success, or 1 with a failure the document names and the command printed."""
    assert "internal error" not in err and "Traceback" not in err, err
    if code == 0:
        assert doc["success"] is True, doc["status"]
    else:
        assert code == 1, (code, err)
        assert doc["success"] is False and doc["status"] and doc["status"] in out, (doc["status"], out[-2000:])


@pytest.fixture(scope="module")
def reference_keys(tmp_path_factory) -> set[str]:
    """The top-level keys of the pendulum's document (the library's plain collocation path)."""
    folder = tmp_path_factory.mktemp("reference")
    data = _shortened(Path(_demo_data(problem_spec("pendulum"))[0]), folder, QUICK_SECONDS["pendulum"])
    assert main(["identify", "pendulum", "--data", str(data), "--out", str(folder / "r.json")]) == 0
    keys = set(json.loads((folder / "r.json").read_text()))
    assert REPORT_KEYS <= keys, REPORT_KEYS - keys
    return keys


def _report(doc: dict, reference: set[str]) -> None:
    keys = set(doc)
    assert REPORT_KEYS <= keys, f"missing {sorted(REPORT_KEYS - keys)}"
    assert keys == reference, f"missing {sorted(reference - keys)}, extra {sorted(keys - reference)}"
    verdict = doc.get("fit_verdict")
    assert isinstance(verdict, dict) and verdict.get("verdict") in VERDICTS, f"fit_verdict: {verdict!r}"


# ---- quick: the commands in this process, on the first seconds of each record ----------------------------
@pytest.mark.parametrize("problem", PROBLEMS)
def test_identify_with_plot_and_out(problem, tmp_path, capsys, reference_keys):
    data = [_shortened(Path(p), tmp_path / "data", QUICK_SECONDS[problem]) for p in _demo_data(problem_spec(problem))]
    fig, out_json = tmp_path / "f.png", tmp_path / "r.json"
    code = main(["identify", problem, *(a for p in data for a in ("--data", str(p))), "--plot", str(fig),
                 "--out", str(out_json)])
    out, err = capsys.readouterr()
    assert out_json.is_file(), err
    doc = json.loads(out_json.read_text())
    _outcome(code, out, err, doc)
    _valid_png(fig)
    _report(doc, reference_keys)


@pytest.mark.parametrize("problem", [p for p in PROBLEMS if p not in LONG_DEMOS])
def test_demo(problem, tmp_path, capsys, monkeypatch, reference_keys):
    from colloc_problems import _data

    shipped = _data.data_path
    monkeypatch.setattr(_data, "data_path", lambda *parts: _shortened(shipped(*parts), tmp_path / "data",
                                                                       QUICK_SECONDS[problem]))
    code = main(["demo", "--problem", problem, "--out", str(tmp_path / "demo")])
    out, err = capsys.readouterr()
    _demo_files(problem, tmp_path / "demo", code, out, err, reference_keys)


def _demo_files(problem: str, folder: Path, code: int, out: str, err: str, reference: set[str]) -> None:
    stem = problem.replace("-", "_")
    result = folder / f"{stem}_result.json"
    assert result.is_file(), err
    doc = json.loads(result.read_text())
    _outcome(code, out, err, doc)
    for kind in ("fit", "residuals"):
        _valid_png(folder / f"{stem}_{kind}.png")
    _report(doc, reference)


# ---- the commands as a user runs them, on the shipped records ---------------------------------------------
def _command() -> list[str]:
    """The console script of this interpreter's installation (not another one on PATH)."""
    script = Path(sys.executable).with_name("colloc")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "colloc.cli"]


def _run(args: list, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("DISPLAY", None)
    return subprocess.run([*_command(), *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env)


@pytest.mark.slow
@pytest.mark.parametrize("problem", PROBLEMS)
def test_demo_on_the_shipped_records(problem, tmp_path, reference_keys):
    proc = _run(["demo", "--problem", problem, "--out", tmp_path / "demo"], tmp_path)
    _demo_files(problem, tmp_path / "demo", proc.returncode, proc.stdout, proc.stderr, reference_keys)


@pytest.mark.slow
@pytest.mark.parametrize("problem", PROBLEMS)
def test_identify_on_the_shipped_records(problem, tmp_path, reference_keys):
    data = _demo_data(problem_spec(problem))
    proc = _run(["identify", problem, *(a for p in data for a in ("--data", p)), "--plot", tmp_path / "f.png",
                 "--out", tmp_path / "r.json"], tmp_path)
    assert (tmp_path / "r.json").is_file(), proc.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    _outcome(proc.returncode, proc.stdout, proc.stderr, doc)
    _valid_png(tmp_path / "f.png")
    _report(doc, reference_keys)
