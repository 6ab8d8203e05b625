"""The layer contract of the package: imports point down, never up, and never in a circle.

The sub-packages of ``colloc`` are layers, bottom up (see ``colloc/__init__.py`` and the
README's Layout).  A module may import from its own sub-package and from the layers below
its own; packages on the same layer are independent of each other.  Every import counts,
including the ones inside functions.  ``problems/`` sees only the public API.
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

#: Public modules of the API besides the names in ``colloc.__all__``.
PUBLIC_MODULES = {"signals", "kalman"}


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
    """Imports inside the package ``name`` rooted at ``package_dir``, by importing module,
    reduced to the package's own modules (an import of ``a.b.c`` where ``a.b.c`` is a
    function names the module ``a.b``)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        mod = ".".join(parts[:-1] if is_package else parts)
        modules[mod] = (path, is_package)
    graph = {}
    for mod, (path, is_package) in modules.items():
        edges = []
        for line, target in imports_of(path, mod, is_package):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != mod and target.startswith(name):
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


def test_every_subpackage_is_on_a_layer():
    on_layers = {p for layer in LAYERS for p in layer}
    present = {p.name for p in (ROOT / "colloc").iterdir() if (p / "__init__.py").exists()}
    present |= {p.stem for p in (ROOT / "colloc").glob("*.py") if p.stem != "__init__"}
    assert present == on_layers


def test_problems_use_only_the_public_api():
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


def test_import_time_of_the_api_stays_lazy_about_plotting():
    """``import colloc`` must not pull matplotlib in (plots import it when drawn)."""
    import subprocess

    code = "import sys, colloc; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"
