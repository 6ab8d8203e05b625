"""Problems are specifications (issue 18): every module under problems/ is at most
``MAX_LINES`` lines, so that a problem reads as its physics, body constants, data generator and
mode detection, split by topic (``problems/spine/``, ``problems/cip/``).  The modules still
longer are listed in ``KNOWN_LONG``, which must only shrink: a new long module fails the test,
and so does a listed one that is now short or gone (remove it from the list)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 300

#: Modules over MAX_LINES: none since 2026-11-29 (issue 18: heel-off's private multi-phase and
#: complementarity methods are the library's hybrid path and co.Complementarity now).  The set
#: may only stay empty.
KNOWN_LONG: set[str] = set()


def long_modules(root: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """``{path relative to root: lines}`` of every ``*.py`` under ``root`` (at any depth) longer
    than ``limit`` lines."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found[path.relative_to(root).as_posix()] = lines
    return found


def test_every_problem_module_is_at_most_300_lines():
    found = long_modules(ROOT / "problems")
    new = {f: n for f, n in found.items() if f not in KNOWN_LONG}
    assert not new, (f"problem modules over {MAX_LINES} lines (split them by topic, as problems/spine/ "
                     f"and problems/cip/ are): " + ", ".join(f"{f} ({n})" for f, n in new.items()))
    gone = sorted(KNOWN_LONG - set(found))
    assert not gone, f"no longer over {MAX_LINES} lines or gone, remove from KNOWN_LONG: {gone}"


def test_the_scan_counts_lines_in_subpackages(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "deep.py").write_text("x = 1\n" * 301)
    (tmp_path / "short.py").write_text("x = 1\n" * 300)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "stale.py").write_text("x = 1\n" * 400)
    assert long_modules(tmp_path) == {"pkg/deep.py": 301}
