"""No test asserts a wall-clock limit: a timing depends on the machine and its load (a spine test
that asserted ``total_s <= 60`` failed at 66.5 s under load), so timings belong in
``benchmarks/``, which report them against their targets and never assert.

The scan reads every test module's syntax tree and refuses an assertion (``assert``, or
``assert_array_less``/``assertLess``…) that bounds a timing from above by a number (a lower
bound, such as a check that a timing is positive, cannot fail because a machine is busy).  A
timing is an expression that calls a clock
(``time.perf_counter()``, ``time.time()``, ``time.monotonic()``, ``time.process_time()``), a
name assigned from one in the same function, anything named ``elapsed…``, an entry of a
``timings`` mapping, or a name, attribute or key of the timing vocabulary below.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

CLOCKS = {"perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns", "process_time",
          "process_time_ns"}
#: Names of durations as this code base writes them (result ``timings`` keys, benchmark fields).
TIMING_NAMES = {"total_s", "build_s", "solve_s", "start_s", "postprocess_s", "covariance_s", "simulation_s",
                "import_s", "write_s", "plot_s", "optimization_s", "optimization_per_start_s", "preparation_s",
                "wall_s", "cpu_s", "time_s", "seconds", "runtime_s", "wall_time", "cpu_time"}
ASSERT_CALLS = {"assert_array_less", "assertLess", "assertLessEqual", "assertGreater", "assertGreaterEqual"}


def _is_clock_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in CLOCKS and not (name in ("time", "time_ns") and isinstance(f, ast.Name))


def _label(node: ast.AST) -> str | None:
    """The name an expression goes by: a variable, an attribute, a string key."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    return None


def _is_timing(node: ast.AST, clocked: set[str]) -> bool:
    for sub in ast.walk(node):
        if _is_clock_call(sub):
            return True
        label = _label(sub)
        if label is None:
            continue
        if isinstance(sub, ast.Name) and label in clocked:
            return True
        if "elapsed" in label.lower() or label in TIMING_NAMES:
            return True
        if isinstance(sub, ast.Subscript) and _label(sub.value) == "timings":
            return True
    return False


