"""Standing with unilateral foot–ground contact: kp, kd through heel-off (Wieber & Billet 2006, §3).

Planar (x forward, y up), contract `heel-off` (CONTRACTS §2): a rigid foot on a flat platform
that moves along x with the measured acceleration a(t); the foot touches the platform at the
heel (0.05 m behind the ankle's projection) and the toe (0.15 m in front), ankle 0.08 m above
the sole; foot 2 kg, CoM 0.05 m in front of the ankle's projection and 0.04 m above the sole,
I = 0.01 kg·m²; the body above the ankle an inverted pendulum, 70 kg, CoM 0.90 m from the
ankle, I = 10 kg·m².  Signorini's law at both points, no slip, inelastic landings.  Angles are
positive clockwise (x right, y up): θ_body > 0 leans forward, θ_foot > 0 lifts the heel
(pivot on the toe), θ_foot < 0 lifts the toe (pivot on the heel).  Ankle torque on the body
T = −kp·θ_body − kd·ω_body (−T on the foot).  Modes: ``flat``, ``toe`` (heel lifted, pivot on
the toe), ``heel`` (toe lifted); losing both contacts is an error.

Mechanics in the platform's frame, generalized coordinates q = (x_A, y_A, θ_foot, θ_body)
(the ankle A; the platform's acceleration enters as the force −m·a on each body); the
contact points are :class:`colloc.ContactPoint` objects of a :class:`colloc.ContactSystem`,
simulated by :func:`colloc.simulate_contact`.  The platform acceleration is taken to be
linear between the samples of ``platform_acc``.

Identification (:func:`identify`): multi-phase Radau collocation (:func:`colloc.transcribe_phases`)
with the mode sequence read from θ_foot, the switching times unknown, the contact forces
variables with λ_n ≥ 0, the lifted point's gap φ ≥ 0 in the pivot phases, a landing closing
each pivot phase (θ_foot = 0, then the inelastic impact: the foot stops, the body's angular
momentum about the ankle is conserved).
"""

from __future__ import annotations

import time as _time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import casadi as ca
import numpy as np

import colloc as co

__all__ = ["BODY", "COLUMNS", "DEFAULT_DATA", "GUESS", "MODES", "NAMES", "OPTIONAL_COLUMNS", "STATE_NAMES",
           "TRUE", "HeelOffTrial", "contact_system", "detect_modes", "identify", "load_trial", "mode_functions",
           "problem", "simulate", "write_trial"]

#: Geometry and inertia (contract `heel-off`; SI units).  Foot points relative to the ankle
#: in the foot's frame (x forward, y up, foot flat).
BODY = {"heel": (-0.05, -0.08), "toe": (0.15, -0.08), "foot_com": (0.05, -0.04), "m_f": 2.0, "I_f": 0.01,
        "m_b": 70.0, "L": 0.90, "I_b": 10.0, "g": 9.81}
#: Seed-case gains.
TRUE = {"kp": 900.0, "kd": 250.0}
NAMES = ("kp", "kd")
UNITS = {"kp": "N·m/rad", "kd": "N·m·s/rad"}
#: A poor default start.
GUESS = {"kp": 600.0, "kd": 120.0}
STATE_NAMES = ("theta_body", "theta_foot", "omega_body", "omega_foot")
COLUMNS = ("time", "theta_body", "theta_foot", "platform_acc")
OPTIONAL_COLUMNS = ("omega_body", "omega_foot")
DEFAULT_DATA = ("heel_off", "heel_off.csv")
MODES = ("flat", "toe", "heel")
#: Rows of the contact forces in each mode: (contact, direction).
FORCE_ROWS = {"flat": (("heel", "n"), ("toe", "n"), ("toe", "t")), "toe": (("toe", "n"), ("toe", "t")),
              "heel": (("heel", "n"), ("heel", "t"))}


def _rot(theta, r):
    """A foot-frame vector r turned clockwise by θ (the contract's positive sense)."""
    c, s = ca.cos(theta), ca.sin(theta)
    return ca.vertcat(r[0] * c + r[1] * s, -r[0] * s + r[1] * c)


def _mechanics():
    """CasADi functions of the full-coordinate mechanics: mass(q), forces(q, q̇, a, kp, kd),
    and per contact point its position, Jacobian and J̇·q̇."""
    q, qd = ca.SX.sym("q", 4), ca.SX.sym("qd", 4)
    a, kp, kd = ca.SX.sym("a"), ca.SX.sym("kp"), ca.SX.sym("kd")
    A, th_f, th_b = q[0:2], q[2], q[3]
    b = BODY
    G_f = A + _rot(th_f, b["foot_com"])
    G_b = A + b["L"] * ca.vertcat(ca.sin(th_b), ca.cos(th_b))
    M = ca.SX.zeros(4, 4)
    f = ca.SX.zeros(4, 1)
    for G, m, I, k in ((G_f, b["m_f"], b["I_f"], 2), (G_b, b["m_b"], b["I_b"], 3)):
        J = ca.jacobian(G, q)
        M += m * (J.T @ J)
        M[k, k] += I
        f += J.T @ (m * ca.vertcat(-a, -b["g"]) - m * (ca.jacobian(J @ qd, q) @ qd))
    T = -kp * th_b - kd * qd[3]
    f[3] += T
    f[2] -= T
    outs = [M, f]
    for name in ("heel", "toe"):
        P = A + _rot(th_f, b[name])
        J = ca.jacobian(P, q)
        outs += [P, J, ca.jacobian(J @ qd, q) @ qd]
    return ca.Function("heel_off_mechanics", [q, qd, a, kp, kd], outs)


