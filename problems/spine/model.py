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

import math
from dataclasses import dataclass
from functools import lru_cache

import casadi as ca
import numpy as np

from colloc import CollocInputError, OptionsError
from colloc_problems.spine.anatomy import (
    _PARSL2_PATHS,
    _THORAX_LENGTHS,
    BODIES,
    DATA_FILES,
    N_DOF,
    N_STATES,
    PARAMETER_NAMES,
    STATE_NAMES,
    Muscle,
    SpineParameters,
    load_muscles,
    load_parameters,
)
from colloc_problems.spine.equations import build_fields
from colloc_problems.spine.kinematics import _R1 as _R1
from colloc_problems.spine.kinematics import _body_to_inertial as _body_to_inertial
from colloc_problems.spine.linear import AffineJacobians, affine_jacobians, jacobian_functions, linearization

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


@lru_cache(maxsize=8)
def _cached(options: tuple) -> SpineModel:
    return SpineModel(**build_fields(options))


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
