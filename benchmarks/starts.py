"""Cost of the equation-error start and of several starts.

    python benchmarks/starts.py [--problem two-link|pendulum] [--starts 8] [--repeat 3] [--out FILE.json]
    python benchmarks/starts.py --quick --out /tmp/starts.json      # pendulum, 2 starts (seconds)

(a) The equation-error first estimate (``result.info["initial_estimate"]["time_s"]``) against
the solve it starts (``build_s + solve_s``: build + IPOPT), on the shipped two-link
seed case (6,001 samples, 8 gains).  Target: < 10 %.

(b) Wall time of ``co.solve(problem, starts=N)`` (a local Dask cluster of one single-threaded
worker process per core, made and closed inside the call) against one start (``starts=1``),
and the same with a client that is already running (the cluster start-up left out).
Target: ≤ 5× for 8 starts on 2 cores.

It reports, it never asserts: a missed target is printed as ``FAIL`` and the script exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import colloc as co
from colloc import versions, write_atomic
from colloc.base.engine import THREAD_ENV
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
        rows.append({"estimate_s": r.info["initial_estimate"]["time_s"],
                     "solve_s": r.timings["build_s"] + r.timings["solve_s"],
                     "iterations": r.iterations, "source": r.info["initial_estimate"]["source"]})
    est = statistics.median(x["estimate_s"] for x in rows)
    sol = statistics.median(x["solve_s"] for x in rows)
    return {"runs": rows, "estimate_s": est, "solve_s": sol, "ratio": est / sol}


def starts_wall(problem: co.Problem, starts: int, repeat: int) -> dict:
    from distributed import Client, LocalCluster

    # as the command line runs: standard errors and the simulation check included (for one
    # start; with several, only the best result gets them)
    solver = co.Ipopt()
    one, many, warm = [], [], []
    info = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        co.solve(problem, solver=solver, throw=False)
        one.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        r = co.solve(problem, solver=solver, starts=starts, throw=False)
        many.append(time.perf_counter() - t0)
        info = r.info["starts"]
    cluster = LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                           dashboard_address=None, env=dict(THREAD_ENV),
                           scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"}, silence_logs=40)
    with Client(cluster) as client:
        co.solve(problem, solver=solver, starts=2, client=client, throw=False)  # workers import colloc
        for _ in range(repeat):
            t0 = time.perf_counter()
            co.solve(problem, solver=solver, starts=starts, client=client, throw=False)
            warm.append(time.perf_counter() - t0)
    cluster.close()
    t1, tn, tw = statistics.median(one), statistics.median(many), statistics.median(warm)
    return {"starts": starts, "one_start_s": t1, "starts_s": tn, "starts_with_client_s": tw,
            "ratio": tn / t1, "ratio_with_client": tw / t1, "converged": info["converged"],
            "local_minima": len(r.info["local_minima"]), "one_start_runs": one, "starts_runs": many,
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
    b = starts_wall(problem, args.starts, args.repeat)
    print(f"(b) {args.problem}: {args.starts} starts {b['starts_s']:.2f} s (with a running client "
          f"{b['starts_with_client_s']:.2f} s) vs one start {b['one_start_s']:.2f} s on {os.cpu_count()} cores: "
          f"ratio {b['ratio']:.2f}x ({b['ratio_with_client']:.2f}x)  "
          f"{'PASS' if b['ratio'] <= 5.0 else 'FAIL'} (target <= 5x); "
          f"{b['converged']} converged, {b['local_minima']} distinct minima")
    report = {"problem": args.problem, "estimate_vs_solve": a, "starts": b,
              "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                          "python": sys.version.split()[0], "loadavg": os.getloadavg()},
              "versions": versions()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out, json.dumps(report, indent=1) + "\n")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
