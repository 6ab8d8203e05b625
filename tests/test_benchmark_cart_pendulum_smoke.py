"""Smoke test of benchmarks/cart_pendulum_vs_opty.py in a quick mode (few links and nodes).

opty is not a test dependency: the colloc-only path runs everywhere, the comparison only
where opty is importable, in the slow lane (its code generation and compilation take
~30 s on this machine even for one link)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "benchmarks/cart_pendulum_vs_opty.py"
VARIANTS = ("colloc-default", "colloc", "colloc-compiled", "colloc-compiled-all")


def _run(tmp_path, *extra):
    out = tmp_path / "cart.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--quick", *extra, "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads(out.read_text(encoding="utf-8"))


def _check_colloc(doc, n, N):
    for name in VARIANTS:
        tool = doc["tools"][name]
        assert tool["num_constraints"] == 2 * (n + 1) * (N - 1)
        assert tool["num_free"] == 2 * (n + 1) * N + 2 * n + 2
        assert tool["constraint_s"] > 0 and tool["jacobian_s"] > 0
        assert len(tool["jacobian_samples_s"]) == doc["config"]["repeat"]
    assert doc["load_average_1min"] and {"colloc", "casadi"} <= set(doc["versions"])
    local = doc["local_functions"]
    assert local["intervals"] == N - 1 and local["compiled"]["jacobian"] > 0


def test_quick_colloc_alone(tmp_path):
    proc, doc = _run(tmp_path, "--no-opty", "--links", "2", "--nodes", "60")
    assert doc["opty"] == "skipped" and "opty" not in doc["tools"] and doc["ratios"] == {}
    _check_colloc(doc, 2, 60)
    assert "colloc-compiled-all" in proc.stdout
    # 2 links at 60 nodes: the default keeps the model interpreted, and says so
    assert doc["tools"]["colloc-default"]["compile_note"] in ("interpreted (small problem)",
                                                              "interpreted (no C compiler)")
    assert doc["tools"]["colloc"]["compile_note"].startswith("interpreted (")


@pytest.mark.slow  # opty's code generation and C compilation alone take ~30 s here, even for one link
def test_quick_against_opty(tmp_path):
    pytest.importorskip("opty")
    _, doc = _run(tmp_path, "--links", "1", "--nodes", "40")
    _check_colloc(doc, 1, 40)
    opty = doc["tools"]["opty"]
    assert opty["num_constraints"] == 4 * 39 and opty["jacobian_nonzeros"] == 4 * 39 * (8 + 4)
    assert opty["build_s"] > 0
    for name in VARIANTS:
        check = doc["constraint_check"][name]
        # the same equations (up to the force read at the centre vs averaged in the cart row)
        assert check["max_abs_diff_except_cart_row"] < 1e-9 * max(1.0, check["max_abs_constraint"])
        assert set(doc["ratios"][name]) == {"constraint", "jacobian"}
    assert set(doc["targets"]) == {f"{name}_within_one_third_of_opty" for name in VARIANTS}
