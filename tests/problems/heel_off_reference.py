"""An event-driven simulator of the `heel-off` contract, written for the tests apart from the library.

Neither colloc's contact simulator nor its transcription is used: the equations of motion come
from a sympy Lagrangian of the contract's geometry (docs/contracts.md §2 `heel-off`) in each
mode's own coordinates — ``flat`` (the foot held: θ_body), ``toe`` (the foot pivoting on the
toe: θ_foot, θ_body), ``heel`` (pivoting on the heel) — integrated by scipy's ``solve_ivp`` with
terminal events:

* flat → toe when the heel's normal force falls through 0, flat → heel when the toe's does
  (the contact forces from the full-coordinate equations M·q̈ − f = Cᵀλ, C the held contacts'
  rows: heel normal, toe normal and tangential when flat; the pivot's two rows otherwise);
* toe/heel → flat when θ_foot crosses 0 (the lifted point lands): the inelastic impact stops
  the foot and keeps the body's generalized momentum (its coordinate θ_body bears no impulse);
* a pivot whose normal force falls through 0 (both contacts lost) is an error.

Platform acceleration a(t) enters as the force −m·a on each body; ankle torque T = −kp·θ_body −
kd·ω_body on the body, −T on the foot.  Angles clockwise positive, θ_foot > 0 lifts the heel."""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

MASS_FOOT, INERTIA_FOOT, MASS_BODY, INERTIA_BODY, LENGTH, GRAVITY = 2.0, 0.01, 70.0, 10.0, 0.90, 9.81
POINTS = {"heel": (-0.05, -0.08), "toe": (0.15, -0.08), "com": (0.05, -0.04)}
#: Seed pulses (start s, amplitude m/s², duration s) of the contract's records.
PULSES = ((0.5, -6.0, 0.5), (3.0, 3.0, 0.6), (5.5, -7.0, 0.4), (8.0, 2.5, 0.5), (10.5, -5.0, 0.6),
          (13.0, 3.5, 0.5), (15.5, -6.5, 0.45), (18.0, 2.0, 0.6))


def platform(pulses=PULSES):
    """a(t): each pulse A·sin(2πs)·(1 − cos 2πs)/2 for s = (t − t0)/D in [0, 1] (smooth, and the
    platform ends at rest)."""
    table = np.array(pulses, dtype=float).reshape(-1, 3)

    def acc(t):
        s = (t - table[:, 0]) / table[:, 2]
        on = (s >= 0.0) & (s <= 1.0)
        return float(np.sum(np.where(on, table[:, 1] * np.sin(2 * np.pi * s) * (1.0 - np.cos(2 * np.pi * s)) / 2.0,
                                     0.0)))
    return acc


def _full_mechanics():
    """Lambdified M(q), f(q, q̇, a, T) and per foot point its position and Jacobian, q = (x_A, y_A, θ_f, θ_b)."""
    q = sp.Matrix(sp.symbols("xa ya thf thb"))
    qd = sp.Matrix(sp.symbols("vxa vya wf wb"))
    a, torque = sp.symbols("a torque")

    def on_foot(r):
        c, s = sp.cos(q[2]), sp.sin(q[2])
        return sp.Matrix([q[0] + r[0] * c + r[1] * s, q[1] - r[0] * s + r[1] * c])

    g_foot = on_foot(POINTS["com"])
    g_body = sp.Matrix([q[0] + LENGTH * sp.sin(q[3]), q[1] + LENGTH * sp.cos(q[3])])
    j_foot, j_body = g_foot.jacobian(q), g_body.jacobian(q)
    kinetic = (MASS_FOOT * (j_foot * qd).dot(j_foot * qd) + MASS_BODY * (j_body * qd).dot(j_body * qd)
               + INERTIA_FOOT * qd[2] ** 2 + INERTIA_BODY * qd[3] ** 2) / 2
    potential = GRAVITY * (MASS_FOOT * g_foot[1] + MASS_BODY * g_body[1])
    momentum = sp.Matrix([sp.diff(kinetic, v) for v in qd])
    mass = momentum.jacobian(qd)
    # d/dt ∂K/∂q̇ = M q̈ + (∂(∂K/∂q̇)/∂q) q̇; Lagrange: M q̈ = ∂K/∂q − ∂V/∂q − (∂p/∂q) q̇ + Q
    applied = (-a * (MASS_FOOT * j_foot[0, :] + MASS_BODY * j_body[0, :]).T
               + sp.Matrix([0, 0, -torque, torque]))
    force = (sp.Matrix([sp.diff(kinetic - potential, v) for v in q]) - momentum.jacobian(q) * qd + applied)
    out = {"mass": sp.lambdify([q], mass, "numpy"), "force": sp.lambdify([q, qd, a, torque], force, "numpy")}
    for name in ("heel", "toe"):
        p = on_foot(POINTS[name])
        out[name] = (sp.lambdify([q], p, "numpy"), sp.lambdify([q], p.jacobian(q), "numpy"))
    return out


