"""The linter (ruff) and the type checker (mypy) on colloc/, as configured in pyproject.toml
(both pinned in the ``lint`` extra, which the ``test`` extra includes).  Run by the README's
test command, so by CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
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

