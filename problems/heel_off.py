"""The problem ``heel-off`` (contract §2): standing with unilateral foot–ground contact, kp and
kd through heel-off (Wieber & Billet 2006, §3).

Its body and simulator are :mod:`colloc_problems.heel_off_multiphase` (re-exported here).
``colloc identify heel-off`` (:func:`identify_result`) fits the undelayed PD feedback on the
library's hybrid path (:mod:`colloc_problems.heel_off_hybrid`: a ``co.HybridProblem`` with the
platform acceleration errors-in-variables, ``co.solve``); the delayed feedback
(``--controller PD-delay``) on the multi-phase Radau collocation of
:mod:`colloc_problems.heel_off_multiphase`; ``--method complementarity`` (the mode sequence out
of a fit on a fixed grid) is :mod:`colloc_problems.heel_off_complementarity`.  This module, the
one the command line finds, sits above them, so that none imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import colloc as co

from . import heel_off_complementarity, heel_off_hybrid, heel_off_multiphase
from .heel_off_multiphase import (
    BODY,
    BREAK_MIN_STEPS,
    BREAK_ROOM,
    CHI2_POOR,
    COLUMNS,
    CONTROLLERS,
    DEFAULT_DATA,
    DELAY_PULSES,
    DESCRIPTIONS,
    FLAGS,
    FORCE_ROWS,
    FORCE_SCALE,
    GAIN_FLOOR,
    GUESS,
    LIFT_ROW,
    MODES,
    NAMES,
    NOISE_FLOOR,
    OPTIONAL_COLUMNS,
    PATH_ROWS,
    PULSES,
    SCALE,
    SETTLE_TOLERANCE,
    SIGMA_OMEGA,
    SIGMA_THETA,
    SIGNAL_UNITS,
    START_LEVEL,
    STARTS,
    STATE_NAMES,
    TAU_BOUNDS,
    TAU_GUESS,
    TAU_STEP,
    TAU_TRUE,
    TIME_LIMIT,
    TRUE,
    UNITS,
    HeelOffTrial,
    chain_functions,
    contact_system,
    contract_state,
    detect_modes,
    equation_error_start,
    excitation,
    finish,
    flat_configuration,
    full_state,
    identify,
    load_trial,
    make_trial,
    mechanics,
    mode_of,
    problem,
    simulate,
    simulation_check,
    spline,
    write_trial,
)

__all__ = [
    "BODY",
    "BREAK_MIN_STEPS",
    "BREAK_ROOM",
    "CHI2_POOR",
    "COLUMNS",
    "CONTROLLERS",
    "DEFAULT_DATA",
    "DELAY_PULSES",
    "DESCRIPTIONS",
    "FLAGS",
    "FORCE_ROWS",
    "FORCE_SCALE",
    "GAIN_FLOOR",
    "GUESS",
    "LIFT_ROW",
    "MODES",
    "NAMES",
    "NOISE_FLOOR",
    "OPTIONAL_COLUMNS",
    "OWN_METHODS",
    "PATH_ROWS",
    "PULSES",
    "SCALE",
    "SETTLE_TOLERANCE",
    "SIGMA_OMEGA",
    "SIGMA_THETA",
    "SIGNAL_UNITS",
    "STARTS",
    "START_LEVEL",
    "STATE_NAMES",
    "TAU_BOUNDS",
    "TAU_GUESS",
    "TAU_STEP",
    "TAU_TRUE",
    "TIME_LIMIT",
    "TRUE",
    "UNITS",
    "HeelOffTrial",
    "chain_functions",
    "contact_system",
    "contract_state",
    "detect_modes",
    "equation_error_start",
    "excitation",
    "finish",
    "flat_configuration",
    "full_state",
    "identify",
    "identify_method",
    "identify_result",
    "load_trial",
    "make_trial",
    "mechanics",
    "mode_of",
    "problem",
    "simulate",
    "simulation_check",
    "spline",
    "write_trial",
]

#: Methods run by this problem besides its multi-phase default (``colloc identify heel-off --method``).
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
    path (:func:`colloc_problems.heel_off_hybrid.identify_result`), ``PD-delay`` on the
    multi-phase collocation (:func:`colloc_problems.heel_off_multiphase.identify_result`).
    ``method`` (the command line's default passes through) and ``bounds`` are not options of
    either; ``time_limit`` (s, ``--time-limit``) bounds the fit; ``starts`` and ``client``
    (``--starts``, a cluster) and ``fit_weights`` (``--fit-weight``) are the library path's (PD)."""
    if controller not in CONTROLLERS or CONTROLLERS[controller]:
        if starts != 1 or client is not None:
            raise co.OptionsError(f"--starts does not apply to --controller {controller} of problem 'heel-off' "
                                  "(its multi-phase fit runs from one start; the PD feedback takes several)")
        if fit_weights:
            raise co.OptionsError(f"--fit-weight does not apply to --controller {controller} of problem 'heel-off' "
                                  "(its multi-phase fit weights each signal by its noise; the PD feedback takes it)")
        return heel_off_multiphase.identify_result(trials, method=method, guess=guess, bounds=bounds,
                                                   max_iter=max_iter, print_level=print_level,
                                                   controller=controller, start=start, time_limit=time_limit)
    if method not in (None, "radau2"):  # "radau2": the command line's default, passed through
        raise co.OptionsError(f"--method does not apply to problem 'heel-off' (got {method}; it is identified by "
                              "the library's hybrid collocation, or by --method complementarity)")
    if bounds:
        raise co.OptionsError("--bounds does not apply to problem 'heel-off' (its search ranges are fixed)")
    return heel_off_hybrid.identify_result(trials, guess=guess, max_iter=max_iter, print_level=print_level,
                                           start=start, time_limit=time_limit, starts=starts, client=client,
                                           fit_weights=fit_weights)