_MECH: dict = {}


def _mech() -> dict:
    if not _MECH:
        _MECH.update(_full_mechanics())
    return _MECH


def _ankle_on_pivot(pivot: str, th_f: float) -> np.ndarray:
    """The ankle's position with the foot turned by θ_f about its pivot at the pivot's flat spot."""
    r = np.array(POINTS[pivot])
    ground = np.array([0.0, 0.08]) + r  # the ankle of the flat foot is above the origin, 0.08 m high
    c, s = np.cos(th_f), np.sin(th_f)
    return ground - np.array([r[0] * c + r[1] * s, -r[0] * s + r[1] * c])


def full_state(mode: str, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, q̇, J) of the mode's coordinates y (flat: [θ_b, ω_b]; pivots: [θ_f, θ_b, ω_f, ω_b]); J = ∂q/∂s."""
    if mode == "flat":
        q = np.array([0.0, 0.08, 0.0, y[0]])
        jac = np.array([[0.0], [0.0], [0.0], [1.0]])
        return q, jac @ [y[1]], jac
    th_f, th_b, w_f, w_b = y
    r = np.array(POINTS[mode])
    c, s = np.cos(th_f), np.sin(th_f)
    d_ankle = -np.array([-r[0] * s + r[1] * c, -r[0] * c - r[1] * s])  # ∂A/∂θ_f
    q = np.array([*_ankle_on_pivot(mode, th_f), th_f, th_b])
    jac = np.array([[d_ankle[0], 0.0], [d_ankle[1], 0.0], [1.0, 0.0], [0.0, 1.0]])
    return q, jac @ [w_f, w_b], jac


def _held(mode: str, q) -> np.ndarray:
    """The held contacts' rows C (normal: y, tangential: x) of the full coordinates."""
    m = _mech()
    rows = {"flat": (("heel", 1), ("toe", 1), ("toe", 0)), "toe": (("toe", 1), ("toe", 0)),
            "heel": (("heel", 1), ("heel", 0))}[mode]
    return np.array([np.asarray(m[p][1](q), dtype=float)[k] for p, k in rows])


def rates(mode: str, y, a: float, kp: float, kd: float) -> tuple[np.ndarray, np.ndarray]:
    """(ẏ, normal forces of the held contacts) in ``mode``: the reduced equations Jᵀ(M q̈ − f) = 0 with
    q̈ = J s̈ + J̇ ṡ (J̇ ṡ by a central difference of J along ṡ), then λ from Cᵀλ = M q̈ − f."""
    m = _mech()
    q, qd, jac = full_state(mode, y)
    torque = -kp * q[3] - kd * qd[3]
    mass = np.asarray(m["mass"](q), dtype=float)
    force = np.asarray(m["force"](q, qd, a, torque), dtype=float).ravel()
    n = jac.shape[1]
    sdot = np.asarray(y[n:], dtype=float)
    h = 1e-6
    yp, ym = np.array(y, dtype=float), np.array(y, dtype=float)
    yp[:n] += h * sdot
    ym[:n] -= h * sdot
    bias = (full_state(mode, yp)[2] - full_state(mode, ym)[2]) @ sdot / (2 * h)
    sdd = np.linalg.solve(jac.T @ mass @ jac, jac.T @ (force - mass @ bias))
    qdd = jac @ sdd + bias
    held = _held(mode, q)
    lam = np.linalg.lstsq(held.T, mass @ qdd - force, rcond=None)[0]
    return np.concatenate([sdot, sdd]), lam


