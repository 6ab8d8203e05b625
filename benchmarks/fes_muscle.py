"""FES muscle (Wieber & Billet 2006 §4–5): event-driven simulation and identification by
multi-phase collocation, each side by side with a smoothed (no events) formulation of the same
model.

    python benchmarks/fes_muscle.py [--quick] [--fit 10 20 30 50] [--kind clean|noisy]
                                    [--no-smoothed] [--out FILE.json]

* simulation of each of the four shipped 2 s, 1 kHz trains (10, 20, 30, 50 Hz): the
  event-driven simulator (colloc.simulate_hybrid; target < 1 s per trial) and the smoothed model
  (benchmarks/_fes_smoothed.simulate_smoothed: tanh steps of 0.5 ms for the clock's jumps, √(x² + δ²) for |x|,
  LSODA without events): wall time, events, the smoothed force's largest error;
* identification from the poor default guess of the shipped trains named by ``--fit``
  (default the four; ``--kind`` clean or noisy): the library's timed hybrid fit, multi-phase
  collocation between the clock's events (``co.solve(fes_muscle.problem(trials), co.Radau(3))``,
  target ≤ 30 s) and the smoothed formulation on one uniform 0.5 ms mesh
  (benchmarks/_fes_smoothed.identify_smoothed): wall and CPU time, iterations, relative errors, and for noisy
  records |estimate − truth| / standard error.  ``--quick``: one 0.3 s train of 10 Hz.

Reports, never asserts (a missed target prints FAIL).  Writes benchmarks/results/fes_muscle.json
(or --out) atomically, with the load average (other processes distort wall times).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import _fes_smoothed as smoothed  # the smoothed baseline, beside this script (run as python benchmarks/NAME.py)
import numpy as np
from colloc_problems import fes_muscle as fm
from colloc_problems._data import data_path

import colloc as co

FREQS = (10, 20, 30, 50)


def _hybrid(trials) -> dict:
    """The library's fit (what `colloc identify fes-muscle` runs) as the rows' dict."""
    res = co.solve(fm.problem(trials), co.Radau(degree=3), solver=co.Ipopt(**fm.IPOPT_OPTIONS))
    return {"parameters": res.parameters, "standard_errors": res.standard_errors, "success": res.success,
            "status": res.status, "iterations": res.iterations, "variables": res.info["num_variables"],
            "rounds": res.info["rounds"], "residual_std": res.info["residual_std"], "objective": res.objective,
            **res.timings}


def _fit(name, run, trials):
    t0, c0 = time.perf_counter(), time.process_time()
    res = run(trials)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    errors = {n: res["parameters"][n] / fm.TRUE[n] - 1 for n in fm.NAMES}
    z = {n: abs(res["parameters"][n] - fm.TRUE[n]) / res["standard_errors"][n] for n in fm.NAMES}
    row = {"formulation": name, "time_s": wall, "cpu_s": cpu, "success": res["success"],
           "iterations": res["iterations"], "variables": res["variables"], "relative_errors": errors,
           "max_abs_relative_error": max(abs(v) for v in errors.values()), "z": z,
           "within_3se": int(sum(v < 3 for v in z.values())),
           **{k: v for k, v in res.items() if k not in ("states", "parameters", "covariance")},
           "parameters": res["parameters"]}
    print(f"{name:12s} {wall:6.1f} s (CPU {cpu:5.1f} s)  success {res['success']}  iterations {res['iterations']:3d}"
          f"  max |rel. error| {row['max_abs_relative_error']:.2e}  within 3 SE {row['within_3se']}/7")
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--fit", nargs="+", type=int, default=list(FREQS), choices=FREQS,
                    help="pulse rates (Hz) of the shipped trains to identify from (default: all four)")
    ap.add_argument("--kind", choices=("clean", "noisy"), default="clean", help="shipped records to identify from")
    ap.add_argument("--no-smoothed", action="store_true", help="skip the smoothed identification")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "fes_muscle.json"))
    args = ap.parse_args(argv)
    load = os.getloadavg()[0]
    trials = [fm.load_trial(data_path("fes_muscle", f"clean_{f}hz.csv")) for f in FREQS]
    if args.quick:
        trials = trials[:1]
    rows = []
    for tr in trials:
        t0, c0 = time.perf_counter(), time.process_time()
        force, sim = fm.simulate(fm.TRUE, tr.time, tr["pulse"], tr["alpha"], full=True)
        t_event, c_event = time.perf_counter() - t0, time.process_time() - c0
        t0 = time.perf_counter()
        smooth = smoothed.simulate_smoothed(fm.TRUE, tr)
        t_smooth = time.perf_counter() - t0
        rows.append({"trial": tr.name, "events": len(sim.events), "event_driven_s": t_event, "event_driven_cpu_s": c_event,
                     "smoothed_s": t_smooth, "smoothed_max_error_N": float(np.max(np.abs(smooth - force))),
                     "event_driven_vs_shipped_max_N": float(np.max(np.abs(force - tr["force"])))})
        print(f"{tr.name:16s} events {len(sim.events):4d}  event-driven {t_event:6.2f} s (CPU {c_event:4.2f} s) "
              f"[{'PASS' if t_event < 1 else 'FAIL'} < 1 s]  smoothed {t_smooth:6.2f} s"
              f"  smoothed error {rows[-1]['smoothed_max_error_N']:.3g} N")
    fit_trials = ([fm.make_trial(10, duration=0.3, first=0.05, last=0.15)] if args.quick else
                  [fm.load_trial(data_path("fes_muscle", f"{args.kind}_{f}hz.csv")) for f in args.fit])
    print(f"identification from {', '.join(tr.name for tr in fit_trials)} (load average {load:.1f}):")
    fits = [_fit("multi-phase", _hybrid, fit_trials)]
    print(f"{'':12s} target <= 30 s: {'PASS' if fits[0]['time_s'] <= 30 else 'FAIL'}")
    if not args.no_smoothed:
        fits.append(_fit("smoothed", smoothed.identify_smoothed, fit_trials))
    doc = {"benchmark": "fes_muscle", "quick": args.quick, "kind": args.kind, "fit": [tr.name for tr in fit_trials],
           "load_average_1min": {"start": load, "end": os.getloadavg()[0]}, "simulation": rows,
           "identification": fits[0], "smoothed_identification": fits[1] if len(fits) > 1 else None,
           "versions": co.versions()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    co.write_atomic(args.out, json.dumps(doc, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
