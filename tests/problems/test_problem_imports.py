"""The heel-off modules import in one direction: the problem's entry (heel_off, what the command
line finds) over its complementarity method over its multi-phase method and body; none of them
is on an import cycle (every import counts, inside functions too, relative or absolute)."""

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


def test_the_heel_off_modules_import_one_way():
    graph = _graph(PROBLEMS)
    assert {"heel_off_complementarity", "heel_off_multiphase"} <= graph["heel_off"]
    assert "heel_off_multiphase" in graph["heel_off_complementarity"]
    for mod in ("heel_off", "heel_off_complementarity", "heel_off_multiphase"):
        assert not _on_a_cycle(graph, mod), mod


def test_the_check_finds_a_cycle(tmp_path):
    (tmp_path / "a.py").write_text("def f():\n    from . import b\n")
    (tmp_path / "b.py").write_text("import colloc_problems.a\n")
    (tmp_path / "c.py").write_text("from . import a\n")
    graph = _graph(tmp_path)
    assert _on_a_cycle(graph, "a") and _on_a_cycle(graph, "b") and not _on_a_cycle(graph, "c")
