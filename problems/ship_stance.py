"""A 4-link spatial human standing on a 6-DoF ship deck: the 16 roll/pitch PD gains.

The model of Bourgeois & Langlois (2015, "Derivation and validation of a spatial multi-link
human postural stability model", Trans. CSME 39(4)): shanks, thighs, trunk with arms, head
and neck, joined by 3-DoF Bryant joints (ankle, knee, hip, neck) to each other and, feet
flat, to a deck with prescribed 6-DoF motion (their Fig. 2; 12 + 6 DoF).  Conventions,
segment data and joint control are those of docs/contracts.md §2 ``ship-stance``::

        o  head and neck (neck joint at C7/T1)
        |
        |  trunk with arms
        o  hip
        |  thighs
        o  knee
        |  shanks
     ___o___ ankle, fixed to the deck at the stance point (roll, pitch, yaw, heave, …)

Joint control as generalized forces on the Bryant coordinates, Q_jk = −kp_j_k·q_jk −
kd_j_k·q̇_jk for k ∈ {x, y} (unknown), and a known passive yaw spring-damper for k = z.
The equations of motion come from :class:`colloc.Chain` (Kane's method, the paper's Eqs. 1–5)
in implicit form M(q)·q̈ + h(q, q̇, ship) − Q = 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import casadi as ca
import numpy as np

import colloc as co

__all__ = [
    "SEGMENTS", "PASSIVE_YAW", "JOINTS", "TRUE", "SHIP_COLUMNS", "ANGLE_COLUMNS", "RATE_COLUMNS",
    "DECK_COLUMNS", "STATE_NAMES", "REQUIRED_COLUMNS", "OPTIONAL_COLUMNS", "DEFAULT_DATA",
    "SIGMA_ANGLE", "SIGMA_RATE", "GUESS", "chain", "model", "problem", "load_trial",
    "ship_motion", "generalized_forces", "simulate_trial",
]

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


def problem(trials: co.Trial | Sequence[co.Trial], *, sigma_angle: float = SIGMA_ANGLE,
            sigma_rate: float = SIGMA_RATE, compiled: bool = True) -> co.Problem:
    """Fit the joint angles (weight 1/σ²), and the joint rates when every trial has them
    (``compiled``: see :func:`model`)."""
    trials = [trials] if isinstance(trials, co.Trial) else list(trials)
    fit = {c: sigma_angle**-2 for c in ANGLE_COLUMNS}
    if trials and all(all(c in t for c in RATE_COLUMNS) for t in trials):
        fit |= {c: sigma_rate**-2 for c in RATE_COLUMNS}
    return co.Problem(model(compiled=compiled), trials, fit=fit, name="ship-stance")


def load_trial(path) -> co.Trial:
    """Read a ship-stance CSV (docs/contracts.md §1): ``time``, the 12 ship and 12 joint-angle columns,
    optionally the joint rates and the deck force and moment.  Angles must be in radians: a
    value beyond ±π in an angle column is refused as probably degrees."""
    trial = co.Trial.from_csv(path, required=REQUIRED_COLUMNS, optional=OPTIONAL_COLUMNS, min_rows=10)
    for column in RADIAN_COLUMNS:
        values = trial[column]
        bad = np.flatnonzero(np.abs(values) > np.pi)
        if bad.size:
            row = int(bad[0])
            raise co.DataError(
                f"{path}: column '{column}', data row {row + 1} (time {trial.time[row]:g} s): "
                f"{values[row]:g} is beyond ±π; angles must be in radians, not degrees")
    return trial


def ship_motion(seed: int = 0, *, roll: float = 0.08, pitch: float = 0.03, yaw: float = 0.02,
                surge: float = 0.3, sway: float = 0.5, heave: float = 0.8,
                periods: Sequence[float] = (4.0, 5.5, 7.0, 9.0, 11.0, 14.0, 3.0, 2.2)):
    """Seeded deck motion as sums of sines with exact derivatives.

    Each of the six motions is Σ_i a·w_i·sin(ω_i t + φ_i) over the wave ``periods`` with
    random weights w_i ∈ [0.3, 1] (normalised to sum 1) and phases; rotations give the Bryant
    angles (amplitude ``roll``, ``pitch``, ``yaw`` in rad), translations the stance point's
    inertial displacement (amplitude in m), whose second derivative, rotated into the deck
    frame, is the ``ship_acc_*`` input.

    Returns
    -------
    (numeric, symbolic): ``numeric(t)`` → array (len(t), 12) in :data:`SHIP_COLUMNS` order;
    ``symbolic(t)`` → list of 12 CasADi expressions.
    """
    rng = np.random.default_rng(seed)
    omega = 2 * np.pi / np.asarray(periods, dtype=float)
    amps, phases = [], []
    for amplitude in (roll, pitch, yaw, surge, sway, heave):
        w = rng.uniform(0.3, 1.0, omega.size)
        amps.append(amplitude * w / w.sum())
        phases.append(rng.uniform(0.0, 2 * np.pi, omega.size))
    amps, phases = np.array(amps), np.array(phases)

    def numeric(t):
        t = np.atleast_1d(np.asarray(t, dtype=float))
        arg = t[:, None, None] * omega + phases                # (time, motion, harmonic)
        d0 = (amps * np.sin(arg)).sum(axis=2)
        d1 = (amps * omega * np.cos(arg)).sum(axis=2)
        d2 = -(amps * omega**2 * np.sin(arg)).sum(axis=2)
        acc_S = np.einsum("kji,kj->ki", _bryant_numeric(d0[:, :3]), d2[:, 3:])   # R_NSᵀ·a_N
        return np.hstack([d0[:, :3], d1[:, :3], d2[:, :3], acc_S])

    def symbolic(t):
        d0, d1, d2 = [], [], []
        for i in range(6):
            arg = t * ca.DM(omega) + ca.DM(phases[i])
            d0.append(ca.dot(ca.DM(amps[i]), ca.sin(arg)))
            d1.append(ca.dot(ca.DM(amps[i] * omega), ca.cos(arg)))
            d2.append(-ca.dot(ca.DM(amps[i] * omega**2), ca.sin(arg)))
        acc_S = co.bryant(ca.vertcat(*d0[0:3])).T @ ca.vertcat(*d2[3:6])
        return d0[0:3] + d1[0:3] + d2[0:3] + [acc_S[0], acc_S[1], acc_S[2]]

    return numeric, symbolic


def _bryant_numeric(angles: np.ndarray) -> np.ndarray:
    """Rx·Ry·Rz for rows of Bryant angles (numpy, shape (k, 3, 3))."""
    a, b, c = angles[:, 0], angles[:, 1], angles[:, 2]
    ca_, sa, cb, sb, cc, sc = np.cos(a), np.sin(a), np.cos(b), np.sin(b), np.cos(c), np.sin(c)
    return np.stack([
        np.stack([cb * cc, -cb * sc, sb], axis=1),
        np.stack([sa * sb * cc + ca_ * sc, -sa * sb * sc + ca_ * cc, -sa * cb], axis=1),
        np.stack([-ca_ * sb * cc + sa * sc, ca_ * sb * sc + sa * cc, ca_ * cb], axis=1)], axis=1)


def simulate_trial(gains: Mapping[str, float] | None = None, *, duration: float = 60.0,
                   rate: float = 100.0, seed: int = 0, noise: bool = True, rates: bool = True,
                   deck: bool = True, sigma_angle: float = SIGMA_ANGLE, sigma_rate: float = SIGMA_RATE,
                   sigma_ship: float = 1e-4, name: str = "ship_stance.csv",
                   return_clean: bool = False, ship: Callable | None = None):
    """Synthetic trial: the closed loop under :func:`ship_motion` (``seed``), integrated by
    ``scipy.integrate.solve_ivp`` (LSODA, rtol 1e-10, atol 1e-11) from upright rest, sampled
    at ``rate``; Gaussian noise σ_angle on angles, σ_rate on rates and a small ``sigma_ship``
    (relative to each ship column's standard deviation) on the ship columns.

    ``ship``: another deck motion, ``ship(t) -> array (len(t), 12)`` in :data:`SHIP_COLUMNS`
    order, e.g. a sea state through the supply vessel's RAOs,
    ``colloc.ship_motion(colloc.SeaState(hs=2.5, tp=8.0, heading=150.0), seed=0)``
    (``seed`` then only seeds the noise).

    Returns
    -------
    Trial, or (noisy Trial, clean Trial) with ``return_clean=True``.
    """
    from scipy.integrate import solve_ivp

    gains = dict(TRUE if gains is None else gains)
    numeric = ship_motion(seed)[0] if ship is None else ship
    f = chain().function()   # the same equations, integrated here by scipy (not by collocation)

    def rhs(t, x):
        s = numeric(t)[0]
        out = f(x[:12], x[12:], np.zeros(12), s[0:3], s[3:6], s[6:9], s[9:12])
        M, h = np.asarray(out[1]), np.asarray(out[2]).ravel()
        return np.concatenate([x[12:], np.linalg.solve(M, generalized_forces(x[:12], x[12:], gains) - h)])

    time = np.arange(int(round(duration * rate)) + 1) / rate
    sol = solve_ivp(rhs, (0.0, time[-1]), np.zeros(24), method="LSODA", rtol=1e-10, atol=1e-11,
                    t_eval=time)
    if not sol.success:
        raise RuntimeError(f"ship-stance simulation failed: {sol.message}")
    ship = numeric(time)
    clean = {c: ship[:, i] for i, c in enumerate(SHIP_COLUMNS)}
    clean |= {c: sol.y[i] for i, c in enumerate(ANGLE_COLUMNS)}
    if rates:
        clean |= {c: sol.y[12 + i] for i, c in enumerate(RATE_COLUMNS)}
    if deck:
        forces, body = [], chain()
        for k, t in enumerate(time):
            x = sol.y[:, k]
            s = ship[k]
            eq = body.equations(x[:12], x[12:], rhs(t, x)[12:], s[0:3], s[3:6], s[6:9], s[9:12])
            forces.append(np.concatenate([np.asarray(eq.deck_force).ravel(),
                                          np.asarray(eq.deck_moment).ravel()]))
        forces = np.array(forces)
        clean |= {c: forces[:, i] for i, c in enumerate(DECK_COLUMNS)}
    rng = np.random.default_rng([seed, 1])
    noisy = {}
    for c, v in clean.items():
        if not noise:
            noisy[c] = v
        elif c in ANGLE_COLUMNS:
            noisy[c] = v + sigma_angle * rng.standard_normal(v.size)
        elif c in RATE_COLUMNS:
            noisy[c] = v + sigma_rate * rng.standard_normal(v.size)
        elif c in SHIP_COLUMNS:
            noisy[c] = v + sigma_ship * np.std(v) * rng.standard_normal(v.size)
        else:
            noisy[c] = v
    trial = co.Trial(time, noisy, name=name)
    if return_clean:
        return trial, co.Trial(time, clean, name=name)
    return trial
