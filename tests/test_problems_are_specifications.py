"""Problems are specifications (issue 18): no problem module builds its own NLP, covariance or
result.  A scan of problems/ for the calls that would mean one: ``nlpsol`` (an NLP of its own),
``Estimate``/``Result``/``finalize`` (a result assembled by hand), and the covariance functions
or a pseudo-inverse (a covariance of its own).  What is still there is listed in
``KNOWN_PRIVATE``, file by file, and must only shrink: a new private path fails the test, and
so does a listed one that is gone (remove it from the list)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRIVATE_CALLS = {"nlpsol": "an NLP of its own", "Estimate": "a result assembled by hand",
                 "Result": "a result assembled by hand", "finalize": "a result assembled by hand",
                 "constrained_covariance": "a covariance of its own", "parameter_covariance": "a covariance of its own",
                 "pinv": "a covariance of its own"}

#: Private paths still in problems/: none since 2026-11-29 (issue 18: heel-off's PD and delayed
#: PD feedback are fitted on co.HybridProblem, its complementarity method is co.Complementarity's;
#: the spine's static optimisations of the activations are co.StaticOptimization's).
KNOWN_PRIVATE: dict[str, set[str]] = {}


def private_calls(root: Path) -> dict[str, set[str]]:
    """For every module under ``root``: the names of :data:`PRIVATE_CALLS` it calls."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if name in PRIVATE_CALLS:
                    names.add(name)
        if names:
            found[path.relative_to(root).as_posix()] = names
    return found


def test_no_new_private_nlp_covariance_or_result_in_problems():
    found = private_calls(ROOT / "problems")
    new = {f: sorted(n - KNOWN_PRIVATE.get(f, set())) for f, n in found.items() if n - KNOWN_PRIVATE.get(f, set())}
    assert not new, "problem modules must use the library's path: " + "; ".join(
        f"{f}: {', '.join(f'{n} ({PRIVATE_CALLS[n]})' for n in names)}" for f, names in new.items())
    gone = {f: sorted(n - found.get(f, set())) for f, n in KNOWN_PRIVATE.items() if n - found.get(f, set())}
    assert not gone, f"no longer there, remove from KNOWN_PRIVATE: {gone}"


def test_the_scan_sees_a_private_nlp(tmp_path):
    (tmp_path / "mine.py").write_text("import casadi as ca\nimport colloc as co\n"
                                      "def fit(nlp):\n    s = ca.nlpsol('x', 'ipopt', nlp)\n"
                                      "    return co.finalize(co.Estimate(**s))\n")
    assert private_calls(tmp_path) == {"mine.py": {"nlpsol", "finalize", "Estimate"}}
