"""The layer contract of the package: imports point down, never up, and never in a circle.

The sub-packages of ``colloc`` are layers, bottom up (see ``colloc/__init__.py`` and the
README's Layout).  A module may import from its own sub-package and from the layers below
its own; packages on the same layer are independent of each other.  Every import counts,
including the ones inside functions.  ``problems/`` (installed as ``colloc_problems``) is the
layer above the library: it sees only the public API, and ``colloc/`` never imports it (the
problems, their sub-commands and their data reach the library through entry points,
:mod:`colloc.definition.registry`).  Neither package has an import cycle.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import colloc as co

ROOT = Path(__file__).resolve().parents[1]

#: Bottom up; each inner list is one layer of mutually independent sub-packages.
LAYERS = [
    ["base"],
    ["signals", "definition", "stability", "multibody"],
    ["simulation", "transcription", "inference", "seakeeping"],
    ["results"],
    ["solving"],
    ["shooting"],
    ["studies"],
    ["cli"],
]

#: Public modules of the API besides the names in ``colloc.__all__`` (``cli``: for the
#: ``colloc.commands`` plugins, the names of ``colloc.cli.PLUGIN_API``).
PUBLIC_MODULES = {"signals", "kalman", "cli"}

#: The import names of the problems package: installed as ``colloc_problems``; ``problems`` is
#: only the checkout's folder (an import of it works in the checkout alone).
PROBLEM_PACKAGES = ("colloc_problems", "problems")

#: Import cycles of problems/ tolerated for now (none: each entry must be a cycle, or the test fails).
KNOWN_PROBLEM_CYCLES: list[list[str]] = []


def imports_of(path: Path, module: str, is_package: bool) -> list[tuple[int, str]]:
    """``(line, absolute module)`` for every import statement in the file, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            # ``from pkg import name`` may name a submodule: count it as that module
            for alias in node.names:
                found.append((node.lineno, f"{target}.{alias.name}"))
    return found


def module_graph(package_dir: Path, name: str) -> dict[str, list[tuple[int, str]]]:
    """Imports inside the package ``name`` rooted at ``package_dir`` (the folder may be named
    otherwise: ``problems/`` is the package ``colloc_problems``), by importing module, reduced
    to the package's own modules (an import of ``a.b.c`` where ``a.b.c`` is a function names
    the module ``a.b``)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = (name, *path.relative_to(package_dir).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        mod = ".".join(parts[:-1] if is_package else parts)
        modules[mod] = (path, is_package)
    graph = {}
    for mod, (path, is_package) in modules.items():
        edges = []
        for line, target in imports_of(path, mod, is_package):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != mod and (target == name or target.startswith(name + ".")):
                edges.append((line, target))
        graph[mod] = edges
    return graph


def layer_of(module: str, layers: list[list[str]]) -> tuple[int, str] | None:
    """``(rank, sub-package)`` of a module, or None for the package root."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    for rank, layer in enumerate(layers):
        if parts[1] in layer:
            return rank, parts[1]
    raise AssertionError(f"{module}: its sub-package '{parts[1]}' is on no layer; add it to LAYERS")


def layer_violations(graph, layers) -> list[str]:
    """Imports that run up a layer, sideways to a sibling package, or into the package root."""
    bad = []
    for mod, edges in graph.items():
        here = layer_of(mod, layers)
        if here is None:
            continue  # the package root re-exports the API from every layer
        for line, target in edges:
            there = layer_of(target, layers)
            if there is None:
                bad.append(f"{mod}:{line} imports the package root '{target}' (the API sits above every layer)")
            elif there[1] != here[1] and there[0] >= here[0]:
                way = "up" if there[0] > here[0] else "sideways"
                bad.append(f"{mod}:{line} imports {target}: {way} from layer {here[0]} ({here[1]}) "
                           f"to layer {there[0]} ({there[1]})")
    return bad


