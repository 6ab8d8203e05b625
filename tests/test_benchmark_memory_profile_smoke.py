"""Smoke test of benchmarks/memory_profile.py (its --quick mode: 1,201 nodes), run in process."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and calls glibc's malloc_trim")
def test_memory_profile_benchmark_runs(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its `_report` helper
    spec = importlib.util.spec_from_file_location("memory_profile", ROOT / "benchmarks" / "memory_profile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "m.json"
    assert module.main(["--quick", "--out", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["nodes"] == 1201 and doc["iterations"] > 0
    steps = [r["step"] for r in doc["steps"]]
    assert steps == ["start", "imports", "file read", "transcription", "NLP assembled", "nlpsol", "solved",
                     "solver freed", "residual functions"]
    peaks = [r["peak_mb"] for r in doc["steps"]]
    assert peaks == sorted(peaks) and all(r["held_mb"] <= r["rss_mb"] + 1 for r in doc["steps"])
    assert {"g", "jac_g", "hess_lag", "res", "jac_res"} <= set(doc["functions"])
    assert set(doc["calls"]) >= {"nlp_jac_g", "nlp_hess_l"} and len(doc["estimates"]) == 8
    assert all("held_mb" in v and v["work_mb"] >= 0 for v in doc["functions"].values())
