"""CPU seconds of the Kalman maximum likelihood on a real 60 s record, per controller.

    python benchmarks/kalman_speed.py [--data FILE ...] [--controllers PID,PID-delay,PD-delay]
        [--noise sway|sway-lp|...] [--errors model|robust] [--lengths 30,60] [--repeats 2] [--quick] [--out JSON]

The fit is the issue's (17 · Real sway): ``co.solve(cip.stochastic_problem(trial,
controller=C, body=cip.body(1.575, 54.2), noise=NOISE), co.KalmanML())`` on the shipped BDS
trial's COPx (60 s at 100 Hz; ``--lengths 30`` fits ``trial.window(0, 30)``, the record's own
seconds; a length of the record or more fits all of it).  ``--noise`` (default ``sway``;
``sway-lp`` is the CLI's default for a real subject); ``--errors`` (default ``model``; ``robust``,
``co.KalmanML(errors="robust")``, is the CLI's for a real subject); ``--data`` may be repeated (every trial,
every case).  Each case runs
``--repeats`` times in this process: the first may compile the gradient (the C compiler runs
as a child process, its CPU is reported apart as ``compiler_cpu_s``) and later ones load it
from the disk cache, as every fit after the first on a machine does.

CPU is ``time.process_time()`` of this process (the machine is shared: wall time depends on
the other jobs, CPU time much less), with the 1/5/15-minute load average before and after
each fit.  Also counted: gradient evaluations (each one filter pass and one reverse sweep),
difference Hessians (``4·free parameters + 1`` gradients each), the optimizer's iterations,
the one-step-prediction CPU, and the fit's NLL, estimates and standard errors.

``--quick``: PID on the first 10 s, one repeat (the smoke test's run; minutes of compiling
the first time on a machine, seconds after).  Writes JSON atomically (default
benchmarks/results/kalman_speed.json).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _report import write_report

import colloc as co

#: The shipped subject's body (BDSinfoCOP: 157.5 cm, 54.2 kg).
HEIGHT_M, MASS_KG = 1.575, 54.2


class _Counter:
    """Counts the gradient evaluations and difference Hessians of the fits (and the CPU in them)."""

    def __init__(self):
        from colloc.inference.kalman import estimation

        self.module = estimation
        self.original_gradient = estimation._gradient_function
        self.original_hessian = estimation._hessian_by_differences
        self.reset()

    def reset(self):
        self.gradients, self.hessians, self.gradient_cpu_s = 0, 0, 0.0

    def __enter__(self):
        def gradient_function(*args, **kwargs):
            inner = self.original_gradient(*args, **kwargs)

            def counted(*a):
                c = time.process_time()
                out = inner(*a)
                self.gradients += 1
                self.gradient_cpu_s += time.process_time() - c
                return out
            return counted

        def hessian(*args, **kwargs):
            self.hessians += 1
            return self.original_hessian(*args, **kwargs)

        self.module._gradient_function = gradient_function
        self.module._hessian_by_differences = hessian
        return self

    def __exit__(self, *exc):
        self.module._gradient_function = self.original_gradient
        self.module._hessian_by_differences = self.original_hessian


def fit_once(cip, trial, controller: str, counter: _Counter, noise: str = "sway", errors: str = "model") -> dict:
    """One fit, timed and counted."""
    counter.reset()
    load_before = os.getloadavg()
    children0 = os.times()
    c0, w0 = time.process_time(), time.perf_counter()
    problem = cip.stochastic_problem(trial, controller=controller, body=cip.body(HEIGHT_M, MASS_KG), noise=noise)
    result = co.solve(problem, co.KalmanML(errors=errors), throw=False)
    cpu = time.process_time() - c0
    wall = time.perf_counter() - w0
    children1 = os.times()
    return {"cpu_s": cpu, "wall_s": wall,
            "compiler_cpu_s": (children1.children_user + children1.children_system
                               - children0.children_user - children0.children_system),
            "loadavg_before": list(load_before), "loadavg_after": list(os.getloadavg()),
            "gradient_evaluations": counter.gradients, "gradient_cpu_s": counter.gradient_cpu_s,
            "difference_hessians": counter.hessians, "iterations": result.iterations,
            "prediction_s": result.timings.get("prediction_s"), "success": bool(result.success),
            "status": result.status, "nll": float(result.objective),
            "newton_decrement": result.info.get("newton_decrement"),
            "steady_state": result.info.get("steady_state"),
            "parameters": {k: float(v) for k, v in result.parameters.items()},
            "standard_errors": {k: (None if v is None else float(v)) for k, v in result.standard_errors.items()},
            "message": result.message}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", action="append", help="a BDS trial file (repeatable; default the shipped BDS00001)")
    ap.add_argument("--controllers", default="PID,PID-delay,PD-delay")
    ap.add_argument("--noise", default="sway")
    ap.add_argument("--errors", default="model", choices=("model", "robust"))
    ap.add_argument("--lengths", default="30,60", help="record lengths in s, comma-separated (≤ the record's)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "kalman_speed.json"))
    args = ap.parse_args(argv)
    from colloc_problems import cip

    controllers = [c.strip() for c in args.controllers.split(",") if c.strip()]
    unknown = [c for c in controllers if c not in cip.CONTROLLERS]
    if unknown:
        print(f"--controllers: unknown {', '.join(unknown)} (known: {', '.join(cip.CONTROLLERS)})", file=sys.stderr)
        return 2
    try:
        lengths = [float(v) for v in args.lengths.split(",") if v.strip()]
    except ValueError:
        print(f"--lengths: not numbers: {args.lengths!r}", file=sys.stderr)
        return 2
    if args.noise not in cip.NOISE_MODELS:
        print(f"--noise: unknown {args.noise} (known: {', '.join(cip.NOISE_MODELS)})", file=sys.stderr)
        return 2
    files = args.data or [str(ROOT / "data" / "bds" / "BDS00001.txt.gz")]
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        print(f"--data: no such file {missing[0]}", file=sys.stderr)
        return 2
    if args.repeats < 1 or not lengths or min(lengths) <= 0:
        print("--repeats must be >= 1 and --lengths positive", file=sys.stderr)
        return 2
    repeats = args.repeats
    if args.quick:
        controllers, lengths, repeats = ["PID"], [10.0], 1
    cases = []
    with _Counter() as counter:
        for data in files:
            trial = cip.load_trial(data, columns={"cop": "COPx"})
            duration = float(trial.time[-1] - trial.time[0]) + float(np.median(np.diff(trial.time)))
            for controller, length in ((c, n) for c in controllers for n in lengths):
                window = None if length >= duration else (0.0, length)  # the record's own seconds
                part = trial if window is None else trial.window(*window)
                runs = [fit_once(cip, part, controller, counter, args.noise, args.errors) for _ in range(repeats)]
                last = runs[-1]
                case = {"data": Path(data).name, "controller": controller, "length_s": length, "window": window,
                        "samples": len(part.time),
                        "runs": runs,
                        "cpu_s": last["cpu_s"], "cpu_s_min": min(r["cpu_s"] for r in runs),
                        "nll": last["nll"], "success": last["success"],
                        "same_nll_every_run": len({r["nll"] for r in runs}) == 1}
                cases.append(case)
                cpus = ", ".join(f"{r['cpu_s']:.2f}" for r in runs)
                print(f"{Path(data).name} {controller:10s} {length:5.0f} s: CPU {cpus} s "
                      f"(compiler {runs[0]['compiler_cpu_s']:.1f} s), {last['gradient_evaluations']} gradients, "
                      f"{last['difference_hessians']} Hessian(s), {last['iterations']} iterations, "
                      f"NLL {last['nll']:.10g}, "
                      f"{last['status']}, load {last['loadavg_after'][0]:.1f}", flush=True)
    write_report(args.out, {"cases": cases, "data": [Path(f).name for f in files], "noise": args.noise,
                            "controllers": controllers, "lengths_s": lengths, "repeats": repeats,
                            "body": {"height_m": HEIGHT_M, "mass_kg": MASS_KG},
                            "cpu_clock": "time.process_time() of the benchmark process (the compiler's, a child "
                                         "process, is compiler_cpu_s)"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
