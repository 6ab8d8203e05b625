"""Scaling of the collocation solve with the number of nodes (pendulum, one parameter).

For every node count N a *fresh* Python process

1. makes a pendulum trial holding exactly N samples: a fixed 10 s record (θ(0) = 1 rad,
   ω(0) = 0, p = 10 s⁻²) sampled at (N − 1)/10 Hz, only θ measured, Gaussian noise
   σ = 0.05 rad (seed 0).  The record length is kept and the rate raised (rather than the
   rate kept at 100 Hz and the record lengthened) so that every N poses the same
   identification problem on a finer grid (with 100 Hz and a 300 s record IPOPT had not
   converged after 52 iterations / 600 s: that would measure convergence, not scaling).  Up to
   ``--colloc-sim-max`` (20,000) samples the data come from
   ``colloc_problems.pendulum.simulate_trial`` (CVODES); above it from scipy ``solve_ivp(DOP853,
   rtol = atol = 1e-12, dense_output=True)`` evaluated at the sample times (CVODES restarted
   per sample costs ~60 µs a sample: 6 s for 100k, ~1 min for 1M; solve_ivp < 1 s).  Both
   use the same seeded noise draws; the noise-free trajectories agree to ~1e-7 rad (far
   below σ).
2. solves ``colloc.solve(pendulum.problem(trial), colloc.Midpoint(),
   solver=colloc.Ipopt(standard_errors=False, simulate=False))`` (a node at every sample)
3. prints one JSON line: build / solve time, IPOPT iterations, its own peak RSS
   (``getrusage(RUSAGE_SELF).ru_maxrss``), |p − 10|/10, …

The parent runs the node counts in increasing order, stops before a node count whose peak
memory, extrapolated linearly from the previous run, would exceed ``--mem-limit-gb``, or
after a failed run; it prints a table, fits the exponent of total time against N
(log-log least squares over N ≥ 10,000 when at least two such runs exist, else all), and
writes a JSON report atomically.  Targets are reported as PASS/FAIL, never asserted.

Usage::

    python benchmarks/pendulum_scaling.py                       # 1k, 10k, 100k, 1M nodes
    python benchmarks/pendulum_scaling.py --quick --out /tmp/x.json
    python benchmarks/pendulum_scaling.py --nodes 1000 30000 --timeout 600
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TRUE_P = 10.0
DURATION = 10.0
THETA0, OMEGA0 = 1.0, 0.0
CHILD_MARK = "@@RESULT@@ "

# targets (reported, never asserted)
TARGET_1K_TOTAL_S = 0.5
TARGET_EXPONENT = 1.1
TARGET_1M_PEAK_MB = 4096.0


# ------------------------------------------------------------------------------------------
# child: one node count, fresh process
# ------------------------------------------------------------------------------------------
def _peak_mb() -> float:
    # Linux reports ru_maxrss in KiB (macOS in bytes)
    scale = 1.0 / (1024 * 1024) if sys.platform == "darwin" else 1.0 / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def _make_trial(n: int, noise: float, seed: int, generator: str, colloc_sim_max: int):
    import numpy as np

    import colloc as co
    from colloc_problems import pendulum

    rate = (n - 1) / DURATION
    if generator == "auto":
        generator = "colloc" if n <= colloc_sim_max else "scipy"
    if generator == "colloc":
        trial = pendulum.simulate_trial(
            TRUE_P, duration=DURATION, rate=rate, theta0=THETA0, omega0=OMEGA0,
            noise_std=noise, seed=seed, name=f"pendulum_{n}",
        )
    else:
        from scipy.integrate import solve_ivp

        time_ = np.arange(n) / rate
        sol = solve_ivp(
            lambda t, y: [y[1], -TRUE_P * math.sin(y[0])], (0.0, float(time_[-1])), [THETA0, OMEGA0],
            method="DOP853", rtol=1e-12, atol=1e-12, dense_output=True,
        )
        if not sol.success:
            raise RuntimeError(f"solve_ivp failed: {sol.message}")
        theta = sol.sol(time_)[0]
        rng = np.random.default_rng(seed)  # same draws as simulate_trial
        trial = co.Trial(time_, {"theta": theta + noise * rng.standard_normal(n)}, name=f"pendulum_{n}")
    if trial.num_samples != n:
        raise RuntimeError(f"trial has {trial.num_samples} samples, expected {n}")
    return trial, generator, rate


def run_child(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    import colloc as co
    from colloc_problems import pendulum

    import_s = time.perf_counter() - t0
    n = args.child
    t0 = time.perf_counter()
    trial, generator, rate = _make_trial(n, args.noise, args.seed, args.generator, args.colloc_sim_max)
    data_s = time.perf_counter() - t0
    rss_before_mb = _peak_mb()

    solver = co.Ipopt(standard_errors=False, simulate=False)
    t0 = time.perf_counter()
    result = co.solve(pendulum.problem(trial), co.Midpoint(), solver=solver, throw=False)
    wall_s = time.perf_counter() - t0
    p = result.parameters["p"]
    row = {
        "nodes": n,
        "samples": trial.num_samples,
        "rate_hz": rate,
        "duration_s": DURATION,
        "generator": generator,
        "data_s": data_s,
        "import_s": import_s,
        "build_s": result.timings["build_s"],
        "solve_s": result.timings["solve_s"],
        "total_s": result.timings["build_s"] + result.timings["solve_s"],
        "solve_call_wall_s": wall_s,  # includes unpacking the result
        "iterations": result.iterations,
        "success": bool(result.success),
        "status": result.status,
        "num_variables": result.info.get("num_variables"),
        "num_constraints": result.info.get("num_constraints"),
        "p": p,
        "p_rel_error": abs(p - TRUE_P) / TRUE_P,
        "rss_before_solve_mb": rss_before_mb,
        "peak_rss_mb": _peak_mb(),
    }
    print(CHILD_MARK + json.dumps(row), flush=True)
    return 0


# ------------------------------------------------------------------------------------------
# parent
# ------------------------------------------------------------------------------------------
def _spawn(n: int, args: argparse.Namespace) -> dict:
    cmd = [
        sys.executable, str(Path(__file__).resolve()), "--child", str(n),
        "--noise", repr(args.noise), "--seed", str(args.seed), "--generator", args.generator,
        "--colloc-sim-max", str(args.colloc_sim_max),
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [x for x in [env.get("PYTHONPATH")] if x])
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"nodes": n, "failed": True, "error": f"timed out after {args.timeout:g} s",
                "child_wall_s": time.perf_counter() - t0}
    wall = time.perf_counter() - t0
    rows = [ln[len(CHILD_MARK):] for ln in proc.stdout.splitlines() if ln.startswith(CHILD_MARK)]
    if proc.returncode != 0 or not rows:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return {"nodes": n, "failed": True, "child_wall_s": wall,
                "error": f"exit code {proc.returncode}: " + " | ".join(tail)}
    row = json.loads(rows[-1])
    row["child_wall_s"] = wall
    # other processes on the machine distort timings: record the 1-min load around the run
    row["loadavg_1min_before"] = None if load_before is None else load_before[0]
    row["loadavg_1min_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    row["failed"] = not row["success"]
    if row["failed"]:
        row["error"] = f"IPOPT: {row['status']}"
    return row


def fit_exponent(rows: list[dict]) -> tuple[float | None, list[int]]:
    """Slope of log(total_s) against log(N) (least squares); N ≥ 10k if ≥ 2 such runs."""
    import numpy as np

    ok = [r for r in rows if not r.get("failed") and r.get("total_s", 0) > 0]
    big = [r for r in ok if r["nodes"] >= 10_000]
    use = big if len(big) >= 2 else ok
    if len(use) < 2:
        return None, [r["nodes"] for r in use]
    x = np.log([r["nodes"] for r in use])
    y = np.log([r["total_s"] for r in use])
    slope = float(np.polyfit(x, y, 1)[0])
    return slope, [r["nodes"] for r in use]


def _targets(rows: list[dict], exponent: float | None) -> list[dict]:
    by_n = {r["nodes"]: r for r in rows if not r.get("failed")}

    def verdict(ok):
        return "N/A" if ok is None else ("PASS" if ok else "FAIL")

    r1k, r1m = by_n.get(1000), by_n.get(1_000_000)
    out = [
        {"target": f"1,000 nodes build+solve < {TARGET_1K_TOTAL_S} s",
         "measured": None if r1k is None else r1k["total_s"],
         "verdict": verdict(None if r1k is None else r1k["total_s"] < TARGET_1K_TOTAL_S)},
        {"target": f"total-time exponent <= ~{TARGET_EXPONENT}",
         "measured": exponent,
         "verdict": verdict(None if exponent is None else exponent <= TARGET_EXPONENT + 0.005)},
        {"target": f"1,000,000 nodes peak memory < {TARGET_1M_PEAK_MB / 1024:g} GB",
         "measured": None if r1m is None else r1m["peak_rss_mb"],
         "verdict": verdict(None if r1m is None else r1m["peak_rss_mb"] < TARGET_1M_PEAK_MB)},
    ]
    return out


def _table(rows: list[dict]) -> str:
    head = (f"{'nodes':>9} {'gen':>6} {'data s':>7} {'build s':>8} {'solve s':>8} {'total s':>8} "
            f"{'iter':>4} {'peak MB':>8} {'|p-10|/10':>10} {'load':>5}  status")
    lines = [head, "-" * len(head)]
    for r in rows:
        if "build_s" not in r:
            lines.append(f"{r['nodes']:>9}  FAILED: {r.get('error', '')}")
            continue
        lines.append(
            f"{r['nodes']:>9} {r['generator']:>6} {r['data_s']:>7.2f} {r['build_s']:>8.3f} "
            f"{r['solve_s']:>8.3f} {r['total_s']:>8.3f} {r['iterations']:>4} {r['peak_rss_mb']:>8.0f} "
            f"{r['p_rel_error']:>10.2e} {r.get('loadavg_1min_after') or float('nan'):>5.1f}  {r['status']}"
        )
    return "\n".join(lines)


def _machine() -> dict:
    info = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }
    try:
        info["cpu_affinity"] = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        pass
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    info["mem_total_gb"] = round(int(line.split()[1]) / 1024**2, 1)
                    break
    except OSError:  # pragma: no cover - not on Linux
        pass
    return info


def _git() -> dict:
    """Commit of the repository and whether the library sources differ from it."""
    def run(*cmd):
        try:
            out = subprocess.run(["git", *cmd], check=False, cwd=ROOT, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = run("rev-parse", "HEAD")
    dirty = run("status", "--porcelain", "--", "colloc", "problems")
    return {"commit": commit, "library_modified": None if dirty is None else bool(dirty)}


def _write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def run_parent(args: argparse.Namespace) -> int:
    from colloc import versions

    nodes = [200, 500] if args.quick else sorted(set(args.nodes))
    limit_mb = args.mem_limit_gb * 1024
    print(f"pendulum scaling: nodes {nodes}; fixed {DURATION:g} s record, rate = (N-1)/{DURATION:g} Hz, "
          f"node at every sample, Midpoint, exact Hessian, noise sigma = {args.noise:g} rad (seed {args.seed}); "
          f"one fresh process per N", flush=True)
    rows: list[dict] = []
    skipped: list[dict] = []
    for i, n in enumerate(nodes):
        prev = next((r for r in reversed(rows) if "peak_rss_mb" in r), None)
        if rows and rows[-1].get("failed"):
            skipped.append({"nodes": n, "reason": f"previous run (N={rows[-1]['nodes']}) failed"})
            continue
        if prev is not None:
            predicted = prev["peak_rss_mb"] * n / prev["nodes"]
            if predicted > limit_mb:
                skipped.append({"nodes": n, "reason": f"predicted peak memory {predicted / 1024:.1f} GB "
                                f"> {args.mem_limit_gb:g} GB (linear from N={prev['nodes']})"})
                continue
        print(f"  N = {n:,} ...", end=" ", flush=True)
        row = _spawn(n, args)
        rows.append(row)
        if "build_s" in row:
            print(f"build {row['build_s']:.3f} s, solve {row['solve_s']:.3f} s, {row['iterations']} it, "
                  f"peak {row['peak_rss_mb']:.0f} MB, |p-10|/10 = {row['p_rel_error']:.2e}"
                  + (f"  FAILED ({row['error']})" if row["failed"] else ""), flush=True)
        else:
            print(f"FAILED: {row['error']}", flush=True)
    for s in skipped:
        print(f"  N = {s['nodes']:,} skipped: {s['reason']}")

    exponent, fit_nodes = fit_exponent(rows)
    targets = _targets(rows, exponent)
    print()
    print(_table(rows))
    print()
    if exponent is None:
        print("total time ~ N^?  (fewer than two successful runs)")
    else:
        print(f"total time ~ N^{exponent:.3f}  (log-log least squares over N = {fit_nodes})")
    print("targets (reported, not asserted):")
    for t in targets:
        m = t["measured"]
        ms = "not measured" if m is None else f"{m:.3f}"
        print(f"  {t['verdict']:>4}  {t['target']}  (measured: {ms})")

    payload = {
        "benchmark": "pendulum_scaling",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "setup": {
            "problem": "colloc_problems.pendulum, one parameter p (true 10 1/s^2), theta measured",
            "data": f"fixed {DURATION:g} s record, rate = (N-1)/{DURATION:g} Hz, N samples; "
                    f"theta(0)={THETA0}, omega(0)={OMEGA0}; noise sigma={args.noise} rad, seed {args.seed}; "
                    f"generator 'colloc' (colloc_problems.pendulum.simulate_trial, CVODES) for N <= "
                    f"{args.colloc_sim_max}, else 'scipy' (solve_ivp DOP853 dense output, rtol=atol=1e-12)"
                    if args.generator == "auto" else f"generator forced to '{args.generator}'",
            "method": "colloc.Midpoint() (a node at every sample)",
            "solver": "colloc.Ipopt(standard_errors=False, simulate=False) (exact Hessian, MUMPS)",
            "process": "one fresh subprocess per N; peak memory = child's getrusage(RUSAGE_SELF).ru_maxrss",
            "mem_limit_gb": args.mem_limit_gb,
            "timeout_s": args.timeout,
        },
        "rows": rows,
        "skipped": skipped,
        "exponent": exponent,
        "exponent_fit_nodes": fit_nodes,
        "targets": targets,
        "machine": _machine(),
        "versions": versions(),
        "git": _git(),
    }
    out = Path(args.out)
    _write_json(out, payload)
    print(f"\nwrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, nargs="+", default=[1000, 10_000, 100_000, 1_000_000],
                    help="node counts (default: 1000 10000 100000 1000000)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pendulum_scaling.json"),
                    help="JSON report (default: benchmarks/results/pendulum_scaling.json)")
    ap.add_argument("--quick", action="store_true", help="tiny smoke run: nodes 200 500")
    ap.add_argument("--noise", type=float, default=0.05, help="noise sigma on theta, rad (default 0.05)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--generator", choices=("auto", "colloc", "scipy"), default="auto",
                    help="data generator (auto: colloc.simulate up to --colloc-sim-max samples, else scipy)")
    ap.add_argument("--colloc-sim-max", type=int, default=20_000,
                    help="largest N whose data come from colloc.simulate (default 20000)")
    ap.add_argument("--mem-limit-gb", type=float, default=16.0,
                    help="do not start a node count whose linearly extrapolated peak memory exceeds this")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per node count (default 3600)")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        return run_child(args)
    if min(args.nodes) < 3:
        ap.error("--nodes: every node count must be >= 3")
    return run_parent(args)


if __name__ == "__main__":
    sys.exit(main())
