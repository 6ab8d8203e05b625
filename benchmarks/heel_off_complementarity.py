"""`heel-off`: the complementarity formulation (modes out of the fit) against the multi-phase
method (modes read from the data), on the same records.

    python benchmarks/heel_off_complementarity.py [--quick] [--records NAME,...] [--methods M,...]
                                                  [--time-limit S] [--out FILE.json]

Records: the shipped ``heel_off.csv`` (8 s, noisy), ``heel_off_clean.csv`` (8 s, clean),
``flat.csv`` (4 s, noisy, the foot never leaves the ground), and the 20 s noisy and clean
records of benchmarks/heel_off.py (``heel_off.make_trial(20, seed=1)``, the contact simulator).
Methods: ``multiphase`` (heel_off.identify) and ``complementarity``
(``co.solve`` of heel_off_complementarity.contact_problem, the library's co.Complementarity).
Per fit: status, kp/kd error (% and in standard errors), the switching times found against the
simulator's events (each true event matched to the nearest switch of the same kind; the largest
error, and the numbers of events found and true), wall time, IPOPT iterations, homotopy steps.
``--quick``: a 1.5 s clean record (one heel-off), the complementarity method only.  Writes
benchmarks/results/heel_off_complementarity.json (or --out) atomically.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from colloc_problems import heel_off, heel_off_complementarity
from colloc_problems._data import data_path

import colloc as co

RECORDS = ("heel_off.csv", "heel_off_clean.csv", "flat.csv", "noisy_20s", "clean_20s")


def complementarity(trials, time_limit: float) -> dict:
    """``co.solve(ContactProblem, Complementarity())`` of heel-off
    (:func:`heel_off_complementarity.identify_result`), its result as the rows read it."""
    res = heel_off_complementarity.identify_result(trials, time_limit=time_limit)
    stage = res.info["complementarity"]
    return {"success": res.success, "status": res.status, "iterations": res.iterations,
            "parameters": res.parameters, "standard_errors": res.standard_errors, "modes": res.info["modes"],
            "switches": res.info["switches"], "polished": res.info["polished"], "complementarity": stage,
            "homotopy": stage["homotopy"], "residual_rms": None}


METHODS = {"multiphase": heel_off.identify, "complementarity": complementarity}


def record(name: str):
    """(trial, true events [(time, kind)]) of a record name."""
    if name.endswith(".csv"):
        events = json.loads(data_path("heel_off", "events.json").read_text())[name]
        return heel_off.load_trial(data_path("heel_off", name)), [(e["time"], e["kind"]) for e in events]
    duration = 1.5 if name == "quick" else 20.0
    trial, sim = heel_off.make_trial(duration, noise=name.startswith("noisy"), seed=1, name=name)
    return trial, [(e.time, e.kind) for e in sim.events]


def switch_errors(switches: list, events: list) -> dict:
    """Each true event against the nearest found switch of its kind."""
    errors = []
    for t, kind in events:
        found = [s["time"] for s in switches if s["kind"] == kind]
        errors.append(min((abs(f - t) for f in found), default=None))
    known = [e for e in errors if e is not None]
    return {"events_true": len(events), "switches_found": len(switches),
            "events_matched": len(known), "max_switch_error_s": max(known) if known else None,
            "switch_errors_s": errors}


def fit(method: str, trial, events, time_limit: float) -> dict:
    start = time.perf_counter()
    out = METHODS[method]([trial], time_limit=time_limit)
    wall = time.perf_counter() - start
    row = {"method": method, "success": out["success"], "status": out["status"], "wall_s": wall,
           "iterations": out["iterations"], "homotopy_steps": len(out.get("homotopy", [])),
           **errors(out, events), "modes": out["modes"][0]}
    if "polished" in out:
        row["polished"] = out["polished"]
    if out.get("complementarity"):  # the fixed-grid fit before the polish freed the switching times
        stage = out["complementarity"]
        row["fixed_grid"] = {"status": stage["status"], "success": stage["success"], **errors(stage, events)}
    return row


def errors(out: dict, events: list) -> dict:
    """Parameters, standard errors, their errors against the simulator's gains, the switches."""
    p, se = out["parameters"], out["standard_errors"]
    return {"parameters": p, "standard_errors": se,
            "error_pct": {k: 100 * (p[k] / heel_off.TRUE[k] - 1) for k in heel_off.NAMES},
            "error_in_se": {k: (p[k] - heel_off.TRUE[k]) / se[k] if se[k] > 0 else None for k in heel_off.NAMES},
            "residual_rms": out.get("residual_rms"), **switch_errors(out["switches"][0], events)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--records", default=",".join(RECORDS), help=f"comma-separated, from {', '.join(RECORDS)}")
    ap.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, from {', '.join(METHODS)}")
    ap.add_argument("--time-limit", type=float, default=600.0, help="wall-clock budget of each fit (s)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "heel_off_complementarity.json"))
    args = ap.parse_args()
    records = ["quick"] if args.quick else args.records.split(",")
    methods = ["complementarity"] if args.quick else args.methods.split(",")
    bad = [r for r in records if r not in (*RECORDS, "quick")] + [m for m in methods if m not in METHODS]
    if bad:
        raise SystemExit(f"unknown record(s)/method(s): {', '.join(bad)}")
    rows = []
    for name in records:
        trial, events = record(name)
        for method in methods:
            row = {"record": name, **fit(method, trial, events, args.time_limit)}
            rows.append(row)
            for label, part in ((method, row), ("  fixed grid", row.get("fixed_grid"))):
                if part is None:
                    continue
                e, s = part["error_pct"], part["error_in_se"]
                sw = part["max_switch_error_s"]
                print(f"{name:<20} {label:<16} {part['status']:<22} kp {e['kp']:+7.2f} % ({s['kp'] or 0:+7.1f} SE)  "
                      f"kd {e['kd']:+7.2f} % ({s['kd'] or 0:+7.1f} SE)  events {part['events_matched']}/"
                      f"{part['events_true']} (found {part['switches_found']}) max err "
                      f"{'-' if sw is None else f'{sw:.4f}'} s" + (f"  {row['wall_s']:6.1f} s  {row['iterations']} it"
                                                                     if part is row else ""), flush=True)
            write(args.out, rows)  # after every fit: a long run stopped early keeps what it measured
    print(f"written {args.out}")


def write(path: str, rows: list) -> None:
    doc = {"benchmark": "heel_off_complementarity", "rows": rows, "true": heel_off.TRUE, "versions": co.versions()}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    co.write_atomic(path, json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
