"""``colloc identify heel-off --controller PD-delay``: the delayed feedback
T = −kp·θ_body(t − τ) − kd·ω_body(t − τ) fitted on the library's hybrid path.

The model is :func:`colloc_problems.heel_off_hybrid.hybrid_model` with ``delay=True``: θ_body and
ω_body are the library's delayed states (``HybridModel(delay="tau", delayed=...)``; the initial
state before the record), so that the collocation reads them at t − τ by the polynomial of the
interval that holds it, in whichever earlier phase that is, and the simulation check integrates
the delayed loop by the method of steps.  kp, kd and τ start from
:func:`colloc_problems.heel_off_start.start_of` (the equation-error estimate of the
flat-foot stretches, τ scanned on the sample grid, unless the record does not reject a given τ).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import colloc as co

from .heel_off_body import NAMES, TIME_LIMIT
from .heel_off_hybrid import ACC_NOISE_FLOOR, INPUT, _problem_and_start, _switches, input_noise
from .heel_off_records import HeelOffTrial
from .heel_off_start import STARTS

__all__ = ["PARAMETERS", "identify_result"]

#: What the delayed feedback identifies.
PARAMETERS = (*NAMES, "tau")


def identify_result(trials: Sequence[HeelOffTrial], *, guess: Mapping[str, float] | None = None,
                    max_iter: int = 500, print_level: int = 0, start: str | None = None,
                    time_limit: float | None = None) -> co.Result:
    """kp, kd and τ from records sharing them: the delayed :func:`hybrid_problem
    <colloc_problems.heel_off_hybrid.hybrid_problem>` (the platform acceleration
    errors-in-variables at the noise σ read from the records, or exact when they show none; the
    trajectories at the nodes) by ``co.solve(problem, co.Radau(degree=3))``, each IPOPT solve
    stopped at ``time_limit`` (s; default :data:`TIME_LIMIT`).  ``start`` (:data:`STARTS`, None:
    the automatic choice of :func:`colloc_problems.heel_off_start.start_of`).  ``info``
    holds besides the library's the ``modes`` and ``switches`` per record, ``start``,
    ``controller`` and ``method_note``."""
    trials = list(trials)
    if not trials:
        raise co.OptionsError("heel-off: no trial")
    unknown = [k for k in (guess or {}) if k not in PARAMETERS]
    if unknown:
        raise co.OptionsError(f"--guess: unknown parameter(s) {', '.join(unknown)}; parameters: "
                              f"{', '.join(PARAMETERS)}")
    if start is not None and start not in STARTS:
        raise co.OptionsError(f"--start {start}: problem 'heel-off' starts from {' or '.join(STARTS)}")
    exact = input_noise(trials) <= ACC_NOISE_FLOOR  # errors-in-variables on clean samples is degenerate
    problem, began = _problem_and_start(trials, guess, start=start, node_trajectories=True, delay=True,
                                        exact_input=exact)
    for name, value in (guess or {}).items():
        lo, hi = problem.bounds[name]
        if not lo <= value <= hi:
            raise co.OptionsError(f"--guess {name}={value} is outside its search range ({lo}, {hi})")
    limit = TIME_LIMIT if time_limit is None else float(time_limit)
    solver = co.Ipopt(print_level=print_level, max_iter=max_iter, extra={"max_wall_time": limit})
    res = co.solve(problem, co.Radau(degree=3), solver=solver, throw=False)
    phases = res.info["phases"]
    res.info["modes"] = [list(phases[t.name]["modes"]) for t in problem.trials]
    res.info["switches"] = [_switches(phases[t.name]) for t in problem.trials]
    res.info["start"] = began
    res.info["controller"] = "PD-delay"
    how = (f"{INPUT} errors-in-variables (sigma {problem.input_noise[INPUT]:.3g} m/s^2 read from the records)"
           if problem.input_noise else f"{INPUT} taken as exact (no noise measurable in it)")
    res.info["method_note"] = ("the library's hybrid collocation (co.HybridProblem, Radau degree 3, one interval "
                               "per sample) with the mode sequence read from theta_foot and omega_foot; switching "
                               "times unknown; feedback delayed by tau (theta_body, omega_body at t - tau read by "
                               f"the polynomial of the interval holding it); {how}")
    return res