def _number(node: ast.AST) -> float | None:
    """The value of a numeric literal expression (``60``, ``2 * 60``, ``-1.5``), else None."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        if isinstance(node, ast.BinOp) and (a := _number(node.left)) is not None and (b := _number(node.right)) is not None:
            return {ast.Mult: a * b, ast.Add: a + b, ast.Sub: a - b}.get(type(node.op))
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _upper_bound(timing_left: bool, op: ast.cmpop) -> bool:
    """``timing < N``, ``timing <= N``, ``N > timing``, ``N >= timing``: a time limit."""
    return isinstance(op, (ast.Lt, ast.LtE)) if timing_left else isinstance(op, (ast.Gt, ast.GtE))


def _clocked_names(func: ast.AST) -> set[str]:
    """Names assigned (in ``func``) from an expression that reads a clock or a timing."""
    names: set[str] = set()
    changed = True
    while changed:  # t0 = perf_counter(); dt = perf_counter() - t0; elapsed = dt ...
        changed = False
        for node in ast.walk(func):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None \
                    and _is_timing(node.value, names):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Name) and sub.id not in names:
                            names.add(sub.id)
                            changed = True
    return names


def _comparisons(node: ast.AST):
    """(left, op, right) of every comparison an assertion makes."""
    if isinstance(node, ast.Assert):
        for sub in ast.walk(node.test):
            if isinstance(sub, ast.Compare):
                operands = [sub.left, *sub.comparators]
                for op, a, b in zip(sub.ops, operands, operands[1:]):
                    yield a, op, b
    elif isinstance(node, ast.Call) and len(node.args) >= 2:
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name in ASSERT_CALLS:
            op = ast.Gt() if name.startswith("assertGreater") else ast.Lt()
            yield node.args[0], op, node.args[1]


def timed_assertions(source: str, filename: str = "<test>") -> list[str]:
    """``file:line`` and text of every assertion in ``source`` that bounds a timing by a number."""
    tree = ast.parse(source, filename)
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found: dict[int, str] = {}
    # names assigned from a clock count in their own function; the module's statements see none
    for scope, clocked in [(tree, set()), *((f, _clocked_names(f)) for f in functions)]:
        for node in ast.walk(scope):
            for a, op, b in _comparisons(node):
                for timing, other, timing_left in ((a, b, True), (b, a, False)):
                    value = _number(other)
                    if value is None or not _upper_bound(timing_left, op) or not _is_timing(timing, clocked):
                        continue
                    found[node.lineno] = f"{filename}:{node.lineno}: {ast.get_source_segment(source, node)}"
    return [found[k] for k in sorted(found)]


def timeouts(source: str, filename: str = "<test>") -> list[str]:
    """``file:line`` and text of every call in ``source`` given a numeric ``timeout`` (a subprocess,
    a wait, a notebook client): a correct test run on a slow or busy machine would fail by it."""
    tree = ast.parse(source, filename)
    return [f"{filename}:{node.lineno}: {ast.get_source_segment(source, node)}" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and any(k.arg == "timeout" and _number(k.value) is not None
                                                   for k in node.keywords)]


# ---- the scanner on snippets ---------------------------------------------------------------------------------
REMOVED = '''
def test_performance_targets(baseline):
    t = baseline["timings"]
    assert t["optimization_s"] <= 30.0
    assert t["total_s"] <= 60.0
    assert t["delay_margin_s"] <= 2.0
'''

CAUGHT = {
    "perf_counter difference": "def test_a():\n    t0 = time.perf_counter()\n    run()\n    assert time.perf_counter() - t0 < 5\n",
    "a name assigned from a clock": "def test_a():\n    t0 = perf_counter()\n    run()\n    dt = perf_counter() - t0\n"
                                    "    assert dt <= 2 * 60\n",
    "elapsed": "def test_a(info):\n    assert info.elapsed_s < 1.5\n",
    "a timings entry": "def test_a(r):\n    assert r.timings['solve_s'] < 1.0\n",
    "mirrored": "def test_a(doc):\n    assert 10 > doc['wall_s']\n",
    "chained": "def test_a(doc):\n    assert 0 < doc['total_s'] < 10\n",
    "numpy's assert_array_less": "def test_a(times):\n    np.testing.assert_array_less(times['build_s'], 3.0)\n",
    "unittest's assertGreater": "def test_a(self, r):\n    self.assertGreater(30, r.timings['total_s'])\n",
}

ALLOWED = {
    "lower bounds": "def test_a(doc):\n    assert doc['time_s'] > 0 and 1e-7 < doc['timings']['write_s']\n",
    "a record length": "def test_a(doc):\n    assert doc['duration_s'] == 2.0\n",
    "a delay margin is a physical quantity": "def test_a(r):\n    assert 0.1 < r['delay_margin_s'] < 0.5\n",
    "timing against timing": "def test_a(r):\n    assert r.timings['total_s'] >= r.timings['solve_s']\n",
    "not a timing": "def test_a(x):\n    assert x['theta'] < 5\n",
    "a clock read, not compared": "def test_a():\n    t0 = time.perf_counter()\n    assert run(t0) == 3\n",
}


def test_the_scan_catches_the_timed_assertion_that_was_removed():
    hits = timed_assertions(REMOVED, "test_spine_stability.py")
    assert [h.split(": ", 1)[1] for h in hits] == ['assert t["optimization_s"] <= 30.0', 'assert t["total_s"] <= 60.0']


@pytest.mark.parametrize("case", list(CAUGHT))
def test_the_scan_catches(case):
    assert len(timed_assertions(CAUGHT[case])) == 1, CAUGHT[case]


@pytest.mark.parametrize("case", list(ALLOWED))
def test_the_scan_allows(case):
    assert timed_assertions(ALLOWED[case]) == [], ALLOWED[case]


# ---- the suite ----------------------------------------------------------------------------------------------
def test_no_test_asserts_a_wall_clock_limit():
    modules = sorted(TESTS.rglob("*.py"))
    assert len(modules) > 50 and Path(__file__) in modules
    hits = [h for path in modules for h in timed_assertions(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS)))]
    assert not hits, ("timed assertions (move the timing to a benchmark in benchmarks/, which reports it):\n"
                      + "\n".join(hits))


def test_the_timeout_scan_catches_a_subprocess_limit_and_allows_none():
    assert len(timeouts("subprocess.run(['x'], capture_output=True, timeout=600)\n")) == 1
    assert len(timeouts("proc.communicate(timeout=2 * 60)\n")) == 1
    assert timeouts("NotebookClient(nb, timeout=None).execute()\nproc.wait()\n") == []


def test_no_test_waits_with_a_wall_clock_limit():
    modules = sorted(TESTS.rglob("*.py"))
    hits = [h for path in modules if path != Path(__file__)
            for h in timeouts(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS)))]
    assert not hits, "calls with a timeout (wait for the result instead):\n" + "\n".join(hits)
