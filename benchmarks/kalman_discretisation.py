"""What the Kalman ML's discretisation and predictions cost, against the forms they replaced (issue 17).

    python benchmarks/kalman_discretisation.py [--out FILE.json]

On the real-subject sway models (``cip.stochastic_problem(..., noise="sway-lp")``, PID-delay: 15
states; PD-delay: 14) at an estimate of BDS00010's whole record:

* **the discretisation** (``LinearGaussianModel._discrete``: Φ and the noise covariance by Van Loan's
  exponential): as colloc builds it now (MX, on matrices, at the squarings of
  ``expm_squarings_for``), as before (the same Padé-13 expanded into scalars, SX, at the squarings of
  ``‖M‖₁``) and in between (MX at ``‖M‖₁``'s): the time to build the reverse (``_discrete_reverse``,
  one per squaring count and model), to evaluate it and the forward map, the largest error of Φ
  relative to ``scipy.linalg.expm`` of ``A dt``, and how far the reverses before and now differ;
* **the k-step predictions** (``colloc.kalman.k_step_predictions`` at 10 and 50 steps, 0.1 and 0.5 s,
  the held-out comparison's horizons) with the gain held once the covariance has settled, against the
  same recursion run to the end (``likelihood.STEADY_TOL = -1``: never settled), and the largest
  difference between the two.

CPU is ``time.process_time()``, the median of ``--repeats``.  It reports, it never asserts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import casadi as ca
import numpy as np
import scipy.linalg as sla

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _report import write_report

from colloc.inference.kalman import likelihood
from colloc.inference.kalman.expm import van_loan

#: BDS00010's whole record, PD-delay's estimate (``colloc identify cip``); PID-delay at K_I = 5.
ESTIMATE = {"KP": 755.3, "KI": 5.0, "KD": 321.9, "tau": 0.091, "q_d": 2.795, "B": 0.365, "tau_m": 0.24,
            "sigma": 2.8e-9}


def _cpu(f, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.process_time()
        f()
        times.append(time.process_time() - t)
    return statistics.median(times)


def _scalar_discrete(lgm, s: int) -> ca.Function:
    """The discretisation as it was built before: Padé-13 on the model's SX symbols (scalars)."""
    th = lgm._theta
    a_dt, h_dt = lgm._van_loan_args(th)
    Phi, Qd = van_loan(a_dt, h_dt, s)
    return ca.Function("scalar_discrete", [th], [Phi, lgm._noise_scale(th) * Qd, *lgm._undiscretised(th)])


def discretisation(lgm, theta: np.ndarray, repeats: int) -> dict:
    """Three forms: ``before`` (SX scalars at the squarings of ``‖M‖₁``, as colloc built it before),
    ``mx_norm`` (MX at those squarings) and ``after`` (MX at :func:`expm_squarings_for`'s, as now)."""
    from colloc.inference.kalman.expm import expm_squarings

    block = np.asarray(lgm._block(theta))
    s_norm, s_now = expm_squarings(float(np.abs(block).sum(axis=0).max())), lgm.squarings(theta)
    t = time.process_time()
    before = _scalar_discrete(lgm, s_norm)
    build_forward_before = time.process_time() - t
    forms = {"before": before, "mx_norm": lgm._discrete(s_norm), "after": lgm._discrete(s_now)}
    outs_size = sum(int(np.prod(before.size_out(i))) for i in range(before.n_out()))
    seeds = np.random.default_rng(0).standard_normal(outs_size)
    reference = sla.expm(np.asarray(lgm.continuous(theta)["A"]) * lgm.dt)
    row: dict = {"states": lgm.num_states, "squarings_norm": s_norm, "squarings_now": s_now,
                 "build_forward_before_s": build_forward_before}
    gradients = {}
    for name, f in forms.items():
        th = ca.MX.sym("theta", lgm.num_parameters)
        outs = ca.vertcat(*[ca.vec(v) for v in f(th)])
        seed = ca.MX.sym("seeds", outs.shape[0])
        t = time.process_time()
        reverse = ca.Function(f"reverse_{name}", [th, seed], [ca.jtimes(outs, th, seed, True)])
        row[f"build_reverse_{name}_s"] = time.process_time() - t
        gradients[name] = np.asarray(reverse(theta, seeds)).ravel()
        row[f"reverse_{name}_ms"] = 1e3 * _cpu(lambda r=reverse: [r(theta, seeds) for _ in range(50)], repeats) / 50
        row[f"forward_{name}_ms"] = 1e3 * _cpu(lambda g=f: [g(theta) for _ in range(50)], repeats) / 50
        Phi = np.asarray(f(theta)[0])
        row[f"phi_error_{name}"] = float(np.abs(Phi - reference).max() / np.abs(reference).max())
    row["reverse_difference"] = float(np.abs(gradients["after"] - gradients["before"]).max()
                                      / np.abs(gradients["before"]).max())
    return row


