"""FES muscle (Wieber & Billet 2006 §4–5): event-driven simulation, identification, and a
smoothed (no events) simulation of the same model side by side.

    python benchmarks/fes_muscle.py [--quick] [--fit 10 20 30 50] [--kind clean|noisy] [--out FILE.json]

* event-driven simulation (colloc.simulate_hybrid) of each of the four shipped 2 s, 1 kHz
  trains (10, 20, 30, 50 Hz): wall time and number of events;
* the smoothed formulation: the clock's jumps and |·| replaced by smooth functions of width
  ``w`` (tanh steps of 0.5 ms, |x| ≈ sqrt(x² + δ²)), integrated by solve_ivp without events:
  wall time and its largest force error against the event-driven result;
* identification by multi-phase collocation (fes_muscle.identify) from the poor default guess:
  the shipped trains named by ``--fit`` (default the four; ``--kind`` clean or noisy; ``--quick``:
  one 0.3 s train of 10 Hz), wall time and errors.

Writes benchmarks/results/fes_muscle.json (or --out) atomically.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import colloc as co
from colloc_problems import fes_muscle as fm
from colloc_problems._data import data_path

FREQS = (10, 20, 30, 50)


def smoothed_force(trial, params, width=5e-4, delta=1e-3):
    """The same model without events: smooth clock and smooth |·| (error measured, reported)."""
    p = {**fm.KNOWN, **params}
    starts = trial.pulse_times + p["tau"]
    alpha = float(trial.alpha[0])

    def step(x):
        return 0.5 * (1 + np.tanh(x / width))

    def u_of(t):
        # each cycle contributes its shape inside its own window, until the next one starts
        u = p["U_m"]
        for k, c in enumerate(starts):
            nxt = starts[k + 1] if k + 1 < len(starts) else np.inf
            if t < c - 10 * width or t > nxt + 10 * width:
                continue
            s = t - c
            shape = p["U_p"] * (1 - step(s - p["tau1"])) + p["U_p"] * step(s - p["tau1"]) * (1 - step(
                s - p["tau1"] - p["tau2"])) * np.clip(1 - (s - p["tau1"]) / p["tau2"], 0, 1) + p["U_m"] * step(
                s - p["tau1"] - p["tau2"])
            inside = step(s) * (1 - step(t - nxt))
            u = u + inside * (shape - p["U_m"])
        return u

    def sabs(x):
        return np.sqrt(x * x + delta * delta)

    def rhs(t, y):
        k, F = y
        u = u_of(t)
        up, ua = 0.5 * (u + sabs(u)), sabs(u)
        R = alpha * p["F0"] * up - ua * F
        KL = (p["k_s"] + k) * p["L_c0"]
        e = -R / (KL + F * np.tanh(R / 1e-2))
        return [-(ua + sabs(e)) * k + alpha * p["k0"] * up, -p["k_s"] * p["L_c0"] * e]

    sol = solve_ivp(rhs, (trial.time[0], trial.time[-1]), [0.0, 0.0], t_eval=trial.time, method="LSODA",
                    rtol=1e-8, atol=1e-8, max_step=2e-3)
    return sol.y[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--fit", nargs="+", type=int, default=list(FREQS), choices=FREQS,
                    help="pulse rates (Hz) of the shipped trains to identify from (default: all four)")
    ap.add_argument("--kind", choices=("clean", "noisy"), default="clean", help="shipped records to identify from")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "fes_muscle.json"))
    args = ap.parse_args(argv)
    trials = [fm.load_trial(data_path("fes_muscle", f"clean_{f}hz.csv")) for f in FREQS]
    if args.quick:
        trials = trials[:1]
    rows = []
    for tr in trials:
        t0 = time.perf_counter()
        force, sim = fm.simulate(fm.TRUE, tr.time, tr.pulse, tr.alpha, full=True)
        t_event = time.perf_counter() - t0
        t0 = time.perf_counter()
        smooth = smoothed_force(tr, fm.TRUE)
        t_smooth = time.perf_counter() - t0
        rows.append({"trial": tr.name, "events": len(sim.events), "event_driven_s": t_event,
                     "smoothed_s": t_smooth, "smoothed_max_error_N": float(np.max(np.abs(smooth - force))),
                     "event_driven_vs_shipped_max_N": float(np.max(np.abs(force - tr.force)))})
        print(f"{tr.name:16s} events {len(sim.events):4d}  event-driven {t_event:6.2f} s  smoothed {t_smooth:6.2f} s"
              f"  smoothed error {rows[-1]['smoothed_max_error_N']:.3g} N")
    fit_trials = ([fm.make_trial(10, duration=0.3, first=0.05, last=0.15)] if args.quick else
                  [fm.load_trial(data_path("fes_muscle", f"{args.kind}_{f}hz.csv")) for f in args.fit])
    t0 = time.perf_counter()
    res = fm.identify(fit_trials)
    t_id = time.perf_counter() - t0
    errors = {n: res["parameters"][n] / fm.TRUE[n] - 1 for n in fm.NAMES}
    print(f"identification: {t_id:.1f} s, {res['rounds']} rounds, success {res['success']}, "
          f"max |relative error| {max(abs(v) for v in errors.values()):.2e}")
    doc = {"benchmark": "fes_muscle", "quick": args.quick, "fit": [tr.name for tr in fit_trials], "simulation": rows,
           "identification": {"time_s": t_id, "relative_errors": errors,
                              **{k: v for k, v in res.items() if k != "states"}},
           "versions": co.versions()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    co.write_atomic(args.out, json.dumps(doc, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
