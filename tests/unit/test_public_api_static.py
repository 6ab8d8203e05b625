"""The public API as static tools see it: the names ``colloc`` exports on first use (PEP 562)
are also spelled out for type checkers and editors, and an editor's analysis (jedi) resolves
``co.Model``, ``co.solve`` and ``co.Trial`` to their definitions without running colloc."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import colloc

INIT = Path(colloc.__file__)


def _type_checking_imports() -> dict[str, str]:
    """name -> module (relative to colloc) of every import under ``if TYPE_CHECKING:`` (spelled
    ``_typing.TYPE_CHECKING`` there, so that the flag itself is not a public name)."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        test = node.test if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), ast.dump(imp)
                assert imp.level == 1, "relative imports of colloc's own modules only"
                for alias in imp.names:
                    assert alias.asname == alias.name, f"{alias.name}: re-exported as itself (PEP 484)"
                    module = imp.module or ""
                    found[alias.name] = f"{module}.{alias.name}" if module in ("", "inference") else module
    return found


def test_the_type_checking_block_names_every_lazy_export_where_it_lives():
    spelled = _type_checking_imports()
    expected = dict(colloc._LAZY)
    expected.update({name: path for name, path in colloc._MODULES.items()})
    modules = {"signals": ".signals", "kalman": "inference.kalman"}
    for name, path in modules.items():
        assert spelled.pop(name).strip(".") == path.strip("."), name
        expected.pop(name)
    assert spelled == expected


def test_every_lazy_export_is_public_and_importable():
    public = set(colloc.__all__)
    assert set(colloc._LAZY) <= public, sorted(set(colloc._LAZY) - public)
    for name in colloc.__all__:
        assert getattr(colloc, name) is not None, name


def test_the_package_says_it_is_typed():
    assert (INIT.parent / "py.typed").is_file()


@pytest.mark.parametrize("name, module", [("Model", "definition/model.py"), ("solve", "solving/solve.py"),
                                          ("Trial", "definition/trial.py"), ("KalmanML", "solving/kalman_ml.py")])
def test_an_editor_resolves_the_public_names(name, module):
    jedi = pytest.importorskip("jedi")
    source = f"import colloc as co\nco.{name}"
    script = jedi.Script(source, path=str(INIT.parent.parent / "probe.py"),
                         project=jedi.Project(str(INIT.parent.parent)))
    found = script.infer(line=2, column=len(f"co.{name}") - 1)
    assert found, f"jedi found no definition of co.{name}"
    assert {d.name for d in found} == {name}
    assert any(str(d.module_path).replace("\\", "/").endswith(f"colloc/{module}") for d in found), \
        [str(d.module_path) for d in found]
