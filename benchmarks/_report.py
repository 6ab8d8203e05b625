"""What every benchmark's JSON report carries: the machine, the load and the versions,
written atomically (the scripts here run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

from colloc import versions, write_atomic


def write_report(path, report: dict) -> None:
    """Add ``machine`` (platform, CPUs, Python, 1/5/15-min load) and ``versions`` to
    ``report`` and write it to ``path`` atomically, creating its folder."""
    report = {**report,
              "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                          "python": sys.version.split()[0], "loadavg": os.getloadavg()},
              "versions": versions()}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(report, indent=1) + "\n")
    print(f"written to {path}")
