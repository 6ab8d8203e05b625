"""Smoke test of benchmarks/batch.py --quick: it runs and writes its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # three local clusters: ~25 s idle, ~50 s on a loaded machine
def test_batch_benchmark_quick(tmp_path):
    out = tmp_path / "batch.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "batch.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["subjects"] == 2 and doc["wall_1_worker_s"] > 0 and doc["wall_2_workers_s"] > 0
    assert doc["same_columns"] and doc["fits_equal_serial_identify"] and "overhead_ms_per_fit" in doc
    c = doc["contention"]
    assert c["alone_s"] > 0 and c["together_s"] > 0 and c["ceiling_speedup"] == 2 * c["alone_s"] / c["together_s"]
