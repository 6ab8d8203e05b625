"""Basin of attraction on the pendulum: collocation against shooting from many starts.

    python benchmarks/pendulum_basin.py [--quick] [--num-p 40] [--out FILE.json]

The slides' local-minima example (``problems/pendulum.py``, θ' = ω, ω' = −p·sin θ, true
p = 10 s⁻², θ(0) = 1 rad, ω(0) = 0): a short record (default 5 s at 50 Hz, only θ measured,
Gaussian noise σ = 0.01 rad, seed 0) is identified from every combination of

* an initial p over [0.1, 100] s⁻², log-spaced (``--num-p``, default 40 values), and
* an initial state guess: ``measured`` (the default: θ interpolated from the data, ω by
  differentiating it), ``zero`` (θ ≡ 0, ω ≡ 0 via ``Problem.set_guess``) or ``random``
  (random *constants* θ ~ U(−1.5, 1.5) rad, ω ~ U(−5, 5) rad/s, one draw per initial p
  from ``numpy.random.default_rng([seed, 1, i])``, the same draw for every method),

by each method: midpoint collocation (exact Hessian, IPOPT), single shooting (adjoint
gradient + L-BFGS-B; adjoint + steepest descent; forward sensitivities + L-BFGS-B) and
multiple shooting (20 segments, IPOPT with L-BFGS Hessian). Collocation uses the state guess
as its whole initial trajectory; shooting uses it at t0 only (its initial-state unknowns).

Shooting integrates with fixed-step RK4 (4 substeps per sample) by default: CVODES costs
seconds per solve. ``--cvodes-every K`` re-runs single shooting (adjoint, L-BFGS-B) and
multiple shooting with CVODES on every K-th initial p (all state guesses) and reports how
often the RK4 and CVODES runs end in the same place.

A run "converged to the truth" when the method reports success and |p/p_true − 1| < 1e-2.
Printed: the fraction of converged runs per method and state guess, median time and
iterations per solve, and the distinct end points of the runs that did not converge.
Written: JSON (every run; atomically) and a figure of final p against initial p (log-log,
one panel per state guess), ``basin.png`` next to the JSON unless ``--figure`` says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import colloc as co
from colloc import atomic_path, versions, write_atomic
from colloc_problems import pendulum as pend

P_TRUE = pend.TRUE["p"]
GUESSES = ("measured", "zero", "random")
CONVERGED_RTOL = 1e-2


def methods(integrator, sd_max_iter: int = 500) -> dict[str, co.AbstractMethod]:
    """The compared methods by key (shooting ones with ``integrator``)."""
    return {
        "midpoint": co.Midpoint(),
        "ss-adjoint-lbfgs": co.SingleShooting(co.Adjoint(), co.LBFGS(), integrator),
        "ss-adjoint-sd": co.SingleShooting(co.Adjoint(), co.SteepestDescent(max_iter=sd_max_iter), integrator),
        "ss-forward-lbfgs": co.SingleShooting(co.Forward(), co.LBFGS(), integrator),
        "ms": co.MultipleShooting(segments=20, integrator=integrator),
    }


def random_state(seed: int, i: int) -> tuple[float, float]:
    """The ``random`` state guess for the i-th initial p: constants (θ, ω)."""
    rng = np.random.default_rng([seed, 1, i])
    return float(rng.uniform(-1.5, 1.5)), float(rng.uniform(-5.0, 5.0))


def make_problem(trial: co.Trial, noise: float, guess: str, seed: int, i: int) -> co.Problem:
    """The pendulum problem with the state guess ``guess`` (see the module docstring)."""
    prob = pend.problem(trial, noise_std=noise)
    if guess == "zero":
        prob.set_guess("theta", 0.0)
        prob.set_guess("omega", 0.0)
    elif guess == "random":
        th, om = random_state(seed, i)
        prob.set_guess("theta", th)
        prob.set_guess("omega", om)
    elif guess != "measured":  # pragma: no cover - guarded by argparse
        raise ValueError(guess)
    return prob


def run_one(prob: co.Problem, method: co.AbstractMethod, p0: float) -> dict:
    """One solve; never raises (an exception is recorded as status ``exception: ...``)."""
    solver = co.Ipopt(standard_errors=False, simulate=False)
    t0 = time.perf_counter()
    try:
        r = co.solve(prob, method, solver=solver, guess={"p": p0}, throw=False)
    except Exception as exc:  # noqa: BLE001 - a benchmark records, it does not stop
        return {"p_final": float("nan"), "success": False, "status": f"exception: {type(exc).__name__}: {exc}",
                "iterations": 0, "total_s": time.perf_counter() - t0, "converged": False,
                "traceback": traceback.format_exc(limit=3)}
    p = float(r.parameters["p"])
    ok = bool(r.success) and bool(np.isfinite(p)) and abs(p / P_TRUE - 1) < CONVERGED_RTOL
    near = bool(np.isfinite(p)) and abs(p / P_TRUE - 1) < CONVERGED_RTOL
    return {"p_final": p, "success": bool(r.success), "status": str(r.status), "message": str(r.message)[:200],
            "iterations": int(r.iterations), "total_s": float(r.timings["total_s"]), "converged": ok,
            "near_truth": near}


def run_grid(trial, noise, p_grid, guesses, meths: dict, seed: int, label: str = "", log=print) -> list[dict]:
    """Every (method, state guess, initial p) in ``meths`` × ``guesses`` × ``p_grid``."""
    runs = []
    for key, method in meths.items():
        t_method = time.perf_counter()
        for guess in guesses:
            for i, p0 in enumerate(p_grid):
                if p0 is None:
                    continue
                row = run_one(make_problem(trial, noise, guess, seed, i), method, float(p0))
                row.update(method=key, guess=guess, p0=float(p0), index=i)
                runs.append(row)
        log(f"  {key + label:<26} {time.perf_counter() - t_method:8.1f} s", flush=True)
    return runs


def summarize(runs: list[dict], keys, guesses) -> dict:
    """Fraction converged, median time and iterations per method and guess (and overall)."""
    out = {}
    for key in keys:
        out[key] = {}
        for g in (*guesses, "all"):
            sel = [r for r in runs if r["method"] == key and (g == "all" or r["guess"] == g)]
            if not sel:
                continue
            wrong = sorted(r["p_final"] for r in sel if not r["converged"] and np.isfinite(r["p_final"]))
            out[key][g] = {
                "runs": len(sel),
                "converged": sum(r["converged"] for r in sel),
                "fraction": sum(r["converged"] for r in sel) / len(sel),
                "success": sum(r["success"] for r in sel),
                "near_truth_any_status": sum(r.get("near_truth", False) for r in sel),
                "median_total_s": float(np.median([r["total_s"] for r in sel])),
                "median_iterations": float(np.median([r["iterations"] for r in sel])),
                "exceptions": sum(r["status"].startswith("exception") for r in sel),
                "other_end_points": _clusters(wrong),
            }
    return out


def _clusters(values: list[float], rtol: float = 1e-2) -> list[list[float]]:
    """Group sorted end points within ``rtol`` of each other: [[representative, count], ...]."""
    groups: list[list[float]] = []
    for v in values:
        if groups and abs(v / groups[-1][0] - 1) < rtol:
            groups[-1][1] += 1
        else:
            groups.append([v, 1])
    return [[float(f"{g[0]:.4g}"), int(g[1])] for g in groups]


def print_summary(summary: dict, guesses, title: str) -> None:
    print(f"\n{title}")
    head = "".join(f"{g:>16}" for g in (*guesses, "all"))
    print(f"{'method':<22}{head}{'median s':>10}{'med. iter':>10}")
    for key, s in summary.items():
        cells = "".join(f"{s[g]['converged']:>6d}/{s[g]['runs']:<3d}{s[g]['fraction']:>6.0%}" for g in (*guesses, "all"))
        print(f"{key:<22}{cells}{s['all']['median_total_s']:>10.3f}{s['all']['median_iterations']:>10.0f}")
    odd = {k: s["all"]["near_truth_any_status"] - s["all"]["converged"] for k, s in summary.items()}
    if any(odd.values()):
        print("runs that ended within 1 % of p_true but reported failure (not counted above): "
              + ", ".join(f"{k} {n}" for k, n in odd.items() if n))
    print("\nwhere the runs that missed the truth ended (p value × number of runs; 0.01 = lower bound):")
    for key, s in summary.items():
        ends = "  ".join(f"{p:g}×{n}" for p, n in s["all"]["other_end_points"][:12])
        more = len(s["all"]["other_end_points"]) - 12
        print(f"  {key:<20} {ends or '-'}{f'  (+{more} more)' if more > 0 else ''}")


def compare_cvodes(runs_rk4: list[dict], runs_cv: list[dict]) -> dict:
    """Agreement of the CVODES re-runs with their RK4 counterparts."""
    by = {(r["method"], r["guess"], r["index"]): r for r in runs_rk4}
    out = {}
    for key in sorted({r["method"] for r in runs_cv}):
        pairs = [(by[(key.removesuffix("-cvodes"), r["guess"], r["index"])], r) for r in runs_cv if r["method"] == key]
        same_class = sum(a["converged"] == b["converged"] for a, b in pairs)
        same_end = sum(np.isfinite(a["p_final"]) and np.isfinite(b["p_final"])
                       and abs(a["p_final"] / b["p_final"] - 1) < 1e-3 for a, b in pairs)
        out[key] = {"runs": len(pairs), "same_classification": same_class, "same_end_point_1e-3": int(same_end),
                    "converged_cvodes": sum(b["converged"] for _, b in pairs),
                    "converged_rk4": sum(a["converged"] for a, _ in pairs),
                    "median_total_s_cvodes": float(np.median([b["total_s"] for _, b in pairs])),
                    "median_total_s_rk4": float(np.median([a["total_s"] for a, _ in pairs]))}
    return out


def figure(runs: list[dict], keys, guesses, path: Path, caption: str) -> None:
    """Final p against initial p, log-log, one panel per state guess."""
    from matplotlib.figure import Figure

    style = {"midpoint": ("o", "C0", 7), "ss-adjoint-lbfgs": ("s", "C1", 6), "ss-adjoint-sd": ("^", "C2", 5),
             "ss-forward-lbfgs": ("x", "C3", 5), "ms": ("D", "C4", 4),
             "ss-adjoint-lbfgs-cvodes": ("+", "C5", 8), "ms-cvodes": ("1", "C6", 8)}
    fig = Figure(figsize=(4.0 * len(guesses), 4.3), layout="constrained")
    axes = fig.subplots(1, len(guesses), sharey=True, squeeze=False)[0]
    for ax, g in zip(axes, guesses):
        for key in keys:
            sel = [r for r in runs if r["method"] == key and r["guess"] == g and np.isfinite(r["p_final"])]
            if not sel:
                continue
            marker, colour, size = style.get(key, (".", "k", 5))
            filled = marker not in ("x", "+", "1")
            ax.plot([r["p0"] for r in sel], [r["p_final"] for r in sel], linestyle="none", marker=marker,
                    markersize=size, color=colour, markerfacecolor="none" if filled else colour, label=key)
        ax.axhline(P_TRUE, color="0.4", linestyle="--", linewidth=0.8)
        ax.plot([0.1, 100], [0.1, 100], color="0.7", linestyle=":", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"state guess: {g}")
        ax.set_xlabel("initial p (1/s²)")
    axes[0].set_ylabel("final p (1/s²)")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.suptitle(caption, fontsize=9)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")


def clean(value):
    """JSON-safe copy: NaN/inf become None, numpy scalars Python numbers."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return clean(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    return value


