"""Reading a large trial file: time and peak memory of ``colloc.Trial.from_csv``.

Writes a pendulum-shaped CSV of ``--rows`` rows (8,000,000 by default: about 200 MB with
three columns, like a 1 kHz force-plate session of 2.2 hours) and reads it in a fresh
process, several times; reports the median wall time and the peak resident memory of the
reading process (``ru_maxrss``) beside the file size.  Target (issue 16): a 200 MB file in
under 15 s and under 1.5 GB.

    python benchmarks/large_csv.py            # 8 M rows
    python benchmarks/large_csv.py --quick    # 400 k rows (the smoke test)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from colloc import versions
from colloc.base.files import write_atomic

READER = """
import resource, sys, time
t0 = time.perf_counter()
import colloc as co
t1 = time.perf_counter()
trial = co.Trial.from_csv(sys.argv[1], required=["theta"], optional=["omega"])
t2 = time.perf_counter()
assert trial.num_samples == int(sys.argv[2]), trial.num_samples
print(t2 - t1, t1 - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
"""

BASELINE = """
import resource, sys
import colloc as co
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
"""


def write_file(path: Path, rows: int) -> None:
    """Time at 1 kHz, a damped oscillation and its rate, written in chunks (bounded memory)."""
    rng = np.random.default_rng(0)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("time,theta,omega\n")
        chunk = 500_000
        for start in range(0, rows, chunk):
            t = np.arange(start, min(start + chunk, rows)) * 1e-3
            theta = 0.3 * np.sin(2.1 * t) + 0.002 * rng.standard_normal(t.size)
            omega = 0.63 * np.cos(2.1 * t) + 0.02 * rng.standard_normal(t.size)
            np.savetxt(fh, np.column_stack([t, theta, omega]), fmt=["%.3f", "%.6f", "%.5f"], delimiter=",")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="400,000 rows, one repeat")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "large_csv.json")
    args = ap.parse_args(argv)
    rows, repeats = (400_000, 1) if args.quick else (args.rows, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.csv"
        t0 = time.perf_counter()
        write_file(path, rows)
        size_mb = path.stat().st_size / 1e6
        print(f"wrote {rows:,} rows, {size_mb:.0f} MB in {time.perf_counter() - t0:.1f} s", flush=True)
        base = float(subprocess.run([sys.executable, "-c", BASELINE], capture_output=True, text=True,
                                    check=True).stdout)
        runs = []
        for _ in range(repeats):
            out = subprocess.run([sys.executable, "-c", READER, str(path), str(rows)], capture_output=True,
                                 text=True, check=True).stdout.split()
            runs.append([float(v) for v in out])
            print(f"  read {runs[-1][0]:.2f} s · peak memory {runs[-1][2]:.0f} MB", flush=True)
    read_s = statistics.median(r[0] for r in runs)
    peak = max(r[2] for r in runs)
    doc = {
        "rows": rows, "file_mb": size_mb, "repeats": repeats,
        "read_s_median": read_s, "read_s_all": [r[0] for r in runs],
        "peak_rss_mb": peak, "import_only_rss_mb": base, "read_rss_above_import_mb": peak - base,
        "targets": {"read_s": 15.0, "peak_rss_mb": 1500.0, "for_file_mb": 200.0},
        "versions": versions(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    print(f"{size_mb:.0f} MB: read in {read_s:.2f} s (median of {repeats}), peak memory {peak:.0f} MB "
          f"({peak - base:.0f} MB above the import); written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
