"""CasADi's system-identification example (a Duffing oscillator driven by a known input held
constant over each sample) through colloc's public API, against a multiple-shooting fit of the
same record written directly in CasADi.

The case is the one of ``examples/python/sysid.py`` in the CasADi repository (Andersson, Gillis,
Diehl et al.; the Silverbox-like oscillator ``M ÿ + c ẏ + k y + k_NL y³ = u``): 10,000 samples at
610.1 Hz, M = 5.625e-6, c = 2.3e-4, k = 1, k_NL = 4.69, the input ``0.1·U(0, 1)`` (NumPy seed 0)
held over each sample, the state starting at rest, the position measured, the fit started from
M = 5e-6, c = 2e-4, k = 1, k_NL = 5.  That example has no noise (a line adding
``0.001·U(0, 1)`` is left commented out); ``--noise example`` adds it (its mean, 0.5 mm, is an
offset the model does not have), ``--noise centred`` adds ``0.001·(U(0, 1) − ½)``, ``--noise none``
(default) adds nothing.

* The record is made here by scipy's ``solve_ivp`` (DOP853, rtol 1e-11, atol 1e-13), one call per
  sample interval with the input constant on it: a generator that shares no code with either fit.
* colloc: :func:`colloc_fit` is the user's code (the model, the trial with ``interpolation={"u":
  "hold"}``, ``co.solve``); its non-blank, non-comment lines are counted in the report.  The whole
  ``co.solve`` call is timed against its own ``build_s + solve_s``.
* CasADi multiple shooting (the example's method, written here): the state at every sample is a
  variable, classical RK4 with 10 steps a sample maps each to the next (one expanded function
  ``map``-ped over the samples), the gaps are equality constraints, IPOPT with the Gauss–Newton
  Hessian ``JᵀJ`` of the residuals, the parameters scaled by (1e-6, 1e-4, 1, 1), the velocities
  started from finite differences of the measured positions.  Timed from building the graph to
  the solution.

Targets (printed PASS/FAIL, never asserted): every parameter within 0.1 % of the truth; the whole
``co.solve`` at most 3× its build + solve; colloc's whole ``co.solve`` at most the
multiple-shooting fit's time.

    python benchmarks/duffing_sysid.py                         # 10,000 samples, both fits
    python benchmarks/duffing_sysid.py --samples 400 --out DIR # a small run (the smoke test)
    python benchmarks/duffing_sysid.py --only colloc --data F  # one fit alone (whole-process timing)
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from pathlib import Path

import casadi as ca
import numpy as np
from scipy.integrate import solve_ivp

import colloc as co

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_report

FS = 610.1
TRUE = {"M": 5.625e-6, "c": 2.3e-4, "k": 1.0, "k_nl": 4.69}
GUESS = {"M": 5e-6, "c": 2e-4, "k": 1.0, "k_nl": 5.0}
SCALE = {"M": 1e-6, "c": 1e-4, "k": 1.0, "k_nl": 1.0}
NAMES = list(TRUE)


def make_record(samples: int, noise: str = "none", seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t, u, y)``: the held input and the measured position, by solve_ivp per sample interval."""
    rng = np.random.RandomState(seed)  # the example's generator and seed for the input
    u = 0.1 * rng.random_sample(samples)
    t = np.arange(samples) / FS
    M, c, k, k_nl = (TRUE[n] for n in NAMES)
    x = np.zeros((samples, 2))
    for j in range(samples - 1):
        sol = solve_ivp(lambda _, z, uj=u[j]: [z[1], (uj - k_nl * z[0] ** 3 - k * z[0] - c * z[1]) / M],
                        (t[j], t[j + 1]), x[j], method="DOP853", rtol=1e-11, atol=1e-13)
        x[j + 1] = sol.y[:, -1]
    y = x[:, 0].copy()
    if noise == "example":
        y += 0.001 * rng.random_sample(samples)
    elif noise == "centred":
        y += 0.001 * (rng.random_sample(samples) - 0.5)
    return t, u, y


