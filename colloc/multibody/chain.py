"""Spatial open chains of rigid bodies on a moving base, by Kane's method with CasADi AD.

The formulation follows Bourgeois & Langlois (2015, "Derivation and validation of a spatial
multi-link human postural stability model", Trans. CSME 39(4)): every joint is 0–3 relative
Bryant rotations (body-fixed X-Y-Z sequence, §4.2.1), the base (the ship) has a prescribed
6-DoF motion whose translation is given as the base point's acceleration in base-frame
components (§4.3.1), the equations of motion are Kane's equations

    Σ_k [ V_kᵀ m_k (a_Gk − g) + W_kᵀ (I_k α_k + ω_k × I_k ω_k) ] − Q = 0        (Eqs. 1–5)

with V_k, W_k the partial velocity and partial angular velocity matrices (Eqs. 7–8) taken
with respect to the generalized speeds, here the joints' Bryant-angle rates.  Instead of the
paper's hand-assembled matrices (Eqs. 7–11) the partial velocities and all time derivatives
come from CasADi's algorithmic differentiation of the positions and rotation matrices, so the
residual is exactly linear in q̈: M(q) = ∂residual/∂q̈ and h = residual(q̈ = 0).

Locking joints (§4.4) removes their coordinates; the moment transmitted through any joint,
locked or not, and the deck's whole action on the chain (the paper's ship–pendulum reaction,
Eqs. 15–17) are computed from the same accelerations by Newton–Euler on the sub-trees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeAlias, overload

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import ModelError

#: Angles, coordinates or their rates as the chain's functions take them: a CasADi column, a
#: sequence of CasADi scalars or numbers, or a NumPy array.
ChainVector: TypeAlias = "ca.SX | ca.MX | ca.DM | Sequence[ca.SX | ca.MX | float] | np.ndarray"

__all__ = ["Body", "Chain", "ChainEquations", "bryant", "nrmse"]

_AXES = "xyz"


def _rot(axis: str, angle):
    c, s = ca.cos(angle), ca.sin(angle)
    if axis == "x":
        return ca.vertcat(ca.horzcat(1, 0, 0), ca.horzcat(0, c, -s), ca.horzcat(0, s, c))
    if axis == "y":
        return ca.vertcat(ca.horzcat(c, 0, s), ca.horzcat(0, 1, 0), ca.horzcat(-s, 0, c))
    return ca.vertcat(ca.horzcat(c, -s, 0), ca.horzcat(s, c, 0), ca.horzcat(0, 0, 1))


@overload
def bryant(angles: ca.SX | Sequence[ca.SX], axes: str = "xyz") -> ca.SX: ...


@overload
def bryant(angles: ca.MX | Sequence[ca.MX], axes: str = "xyz") -> ca.MX: ...


@overload
def bryant(angles: ca.DM | np.ndarray | Sequence[float], axes: str = "xyz") -> ca.DM: ...


def bryant(angles: ChainVector, axes: str = "xyz") -> ca.SX | ca.MX | ca.DM:
    """Rotation matrix Rx(a_x)·Ry(a_y)·Rz(a_z) of body-fixed X-Y-Z Bryant angles
    (Bourgeois & Langlois 2015, §4.2.1), restricted to ``axes`` (in X-Y-Z order; the
    missing rotations are zero).  ``angles`` holds one angle per letter of ``axes``.
    Works on CasADi symbols and on numbers (returns a casadi.DM then)."""
    R = ca.DM.eye(3)
    for i, axis in enumerate(axes):
        R = R @ _rot(axis, angles[i])
    return R


def _rate_matrix(angles, axes: str):
    """E with ω_rel = E·(angle rates) in the child frame, for Rx(a)·Ry(b)·Rz(c) restricted to
    ``axes`` (columns: the child-frame directions of the rotation axes)."""
    full = dict(zip(axes, [angles[i] for i in range(len(axes))]))
    b, c = full.get("y", 0.0), full.get("z", 0.0)
    cb, sb, cc, sc = ca.cos(b), ca.sin(b), ca.cos(c), ca.sin(c)
    columns = {"x": ca.vertcat(cb * cc, -cb * sc, sb), "y": ca.vertcat(sc, cc, 0), "z": ca.vertcat(0, 0, 1)}
    return ca.horzcat(*[columns[a] for a in axes])


def _dot(E, angles, rates):
    """Time derivative of a matrix of the angles, given their rates."""
    if E.is_constant() if hasattr(E, "is_constant") else False:
        return ca.SX.zeros(E.shape)
    return ca.reshape(ca.jtimes(ca.reshape(E, -1, 1), angles, rates), E.shape[0], E.shape[1])


def nrmse(x: ArrayLike, reference: ArrayLike) -> float:
    """Normalized root-mean-square error in percent, Bourgeois & Langlois (2015) Eq. 21:
    RMS(x − reference) / (max(reference) − min(reference)) × 100."""
    x, reference = np.asarray(x, float), np.asarray(reference, float)
    if x.shape != reference.shape:
        raise ValueError(f"nrmse: shapes differ, {x.shape} and {reference.shape}")
    span = float(np.max(reference) - np.min(reference))
    if span <= 0.0:
        raise ValueError("nrmse: the reference signal is constant (zero range)")
    return float(np.sqrt(np.mean((x - reference) ** 2)) / span * 100.0)


@dataclass(frozen=True)
class Body:
    """A rigid body of the chain and the joint that joins it to its parent.

    Parameters
    ----------
    name : str
        Body (and joint) name; coordinates are named ``f"{name}_{axis}"``.
    mass : float
        kg.
    com : 3 floats
        Centre of mass in the body frame, from the body's joint point (m).
    inertia : 3 floats (principal) or 3×3
        Inertia tensor about the centre of mass in body-frame components (kg·m²).
    parent : str or None
        The parent body's name; None for the base (the deck).
    location : 3 floats
        The joint point in the parent's frame, from the parent's joint point (from the base
        point for the base) (m).
    axes : str
        The joint's free Bryant rotations, a subsequence of ``"xyz"`` ("" is a welded joint).
    """

    name: str
    mass: float
    com: Sequence[float]
    inertia: Sequence
    parent: str | None = None
    location: Sequence[float] = (0.0, 0.0, 0.0)
    axes: str = "xyz"

    def inertia_matrix(self) -> np.ndarray:
        """The 3×3 inertia tensor about the centre of mass, body-frame components."""
        inertia = np.asarray(self.inertia, float)
        return np.diag(inertia) if inertia.shape == (3,) else inertia.reshape(3, 3)


@dataclass(frozen=True)
class ChainEquations:
    """Equations of a :class:`Chain` at given coordinates, speeds, accelerations and base motion
    (CasADi expressions of whatever was passed in).

    Attributes
    ----------
    residual : Kane's generalized inertia and gravity forces M(q)·q̈ + h; the equations of
        motion are ``residual − Q = 0`` for generalized forces Q on the coordinates.
    mass_matrix, bias : M(q) and h(q, q̇, base motion).
    deck_force, deck_moment : the base's whole action on the chain, Σ m(a_G − g) and
        Σ [r_OG × m(a_G − g) + I·α + ω × I·ω] about the base point, in base-frame components.
    joint_moments : 3 × n_bodies; column k is the moment transmitted from the parent to body
        k's sub-tree about joint k (actuation included), in the parent's frame components.
    joint_forces : 3 × n_bodies; the force transmitted through joint k, parent-frame components.
    com_positions : 3 × n_bodies; centres of mass from the base point, base-frame components.
    """

    residual: object
    mass_matrix: object
    bias: object
    deck_force: object
    deck_moment: object
    joint_moments: object
    joint_forces: object
    com_positions: object


@dataclass(frozen=True)
class Chain:
    """An open chain (a tree) of rigid bodies on a base with prescribed 6-DoF motion.

    The base's orientation in the inertial frame N (Z up) is R_NS = Rx(φ)Ry(θ)Rz(ψ) of its
    Bryant angles; gravity is ``gravity`` m/s² along −Z.  Coordinates are the free Bryant
    angles of all joints, in body order then X-Y-Z order (:attr:`coordinates`); the
    generalized speeds are their time derivatives.
    """

    bodies: tuple[Body, ...]
    gravity: float = 9.81
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "bodies", tuple(self.bodies))
        names = [b.name for b in self.bodies]
        if len(set(names)) != len(names):
            raise ModelError(f"Chain: body names must be unique, got {names}")
        for i, b in enumerate(self.bodies):
            if b.parent is not None and b.parent not in names[:i]:
                raise ModelError(f"Chain: body '{b.name}' has parent '{b.parent}', which is not "
                                 f"an earlier body (bodies: {', '.join(names)})")
            if b.axes not in {"", "x", "y", "z", "xy", "xz", "yz", "xyz"}:
                raise ModelError(f"Chain: body '{b.name}' has axes '{b.axes}'; expected a "
                                 "subsequence of 'xyz' in X-Y-Z order")
            if not b.mass > 0:
                raise ModelError(f"Chain: body '{b.name}' has mass {b.mass}; must be > 0")

    @property
    def coordinates(self) -> tuple[str, ...]:
        """Names of the free coordinates, ``f"{body}_{axis}"``, in body then X-Y-Z order."""
        return tuple(f"{b.name}_{a}" for b in self.bodies for a in b.axes)

    def lock(self, joints: Iterable[str] | Mapping[str, str]) -> Chain:
        """A chain with the given joints welded (all their rotations, or for a mapping
        ``{joint: axes}`` only those axes), as in Bourgeois & Langlois (2015) §4.4; the
        locked coordinates are held at zero."""
        spec = dict(joints) if isinstance(joints, Mapping) else {j: _AXES for j in joints}
        names = {b.name for b in self.bodies}
        unknown = set(spec) - names
        if unknown:
            raise ModelError(f"Chain.lock: unknown joint(s) {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(b.name for b in self.bodies)}")
        bodies = [replace(b, axes="".join(a for a in b.axes if a not in spec.get(b.name, "")))
                  for b in self.bodies]
        return Chain(tuple(bodies), self.gravity)

    # -- the symbolic core, built once and reused through a casadi.Function -------------
    def function(self) -> ca.Function:
        """``casadi.Function`` (q, qd, qdd, base_angles, base_rates, base_accs, base_acc) →
        (residual, M, h, deck_force, deck_moment, joint_moments, joint_forces, com)."""
        if "f" not in self._cache:
            self._cache["f"] = self._build()
        return self._cache["f"]

    def _build(self) -> ca.Function:
        n = len(self.coordinates)
        q, qd, qdd = ca.SX.sym("q", n), ca.SX.sym("qd", n), ca.SX.sym("qdd", n)
        th, thd, thdd = ca.SX.sym("th", 3), ca.SX.sym("thd", 3), ca.SX.sym("thdd", 3)
        a_base = ca.SX.sym("a_base", 3)
        R_NS = bryant(th)
        g = ca.DM([0.0, 0.0, -self.gravity])
        # base kinematics: ω, α of the deck in N, from its Bryant rates (closed form below)
        E_S = _rate_matrix(th, "xyz")
        w_S = R_NS @ E_S @ thd
        al_S = R_NS @ (_dot(E_S, th, thd) @ thd + E_S @ thdd)     # Ṙ·E·θ̇ = ω × ω = 0
        a_O = R_NS @ a_base
        frames, joints, coms, omegas, alphas = {}, {}, [], [], []
        # name → (R, ω, α, v_joint, a_joint) with v relative to the base point's motion
        kin: dict[str, tuple] = {}
        force_star, moment_star = [], []
        index = 0
        for b in self.bodies:
            angles = q[index:index + len(b.axes)]
            rates = qd[index:index + len(b.axes)]
            accs = qdd[index:index + len(b.axes)]
            index += len(b.axes)
            if b.parent is None:
                R_p, w_p, al_p = R_NS, w_S, al_S
                r_p, v_p, a_p = ca.DM.zeros(3), ca.DM.zeros(3), a_O
            else:
                R_p, w_p, al_p, r_p, v_p, a_p = kin[b.parent]
            ell = R_p @ ca.DM(np.asarray(b.location, float))
            r_joint = r_p + ell
            v_joint = v_p + ca.cross(w_p, ell)
            a_joint = a_p + ca.cross(al_p, ell) + ca.cross(w_p, ca.cross(w_p, ell))
            if b.axes:
                R = R_p @ bryant(angles, b.axes)
                E = _rate_matrix(angles, b.axes)           # relative ω in the child's frame
                w_rel = R @ (E @ rates)
                omega = w_p + w_rel
                alpha = (al_p + R @ (_dot(E, angles, rates) @ rates + E @ accs)
                         + ca.cross(w_p, w_rel))
            else:
                R, omega, alpha = R_p, w_p, al_p
            rho = R @ ca.DM(np.asarray(b.com, float))
            r_G = r_joint + rho
            v_rel = v_joint + ca.cross(omega, rho)
            a_G = a_joint + ca.cross(alpha, rho) + ca.cross(omega, ca.cross(omega, rho))
            kin[b.name] = (R, omega, alpha, r_joint, v_joint, a_joint)
            frames[b.name], joints[b.name] = R, r_joint
            I_N = R @ ca.DM(b.inertia_matrix()) @ R.T
            F = b.mass * (a_G - g)
            Mo = I_N @ alpha + ca.cross(omega, I_N @ omega)
            coms.append((r_G, v_rel, omega))
            omegas.append(omega)
            alphas.append(alpha)
            force_star.append(F)
            moment_star.append(Mo)
        residual = ca.SX.zeros(n)
        for (r_G, v_rel, omega), F, Mo in zip(coms, force_star, moment_star):
            if n:
                residual += ca.jacobian(v_rel, qd).T @ F + ca.jacobian(omega, qd).T @ Mo
        M = ca.jacobian(residual, qdd) if n else ca.SX(0, 0)
        h = ca.substitute(residual, qdd, ca.DM.zeros(n)) if n else ca.SX(0, 1)
        deck_F = sum(force_star[1:], force_star[0])
        deck_M = sum((ca.cross(c[0], F) + Mo for c, F, Mo in zip(coms, force_star, moment_star)),
                     ca.SX.zeros(3))
        children: dict[str, list[int]] = {b.name: [] for b in self.bodies}
        for i, b in enumerate(self.bodies):
            # every body belongs to its own sub-tree and to its ancestors' ones
            name: str | None = b.name
            while name is not None:
                children[name].append(i)
                name = next(x.parent for x in self.bodies if x.name == name)
        jm, jf = [], []
        for b in self.bodies:
            R_parent = R_NS if b.parent is None else frames[b.parent]
            Fk = sum((force_star[i] for i in children[b.name]), ca.SX.zeros(3))
            Mk = sum((ca.cross(coms[i][0] - joints[b.name], force_star[i]) + moment_star[i]
                      for i in children[b.name]), ca.SX.zeros(3))
            jm.append(R_parent.T @ Mk)
            jf.append(R_parent.T @ Fk)
        com_S = ca.horzcat(*[R_NS.T @ c[0] for c in coms])
        outputs = [residual, M, h, R_NS.T @ deck_F, R_NS.T @ deck_M, ca.horzcat(*jm), ca.horzcat(*jf), com_S]
        outputs = ca.cse(outputs)       # common subexpressions merged: smaller derivatives downstream
        return ca.Function(
            "chain", [q, qd, qdd, th, thd, thdd, a_base], outputs,
            ["q", "qd", "qdd", "base_angles", "base_rates", "base_accs", "base_acc"],
            ["residual", "M", "h", "deck_force", "deck_moment", "joint_moments", "joint_forces",
             "com"])

    def equations(self, q: ChainVector, qd: ChainVector, qdd: ChainVector, base_angles: ChainVector,
                  base_rates: ChainVector, base_accs: ChainVector, base_acc: ChainVector) -> ChainEquations:
        """The chain's equations for the given expressions (CasADi SX/MX or numbers).

        ``base_angles``, ``base_rates``, ``base_accs``: the base's Bryant angles and their
        first and second time derivatives; ``base_acc``: the base point's translational
        (kinematic, gravity excluded) acceleration in base-frame components.
        """
        n = len(self.coordinates)
        args = [q, qd, qdd]
        for name, value in zip(("q", "qd", "qdd"), args):
            if _length(value) != n:
                raise ModelError(f"Chain.equations: '{name}' has {_length(value)} entries; the "
                                 f"chain has {n} coordinates ({', '.join(self.coordinates)})")
        for name, value in zip(("base_angles", "base_rates", "base_accs", "base_acc"),
                               (base_angles, base_rates, base_accs, base_acc)):
            if _length(value) != 3:
                raise ModelError(f"Chain.equations: '{name}' must have 3 entries, got {_length(value)}")
        out = self.function()(_col(q), _col(qd), _col(qdd), _col(base_angles), _col(base_rates),
                              _col(base_accs), _col(base_acc))
        return ChainEquations(*out)


def _col(value):
    if isinstance(value, (ca.SX, ca.MX, ca.DM)):
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, (ca.SX, ca.MX)) for v in value):
        return ca.vertcat(*value)
    return ca.DM(np.asarray(value, float).reshape(-1, 1)) if np.size(value) else ca.DM(0, 1)


def _length(value) -> int:
    if isinstance(value, (ca.SX, ca.MX, ca.DM)):
        return value.numel()
    return len(value) if isinstance(value, (list, tuple)) else int(np.size(value))
