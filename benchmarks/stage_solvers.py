"""Solver memory on a stage-structured problem: IPOPT with MUMPS against fatrop (CasADi 3.8).

    python benchmarks/stage_solvers.py --stages 60000 --solver fatrop [--out FILE.json]
    python benchmarks/stage_solvers.py --stages 60000 --solver ipopt

fatrop (CasADi's ``nlpsol("fatrop")``) factorises the KKT system of an optimal-control
problem stage by stage (a Riccati recursion), so it needs the problem as stages: states that
pass from stage to stage by an explicit map ``x[k+1] = F(x[k], u[k])``, controls ``u[k]``
local to a stage, and equality constraints per stage.  colloc's identification problems
carry constant unknown parameters, which would have to become states with ``p[k+1] = p[k]``.
This script builds a synthetic problem with the stage sizes the two-link seed case would
have in that form (radau2 at 100 Hz): 4 states and 8 feedback gains as stage states (12),
4 interior collocation states and 2 input errors as controls (6), 4 collocation equations
per stage, least squares on the two angles.  Both solvers get the same problem; the report
is the resident memory before the solve and its peak while solving (sampled by
memory_profile.py's second process), the solve time and the solution's agreement.  It
measures the solvers, not colloc: nothing here is used by the library.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

try:  # run as a script (benchmarks/ on the path) or imported as benchmarks.NAME
    from _report import write_report
    from memory_profile import Meter, RssSampler
except ImportError:
    from benchmarks._report import write_report
    from benchmarks.memory_profile import Meter, RssSampler

ROOT = Path(__file__).resolve().parents[1]


def build(stages: int):
    """The NLP (stage-ordered variables and constraints), its bounds and a start."""
    import casadi as ca
    import numpy as np

    dt = 0.01
    x, u = ca.SX.sym("x", 12), ca.SX.sym("u", 6)
    q, w, p = x[0:2], x[2:4], x[4:12]
    K, D = ca.reshape(p[0:4], 2, 2), ca.reshape(p[4:8], 2, 2)

    def rhs(qq, ww, e):
        return ca.vertcat(ww, -9.81 * ca.sin(qq) - K @ (qq + e) - D @ ww)

    xc = u[0:4]
    fc = rhs(xc[0:2], xc[2:4], u[4:6])
    path = ca.Function("path", [x, u], [xc - x[0:4] - 0.5 * dt * fc])  # interior collocation
    step = ca.Function("step", [x, u], [ca.vertcat(x[0:4] + dt * fc, p)])  # to the next stage
    t = np.arange(stages + 1) * dt
    y = np.vstack([0.1 * np.sin(2 * t), 0.05 * np.cos(3 * t)])
    X = [ca.MX.sym(f"x{k}", 12) for k in range(stages + 1)]
    U = [ca.MX.sym(f"u{k}", 6) for k in range(stages)]
    Y = ca.MX.sym("y", 2, stages + 1)
    xs, us = ca.horzcat(*X[:-1]), ca.horzcat(*U)
    gap = ca.horzcat(*X[1:]) - step.map(stages)(xs, us)
    eq = path.map(stages)(xs, us)
    g = ca.vertcat(*[ca.vertcat(gap[:, k], eq[:, k]) for k in range(stages)])
    # the record is not exciting enough to fix all 8 gains: a weak prior at 10 makes the
    # optimum unique, so both solvers must reach the same one
    obj = ca.sumsqr(ca.horzcat(*X)[0:2, :] - Y) + 1e-2 * ca.sumsqr(us[4:6, :]) + 1e-3 * ca.sumsqr(X[0][4:12] - 10)
    v = ca.vertcat(*[ca.vertcat(X[k], U[k]) for k in range(stages)], X[-1])
    x0 = np.zeros((stages + 1) * 12 + stages * 6)
    for k in range(stages + 1):  # angles from the data, gains 10
        x0[k * 18:k * 18 + 2] = y[:, k]
        x0[k * 18 + 4:k * 18 + 12] = 10.0
    return {"x": v, "p": ca.vec(Y), "f": obj, "g": g}, x0, np.ravel(y, order="F"), g.numel()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", type=int, default=60000)
    ap.add_argument("--solver", choices=("fatrop", "ipopt"), default="fatrop")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "stage_solvers.json"))
    args = ap.parse_args(argv)
    if args.stages < 2:
        ap.error("--stages: at least 2")
    import casadi as ca
    import numpy as np

    meter = Meter()
    t = time.perf_counter()
    nlp, x0, data, ng = build(args.stages)
    meter.mark("NLP built", time.perf_counter() - t)
    if args.solver == "fatrop":
        opts = {"structure_detection": "auto", "equality": [True] * ng, "expand": True, "print_time": False,
                "fatrop": {"print_level": 0, "tol": 1e-8}}
    else:
        from colloc.solving.ipopt import Ipopt
        opts = {**Ipopt().nlpsol_options(), "expand": True}
    t = time.perf_counter()
    solver = ca.nlpsol("s", args.solver, nlp, opts)
    meter.mark("solver created", time.perf_counter() - t)
    before = meter.rows[-1]["held_mb"]
    with RssSampler() as sampler:
        t = time.perf_counter()
        sol = solver(x0=x0, p=data, lbg=np.zeros(ng), ubg=np.zeros(ng))
        seconds = time.perf_counter() - t
    meter.mark("solved", seconds)
    stats = solver.stats()
    xs = np.asarray(sol["x"]).ravel()
    gains = xs[4:12].tolist()
    rss = sampler.summary()
    status = f"success={bool(stats.get('success'))} ({stats.get('return_status')})"
    print(f"{args.solver}: {status}, {stats.get('iter_count')} iterations, "
          f"{seconds:.1f} s; RSS before {before:.0f} MB, peak {rss['peak_mb']:.0f} MB "
          f"(+{rss['peak_mb'] - before:.0f}); gains {np.round(gains, 6).tolist()}")
    write_report(args.out, {"stages": args.stages, "solver": args.solver, "variables": int(xs.size),
                            "constraints": int(ng), "status": status,
                            "iterations": int(stats.get("iter_count", -1)), "solve_s": seconds,
                            "rss_before_mb": before, "solve_peak_mb": rss["peak_mb"],
                            "solver_mb": rss["peak_mb"] - before, "gains": gains, "objective": float(sol["f"]),
                            "steps": meter.rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
