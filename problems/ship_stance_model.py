"""The ship-stance model of :mod:`colloc_problems.ship_stance`: the four segments and their joints
(Bourgeois & Langlois 2015; docs/contracts.md §2 ``ship-stance``), the seed case's gains and
columns, the joint control as generalized forces and the closed-loop :class:`colloc.Model`."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import casadi as ca
import numpy as np

import colloc as co

#: Segment data (docs/contracts.md §2; Winter 2009 Table 4.1, 1.75 m, 75 kg):
#: name → (mass kg, length m, CoM from the lower joint m, (I_xx, I_yy, I_zz) kg·m² about the CoM).
SEGMENTS: dict[str, tuple[float, float, float, tuple[float, float, float]]] = {
    "shanks": (6.975, 0.4305, 0.2441, (0.174, 0.118, 0.065)),
    "thighs": (15.000, 0.4288, 0.2431, (0.409, 0.288, 0.159)),
    "trunk": (44.775, 0.5040, 0.2520, (1.405, 1.097, 0.606)),
    "head": (6.075, 0.0, 0.2065, (0.063, 0.063, 0.030)),
}
#: The joint below each segment, in chain order.
JOINTS = ("ankle", "knee", "hip", "neck")
#: Known passive yaw (stiffness N·m/rad, damping N·m·s/rad) of each joint (docs/contracts.md §2).
PASSIVE_YAW = {"ankle": (200.0, 20.0), "knee": (100.0, 10.0), "hip": (100.0, 10.0), "neck": (10.0, 1.0)}
#: Seed-case gains (docs/contracts.md §2), by result name.
TRUE: dict[str, float] = {}
for _joint, (_kp, _kd) in {"ankle": ((1400, 1500), (300, 350)), "knee": ((1000, 1200), (200, 250)),
                           "hip": ((700, 800), (120, 150)), "neck": ((50, 60), (6, 8))}.items():
    for _i, _axis in enumerate("xy"):
        TRUE[f"kp_{_joint}_{_axis}"] = float(_kp[_i])
        TRUE[f"kd_{_joint}_{_axis}"] = float(_kd[_i])
#: Default starting values: one per joint, far from the seed case (factor 2–3 off).
GUESS: dict[str, float] = {f"{k}_{j}_{a}": v for j, (kp, kd) in
                           {"ankle": (600, 100), "knee": (400, 80), "hip": (300, 50), "neck": (20, 3)}.items()
                           for a in "xy" for k, v in (("kp", kp), ("kd", kd))}

SHIP_COLUMNS = ("ship_roll", "ship_pitch", "ship_yaw", "ship_roll_rate", "ship_pitch_rate",
                "ship_yaw_rate", "ship_roll_acc", "ship_pitch_acc", "ship_yaw_acc",
                "ship_acc_x", "ship_acc_y", "ship_acc_z")
ANGLE_COLUMNS = tuple(f"{j}_{a}" for j in JOINTS for a in "xyz")
RATE_COLUMNS = tuple(f"{c}_rate" for c in ANGLE_COLUMNS)
DECK_COLUMNS = ("deck_force_x", "deck_force_y", "deck_force_z",
                "deck_moment_x", "deck_moment_y", "deck_moment_z")
STATE_NAMES = ANGLE_COLUMNS + RATE_COLUMNS
REQUIRED_COLUMNS = SHIP_COLUMNS + ANGLE_COLUMNS
OPTIONAL_COLUMNS = RATE_COLUMNS + DECK_COLUMNS
#: Columns that hold angles in radians: a value beyond ±π means degrees were written.
RADIAN_COLUMNS = SHIP_COLUMNS[:3] + ANGLE_COLUMNS
DEFAULT_DATA = ("ship_stance", "ship_stance_seed.csv")
#: ``colloc identify ship-stance``'s IPOPT: the Gauss–Newton Hessian JᵀJ (the fit is a least
#: squares with residuals at the noise level). On the 60 s noisy record it reaches the same
#: estimates as the exact Hessian in 6 iterations instead of 7, each far cheaper: 48 s in all
#: against 101 s (benchmarks/ship_stance.py --hessian, load ≈ 4). The standard errors are the
#: Gauss–Newton covariance either way.
IPOPT_OPTIONS = {"hessian": "gauss-newton"}
#: Measurement noise of the seed case (the issue's acceptance: 0.5°, 2°/s).
SIGMA_ANGLE = float(np.deg2rad(0.5))
SIGMA_RATE = float(np.deg2rad(2.0))


def chain(gravity: float = 9.81) -> co.Chain:
    """The four links as a :class:`colloc.Chain`; link frames parallel to the deck when upright."""
    bodies, parent, below = [], None, 0.0
    for joint, (mass, length, com, inertia) in zip(JOINTS, SEGMENTS.values()):
        bodies.append(co.Body(joint, mass, (0.0, 0.0, com), inertia, parent, (0.0, 0.0, below)))
        parent, below = joint, length
    return co.Chain(tuple(bodies), gravity)


def generalized_forces(q, qd, gains: Mapping[str, object]):
    """Q_jk of docs/contracts.md §2: PD on roll (x) and pitch (y), the passive spring-damper on yaw (z)."""
    Q = []
    for i, joint in enumerate(JOINTS):
        for k, axis in enumerate("xyz"):
            n = 3 * i + k
            if axis == "z":
                kp, kd = PASSIVE_YAW[joint]
            else:
                kp, kd = gains[f"kp_{joint}_{axis}"], gains[f"kd_{joint}_{axis}"]
            Q.append(-kp * q[n] - kd * qd[n])
    return ca.vertcat(*Q) if isinstance(q, (ca.SX, ca.MX)) else np.array(Q, dtype=float)


def model(ship: Callable | None = None, *, gains: Mapping[str, float] | None = None,
          compiled: bool = True) -> co.Model:
    """The closed-loop model: 24 states (12 Bryant angles, 12 rates), the 16 gains unknown.

    Parameters
    ----------
    ship : callable, optional
        ``ship(t) -> 12 CasADi expressions`` in :data:`SHIP_COLUMNS` order (for simulation);
        by default the ship's motion is the measured input columns.
    gains : mapping, optional
        Fixed gains instead of unknowns (then the model has no parameters).
    compiled : bool
        Compile the model's derivative functions to machine code (``colloc.Model``'s
        option; the residual is ~2.5k operations, its per-interval Hessian ~180k).
    """
    m = co.Model("ship-stance", compiled=compiled)
    q = [m.state(c, unit="rad", scale=0.02) for c in ANGLE_COLUMNS]
    u = [m.state(c, unit="rad/s", scale=0.1) for c in RATE_COLUMNS]
    if ship is None:
        s = [m.known_input(c, unit=_unit(c), scale=_scale(c)) for c in SHIP_COLUMNS]
    else:
        s = list(ship(m.time))
    if gains is None:
        p = {}
        for name in TRUE:
            kind, joint = name.split("_")[0], name.split("_")[1]
            p[name] = m.parameter(name, unit="N·m/rad" if kind == "kp" else "N·m·s/rad",
                                  scale=GUESS[name],
                                  guess=GUESS[name], bounds=(0.0, np.inf),
                                  description=f"{'stiffness' if kind == 'kp' else 'damping'} gain, "
                                              f"{joint} {'roll' if name.endswith('x') else 'pitch'}")
    else:
        p = dict(gains)
    qv, uv = ca.vertcat(*q), ca.vertcat(*u)
    ud = ca.vertcat(*[m.der(x) for x in u])
    eq = chain().equations(qv, uv, ud, ca.vertcat(*s[0:3]), ca.vertcat(*s[3:6]), ca.vertcat(*s[6:9]),
                           ca.vertcat(*s[9:12]))
    for qi, ui in zip(q, u):
        m.set_der(qi, ui)
    m.add_residual(eq.residual - generalized_forces(qv, uv, p), name="eom", scale=10.0)
    return m


def _unit(column: str) -> str:
    if column.endswith("_rate"):
        return "rad/s"
    if column.endswith("_acc"):
        return "rad/s^2"
    return "m/s^2" if column.startswith("ship_acc") else "rad"


def _scale(column: str) -> float:
    return {"rad": 0.05, "rad/s": 0.05, "rad/s^2": 0.1, "m/s^2": 0.5}[_unit(column)]