def write_json(doc: dict, out: Path) -> None:
    """Strict JSON (no NaN), written atomically."""
    write_atomic(out, json.dumps(clean(doc), indent=1, allow_nan=False) + "\n")


def basin(num_p=40, duration=5.0, rate=50.0, noise=0.01, seed=0, substeps=4, sd_max_iter=500,
          cvodes_every=0, guesses=GUESSES, log=print) -> dict:
    """Run the study; return the JSON-able record (config, runs, summary, CVODES check)."""
    trial = pend.simulate_trial(duration=duration, rate=rate, noise_std=noise, seed=seed, name="pendulum-basin")
    p_grid = np.logspace(-1, 2, num_p)
    meths = methods(co.RungeKutta(substeps), sd_max_iter)
    t0 = time.perf_counter()
    runs = run_grid(trial, noise, p_grid, guesses, meths, seed, log=log)
    summary = summarize(runs, list(meths), guesses)
    check, runs_cv = None, []
    if cvodes_every > 0:
        sub = [p if i % cvodes_every == 0 else None for i, p in enumerate(p_grid)]
        cv = methods(co.Cvodes())
        cv_meths = {f"{k}-cvodes": cv[k] for k in ("ss-adjoint-lbfgs", "ms")}
        runs_cv = run_grid(trial, noise, sub, guesses, cv_meths, seed, log=log)
        check = {"every": cvodes_every, "num_p": sum(p is not None for p in sub),
                 "agreement": compare_cvodes(runs, runs_cv),
                 "summary": summarize(runs_cv, list(cv_meths), guesses)}
    config = {"p_true": P_TRUE, "duration_s": duration, "rate_hz": rate, "samples": trial.num_samples,
              "noise_std_rad": noise, "seed": seed, "theta0": 1.0, "omega0": 0.0, "measured": ["theta"],
              "p_grid": p_grid.tolist(), "guesses": list(guesses),
              "random_guess": "constants theta~U(-1.5,1.5) rad, omega~U(-5,5) rad/s, "
                              "default_rng([seed, 1, i]) for the i-th initial p",
              "shooting_integrator": f"RungeKutta(substeps={substeps})", "sd_max_iter": sd_max_iter,
              "converged": f"success and |p/p_true - 1| < {CONVERGED_RTOL}",
              "methods": {k: m.name for k, m in meths.items()}, "multiple_shooting_segments": 20}
    return {"config": config, "runs": runs + runs_cv, "summary": summary, "cvodes_check": check,
            "study_s": time.perf_counter() - t0}


