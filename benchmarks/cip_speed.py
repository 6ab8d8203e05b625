"""CIP solve time per formulation: collocation vs the paper's steepest descent with adjoint
gradients (Barauskas & Krušinskienė 2007), one 60 s record at 100 Hz, one run.

    python benchmarks/cip_speed.py [--duration 60] [--seed 0] [--sd-max-iter 300]

For each formulation of colloc_problems.cip (known, J_u, J_S, J_T, MAP, MAP-OM) the same Problem is
solved by

* ``collocation``: midpoint, IPOPT (exact Hessian; limited-memory for J_S);
* ``steepest-descent``: single shooting, adjoint gradient (reverse mode through the RK4
  integrator, one step per sample: the conjugate-variable method of the paper), projected
  steepest descent with the paper's stopping rule (objective change < 0.05 %);
* ``l-bfgs``: the same shooting objective and gradient with scipy's L-BFGS-B, for context.

Printed: time, iterations, final objective, max relative gain error against the truth, and
the ratio steepest-descent time / collocation time.  Also the paper's own J_T procedure
(inverse dynamics + least squares) and the Kalman-filter ML.  Written as JSON (atomically).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import colloc as co
from colloc import versions, write_atomic
from colloc_problems import cip


def error(params) -> float:
    return float(max(abs(params[k] / cip.TRUE[k] - 1) for k in cip.GAINS))


def run_one(prob, method, solver=None) -> dict:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = co.solve(prob, method, solver=solver, throw=False)
    return {"method": r.method, "success": bool(r.success), "status": r.status, "iterations": int(r.iterations),
            "objective": float(r.objective), "time_s": time.perf_counter() - t0,
            "parameters": dict(r.parameters), "max_error": error(r.parameters)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sd-max-iter", type=int, default=300, help="steepest-descent iteration cap")
    ap.add_argument("--formulations", default=",".join(cip.FORMULATIONS))
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "cip_speed.json"))
    args = ap.parse_args(argv)
    forms = [f.strip() for f in args.formulations.split(",") if f.strip()]
    bad = [f for f in forms if f not in cip.FORMULATIONS]
    if bad:
        ap.error(f"--formulations: unknown {', '.join(bad)}; available: {', '.join(cip.FORMULATIONS)}")
    trial = cip.simulate_trial(seed=args.seed, duration=args.duration)
    rows = []
    t_all = time.perf_counter()
    for form in forms:
        prob = cip.problem(trial, form)
        solver = co.Ipopt(simulate=False, hessian="limited-memory" if form == "J_S" else "exact",
                          max_iter=1000 if form == "J_S" else 500)
        col = run_one(prob, co.Midpoint(), solver)
        sd = run_one(prob, co.SingleShooting(gradient=co.Adjoint(), optimizer=co.SteepestDescent(max_iter=args.sd_max_iter),
                                             integrator=co.RungeKutta()))
        lb = run_one(prob, co.SingleShooting(gradient=co.Adjoint(), optimizer=co.LBFGS(),
                                             integrator=co.RungeKutta()))
        row = {"formulation": form, "collocation": col, "steepest_descent": sd, "lbfgs": lb,
               "ratio_sd_over_collocation": sd["time_s"] / col["time_s"],
               "ratio_lbfgs_over_collocation": lb["time_s"] / col["time_s"]}
        rows.append(row)
        print(f"{form:7s} collocation {col['time_s']:7.2f} s ({col['iterations']:4d} it, e {col['max_error']:6.1%})  "
              f"steepest descent {sd['time_s']:7.2f} s ({sd['iterations']:4d} it, {sd['status']}, e {sd['max_error']:6.1%})  "
              f"ratio {row['ratio_sd_over_collocation']:6.1f}×  |  L-BFGS {lb['time_s']:7.2f} s "
              f"({lb['iterations']} it, e {lb['max_error']:.1%})", flush=True)
    t0 = time.perf_counter()
    jt = cip.jt_inverse_dynamics(trial)
    extra = {"J_T-paper": {"time_s": time.perf_counter() - t0, "parameters": jt["parameters"],
                           "max_error": error(jt["parameters"])}}
    t0 = time.perf_counter()
    ml = cip.ml_estimate(trial)
    extra["ML"] = {"time_s": time.perf_counter() - t0, "parameters": {k: ml.parameters[k] for k in cip.GAINS},
                   "max_error": error(ml.parameters), "success": bool(ml.success)}
    for k, v in extra.items():
        print(f"{k:9s} {v['time_s']:7.2f} s  e {v['max_error']:6.1%}  " +
              ", ".join(f"{g} {v['parameters'][g]:.2f}" for g in cip.GAINS))
    doc = {"benchmark": "cip_speed", "duration_s": args.duration, "seed": args.seed, "truth": cip.TRUE,
           "rows": rows, "extra": extra, "wall_s": time.perf_counter() - t_all,
           "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": sys.version.split()[0]},
           "versions": versions()}
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(doc, indent=1))
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