def imports_of_packages(package_dir: Path, packages: tuple[str, ...]) -> list[str]:
    """``file:line`` of every import of one of ``packages`` (top-level names) in the files under
    ``package_dir``, at any depth: ``import``, ``from … import`` and ``importlib.import_module``
    / ``__import__`` of a literal name."""
    def hits(name: str | None) -> bool:
        return bool(name) and name.split(".")[0] in packages

    found = []
    for path in sorted(package_dir.rglob("*.py")):
        where = path.relative_to(package_dir.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                found += [f"{where}:{node.lineno} import {a.name}" for a in node.names if hits(a.name)]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and hits(node.module):
                found.append(f"{where}:{node.lineno} from {node.module} import …")
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str) and hits(node.args[0].value):
                func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if func in ("import_module", "__import__"):
                    found.append(f"{where}:{node.lineno} {func}({node.args[0].value!r})")
    return found


def cycles(graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for _, w in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# ------------------------------------------------------------------------------ the package


def test_every_import_points_down():
    graph = module_graph(ROOT / "colloc", "colloc")
    assert len(graph) > 30  # the walk found the package
    violations = layer_violations(graph, LAYERS)
    assert not violations, "imports against the layers:\n" + "\n".join(violations)


def test_no_import_cycles():
    found = cycles(module_graph(ROOT / "colloc", "colloc"))
    assert not found, f"import cycles: {found}"


def test_the_library_never_imports_the_problems():
    found = imports_of_packages(ROOT / "colloc", PROBLEM_PACKAGES)
    assert not found, ("colloc/ imports the problems (they plug in through the entry points of "
                       "colloc.definition.registry):\n" + "\n".join(found))


def test_problems_import_themselves_by_their_installed_name():
    found = imports_of_packages(ROOT / "problems", ("problems",))
    assert not found, "problems/ imports 'problems' (installed as colloc_problems):\n" + "\n".join(found)


def test_no_import_cycles_in_the_problems():
    graph = module_graph(ROOT / "problems", "colloc_problems")
    assert "colloc_problems.spine.command" in graph and len(graph) > 10  # the walk found the package
    found = cycles(graph)
    unknown = [c for c in found if c not in KNOWN_PROBLEM_CYCLES]
    assert not unknown, f"import cycles in problems/: {unknown}"
    gone = [c for c in KNOWN_PROBLEM_CYCLES if c not in found]
    assert not gone, f"no longer cycles: remove them from KNOWN_PROBLEM_CYCLES: {gone}"


def test_every_subpackage_is_on_a_layer():
    on_layers = {p for layer in LAYERS for p in layer}
    present = {p.name for p in (ROOT / "colloc").iterdir() if (p / "__init__.py").exists()}
    present |= {p.stem for p in (ROOT / "colloc").glob("*.py") if p.stem != "__init__"}
    assert present == on_layers


def test_problems_use_only_the_public_api():
    from colloc.cli import PLUGIN_API

    public = set(co.__all__) | PUBLIC_MODULES
    bad = []
    for path in sorted((ROOT / "problems").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                bad += [f"{path.name}:{node.lineno} import {a.name}" for a in node.names
                        if a.name.startswith("colloc.") and a.name.split(".")[1] not in PUBLIC_MODULES]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == "colloc":
                    bad += [f"{path.name}:{node.lineno} from colloc import {a.name}"
                            for a in node.names if a.name not in public]
                elif node.module == "colloc.cli":
                    bad += [f"{path.name}:{node.lineno} from colloc.cli import {a.name} (not in PLUGIN_API)"
                            for a in node.names if a.name not in PLUGIN_API]
                elif node.module.startswith("colloc.") and node.module.split(".")[1] not in PUBLIC_MODULES:
                    bad.append(f"{path.name}:{node.lineno} from {node.module} import …")
    assert not bad, "problems/ reaches past the public API:\n" + "\n".join(bad)


# ------------------------------------------------------------------ the checks can fail


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


TOY_LAYERS = [["low"], ["mid_a", "mid_b"], ["high"]]


@pytest.fixture
def toy(tmp_path):
    return {
        "pkg/__init__.py": "from .high.top import run\n",
        "pkg/low/__init__.py": "",
        "pkg/low/util.py": "X = 1\n",
        "pkg/mid_a/__init__.py": "",
        "pkg/mid_a/a.py": "from ..low.util import X\n",
        "pkg/mid_b/__init__.py": "",
        "pkg/mid_b/b.py": "from ..low import util\n",
        "pkg/high/__init__.py": "",
        "pkg/high/top.py": "from ..mid_a.a import X\nfrom ..mid_b import b\n\ndef run():\n    return X\n",
    }


def test_checker_accepts_a_layered_toy(tmp_path, toy):
    graph = module_graph(_write(tmp_path, toy), "pkg")
    assert graph["pkg.high.top"] == [(1, "pkg.mid_a.a"), (2, "pkg.mid_b.b")]
    assert layer_violations(graph, TOY_LAYERS) == []
    assert cycles(graph) == []


def test_checker_catches_an_upward_import_inside_a_function(tmp_path, toy):
    toy["pkg/low/util.py"] = "X = 1\n\ndef late():\n    from ..high.top import run\n    return run\n"
    graph = module_graph(_write(tmp_path, toy), "pkg")
    violations = layer_violations(graph, TOY_LAYERS)
    assert len(violations) == 1 and "pkg.low.util:4" in violations[0] and " up " in violations[0]
    assert cycles(graph) == [["pkg.high.top", "pkg.low.util", "pkg.mid_a.a", "pkg.mid_b.b"]]


def test_checker_catches_sideways_and_root_imports(tmp_path, toy):
    toy["pkg/mid_a/a.py"] = "from ..low.util import X\nfrom ..mid_b.b import util\nimport pkg\n"
    graph = module_graph(_write(tmp_path, toy), "pkg")
    violations = layer_violations(graph, TOY_LAYERS)
    assert any("sideways" in v and "pkg.mid_b.b" in v for v in violations)
    assert any("package root" in v for v in violations)


def test_checker_finds_a_cycle_within_one_package(tmp_path, toy):
    toy["pkg/low/other.py"] = "from .util import X\n"
    toy["pkg/low/util.py"] = "from . import other\nX = 1\n"
    graph = module_graph(_write(tmp_path, toy), "pkg")
    assert layer_violations(graph, TOY_LAYERS) == []
    assert cycles(graph) == [["pkg.low.other", "pkg.low.util"]]


def test_checker_finds_imports_of_the_problems_at_any_depth(tmp_path, toy):
    toy["pkg/low/util.py"] = ("import importlib\n\ndef late():\n    from colloc_problems.spine import command\n"
                              "    return importlib.import_module('colloc_problems.cip')\n")
    toy["pkg/mid_a/a.py"] = "import colloc_problems._data as data\nfrom problems import pendulum\n"
    found = imports_of_packages(_write(tmp_path, toy), PROBLEM_PACKAGES)
    assert found == ["pkg/low/util.py:4 from colloc_problems.spine import …",
                     "pkg/low/util.py:5 import_module('colloc_problems.cip')",
                     "pkg/mid_a/a.py:1 import colloc_problems._data", "pkg/mid_a/a.py:2 from problems import …"]
    assert imports_of_packages(_write(tmp_path / "clean", {k: v for k, v in toy.items() if "low" not in k
                                                           and "mid_a" not in k}), PROBLEM_PACKAGES) == []


def test_checker_finds_a_cycle_through_an_import_inside_a_function_of_a_renamed_package(tmp_path):
    """A folder ``plugins/`` installed as ``my_plugins`` (as problems/ is colloc_problems): the
    spine's old cycle, ``stability`` importing ``command`` at the top and ``command`` importing
    ``stability`` in its handler."""
    root = _write(tmp_path, {"plugins/__init__.py": "", "plugins/sub/__init__.py": "",
                             "plugins/sub/command.py": "def run():\n    from my_plugins.sub.stability import go\n",
                             "plugins/sub/stability.py": "from my_plugins.sub.command import run\n\ndef go():\n"
                                                         "    return run\n",
                             "pkg/__init__.py": ""}).parent / "plugins"
    graph = module_graph(root, "my_plugins")
    assert graph["my_plugins.sub.command"] == [(2, "my_plugins.sub.stability")]
    assert cycles(graph) == [["my_plugins.sub.command", "my_plugins.sub.stability"]]


def test_import_time_of_the_api_stays_lazy_about_plotting():
    """``import colloc`` must not pull matplotlib in (plots import it when drawn)."""
    import subprocess

    code = "import sys, colloc; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"
