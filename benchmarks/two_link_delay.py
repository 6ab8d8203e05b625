"""The feedback delay τ with the gains K: accuracy over noisy realizations, cost relative to
the model without delay, the profile over τ, and the shooting baseline.

    python benchmarks/two_link_delay.py [--realizations 10] [--duration 60] [--repeats 3] [--quick]

* Accuracy: ``--realizations`` records of the seed case with a delayed feedback
  (problems.two_link_delay: K of CONTRACTS §2, τ = 23.7 ms, 60 s at 100 Hz, seed-case noise,
  new excitation phases and noise per seed), τ unknown in [0, 0.08] s, the platform
  acceleration as errors-in-variables.  Targets: |τ̂ − τ| ≤ 2 ms and ‖K̂ − K‖/‖K‖ ≤ 10 % on
  average.  Also the coverage of τ ± 1.96 SE.
* Cost: solve time of two-link-delay and of two-link (no delay, its own seed record) at
  6,001 nodes, median of ``--repeats`` runs in this process.  Target: ratio ≤ 3.
* Profile: the objective over a grid of fixed τ (colloc.profile) with the 95 %
  likelihood-ratio interval, as a figure.
* Shooting: single shooting (adjoint, L-BFGS-B, method-of-steps RK4) and midpoint on a 10 s
  record, both from K/2 and τ = 10 ms, for context.

Written as JSON (atomically) with the profile figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import colloc as co
from colloc.result import write_atomic
from colloc.solve import versions
from problems import two_link as tl
from problems import two_link_delay as d

KEYS = list(tl.TRUE)


def accuracy(realizations: int, duration: float, first_seed: int) -> dict:
    K = np.array([tl.TRUE[k] for k in KEYS])
    rows = []
    for i in range(realizations):
        seed = first_seed + i
        trial = d.simulate_trial(duration=duration, seed=seed, name=f"seed{seed}")
        r = co.solve(d.problem(trial), co.Midpoint(), solver=co.Ipopt(simulate=False), throw=False)
        Kh = np.array([r.parameters[k] for k in KEYS])
        row = {"seed": seed, "success": r.success, "tau": r.parameters["tau"],
               "tau_se": (r.standard_errors or {}).get("tau"), "tau_error_ms": (r.parameters["tau"] - d.TAU_TRUE) * 1e3,
               "K_rel_error": float(np.linalg.norm(Kh - K) / np.linalg.norm(K)), "time_s": r.timings["total_s"],
               "iterations": r.iterations}
        rows.append(row)
        print(f"seed {seed}: tau {row['tau'] * 1e3:6.2f} ms (error {row['tau_error_ms']:+5.2f} ms, SE "
              f"{(row['tau_se'] or float('nan')) * 1e3:4.2f} ms)  ||dK||/||K|| {row['K_rel_error']:6.2%}  "
              f"{row['time_s']:5.1f} s", flush=True)
    tau_err = np.array([r["tau_error_ms"] for r in rows])
    kerr = np.array([r["K_rel_error"] for r in rows])
    se = np.array([r["tau_se"] or np.nan for r in rows]) * 1e3
    summary = {"mean_abs_tau_error_ms": float(np.mean(np.abs(tau_err))), "max_abs_tau_error_ms": float(np.max(np.abs(tau_err))),
               "mean_tau_error_ms": float(np.mean(tau_err)), "mean_K_rel_error": float(np.mean(kerr)),
               "max_K_rel_error": float(np.max(kerr)),
               "tau_coverage_95": float(np.mean(np.abs(tau_err) <= 1.96 * se)),
               "target_tau_2ms": bool(np.mean(np.abs(tau_err)) <= 2.0), "target_K_10pct": bool(np.mean(kerr) <= 0.10)}
    return {"rows": rows, "summary": summary}


def cost(repeats: int, duration: float = 60.0) -> dict:
    delayed = d.simulate_trial(seed=0, duration=duration)
    plain = tl.simulate_trial(seed=0, duration=duration)
    solver = co.Ipopt(simulate=False, standard_errors=False)
    times = {"two-link": [], "two-link-delay": []}
    iters = {}
    for _ in range(repeats):
        r = co.solve(tl.problem(plain), co.Midpoint(), solver=solver)
        times["two-link"].append(r.timings["total_s"])
        iters["two-link"] = r.iterations
        r = co.solve(d.problem(delayed), co.Midpoint(), solver=solver)
        times["two-link-delay"].append(r.timings["total_s"])
        iters["two-link-delay"] = r.iterations
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["two-link-delay"] / med["two-link"]
    print(f"cost at {plain.num_samples} nodes: two-link {med['two-link']:.2f} s ({iters['two-link']} it), two-link-delay "
          f"{med['two-link-delay']:.2f} s ({iters['two-link-delay']} it) -> ratio {ratio:.2f} "
          f"({'PASS' if ratio <= 3 else 'FAIL'} <= 3)", flush=True)
    return {"times_s": times, "median_s": med, "iterations": iters, "ratio": ratio, "target": bool(ratio <= 3)}


def profile_tau(out_png: Path, quick: bool = False) -> dict:
    trial = d.simulate_trial(seed=0, duration=20.0 if quick else 60.0)
    grid = np.round(np.arange(0.004, 0.0441, 0.008 if quick else 0.002), 6)
    prof = co.profile(d.problem(trial), "tau", grid)
    prof.plot(out_png)
    lo, hi = prof.interval()
    print(f"profile over tau: minimum on the grid at {grid[np.nanargmin(prof.objective)] * 1e3:.1f} ms, "
          f"95 % likelihood-ratio interval [{lo * 1e3:.1f}, {hi * 1e3:.1f}] ms; figure {out_png}", flush=True)
    return {"grid": grid.tolist(), "delta": prof.delta.tolist(), "interval": [lo, hi]}


def shooting(duration: float = 10.0) -> dict:
    trial = d.simulate_trial(duration=duration, seed=0)
    prob = d.problem(trial, tau_bounds=(0.0, 0.05))
    start = {**{k: 0.5 * v for k, v in tl.TRUE.items()}, "tau": 0.01}
    out = {}
    for name, method in (("midpoint", co.Midpoint()),
                         ("single-shooting", co.SingleShooting(optimizer=co.LBFGS(), integrator=co.RungeKutta(substeps=2)))):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = co.solve(prob, method, solver=co.Ipopt(simulate=False, standard_errors=False), guess=start, throw=False)
        K = np.array([tl.TRUE[k] for k in KEYS])
        Kh = np.array([r.parameters[k] for k in KEYS])
        out[name] = {"success": r.success, "status": r.status, "time_s": time.perf_counter() - t0, "iterations": r.iterations,
                     "tau": r.parameters["tau"], "K_rel_error": float(np.linalg.norm(Kh - K) / np.linalg.norm(K))}
        print(f"{duration:g} s record from K/2, tau 10 ms: {name:16s} {out[name]['time_s']:6.1f} s  {r.iterations:4d} it  "
              f"tau {r.parameters['tau'] * 1e3:5.1f} ms  ||dK||/||K|| {out[name]['K_rel_error']:.1%}  ({r.status})", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--realizations", type=int, default=10)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--first-seed", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="short records everywhere (smoke test)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "two_link_delay.json"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"benchmark": "two_link_delay", "truth": d.TRUE, "tau_bounds": d.TAU_BOUNDS}
    doc["cost"] = cost(args.repeats, 20.0 if args.quick else 60.0)
    doc["accuracy"] = accuracy(args.realizations, args.duration, args.first_seed)
    s = doc["accuracy"]["summary"]
    print(f"over {args.realizations} realizations: mean |tau error| {s['mean_abs_tau_error_ms']:.2f} ms "
          f"({'PASS' if s['target_tau_2ms'] else 'FAIL'} <= 2 ms), mean ||dK||/||K|| {s['mean_K_rel_error']:.2%} "
          f"({'PASS' if s['target_K_10pct'] else 'FAIL'} <= 10 %), tau coverage {s['tau_coverage_95']:.0%}")
    doc["profile"] = profile_tau(path.with_name("two_link_delay_profile.png"), args.quick)
    doc["shooting"] = shooting(4.0 if args.quick else 10.0)
    doc.update(wall_s=time.perf_counter() - t0, versions=versions(),
               machine={"platform": platform.platform(), "cpus": os.cpu_count(), "python": sys.version.split()[0]})
    write_atomic(path, json.dumps(doc, indent=1))
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
