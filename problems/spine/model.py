"""Franklin (2006) 18-DoF reflexive spine model: equations of motion, muscles, discs, load.

Six rigid bodies (L5, L4, L3, L2, L1 and a rigid thorax T12–C1) are stacked on a pelvis
that is kinematically fixed (thesis §3.A.i).  Every body has three absolute 1-2-3
body-fixed Euler angles ``(θ, β, α)`` (thesis eq. 3.A.i.1; Appendix A.i), giving the state
``x = [T5, B5, A5, T4, …, T0, B0, A0, rates]`` (36 states; body 0 = thorax).  Axes: 1 right,
2 anterior, 3 up (docs/contracts.md §2).

Everything below is derived symbolically in CasADi from the data in ``data/spine``
(``model.json``, ``muscles.csv``, ``points.csv``; see its README for provenance and the
decisions on the anomalies of the source):

* **Kinematics** (Appendix A.i).  Body-to-inertial rotation ``C = (R3(α) R2(β) R1(θ))ᵀ``
  with the thesis' ``R1, R2, R3``; pelvis ``C_p = R1(θ_p)ᵀ`` with the lordosis angle
  ``θ_p = −20°``.  Origins: ``O_L5 = C_p (0, 0, cent3)``, ``O_{next} = O_j + L_j c_j3``; centres
  of mass ``G_j = O_j + L_j/2 c_j3``.  Angular velocities from the rotation matrices,
  ``[ω×] = Ċ Cᵀ`` (inertial frame) and ``ω_b = Cᵀω``.
* **Lagrange's equations** (eqs. 3.B.i.1–4): ``T = Σ ½ m_j |Ġ_j|² + ½ ω_bᵀ I_j ω_b`` with the
  elliptical-cylinder inertia ``I_j = diag(m(lb²/4 + L²/12), m(la²/4 + L²/12), m(la² + lb²)/4)``
  and ``V = g Σ m_j G_j3``.  ``M = ∂²T/∂q̇²`` and the bias
  ``h = ∂(∂T/∂q̇)/∂q · q̇ − ∂T/∂q + ∂V/∂q`` are CasADi AD derivatives (no hand-typed terms),
  so ``M q̈ + h = Q``.
* **Muscles** (eqs. 3.A.iii.1–3, 3.B.iv.2–3; §3.A.iv).  Length ``L`` = polyline origin →
  via points → insertion (the muscle slides freely through its via points), rest length
  ``L_o`` = length in the lordotic equilibrium posture (spinesim.m: ``musccpropmat(Stateo)``),
  ``f_o = 46 N/cm² · CSA``.  With ``ε = (L − L_o)/L_o``, ``ε̇ = L̇/L_o`` and the delayed
  ``ε_d = ε(t − τ)``, ``ε̇_d = ε̇(t − τ)`` the force is the thesis' "separated" form (eq.
  3.B.iv.3, the form used by ``problems/spine/one_dof.py``)::

      f = f_o α (1 + q ε + b ε̇) + f_o α (G_p ε_d + G_d ε̇_d),

  and its generalized force is the virtual work of the polyline, ``Q = −f ∂L/∂q`` (the
  Jacobian transpose of the length; equivalent to eq. 3.B.ii.1 applied to the origin,
  insertion and via-point forces of Fig. 3.B.1).  ``∂L/∂q`` by AD.
* **Intervertebral discs** (§3.A.ii, eq. 3.A.ii.2; spinesim.m ``intvertc(…, AAPOA, IVD)``).
  Six discs (pelvis–L5, …, L1–thorax), neutral in the lordotic posture: each body carries a
  disc frame ``E_j = C_j R1(θ0_j)`` (identity at the posture).  The *planar* rotation is the
  smallest rotation taking the lower vertebral plane normal ``n_l = E_l e3`` to the upper one
  ``n_u = E_u e3`` (angle ``φ = ∠(n_l, n_u)`` about ``n_l × n_u``); the *twist* ``ψ`` is the
  angle about ``n_u`` between the lower frame rotated by that planar rotation (the "dummy
  plane") and the upper frame.  Moment on the upper body
  ``M = −(K_p φ + B_p φ̇) k̂ − (K_t ψ + B_t ψ̇) n_u`` (equal and opposite on the lower body),
  ``K = 50 N·m/rad``, ``B = 0.5 N·m·s/rad``; applied as pure moments,
  ``Q = Σ (∂ω/∂q̇)ᵀ M``.  ``φ k̂ = (n_l × n_u)·φ/sin φ`` is evaluated with a series near
  ``φ = 0`` so that it is smooth (and AD-differentiable) at the equilibrium.
* **External load** (Ch. 4 B.i, Ch. 5 B): a vertical (downward) force ``F_ext`` at a point
  fixed to the thorax ``load_anterior_m`` = 0.20 m anterior to the spine axis at the T4
  level, ``load_height_m`` = 0.20 m above the thorax origin (T12/L1).  The T4 height is not
  in the thesis (anomaly 13 of the data README): 0.20 m is the centre of T4 when the thoracic
  spine (≈ 0.28 m of the 0.419 m thorax body, the rest being cervical) is divided into 12
  equal levels (8.5 levels above T12/L1).  ``Q = −F_ext ∂z_P/∂q``.

The right-hand side ``ẋ = F(x, x_d, α, p)`` with ``p = [q, b, G_p, G_d, F_ext]`` is an MX
function (``q̈ = M⁻¹(Q − h)`` by a linear solve); :func:`linearization` differentiates it by
AD into ``J_i = ∂F/∂x`` and ``J_d = ∂F/∂x_d`` at the equilibrium.  Because ``Q`` is linear
in the activations, ``J_i(α)`` and ``J_d(α)`` are affine in ``α``; their constant
coefficient tensors (the thesis' 36 × 36 × M "partial Jacobians", §3.C.iii.a) are the AD
Jacobians ``∂ vec J / ∂α`` (:func:`affine_jacobians`).

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

import casadi as ca
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
    "AffineJacobians",
    "Muscle",
    "SpineModel",
    "SpineParameters",
    "affine_jacobians",
    "build_model",
    "jacobian_functions",
    "linearization",
    "load_muscles",
    "load_parameters",
    "metabolic_power_expr",
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


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------
# symbolic model
# ---------------------------------------------------------------------------------------

def _R1(t):
    c, s = ca.cos(t), ca.sin(t)
    return ca.blockcat([[1, 0, 0], [0, c, s], [0, -s, c]])


def _R2(t):
    c, s = ca.cos(t), ca.sin(t)
    return ca.blockcat([[c, 0, -s], [0, 1, 0], [s, 0, c]])


def _R3(t):
    c, s = ca.cos(t), ca.sin(t)
    return ca.blockcat([[c, s, 0], [-s, c, 0], [0, 0, 1]])


def _body_to_inertial(theta, beta, alpha):
    """``C`` with columns ``c_k = (R3 R2 R1)ᵀ n_k`` (Appendix A.i): ``p_N = C p_body``."""
    return (_R3(alpha) @ _R2(beta) @ _R1(theta)).T


def _skew(v):
    return ca.blockcat([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def _vee(W):
    return ca.vertcat(W[2, 1], W[0, 2], W[1, 0])


def _phi_over_sin(w, c):
    """``atan2(√w, c)/√w`` (planar angle over its sine), smooth at ``w = 0``."""
    small = w < 1e-4
    series = 1 + w / 6 + 3 * w**2 / 40 + 5 * w**3 / 112 + 35 * w**4 / 1152  # asin(s)/s, c > 0
    ws = ca.if_else(small, 1.0, w)
    exact = ca.atan2(ca.sqrt(ws), c) / ca.sqrt(ws)
    return ca.if_else(small, series, exact)


@dataclass(frozen=True, eq=False)
class SpineModel:
    """The symbolic 18-DoF model and its data (result of :func:`build_model`).

    Attributes
    ----------
    parameters : SpineParameters
    muscles : tuple of Muscle
    q0 : numpy.ndarray, shape (18,)
        Equilibrium posture: the lordosis angles as the θ of every body, β = α = 0 (rad).
    rest_length : numpy.ndarray, shape (90,)
        Muscle lengths in the posture ``q0`` (m).
    max_force : numpy.ndarray, shape (90,)
        ``f_o = 46 N/cm² · CSA`` (N).
    muscle_mass : numpy.ndarray, shape (90,)
        ``ρ · CSA · L_o`` (kg; costfun.m).
    functions : dict of casadi.Function
        ``kinetic(q, qd)``, ``potential(q)``, ``mass_matrix(q)``, ``bias(q, qd)``,
        ``lengths(q) -> (L, ∂L/∂q)``, ``points(q) -> (origins 3×7, centres of mass 3×6, load point)``,
        ``angular_velocity(q, qd) -> 3×6`` (inertial frame), ``disc_angles(q) -> 3×6``
        (planar φ k̂ and twist ψ per disc), ``generalized_force(x, x_d, α, p) -> Q − h``,
        ``rhs(x, x_d, α, p) -> ẋ`` (MX).
    options : dict
        The options of :func:`build_model`.
    """

    parameters: SpineParameters
    muscles: tuple[Muscle, ...]
    q0: np.ndarray
    rest_length: np.ndarray
    max_force: np.ndarray
    muscle_mass: np.ndarray
    functions: dict
    options: dict

    @property
    def muscle_names(self) -> tuple[str, ...]:
        """Normalized muscle names in model order."""
        return tuple(m.name for m in self.muscles)

    @property
    def n_muscles(self) -> int:
        """Number of muscles (90)."""
        return len(self.muscles)

    @property
    def x0(self) -> np.ndarray:
        """Equilibrium state ``[q0, 0]`` (36)."""
        return np.concatenate([self.q0, np.zeros(N_DOF)])

    def parameter_vector(self, stiffness_gain: float = 10.0, damping: float = 2.0, proportional_gain: float = 0.0,
                         differential_gain: float = 0.0, load_N: float = 0.0) -> np.ndarray:
        """``p`` for :attr:`functions` (order :data:`PARAMETER_NAMES`), checked.

        Parameters
        ----------
        stiffness_gain : float
            Intrinsic stiffness gain q (dimensionless, ≥ 0; thesis value 10).
        damping : float
            Intrinsic damping gain b (s, ≥ 0).
        proportional_gain : float
            Reflex gain G_p (= G_R of Ch. 5; ≥ 0).
        differential_gain : float
            Reflex gain G_d (s, ≥ 0).
        load_N : float
            Magnitude of the downward external load (N, ≥ 0).
        """
        vals = (stiffness_gain, damping, proportional_gain, differential_gain, load_N)
        for name, v in zip(PARAMETER_NAMES, vals):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
                raise CollocInputError(f"{name} must be a finite number, got {v!r}")
            if v < 0:
                raise CollocInputError(f"{name} must be >= 0, got {v:g}")
        return np.array(vals, dtype=float)

    def rhs(self, x, x_delayed, alpha, p) -> np.ndarray:
        """Numeric ``ẋ = F(x, x(t − τ), α, p)`` (36).

        Parameters
        ----------
        x, x_delayed : array_like, shape (36,)
            Current and delayed state.
        alpha : array_like, shape (90,)
            Steady activations ``α_o``.
        p : array_like, shape (5,)
            See :meth:`parameter_vector`.
        """
        return np.asarray(self.functions["rhs"](x, x_delayed, alpha, p), dtype=float).ravel()

    def metabolic_power(self, alpha) -> float:
        """Metabolic power of eq. 3.C.i.2 / Ch. 4 eq. 17 (W).

        Parameters
        ----------
        alpha : array_like, shape (90,)
            Steady activations.
        """
        return float(metabolic_power_expr(self, np.asarray(alpha, dtype=float)))


def metabolic_power_expr(model: SpineModel, alpha):
    """``P = Σ m_i (74/2 sin(πα_i/2) + 111/2 (1 − cos(πα_i/2)))`` for numeric or CasADi ``alpha``.

    Parameters
    ----------
    model : SpineModel
    alpha : array_like or casadi.SX/MX, shape (90,)
    """
    p = model.parameters
    lib = np if isinstance(alpha, np.ndarray) else ca
    a = alpha * (math.pi / 2)
    terms = p.slow_w_per_kg / 2 * lib.sin(a) + p.fast_w_per_kg / 2 * (1 - lib.cos(a))
    if lib is np:
        return float(np.dot(model.muscle_mass, terms))
    return ca.dot(ca.DM(model.muscle_mass), terms)


def _build(options: tuple) -> SpineModel:
    opts = dict(options)
    par = load_parameters(thorax_length=opts["thorax_length"], load_height_m=opts["load_height_m"],
                          load_anterior_m=opts["load_anterior_m"])
    muscles = load_muscles(parsl2_path=opts["parsl2_path"])
    nm = len(muscles)

    q = ca.SX.sym("q", N_DOF)
    qd = ca.SX.sym("qd", N_DOF)

    # ---- kinematics (Appendix A.i)
    Cp = ca.DM(_body_to_inertial(par.pelvis_angle, 0.0, 0.0))
    rot = [_body_to_inertial(q[3 * j], q[3 * j + 1], q[3 * j + 2]) for j in range(6)]
    origins, coms = [], []
    o = Cp @ ca.DM([0.0, 0.0, par.cent3])
    for j in range(6):
        origins.append(o)
        coms.append(o + par.lengths[j] / 2 * rot[j][:, 2])
        o = o + par.lengths[j] * rot[j][:, 2]
    head = o  # top of the thorax (not used by the dynamics)
    frame = {"pelvis": (ca.DM.zeros(3), Cp)}
    for j, b in enumerate(BODIES):
        frame[b] = (origins[j], rot[j])

    omega = []  # inertial-frame angular velocities, [ω×] = Ċ Cᵀ
    for j in range(6):
        Cdot = ca.reshape(ca.jtimes(ca.vec(rot[j]), q, qd), 3, 3)
        omega.append(_vee(Cdot @ rot[j].T))

    # ---- energies (eqs. 3.B.i.2-3) and Lagrange's equations (eq. 3.B.i.4), all by AD
    T = 0
    V = 0
    for j in range(6):
        m, L = par.masses[j], par.lengths[j]
        inertia = ca.diag(ca.DM([m * (par.lb**2 / 4 + L**2 / 12), m * (par.la**2 / 4 + L**2 / 12),
                                 m * (par.la**2 + par.lb**2) / 4]))
        vG = ca.jtimes(coms[j], q, qd)
        wb = rot[j].T @ omega[j]
        T = T + 0.5 * m * ca.dot(vG, vG) + 0.5 * ca.dot(wb, inertia @ wb)
        V = V + par.gravity * m * coms[j][2]
    M, dTdqd = ca.hessian(T, qd)
    bias = ca.jtimes(dTdqd, q, qd) - ca.gradient(T, q) + ca.gradient(V, q)

    # ---- muscle lengths and their Jacobian (polyline through the via points)
    lengths = []
    for mus in muscles:
        pos = [frame[b][0] + frame[b][1] @ ca.DM(c) for b, c in zip(mus.bodies, mus.coords)]
        lengths.append(sum(ca.norm_2(pos[i + 1] - pos[i]) for i in range(len(pos) - 1)))
    Lvec = ca.vertcat(*lengths)
    JL = ca.jacobian(Lvec, q)
    f_len = ca.Function("lengths", [q], [Lvec, JL], ["q"], ["L", "dL_dq"])

    # ---- intervertebral discs (§3.A.ii)
    Kp, Kt = par.disc_stiffness_planar, par.disc_stiffness_twist
    Bp, Bt = par.disc_damping_planar, par.disc_damping_twist
    disc_frames = [Cp @ ca.DM(_R1(par.pelvis_angle))] + [rot[j] @ ca.DM(_R1(par.lordosis[j])) for j in range(6)]
    Jw = [ca.jacobian(w, qd) for w in omega]
    Q_disc = ca.SX.zeros(N_DOF)
    angles = []
    for j in range(6):  # disc between body j-1 (j = 0: pelvis) and body j
        El, Eu = disc_frames[j], disc_frames[j + 1]
        nl, nu = El[:, 2], Eu[:, 2]
        v = ca.cross(nl, nu)
        c = ca.dot(nl, nu)
        planar = v * _phi_over_sin(ca.dot(v, v), c)  # φ k̂
        S = _skew(v)
        Rpl = ca.SX.eye(3) + S + S @ S / (1 + c)  # Rodrigues: rotation by φ about k̂
        d1, u1 = Rpl @ El[:, 0], Eu[:, 0]
        twist = ca.atan2(ca.dot(nu, ca.cross(d1, u1)), ca.dot(d1, u1))
        moment = -(Kp * planar + Bp * ca.jtimes(planar, q, qd)) - (Kt * twist + Bt * ca.jtimes(twist, q, qd)) * nu
        Q_disc += Jw[j].T @ moment
        if j > 0:
            Q_disc -= Jw[j - 1].T @ moment
        angles.append(ca.vertcat(planar, twist))

    # ---- external load: vertical, fixed to the thorax at (0, anterior, height)
    load_point = origins[5] + rot[5] @ ca.DM([0.0, par.load_anterior_m, par.load_height_m])
    dz_load = ca.jacobian(load_point[2], q).T

    f_kin = ca.Function("kinematics", [q], [ca.horzcat(*origins, head), ca.horzcat(*coms), load_point],
                        ["q"], ["origins", "coms", "load_point"])
    f_T = ca.Function("kinetic", [q, qd], [T], ["q", "qd"], ["T"])
    f_V = ca.Function("potential", [q], [V], ["q"], ["V"])
    f_M = ca.Function("mass_matrix", [q], [M], ["q"], ["M"])
    f_h = ca.Function("bias", [q, qd], [bias], ["q", "qd"], ["h"])
    f_w = ca.Function("angular_velocity", [q, qd], [ca.horzcat(*omega)], ["q", "qd"], ["omega"])
    f_disc_angles = ca.Function("disc_angles", [q], [ca.horzcat(*angles)], ["q"], ["angles"])
    f_disc = ca.Function("disc_force", [q, qd], [Q_disc], ["q", "qd"], ["Q"])

    # ---- rest lengths, maximum forces, muscle masses
    q0 = np.zeros(N_DOF)
    q0[0::3] = par.lordosis
    L0 = np.asarray(f_len(q0)[0], dtype=float).ravel()
    csa_m2 = np.array([m.csa_cm2 for m in muscles]) * 1e-4
    f0 = par.max_stress * csa_m2
    mass = par.density * csa_m2 * L0

    # ---- generalized force Q − h with the reflexive muscle model (eqs. 3.A.iii.3, 3.B.iv.3)
    x = ca.SX.sym("x", N_STATES)
    xd = ca.SX.sym("x_d", N_STATES)
    alpha = ca.SX.sym("alpha", nm)
    p = ca.SX.sym("p", len(PARAMETER_NAMES))
    qq, vv = x[:N_DOF], x[N_DOF:]
    L, dL = f_len(qq)
    Ld, dLd = f_len(xd[:N_DOF])
    L0dm = ca.DM(L0)
    strain, rate = (L - L0dm) / L0dm, (dL @ vv) / L0dm
    strain_d, rate_d = (Ld - L0dm) / L0dm, (dLd @ xd[N_DOF:]) / L0dm
    fa = ca.DM(f0) * alpha
    force = fa * (1 + p[0] * strain + p[1] * rate) + fa * (p[2] * strain_d + p[3] * rate_d)
    Q = -dL.T @ force + f_disc(qq, vv) - p[4] * ca.substitute(dz_load, q, qq) - f_h(qq, vv)
    f_Q = ca.Function("generalized_force", [x, xd, alpha, p], [Q], ["x", "x_d", "alpha", "p"], ["Q_minus_h"])
    f_force = ca.Function("muscle_force", [x, xd, alpha, p], [force], ["x", "x_d", "alpha", "p"], ["f"])

    # ---- right-hand side ẋ = F(x, x_d, α, p): q̈ = M⁻¹ (Q − h) by an MX linear solve
    X = ca.MX.sym("x", N_STATES)
    XD = ca.MX.sym("x_d", N_STATES)
    A = ca.MX.sym("alpha", nm)
    P = ca.MX.sym("p", len(PARAMETER_NAMES))
    qdd = ca.solve(f_M(X[:N_DOF]), f_Q(X, XD, A, P))
    f_rhs = ca.Function("spine_rhs", [X, XD, A, P], [ca.vertcat(X[N_DOF:], qdd)], ["x", "x_d", "alpha", "p"], ["xdot"])

    functions = {"kinetic": f_T, "potential": f_V, "mass_matrix": f_M, "bias": f_h, "lengths": f_len,
                 "points": f_kin, "angular_velocity": f_w, "disc_angles": f_disc_angles, "disc_force": f_disc,
                 "generalized_force": f_Q, "muscle_force": f_force, "rhs": f_rhs}
    return SpineModel(parameters=par, muscles=muscles, q0=q0, rest_length=L0, max_force=f0, muscle_mass=mass,
                      functions=functions, options=opts)


@lru_cache(maxsize=8)
def _cached(options: tuple) -> SpineModel:
    return _build(options)


def build_model(*, parsl2_path: str = "corrected", thorax_length: str = "coded", load_height_m: float = 0.20,
                load_anterior_m: float | None = None) -> SpineModel:
    """Build (or fetch from a cache) the symbolic 18-DoF spine model.

    Parameters
    ----------
    parsl2_path : {"corrected", "verbatim"}
        Path of ParsL2 (see :func:`load_muscles`).
    thorax_length : {"coded", "liu"}
        Thorax length 0.419 m (spinesim.m) or 0.41882 m (Liu formula).
    load_height_m : float
        Height of the load point above the thorax origin (m), default 0.20.
    load_anterior_m : float, optional
        Anterior offset of the load point (m), default 0.20 (thesis).

    Returns
    -------
    SpineModel
    """
    if parsl2_path not in _PARSL2_PATHS:
        raise OptionsError(f"parsl2_path must be one of {', '.join(_PARSL2_PATHS)}, got {parsl2_path!r}")
    if thorax_length not in _THORAX_LENGTHS:
        raise OptionsError(f"thorax_length must be one of {', '.join(_THORAX_LENGTHS)}, got {thorax_length!r}")
    opts = (("parsl2_path", parsl2_path), ("thorax_length", thorax_length),
            ("load_height_m", float(load_height_m)),
            ("load_anterior_m", None if load_anterior_m is None else float(load_anterior_m)))
    return _cached(opts)


# ---------------------------------------------------------------------------------------
# linearization
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class AffineJacobians:
    """``J_i(α) = J_i0 + Σ_k α_k J_ik``, ``J_d(α) = J_d0 + Σ_k α_k J_dk`` at the equilibrium.

    Also the equilibrium equations ``A_eq α = b_eq`` (18: generalized forces of gravity,
    load, discs and muscles at rest in the posture sum to zero) and the generalized stiffness
    ``K(α) = K0 + Σ α_k K_k = −∂(Q − h)/∂q`` with the reflex at zero delay
    (``x_d = x``), all from AD.

    Attributes
    ----------
    p : numpy.ndarray
        Parameter vector used.
    Ji0, Jd0 : numpy.ndarray, shape (36, 36)
    Ji_alpha, Jd_alpha : numpy.ndarray, shape (36, 36, M)
        ``∂J/∂α_k`` (constant).
    A_eq : numpy.ndarray, shape (18, M)
    b_eq : numpy.ndarray, shape (18,)
    K0 : numpy.ndarray, shape (18, 18)
    K_alpha : numpy.ndarray, shape (18, 18, M)
    D0 : numpy.ndarray, shape (18, 18)
    D_alpha : numpy.ndarray, shape (18, 18, M)
        Generalized damping ``−∂(Q − h)/∂q̇`` at zero delay.
    mass_matrix : numpy.ndarray, shape (18, 18)
    force_scale : numpy.ndarray, shape (18,)
        ``|gravity + load| + Σ_k |f_o,k ∂L_k/∂q|`` per row: scale of the relative
        equilibrium residual (with ``α = 1``; multiply muscle terms by α).
    muscle_moment : numpy.ndarray, shape (18, M)
        Generalized force per unit activation, ``−f_o,k ∂L_k/∂q``.
    passive_force : numpy.ndarray, shape (18,)
        Generalized force of gravity + load + discs at the posture.
    """

    p: np.ndarray
    Ji0: np.ndarray
    Jd0: np.ndarray
    Ji_alpha: np.ndarray
    Jd_alpha: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    K0: np.ndarray
    K_alpha: np.ndarray
    D0: np.ndarray
    D_alpha: np.ndarray
    mass_matrix: np.ndarray
    muscle_moment: np.ndarray
    passive_force: np.ndarray

    def Ji(self, alpha) -> np.ndarray:
        """``J_i(α)`` (36 × 36).

        Parameters
        ----------
        alpha : array_like, shape (M,)
        """
        return self.Ji0 + self.Ji_alpha @ np.asarray(alpha, dtype=float)

    def Jd(self, alpha) -> np.ndarray:
        """``J_d(α)`` (36 × 36).

        Parameters
        ----------
        alpha : array_like, shape (M,)
        """
        return self.Jd0 + self.Jd_alpha @ np.asarray(alpha, dtype=float)

    def K(self, alpha) -> np.ndarray:
        """Generalized stiffness at zero delay, ``K(α)`` (18 × 18, N·m/rad).

        Parameters
        ----------
        alpha : array_like, shape (M,)
        """
        return self.K0 + self.K_alpha @ np.asarray(alpha, dtype=float)

    def D(self, alpha) -> np.ndarray:
        """Generalized damping at zero delay, ``D(α)`` (18 × 18, N·m·s/rad).

        Parameters
        ----------
        alpha : array_like, shape (M,)
        """
        return self.D0 + self.D_alpha @ np.asarray(alpha, dtype=float)

    def equilibrium_residual(self, alpha) -> float:
        """Relative equilibrium residual ``‖Σ Q‖∞ / ‖Σ |Q_parts|‖∞`` at the posture.

        Parameters
        ----------
        alpha : array_like, shape (M,)
            The denominator adds, row by row, the magnitudes of the passive generalized force
            (gravity + load + discs) and of every muscle's ``α_k f_o,k ∂L_k/∂q``.
        """
        a = np.asarray(alpha, dtype=float)
        net = self.passive_force + self.muscle_moment @ a
        scale = np.abs(self.passive_force) + np.abs(self.muscle_moment) @ np.abs(a)
        return float(np.max(np.abs(net)) / max(np.max(scale), 1e-300))


@lru_cache(maxsize=4)
def _linearization_functions(model: SpineModel):
    f_rhs, f_Q = model.functions["rhs"], model.functions["generalized_force"]
    nm = model.n_muscles
    X = ca.MX.sym("x", N_STATES)
    XD = ca.MX.sym("x_d", N_STATES)
    A = ca.MX.sym("alpha", nm)
    P = ca.MX.sym("p", len(PARAMETER_NAMES))
    F = f_rhs(X, XD, A, P)
    jac = ca.Function("spine_jacobians", [X, XD, A, P], [ca.jacobian(F, X), ca.jacobian(F, XD)],
                      ["x", "x_d", "alpha", "p"], ["J_i", "J_d"])
    # generalized force at zero delay (x_d = x): equilibrium, stiffness and damping
    x = ca.SX.sym("x", N_STATES)
    a = ca.SX.sym("alpha", nm)
    p = ca.SX.sym("p", len(PARAMETER_NAMES))
    Q0 = f_Q(x, x, a, p)
    Kx = -ca.jacobian(Q0, x)
    static = ca.Function("spine_static", [x, a, p], [Q0, ca.jacobian(Q0, a), Kx[:, :N_DOF], Kx[:, N_DOF:]],
                         ["x", "alpha", "p"], ["Q", "dQ_dalpha", "K", "D"])
    return jac, static


def _affine_split(values: np.ndarray, nm: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns ``[F(0), F(e_1), …, F(e_M)]`` of an affine map → ``F(0)`` and ``∂F/∂α`` (n × n × M)."""
    n = values.shape[0]
    blocks = values.reshape(n, nm + 1, -1).transpose(0, 2, 1)  # (n, n, M + 1)
    return blocks[:, :, 0].copy(), blocks[:, :, 1:] - blocks[:, :, :1]


