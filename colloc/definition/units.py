"""Units that occur in biomechanics recordings, and their factors to SI.

Lab files write units in the header (``COPx[cm]``, ``Fz (N)``) or leave them to the
caller (``units={"cop": "cm"}``).  Every signal is stored in SI units (m, s, rad, N, N·m,
kg, V, ...); :func:`to_si` gives the factor that takes a value in a unit to SI.  The table
is deliberately small and explicit: an unknown unit is an error, never a guess.

``g`` means the standard acceleration of gravity (9.80665 m/s², as written by
accelerometers), not gram.
"""

from __future__ import annotations

import math
import re

__all__ = ["SI_FACTORS", "split_unit", "to_si"]

_DEG = math.pi / 180.0

#: unit as written (case-sensitive: mN is not MN; spelling variants listed) -> factor to SI
SI_FACTORS: dict[str, float] = {
    # time
    "s": 1.0, "ms": 1e-3, "min": 60.0,
    # length
    "m": 1.0, "cm": 1e-2, "mm": 1e-3, "km": 1e3, "in": 0.0254,
    # angle
    "rad": 1.0, "deg": _DEG, "°": _DEG, "degree": _DEG, "degrees": _DEG,
    # velocity / angular velocity
    "m/s": 1.0, "cm/s": 1e-2, "mm/s": 1e-3, "rad/s": 1.0, "deg/s": _DEG, "°/s": _DEG,
    # acceleration / angular acceleration
    "m/s^2": 1.0, "m/s2": 1.0, "m/s²": 1.0, "cm/s^2": 1e-2, "cm/s2": 1e-2, "mm/s^2": 1e-3,
    "mm/s2": 1e-3, "g": 9.80665, "rad/s^2": 1.0, "rad/s2": 1.0, "rad/s²": 1.0,
    "deg/s^2": _DEG, "deg/s2": _DEG, "deg/s²": _DEG,
    # force and moment
    "N": 1.0, "kN": 1e3, "kgf": 9.80665,
    "Nm": 1.0, "N.m": 1.0, "N*m": 1.0, "N·m": 1.0, "N m": 1.0, "Nmm": 1e-3, "N.mm": 1e-3,
    "N*mm": 1e-3, "N·mm": 1e-3, "kNm": 1e3,
    # mass, power, pressure, frequency
    "kg": 1.0, "W": 1.0, "Pa": 1.0, "kPa": 1e3, "Hz": 1.0,
    # electrical (EMG, analog channels)
    "V": 1.0, "mV": 1e-3, "uV": 1e-6, "µV": 1e-6, "μV": 1e-6,
    # dimensionless
    "1": 1.0, "-": 1.0, "%": 1e-2,
}

_UNIT = re.compile(r"^(?P<name>.*?)\s*(?:\[(?P<a>[^\[\]]*)\]|\((?P<b>[^()]*)\))\s*$")


def split_unit(header: str) -> tuple[str, str | None]:
    """``"COPx[cm]" -> ("COPx", "cm")``, ``"Fz (N)" -> ("Fz", "N")``, ``"a" -> ("a", None)``."""
    match = _UNIT.match(header)
    if not match or not match.group("name"):
        return header.strip(), None
    unit = match.group("a") if match.group("a") is not None else match.group("b")
    return match.group("name").strip(), unit.strip()


def to_si(unit: str) -> float:
    """The factor taking a value in ``unit`` to SI (``to_si("cm") == 0.01``).

    Raises
    ------
    KeyError
        With the list of known units, if ``unit`` is not in :data:`SI_FACTORS`.
    """
    key = unit.strip()
    if key in SI_FACTORS:
        return SI_FACTORS[key]
    raise KeyError(f"unknown unit {unit!r}; known units: {', '.join(SI_FACTORS)}")
