"""Two-link seed case on longer records: 6k, 60k, 600k nodes (60 s, 600 s, 6000 s at 100 Hz).

    python benchmarks/two_link_scaling.py [--nodes 6001 60001 600001] [--out FILE.json]

Each record is the seed case (docs/contracts.md §2 gains, noise and excitation, seed 0) made longer,
identified with errors-in-variables and the midpoint rule, each size in a fresh subprocess
(peak memory per size). Reported: build, solve and total time, iterations, peak RSS, mean
and max |K error| %, and the fitted exponent of total time against nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from colloc import write_atomic


def worker(nodes: int) -> dict:
    import colloc as co
    from colloc_problems import two_link as tl

    duration = (nodes - 1) / 100.0
    t0 = time.perf_counter()
    trial = tl.simulate_trial(duration=duration, seed=0)
    data_s = time.perf_counter() - t0
    r = co.solve(tl.problem(trial), co.Midpoint(), solver=co.Ipopt(standard_errors=False, simulate=False),
                 throw=False)
    err = np.array([abs(r.parameters[k] / v - 1) * 100 for k, v in tl.TRUE.items()])
    return {
        "nodes": nodes, "duration_s": duration, "data_s": data_s,
        "build_s": r.timings["build_s"], "solve_s": r.timings["solve_s"], "total_s": r.timings["total_s"],
        "iterations": r.iterations, "status": r.status, "success": r.success,
        "mean_abs_k_error_pct": float(err.mean()), "max_abs_k_error_pct": float(err.max()),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[6001, 60001, 600001])
    ap.add_argument("--out", default="benchmarks/results/two_link_scaling.json")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return 0
    rows = []
    print(f"{'nodes':>8}{'record s':>10}{'build s':>9}{'solve s':>9}{'total s':>9}{'iter':>6}{'peak MB':>9}"
          f"{'mean|dK|%':>11}{'max|dK|%':>10}")
    for n in args.nodes:
        proc = subprocess.run([sys.executable, __file__, "--worker", str(n)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{n:>8}  failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr else '?'}")
            break
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{n:>8}{row['duration_s']:>10.0f}{row['build_s']:>9.2f}{row['solve_s']:>9.2f}{row['total_s']:>9.2f}"
              f"{row['iterations']:>6}{row['peak_rss_mb']:>9.0f}{row['mean_abs_k_error_pct']:>11.2f}"
              f"{row['max_abs_k_error_pct']:>10.2f}", flush=True)
    exponent = None
    if len(rows) >= 2:
        exponent = float(np.polyfit(np.log([r["nodes"] for r in rows]), np.log([r["total_s"] for r in rows]), 1)[0])
        print(f"total time ~ nodes^{exponent:.2f}")
    from colloc import versions

    doc = {"benchmark": "two_link_scaling", "rows": rows, "exponent": exponent, "versions": versions(),
           "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count()}}
    out = Path(args.out)
    write_atomic(out, json.dumps(doc, indent=1))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
