"""ship-stance: colloc against opty on the same record, build and solve times side by side.

The 4-link spatial human on a 6-DoF deck (docs/contracts.md §2 ``ship-stance``; Bourgeois & Langlois
2015): 24 states, the 16 roll/pitch PD gains unknown, a noisy synthetic record at 100 Hz from
:func:`colloc_problems.ship_stance.simulate_trial` (seed 0, joint angles and rates fitted).

* **colloc**: ``colloc.solve(ship_stance.problem(trial))``, the default method (Radau, degree 2)
  and the default solver (exact Hessian), and the same with ``Ipopt(hessian="gauss-newton")``.
  Build and solve are colloc's ``result.timings``; standard errors and the simulation check
  (not done by opty) are reported separately.
* **opty**: the equations of motion derived by ``sympy.physics.mechanics.KanesMethod`` in the
  test suite (``tests/multibody/test_chain.py::sympy_kanes``, written independently of
  ``colloc.Chain``), the ship's roll, pitch and yaw, their rates and accelerations and the
  stance point's acceleration in deck components as known trajectories (the contract's
  columns), the joint torques of the contract with the gains unknown (scaled by the default
  guesses, so that opty's unknowns are 1 at the start, as colloc's scaling does), implicit
  form [q̇ − u; M(q)·u̇ − forcing − Q] = 0, opty's midpoint transcription (opty has no
  Radau), the objective Σ w·(x − x_m)² / n_obs with w = 1/σ² (angles and rates), IPOPT with
  its L-BFGS Hessian (opty supplies none), tol 1e-8; start: the measured states, the default
  guesses.  Derivation (SymPy), build (the ``opty.Problem`` construction: symbolic
  Jacobian, code generation, C compilation; or, with ``--opty-backend numpy``, NumPy
  functions instead of compiled C) and solve are timed separately.

opty's build does not depend on the record length, its solve does; ``--opty-duration`` gives
opty a shorter record than colloc's when the long one would not finish in reasonable time
(the ratios then compare unequal records and say so).

    python benchmarks/ship_stance_vs_opty.py --duration 60 --opty-duration 10
    python benchmarks/ship_stance_vs_opty.py --quick        # a clean 1 s record, the smoke test

Writes benchmarks/results/ship_stance_vs_opty.json (or ``--out``).  If opty is not importable
the script says ``opty not installed`` and times colloc alone.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_report  # noqa: E402

import colloc as co  # noqa: E402
from colloc_problems import ship_stance as ss  # noqa: E402


def _within(result) -> int:
    se = result.standard_errors or {}
    return int(sum(abs(result.parameters[k] - v) <= 3 * se[k] for k, v in ss.TRUE.items() if k in se))


def run_colloc(trial, hessian: str, compiled: bool = True) -> dict:
    t0 = time.perf_counter()
    result = co.solve(ss.problem(trial, compiled=compiled), solver=co.Ipopt(hessian=hessian), throw=False)
    wall = time.perf_counter() - t0
    tm = result.timings
    return {"tool": f"colloc ({hessian} Hessian)", "success": bool(result.success), "status": result.status,
            "iterations": int(result.iterations), "build_s": tm["build_s"], "solve_s": tm["solve_s"],
            "covariance_s": tm.get("covariance_s"), "simulation_s": tm.get("simulation_s"), "wall_s": wall,
            "max_abs_gain_error_pct": max(abs(100 * (result.parameters[k] / v - 1)) for k, v in ss.TRUE.items()),
            "within_3se": _within(result)}


def opty_equations():
    """The KanesMethod equations of the test suite in opty's form: (eom, states, known
    trajectory symbols in SHIP_COLUMNS order, scaled-gain symbols by gain name)."""
    import sympy as sm
    import sympy.physics.mechanics as me

    sys.path.insert(0, str(ROOT / "tests" / "multibody"))
    from test_chain import sympy_kanes  # the independent derivation of the test suite

    t = me.dynamicsymbols._t
    kane = sympy_kanes(4)
    q, u, ship, vel = kane["q"], kane["u"], kane["ship"], kane["vel"]
    rates = me.dynamicsymbols("ship_roll_rate ship_pitch_rate ship_yaw_rate")
    accs = me.dynamicsymbols("ship_roll_acc ship_pitch_acc ship_yaw_acc")
    acc_S = me.dynamicsymbols("ship_acc_x ship_acc_y ship_acc_z")
    c, s = [sm.cos(a) for a in ship], [sm.sin(a) for a in ship]
    R_NS = (sm.Matrix([[1, 0, 0], [0, c[0], -s[0]], [0, s[0], c[0]]])
            * sm.Matrix([[c[1], 0, s[1]], [0, 1, 0], [-s[1], 0, c[1]]])
            * sm.Matrix([[c[2], -s[2], 0], [s[2], c[2], 0], [0, 0, 1]]))
    acc_N = R_NS * sm.Matrix(acc_S)       # the contract gives the acceleration in S components
    plain = {**{a.diff(t, 2): b for a, b in zip(ship, accs)}, **{a.diff(t): b for a, b in zip(ship, rates)},
             **{v.diff(t): acc_N[i] for i, v in enumerate(vel)}}
    M = kane["mass_matrix"].xreplace(plain)
    forcing = kane["forcing"].xreplace(plain)
    gains = {name: sm.Symbol(f"g_{name}") for name in ss.TRUE}   # scaled: gain = GUESS · g
    Q = []
    for i, joint in enumerate(ss.JOINTS):
        for k, axis in enumerate("xyz"):
            n = 3 * i + k
            if axis == "z":
                kp, kd = ss.PASSIVE_YAW[joint]
            else:
                kp = ss.GUESS[f"kp_{joint}_{axis}"] * gains[f"kp_{joint}_{axis}"]
                kd = ss.GUESS[f"kd_{joint}_{axis}"] * gains[f"kd_{joint}_{axis}"]
            Q.append(-kp * q[n] - kd * u[n])
    eom = sm.Matrix([qi.diff(t) - ui for qi, ui in zip(q, u)]
                    + list(M * sm.Matrix([ui.diff(t) for ui in u]) - forcing - sm.Matrix(Q)))
    known = tuple(ship) + tuple(rates) + tuple(accs) + tuple(acc_S)
    left = eom.free_symbols | set(me.find_dynamicsymbols(eom))
    allowed = set(q) | set(u) | {ui.diff(t) for ui in u} | {qi.diff(t) for qi in q} | set(known) \
        | set(gains.values()) | {t}
    if not left <= allowed:
        raise RuntimeError(f"opty equations: unexpected symbols {sorted(map(str, left - allowed))}")
    return eom, tuple(q) + tuple(u), known, gains


def run_opty(duration: float, max_iter: int, timeout: float, noise: bool = True, backend: str = "cython") -> dict:
    """opty in a child process of its own process group (its own memory, and stopped with
    the compilers it started after ``timeout`` seconds: the SymPy derivation and the
    ``opty.Problem`` construction are not interruptible otherwise)."""
    import multiprocessing as mp
    import signal

    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_opty_child, args=(duration, max_iter, noise, backend, queue), daemon=True)
    t0 = time.perf_counter()
    child.start()
    stages: dict = {}
    while child.is_alive() or not queue.empty():
        left = timeout - (time.perf_counter() - t0)
        try:
            stage, value = queue.get(timeout=max(left, 0.1))
        except Exception:  # queue.Empty: no news before the time box ran out
            if time.perf_counter() - t0 >= timeout:
                break
            continue
        stages[stage] = value
        if stage in ("done", "error"):
            break
    finished = "done" in stages
    if child.is_alive():
        try:
            os.killpg(child.pid, signal.SIGTERM)   # the child and the compilers it runs
        except ProcessLookupError:   # not yet in its own group
            child.terminate()
        child.join()
    row = {"tool": f"opty (midpoint, L-BFGS, {backend})", "duration_s": duration, "timeout_s": timeout,
           "eom_s": stages.get("eom_s"), "build_s": stages.get("build_s"), "solve_s": None,
           "finished": finished}
    if finished:
        row.update(stages["done"])
    elif "error" in stages:
        row["error"] = stages["error"]
    else:
        row["stopped_in"] = ("the opty.Problem construction (symbolic Jacobian, code generation, C compilation)"
                             if "eom_s" in stages and "build_s" not in stages else
                             "the SymPy derivation" if "eom_s" not in stages else "the solve")
    return row


def _opty_child(duration: float, max_iter: int, noise: bool, backend: str, queue) -> None:
    os.setpgrp()
    try:
        trial = ss.simulate_trial(duration=duration, seed=0, noise=noise, deck=False)
        queue.put(("done", _opty_solve(trial, max_iter, backend, queue)))
    except Exception as exc:  # reported, not raised: the parent writes the table
        queue.put(("error", f"{type(exc).__name__}: {exc}"[:300]))


def _opty_solve(trial, max_iter: int, backend: str, queue) -> dict:
    import cyipopt
    import opty
    import sympy

    t0 = time.perf_counter()
    eom, states, known, gains = opty_equations()
    eom_s = time.perf_counter() - t0
    queue.put(("eom_s", eom_s))
    N = trial.num_samples
    h = float(np.diff(trial.time).mean())
    measured = np.stack([trial[c] for c in ss.STATE_NAMES])
    weights = np.array([ss.SIGMA_ANGLE**-2] * 12 + [ss.SIGMA_RATE**-2] * 12)[:, None]
    n_obs = measured.size

    def obj(free):
        r = free[: 24 * N].reshape(24, N) - measured
        return float(np.sum(weights * r * r)) / n_obs

    def obj_grad(free):
        grad = np.zeros_like(free)
        grad[: 24 * N] = (2.0 * weights * (free[: 24 * N].reshape(24, N) - measured)).ravel() / n_obs
        return grad

    t0 = time.perf_counter()
    prob = opty.Problem(obj, obj_grad, eom, states, N, h,
                        known_trajectory_map={sym: np.asarray(trial[c], dtype=float)
                                              for sym, c in zip(known, ss.SHIP_COLUMNS)},
                        integration_method="midpoint", backend=backend)
    build_s = time.perf_counter() - t0
    queue.put(("build_s", build_s))
    order = [str(p)[2:] for p in prob.collocator.unknown_parameters]
    if sorted(order) != sorted(ss.TRUE) or prob.num_free != 24 * N + 16:
        raise RuntimeError(f"opty: unexpected free vector layout {order}, {prob.num_free}")
    for key, value in (("hessian_approximation", "limited-memory"), ("print_level", 0), ("sb", "yes"),
                       ("tol", 1e-8), ("max_iter", max_iter)):
        prob.add_option(key, value)
    guess = np.concatenate([measured.ravel(), np.ones(16)])
    prob.obj_value = []
    t0 = time.perf_counter()
    free, info = prob.solve(guess)
    solve_s = time.perf_counter() - t0
    est = {name: ss.GUESS[name] * v for name, v in zip(order, free[24 * N:])}
    status = int(info["status"])
    return {"success": status in (0, 1), "status": status,
            "iterations": len(prob.obj_value) - 1, "eom_s": eom_s, "build_s": build_s, "solve_s": solve_s,
            "max_abs_gain_error_pct": max(abs(100 * (est[k] / v - 1)) for k, v in ss.TRUE.items()),
            "versions": {"opty": opty.__version__, "cyipopt": cyipopt.__version__, "sympy": sympy.__version__}}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a clean 1 s record for both (smoke test)")
    parser.add_argument("--duration", type=float, default=60.0, help="colloc's record, s")
    parser.add_argument("--opty-duration", type=float, default=None, help="opty's record, s (default: the same)")
    parser.add_argument("--opty-max-iter", type=int, default=3000)
    parser.add_argument("--opty-timeout", type=float, default=1800.0,
                        help="stop opty after this many seconds (derivation, build and solve)")
    parser.add_argument("--opty-backend", choices=("cython", "numpy"), default="cython",
                        help="opty's evaluation: generated C compiled by Cython (its default) or NumPy")
    parser.add_argument("--no-opty", action="store_true", help="time colloc alone")
    parser.add_argument("--interpreted", action="store_true",
                        help="colloc's model in CasADi's virtual machine (no C compiler; the smoke test)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "ship_stance_vs_opty.json")
    args = parser.parse_args(argv)
    duration = 1.0 if args.quick else args.duration
    opty_duration = duration if args.quick or args.opty_duration is None else args.opty_duration
    trial = ss.simulate_trial(duration=duration, seed=0, noise=not args.quick, deck=False)
    rows = []
    for hessian in ("exact", "gauss-newton"):
        rows.append({**run_colloc(trial, hessian, not args.interpreted), "duration_s": duration})
        print(rows[-1], flush=True)
    try:
        import opty  # noqa: F401
    except ImportError:
        print("opty not installed")
    else:
        if not args.no_opty:
            rows.append(run_opty(opty_duration, args.opty_max_iter, args.opty_timeout, noise=not args.quick,
                                 backend=args.opty_backend))
            print(rows[-1], flush=True)
    ratios = {}
    opty_row = rows[2] if len(rows) == 3 else None
    if opty_row is not None and opty_row["finished"]:
        for row in rows[:2]:
            ratios[row["tool"]] = {"build": opty_row["build_s"] / row["build_s"],
                                   "build_with_derivation": (opty_row["build_s"] + opty_row["eom_s"]) / row["build_s"],
                                   "solve": opty_row["solve_s"] / row["solve_s"],
                                   "same_record": opty_row["duration_s"] == row["duration_s"]}
    print(f"{'tool':34s} {'record s':>8s} {'derive s':>8s} {'build s':>8s} {'solve s':>8s} {'iter':>5s} {'max err %':>9s}")
    for row in rows:
        def fmt(v, spec):
            return format(v, spec) if isinstance(v, (int, float)) else f"{'—':>8s}"
        print(f"{row['tool']:34s} {row['duration_s']:8g} {fmt(row.get('eom_s'), '8.1f')} {fmt(row['build_s'], '8.1f')} "
              f"{fmt(row['solve_s'], '8.1f')} {fmt(row.get('iterations'), '5d')} "
              f"{fmt(row.get('max_abs_gain_error_pct'), '9.3f')}")
    if opty_row is not None and not opty_row["finished"]:
        print(f"opty did not finish within {opty_row['timeout_s']:g} s: "
              + opty_row.get("error", f"stopped in {opty_row.get('stopped_in')}"))
    for tool, r in ratios.items():
        print(f"opty / {tool}: build {r['build']:.1f}× (with SymPy derivation {r['build_with_derivation']:.1f}×), "
              f"solve {r['solve']:.1f}×" + ("" if r["same_record"] else " (different record lengths)"))
    report = {"problem": "ship-stance", "rate_hz": 100.0, "rows": rows, "ratios_opty_over_colloc": ratios}
    write_report(args.out, report)
    return report


if __name__ == "__main__":
    main()
