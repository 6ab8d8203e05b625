"""The heel-off modules import in one direction: the problem's entry (heel_off, what the command
line finds) over its fits on the library (hybrid, delayed, glued, complementarity) over its
specifications (body ← simulator ← records ← start); none of them is on an import cycle (every
import counts, inside functions too, relative or absolute)."""

from __future__ import annotations

import ast
from pathlib import Path

PROBLEMS = Path(__file__).resolve().parents[2] / "problems"


def _graph(root: Path) -> dict[str, set[str]]:
    """Module → the modules of ``root`` it imports (names relative to ``root``, dotted)."""
    modules = {".".join(p.relative_to(root).with_suffix("").parts): p for p in root.rglob("*.py")}
    graph = {}
    for mod, path in modules.items():
        package = mod.split(".")[:-1]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                targets = [f"{stem}.{a.name}".lstrip(".") for a in node.names]
            for t in targets:
                t = t.removeprefix("colloc_problems.")
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    edges.add(t)
        graph[mod] = edges
    return graph


def _on_a_cycle(graph: dict[str, set[str]], start: str) -> bool:
    seen, stack = set(), list(graph[start])
    while stack:
        m = stack.pop()
        if m == start:
            return True
        if m not in seen:
            seen.add(m)
            stack.extend(graph.get(m, ()))
    return False


#: heel-off's specifications, each importing only those before it.
SPECIFICATIONS = ("heel_off_body", "heel_off_simulator", "heel_off_records", "heel_off_start")
#: heel-off's fits on the library.
FITS = ("heel_off_hybrid", "heel_off_fit", "heel_off_glued", "heel_off_complementarity")


def test_the_heel_off_modules_import_one_way():
    graph = _graph(PROBLEMS)
    heel = {m for m in graph if m.startswith("heel_off")}
    assert {"heel_off_complementarity", "heel_off_fit", *SPECIFICATIONS} <= graph["heel_off"]
    assert not [m for m in heel if "heel_off" in graph[m]]  # nothing imports the problem's entry
    for i, mod in enumerate(SPECIFICATIONS):
        assert graph[mod] & heel <= set(SPECIFICATIONS[:i]), mod  # no fit, no later specification
    assert {"heel_off_body", "heel_off_records", "heel_off_start"} <= graph["heel_off_hybrid"]
    assert "heel_off_hybrid" in graph["heel_off_fit"] and "heel_off_hybrid" in graph["heel_off_glued"]
    assert {"heel_off_body", "heel_off_records", "heel_off_simulator", "heel_off_start"} <= graph["heel_off_complementarity"]
    for mod in sorted(heel):
        assert not _on_a_cycle(graph, mod), mod


def test_the_check_finds_a_cycle(tmp_path):
    (tmp_path / "a.py").write_text("def f():\n    from . import b\n")
    (tmp_path / "b.py").write_text("import colloc_problems.a\n")
    (tmp_path / "c.py").write_text("from . import a\n")
    graph = _graph(tmp_path)
    assert _on_a_cycle(graph, "a") and _on_a_cycle(graph, "b") and not _on_a_cycle(graph, "c")
