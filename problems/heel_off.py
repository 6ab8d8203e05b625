"""The problem ``heel-off`` (contract §2): standing with unilateral foot–ground contact, kp and
kd through heel-off (Wieber & Billet 2006, §3).

The problem is written as specifications, re-exported here: its body, mechanics and mode
equations (:mod:`colloc_problems.heel_off_body`), its simulator
(:mod:`colloc_problems.heel_off_simulator`), its records, their generator and the mode
detection (:mod:`colloc_problems.heel_off_records`) and the start of a fit
(:mod:`colloc_problems.heel_off_start`).  ``colloc identify heel-off`` (:func:`identify_result`)
fits the PD feedback on the library's hybrid path (:mod:`colloc_problems.heel_off_hybrid`: a
``co.HybridProblem`` with the platform acceleration errors-in-variables, ``co.solve``), the
delayed one (``--controller PD-delay``) on the same path with τ a delay of the model (both
by :mod:`colloc_problems.heel_off_fit`); ``--method complementarity`` (the mode sequence out of
a fit on a fixed grid) is :mod:`colloc_problems.heel_off_complementarity`.  This module, the
one the command line finds, sits above them, so that none imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import colloc as co

from . import heel_off_complementarity, heel_off_fit
from .heel_off_body import (
    BODY,
    CHI2_POOR,
    CONTROLLERS,
    DESCRIPTIONS,
    FORCE_ROWS,
    FORCE_SCALE,
    GUESS,
    MODES,
    NAMES,
    SIGNAL_UNITS,
    STATE_NAMES,
    TAU_BOUNDS,
    TAU_GUESS,
    TAU_TRUE,
    TIME_LIMIT,
    TRUE,
    UNITS,
    flat_configuration,
    impacts,
    mechanics,
    mode_equations,
)
from .heel_off_records import (
    COLUMNS,
    DEFAULT_DATA,
    DELAY_PULSES,
    NOISE_FLOOR,
    OPTIONAL_COLUMNS,
    PULSES,
    SIGMA_OMEGA,
    SIGMA_THETA,
    HeelOffTrial,
    detect_modes,
    excitation,
    load_trial,
    make_trial,
    noise_sigma,
    smoothed_trial,
    write_trial,
)
from .heel_off_simulator import contact_system, contract_state, full_state, mode_of, simulate, spline
from .heel_off_start import SCALE, START_LEVEL, STARTS, equation_error_start, start_of

__all__ = [
    "BODY",
    "CHI2_POOR",
    "COLUMNS",
    "CONTROLLERS",
    "DEFAULT_DATA",
    "DELAY_PULSES",
    "DESCRIPTIONS",
    "FORCE_ROWS",
    "FORCE_SCALE",
    "GUESS",
    "MODES",
    "NAMES",
    "NOISE_FLOOR",
    "OPTIONAL_COLUMNS",
    "OWN_METHODS",
    "PULSES",
    "SCALE",
    "SIGMA_OMEGA",
    "SIGMA_THETA",
    "SIGNAL_UNITS",
    "STARTS",
    "START_LEVEL",
    "STATE_NAMES",
    "TAU_BOUNDS",
    "TAU_GUESS",
    "TAU_TRUE",
    "TIME_LIMIT",
    "TRUE",
    "UNITS",
    "HeelOffTrial",
    "contact_system",
    "contract_state",
    "detect_modes",
    "equation_error_start",
    "excitation",
    "flat_configuration",
    "full_state",
    "identify_method",
    "identify_result",
    "impacts",
    "load_trial",
    "make_trial",
    "mechanics",
    "mode_equations",
    "mode_of",
    "noise_sigma",
    "problem",
    "simulate",
    "smoothed_trial",
    "spline",
    "start_of",
    "write_trial",
]

#: Methods run by this problem besides its default, the library's hybrid path
#: (``colloc identify heel-off --method``).
OWN_METHODS = (heel_off_complementarity.METHOD,)


def identify_method(trials: Sequence[HeelOffTrial], *, method: str = heel_off_complementarity.METHOD,
                    **options) -> co.Result:
    """``--method complementarity``: the fixed-grid complementarity formulation, the mode
    sequence out of the fit (:func:`colloc_problems.heel_off_complementarity.identify_result`)."""
    controller = options.pop("controller", "PD")
    if controller != "PD":
        raise co.OptionsError(f"--controller {controller} does not apply to --method {method} of problem 'heel-off' "
                              "(it fits the undelayed PD feedback only)")
    return heel_off_complementarity.identify_result(trials, method=method, **options)


def identify_result(trials: Sequence[HeelOffTrial], *, method: str | None = None,
                    guess: Mapping[str, float] | None = None, bounds: Mapping[str, tuple] | None = None,
                    max_iter: int = 500, print_level: int = 0, controller: str = "PD",
                    start: str | None = None, time_limit: float | None = None, starts: int = 1,
                    client=None, fit_weights: Mapping[str, float] | None = None) -> co.Result:
    """``colloc identify heel-off``: ``controller`` ``PD`` (the default) on the library's hybrid
    path (:func:`colloc_problems.heel_off_fit.identify_result`), ``PD-delay`` on the same path
    with the delayed feedback (its ``delay=True``).
    ``method`` (the command line's default passes through) and ``bounds`` are not options of
    either; ``time_limit`` (s, ``--time-limit``) bounds the fit; ``starts`` and ``client``
    (``--starts``, a cluster) are the PD path's; ``fit_weights`` (``--fit-weight``) both's."""
    if controller not in CONTROLLERS:
        raise co.OptionsError(f"--controller {controller}: problem 'heel-off' has the controllers "
                              f"{', '.join(CONTROLLERS)}")
    if method not in (None, "radau2"):  # "radau2": the command line's default, passed through
        raise co.OptionsError(f"--method does not apply to problem 'heel-off' (got {method}; it is identified by "
                              "the library's hybrid collocation, or by --method complementarity)")
    if bounds:
        raise co.OptionsError("--bounds does not apply to problem 'heel-off' (its search ranges are fixed)")
    if CONTROLLERS[controller]:
        if starts != 1 or client is not None:
            raise co.OptionsError(f"--starts does not apply to --controller {controller} of problem 'heel-off' "
                                  "(its fit runs from one start; the PD feedback takes several)")
        return heel_off_fit.identify_result(trials, guess=guess, max_iter=max_iter, print_level=print_level,
                                               start=start, time_limit=time_limit, fit_weights=fit_weights, delay=True)
    return heel_off_fit.identify_result(trials, guess=guess, max_iter=max_iter, print_level=print_level,
                                           start=start, time_limit=time_limit, starts=starts, client=client,
                                           fit_weights=fit_weights)


def problem(trials):
    """`heel-off` is identified by :func:`identify_result`; its library problem is
    :func:`colloc_problems.heel_off_hybrid.hybrid_problem` (a :class:`colloc.HybridProblem`)."""
    raise co.ProblemError("heel-off is a hybrid problem: use colloc_problems.heel_off.identify_result(trials) or "
                          "colloc_problems.heel_off_hybrid.hybrid_problem(trials)")
