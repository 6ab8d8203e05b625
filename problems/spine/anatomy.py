"""Franklin (2006) 18-DoF spine: the anatomy and body constants, read from ``data/spine``.

Segment lengths, masses, lordosis, disc, muscle and metabolic constants (``model.json``) and
the 90 muscle paths with their attachment points (``muscles.csv``, ``points.csv``).  The
tables are data files with their provenance and the decisions on the anomalies of the source
in ``data/spine/README.md``; this module only reads them.

References
----------
T. C. Franklin (2006), *Linear system analyses of the role of reflex gain and delay in a
dynamic human spine model*, M.S. thesis, Virginia Tech (advisor K. P. Granata).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from colloc import CollocInputError, OptionsError
from colloc_problems._data import data_path

__all__ = [
    "BODIES",
    "DATA_FILES",
    "N_DOF",
    "N_STATES",
    "PARAMETER_NAMES",
    "STATE_NAMES",
    "Muscle",
    "SpineParameters",
    "load_muscles",
    "load_parameters",
]

#: Moving bodies in state order (body codes 5, 4, 3, 2, 1, 0 of Table Ap.A.1).
BODIES = ("L5", "L4", "L3", "L2", "L1", "thorax")
#: Generalized coordinates (Appendix B.ii, spinesim.m: ``[T5,B5,A5,…,T0,B0,A0]``).
STATE_NAMES = tuple(f"{a}{c}" for c in "543210" for a in "TBA")
N_DOF = 18
N_STATES = 36
#: Order of the parameter vector ``p`` of the right-hand side.
PARAMETER_NAMES = ("stiffness_gain", "damping", "proportional_gain", "differential_gain", "load_N")
#: Shipped data (relative to the data folder).
DATA_FILES = {"muscles": ("spine", "muscles.csv"), "points": ("spine", "points.csv"),
              "model": ("spine", "model.json")}

_PARSL2_PATHS = ("corrected", "verbatim")
_THORAX_LENGTHS = ("coded", "liu")


@lru_cache(maxsize=1)
def _model_json() -> dict:
    with open(data_path(*DATA_FILES["model"]), encoding="utf-8") as fh:
        return json.load(fh)


def _csv(key: str) -> list[dict]:
    with open(data_path(*DATA_FILES[key]), newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@dataclass(frozen=True)
class SpineParameters:
    """Scalar data of the model (SI units), as read from ``data/spine/model.json``.

    Attributes
    ----------
    lengths : tuple of float
        Segment lengths of L5, L4, L3, L2, L1, thorax (m).
    masses : tuple of float
        Masses of the same bodies (kg).
    la, lb : float
        Medio-lateral and antero-posterior semi-axes of the elliptical cylinders (m).
    cent3 : float
        Height of the L5 pivot in the pelvis frame (m).
    gravity : float
        m/s².
    pelvis_angle : float
        Fixed pelvis 1-rotation (rad).
    lordosis : tuple of float
        Equilibrium 1-rotations of L5 … thorax (rad).
    disc_stiffness_planar, disc_stiffness_twist : float
        N·m/rad.
    disc_damping_planar, disc_damping_twist : float
        N·m·s/rad.
    max_stress : float
        Maximum muscle stress (N/m²).
    load_anterior_m, load_height_m : float
        Load point in the thorax frame: anterior offset and height above the thorax
        origin (m).
    density : float
        Muscle density of the metabolic model (kg/m³).
    slow_w_per_kg, fast_w_per_kg : float
        Coefficients of the metabolic power, eq. 3.C.i.2 (W/kg).
    """

    lengths: tuple[float, ...]
    masses: tuple[float, ...]
    la: float
    lb: float
    cent3: float
    gravity: float
    pelvis_angle: float
    lordosis: tuple[float, ...]
    disc_stiffness_planar: float
    disc_stiffness_twist: float
    disc_damping_planar: float
    disc_damping_twist: float
    max_stress: float
    load_anterior_m: float
    load_height_m: float
    density: float
    slow_w_per_kg: float
    fast_w_per_kg: float


def load_parameters(*, thorax_length: str = "coded", load_height_m: float = 0.20,
                    load_anterior_m: float | None = None) -> SpineParameters:
    """Read the scalar model data from ``data/spine/model.json``.

    Parameters
    ----------
    thorax_length : {"coded", "liu"}
        ``"coded"``: 0.419 m as set in spinesim.m (Appendix B.ii, ``V.L0``), the default;
        ``"liu"``: 0.6788 · 0.617 = 0.41882 m (Appendix A.iv).
    load_height_m : float
        Height of the load point (T4 level) above the thorax origin (m).  Not in the thesis
        (data README anomaly 13); default 0.20 m (see the module docstring).
    load_anterior_m : float, optional
        Anterior offset of the load from the spine axis (m); default the thesis' 0.20 m.

    Returns
    -------
    SpineParameters
    """
    if thorax_length not in _THORAX_LENGTHS:
        raise OptionsError(f"thorax_length must be one of {', '.join(_THORAX_LENGTHS)}, got {thorax_length!r}")
    d = _model_json()
    seg = d["segments"]["lengths_m"]
    thorax = seg["thorax_as_coded"]["value"] if thorax_length == "coded" else seg["thorax"]["value"]
    lengths = tuple(float(seg[b]["value"]) for b in BODIES[:-1]) + (float(thorax),)
    masses = tuple(float(d["masses_kg"][b]["value"]) for b in BODIES)
    lord = d["lordosis_angles_deg"]
    mm = d["muscle_model"]
    disc = d["intervertebral_disc"]
    met = d["metabolic_power"]
    anterior = d["external_load"]["anterior_offset"]["value"] if load_anterior_m is None else load_anterior_m
    for name, v in (("load_height_m", load_height_m), ("load_anterior_m", anterior)):
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise CollocInputError(f"{name} must be a finite number, got {v!r}")
    return SpineParameters(
        lengths=lengths,
        masses=masses,
        la=float(d["inertia"]["la_m"]["value"]),
        lb=float(d["inertia"]["lb_m"]["value"]),
        cent3=float(d["segments"]["pelvis_to_L5_pivot_m"]["value"]["cent3"]),
        gravity=float(d["gravity_m_s2"]["value"]),
        pelvis_angle=math.radians(lord["pelvis"]["value"]),
        lordosis=tuple(math.radians(lord[b]["value"]) for b in BODIES),
        disc_stiffness_planar=float(disc["rotational_stiffness_planar"]["value"]),
        disc_stiffness_twist=float(disc["rotational_stiffness_twist"]["value"]),
        disc_damping_planar=float(disc["rotational_damping_planar"]["value"]),
        disc_damping_twist=float(disc["rotational_damping_twist"]["value"]),
        max_stress=float(mm["max_muscle_stress"]["value"]) * 1e4,  # N/cm² -> N/m²
        load_anterior_m=float(anterior),
        load_height_m=float(load_height_m),
        density=float(met["density"]["value"]),
        slow_w_per_kg=float(met["slow_coefficient"]["value"]),
        fast_w_per_kg=float(met["fast_coefficient"]["value"]),
    )


@dataclass(frozen=True)
class Muscle:
    """One muscle of Table Ap.A.2.

    Attributes
    ----------
    name : str
        Normalized name (``name_normalized``; anomaly 1), used as the key in results.
    source_name : str
        Name as printed in the thesis.
    side : str
        ``"R"`` or ``"L"``.
    points : tuple of str
        Point names, origin → via points → insertion.
    bodies : tuple of str
        Body of each point (``pelvis`` or one of :data:`BODIES`).
    coords : numpy.ndarray, shape (n, 3)
        Point coordinates in their body frames (m).
    csa_cm2 : float
        Cross-sectional area (cm²).
    """

    name: str
    source_name: str
    side: str
    points: tuple[str, ...]
    bodies: tuple[str, ...]
    coords: np.ndarray = field(repr=False)
    csa_cm2: float = 0.0


def load_muscles(*, parsl2_path: str = "corrected") -> tuple[Muscle, ...]:
    """The 90 muscles of ``data/spine/muscles.csv`` with coordinates from ``points.csv``.

    Parameters
    ----------
    parsl2_path : {"corrected", "verbatim"}
        Anomaly 3 of the data README: the printed ParsL2 path (both sides) runs via L4, L3,
        L2 *and L1* and then back down to its insertion on L2.  ``"corrected"`` (default)
        drops the L1 via point (RL19/LL19), so that the path stops at the insertion level
        like every other ParsL muscle; ``"verbatim"`` keeps the printed path.

    Returns
    -------
    tuple of Muscle
        In file order (45 right, then 45 left).
    """
    if parsl2_path not in _PARSL2_PATHS:
        raise OptionsError(f"parsl2_path must be one of {', '.join(_PARSL2_PATHS)}, got {parsl2_path!r}")
    pts = {r["name"]: r for r in _csv("points")}
    out = []
    for r in _csv("muscles"):
        via = [v for v in r["via_points"].split(";") if v]
        if parsl2_path == "corrected" and r["name_normalized"].endswith("ParsL2"):
            via = [v for v in via if pts[v]["body"] != "L1"]
        names = [r["origin"], *via, r["insertion"]]
        out.append(Muscle(
            name=r["name_normalized"], source_name=r["name"], side=r["side"], points=tuple(names),
            bodies=tuple(pts[n]["body"] for n in names),
            coords=np.array([[float(pts[n][k]) / 100.0 for k in ("x_cm", "y_cm", "z_cm")] for n in names]),
            csa_cm2=float(r["csa_cm2"]),
        ))
    return tuple(out)