def _contract(mode: str, y) -> np.ndarray:
    """[θ_body, θ_foot, ω_body, ω_foot] of the mode's coordinates."""
    return np.array([y[0], 0.0, y[1], 0.0]) if mode == "flat" else np.array([y[1], y[0], y[3], y[2]])


def _landing(mode: str, y) -> np.ndarray:
    """The flat state after the lifted point lands: the foot stops, the generalized momentum of
    θ_body (row 4 of M q̇) is kept."""
    q, qd, _ = full_state(mode, y)
    mass = np.asarray(_mech()["mass"](q), dtype=float)
    return np.array([y[1], float(mass[3] @ qd) / mass[3, 3]])


def simulate(kp: float, kd: float, time, acc, *, rtol: float = 1e-10, atol: float = 1e-12):
    """States [θ_body, θ_foot, ω_body, ω_foot] at ``time`` from rest (foot flat, body upright) and
    the events ``[(time, from, to), ...]``.  Raises RuntimeError when both contacts are lost."""
    time = np.asarray(time, dtype=float)
    out = np.full((len(time), 4), np.nan)
    events = []
    mode, y, t = "flat", np.zeros(2), float(time[0])
    while t < time[-1]:
        def f(tt, yy, mode=mode):
            return rates(mode, yy, acc(tt), kp, kd)[0]

        if mode == "flat":
            def heel_off(tt, yy):
                return rates("flat", yy, acc(tt), kp, kd)[1][0]

            def toe_off(tt, yy):
                return rates("flat", yy, acc(tt), kp, kd)[1][1]
            watched = [heel_off, toe_off]
            targets = ["toe", "heel"]
        else:
            def lands(tt, yy):
                return yy[0]

            def lost(tt, yy, mode=mode):
                return rates(mode, yy, acc(tt), kp, kd)[1][0]
            watched = [lands, lost]
            targets = ["flat", None]
        for w in watched:
            w.terminal, w.direction = True, -1.0
        if mode == "heel":
            watched[0].direction = 1.0  # θ_f < 0 rises back to 0 (on the toe it falls back to 0)
        sol = solve_ivp(f, (t, float(time[-1])), y, method="DOP853", rtol=rtol, atol=atol, events=watched,
                        dense_output=True, max_step=0.01)
        end = float(sol.t[-1])
        sel = (time >= t - 1e-12) & (time <= end + 1e-12)
        out[sel] = np.array([_contract(mode, sol.sol(tt)) for tt in time[sel]])
        fired = [k for k, te in enumerate(sol.t_events) if len(te)]
        if not fired:
            break
        k = fired[0]
        y_end = sol.y_events[k][0]
        if targets[k] is None:
            raise RuntimeError(f"heel-off reference: both contacts lost at t = {end:.4f} s")
        if mode == "flat":
            new = targets[k]
            y = np.array([0.0, y_end[0], 0.0, y_end[1]])  # the foot starts turning from rest
        else:
            new = "flat"
            y = _landing(mode, y_end)
        events.append((end, mode, new))
        mode, t = new, end
    return out, events


def record(kp: float = 900.0, kd: float = 250.0, *, duration: float = 20.0, rate: float = 100.0,
           sigma_theta_deg: float = 0.2, sigma_omega_deg: float = 1.0, sigma_acc: float = 0.05, seed: int = 0,
           pulses=PULSES):
    """A record at ``rate`` Hz: (time, signals dict of the four states and ``platform_acc``, events).
    Seeded Gaussian noise (σ 0 for a clean record) on θ's, ω's and the platform acceleration."""
    n = round(duration * rate)
    time = np.arange(n + 1) / rate
    acc = platform([p for p in pulses if p[0] < duration])
    states, events = simulate(kp, kd, time, acc)
    rng = np.random.default_rng(seed)
    sigmas = (np.deg2rad(sigma_theta_deg),) * 2 + (np.deg2rad(sigma_omega_deg),) * 2
    names = ("theta_body", "theta_foot", "omega_body", "omega_foot")
    signals = {nm: states[:, i] + (rng.normal(0.0, s, n + 1) if s else 0.0)
               for i, (nm, s) in enumerate(zip(names, sigmas))}
    a = np.array([acc(t) for t in time])
    signals["platform_acc"] = a + (rng.normal(0.0, sigma_acc, n + 1) if sigma_acc else 0.0)
    return time, signals, events