def predictions(lgm, theta: dict, y: np.ndarray, repeats: int) -> dict:
    row: dict = {}
    for steps in (10, 50):
        held = likelihood.k_step_predictions(lgm, y, theta, steps)
        row[f"held_{steps}_s"] = _cpu(lambda st=steps: likelihood.k_step_predictions(lgm, y, theta, st), repeats)
        saved = likelihood.STEADY_TOL
        likelihood.STEADY_TOL = -1.0  # never settled: the covariance's recursion to the end
        try:
            full = likelihood.k_step_predictions(lgm, y, theta, steps)
            row[f"full_{steps}_s"] = _cpu(lambda st=steps: likelihood.k_step_predictions(lgm, y, theta, st), repeats)
        finally:
            likelihood.STEADY_TOL = saved
        scale = np.nanmax(np.abs(full[0]))
        row[f"mean_difference_{steps}"] = float(np.nanmax(np.abs(held[0] - full[0])) / scale)
        row[f"sd_difference_{steps}"] = float(np.nanmax(np.abs(held[1] - full[1]) / full[1]))
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "kalman_discretisation.json")
    args = ap.parse_args(argv)
    from colloc_problems import cip

    trial = cip.load_trial(str(ROOT / "data" / "bds" / "BDS00010.txt.gz"), columns={"cop": "COPx"})
    body = cip.body(1.575, 54.2)
    y = np.asarray(trial["cop"], dtype=float)
    y = y - y.mean()
    report: dict = {"trial": "BDS00010", "estimate": ESTIMATE, "models": {}}
    for controller in ("PID-delay", "PD-delay"):
        lgm = cip.stochastic_problem(trial, controller=controller, body=body, noise="sway-lp").model_at(0.01)
        theta = {k: ESTIMATE[k] for k in lgm.parameter_names}
        vector = np.array([theta[k] for k in lgm.parameter_names])
        row = {**discretisation(lgm, vector, args.repeats), **predictions(lgm, theta, y, args.repeats)}
        report["models"][controller] = row
        print(f"{controller}: {row['states']} states; squarings {row['squarings_norm']} from ‖M‖₁, "
              f"{row['squarings_now']} from the norms of its powers")
        for name, label in (("before", "SX, ‖M‖₁ squarings (before)"), ("mx_norm", "MX, ‖M‖₁ squarings"),
                            ("after", "MX, powers' squarings (now)")):
            print(f"  {label:30}: reverse built in {row[f'build_reverse_{name}_s']:.3f} s, evaluated in "
                  f"{row[f'reverse_{name}_ms']:.2f} ms, forward {row[f'forward_{name}_ms']:.2f} ms; "
                  f"Φ {row[f'phi_error_{name}']:.1e} of its largest entry from scipy.linalg.expm")
        print(f"  the reverses before and now differ by {row['reverse_difference']:.1e} of the largest")
        for steps in (10, 50):
            print(f"  {steps}-step predictions of 60 s: {row[f'held_{steps}_s']:.3f} s with the gain held once "
                  "settled, "
                  f"{row[f'full_{steps}_s']:.3f} s without; differences {row[f'mean_difference_{steps}']:.1g} (means), "
                  f"{row[f'sd_difference_{steps}']:.1g} (SDs, relative)")
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