def colloc_fit(t, u, y):
    # the model: M ÿ + c ẏ + k y + k_NL y³ = u
    m = co.Model("duffing")
    pos, vel = m.state("y", unit="m", scale=0.1), m.state("dy", unit="m/s", scale=50.0)
    force = m.known_input("u", unit="N")
    M = m.parameter("M", bounds=(1e-7, 1e-4), guess=5e-6, scale=1e-6, unit="kg")
    c = m.parameter("c", bounds=(1e-6, 1e-2), guess=2e-4, scale=1e-4, unit="N·s/m")
    k = m.parameter("k", bounds=(0.01, 100.0), guess=1.0, unit="N/m")
    k_nl = m.parameter("k_nl", bounds=(0.01, 100.0), guess=5.0, unit="N/m^3")
    m.set_der(pos, vel)
    m.set_der(vel, (force - k_nl * pos**3 - k * pos - c * vel) / M)
    # the record: the input is held constant over each sample
    trial = co.Trial(t, {"y": y, "u": u}, interpolation={"u": "hold"}, name="sysid")
    return co.solve(co.Problem(m, trial, fit={"y": 1e6}), co.Radau(degree=4))


def user_code_lines() -> int:
    """Non-blank, non-comment lines of :func:`colloc_fit` after its ``def`` line."""
    lines = inspect.getsource(colloc_fit).splitlines()[1:]
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def multiple_shooting(t, u, y, steps: int = 10) -> dict:
    """The example's method, written here: RK4 multiple shooting with a Gauss–Newton Hessian."""
    start = time.perf_counter()
    N = t.size
    x, uk, p = ca.SX.sym("x", 2), ca.SX.sym("u"), ca.SX.sym("p", 4)
    M, c, k, k_nl = (p[i] * SCALE[n] for i, n in enumerate(NAMES))

    def rhs(z):
        return ca.vertcat(z[1], (uk - k_nl * z[0] ** 3 - k * z[0] - c * z[1]) / M)

    h = 1.0 / FS / steps
    z = x
    for _ in range(steps):
        k1 = rhs(z)
        k2 = rhs(z + h / 2 * k1)
        k3 = rhs(z + h / 2 * k2)
        k4 = rhs(z + h * k3)
        z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    sample = ca.Function("sample", [x, uk, p], [z])
    V = ca.MX.sym("V", 4 + 2 * N)  # the parameters (scaled), then the state at every sample
    params, X = V[:4], ca.reshape(V[4:], 2, N)
    ahead = sample.map(N - 1)(X[:, :-1], ca.DM(u[None, :-1]), ca.repmat(params, 1, N - 1))
    gaps = ca.vec(ahead - X[:, 1:])
    e = ca.DM(y) - X[0, :].T
    J = ca.jacobian(e, V)
    sigma, lam_g = ca.MX.sym("sigma"), ca.MX.sym("lam_g", gaps.numel())
    hess = ca.Function("gauss_newton", [V, ca.MX.sym("p", 0, 1), sigma, lam_g], [sigma * ca.triu(ca.mtimes(J.T, J))],
                       ["x", "p", "lam_f", "lam_g"], ["hess_gamma_x_x"])
    solver = ca.nlpsol("ms", "ipopt", {"x": V, "f": 0.5 * ca.sumsqr(e), "g": gaps},
                       {"hess_lag": hess, "print_time": False, "ipopt.print_level": 0, "ipopt.sb": "yes"})
    velocity = np.gradient(y, t)
    v0 = np.concatenate([[GUESS[n] / SCALE[n] for n in NAMES], np.column_stack([y, velocity]).ravel()])
    build = time.perf_counter() - start
    sol = solver(x0=v0, lbg=0, ubg=0)
    elapsed = time.perf_counter() - start
    est = np.array(sol["x"]).ravel()[:4] * np.array([SCALE[n] for n in NAMES])
    stats = solver.stats()
    return {"parameters": dict(zip(NAMES, est.tolist())), "success": bool(stats["success"]),
            "status": str(stats["return_status"]), "iterations": int(stats["iter_count"]),
            "build_s": build, "total_s": elapsed}


