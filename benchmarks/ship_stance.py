"""ship-stance identification time: the 4-link spatial human on a 6-DoF deck at 100 Hz.

The issue's performance case: a 60 s record at 100 Hz (24 states, 16 gains), identified by
the default method (Radau, degree 2) and the problem's IPOPT options (``ss.IPOPT_OPTIONS``:
the Gauss–Newton Hessian) from the default poor guesses; records the timings, the gains'
errors and how many lie within 3 standard errors of the truth.

    python benchmarks/ship_stance.py            # 60 s record (about ten minutes here)
    python benchmarks/ship_stance.py --quick    # 2 s record, for the smoke test
    python benchmarks/ship_stance.py --noise --ldl casadi   # standard errors by CasADi's ldl, not qdldl
    python benchmarks/ship_stance.py --noise --hessian exact   # IPOPT with the exact Hessian, not JᵀJ

Writes benchmarks/results/ship_stance.json (or --out).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import colloc as co
from colloc_problems import ship_stance as ss

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_report  # noqa: E402


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 2 s record")
    parser.add_argument("--duration", type=float, default=60.0, help="record length, s")
    parser.add_argument("--noise", action="store_true", help="noisy record (default clean)")
    parser.add_argument("--interpreted", action="store_true",
                        help="evaluate the model's derivatives in CasADi's virtual machine (no C compiler)")
    parser.add_argument("--ldl", choices=("auto", "casadi"), default="auto",
                        help="KKT factorisation of the standard errors: qdldl when installed (auto) or "
                             "CasADi's ldl (casadi), to compare the two")
    parser.add_argument("--hessian", choices=("exact", "gauss-newton"), default=ss.IPOPT_OPTIONS["hessian"],
                        help="IPOPT's Hessian: the problem's default (the Gauss–Newton JᵀJ) or the exact one")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "ship_stance.json")
    args = parser.parse_args(argv)
    duration = 2.0 if args.quick else args.duration
    if args.ldl == "casadi":
        from colloc.inference import covariance
        covariance._qdldl_factor = lambda K: None
    t0 = time.perf_counter()
    trial = ss.simulate_trial(duration=duration, seed=0, noise=args.noise, deck=False)
    simulate_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    load_before = os.getloadavg()
    result = co.solve(ss.problem(trial, compiled=not args.interpreted), solver=co.Ipopt(hessian=args.hessian),
                      throw=False)
    wall_s = time.perf_counter() - t0
    errors = {k: 100.0 * (result.parameters[k] / v - 1.0) for k, v in ss.TRUE.items()}
    se = result.standard_errors or {}
    within = sum(abs(result.parameters[k] - v) <= 3 * se[k] for k, v in ss.TRUE.items() if k in se)
    report = {
        "problem": "ship-stance", "method": "radau2", "duration_s": duration, "rate_hz": 100.0,
        "noise": args.noise, "quick": args.quick, "compiled": not args.interpreted, "ldl": args.ldl,
        "hessian": args.hessian, "loadavg_before": load_before,
        "success": bool(result.success),
        "status": result.status, "iterations": result.iterations,
        "timings": dict(result.timings), "identify_wall_s": wall_s, "simulate_s": simulate_s,
        "gain_error_pct": errors, "max_abs_gain_error_pct": max(abs(e) for e in errors.values()),
        "within_3se": int(within),
    }
    write_report(args.out, report)
    print(f"ship-stance {duration:g} s at 100 Hz: success {result.success}, "
          f"{result.iterations} iterations, identify {wall_s:.1f} s "
          f"(build {result.timings.get('build_s', float('nan')):.1f} s, "
          f"solve {result.timings.get('solve_s', float('nan')):.1f} s, "
          f"standard errors {result.timings.get('covariance_s', float('nan')):.1f} s, "
          f"simulation check {result.timings.get('simulation_s', float('nan')):.1f} s), "
          f"max gain error {report['max_abs_gain_error_pct']:.3f} %, {within}/16 within 3 SE; "
          f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after")
    return report


if __name__ == "__main__":
    main()
