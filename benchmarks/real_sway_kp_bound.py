"""Is K_P on its search bound (6·m·g·h) a real optimum beyond it, or a search artefact?

    python benchmarks/real_sway_kp_bound.py [--data FILE ...] [--controllers PD] [--noise sway-lp]
        [--wide 40] [--out JSON]

For each BDS trial (default the four shipped foam trials BDS00007, 08, 10, 11; subject 1's body) and
each window (the whole record, 0–30 s, 2.5–32.5 s), two fits of ``cip.stochastic_problem`` by
``co.solve(..., co.KalmanML(free_draws=0))``: the default gain range, and the same with K_P's upper
bound at ``--wide``·m·g·h.  Printed: K_P/(m·g·h), K_D/K_P, the status and the NLL of both, and the
NLL of the wide fit minus the default's (a fit on the bound whose wide optimum is within the
likelihood-ratio test's 1.92 is not excluded by the record).  CPU of the process per fit and the
load.  Writes JSON atomically (default benchmarks/results/real_sway_kp_bound.json).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _report import write_report

import colloc as co

#: The shipped subject's body (BDSinfoCOP: 157.5 cm, 54.2 kg).
HEIGHT_M, MASS_KG = 1.575, 54.2
FOAM = ("BDS00007", "BDS00008", "BDS00010", "BDS00011")
WINDOWS = (None, (0.0, 30.0), (2.5, 32.5))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", action="append", help="a BDS trial file (repeatable; default the four foam trials)")
    ap.add_argument("--controllers", default="PD")
    ap.add_argument("--noise", default="sway-lp")
    ap.add_argument("--wide", type=float, default=40.0, help="K_P's upper bound in the wide fit, in m·g·h")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_sway_kp_bound.json"))
    args = ap.parse_args(argv)
    from colloc_problems import cip

    files = args.data or [str(ROOT / "data" / "bds" / f"{name}.txt.gz") for name in FOAM]
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        print(f"--data: no such file {missing[0]}", file=sys.stderr)
        return 2
    controllers = [c.strip() for c in args.controllers.split(",") if c.strip()]
    unknown = [c for c in controllers if c not in cip.CONTROLLERS]
    if unknown or args.noise not in cip.NOISE_MODELS or not args.wide > 6.0:
        print("--controllers, --noise or --wide (> 6) not understood", file=sys.stderr)
        return 2
    body = cip.body(HEIGHT_M, MASS_KG)
    mgh = body["m"] * body["g"] * body["h"]
    rows = []
    for path in files:
        trial = cip.load_trial(path, columns={"cop": "COPx"})
        for window in WINDOWS:
            part = trial if window is None else trial.window(*window)
            for controller in controllers:
                row = {"data": Path(path).name, "window": window, "controller": controller}
                for label, bounds in (("default", None), ("wide", {"KP": (None, args.wide * mgh)})):
                    c0 = time.process_time()
                    problem = cip.stochastic_problem(part, controller=controller, body=body, noise=args.noise,
                                                     bounds=bounds)
                    r = co.solve(problem, co.KalmanML(free_draws=0), throw=False)
                    row[label] = {"KP_over_mgh": r.parameters["KP"] / mgh,
                                  "KD_over_KP": r.parameters["KD"] / r.parameters["KP"], "nll": float(r.objective),
                                  "status": r.status, "cpu_s": time.process_time() - c0,
                                  "load": os.getloadavg()[0]}
                d, w = row["default"], row["wide"]
                row["wide_minus_default_nll"] = w["nll"] - d["nll"]
                rows.append(row)
                print(f"{row['data']} {window or 'whole'} {controller}: default K_P/mgh {d['KP_over_mgh']:.3f} "
                      f"({d['status']}) | wide K_P/mgh {w['KP_over_mgh']:.3f}, K_D/K_P {w['KD_over_KP']:.3f} s "
                      f"({w['status']}) | NLL wide − default {row['wide_minus_default_nll']:.3f} | "
                      f"load {w['load']:.1f}", flush=True)
    write_report(args.out, {"rows": rows, "noise": args.noise, "wide_kp_over_mgh": args.wide,
                            "body": {"height_m": HEIGHT_M, "mass_kg": MASS_KG}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
