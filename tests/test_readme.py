"""The README: at most 6 KB, and every Python block and shell command in it runs.

* Every ```python block is executed, in a fresh folder where ``data/`` is the repository's.
* Every shell command (indented or fenced ```console) is run, or accounted for where it is
  run elsewhere in the same test run:
  - ``pip install ".[test]" && python -m pytest`` is CI's own command: it is checked
    textually against .ci/run (running the test suite from inside the test suite would
    recurse), by tests/test_cli.py::test_readme_quick_start_matches_ci and below;
  - ``pip install . && colloc demo``: colloc must not be re-installed from a test (the suite
    tests the installed package); its ``colloc demo`` is run by
    tests/test_cli.py::test_console_script_demo_runs_headless, which reads it from here;
  - the documentation build command is the one the fixture ``built_docs`` runs
    (tests/conftest.py, ``DOCS_COMMAND``), checked equal here;
  - every other command is run here, in the fresh folder, and must exit 0.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DOCS_COMMAND

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")

#: Commands run elsewhere (see the module's docstring), by their text in the README.
CI_COMMAND = 'pip install ".[test]" && python -m pytest'
DEMO_COMMAND = "pip install . && colloc demo"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def shell_commands(text: str) -> list[str]:
    """The commands of the indented code blocks and of the ```console / ```bash blocks."""
    fenced = re.findall(r"^```(?:console|bash|sh|shell)\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    outside = re.sub(r"^```.*?^```$", "", text, flags=re.MULTILINE | re.DOTALL)
    lines = [line[4:] for line in outside.splitlines() if line.startswith("    ") and line.strip()]
    lines += [line for block in fenced for line in block.splitlines() if line.strip()]
    return [line.split("  #", 1)[0].strip() for line in lines]


def run_here(tmp_path: Path) -> Path:
    (tmp_path / "data").symlink_to(REPO / "data")
    return tmp_path


def test_the_readme_is_at_most_6_kb():
    assert len(README.encode("utf-8")) <= 6 * 1024


def test_the_readme_has_its_example_and_the_parsers_find_it():
    assert len(python_blocks(README)) >= 1
    commands = shell_commands(README)
    assert commands[:2] == [DEMO_COMMAND, CI_COMMAND]
    assert DOCS_COMMAND in commands


def test_the_readme_lists_every_shipped_problem():
    from colloc.definition.registry import problem_entry_points

    table = README.split("## Problems shipped", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"^\| `([\w-]+)` \|", table, re.MULTILINE)
    assert sorted(names) == sorted(problem_entry_points())


def test_the_commands_run_elsewhere_are_the_ones_run_there():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert CI_COMMAND in ci.splitlines()
    contributing = (REPO / "docs" / "contributing.md").read_text(encoding="utf-8")
    assert DOCS_COMMAND in contributing


@pytest.mark.parametrize("index", range(len(python_blocks(README))))
def test_every_python_block_of_the_readme_runs(index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(run_here(tmp_path))
    scope: dict = {"__name__": "__readme__"}
    exec(compile(python_blocks(README)[index], f"README.md, Python block {index + 1}", "exec"), scope)  # noqa: S102
    out = capsys.readouterr().out
    if "result" in scope:  # the example's fit succeeds and says so
        assert scope["result"].success, out
        assert "fit verdict: good" in out
    if "fit.png" in python_blocks(README)[index]:
        assert (tmp_path / "fit.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("command", [c for c in shell_commands(README)
                                     if c not in (CI_COMMAND, DEMO_COMMAND, DOCS_COMMAND)])
def test_every_shell_command_of_the_readme_runs(command, tmp_path):
    argv = shlex.split(command)
    assert argv[0] == "colloc", f"a README command this test does not know how to run: {command}"
    executable = shutil.which("colloc")
    argv = [executable, *argv[1:]] if executable else [sys.executable, "-m", "colloc.cli", *argv[1:]]
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run(argv, check=False, cwd=run_here(tmp_path), capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    if "--out" in argv:
        assert (tmp_path / argv[argv.index("--out") + 1]).stat().st_size > 0
