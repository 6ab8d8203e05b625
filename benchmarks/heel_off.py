"""`heel-off` (Wieber & Billet 2006, §3): identification through heel-off, and what a model
that keeps the foot flat gets wrong.

    python benchmarks/heel_off.py [--duration 20] [--quick] [--out FILE.json]

* a record of ``--duration`` s at 100 Hz (default 20 s: the eight seed pulses, several heel
  and toe lifts) made by the contact simulator (colloc.simulate_contact), clean and with the
  seed noise (σ_θ = 0.1°, σ_ω = 1°/s);
* identification of kp, kd on the library's hybrid path (heel_off.identify_result, what
  ``colloc identify heel-off`` runs) from the default guess: wall time, errors, switching
  times against the true events;
* the same records identified with the foot glued flat (heel_off_glued.identify_glued: one mode,
  no contact guards, on the same path): how wrong kp, kd become.

``--quick``: a 3 s record.  ``--time-limit S`` (default 120): the budget of each identification; one
that runs out is reported with status ``time_limit`` (the benchmark never hangs).  Writes benchmarks/results/heel_off.json (or --out) atomically.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import colloc as co
from colloc_problems import heel_off, heel_off_glued


def run(trial, sim, glued: bool, time_limit: float) -> dict:
    start, cpu = time.perf_counter(), time.process_time()
    fit = heel_off_glued.identify_glued if glued else heel_off.identify_result
    res = fit([trial], time_limit=time_limit)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    row = {"model": "glued flat foot" if glued else "unilateral contacts", "success": res.success,
           "status": res.status, "wall_s": wall, "cpu_s": cpu, "parameters": res.parameters,
           "standard_errors": res.standard_errors,
           "error_pct": {k: 100 * (res.parameters[k] / heel_off.TRUE[k] - 1) for k in heel_off.NAMES},
           "error_in_se": {k: (res.parameters[k] - heel_off.TRUE[k]) / res.standard_errors[k]
                           for k in heel_off.NAMES},
           "modes": res.info["phases"][trial.name]["modes"], "rounds": res.info.get("rounds"),
           "iterations": res.iterations,
           "chi2_red": {n: v["chi2_red"] for n, v in (res.fit_verdict or {}).get("signals", {}).items()}}
    if not glued:
        found = np.array([s["time"] for s in res.info["switches"][0]])
        true = sim.event_times()
        row["switch_error_s"] = float(np.max(np.abs(found - true))) if len(found) == len(true) else None
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--time-limit", type=float, default=120.0,
                    help="wall-clock budget of each identification (s); a fit that runs out reports time_limit")
    ap.add_argument("--noisy-only", action="store_true", help="only the noisy record")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "heel_off.json"))
    args = ap.parse_args()
    duration = 3.0 if args.quick else args.duration
    rows = []
    for noise in ((True,) if args.noisy_only else (False, True)):
        trial, sim = heel_off.make_trial(duration, noise=noise, seed=1)
        events = [(round(e.time, 4), e.kind, e.name) for e in sim.events]
        for glued in (False, True):
            row = {"noise": noise, "duration_s": duration, "events": events, **run(trial, sim, glued, args.time_limit)}
            rows.append(row)
            print(f"{'noisy' if noise else 'clean'} {row['model']:<20} {row['status']:<27} kp {row['parameters']['kp']:9.3f} "
                  f"({row['error_pct']['kp']:+.2f} %, {row['error_in_se']['kp']:+.1f} SE)  kd "
                  f"{row['parameters']['kd']:8.3f} ({row['error_pct']['kd']:+.2f} %, {row['error_in_se']['kd']:+.1f} SE)"
                  f"  {row['wall_s']:.1f} s (CPU {row['cpu_s']:.1f} s)" + (f"  switches ±{row['switch_error_s']:.2g} s"
                                                 if row.get("switch_error_s") is not None else ""), flush=True)
    doc = {"benchmark": "heel_off", "rows": rows, "versions": co.versions()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    co.write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
