"""Real quiet standing judged by prediction (issue “17 · Real sway”): fit 0–30 s, predict 30–60 s.

    python benchmarks/real_sway_heldout.py [--data FILE_OR_DIR ...] [--info BDSinfoCOP.txt]
        [--controllers PID,PD-delay,PID-delay] [--split 30] [--horizons 0.1,0.5] [--ar 20]
        [--noise paper|sway|sway-held|sway-lp] [--quick] [--out JSON]

For every BDS trial (Santos & Duarte 2016; default the shipped ones in data/bds): the subject's
body from height and mass (BDSinfoCOP), the antero-posterior COP (``COPx``, cm → m), a fit of
each controller by ``colloc identify cip --method kalman-ml --noise NOISE --window 0:SPLIT`` (the library's
path, :func:`colloc.studies.identify.identify_files`), and its predictions of the held-out part
at each horizon (:meth:`colloc.Result.predict`, the contract's ``colloc predict``).  References
fitted on the same first part: persistence (``y(t − h)``, SD of the h-sample changes) and an
AR(p) by least squares (:mod:`colloc.signals.forecast`).

Per trial, controller and horizon: the 95 % interval coverage, the mean log score (nats a
sample) and its difference to persistence and to the AR; per trial and controller the
Ljung–Box p-value (10 lags) of the held-out standardised one-step errors, and the same check of
the AR(p) and of an AR of the order of least AIC (up to 60), both fitted on the same first part:
what a black box fitted on 30 s reaches on the other 30 s (the criterion's calibration).  The
summary gives the fractions the issue's acceptance asks for, and the same fractions of the ARs.  ``--quick``: two trials, one controller.
Writes JSON atomically (default benchmarks/results/real_sway_heldout.json).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _report import write_report

from colloc.signals.forecast import coverage, fit_ar, ljung_box, log_score, persistence_forecast
from colloc.studies.identify import identify_files

#: Lags of the Ljung–Box check of the held-out one-step errors (0.1 s at 100 Hz).
LB_LAGS = 10
#: Largest AR order searched by AIC for the second black-box reference.
MAX_AIC_ORDER = 60


def _info(path: Path) -> dict:
    rows = path.read_text().splitlines()
    head = rows[0].split("\t")
    out = {}
    for line in rows[1:]:
        cells = dict(zip(head, line.split("\t")))
        out[cells["Trial"]] = cells
    return out


def _trials(items: list[str]) -> list[Path]:
    files: list[Path] = []
    for item in items:
        p = Path(item)
        files += sorted(p.glob("BDS*.txt.gz")) if p.is_dir() else [p]
    return files


def evaluate(path: Path, info: dict, controller: str, split: float, horizons: list[float], ar_order: int,
             noise: str = "paper") -> dict:
    name = path.name.split(".")[0]
    row = info[name]
    body_hm = (float(row["Height"]) / 100.0, float(row["Weight"]))
    from colloc_problems import cip

    t0, c0 = time.perf_counter(), time.process_time()
    result = identify_files("cip", [str(path)], method="kalman-ml", columns={"cop": "COPx"},
                            problem_options={"body": cip.body(*body_hm), "controller": controller, "noise": noise},
                            window=(0.0, split))
    fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
    trial = cip.load_trial(str(path), columns={"cop": "COPx"})
    cop = np.asarray(trial["cop"], dtype=float)
    dt = float(np.median(np.diff(trial.time)))
    first = trial.time < split
    out = {"trial": name, "vision": row.get("Vision"), "surface": row.get("Surface"), "controller": controller,
           "success": result.success, "status": result.status, "solver_status": result.solver_status,
           "parameters": result.parameters, "standard_errors": result.standard_errors,
           "fit_s": fit_s, "fit_cpu_s": fit_cpu, "horizons": {}}
    ar = fit_ar(cop[first], ar_order)
    aic = fit_ar(cop[first], aic_order(cop[first]))
    for h in horizons:
        steps = int(np.rint(h / dt))
        table = result.predict(trial, horizon=h, window=(split, None))
        rows = np.searchsorted(trial.time, table["time"].to_numpy())
        y = table["observed"].to_numpy()
        pm, ps = persistence_forecast(cop, steps, fit=cop[first])
        am, asd = ar.forecast(cop, steps)
        model = log_score(y, table["mean"], table["sd"])
        out["horizons"][f"{h:g}"] = {
            "coverage": coverage(y, table["mean"], table["sd"]),
            "log_score": model,
            "vs_persistence": model - log_score(y, pm[rows], ps[rows]),
            "vs_ar": model - log_score(y, am[rows], asd[rows]),
            "ar_coverage": coverage(y, am[rows], asd[rows]),
            "ar_aic_coverage": coverage(y, *(v[rows] for v in aic.forecast(cop, steps))),
        }
    one = result.predict(trial, horizon=dt, window=(split, None))
    z = (one["observed"] - one["mean"]) / one["sd"]
    out["innovations_sd"] = float(np.nanstd(z))
    out["innovations_lag1"] = float(np.corrcoef(z[1:], z[:-1])[0, 1])
    out["ljung_box_p"] = ljung_box(z, LB_LAGS)[1]
    # the same check of the black boxes fitted on the same first part: what a 30 s fit can reach
    held = ~first
    for key, model in (("ar", ar), ("ar_aic", aic)):
        m, s = model.forecast(cop, 1)
        zr = (cop[held] - m[held]) / s[held]
        out[f"{key}_order"] = model.order
        out[f"{key}_ljung_box_p"] = ljung_box(zr, LB_LAGS)[1]
        out[f"{key}_lag1"] = float(np.corrcoef(zr[1:], zr[:-1])[0, 1])
    return out


def aic_order(y, max_order: int = MAX_AIC_ORDER) -> int:
    """The AR order of least AIC (Gaussian, least squares), all orders on the same samples."""
    d = np.asarray(y, dtype=float) - float(np.mean(y))
    target = d[max_order:]
    best = (np.inf, 1)
    for p in range(1, max_order + 1):
        X = np.stack([d[max_order - i - 1: d.size - i - 1] for i in range(p)], axis=1)
        coef, *_ = np.linalg.lstsq(X, target, rcond=None)
        r = target - X @ coef
        best = min(best, (target.size * np.log(float(r @ r) / target.size) + 2 * p, p))
    return best[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=[str(ROOT / "data" / "bds")])
    ap.add_argument("--info", default=str(ROOT / "data" / "bds" / "BDSinfoCOP_subset.txt"))
    ap.add_argument("--controllers", default="PID,PD-delay,PID-delay")
    ap.add_argument("--split", type=float, default=30.0)
    ap.add_argument("--horizons", default="0.1,0.5")
    ap.add_argument("--ar", type=int, default=20)
    ap.add_argument("--noise", default="paper", help="cip.NOISE_MODELS: paper, sway, sway-held or sway-lp")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_sway_heldout.json"))
    args = ap.parse_args(argv)
    files = _trials(args.data)
    controllers = args.controllers.split(",")
    if args.quick:
        files, controllers = files[:2], controllers[:1]
    horizons = [float(h) for h in args.horizons.split(",")]
    info = _info(Path(args.info))
    runs = []
    print(f"{'trial':9s} {'model':10s} {'status':20s} " + " ".join(
        f"{'cov@' + f'{h:g}':>8s} {'dP@' + f'{h:g}':>8s} {'dAR@' + f'{h:g}':>9s}" for h in horizons)
        + f" {'LB p':>7s} {'z sd':>6s} {'CPU s':>6s}")
    for path in files:
        for controller in controllers:
            r = evaluate(path, info, controller, args.split, horizons, args.ar, args.noise)
            runs.append(r)
            cells = " ".join(f"{r['horizons'][f'{h:g}']['coverage']:8.3f} {r['horizons'][f'{h:g}']['vs_persistence']:8.3f} "
                             f"{r['horizons'][f'{h:g}']['vs_ar']:9.3f}" for h in horizons)
            print(f"{r['trial']:9s} {controller:10s} {r['status'][:20]:20s} {cells} {r['ljung_box_p']:7.3f} "
                  f"{r['innovations_sd']:6.2f} {r['fit_cpu_s']:6.2f}", flush=True)
    summary = {}
    for controller in controllers:
        mine = [r for r in runs if r["controller"] == controller]
        s = {"trials": len(mine), "success": sum(r["success"] for r in mine),
             "ljung_box_white": float(np.mean([r["ljung_box_p"] > 0.05 for r in mine])),
             "median_innovation_lag1": float(np.median([r["innovations_lag1"] for r in mine])),
             "ar_ljung_box_white": float(np.mean([r["ar_ljung_box_p"] > 0.05 for r in mine])),
             "ar_aic_ljung_box_white": float(np.mean([r["ar_aic_ljung_box_p"] > 0.05 for r in mine])),
             "ar_white_trials": [r["trial"] for r in mine if r["ar_ljung_box_p"] > 0.05],
             "ar_aic_orders": [r["ar_aic_order"] for r in mine]}
        for h in horizons:
            k = f"{h:g}"
            s[k] = {"coverage_in_0.90_0.99": float(np.mean([0.90 <= r["horizons"][k]["coverage"] <= 0.99 for r in mine])),
                    "above_persistence": float(np.mean([r["horizons"][k]["vs_persistence"] > 0 for r in mine])),
                    "median_deficit_to_ar": float(-np.median([r["horizons"][k]["vs_ar"] for r in mine])),
                    "ar_coverage_in_0.90_0.99": float(np.mean([0.90 <= r["horizons"][k]["ar_coverage"] <= 0.99
                                                               for r in mine])),
                    "ar_aic_coverage_in_0.90_0.99": float(np.mean([0.90 <= r["horizons"][k]["ar_aic_coverage"] <= 0.99
                                                                   for r in mine]))}
        summary[controller] = s
        print(controller, s)
    write_report(args.out, {"runs": runs, "summary": summary, "split_s": args.split, "ar_order": args.ar,
                            "noise": args.noise})
    return 0


if __name__ == "__main__":
    sys.exit(main())
