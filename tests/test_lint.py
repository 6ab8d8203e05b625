"""The linter (ruff) and the type checker (mypy) on colloc/, as configured in pyproject.toml
(both pinned in the ``lint`` extra, which the ``test`` extra includes).  Run by the README's
test command, so by CI."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          check=False)


def test_ruff_finds_nothing_in_colloc():
    pytest.importorskip("ruff", reason="ruff is in the lint extra (pip install '.[test]')")
    out = _run("ruff", "check", "colloc", "--no-cache", "--output-format", "concise")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


@pytest.mark.xdist_group("mypy")
def test_mypy_finds_nothing_in_colloc(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the lint extra (pip install '.[test]')")
    out = _run("mypy", "colloc", "--cache-dir", str(tmp_path / "cache"))
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def _pending() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pending: list[str] = []
    for override in config["tool"]["mypy"].get("overrides", []):
        if override.get("ignore_errors"):
            pending += override["module"]
    return pending


@pytest.mark.xdist_group("mypy")
def test_every_module_still_excused_from_mypy_still_needs_it(tmp_path):
    # the excused modules, checked without the excuse: each must still have errors, else it
    # comes off the list in pyproject.toml
    pytest.importorskip("mypy", reason="mypy is in the lint extra (pip install '.[test]')")
    pending = _pending()
    config = tmp_path / "strict.toml"
    config.write_text('[tool.mypy]\npython_version = "3.11"\nignore_missing_imports = true\n', encoding="utf-8")
    out = _run("mypy", "colloc", "--config-file", str(config), "--cache-dir", str(tmp_path / "cache"))
    with_errors = {line.split(":", 1)[0] for line in out.stdout.splitlines() if ": error:" in line}
    for module in pending:
        path = module.replace(".", "/") + ".py"
        assert path in with_errors, f"{module} passes mypy now: remove it from [[tool.mypy.overrides]]"
