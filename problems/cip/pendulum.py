"""The CIP as a :class:`colloc.Model` (the paper's eq. 1 and 4), its COP, the reading of a
record and a subject's body from height and mass (Winter 2009)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import colloc as co

from .constants import (
    _SCALES,
    FILTER_RANGES,
    GAINS,
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    _body,
    _guess,
    gain_bounds,
)


def model(disturbance: str = "known", *, body: Mapping[str, float] | None = None,
          filt: Mapping[str, float] | None = None, bounds: Mapping[str, tuple] | str | None = None,
          cop_offset: float | None = None, fit_disturbance: bool = False) -> co.Model:
    """The CIP with PID feedback.

    Parameters
    ----------
    disturbance : {"known", "rate", "filtered"}
        ``"known"``: T_d is the measured input ``disturbance``.  ``"rate"``: T_d is a state
        driven by the free input ``disturbance_rate`` = T_d' (held over each interval).
        ``"filtered"``: T_d is a state with B·T_d' = A·x − T_d, x the held free input
        ``noise`` (unit white noise).
    body, filt : mapping, optional
        Overrides of :data:`BODY` and :data:`FILTER`.
    bounds : mapping of gain name to (lower, upper), or "table1" / "wide", optional
        Default: Table 1's ranges (:data:`RANGES`); see :func:`gain_bounds`.
    fit_disturbance : bool
        With ``disturbance="filtered"``: the filter's amplitude ``A`` (N·m) and time constant
        ``B`` (s) are parameters (bounds :data:`FILTER_RANGES`, guessed at ``filt``), so the
        disturbance intensity follows the subject's sway.
    cop_offset : float, optional
        If given, the COP's mean position is a parameter ``cop_offset`` (m, guess this value)
        added to the model's COP: a force plate measures the COP about its own origin, not
        about the ankle.

    Table 1's ranges are the physiological ranges of the paper's subject, part of its
    formulation: a gain on one of them is reported with a warning.  For another body, or
    with ``bounds="wide"``, the gain bounds are only where to look, and so are the filter's
    (``search_range``): a gain or A, B ending on one is a failure, ``parameter_at_bound``.
    """
    if disturbance not in ("known", "rate", "filtered"):
        raise co.ModelError(f"cip model: disturbance must be 'known', 'rate' or 'filtered', got {disturbance!r}")
    if fit_disturbance and disturbance != "filtered":
        raise co.ModelError("cip model: fit_disturbance needs disturbance='filtered'")
    b, f = _body(body, filt)
    rng = gain_bounds(bounds, body)
    searched = body is not None or (isinstance(bounds, str) and bounds == "wide")
    m = co.Model("cip")
    u = m.state("sway", unit="rad", scale=0.01)
    v = m.state("sway_rate", unit="rad/s", scale=0.01)
    w = m.state("sway_integral", unit="rad·s", scale=0.1)
    if disturbance == "known":
        td = m.known_input("disturbance", unit="N·m", scale=10.0)
    else:
        td = m.state("disturbance", unit="N·m", scale=10.0)
    gains = {k: m.parameter(k, unit=unit, bounds=rng[k], guess=_guess(k, rng[k]), scale=_SCALES[k],
                            description=f"{term} gain of the ankle torque", search_range=searched)
             for k, unit, term in zip(GAINS, ("N·m/rad", "N·m/(rad·s)", "N·m·s/rad"),
                                      ("proportional", "integral", "derivative"))}
    tc = gains["KP"] * u + gains["KI"] * w + gains["KD"] * v
    m.set_der(u, v)
    m.set_der(v, (b["m"] * b["g"] * b["h"] * u + td - tc) / b["I"])
    m.set_der(w, u)
    if disturbance == "rate":
        r = m.free_input("disturbance_rate", unit="N·m/s", scale=10.0, hold=True)
        m.set_der(td, r)
    elif disturbance == "filtered":
        x = m.free_input("noise", unit="1", scale=1.0, hold=True)
        if fit_disturbance:
            f = {k: m.parameter(k, unit=unit, bounds=FILTER_RANGES[k], guess=f[k], scale=scale,
                                description=text, search_range=True)
                 for k, unit, scale, text in (("A", "N·m", 100.0, "amplitude of the disturbance filter"),
                                              ("B", "s", 10.0, "time constant of the disturbance filter"))}
        m.set_der(td, (f["A"] * x - td) / f["B"])
    offset = 0.0
    if cop_offset is not None:
        offset = m.parameter("cop_offset", unit="m", bounds=(-0.5, 0.5), guess=float(cop_offset), scale=0.01,
                             description="mean COP position in the plate's frame (the ankle's projection)")
    m.output("cop", (tc - td) / (b["m"] * b["g"]) + offset, unit="m")
    return m


def cop_from_states(states: np.ndarray, gains: Mapping[str, float], disturbance: np.ndarray,
                    body: Mapping[str, float] | None = None) -> np.ndarray:
    """u_cop = (T_c − T_d)/(m g) from states ``(N, 3)`` = (u, u', ∫u) and T_d (numpy)."""
    b, _ = _body(body)
    s = np.asarray(states, dtype=float)
    tc = gains["KP"] * s[:, 0] + gains["KD"] * s[:, 1] + gains["KI"] * s[:, 2]
    return (tc - np.asarray(disturbance, dtype=float)) / (b["m"] * b["g"])


# ---- data -------------------------------------------------------------------------------
def load_trial(path, missing: str = "error", columns: Mapping[str, str] | None = None,
               units: Mapping[str, str] | None = None) -> co.Trial:
    """Read a CIP trial (``time, cop[, disturbance]``; COP in m, disturbance in N·m).

    ``missing="allow"`` reads an empty cell as a sample not measured; the disturbance may
    step at a time written on two rows (:class:`colloc.Trial`, ``jump_columns``).
    ``columns``/``units`` read a lab's file as it comes, e.g. a BDS force-plate record
    (Santos & Duarte 2016): ``columns={"cop": "COPx"}`` (``COPx[cm]`` is converted to m).
    """
    return co.Trial.from_csv(path, required=REQUIRED_COLUMNS, optional=OPTIONAL_COLUMNS, min_rows=20,
                             missing=missing, jump_columns=("disturbance",), columns=columns, units=units)


# Winter (2009), Biomechanics and Motor Control of Human Movement, 4th ed.: segment masses as a
# fraction of body mass M, centre of mass from the proximal end and radius of gyration about the
# centre of mass as fractions of the segment length (Table 4.1), and joint heights as fractions
# of body height H (Fig. 4.1).  Per segment: (mass fraction, proximal joint height, distal joint
# height, CoM fraction from proximal, radius of gyration fraction); both legs are counted.
WINTER_ANKLE_HEIGHT = 0.039   # Fig. 4.1: lateral malleolus at 0.039 H
WINTER_FOOT_MASS = 0.0145     # Table 4.1: foot, per side
WINTER_SEGMENTS = {
    "legs (shanks)": (2 * 0.0465, 0.285, 0.039, 0.433, 0.302),  # femoral condyles / medial malleolus
    "thighs": (2 * 0.100, 0.530, 0.285, 0.433, 0.323),           # greater trochanter / femoral condyles
    "HAT": (0.678, 0.530, 0.818, 0.626, 0.496),                  # greater trochanter / glenohumeral joint
}


def body(height: float, mass: float, g: float = 9.81) -> dict[str, float]:
    """The CIP's body (``m``, ``h``, ``I``, ``g``) of a subject of ``height`` (m) and ``mass`` (kg).

    The pendulum is everything above the ankles, rigid (Winter 2009, Table 4.1 segment
    fractions and Fig. 4.1 joint heights, see :data:`WINTER_SEGMENTS`): ``m`` = M minus the two
    feet, ``h`` the height of its centre of mass above the ankle joint and ``I`` its moment of
    inertia about the ankle axis (parallel-axis sum of the segments' ``m (ρ L)²`` and
    ``m d²``).  Pass the result as ``problem(..., body=body(height=1.575, mass=54.2))``.
    """
    for value, what, lo, hi in ((height, "height", 0.5, 2.6), (mass, "mass", 10.0, 400.0)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not lo <= value <= hi:
            raise co.ModelError(f"cip body: {what} must be a number in [{lo:g}, {hi:g}] "
                                f"({'m' if what == 'height' else 'kg'}, SI units), got {value!r}")
    ankle = WINTER_ANKLE_HEIGHT * height
    m = moment = inertia = 0.0
    for fraction, z0, z1, com, gyration in WINTER_SEGMENTS.values():
        seg_mass = fraction * mass
        length = abs(z1 - z0) * height
        z = z0 * height + com * (z1 - z0) * height - ankle   # CoM height above the ankle
        m += seg_mass
        moment += seg_mass * z
        inertia += seg_mass * ((gyration * length) ** 2 + z ** 2)
    return {"m": m, "h": moment / m, "I": inertia, "g": float(g)}
