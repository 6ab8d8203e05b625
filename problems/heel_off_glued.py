"""``heel-off`` with the foot glued flat: the model that ignores heel-off, to show what that costs
(``python benchmarks/heel_off.py``).

One mode and no guards: the body an inverted pendulum on an ankle held still, its rates those
of the flat mode of :func:`colloc_problems.heel_off_body.mode_equations` (the contact forces
free in sign: nothing watches them), the states θ_body and ω_body (the foot's signals are not
fitted).  It is a :class:`colloc.HybridProblem` fitted by the library's hybrid path as the
unilateral model of :mod:`colloc_problems.heel_off_hybrid` is: each signal weighted by its
noise σ read from the records, the platform acceleration errors-in-variables (exact when the
records show no noise in it), heel-off's verdict (:data:`CHI2_POOR`), kp and kd started from
the equation error of the whole record taken as flat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np

import colloc as co

from .heel_off_body import CHI2_POOR, DESCRIPTIONS, NAMES, SIGNAL_UNITS, TIME_LIMIT, UNITS, mode_equations
from .heel_off_hybrid import ACC_NOISE_FLOOR, INPUT, input_noise, start_guess
from .heel_off_records import NOISE_FLOOR, HeelOffTrial, noise_sigma

__all__ = ["STATES", "glued_model", "glued_problem", "identify_glued"]

#: The states of the glued model (the foot stays flat and still).
STATES = ("theta_body", "omega_body")

_RATES: dict = {}


def _rates() -> ca.Function:
    """(θ_b, ω_b), a, kp, kd → (ω_b, θ̈_b) with the foot flat (built once)."""
    if not _RATES:
        x, a, kp, kd = ca.SX.sym("x", 4), ca.SX.sym("a"), ca.SX.sym("kp"), ca.SX.sym("kd")
        flat = ca.Function("heel_off_flat", [x, a, kp, kd], [mode_equations(x, a, kp, kd)["flat"][0]])
        y = ca.SX.sym("y", 2)
        xdot = flat(ca.vertcat(y[0], 0.0, y[1], 0.0), a, kp, kd)
        _RATES["flat"] = ca.Function("heel_off_glued", [y, a, kp, kd], [ca.vertcat(xdot[0], xdot[2])])
    return _RATES["flat"]


def glued_model() -> co.HybridModel:
    """The glued foot as a one-mode :class:`colloc.HybridModel` with the input :data:`INPUT`."""
    fn = _rates()

    def rhs(t, x, p, t0):
        value = fn(ca.vertcat(x[0], x[1]), p[INPUT], p["kp"], p["kd"])
        return np.asarray(value, dtype=float).ravel() if isinstance(value, ca.DM) else value

    return co.HybridModel("heel-off-glued", list(STATES), [co.Mode("flat", rhs)], "flat", parameters=NAMES,
                          inputs=(INPUT,))


def glued_problem(trials: Sequence[HeelOffTrial], guess: Mapping[str, float] | None = None, *,
                  exact_input: bool | None = None, start: str = "equation-error") -> co.HybridProblem:
    """kp, kd of the glued model from records sharing them (one flat phase each); ``exact_input``
    None: exact when the records' platform acceleration shows no noise (:func:`input_noise`)."""
    trials = list(trials)
    sigma = {n: max(max(noise_sigma(t.signals[n]) for t in trials if n in t.signals), NOISE_FLOOR[n])
             for n in STATES if any(n in t.signals for t in trials)}
    acc = input_noise(trials)
    exact = acc <= ACC_NOISE_FLOOR if exact_input is None else exact_input
    flat = [[("flat", float(t.time[0]), float(t.time[-1]))] for t in trials]
    first = {**start_guess(trials, flat, start)[0], **(guess or {})}
    records = [co.Trial(t.time, {**{n: t.signals[n] for n in STATES if n in t.signals}, INPUT: t.platform_acc},
                        name=t.name) for t in trials]
    return co.HybridProblem(glued_model(), records, guess=first, input_noise=None if exact else {INPUT: acc},
                            bounds={"kp": (1.0, 1e5), "kd": (0.1, 1e4)},
                            fit={n: 1.0 / s ** 2 for n, s in sigma.items()},
                            sequence=["flat"], samples_per_interval=1.0, noise=sigma,
                            units={**{k: UNITS[k] for k in NAMES}, **{n: SIGNAL_UNITS[n] for n in STATES}},
                            descriptions={k: DESCRIPTIONS[k] for k in NAMES}, limits={k: (False, False) for k in NAMES},
                            chi2_poor=CHI2_POOR)


def identify_glued(trials: Sequence[HeelOffTrial], *, guess: Mapping[str, float] | None = None,
                   max_iter: int = 500, print_level: int = 0, time_limit: float | None = None) -> co.Result:
    """:func:`glued_problem` fitted by ``co.solve(problem, co.Radau(degree=3))``, the IPOPT solve
    stopped at ``time_limit`` (s; default :data:`TIME_LIMIT`)."""
    limit = TIME_LIMIT if time_limit is None else float(time_limit)
    solver = co.Ipopt(print_level=print_level, max_iter=max_iter, extra={"max_wall_time": limit})
    return co.solve(glued_problem(trials, guess), co.Radau(degree=3), solver=solver, throw=False)
