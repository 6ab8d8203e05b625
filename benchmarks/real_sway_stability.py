"""Do the real-sway estimates depend on where the window starts, or on the sample rate?

    python benchmarks/real_sway_stability.py [--data FILE_OR_DIR ...] [--controller PID|...|auto]
        [--noise sway] [--length 30] [--shift 2.5] [--quick] [--no-rate] [--out JSON]

For every BDS trial (Santos & Duarte 2016; default the shipped ones in data/bds; the subject's
body from BDSinfoCOP), three fits of ``cip.stochastic_problem`` by ``co.solve(..., co.KalmanML())``:
the window ``0:LENGTH`` at 100 Hz (the reference), the same window shifted by ``SHIFT`` s, and the
reference window decimated to 50 Hz (every second sample: the records are low-passed at 10 Hz,
so this is what a 50 Hz recording of the same sway would hold).  For each parameter: is the
change within one standard error of the reference fit?  The issue's acceptance: every
parameter within 1 SE under the shift in ≥ 80 % of trials; the disturbance's intensity ``q_d``
(N·m·√s, continuous time) within 1 SE at 50 Hz.  The shift is measured twice: in the reference's
standard errors on the linear scale, and on the scale of the report's 95 % interval (the log scale
for a positive parameter whose SE is under its value: a time constant's likelihood is skewed, flat
towards long ones).  Also each window's exact NLL at the other window's estimate above its own
optimum (``cross_dnll``): the likelihood's own distance between the two estimates, set against the
95 % point of what the model's own sampling spread gives two windows that differ in SHIFT/LENGTH of
their samples, (SHIFT/LENGTH)·χ²_k(0.95) with k free parameters.  Reports the
CPU seconds of each fit.  ``--controller auto`` (the command's default for a real subject): each
window's fit is ``cip.identify_method``'s (the four controllers on the window's halves, the best
held-out on the whole window); a window whose choice differs from the reference's counts as not
stable (its parameters are another model's), and the choices are in ``controllers``; where the two are
nested (PD-delay and PID-delay: the first is the second at K_I = 0), ``nested_shift_in_se`` compares them
in the larger model, and ``stable_or_nested_of_all_trials`` counts those within 1 SE there too.
``--quick``: one trial; ``--no-rate``: the window shift alone (the 50 Hz entries repeat the
reference).  Writes JSON atomically (default benchmarks/results/real_sway_stability.json).
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


def _nll_at(cip, trial, body, controller, noise, parameters) -> float:
    """The exact NLL of ``trial`` (centred on its own mean, as the fit does) at ``parameters``."""
    from colloc import kalman

    problem = cip.stochastic_problem(trial, controller=controller, body=body, noise=noise)
    lgm = problem.model_at(float(np.median(np.diff(trial.time))))
    cop = np.asarray(trial["cop"], dtype=float)
    yc = (cop - cop.mean())[:, None]
    pred, sd = kalman.one_step_predictions(lgm, yc, {k: parameters[k] for k in lgm.parameter_names}, missing=True)
    return float(np.sum(0.5 * (np.log(2 * np.pi * sd**2) + ((yc - pred) / sd) ** 2)))


def _fit(cip, trial, body, controller, noise, errors="robust"):
    c0 = time.process_time()
    if controller == "auto":  # the command's path: the comparison on the window's halves, then the choice
        result = cip.identify_method([trial], body=body, noise=noise, controller="auto", errors=errors)
    else:
        result = co.solve(cip.stochastic_problem(trial, controller=controller, body=body, noise=noise),
                          co.KalmanML(errors=errors), throw=False)
    return result, time.process_time() - c0


def _report_scale_shift(value: float, se: float, other: float) -> float:
    """|other − value| in standard errors on the scale of the report's 95 % interval: the log scale
    (|log(other/value)| / (se/value)) for a positive estimate whose SE is under its value, else linear."""
    if value > 0 and other > 0 and se < value:
        return abs(float(np.log(other / value))) / (se / value)
    return abs(other - value) / se


def _cross_reference(run: dict, length: float, shift: float) -> float:
    """The 95 % point of a window's NLL at the shifted window's estimate above its own optimum if the
    model were right: (shift/length)·χ²_k(0.95), k the parameters with a standard error."""
    from scipy.stats import chi2

    return float(shift / length * chi2.ppf(0.95, len(run["parameters"])))


#: Where one controller is another with a parameter held (PD is PID at K_I = 0, PD-delay is PID-delay
#: at K_I = 0): two windows that chose the two are compared in the larger model, the smaller's
#: estimate at these values.
NESTED_AT = {"KI": 0.0}


def _nested_shift(ref, moved) -> dict | None:
    """Where the two windows chose nested controllers (:data:`NESTED_AT`): each parameter's change in
    the larger model, in the reference's standard errors (a parameter the smaller model holds, in the
    standard error of the window that fitted it; 0 where that fit ended on the held value, its bound,
    with no standard error: BDS00002's PID-delay at K_I = 1.6e-17 on the bound 0); else None."""
    a = {k for k in ref.parameters if k != "cop_offset"}
    b = {k for k in moved.parameters if k != "cop_offset"}
    extra = (a ^ b)
    if not extra or not extra <= set(NESTED_AT) or not (a <= b or b <= a):
        return None
    out = {}
    for k in sorted(a | b):
        if k in extra:
            big = ref if k in a else moved
            value, se = big.parameters[k], big.standard_errors.get(k)
            on_bound = value == NESTED_AT[k] or k in big.info.get("active_bounds", ())
            out[k] = (0.0 if not (se and np.isfinite(se)) and on_bound
                      else abs(value - NESTED_AT[k]) / se if se and np.isfinite(se) else float("inf"))
        else:
            se = ref.standard_errors.get(k)
            if se is None:
                continue
            out[k] = abs(moved.parameters[k] - ref.parameters[k]) / se
    return out


