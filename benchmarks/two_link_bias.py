"""Bias, spread and standard-error coverage of the two-link gains over noise realizations.

    python benchmarks/two_link_bias.py [--realizations 20] [--duration 60] [--method midpoint] [--out FILE.json]

For each seed, the seed case (K of docs/contracts.md §2, 60 s at 100 Hz, σ_θ = 0.3°, σ_ω = 4°/s,
σ_a = 0.42 m/s²) with a new excitation phase set and new noise is identified twice with the
transcription ``--method`` (a command-line method name; default ``midpoint``):

* ``exact``: the measured platform acceleration is fed in as if it were exact (what opty does);
* ``eiv``: errors-in-variables, the true acceleration is estimated with weight 1/σ_a².

Printed per gain and formulation: mean % error (bias), standard deviation of the estimates
(spread, % of the true value), mean reported standard error (%), their ratio, and the
coverage of the nominal 95 % interval (±1.96 SE). Written as JSON (atomically).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import colloc as co
from colloc import versions, write_atomic
from colloc.cli import make_method
from colloc_problems import two_link as tl


def run(realizations: int, duration: float, first_seed: int, method_name: str = "midpoint") -> dict:
    names = list(tl.TRUE)
    truth = np.array([tl.TRUE[k] for k in names])
    out = {f: {"estimates": [], "standard_errors": [], "iterations": [], "total_s": [], "success": []}
           for f in ("exact", "eiv")}
    solver = co.Ipopt(simulate=False)
    method = make_method(method_name)
    for i in range(realizations):
        seed = first_seed + i
        trial = tl.simulate_trial(duration=duration, seed=seed, name=f"seed{seed}")
        for form, eiv in (("exact", False), ("eiv", True)):
            r = co.solve(tl.problem(trial, errors_in_variables=eiv), method, solver=solver, throw=False,
                         verdict=False)
            rec = out[form]
            rec["estimates"].append([r.parameters[k] for k in names])
            rec["standard_errors"].append([r.standard_errors[k] for k in names])
            rec["iterations"].append(r.iterations)
            rec["total_s"].append(r.timings["total_s"])
            rec["success"].append(r.success)
        e = np.array(out["eiv"]["estimates"][-1])
        x = np.array(out["exact"]["estimates"][-1])
        print(f"seed {seed:3d}: mean |error| exact {np.mean(np.abs(x / truth - 1)) * 100:7.1f}%  "
              f"eiv {np.mean(np.abs(e / truth - 1)) * 100:6.1f}%", flush=True)
    summary = {}
    for form, rec in out.items():
        est = np.array(rec["estimates"])
        se = np.array(rec["standard_errors"])
        err_pct = (est / truth - 1) * 100
        cover = np.abs(est - truth) <= 1.96 * se
        summary[form] = {
            name: {
                "bias_pct": float(err_pct[:, j].mean()),
                "spread_pct": float(est[:, j].std(ddof=1) / truth[j] * 100) if len(est) > 1 else None,
                "mean_se_pct": float(se[:, j].mean() / truth[j] * 100),
                "spread_over_se": float(est[:, j].std(ddof=1) / se[:, j].mean()) if len(est) > 1 else None,
                "coverage_95": float(cover[:, j].mean()),
                "mean_abs_error_pct": float(np.abs(err_pct[:, j]).mean()),
            }
            for j, name in enumerate(names)
        }
        summary[form]["_all"] = {
            "mean_abs_error_pct": float(np.abs(err_pct).mean()),
            "max_abs_error_pct": float(np.abs(err_pct).max()),
            "coverage_95": float(cover.mean()),
            "mean_iterations": float(np.mean(rec["iterations"])),
            "mean_total_s": float(np.mean(rec["total_s"])),
            "all_success": bool(all(rec["success"])),
        }
    return {"raw": out, "summary": summary, "names": names}


def print_table(summary: dict, names: list[str]) -> None:
    for form in ("exact", "eiv"):
        s = summary[form]
        title = "input treated as exact" if form == "exact" else "errors-in-variables"
        print(f"\n{title}: mean |error| {s['_all']['mean_abs_error_pct']:.1f}%, "
              f"max {s['_all']['max_abs_error_pct']:.1f}%, 95% coverage {s['_all']['coverage_95']:.0%}, "
              f"{s['_all']['mean_iterations']:.1f} iterations, {s['_all']['mean_total_s']:.2f} s per solve")
        print(f"{'gain':<6}{'true':>7}{'bias %':>9}{'spread %':>10}{'mean SE %':>11}{'spread/SE':>11}{'cover95':>9}")
        for name in names:
            r = s[name]
            spread = "n/a" if r["spread_pct"] is None else f"{r['spread_pct']:.2f}"
            ratio = "n/a" if r["spread_over_se"] is None else f"{r['spread_over_se']:.2f}"
            print(f"{name:<6}{tl.TRUE[name]:>7.0f}{r['bias_pct']:>+9.2f}{spread:>10}{r['mean_se_pct']:>11.2f}"
                  f"{ratio:>11}{r['coverage_95']:>9.0%}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--realizations", type=int, default=20)
    ap.add_argument("--duration", type=float, default=60.0, help="record length (s)")
    ap.add_argument("--first-seed", type=int, default=100)
    ap.add_argument("--method", default="midpoint", help="collocation method name as on the command line")
    ap.add_argument("--out", default="benchmarks/results/two_link_bias.json")
    args = ap.parse_args(argv)
    if args.realizations < 1:
        ap.error("--realizations must be >= 1")
    t0 = time.perf_counter()
    data = run(args.realizations, args.duration, args.first_seed, args.method)
    print_table(data["summary"], data["names"])
    doc = {
        "benchmark": "two_link_bias",
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "realizations": args.realizations,
        "duration_s": args.duration,
        "first_seed": args.first_seed,
        "method": args.method,
        "wall_s": time.perf_counter() - t0,
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count()},
        "versions": versions(),
        **data,
    }
    out = Path(args.out)
    write_atomic(out, json.dumps(doc, indent=1))
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
