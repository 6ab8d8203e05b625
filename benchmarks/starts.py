"""Cost of the equation-error start and of several starts.

    python benchmarks/starts.py [--problem two-link|pendulum] [--starts 8] [--repeat 3] [--out FILE.json]
    python benchmarks/starts.py --quick --out /tmp/starts.json      # pendulum, 2 starts (seconds)

(a) The equation-error first estimate (``result.initial_estimate["time_s"]``) against
the solve it starts (``build_s + solve_s``: build + IPOPT), on the shipped two-link
seed case (6,001 samples, 8 gains).  Target: < 10 %.

(b) Wall time of ``co.solve(problem, starts=N)`` against one start (``starts=1``), each call
in a fresh Python process (so the fork server's start, which imports colloc once per
session, is counted, as for the command line): start 0 in the calling process, the starts
explored in a pool of single-threaded processes (one per core).  Also the same call with a
Dask client that is already running (its cluster start-up left out).
Target: ≤ 5× for 8 starts on 2 cores.

It reports, it never asserts: a missed target is printed as ``FAIL`` and the script exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import colloc as co
try:  # run as a script (benchmarks/ on the path) or imported as benchmarks.NAME
    from _report import write_report
except ImportError:
    from benchmarks._report import write_report
from colloc_problems import pendulum, two_link
from colloc_problems._data import data_path

ROOT = Path(__file__).resolve().parents[1]


def make_problem(name: str) -> co.Problem:
    if name == "two-link":
        return two_link.problem([two_link.load_trial(data_path(*two_link.DEFAULT_DATA))])
    return pendulum.problem([pendulum.load_trial(data_path(*pendulum.DEFAULT_DATA))])


def estimate_vs_solve(problem: co.Problem, repeat: int) -> dict:
    rows = []
    for _ in range(repeat):
        r = co.solve(problem, solver=co.Ipopt(simulate=False, standard_errors=False))
        rows.append({"estimate_s": r.initial_estimate["time_s"],
                     "solve_s": r.timings["build_s"] + r.timings["solve_s"],
                     "iterations": r.iterations, "source": r.initial_estimate["source"]})
    est = statistics.median(x["estimate_s"] for x in rows)
    sol = statistics.median(x["solve_s"] for x in rows)
    return {"runs": rows, "estimate_s": est, "solve_s": sol, "ratio": est / sol}


_TIMED = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import colloc as co
from benchmarks.starts import make_problem


def run():
    problem = make_problem({problem!r})
    client = None
    if {with_client!r}:
        from colloc.base.engine import local_client
        ctx = local_client(None, workers={workers!r})
        client = ctx.__enter__()
        co.solve(problem, solver=co.Ipopt(), starts=2, client=client, throw=False)  # workers import colloc
    t0 = time.perf_counter()
    r = co.solve(problem, solver=co.Ipopt(), starts={starts!r}, client=client, throw=False)
    wall = time.perf_counter() - t0
    info = r.starts
    print(json.dumps({{"wall_s": wall, "converged": info.get("converged", 1),
                      "local_minima": len(r.local_minima or [None]),
                      "timings": r.timings}}))
    if client is not None:
        ctx.__exit__(None, None, None)


if __name__ == "__main__":
    run()
"""


def _timed(problem: str, starts: int, with_client: bool = False) -> dict:
    """Wall time of one ``co.solve(..., starts=N)`` call in a fresh Python process (the
    library imported, the call timed: the fork server's start is in it, as for a user's
    first call of a session or the command line)."""
    import subprocess

    code = _TIMED.format(root=str(ROOT), problem=problem, starts=starts, with_client=with_client,
                         workers=os.cpu_count() or 1)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def starts_wall(problem: str, starts: int, repeat: int) -> dict:
    """As the command line runs: standard errors and the simulation check included (for one
    start; with several, start 0 and, if another minimum wins, that one)."""
    one, many, warm = [], [], []
    info = None
    for _ in range(repeat):
        one.append(_timed(problem, 1)["wall_s"])
        info = _timed(problem, starts)
        many.append(info["wall_s"])
        warm.append(_timed(problem, starts, with_client=True)["wall_s"])
    t1, tn, tw = statistics.median(one), statistics.median(many), statistics.median(warm)
    return {"starts": starts, "one_start_s": t1, "starts_s": tn, "starts_with_client_s": tw,
            "ratio": tn / t1, "ratio_with_client": tw / t1, "converged": info["converged"],
            "local_minima": info["local_minima"], "one_start_runs": one, "starts_runs": many,
            "with_client_runs": warm}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", choices=("two-link", "pendulum"), default="two-link")
    ap.add_argument("--starts", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="pendulum, 2 starts, one repeat")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "starts.json"))
    args = ap.parse_args(argv)
    if args.quick:
        args.problem, args.starts, args.repeat = "pendulum", 2, 1
    problem = make_problem(args.problem)
    a = estimate_vs_solve(problem, args.repeat)
    print(f"(a) {args.problem}: equation-error estimate {a['estimate_s']:.3f} s, solve {a['solve_s']:.3f} s, "
          f"ratio {a['ratio']:.1%}  {'PASS' if a['ratio'] < 0.10 else 'FAIL'} (target < 10 %)")
    b = starts_wall(args.problem, args.starts, args.repeat)
    print(f"(b) {args.problem}: {args.starts} starts {b['starts_s']:.2f} s (with a running client "
          f"{b['starts_with_client_s']:.2f} s) vs one start {b['one_start_s']:.2f} s on {os.cpu_count()} cores: "
          f"ratio {b['ratio']:.2f}x ({b['ratio_with_client']:.2f}x)  "
          f"{'PASS' if b['ratio'] <= 5.0 else 'FAIL'} (target <= 5x); "
          f"{b['converged']} converged, {b['local_minima']} distinct minima")
    write_report(args.out, {"problem": args.problem, "estimate_vs_solve": a, "starts": b})
    return 0


if __name__ == "__main__":
    sys.exit(main())
