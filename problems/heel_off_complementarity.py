"""`heel-off` by complementarity (``colloc identify heel-off --method complementarity``): the
mode sequence comes out of a fit, not out of the record.

A specification on the library: the foot and body of :func:`heel_off.mechanics` as a
:class:`colloc.ContactSystem` (full coordinates q = (x_A, y_A, θ_foot, θ_body), heel and toe
anchored at their flat places, no slip), measured θ's and ω's, the platform acceleration an
input, fitted by ``co.solve(contact_problem(trials), settings())``: Signorini complementarity on a
fixed Radau grid (:class:`colloc.Complementarity`), then the modes found polished on the
library's hybrid path (:func:`colloc_problems.heel_off_hybrid.hybrid_problem` with that
sequence, switching times free).

What heel-off sets (measured on its records; the figures come from the method's first, private
form): Radau degree 2 (degree 1 biased kp, kd by −2 %/−4 % on a flat record); the weights start
soft (:data:`SOFT_NOISE`) and tighten to the record's noise; a contact touches where its gap is
below 0.1 mm or its force above 25 N (on a clean record the penalty gives way to the fit and a
pivot held 470 N with its gap at 0.3 mm); records longer than 2 s are fitted in windows of
1.5 s overlapping by 0.5 s (a fit over a whole 8 s record ran every homotopy step into IPOPT's
iteration limit).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np

import colloc as co

from . import (
    heel_off_body as hb,
    heel_off_fit as hf,
    heel_off_hybrid as hh,
    heel_off_records as hr,
    heel_off_simulator as hsim,
    heel_off_start as hst,
)

__all__ = ["METHOD", "SOFT_NOISE", "STARTS", "contact_problem", "contact_system", "equation_error", "identify_result",
           "settings"]

#: The name of this method (``colloc identify heel-off --method complementarity``).
METHOD = "complementarity"
#: The homotopy starts with every signal weighted as if at least this noisy (rad, rad/s).
SOFT_NOISE = {"theta_body": 1e-3, "theta_foot": 1e-3, "omega_body": 1e-2, "omega_foot": 1e-2}
#: Where the gains start: the equation-error estimate (:func:`equation_error`) or the guess.
STARTS = hst.STARTS
#: The modes by the contacts in touch.
MODES = {"flat": ("heel", "toe"), "toe": ("toe",), "heel": ("heel",)}
#: The measured signals as functions of (q, q̇).
OUTPUTS = {"theta_body": lambda q, qd: q[3], "theta_foot": lambda q, qd: q[2],
           "omega_body": lambda q, qd: qd[3], "omega_foot": lambda q, qd: qd[2]}
#: The places of heel and toe (x) with the foot flat and the ankle above the origin.
ANCHORS = {c: float(hb.flat_configuration()[0] + hb.BODY[c][0]) for c in ("heel", "toe")}


def _mech(q, qd=None, p=None):
    """:func:`heel_off.mechanics` at (q, q̇) with the input and gains of ``p`` (0 without)."""
    zero = ca.DM.zeros(4) if qd is None else qd
    a, kp, kd = (0.0, 0.0, 0.0) if p is None else (p["platform_acc"], p["kp"], p["kd"])
    return hb.mechanics()(q, zero, a, kp, kd)


def contact_system() -> co.ContactSystem:
    """The foot and body as a :class:`colloc.ContactSystem` whose functions take CasADi symbols
    (the forces read ``p["platform_acc"]``, ``p["kp"]``, ``p["kd"]``)."""
    contacts = [co.ContactPoint(c, (lambda q, k=k: _mech(q)[k]), (lambda q, k=k: _mech(q)[k + 1]),
                                (lambda q, qd, k=k: _mech(q, qd)[k + 2]))
                for c, k in (("heel", 2), ("toe", 5))]
    return co.ContactSystem("heel-off", ("x_ankle", "y_ankle", "theta_foot", "theta_body"),
                            lambda q, p: _mech(q)[0], lambda t, q, qd, p: _mech(q, qd, p)[1], contacts)


def _noise(name: str):
    return lambda y: max(hr.noise_sigma(y), hr.NOISE_FLOOR[name])


def _heel_off_trial(trial: co.Trial) -> hr.HeelOffTrial:
    return hr.HeelOffTrial(trial.name, np.asarray(trial.time, dtype=float),
                           {n: np.asarray(trial[n], dtype=float) for n in hb.STATE_NAMES if n in trial},
                           np.asarray(trial[hh.INPUT], dtype=float))


def _start_states(trial: co.Trial, times: np.ndarray) -> np.ndarray:
    """Full states at ``times`` from the record smoothed (a cubic Savitzky–Golay filter over nine
    samples, :func:`heel_off_records.smoothed_trial` with the record as one stretch), placed
    by :func:`heel_off.full_state`, the foot flat where |θ_foot| is within 3σ of zero: a guess
    only; which contact holds is left to the fit."""
    record = _heel_off_trial(trial)
    t = record.time
    smooth = hr.smoothed_trial(record, [("whole record", float(t[0]), float(t[-1]))])
    cols = []
    for i, name in enumerate(hb.STATE_NAMES):
        y = smooth.signals[name] if name in smooth.signals else np.gradient(smooth.signals[hb.STATE_NAMES[i - 2]], t)
        cols.append(np.interp(times, t, y))
    th_b, th_f, w_b, w_f = cols
    lifted = np.abs(th_f) > 3 * _noise("theta_foot")(record.signals["theta_foot"])
    return np.array([hsim.full_state((b, f if up else 0.0, wb, wf if up else 0.0))
                     for b, f, wb, wf, up in zip(th_b, th_f, w_b, w_f, lifted)])


def equation_error(trials: Sequence[hr.HeelOffTrial]) -> dict:
    """kp, kd by the flat-foot equation error over the records' flat stretches
    (:func:`colloc_problems.heel_off_hybrid.start_guess`, the guesses when it is not usable)."""
    return hh.start_guess(trials, [hr.detect_modes(t) for t in trials])[0]


def contact_problem(trials: Sequence[hr.HeelOffTrial], guess: Mapping[str, float] | None = None, *,
                    start: str = "equation-error") -> co.ContactProblem:
    """kp, kd from records sharing them as a :class:`colloc.ContactProblem`: the signals weighted by
    the noise σ read from each record (at least :data:`heel_off.NOISE_FLOOR`), the platform
    acceleration an exact input, kp and kd from :func:`equation_error` (``start``) or
    :data:`heel_off.GUESS`, overridden by ``guess``; search ranges kp 1–1e5, kd 0.1–1e4; the
    polish :func:`colloc_problems.heel_off_hybrid.hybrid_problem` with the phases found."""
    if start not in STARTS:
        raise co.OptionsError(f"heel-off complementarity: start {start!r}; one of {', '.join(STARTS)}")
    trials = list(trials)
    first = equation_error(trials) if start == "equation-error" else dict(hb.GUESS)

    def polish(phases, parameters):
        return hh.hybrid_problem(trials, parameters, start="guess", phases=phases, node_trajectories=True)
    return co.ContactProblem(
        contact_system(), [hh.trial_of(t) for t in trials], parameters=hb.NAMES, guess={**first, **(guess or {})},
        noise={n: _noise(n) for n in hb.STATE_NAMES}, outputs=OUTPUTS, inputs=(hh.INPUT,),
        bounds={"kp": (1.0, 1e5), "kd": (0.1, 1e4)}, scale=dict(zip(hb.NAMES, hst.SCALE.tolist())), modes=MODES,
        anchors=ANCHORS, force_scale=hb.FORCE_SCALE, impulse_scale=1.0, start_states=_start_states,
        hybrid=polish, units={**{k: hb.UNITS[k] for k in hb.NAMES}, **hb.SIGNAL_UNITS},
        descriptions={k: hb.DESCRIPTIONS[k] for k in hb.NAMES}, chi2_poor=hb.CHI2_POOR, name="heel-off")


def settings(**options) -> co.Complementarity:
    """heel-off's :class:`colloc.Complementarity` (module docstring), changed by ``options``
    (its fields: ``eps_start``, ``formulation``, ``polish``, ``window``, ``time_limit`` …)."""
    base = co.Complementarity(degree=2, soft_noise=SOFT_NOISE, noise_floor=hr.NOISE_FLOOR, gap_tol=1e-4,
                              window=1.5, overlap=0.5, polish_method=co.Radau(degree=3), time_limit=hb.TIME_LIMIT)
    fields = {f.name for f in dataclasses.fields(co.Complementarity)} - {"name"}
    unknown = [k for k in options if k not in fields]
    if unknown:
        raise co.OptionsError(f"heel-off complementarity: unknown option(s) {', '.join(unknown)}; options: "
                              f"{', '.join(sorted(fields))}")
    return dataclasses.replace(base, **options)


def identify_result(trials: Sequence[hr.HeelOffTrial], *, method: str = METHOD,
                    guess: Mapping[str, float] | None = None, bounds: Mapping[str, tuple] | None = None,
                    max_iter: int = 500, print_level: int = 0, start: str = "equation-error",
                    time_limit: float | None = None, **options) -> co.Result:
    """``colloc identify heel-off --method complementarity``: ``co.solve(contact_problem(trials),
    settings(**options))``; ``time_limit`` (s) bounds the whole fit (default
    :data:`heel_off.TIME_LIMIT`)."""
    if method != METHOD:
        raise co.OptionsError(f"--method {method}: heel-off runs {METHOD} itself")
    if bounds:
        raise co.OptionsError("--bounds does not apply to --method complementarity of problem 'heel-off'")
    trials = list(trials)
    if not trials:
        raise co.OptionsError("heel-off: no trial")
    unknown = [k for k in (guess or {}) if k not in hb.NAMES]
    if unknown:
        raise co.OptionsError(f"--guess: unknown parameter(s) {', '.join(unknown)}; parameters: {', '.join(hb.NAMES)}")
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    problem = contact_problem(trials, guess, start=start)
    solver = co.Ipopt(print_level=print_level, max_iter=max_iter)
    res = co.solve(problem, settings(**options), solver=solver, throw=False)
    if res.success or not res.info.get("polished") or hh.input_noise(trials) > hh.ACC_NOISE_FLOOR:
        return res
    # a polish that failed on records whose platform acceleration shows no noise: errors-in-variables
    # on clean samples is degenerate (heel_off_clean.csv: poor_fit at kp 900.003, kd 250.003), so once
    # more with the input exact, from that polish's gains and switching times, as heel-off's default
    # path retries (heel_off_fit.identify_result); the success kept
    phases = [[(m, float(a), float(b)) for m, a, b in zip(modes, [t.time[0], *(w["time"] for w in sw)],
                                                         [*(w["time"] for w in sw), t.time[-1]])]
              for t, modes, sw in zip(trials, res.info["modes"], res.info["switches"])]
    again = hh.hybrid_problem(trials, res.parameters, start="guess", phases=phases, exact_input=True,
                              node_trajectories=True)
    other = co.solve(again, settings(**options).polish_method, solver=solver, throw=False)
    res.info.setdefault("tries", []).append({"exact_input": True, "status": other.status,
                                             "objective": other.objective})
    if not other.success:
        return res
    found = [other.info["phases"][t.name] for t in again.trials]
    info = {**res.info, **other.info, "modes": [list(f["modes"]) for f in found],
            "switches": [hf.switches_of(f) for f in found], "tries": res.info["tries"]}
    timings = {**other.timings, "complementarity_s": res.timings.get("complementarity_s"),
               "total_s": res.timings.get("total_s", 0.0) + other.timings.get("total_s", 0.0)}
    return dataclasses.replace(other, method=res.method, info=info, timings=timings,
                               iterations=res.iterations + other.iterations,
                               initial_parameters=res.initial_parameters)
