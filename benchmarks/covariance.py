"""Time of the standard errors against the time of the solve, per shipped problem.

For each problem the shipped data are identified with ``colloc.Midpoint()`` (the
semibatch reactor on a 90 s grid, ``num_nodes=241``, all nine experiments) and the default
``colloc.Ipopt()``; ``--method radau2`` uses the command line's default method instead
(two collocation points per interval: twice the variables, a KKT matrix of ~1.7 M non-zeros
on the two-link seed case).  Reported: IPOPT's solve time (``timings["solve_s"]``), the covariance
time (``info["covariance_s"]``: Jacobians at the optimum, the KKT factorisation and the
solves), their ratio, and whether every standard error is finite.  Target: ratio ≤ 1 on
every problem (PASS/FAIL, printed; the script exits 0 either way).  Each problem is solved
``--repeat`` times and the median of each time is kept (other processes distort single
timings on a small machine).

    python benchmarks/covariance.py                       # all five problems
    python benchmarks/covariance.py --problems pendulum semibatch --repeat 1 --out /tmp/c.json
    python benchmarks/covariance.py --method radau2 --out /tmp/c_radau2.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import colloc as co
try:  # run as a script (benchmarks/ on the path) or imported as benchmarks.NAME
    from _report import write_report
except ImportError:
    from benchmarks._report import write_report
from colloc_problems import cip, pendulum, semibatch, two_link, two_link_delay
from colloc.studies.identify import make_method
from colloc_problems._data import data_path

PROBLEMS = {
    "pendulum": (pendulum, [pendulum.DEFAULT_DATA], None),
    "two-link": (two_link, [two_link.DEFAULT_DATA], None),
    "two-link-delay": (two_link_delay, [two_link_delay.DEFAULT_DATA], None),
    "cip": (cip, [cip.DEFAULT_DATA], None),
    "semibatch": (semibatch, list(semibatch.DATA_FILES), 241),
}


def run(name: str, repeat: int, method: str = "midpoint") -> dict:
    module, files, nodes = PROBLEMS[name]
    trials = [module.load_trial(data_path(*f)) for f in files]
    rows = []
    for _ in range(repeat):
        result = co.solve(module.problem(trials), make_method(method, nodes), solver=co.Ipopt(simulate=False),
                          throw=False, verdict=False)
        rows.append((result.timings["solve_s"], result.info.get("covariance_s", float("nan")), result))
    solve_s = float(np.median([r[0] for r in rows]))
    cov_s = float(np.median([r[1] for r in rows]))
    result = rows[-1][2]
    se = result.standard_errors or {}
    return {
        "problem": name,
        "method": method,
        "trials": len(trials),
        "variables": result.info.get("num_variables"),
        "solver_success": result.solver_status in ("Solve_Succeeded", "Solved_To_Acceptable_Level"),
        "solve_s": solve_s,
        "covariance_s": cov_s,
        "ratio": cov_s / solve_s,
        "standard_errors_finite": bool(se) and all(np.isfinite(v) for v in se.values()),
        "covariance_message": result.info.get("covariance_message", ""),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", choices=list(PROBLEMS), default=list(PROBLEMS))
    parser.add_argument("--method", default="midpoint", help="collocation method (default midpoint; the CLI's is radau2)")
    parser.add_argument("--repeat", type=int, default=3, help="solves per problem (median kept; default 3)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "covariance.json"))
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = []
    print(f"{'problem':<16}{'trials':>7}{'variables':>11}{'solve s':>10}{'cov s':>9}{'cov/solve':>11}  SEs     target")
    for name in args.problems:
        t0 = time.perf_counter()
        row = run(name, args.repeat, args.method)
        row["wall_s"] = time.perf_counter() - t0
        row["pass"] = bool(row["ratio"] <= 1.0 and row["standard_errors_finite"])
        rows.append(row)
        print(f"{name:<16}{row['trials']:>7}{row['variables']:>11}{row['solve_s']:>10.3f}{row['covariance_s']:>9.3f}"
              f"{row['ratio']:>11.2f}  {'finite' if row['standard_errors_finite'] else 'NaN   '}  "
              f"{'PASS' if row['pass'] else 'FAIL'}")
        sys.stdout.flush()
    write_report(args.out, {"rows": rows, "load_average_1min": load})
    return 0


if __name__ == "__main__":
    sys.exit(main())