def targets(summary: dict) -> list[tuple[str, bool, str]]:
    """The issue's pendulum target: collocation's basin fraction above every shooting variant's."""
    col = summary["midpoint"]["all"]["fraction"]
    shoot = {k: s["all"]["fraction"] for k, s in summary.items() if k != "midpoint"}
    best = max(shoot, key=shoot.get)
    ok = all(col > f for f in shoot.values())
    return [("collocation basin fraction > every shooting variant (pendulum)", ok,
             f"midpoint {col:.0%}, best shooting {best} {shoot[best]:.0%}")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="tiny grid for the smoke test: 5 initial p, 2 s record, no CVODES check")
    ap.add_argument("--num-p", type=int, default=40, help="initial p values, log-spaced over [0.1, 100]")
    ap.add_argument("--duration", type=float, default=5.0, help="record length (s)")
    ap.add_argument("--rate", type=float, default=50.0, help="sampling rate (Hz)")
    ap.add_argument("--noise", type=float, default=0.01, help="θ noise standard deviation (rad)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--substeps", type=int, default=4, help="RK4 substeps per sample for shooting")
    ap.add_argument("--sd-max-iter", type=int, default=500, help="steepest-descent iteration cap")
    ap.add_argument("--cvodes-every", type=int, default=4,
                    help="re-run the shooting methods with CVODES on every K-th initial p (0: never)")
    ap.add_argument("--out", default="benchmarks/results/pendulum_basin.json")
    ap.add_argument("--figure", default=None, help="figure path (default: basin.png next to --out)")
    args = ap.parse_args(argv)
    if args.quick:
        args.num_p, args.duration, args.cvodes_every = 5, 2.0, 0
    if args.num_p < 2:
        ap.error("--num-p must be >= 2")
    out = Path(args.out)
    fig_path = Path(args.figure) if args.figure else out.parent / "basin.png"
    t0 = time.perf_counter()
    print(f"pendulum basin: p_true = {P_TRUE:g}, {args.duration:g} s at {args.rate:g} Hz, θ noise σ = "
          f"{args.noise:g} rad (seed {args.seed}); {args.num_p} initial p in [0.1, 100] × {len(GUESSES)} "
          f"state guesses; shooting with RK4 ({args.substeps} substeps/sample)", flush=True)
    data = basin(args.num_p, args.duration, args.rate, args.noise, args.seed, args.substeps, args.sd_max_iter,
                 args.cvodes_every)
    print_summary(data["summary"], GUESSES,
                  "converged to p_true (success and |p/p_true − 1| < 1 %): count/runs and fraction")
    if data["cvodes_check"]:
        c = data["cvodes_check"]
        print(f"\nCVODES check ({c['num_p']} initial p × {len(GUESSES)} guesses): RK4 vs CVODES")
        print(f"{'method':<26}{'same class':>12}{'same end':>10}{'conv. RK4':>11}{'conv. CVODES':>14}"
              f"{'med s RK4':>11}{'med s CVODES':>14}")
        for k, a in c["agreement"].items():
            print(f"{k:<26}{a['same_classification']:>7d}/{a['runs']:<4d}{a['same_end_point_1e-3']:>6d}/{a['runs']:<3d}"
                  f"{a['converged_rk4']:>11d}{a['converged_cvodes']:>14d}{a['median_total_s_rk4']:>11.3f}"
                  f"{a['median_total_s_cvodes']:>14.3f}")
    tg = targets(data["summary"])
    print()
    for name, ok, detail in tg:
        print(f"{'PASS' if ok else 'FAIL'}: {name}: {detail}")
    keys = list(data["summary"]) + (list(data["cvodes_check"]["agreement"]) if data["cvodes_check"] else [])
    caption = (f"pendulum, {args.duration:g} s at {args.rate:g} Hz, σ = {args.noise:g} rad; true p = {P_TRUE:g} "
               f"(dashed); shooting RK4×{args.substeps}")
    try:
        figure(data["runs"], keys, GUESSES, fig_path, caption)
        fig_written = str(fig_path)
    except Exception as exc:  # noqa: BLE001 - the figure is a by-product
        fig_written = None
        print(f"figure not written: {type(exc).__name__}: {exc}")
    doc = {
        "benchmark": "pendulum_basin",
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "quick": args.quick,
        **data,
        "targets": [{"name": n, "pass": ok, "detail": d} for n, ok, d in tg],
        "figure": fig_written,
        "wall_s": time.perf_counter() - t0,
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                    "load_avg_1min": os.getloadavg()[0]},
        "versions": versions(),
    }
    write_json(doc, out)
    print(f"\nwritten to {out}" + (f" and {fig_written}" if fig_written else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
