"""Are the real-sway standard errors the size of the repeat-to-repeat spread?

    python benchmarks/real_sway_robust_se.py [--data FILE_OR_DIR ...] [--controller PD] [--noise sway-lp]
        [--window 0:60] [--out JSON]

Each shipped BDS trial (Santos & Duarte 2016; the subject's body from BDSinfoCOP) is fitted by
``co.solve(cip.stochastic_problem(...), co.KalmanML(errors="robust"))``, which gives both standard
errors: the model-based one (the inverse observed Fisher information, right if the innovations are
white and Gaussian) and the robust one (the sandwich H⁻¹JH⁻¹, right also when the noise model is
not; ``colloc.inference.kalman.robust``).  The twelve trials are three repeats of four conditions
(eyes open or closed, firm or foam surface), so the pooled within-condition SD of each estimate
(8 degrees of freedom) is a spread the standard errors can be held against: it holds the sampling
error and whatever changes from one repeat to the next, so a standard error well under it is too
small.  Per parameter: that SD over the root mean square of each kind of standard error (1 if the
standard errors are the whole spread, above 1 if the repeats differ by more).  Only fits that
succeed, parameters off their bounds.  Writes JSON atomically
(default benchmarks/results/real_sway_robust_se.json).
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
from real_sway_heldout import _info, _trials

import colloc as co


def fit(path: Path, info: dict, controller: str, noise: str, window: tuple[float, float]) -> dict:
    from colloc_problems import cip

    name = path.name.split(".")[0]
    row = info[name]
    body = cip.body(float(row["Height"]) / 100.0, float(row["Weight"]))
    trial = cip.load_trial(str(path), columns={"cop": "COPx"}).window(*window)
    c0 = time.process_time()
    result = co.solve(cip.stochastic_problem(trial, controller=controller, body=body, noise=noise),
                      co.KalmanML(errors="robust", free_draws=0), throw=False)
    cpu = time.process_time() - c0
    robust = result.info.get("robust_standard_errors", {})
    return {"trial": name, "condition": f"{row.get('Vision')}/{row.get('Surface')}", "success": result.success,
            "status": result.status, "cpu_s": cpu, "parameters": dict(result.parameters),
            "robust_se": robust.get("standard_errors", {}), "model_se": robust.get("model_based_standard_errors", {}),
            "bandwidth_samples": robust.get("bandwidth_samples")}


def spread(runs: list[dict]) -> dict:
    """Per parameter: the pooled within-condition SD of the estimates, the RMS of each kind of
    standard error, and their ratios."""
    ok = [r for r in runs if r["success"]]
    names = sorted({k for r in ok for k in r["robust_se"]})
    out = {}
    for k in names:
        have = [r for r in ok if k in r["robust_se"]]
        groups: dict[str, list[float]] = {}
        for r in have:
            groups.setdefault(r["condition"], []).append(r["parameters"][k])
        ss = sum(float(np.sum((np.asarray(v) - np.mean(v)) ** 2)) for v in groups.values())
        dof = sum(len(v) - 1 for v in groups.values())
        if dof < 2:
            continue
        pooled = float(np.sqrt(ss / dof))
        rms_model = float(np.sqrt(np.mean([r["model_se"][k] ** 2 for r in have])))
        rms_robust = float(np.sqrt(np.mean([r["robust_se"][k] ** 2 for r in have])))
        out[k] = {"fits": len(have), "dof": dof, "pooled_sd": pooled, "rms_model_se": rms_model,
                  "rms_robust_se": rms_robust, "spread_over_model_se": pooled / rms_model,
                  "spread_over_robust_se": pooled / rms_robust}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=[str(ROOT / "data" / "bds")])
    ap.add_argument("--info", default=str(ROOT / "data" / "bds" / "BDSinfoCOP_subset.txt"))
    ap.add_argument("--controller", default="PD")
    ap.add_argument("--noise", default="sway-lp")
    ap.add_argument("--window", default="0:60")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_sway_robust_se.json"))
    args = ap.parse_args(argv)
    a, b = (float(x) for x in args.window.split(":"))
    info = _info(Path(args.info))
    runs = []
    for path in _trials(args.data):
        r = fit(path, info, args.controller, args.noise, (a, b))
        runs.append(r)
        print(f"{r['trial']} {r['condition']} {r['status']} cpu {r['cpu_s']:.1f} s, bandwidth "
              f"{r['bandwidth_samples']} samples; robust/model SE: "
              + " ".join(f"{k} {r['robust_se'][k] / r['model_se'][k]:.2f}" for k in r["robust_se"]
                         if r["model_se"].get(k)), flush=True)
    table = spread(runs)
    print(f"{'parameter':>9} {'fits':>4} {'pooled SD':>11} {'RMS model SE':>13} {'RMS robust SE':>14} "
          f"{'SD/model':>9} {'SD/robust':>10}")
    for k, v in table.items():
        print(f"{k:>9} {v['fits']:>4} {v['pooled_sd']:>11.4g} {v['rms_model_se']:>13.4g} {v['rms_robust_se']:>14.4g} "
              f"{v['spread_over_model_se']:>9.2f} {v['spread_over_robust_se']:>10.2f}")
    write_report(args.out, {"runs": runs, "spread": table, "controller": args.controller, "noise": args.noise,
                            "window": [a, b]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
