"""The names :mod:`colloc_problems.heel_off_complementarity` reads from its former home, re-exported
from the specification modules they moved to (:mod:`colloc_problems.heel_off_body`,
:mod:`~colloc_problems.heel_off_records`, :mod:`~colloc_problems.heel_off_simulator`,
:mod:`~colloc_problems.heel_off_start`).  The multi-phase fit that lived here is gone: heel-off
is fitted on the library's hybrid path (:mod:`colloc_problems.heel_off_hybrid`).  This module
goes once heel_off_complementarity imports those modules itself.
"""

from __future__ import annotations

from .heel_off_body import (
                            BODY,
                            CHI2_POOR,
                            DESCRIPTIONS,
                            FORCE_SCALE,
                            GUESS,
                            NAMES,
                            SIGNAL_UNITS,
                            STATE_NAMES,
                            TIME_LIMIT,
                            UNITS,
                            flat_configuration,
                            mechanics,
)
from .heel_off_records import (
                            NOISE_FLOOR,
                            HeelOffTrial,
                            detect_modes,
                            noise_sigma as _noise,
                            smoothed_trial as _smoothed_trial,
)
from .heel_off_simulator import contract_state, full_state
from .heel_off_start import SCALE

__all__ = ["BODY", "CHI2_POOR", "DESCRIPTIONS", "FORCE_SCALE", "GUESS", "NAMES", "NOISE_FLOOR", "SCALE",
           "SIGNAL_UNITS", "STATE_NAMES", "TIME_LIMIT", "UNITS", "HeelOffTrial", "_noise", "_smoothed_trial",
           "contract_state", "detect_modes", "flat_configuration", "full_state", "mechanics"]