def linearization(model: SpineModel, alpha, p, x=None) -> tuple[np.ndarray, np.ndarray]:
    """``J_i = ∂F/∂x`` and ``J_d = ∂F/∂x_d`` of the nonlinear right-hand side, by CasADi AD.

    Parameters
    ----------
    model : SpineModel
    alpha : array_like, shape (90,)
        Steady activations.
    p : array_like, shape (5,)
        See :meth:`SpineModel.parameter_vector`.
    x : array_like, shape (36,), optional
        Linearization state (also used as the delayed state); default the equilibrium
        ``[q0, 0]``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``J_i`` and ``J_d`` (36 × 36).
    """
    jac, _ = _linearization_functions(model)
    x = model.x0 if x is None else np.asarray(x, dtype=float)
    Ji, Jd = jac(x, x, np.asarray(alpha, dtype=float), np.asarray(p, dtype=float))
    return np.asarray(Ji, dtype=float), np.asarray(Jd, dtype=float)


def affine_jacobians(model: SpineModel, p, *, jacobians: bool = True) -> AffineJacobians:
    """Constant coefficient tensors of ``J_i(α)``, ``J_d(α)``, ``K(α)``, ``D(α)`` and the equilibrium.

    The thesis' 36 × 36 × M "partial Jacobians" (§3.C.iii.a).  ``J_i``, ``J_d``, ``K``, ``D``
    and the equilibrium generalized force are CasADi AD derivatives of the nonlinear model;
    they are affine in ``α`` (the generalized force is linear in the activations), so
    evaluating them at ``α = 0`` and at the unit vectors ``α = e_k`` (one batched call of the
    AD Jacobian functions) gives the exact coefficients.  (A second AD pass, ``∂ vec J/∂α``
    through the MX linear solve, gives the same numbers but needs far more memory.)

    Parameters
    ----------
    model : SpineModel
    p : array_like, shape (5,)
        See :meth:`SpineModel.parameter_vector`.
    jacobians : bool
        False: skip ``J_i``/``J_d`` (their fields are then ``None``); the equilibrium,
        ``K`` and ``D`` are enough for the stability constraint.

    Returns
    -------
    AffineJacobians
    """
    jac, static = _linearization_functions(model)
    nm = model.n_muscles
    x0 = model.x0
    p = np.asarray(p, dtype=float)
    alphas = np.hstack([np.zeros((nm, 1)), np.eye(nm)])
    X = np.repeat(x0[:, None], nm + 1, axis=1)
    Pm = np.repeat(p[:, None], nm + 1, axis=1)
    Ji0 = dJi = Jd0 = dJd = None
    if jacobians:
        Ji, Jd = (np.asarray(v, dtype=float) for v in jac.map(nm + 1)(X, X, alphas, Pm))
        Ji0, dJi = _affine_split(Ji, nm)
        Jd0, dJd = _affine_split(Jd, nm)
    Q, dQ, K, D = (np.asarray(v, dtype=float) for v in static.map(nm + 1)(X, alphas, Pm))
    K0, dK = _affine_split(K, nm)
    D0, dD = _affine_split(D, nm)
    Q0 = Q[:, 0]
    dQ = dQ[:, :nm]  # constant
    return AffineJacobians(
        p=p, Ji0=Ji0, Jd0=Jd0, Ji_alpha=dJi, Jd_alpha=dJd, A_eq=dQ, b_eq=-Q0,
        K0=K0, K_alpha=dK, D0=D0, D_alpha=dD,
        mass_matrix=np.asarray(model.functions["mass_matrix"](model.q0), dtype=float),
        muscle_moment=dQ, passive_force=Q0,
    )


def jacobian_functions(model: SpineModel, p) -> tuple[ca.Function, ca.Function]:
    """``J_i(α)`` and ``J_d(α)`` at the equilibrium as CasADi functions of the activations.

    Parameters
    ----------
    model : SpineModel
    p : array_like, shape (5,)
        See :meth:`SpineModel.parameter_vector`.

    Returns
    -------
    (casadi.Function, casadi.Function)
        ``Ji(alpha) -> 36×36`` and ``Jd(alpha) -> 36×36`` (affine, from :func:`affine_jacobians`).
    """
    aj = affine_jacobians(model, p)
    a = ca.SX.sym("alpha", model.n_muscles)
    out = []
    for name, J0, dJ in (("J_i", aj.Ji0, aj.Ji_alpha), ("J_d", aj.Jd0, aj.Jd_alpha)):
        G = ca.DM(dJ.reshape(N_STATES * N_STATES, -1, order="F"))
        out.append(ca.Function(name, [a], [ca.DM(J0) + ca.reshape(G @ a, N_STATES, N_STATES)], ["alpha"], [name]))
    return out[0], out[1]