def _errors(parameters: dict) -> dict:
    return {n: abs(parameters[n] / TRUE[n] - 1) for n in NAMES}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=10_000)
    ap.add_argument("--noise", choices=("none", "example", "centred"), default="none")
    ap.add_argument("--only", choices=("both", "colloc", "casadi"), default="both")
    ap.add_argument("--data", help="an .npz record to read (made by --save-data) instead of generating one")
    ap.add_argument("--save-data", help="write the generated record to this .npz and stop")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    if args.data:
        rec = np.load(args.data)
        t, u, y = rec["t"], rec["u"], rec["y"]
    else:
        t, u, y = make_record(args.samples, args.noise)
    generate_s = time.perf_counter() - t0
    if args.save_data:
        np.savez(args.save_data, t=t, u=u, y=y)
        print(f"record of {t.size} samples written to {args.save_data} ({generate_s:.1f} s)")
        return
    report: dict = {"samples": int(t.size), "fs_hz": FS, "noise": args.noise, "truth": TRUE, "guess": GUESS,
                    "generate_s": generate_s, "user_code_lines": user_code_lines()}
    lines = [f"Duffing sysid, {t.size} samples at {FS} Hz, input held per sample, noise {args.noise}"]
    if args.only in ("both", "colloc"):
        t0 = time.perf_counter()
        result = colloc_fit(t, u, y)
        wall = time.perf_counter() - t0
        bs = result.timings["build_s"] + result.timings["solve_s"]
        err = _errors(result.parameters)
        report["colloc"] = {"success": result.success, "status": result.status, "iterations": result.iterations,
                            "parameters": result.parameters, "relative_error": err,
                            "standard_errors": result.standard_errors, "solve_wall_s": wall,
                            "build_plus_solve_s": bs, "whole_over_build_solve": wall / bs,
                            "timings": result.timings, "simulation": result.simulation,
                            "input_interpolation": result.info.get("input_interpolation")}
        ok = max(err.values()) <= 1e-3
        lines += [(f"colloc Radau(4): {result.status}, {result.iterations} iterations, user code "
                  f"{report['user_code_lines']} lines"),
                  "  " + ", ".join(f"{n} {result.parameters[n]:.6g} ({err[n]:.1e})" for n in NAMES),
                  f"  [{'PASS' if ok else 'FAIL'}] parameters within 0.1 % (worst {max(err.values()):.1e})",
                  (f"  whole co.solve {wall:.2f} s, build + solve {bs:.2f} s: "
                  f"[{'PASS' if wall <= 3 * bs else 'FAIL'}] {wall / bs:.2f}x (target <= 3x)")]
    if args.only in ("both", "casadi"):
        ms = multiple_shooting(t, u, y)
        ms["relative_error"] = _errors(ms["parameters"])
        report["multiple_shooting"] = ms
        lines += [(f"CasADi multiple shooting (RK4 x10, Gauss-Newton): {ms['status']}, {ms['iterations']} iterations, "
                  f"{ms['total_s']:.2f} s (build {ms['build_s']:.2f} s)"),
                  "  " + ", ".join(f"{n} {ms['parameters'][n]:.6g} ({ms['relative_error'][n]:.1e})" for n in NAMES)]
    if args.only == "both":
        ratio = report["colloc"]["solve_wall_s"] / report["multiple_shooting"]["total_s"]
        report["colloc_over_multiple_shooting"] = ratio
        report["colloc_vs_multiple_shooting"] = {  # the same estimator on the same data: how close
            n: abs(report["colloc"]["parameters"][n] / report["multiple_shooting"]["parameters"][n] - 1) for n in NAMES}
        lines.append(f"[{'PASS' if ratio <= 1 else 'FAIL'}] colloc / multiple shooting {ratio:.2f} (target <= 1)")
    print("\n".join(lines))
    name = "duffing_sysid.json" if args.only == "both" else f"duffing_sysid_{args.only}.json"
    write_report(Path(args.out) / name, report)


if __name__ == "__main__":
    main()
