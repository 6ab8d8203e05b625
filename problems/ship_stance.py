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
from colloc_problems.ship_stance_model import (
    ANGLE_COLUMNS,
    DECK_COLUMNS,
    DEFAULT_DATA,
    GUESS,
    IPOPT_OPTIONS,  # noqa: F401 (the registry reads it here)
    JOINTS,
    OPTIONAL_COLUMNS,
    PASSIVE_YAW,
    RADIAN_COLUMNS,
    RATE_COLUMNS,
    REQUIRED_COLUMNS,
    SEGMENTS,
    SHIP_COLUMNS,
    SIGMA_ANGLE,
    SIGMA_RATE,
    STATE_NAMES,
    TRUE,
    chain,
    generalized_forces,
    model,
)

import colloc as co

__all__ = [
    "SEGMENTS", "PASSIVE_YAW", "JOINTS", "TRUE", "SHIP_COLUMNS", "ANGLE_COLUMNS", "RATE_COLUMNS",
    "DECK_COLUMNS", "STATE_NAMES", "REQUIRED_COLUMNS", "OPTIONAL_COLUMNS", "DEFAULT_DATA",
    "SIGMA_ANGLE", "SIGMA_RATE", "GUESS", "chain", "model", "problem", "load_trial",
    "ship_motion", "generalized_forces", "simulate_trial",
]


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
