"""``colloc identify heel-off`` on the library's hybrid path: the fit of
:func:`colloc_problems.heel_off_hybrid.hybrid_problem` by ``co.solve``, with the PD feedback or
(``delay=True``, ``--controller PD-delay``) the delayed one, once more from another start when
it fails in a known way, and what the command reports of it (the modes and switches per record).
"""

from __future__ import annotations

import time as _time
from collections.abc import Mapping, Sequence

import numpy as np

import colloc as co

from .heel_off_body import NAMES, TIME_LIMIT
from .heel_off_hybrid import ACC_NOISE_FLOOR, INPUT, LIFT_LEAD, _problem_and_start, input_noise
from .heel_off_records import HeelOffTrial
from .heel_off_start import STARTS

__all__ = ["identify_result"]


def identify_result(trials: Sequence[HeelOffTrial], *, guess: Mapping[str, float] | None = None,
                    max_iter: int = 500, print_level: int = 0, start: str | None = None,
                    time_limit: float | None = None, starts: int = 1, client=None,
                    fit_weights: Mapping[str, float] | None = None, delay: bool = False) -> co.Result:
    """``colloc identify heel-off``: :func:`hybrid_problem` (the platform acceleration
    errors-in-variables at the noise σ read from the records, the trajectories at the nodes) by
    ``co.solve(problem, co.Radau(degree=3))``, each IPOPT solve stopped at ``time_limit`` (s;
    default :data:`TIME_LIMIT`; a fit that ran out of it is ``time_limit``).  ``delay``: the
    delayed feedback, τ identified as ``tau`` and started by
    :func:`colloc_problems.heel_off_start.start_of` (``start`` None: its automatic choice),
    the platform acceleration exact on records that show no noise in it.  ``info`` holds besides
    the library's ``modes`` and ``switches`` per record (each switch's ``time``, ``std_error``,
    ``from``, ``to``, ``kind``: ``lift-off`` or ``landing``), ``start``, ``controller``,
    ``method_note`` and ``tries``.  A poor fit is tried once more with the lift-offs started
    :data:`LIFT_LEAD` steps earlier, a failed solve of a record whose platform acceleration shows
    no noise once more with that input exact (in what is left of the time limit), the better fit
    kept (a success, else the lower objective; ``tries``: each try's change, status, objective).
    ``starts`` > 1: the first fit from that many starts (``co.solve(starts=, client=)``: the start
    above and seeded points of the gains' search box), ``result.local_minima`` what they found.
    ``fit_weights`` (``--fit-weight``): see :func:`_problem_and_start`."""
    trials, names = list(trials), NAMES + ("tau",) * delay
    if not trials:
        raise co.OptionsError("heel-off: no trial")
    unknown = [k for k in (guess or {}) if k not in names]
    if unknown:
        raise co.OptionsError(f"--guess: unknown parameter(s) {', '.join(unknown)}; parameters: {', '.join(names)}"
                              + ("" if delay else " (tau with --controller PD-delay)"))
    if start is not None and start not in STARTS:
        raise co.OptionsError(f"--start {start}: problem 'heel-off' starts from {' or '.join(STARTS)}")
    first = {"start": start if delay else start or "equation-error", "node_trajectories": True, "delay": delay,
             "exact_input": delay and input_noise(trials) <= ACC_NOISE_FLOOR, "fit_weights": fit_weights}
    problem, began = _problem_and_start(trials, guess, **first)
    for name, value in (guess or {}).items():
        lo, hi = problem.bounds[name]
        if not lo <= value <= hi:
            raise co.OptionsError(f"--guess {name}={value} is outside its search range ({lo}, {hi})")
    limit = TIME_LIMIT if time_limit is None else float(time_limit)
    began_at = _time.perf_counter()
    solver = co.Ipopt(print_level=print_level, max_iter=max_iter, extra={"max_wall_time": limit})
    res = co.solve(problem, co.Radau(degree=3), solver=solver, throw=False, starts=starts, client=client)
    left = limit - (_time.perf_counter() - began_at)
    tries = [{"status": res.status, "objective": res.objective}]
    if not res.success and res.status != "time_limit" and left > 0:
        # a poor fit: a small lift read late may have held the fit in a wrong minimum, so once
        # more with the lift-offs started LIFT_LEAD steps earlier; a failed solve of a record
        # whose platform acceleration shows no noise (σ at the floor): errors-in-variables on
        # clean samples is degenerate (the clean 20 s reference record: Error_In_Step_Computation
        # after 81 iterations at kp 899.99, kd 250.004), so once more with the input exact (30 s,
        # kp 900.01, kd 250.002).  The better fit kept: a success first, then the lower objective
        clean = bool(problem.input_noise) and problem.input_noise[INPUT] <= ACC_NOISE_FLOOR
        retry = ({"lift_lead": LIFT_LEAD} if res.status == "poor_fit" else {"exact_input": True} if clean else None)
        if retry is not None:
            again, _began = _problem_and_start(trials, guess, **{**first, **retry})
            solver = co.Ipopt(print_level=print_level, max_iter=max_iter, extra={"max_wall_time": left})
            other = co.solve(again, co.Radau(degree=3), solver=solver, throw=False)
            tries.append({**retry, "status": other.status, "objective": other.objective})
            if (other.success, -other.objective) > (res.success, -res.objective):
                problem, res = again, other
            res.timings["total_s"] = _time.perf_counter() - began_at
    phases = res.info["phases"]
    res.info["modes"] = [list(phases[t.name]["modes"]) for t in problem.trials]
    res.info["switches"] = [switches_of(phases[t.name]) for t in problem.trials]
    res.info["start"] = began
    res.info["controller"] = "PD-delay" if delay else "PD"
    res.info["tries"] = tries
    how = (f"{INPUT} errors-in-variables (sigma {problem.input_noise[INPUT]:.3g} m/s^2 read from the records)"
           if problem.input_noise else f"{INPUT} taken as exact (no noise measurable in it)")
    res.info["method_note"] = ("the library's hybrid collocation (co.HybridProblem, Radau degree 3, one interval "
                               "per sample) with the mode sequence read from theta_foot and omega_foot; switching "
                               "times unknown; " + ("feedback delayed by tau (theta_body, omega_body at t - tau "
                                                    "read in the interval holding it); " if delay else "") + how)
    return res


def switches_of(phase: Mapping) -> list[dict]:
    """The switches of one record's fit (``info["phases"][name]``) as the command reports them."""
    modes, se = phase["modes"], list(phase["switch_standard_errors"])
    se += [None] * (len(phase["switch_times"]) - len(se))
    return [{"time": float(t), "std_error": float(e) if e is not None and np.isfinite(e) else None,
             "from": modes[i], "to": modes[i + 1], "kind": "landing" if modes[i] != "flat" else "lift-off"}
            for i, (t, e) in enumerate(zip(phase["switch_times"], se))]
