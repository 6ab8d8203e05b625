"""What ``pip install .`` ships: the library and the problems (as ``colloc_problems``), nothing else.

The package list in ``pyproject.toml`` is explicit (the problems live in ``problems/`` but are
installed under a name a user's own ``problems.py`` cannot shadow), so these tests keep it in
step with the folders and look inside a freshly built wheel.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _declared():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(cfg["packages"]), cfg["package-dir"]


def _on_disk():
    found = set()
    for init in (ROOT / "colloc").rglob("__init__.py"):
        found.add(".".join(init.parent.relative_to(ROOT).parts))
    for init in (ROOT / "problems").rglob("__init__.py"):
        found.add(".".join(("colloc_problems",) + init.parent.relative_to(ROOT / "problems").parts))
    return found


def test_every_package_folder_is_declared():
    declared, package_dir = _declared()
    assert package_dir == {"colloc_problems": "problems"}
    missing = sorted(_on_disk() - declared)
    extra = sorted(declared - _on_disk())
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
    assert not extra, f"declared in pyproject.toml but not on disk: {extra}"


@pytest.mark.parametrize("group", ["colloc.problems", "colloc.commands", "colloc.data"])
def test_entry_points_name_installed_modules(group):
    """Each entry point of colloc's groups names a module (a file, or a package's ``__init__.py``) of an
    installed package (and, for ``module:function``, a module file that defines the function)."""
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][group]
    declared, package_dir = _declared()
    assert eps, f"no entry point in {group}"
    for name, target in eps.items():
        module, _, function = target.partition(":")
        package, _, stem = module.rpartition(".")
        assert package in declared, f"{group}: {name} -> {target} is not in an installed package"
        folder = ROOT.joinpath(*package_dir.get(package.split(".")[0], package.split(".")[0]).split("/"),
                               *package.split(".")[1:])
        source = folder / f"{stem}.py"
        if not source.is_file() and (folder / stem / "__init__.py").is_file():  # a package (colloc_problems.cip)
            assert module in declared, f"{group}: {name} -> {target}: the package {module} is not installed"
            source = folder / stem / "__init__.py"
        assert source.is_file(), f"{group}: {name} -> {target}: no file {source.relative_to(ROOT)}"
        if function:
            assert f"def {function}(" in source.read_text(encoding="utf-8"), f"{group}: {name} -> {target}"


def test_wheel_holds_only_the_library_and_the_problems(tmp_path):
    # A stray folder that an earlier version's pattern ("colloc*") would have packaged.
    stray = ROOT / "colloc-demo-packaging-probe"
    stray.mkdir(exist_ok=True)
    (stray / "__init__.py").write_text("")
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                               "-q", "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    finally:
        (stray / "__init__.py").unlink()
        stray.rmdir()
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("colloc-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    top = {t for t in top if not t.endswith((".dist-info", ".data"))}
    assert top == {"colloc", "colloc_problems"}, top
    assert "colloc_problems/cip/__init__.py" in names and "colloc/cli/__init__.py" in names and "colloc/cli/__main__.py" in names
    assert not any(n.startswith("problems/") for n in names)
    assert "colloc/py.typed" in names  # PEP 561: type checkers read the installed package's annotations


def test_every_file_the_problems_read_from_data_is_installed():
    """`pip install .` (CI, users) finds shipped data only through [tool.setuptools.data-files]:
    every file in data/<problem>/ must match one of its patterns (events.json of heel-off once
    did not, and only the non-editable install in CI showed it)."""
    import fnmatch

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    patterns = [p for pats in cfg.values() for p in pats]
    files = [p.relative_to(ROOT).as_posix() for p in (ROOT / "data").rglob("*") if p.is_file()
             and "__pycache__" not in p.parts]
    assert files
    missing = [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in patterns)]
    assert not missing, f"add patterns for these to [tool.setuptools.data-files] in pyproject.toml: {missing}"
