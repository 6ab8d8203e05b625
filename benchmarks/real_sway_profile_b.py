"""The profile likelihood of the disturbance's time constant B on the two windows of the shift test.

    python benchmarks/real_sway_profile_b.py [--data FILE ...] [--controller PD] [--noise sway-lp]
        [--length 30] [--shift 2.5] [--out JSON]

For each BDS trial (default the shipped BDS00005, where B moved most under the 2.5 s shift;
subject 1's body) and each window (0:LENGTH and SHIFT:LENGTH+SHIFT), the fit of
``cip.stochastic_problem`` by ``co.solve(..., co.KalmanML(free_draws=0))``, then B fixed on a grid of
2^¼ steps walking out from the estimate on both sides, every other parameter refitted from the
previous grid point's estimate (continuation, one start), until the NLL is 3 above the optimum.  The
95 % profile interval is where the NLL rises by 1.92 (log-linear interpolation; None beyond the
grid), printed with the Wald and log-scale intervals of the fit's standard error.  Writes JSON
atomically (default benchmarks/results/real_sway_profile_b.json).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _report import write_report

import colloc as co

#: The shipped subject's body (BDSinfoCOP: 157.5 cm, 54.2 kg).
HEIGHT_M, MASS_KG = 1.575, 54.2
#: Grid ratio, grid points a side at most, and where the walk stops (NLL above the optimum).
STEP, MOST, STOP = 2 ** 0.25, 14, 3.0
#: Half the 95 % point of χ² with one degree of freedom.
HALF_CHI2_95 = 1.92


def _crossing(grid: np.ndarray, rise: np.ndarray, centre: int, side: range) -> float | None:
    """Where ``rise`` first passes :data:`HALF_CHI2_95` walking ``side`` away from ``centre``."""
    for j in side:
        if rise[j] > HALF_CHI2_95:
            k = j + (1 if j < centre else -1)
            t = (HALF_CHI2_95 - rise[k]) / (rise[j] - rise[k])
            return float(np.exp(np.log(grid[k]) + t * (np.log(grid[j]) - np.log(grid[k]))))
    return None


def profile(cip, trial, body, controller: str, noise: str) -> dict:
    """B's profile on ``trial``: the fit, the grid's NLL rises and the 95 % interval."""
    best = co.solve(cip.stochastic_problem(trial, controller=controller, body=body, noise=noise),
                    co.KalmanML(free_draws=0), throw=False)
    theta0 = {k: v for k, v in best.parameters.items() if k != "cop_offset"}
    b0, nll0 = theta0["B"], float(best.objective)
    lo_b, hi_b = cip.stochastic_problem(trial, controller=controller, body=body, noise=noise).bounds["B"]
    rows = []
    for ratio in (1 / STEP, STEP):
        theta, b = dict(theta0), b0
        for _ in range(MOST):
            b *= ratio
            if not lo_b < b < hi_b:
                break
            problem = cip.stochastic_problem(trial, controller=controller, body=body, noise=noise)
            problem.fixed, problem.nested = {"B": b}, None  # B held, one start from the neighbour's estimate
            r = co.solve(problem, co.KalmanML(free_draws=0), guess={k: v for k, v in theta.items() if k != "B"},
                         throw=False)
            rows.append({"B": b, "rise": float(r.objective) - nll0, "status": r.status})
            theta = {k: r.parameters[k] for k in theta0}
            if rows[-1]["rise"] > STOP:
                break
    grid = np.array([b0] + [r["B"] for r in rows])
    rise = np.array([0.0] + [r["rise"] for r in rows])
    order = np.argsort(grid)
    grid, rise = grid[order], rise[order]
    centre = int(np.flatnonzero(grid == b0)[0])
    se = best.standard_errors.get("B")
    return {"B": b0, "se": se, "status": best.status, "nll": nll0, "grid": sorted(rows, key=lambda r: r["B"]),
            "profile_95": [_crossing(grid, rise, centre, range(centre - 1, -1, -1)),
                           _crossing(grid, rise, centre, range(centre + 1, len(grid)))],
            "wald_95": None if se is None else [b0 - 1.96 * se, b0 + 1.96 * se],
            "log_95": None if se is None else [b0 * float(np.exp(-1.96 * se / b0)), b0 * float(np.exp(1.96 * se / b0))]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", action="append", help="a BDS trial file (repeatable; default the shipped BDS00005)")
    ap.add_argument("--controller", default="PD")
    ap.add_argument("--noise", default="sway-lp")
    ap.add_argument("--length", type=float, default=30.0)
    ap.add_argument("--shift", type=float, default=2.5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_sway_profile_b.json"))
    args = ap.parse_args(argv)
    from colloc_problems import cip

    files = args.data or [str(ROOT / "data" / "bds" / "BDS00005.txt.gz")]
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        print(f"--data: no such file {missing[0]}", file=sys.stderr)
        return 2
    if args.controller not in cip.CONTROLLERS or not args.noise.startswith("sway"):
        print("--controller: one of cip.CONTROLLERS; --noise: a sway model (B is a parameter there)", file=sys.stderr)
        return 2
    body = cip.body(HEIGHT_M, MASS_KG)
    out = []
    for path in files:
        trial = cip.load_trial(path, columns={"cop": "COPx"})
        for window in ((0.0, args.length), (args.shift, args.length + args.shift)):
            row = {"data": Path(path).name, "window": window,
                   **profile(cip, trial.window(*window), body, args.controller, args.noise)}
            out.append(row)
            lo, hi = row["profile_95"]
            print(f"{row['data']} {window} {args.controller}: B {row['B']:.3g} s ({row['status']}), profile 95 % "
                  f"[{lo if lo is None else round(lo, 3)}, {hi if hi is None else round(hi, 3)}] s, Wald "
                  f"{None if row['wald_95'] is None else np.round(row['wald_95'], 3).tolist()}, log scale "
                  f"{None if row['log_95'] is None else np.round(row['log_95'], 3).tolist()} · load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
    write_report(args.out, {"rows": out, "controller": args.controller, "noise": args.noise,
                            "body": {"height_m": HEIGHT_M, "mass_kg": MASS_KG}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