_MECH = None


def mechanics() -> dict:
    """The (cached) CasADi functions of :func:`_mechanics`."""
    global _MECH
    if _MECH is None:
        _MECH = _mechanics()
    return _MECH


def flat_configuration() -> np.ndarray:
    """q with the foot flat, heel and toe on the ground (ankle above the origin), body upright."""
    return np.array([0.0, -BODY["heel"][1], 0.0, 0.0])


class _Evaluator:
    """Every piece of the mechanics at (t, q, q̇) by one CasADi call, kept for the next
    request at the same point (the simulator asks for M, f and each contact in turn)."""

    def __init__(self, acc, kp: float, kd: float):
        self.acc, self.kp, self.kd = acc, kp, kd
        self.q = self.qd = self.t = None
        self.value, self.f = None, mechanics()

    def __call__(self, q, qd=None, t=None):
        q = np.asarray(q, dtype=float)
        fresh = self.q is not None and np.array_equal(q, self.q)
        if fresh and qd is not None:
            fresh = np.array_equal(qd, self.qd)
        if fresh and t is not None:
            fresh = t == self.t
        if not fresh:
            self.q = q.copy()
            self.qd = np.zeros(4) if qd is None else np.array(qd, dtype=float)
            self.t = t
            a = 0.0 if t is None else self.acc(t)
            self.value = [np.asarray(v) for v in self.f(self.q, self.qd, a, self.kp, self.kd)]
        return self.value


def contact_system(acc, params: Mapping[str, float]) -> co.ContactSystem:
    """The foot and body as a :class:`colloc.ContactSystem`; ``acc(t)`` the platform
    acceleration; ``params`` kp, kd."""
    ev = _Evaluator(acc, float(params["kp"]), float(params["kd"]))
    contacts = [co.ContactPoint(name, (lambda q, k=k: ev(q)[k].ravel()), (lambda q, k=k: ev(q)[k + 1]),
                                (lambda q, qd, k=k: ev(q, qd)[k + 2].ravel()))
                for name, k in (("heel", 2), ("toe", 5))]
    return co.ContactSystem("heel-off", ("x_ankle", "y_ankle", "theta_foot", "theta_body"),
                            lambda q, p: ev(q)[0], lambda t, q, qd, p: ev(q, qd, t)[1].ravel(), contacts)


def piecewise_linear(time, values):
    """a(t) linear between samples (held constant outside)."""
    time, values = np.asarray(time, dtype=float), np.asarray(values, dtype=float)
    return lambda t: float(np.interp(t, time, values))


def full_state(state) -> np.ndarray:
    """[q, q̇] of the full coordinates for a contract state [θ_b, θ_f, ω_b, ω_f] (the foot
    flat, or pivoting on the toe for θ_f > 0, on the heel for θ_f < 0)."""
    th_b, th_f, w_b, w_f = map(float, state)
    pivot = "toe" if th_f > 0 else "heel" if th_f < 0 else None
    if pivot is None and w_f != 0.0:
        pivot = "toe" if w_f > 0 else "heel"
    q_flat = flat_configuration()
    if pivot is None:
        return np.array([*q_flat[:2], 0.0, th_b, 0.0, 0.0, 0.0, w_b])
    r = np.array(BODY[pivot])
    anchor = q_flat[:2] + r
    c, s = np.cos(th_f), np.sin(th_f)
    rot = np.array([r[0] * c + r[1] * s, -r[0] * s + r[1] * c])
    drot = np.array([-r[0] * s + r[1] * c, -r[0] * c - r[1] * s]) * w_f
    A = anchor - rot
    return np.array([A[0], A[1], th_f, th_b, -drot[0], -drot[1], w_f, w_b])


def contract_state(x) -> np.ndarray:
    """[θ_b, θ_f, ω_b, ω_f] from full states (rows)."""
    x = np.atleast_2d(x)
    return np.column_stack([x[:, 3], x[:, 2], x[:, 7], x[:, 6]])


def simulate(params: Mapping[str, float], time, platform_acc, state0=(0.0, 0.0, 0.0, 0.0), *, acc=None,
             rtol: float = 1e-12, atol: float = 1e-12):
    """Simulate a trial by :func:`colloc.simulate_contact`: returns ``(states at time, sim)``
    (states in :data:`STATE_NAMES` order).  ``acc`` (a function of t) overrides the linear
    interpolation of ``platform_acc``.  A lost contact raises :class:`colloc.SolveFailed`."""
    time = np.asarray(time, dtype=float)
    acc = acc or piecewise_linear(time, platform_acc)
    system = contact_system(acc, params)
    sim = co.simulate_contact(system, full_state(state0), (time[0], time[-1]), params, t_eval=time,
                              rtol=rtol, atol=atol)
    if sim.status != "ok":
        raise co.SolveFailed(f"heel-off: {sim.message} (losing both contacts is an error, contract `heel-off`)")
    return contract_state(sim.x), sim


def mode_of(sim_mode: str) -> str:
    """The contract's mode name of a simulator mode (active contacts)."""
    return {"heel+toe": "flat", "toe": "toe", "heel": "heel"}[sim_mode]
