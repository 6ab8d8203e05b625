"""The CIP's constants: the paper's subject, its disturbance filter, Table 1's gain ranges
and Table 2's answers (Barauskas & Krušinskienė 2007, after Peterka 2000), the synthetic data's
truth, and the body and bounds every formulation reads."""

from __future__ import annotations

from collections.abc import Mapping

import colloc as co

#: Body of the paper's subject (after Peterka 2000): I (kg·m²), m (kg), h (m), g (m/s²).
BODY = {"I": 76.0, "m": 60.0, "h": 0.87, "g": 9.81}
#: Disturbance filter T_d + B·T_d' = A·x of the paper (after Peterka 2000).
FILTER = {"A": 1000.0, "B": 80.0}
#: Table 1: physiological ranges (minimum, maximum) of the gains, SI units.
RANGES = {"KP": (1005.54, 1228.99), "KI": (0.0, 114.59), "KD": (232.05, 283.61)}
#: Wide gain ranges for real subjects, as multiples of the subject's gravity term m·g·h (K_P,
#: N·m/rad), m·g·h·s (K_D) and m·g·h/s (K_I); ``problem(bounds="wide")``.  Table 1 is one
#: subject's physiological range (±10 % about Peterka's values); on the 36 real BDS trials
#: (Santos & Duarte 2016) 34 fits ended on one of its bounds, so these ranges only exclude
#: the physically meaningless: a stiffness from half the gravity term (an unstable loop is
#: still representable, so the data can show it) to six times it, a damping from 1 % to
#: 200 % of m·g·h·s (Peterka 2000 reports K_D/K_P ≈ 0.2–0.4 s; 0.65 s with K_P at 3 m·g·h needs
#: about 2 m·g·h·s) and an integral gain up to
#: 3·m·g·h/s.  Our choice, not a published range.
WIDE_RANGES_PER_MGH = {"KP": (0.5, 6.0), "KI": (0.0, 3.0), "KD": (0.01, 2.0)}
#: Bounds of the fitted disturbance filter (``fit_disturbance=True``): amplitude A (N·m) and
#: time constant B (s).  The paper's values (A = 1000, B = 80) are the guess.
FILTER_RANGES = {"A": (1.0, 1e5), "B": (0.05, 500.0)}
#: Table 1: "centre normal" gains, the default initial guess.
CENTRE_NORMAL = {"KP": 1117.27, "KI": 14.32, "KD": 257.83}
#: Table 2: gains identified in the paper from its subject's COP record.
PAPER_TABLE2 = {
    "J_u": {"KP": 1131.62, "KI": 14.70, "KD": 260.33},
    "J_S": {"KP": 1117.27, "KI": 14.32, "KD": 265.35},
    "J_T": {"KP": 1045.75, "KI": 16.6996, "KD": 237.588},
}
#: Gains of the synthetic data: inside Table 1's ranges but away from the centre-normal
#: guess (KP +5.6 %, KI ×2.8, KD −5 %), so that an estimator that does not move shows.
TRUE = {"KP": 1180.0, "KI": 40.0, "KD": 245.0}
#: Default COP measurement noise of the synthetic data (m): 0.1 mm, force-plate level.
COP_NOISE = 1e-4
#: mean COP (m) beyond which ``problem(cop_offset="auto")`` identifies the COP's mean position
OFFSET_AUTO = 0.01
FORMULATIONS = ("known", "J_u", "J_S", "J_T", "MAP", "MAP-OM")
REQUIRED_COLUMNS = ("cop",)
OPTIONAL_COLUMNS = ("disturbance",)
DEFAULT_DATA = ("cip", "cip.csv")
GAINS = ("KP", "KI", "KD")
_SCALES = {"KP": 1000.0, "KI": 10.0, "KD": 100.0}


def _body(body: Mapping[str, float] | None, filt: Mapping[str, float] | None = None):
    b, f = dict(BODY), dict(FILTER)
    for given, default, what in ((body, b, "body"), (filt, f, "filter")):
        unknown = set(given or {}) - set(default)
        if unknown:
            raise co.ModelError(f"cip {what}: unknown parameter(s) {', '.join(sorted(unknown))}; "
                                f"known: {', '.join(default)}")
        default.update(given or {})
    return b, f


def gain_bounds(bounds: Mapping[str, tuple] | str | None, body: Mapping[str, float] | None = None) -> dict:
    """The gain bounds: Table 1 (:data:`RANGES`) updated by a mapping, or ``"table1"``, or
    ``"wide"`` (:data:`WIDE_RANGES_PER_MGH` times the body's m·g·h)."""
    rng = dict(RANGES)
    if isinstance(bounds, str):
        if bounds == "wide":
            b, _ = _body(body)
            mgh = b["m"] * b["g"] * b["h"]
            return {k: (lo * mgh, hi * mgh) for k, (lo, hi) in WIDE_RANGES_PER_MGH.items()}
        if bounds != "table1":
            raise co.ModelError(f"cip: bounds must be 'table1', 'wide' or a mapping, got {bounds!r}")
        return rng
    rng.update(bounds or {})
    return rng


def _guess(name: str, bounds: tuple) -> float:
    """The centre-normal gain, moved inside ``bounds`` if they exclude it."""
    lo, hi = bounds
    return float(min(max(CENTRE_NORMAL[name], lo), hi))