def evaluate(path: Path, info: dict, controller: str, noise: str, length: float, shift: float,
             rate: bool = True, errors: str = "robust") -> dict:
    from colloc_problems import cip

    name = path.name.split(".")[0]
    row = info[name]
    body = cip.body(float(row["Height"]) / 100.0, float(row["Weight"]))
    trial = cip.load_trial(str(path), columns={"cop": "COPx"})
    first, second = trial.window(0.0, length), trial.window(shift, length + shift)
    ref, ref_cpu = _fit(cip, first, body, controller, noise, errors)
    moved, moved_cpu = _fit(cip, second, body, controller, noise, errors)
    t = np.asarray(trial.time)
    keep = (t < length) & (np.arange(t.size) % 2 == 0)
    half = co.Trial(t[keep], {"cop": np.asarray(trial["cop"])[keep]}, name=name + "@50Hz")
    # --no-rate: the reference
    slow, slow_cpu = _fit(cip, half, body, controller, noise, errors) if rate else (ref, 0.0)
    chosen = [r.info.get("controller", controller) for r in (ref, moved, slow)]
    same = chosen[1] == chosen[0]
    out = {"trial": name, "vision": row.get("Vision"), "surface": row.get("Surface"), "controllers": chosen,
           "success": [ref.success, moved.success, slow.success], "cpu_s": [ref_cpu, moved_cpu, slow_cpu],
           "nll": [float(r.objective) for r in (ref, moved, slow)],
           # the other optima the starts found (each with its NLL), and the verdict's warnings: where a
           # window's estimate changes family, both families are seen here
           "other_optima": [r.info.get("other_optima", []) for r in (ref, moved, slow)],
           "warnings": [[w.get("code") for w in r.warnings] for r in (ref, moved, slow)],
           # each window's exact NLL at the other window's estimate, above its own optimum: the
           # likelihood's own measure of how far apart the two estimates are (all parameters at once)
           "cross_dnll": ([_nll_at(cip, first, body, chosen[0], noise, moved.parameters) - float(ref.objective),
                           _nll_at(cip, second, body, chosen[0], noise, ref.parameters) - float(moved.objective)]
                          if same else [float("inf"), float("inf")]),
           "parameters": {},
           # where the windows chose nested controllers (PD-delay and PID-delay): the change in the larger
           # model, in standard errors (None: the same controller, or not nested)
           "nested_shift_in_se": None if same or not (ref.success and moved.success) else _nested_shift(ref, moved)}
    model_se = ref.info.get("robust_standard_errors", {}).get("model_based_standard_errors", {})
    for k in ref.parameters:
        se = ref.standard_errors.get(k)
        if se is None or k == "cop_offset":
            continue
        if k not in moved.parameters or not same:  # the shifted window chose another model: not stable
            out["parameters"][k] = {"ref": ref.parameters[k], "se": se, "shifted": None, "model_se": se,
                                    "shift_in_model_se": float("inf"), "at_50Hz": slow.parameters.get(k),
                                    "shift_in_se": float("inf"), "shift_in_se_report_scale": float("inf"),
                                    "rate_in_se": (abs(slow.parameters[k] - ref.parameters[k]) / se
                                                   if k in slow.parameters and chosen[2] == chosen[0]
                                                   else float("inf"))}
            continue
        out["parameters"][k] = {"ref": ref.parameters[k], "se": se, "shifted": moved.parameters[k],
                                "model_se": model_se.get(k, se),
                                "shift_in_model_se": abs(moved.parameters[k] - ref.parameters[k]) / model_se.get(k, se),
                                "at_50Hz": slow.parameters[k],
                                "shift_in_se": abs(moved.parameters[k] - ref.parameters[k]) / se,
                                # on the scale of the report's interval: log for a positive parameter
                                # whose SE is under its value (colloc.results.report), else linear
                                "shift_in_se_report_scale": _report_scale_shift(ref.parameters[k], se,
                                                                                moved.parameters[k]),
                                "rate_in_se": (abs(slow.parameters[k] - ref.parameters[k]) / se
                                               if k in slow.parameters and chosen[2] == chosen[0] else float("inf"))}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=[str(ROOT / "data" / "bds")])
    ap.add_argument("--info", default=str(ROOT / "data" / "bds" / "BDSinfoCOP_subset.txt"))
    ap.add_argument("--controller", default="PID")
    ap.add_argument("--noise", default="sway")
    ap.add_argument("--length", type=float, default=30.0)
    ap.add_argument("--shift", type=float, default=2.5)
    ap.add_argument("--errors", default="robust", choices=("robust", "model"),
                    help="the standard errors the shift is measured in (robust: what colloc identify reports for a "
                         "real subject; the model-based ones are kept beside them)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-rate", action="store_true", help="skip the 50 Hz fit (its entries are the reference's)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_sway_stability.json"))
    args = ap.parse_args(argv)
    files = _trials(args.data)
    if args.quick:
        files = files[:1]
    info = _info(Path(args.info))
    runs = []
    for path in files:
        r = evaluate(path, info, args.controller, args.noise, args.length, args.shift, rate=not args.no_rate,
                     errors=args.errors)
        runs.append(r)
        cells = " ".join(f"{k} {v['shift_in_se']:.2f}({v['shift_in_se_report_scale']:.2f})/{v['rate_in_se']:.2f}"
                         for k, v in r["parameters"].items())
        print(f"{r['trial']} {'/'.join(r['controllers'])} success {r['success']} "
              f"cpu {np.round(r['cpu_s'], 1).tolist()} |Δ|/SE shift (report's scale)/50Hz: {cells}; "
              f"cross ΔNLL {np.round(r['cross_dnll'], 2).tolist()}",
              flush=True)
    ok = [r for r in runs if all(r["success"])]
    length, shift = args.length, args.shift
    summary = {"trials": len(runs), "all_three_succeeded": len(ok),
               # over every trial: a failed fit or (with --controller auto) another controller counts as not stable
               "stable_of_all_trials": "{} of {}".format(
                   sum(all(v["shift_in_se"] <= 1 for v in r["parameters"].values()) for r in ok), len(runs)),
               # the same, counting as stable also two windows whose controllers are nested (PD-delay in one,
               # PID-delay in the other) and whose estimates are within 1 SE in the larger model
               "stable_or_nested_of_all_trials": "{} of {}".format(
                   sum(all(v["shift_in_se"] <= 1 for v in r["parameters"].values())
                       or (r.get("nested_shift_in_se") is not None
                           and all(v <= 1 for v in r["nested_shift_in_se"].values()))
                       for r in ok), len(runs)),
               # and on the scale of the report's 95 % intervals (log for a positive parameter)
               "stable_report_scale_or_nested_of_all_trials": "{} of {}".format(
                   sum(all(v["shift_in_se_report_scale"] <= 1 for v in r["parameters"].values())
                       or (r.get("nested_shift_in_se") is not None
                           and all(v <= 1 for v in r["nested_shift_in_se"].values()))
                       for r in ok), len(runs)),
               "shift_all_within_1se": float(np.mean([all(v["shift_in_se"] <= 1 for v in r["parameters"].values())
                                                      for r in ok])) if ok else None,
               "shift_all_within_1se_count": int(sum(all(v["shift_in_se"] <= 1 for v in r["parameters"].values())
                                                     for r in ok)),
               "shift_all_within_1_model_se_count": int(sum(
                   all(v["shift_in_model_se"] <= 1 for v in r["parameters"].values()) for r in ok)),
               "shift_all_within_1se_report_scale_count": int(sum(
                   all(v["shift_in_se_report_scale"] <= 1 for v in r["parameters"].values()) for r in ok)),
               "cross_dnll_max": [float(max(r["cross_dnll"])) for r in runs],
               # what the model's own sampling spread allows: the two windows differ in shift/length of
               # their samples each, so θ̂₁ − θ̂₂ ≈ N(0, (2·shift/length)·I⁻¹) and the cross ΔNLL
               # ≈ ½(θ̂₁ − θ̂₂)ᵀI(θ̂₁ − θ̂₂) ~ (shift/length)·χ²_k, k the free parameters
               "cross_dnll_reference_95": {r["trial"]: _cross_reference(r, length, shift) for r in runs},
               "cross_dnll_within_reference_count": int(sum(max(r["cross_dnll"]) <= _cross_reference(r, length, shift)
                                                            for r in ok)),
               "q_d_rate_within_1se": float(np.mean([r["parameters"]["q_d"]["rate_in_se"] <= 1 for r in ok
                                                     if "q_d" in r["parameters"]])) if ok else None,
               "median_cpu_s_per_fit": float(np.median([c for r in runs for c in r["cpu_s"]]))}
    for k in sorted({k for r in ok for k in r["parameters"]}):
        summary[f"shift_within_1se_{k}"] = float(np.mean([r["parameters"][k]["shift_in_se"] <= 1 for r in ok
                                                          if k in r["parameters"]]))
        summary[f"rate_within_1se_{k}"] = float(np.mean([r["parameters"][k]["rate_in_se"] <= 1 for r in ok
                                                         if k in r["parameters"]]))
    print(summary)
    write_report(args.out, {"runs": runs, "summary": summary, "controller": args.controller, "noise": args.noise,
                            "errors": args.errors,
                            "length_s": args.length, "shift_s": args.shift})
    return 0


if __name__ == "__main__":
    sys.exit(main())
