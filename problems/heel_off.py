"""The problem ``heel-off`` (contract §2): standing with unilateral foot–ground contact, kp and
kd through heel-off (Wieber & Billet 2006, §3).

Its body, simulator and default method, multi-phase Radau collocation with the mode sequence
read from the record, are :mod:`colloc_problems.heel_off_multiphase` (re-exported here); the
other method, ``--method complementarity`` (the mode sequence out of a fit on a fixed grid), is
:mod:`colloc_problems.heel_off_complementarity`, which builds on the first.  This module, the
one the command line finds, sits above both, so that neither imports it.
"""

from __future__ import annotations

from collections.abc import Sequence

import colloc as co

from . import heel_off_complementarity
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
    identify_result,
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
