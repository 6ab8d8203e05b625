"""CIP gains from COP-only data: bias, spread, standard errors and identifiability of every
formulation over synthetic realizations (Barauskas & Krušinskienė 2007, going beyond it).

    python benchmarks/cip_study.py [--realizations 20] [--duration 60] [--only J_u,MAP,...]

Each realization is a new 60 s record at 100 Hz (colloc_problems.cip.simulate_trial, seed
``first_seed + i``; truth colloc_problems.cip.TRUE; COP noise 0.1 mm).  Estimators:

* ``known``: disturbance torque measured (the reference best case, not COP-only);
* ``J_u``, ``J_S``: the paper's §4.1, a surrogate filtered-noise disturbance, COP time law or
  SDF fitted (collocation, midpoint; J_S with a limited-memory Hessian);
* ``J_T``: ½∫T_d'² with the COP fitted, collocation; ``J_T-paper``: the paper's procedure
  (Butterworth COM, inverse dynamics, exact least squares);
* ``MAP``: process-noise formulation (held white noise, exact prior), joint MAP, collocation;
* ``MAP-OM``: the same plus the Onsager–Machlup term (path likelihood), collocation;
* ``ML``: Kalman-filter prediction-error maximum likelihood (colloc.kalman);
* ``*-wide``: the same without Table 1's bounds (to see the real spread).

Printed per estimator and gain: mean error (bias, %), standard deviation of the estimates
(spread, %), root-mean-square error (%), mean reported standard error (%), the coverage of
±1.96 SE, how often the estimate sits on a bound, and the identifiability diagnosis (median
condition number of the scaled Fisher information and mean correlations).  Written as JSON
(atomically) with a figure of the estimates.
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

import numpy as np

import colloc as co
from colloc import save_figure, versions, write_atomic
from colloc_problems import cip

ESTIMATORS = ("known", "J_u", "J_S", "J_T", "J_T-paper", "MAP", "MAP-OM", "ML", "MAP-wide", "MAP-OM-wide",
              "ML-wide")
WIDE = {"KP": (600.0, 5000.0), "KI": (-300.0, 500.0), "KD": (0.0, 1500.0)}


def estimate(name: str, trial: co.Trial) -> dict:
    """One estimator on one record: parameters, standard errors, covariance, time, success."""
    t0 = time.perf_counter()
    cov = None
    if name == "J_T-paper":
        out = cip.jt_inverse_dynamics(trial)
        return {"parameters": out["parameters"], "standard_errors": None, "covariance": None,
                "success": True, "time_s": time.perf_counter() - t0, "iterations": 0}
    if name.startswith("ML"):
        bounds = WIDE if name.endswith("wide") else None
        r = cip.ml_estimate(trial, bounds=bounds)
        cov = r.covariance.loc[list(cip.GAINS), list(cip.GAINS)] if r.covariance is not None else None
        se = {k: r.standard_errors[k] for k in cip.GAINS} if r.standard_errors else None
        return {"parameters": {k: r.parameters[k] for k in cip.GAINS}, "standard_errors": se,
                "covariance": cov, "success": bool(r.success), "time_s": time.perf_counter() - t0,
                "iterations": int(r.iterations)}
    form = name.replace("-wide", "")
    bounds = WIDE if name.endswith("wide") else None
    prob = cip.problem(trial, form, bounds=bounds)
    solver = co.Ipopt(simulate=False, hessian="limited-memory" if form == "J_S" else "exact",
                      max_iter=1000 if form == "J_S" else 500)
    r = co.solve(prob, co.Midpoint(), solver=solver, throw=False)
    return {"parameters": dict(r.parameters), "standard_errors": r.standard_errors,
            "covariance": r.covariance, "success": bool(r.success), "time_s": time.perf_counter() - t0,
            "iterations": int(r.iterations)}


def run(realizations: int, duration: float, first_seed: int, names: list[str]) -> dict:
    truth = np.array([cip.TRUE[k] for k in cip.GAINS])
    rec = {n: {"estimates": [], "standard_errors": [], "success": [], "time_s": [], "iterations": [],
               "condition": [], "correlation": []} for n in names}
    for i in range(realizations):
        seed = first_seed + i
        trial = cip.simulate_trial(seed=seed, duration=duration, name=f"seed{seed}")
        line = [f"seed {seed:3d}:"]
        for n in names:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = estimate(n, trial)
            est = np.array([out["parameters"][k] for k in cip.GAINS])
            r = rec[n]
            r["estimates"].append(est.tolist())
            se = out["standard_errors"]
            r["standard_errors"].append([se[k] for k in cip.GAINS] if se else [float("nan")] * 3)
            r["success"].append(out["success"])
            r["time_s"].append(out["time_s"])
            r["iterations"].append(out["iterations"])
            if out["covariance"] is not None and np.all(np.isfinite(np.asarray(out["covariance"]))):
                diag = co.identifiability(out["covariance"], out["parameters"])
                r["condition"].append(diag.condition)
                r["correlation"].append(np.asarray(diag.correlation).tolist())
            line.append(f"{n} {np.mean(np.abs(est / truth - 1)) * 100:5.1f}%")
        print("  ".join(line), flush=True)
    return summarize(rec, truth)


def summarize(rec: dict, truth: np.ndarray) -> dict:
    box = {k: cip.RANGES[k] for k in cip.GAINS}
    summary = {}
    for n, r in rec.items():
        est = np.array(r["estimates"])
        se = np.array(r["standard_errors"], dtype=float)
        err = est / truth - 1
        lo = np.array([box[k][0] if not n.endswith("wide") else -np.inf for k in cip.GAINS])
        hi = np.array([box[k][1] if not n.endswith("wide") else np.inf for k in cip.GAINS])
        on_bound = (np.isclose(est, lo, rtol=1e-4, atol=1e-6) | np.isclose(est, hi, rtol=1e-4, atol=1e-6))
        s = {"runs": len(est), "success": int(np.sum(r["success"])),
             "median_time_s": float(np.median(r["time_s"])), "gains": {}}
        for j, k in enumerate(cip.GAINS):
            has_se = np.isfinite(se[:, j])
            s["gains"][k] = {
                "bias_pct": float(np.mean(err[:, j]) * 100),
                "spread_pct": float(np.std(err[:, j], ddof=1) * 100) if len(est) > 1 else float("nan"),
                "rmse_pct": float(np.sqrt(np.mean(err[:, j] ** 2)) * 100),
                "mean_se_pct": float(np.mean(se[has_se, j] / truth[j]) * 100) if has_se.any() else None,
                "coverage_95": float(np.mean(np.abs(est[has_se, j] - truth[j]) <= 1.96 * se[has_se, j]))
                if has_se.any() else None,
                "on_bound": float(np.mean(on_bound[:, j])),
            }
        if r["condition"]:
            C = np.array(r["correlation"])
            s["median_condition"] = float(np.median(r["condition"]))
            s["mean_correlation"] = {f"{a}-{b}": float(np.mean(C[:, i, j]))
                                     for i, a in enumerate(cip.GAINS) for j, b in enumerate(cip.GAINS) if i < j}
        summary[n] = s
    return {"records": rec, "summary": summary}


def table(summary: dict) -> str:
    head = ("| estimator | gain | bias % | spread % | RMSE % | mean SE % | coverage | on bound | "
            "cond. | median time s |")
    lines = [head, "|" + "---|" * 10]
    for n, s in summary.items():
        for k, g in s["gains"].items():
            se = "—" if g["mean_se_pct"] is None else f"{g['mean_se_pct']:.1f}"
            cov = "—" if g["coverage_95"] is None else f"{g['coverage_95']:.0%}"
            cond = f"{s['median_condition']:.3g}" if "median_condition" in s and k == "KP" else ""
            tm = f"{s['median_time_s']:.2f}" if k == "KP" else ""
            lines.append(f"| {n if k == 'KP' else ''} | {k} | {g['bias_pct']:+.1f} | {g['spread_pct']:.1f} | "
                         f"{g['rmse_pct']:.1f} | {se} | {cov} | {g['on_bound']:.0%} | {cond} | {tm} |")
    return "\n".join(lines)


def figure(rec: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(rec)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    for j, (k, ax) in enumerate(zip(cip.GAINS, axes)):
        data = [np.array(rec[n]["estimates"])[:, j] for n in names]
        ax.boxplot(data, showfliers=True)
        ax.set_xticks(range(1, len(names) + 1), names, rotation=45, ha="right")
        ax.axhline(cip.TRUE[k], color="C2", lw=1.5, label="truth")
        ax.axhline(cip.CENTRE_NORMAL[k], color="C3", lw=1, ls="--", label="centre normal (guess)")
        ax.axhspan(*cip.RANGES[k], color="0.9", zorder=0, label="Table 1 range")
        ax.set_title(k)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"CIP gains from COP-only records, {len(rec[names[0]]['estimates'])} realizations")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--realizations", type=int, default=20)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--first-seed", type=int, default=100)
    ap.add_argument("--only", default=",".join(ESTIMATORS), help="comma-separated estimators")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "cip_study.json"))
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    bad = [n for n in names if n not in ESTIMATORS]
    if bad:
        ap.error(f"--only: unknown estimator(s) {', '.join(bad)}; available: {', '.join(ESTIMATORS)}")
    t0 = time.perf_counter()
    out = run(args.realizations, args.duration, args.first_seed, names)
    doc = {"benchmark": "cip_study", "truth": cip.TRUE, "realizations": args.realizations,
           "duration_s": args.duration, "first_seed": args.first_seed, "cop_noise_m": cip.COP_NOISE,
           "summary": out["summary"], "records": out["records"], "total_s": time.perf_counter() - t0,
           "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": sys.version.split()[0]},
           "versions": versions()}
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(doc, indent=1))
    print()
    print(table(out["summary"]))
    for n, s in out["summary"].items():
        if "mean_correlation" in s:
            print(f"{n}: median condition {s['median_condition']:.3g}; mean correlations "
                  + ", ".join(f"{p} {v:+.2f}" for p, v in s["mean_correlation"].items()))
    fig_path = path.with_suffix(".png")
    figure(out["records"], fig_path)
    print(f"\nwritten {path} and {fig_path} in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
