"""Smoke test of benchmarks/large_csv.py --quick: it runs and writes its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_large_csv_quick(tmp_path):
    out = tmp_path / "large_csv.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "large_csv.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["rows"] == 400_000 and doc["read_s_median"] > 0 and doc["peak_rss_mb"] > doc["import_only_rss_mb"]
    assert "colloc" in doc["versions"]
