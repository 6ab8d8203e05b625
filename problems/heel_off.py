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
simulated by :func:`colloc.simulate_contact`.  Between the samples of ``platform_acc`` the
platform acceleration is the not-a-knot cubic spline through them.

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

__all__ = ["BODY", "COLUMNS", "DEFAULT_DATA", "GUESS", "MODES", "NAMES", "OPTIONAL_COLUMNS", "PULSES",
           "STATE_NAMES", "TRUE", "HeelOffTrial", "contact_system", "detect_modes", "excitation", "identify",
           "identify_result", "load_trial", "make_trial", "mode_functions", "problem", "simulate", "write_trial"]

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


def spline(time, values):
    """a(t) by the not-a-knot cubic spline through the samples (as in the identification)."""
    from scipy.interpolate import CubicSpline

    sp = CubicSpline(np.asarray(time, dtype=float), np.asarray(values, dtype=float))
    return lambda t: float(sp(t))


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
    (states in :data:`STATE_NAMES` order).  ``acc`` (a function of t) overrides the cubic
    spline through ``platform_acc``.  A lost contact raises :class:`colloc.SolveFailed`."""
    time = np.asarray(time, dtype=float)
    acc = acc or spline(time, platform_acc)
    system = contact_system(acc, params)
    sim = co.simulate_contact(system, full_state(state0), (time[0], time[-1]), params, t_eval=time,
                              rtol=rtol, atol=atol)
    if sim.status != "ok":
        raise co.SolveFailed(f"heel-off: {sim.message} (losing both contacts is an error, contract `heel-off`)")
    return contract_state(sim.x), sim


def mode_of(sim_mode: str) -> str:
    """The contract's mode name of a simulator mode (active contacts)."""
    return {"heel+toe": "flat", "toe": "toe", "heel": "heel"}[sim_mode]


# ---------------------------------------------------------------------------------------------
# records


@dataclass(frozen=True)
class HeelOffTrial:
    """One record: sample ``time`` (s), the states measured (``signals``: name → array; θ's
    always, ω's when given) and ``platform_acc`` (m/s²)."""

    name: str
    time: np.ndarray
    signals: dict
    platform_acc: np.ndarray
    source: str = ""

    def renamed(self, name: str) -> HeelOffTrial:
        return HeelOffTrial(name, self.time, self.signals, self.platform_acc, self.source)


#: Platform pulses of the seed records: (start s, amplitude m/s², duration s), one every 2.5 s;
#: backwards (negative) pulses tip the body onto the toes, forwards ones onto the heels.
PULSES = ((0.5, -6.0, 0.5), (3.0, 3.0, 0.6), (5.5, -7.0, 0.4), (8.0, 2.5, 0.5), (10.5, -5.0, 0.6),
          (13.0, 3.5, 0.5), (15.5, -6.5, 0.45), (18.0, 2.0, 0.6))
#: Measurement noise of the seed's noisy records (rad, rad/s); platform_acc is exact.
SIGMA_THETA = float(np.deg2rad(0.1))
SIGMA_OMEGA = float(np.deg2rad(1.0))


def excitation(pulses=PULSES):
    """a(t) (m/s²): a sum of smooth pulses A·sin(2πs)·(1 − cos 2πs)/2, s = (t − t0)/D in [0, 1]
    (each starts and ends with zero acceleration, jerk and snap; the platform ends at rest)."""
    pulses = [tuple(map(float, p)) for p in pulses]

    def acc(t):
        a = 0.0
        for t0, amp, dur in pulses:
            s = (t - t0) / dur
            if 0.0 <= s <= 1.0:
                a += amp * np.sin(2 * np.pi * s) * (1 - np.cos(2 * np.pi * s)) / 2
        return a
    return acc


def make_trial(duration: float = 8.0, *, pulses=PULSES, rate: float = 100.0, noise: bool = True, seed: int = 0,
               params: Mapping[str, float] = TRUE, name: str = "heel_off.csv", omegas: bool = True):
    """A synthetic record from rest (foot flat, body upright) by :func:`simulate` with the
    smooth :func:`excitation`; seeded Gaussian noise σ_θ = 0.1°, σ_ω = 1°/s when ``noise``.
    Returns ``(trial, sim)`` (the simulation holds the true events)."""
    n = int(round(duration * rate))
    time = np.arange(n + 1) / rate
    acc = excitation([p for p in pulses if p[0] < duration])
    states, sim = simulate(params, time, None, acc=acc)
    signals = dict(zip(STATE_NAMES, states.T.copy()))
    if noise:
        rng = np.random.default_rng(seed)
        for k in STATE_NAMES:
            signals[k] = signals[k] + rng.normal(0.0, SIGMA_THETA if k.startswith("theta") else SIGMA_OMEGA, n + 1)
    if not omegas:
        signals = {k: v for k, v in signals.items() if k.startswith("theta")}
    return HeelOffTrial(name, time, signals, np.array([acc(t) for t in time])), sim


def load_trial(path, missing: str = "error") -> HeelOffTrial:
    """Read a `heel-off` CSV (``time, theta_body, theta_foot, platform_acc``, optionally
    ``omega_body, omega_foot``); bad files raise :class:`colloc.DataError` naming the problem."""
    if missing != "error":
        raise co.OptionsError("heel-off: --missing allow is not supported (every sample is needed)")
    trial = co.Trial.from_csv(path, required=COLUMNS[1:], optional=OPTIONAL_COLUMNS, min_rows=3)
    time = np.asarray(trial.time, dtype=float)
    signals = {c: np.asarray(trial.signals[c], dtype=float) for c in (*STATE_NAMES,) if c in trial.signals}
    dt = np.diff(time)
    if np.ptp(dt) > 1e-6 * np.mean(dt):
        i = int(np.argmax(np.abs(dt - np.median(dt))))
        raise co.DataError(f"{path}: column 'time', row {i + 2} (line {i + 3} of the file): the samples must be "
                           f"evenly spaced (step {dt[i]:.6g} s, median {np.median(dt):.6g} s)")
    return HeelOffTrial(Path(path).name, time, signals, np.asarray(trial.signals["platform_acc"], dtype=float),
                        str(path))


def write_trial(trial: HeelOffTrial, path) -> None:
    """Write a record as a `heel-off` CSV, atomically."""
    names = [c for c in (*STATE_NAMES,) if c in trial.signals]
    cols = ["time", *names, "platform_acc"]
    data = np.column_stack([trial.time, *[trial.signals[c] for c in names], trial.platform_acc])
    rows = [",".join(cols)] + [f"{r[0]:.4f}," + ",".join(f"{v:.12g}" for v in r[1:]) for r in data]
    co.write_atomic(path, "\n".join(rows) + "\n")


def detect_modes(trial: HeelOffTrial, threshold: float | None = None) -> list[tuple[str, float, float]]:
    """The mode sequence read from θ_foot: ``[(mode, start, end), ...]`` with guessed switching
    times.  A sample is ``toe`` above ``threshold``, ``heel`` below −threshold, else ``flat``
    (default threshold: 5 times the noise of θ_foot estimated from its differences, at least
    1e-6 rad); runs shorter than two samples are merged into their neighbours.  A lift-off is
    guessed where the line through √|θ_foot| of the first lifted samples reaches zero (the heel
    rises as (t − t_lift)² from rest), a landing where the line through the last lifted samples
    does."""
    th = trial.signals["theta_foot"]
    t = trial.time
    if threshold is None:
        d = np.diff(th)
        threshold = max(1e-6, 5 * 1.4826 * float(np.median(np.abs(d - np.median(d)))) / np.sqrt(2))
    label = np.where(th > threshold, 1, np.where(th < -threshold, -1, 0))
    runs = []  # [label, first, last]
    for i, lab in enumerate(label):
        if runs and runs[-1][0] == lab:
            runs[-1][2] = i
        else:
            runs.append([lab, i, i])
    changed = True
    while changed and len(runs) > 1:
        changed = False
        for k, r in enumerate(runs):
            if r[2] - r[1] + 1 < 2:
                nb = runs[k - 1] if k > 0 else runs[k + 1]
                nb[1], nb[2] = min(nb[1], r[1]), max(nb[2], r[2])
                del runs[k]
                merged = []
                for rr in runs:
                    if merged and merged[-1][0] == rr[0]:
                        merged[-1][2] = rr[2]
                    else:
                        merged.append(rr)
                runs, changed = merged, True
                break
    dt = float(t[1] - t[0])
    mag = np.abs(th)
    out, start = [], float(t[0])
    for k, (lab, i0, i1) in enumerate(runs):
        if k + 1 == len(runs):
            end = float(t[-1])
        elif lab == 0:  # lift-off: |θ_f| grows as (t − t_lift)², so √|θ_f| is a line through t_lift
            j0, j1 = runs[k + 1][1], min(runs[k + 1][2], runs[k + 1][1] + 3)
            end = _root(t[j0:j1 + 1], np.sqrt(mag[j0:j1 + 1]), max(start, float(t[i1]) - 10 * dt), float(t[j0]))
        elif runs[k + 1][0] == 0:  # landing: |θ_f| reaches 0 with a finite speed
            j0 = max(i0, i1 - 2)
            end = _root(t[j0:i1 + 1], mag[j0:i1 + 1], float(t[i1]), float(t[i1]) + dt)
        else:  # from one pivot straight to the other: where θ_f changes sign
            end = float(t[i1] + dt * th[i1] / (th[i1] - th[i1 + 1]))
        end = max(end, start + 0.5 * dt)
        out.append((("flat", "toe", "heel")[lab], start, end))
        start = end
    return out


def _root(t, y, lo: float, hi: float) -> float:
    """Where the least-squares line through (t, y) crosses zero, clipped to [lo, hi]."""
    if len(t) < 2 or np.ptp(y) == 0:
        return float(np.clip(t[0], lo, hi))
    slope, icpt = np.polyfit(t, y, 1)
    return float(np.clip(-icpt / slope, lo, hi)) if slope != 0 else float(np.clip(t[0], lo, hi))


# ---------------------------------------------------------------------------------------------
# identification by multi-phase collocation


def _mode_q(mode: str, th_f, th_b):
    """Full coordinates q in a mode as functions of (θ_f, θ_b): the pivot stays on its spot."""
    q_flat = flat_configuration()
    if mode == "flat":
        return ca.vertcat(q_flat[0], q_flat[1], 0.0, th_b)
    r = BODY[mode]
    A = ca.DM([q_flat[0] + r[0], q_flat[1] + r[1]]) - _rot(th_f, r)
    return ca.vertcat(A, th_f, th_b)


def mode_functions() -> dict:
    """Per mode, a CasADi function (x, α, λ, a, kp, kd) → (ẋ, residual of Eq. 4, gap of the
    lifted point): x = [θ_b, θ_f, ω_b, ω_f], α the angular accelerations of the mode's
    degrees of freedom (θ_b in ``flat``; θ_f, θ_b on a pivot), λ the contact forces of
    :data:`FORCE_ROWS`.  Also ``impact``: x⁻ at a landing → x⁺ (foot stopped, generalized
    momentum of θ_b, i.e. the body's angular momentum about the ankle, conserved)."""
    F = mechanics()
    x, a, kp, kd = ca.SX.sym("x", 4), ca.SX.sym("a"), ca.SX.sym("kp"), ca.SX.sym("kd")
    out = {}
    pieces = {}
    for mode in MODES:
        s, w = ca.vertcat(x[1], x[0]), ca.vertcat(x[3], x[2])
        q = _mode_q(mode, x[1], x[0])
        Jq = ca.jacobian(q, s)
        if mode == "flat":
            alpha = ca.SX.sym("alpha", 1)
            qd = Jq[:, 1] * x[2]
            qdd = Jq[:, 1] * alpha
            xdot = ca.vertcat(x[2], 0.0, alpha, 0.0)
        else:
            alpha = ca.SX.sym("alpha", 2)
            qd = Jq @ w
            qdd = Jq @ alpha + ca.jacobian(qd, s) @ w
            xdot = ca.vertcat(x[2], x[3], alpha[1], alpha[0])
        M, f, Ph, Jh, _bh, Pt, Jt, _bt = F(q, qd, a, kp, kd)
        J = {"heel": Jh, "toe": Jt}
        C = ca.vertcat(*[J[c][1 if d == "n" else 0, :] for c, d in FORCE_ROWS[mode]])
        lam = ca.SX.sym("lam", C.shape[0])
        res = M @ qdd - f - C.T @ lam
        gap = {"flat": ca.SX(0), "toe": Ph[1], "heel": Pt[1]}[mode]
        out[mode] = ca.Function(mode, [x, alpha, lam, a, kp, kd], [xdot, res, gap])
        pieces[mode] = (M, qd)
    xm = ca.SX.sym("xm", 4)
    impacts = {}
    for mode in ("toe", "heel"):
        q = _mode_q(mode, xm[1], xm[0])
        qd = ca.jacobian(q, ca.vertcat(xm[1], xm[0])) @ ca.vertcat(xm[3], xm[2])
        M = F(q, qd, 0, 0, 0)[0]
        impacts[mode] = ca.Function(f"impact_{mode}", [xm], [ca.vertcat(xm[0], 0.0, (M[3, :] @ qd) / M[3, 3], 0.0)])
    out["impact"] = impacts
    return out


#: The least noise assumed (rad, rad/s): clean records are weighted as if this noisy.
NOISE_FLOOR = {"theta_body": 1e-5, "theta_foot": 1e-5, "omega_body": 1e-4, "omega_foot": 1e-4}


def _noise(y: np.ndarray) -> float:
    """Noise σ of a smooth signal sampled finely, from its second differences (robust)."""
    d2 = np.diff(y, 2)
    return 1.4826 * float(np.median(np.abs(d2 - np.median(d2)))) / np.sqrt(6.0)


_SPLINES: dict = {}


def _acc_at(trial: HeelOffTrial, t_sym, t_num: float):
    """a(t) by the not-a-knot cubic spline through the samples of ``platform_acc`` (a smooth
    platform motion sampled at 100 Hz is followed to O(h⁴); linear interpolation would shrink
    the peaks by O(h²) and bias kp, kd); the spline piece is the one holding ``t_num``."""
    from scipy.interpolate import CubicSpline

    key = (id(trial), trial.time.size)
    if key not in _SPLINES:
        _SPLINES.clear()
        _SPLINES[key] = CubicSpline(trial.time, trial.platform_acc)
    sp = _SPLINES[key]
    tt = trial.time
    k = int(np.clip(np.searchsorted(tt, t_num, side="right") - 1, 0, len(tt) - 2))
    d = t_sym - tt[k]
    c = sp.c[:, k]
    return ((c[0] * d + c[1]) * d + c[2]) * d + c[3]


FORCE_SCALE = 100.0  # N: contact forces (and the residuals of Eq. 4) are solved in this unit


def _build(trial: HeelOffTrial, sequence, p_num: np.ndarray, sig: dict, degree: int, fns: dict, P, intervals=None,
           glued: bool = False):
    """The NLP pieces of one record for the mode ``sequence`` with the unknowns at ``p_num``
    (kp/1000, kd/100, switching times)."""
    T = float(trial.time[-1])
    t0 = float(trial.time[0])
    nsw = len(sequence) - 1
    q, kp, kd = P["q"], P["kp"], P["kd"]
    taus = [q[2 + P["offset"] + i] for i in range(nsw)]
    tau_num = [float(p_num[2 + P["offset"] + i]) for i in range(nsw)]
    bounds = [t0, *taus, T]
    bounds_num = [t0, *tau_num, T]
    h_max = float(trial.time[1] - trial.time[0])
    first = sequence[0][0]
    x0 = ca.SX.sym("x0", 2 if first == "flat" else 4)
    X0 = ca.vertcat(x0[0], 0.0, x0[1], 0.0) if first == "flat" else x0
    phases = []
    for k, (mode, _a, _b) in enumerate(sequence):
        n = intervals[k] if intervals else max(1, int(np.ceil((bounds_num[k + 1] - bounds_num[k]) / h_max - 1e-9)))
        if k == 0:
            reset = (lambda _x, X0=X0: X0)
        elif sequence[k - 1][0] != "flat":
            reset = (lambda xm, prev=sequence[k - 1][0]: fns["impact"][prev](xm))
        else:
            reset = None
        phases.append(co.Phase(mode, bounds[k], bounds[k + 1], n, reset))
    extra_w, extra_lb, extra_ub, extra_w0, eq, ineq = [], [], [], [], [], []
    t_fun = {}

    def dynamics(mode, t, X, _t0):
        tn = float(ca.evalf(ca.substitute(t, q, ca.DM(p_num))))
        t_fun.setdefault(mode, 0)
        nal = 1 if mode == "flat" else 2
        alpha = ca.SX.sym("al", nal)
        lam = ca.SX.sym("lm", len(FORCE_ROWS[mode]))
        xdot, res, gap = fns[mode](X, alpha, lam * FORCE_SCALE, _acc_at(trial, t, tn), kp, kd)
        extra_w.extend([alpha, lam])
        extra_w0.append(np.zeros(nal))
        extra_w0.append(np.array([7.0 if d == "n" else 0.0 for _c, d in FORCE_ROWS[mode]]))
        extra_lb.append(-np.inf * np.ones(nal))
        extra_ub.append(np.inf * np.ones(nal))
        extra_lb.append(np.array([0.0 if d == "n" and not glued else -np.inf for _c, d in FORCE_ROWS[mode]]))
        extra_ub.append(np.inf * np.ones(len(FORCE_ROWS[mode])))
        eq.append(res / FORCE_SCALE)
        if mode != "flat":
            ineq.append((gap, X))
        return xdot

    sigs = {n: trial.signals[n] for n in STATE_NAMES if n in trial.signals}
    fitted = [n for n in sigs if not (glued and n.endswith("_foot"))]
    tt = trial.time

    def x_guess(t):
        out = []
        for i, n in enumerate(STATE_NAMES):
            if n in sigs:
                out.append(float(np.interp(t, tt, sigs[n])))
            else:  # ω from the differentiated angle
                ang = sigs[STATE_NAMES[i - 2]]
                out.append(float(np.interp(t, tt, np.gradient(ang, tt))))
        return np.array(out)

    tp = co.transcribe_phases(phases, dynamics, np.zeros(4), q, p_num, x_guess, degree)
    # landing: every pivot phase that is followed by another ends with θ_f = 0
    ends = [tp.blocks[k][1][-1][-1] for k, (mode, _a, _b) in enumerate(sequence[:-1]) if mode != "flat"]
    landing = [X[1] for X in ends]
    # the gap at a landing's last point is the landing condition itself (kept as an equality)
    ineq = [gap for gap, X in ineq if not any(X is E for E in ends)]
    # the phase holding each sample (at p_num)
    idx = np.clip(np.searchsorted(np.array(bounds_num[1:-1]), tt, side="right"), 0, len(sequence) - 1)
    resid, owner = [], []
    for k in range(len(sequence)):
        sel = np.flatnonzero(idx == k)
        if not sel.size:
            continue
        xs = tp.state_at(k, tt[sel])
        for xk, j in zip(xs, sel):
            for i, n in enumerate(STATE_NAMES):
                if n in fitted:
                    resid.append((xk[i] - sigs[n][j]) / sig[n])
                    owner.append(n)
    x0_guess = x_guess(t0)
    x0_guess = x0_guess[[0, 2]] if first == "flat" else x0_guess
    w = ca.vertcat(x0, tp.w, *extra_w)
    w0 = np.concatenate([x0_guess, tp.w_guess, *extra_w0])
    lbw = np.concatenate([-np.inf * np.ones(x0.shape[0] + tp.w.shape[0]), *extra_lb])
    ubw = np.concatenate([np.inf * np.ones(x0.shape[0] + tp.w.shape[0]), *extra_ub])
    return dict(w=w, w0=w0, lbw=lbw, ubw=ubw, eq=ca.vertcat(tp.g, *eq), landing=ca.vertcat(*landing),
                ineq=ca.vertcat(*ineq), resid=ca.vertcat(*resid), owner=owner, idx=idx, tp=tp, x0=x0,
                intervals=[ph.intervals for ph in phases],
                sequence=sequence, phase_bounds=bounds)


def _switch_guesses(sequence) -> list[float]:
    return [b for (_m, _a, b) in sequence[:-1]]


def identify(trials: Sequence[HeelOffTrial], guess: Mapping[str, float] | None = None, *,
             sequences: Sequence | None = None, degree: int = 3, max_rounds: int = 4, print_level: int = 0,
             max_iter: int = 500, glued: bool = False) -> dict:
    """Identify kp, kd from records sharing them, by multi-phase Radau collocation
    (:func:`colloc.transcribe_phases`) with the mode sequence of each record read from θ_foot
    (:func:`detect_modes`, or given in ``sequences``: lists of mode names), the switching times
    unknown (ordered), the contact forces variables with λ_n ≥ 0, the lifted point's gap ≥ 0 in
    the pivot phases, θ_foot = 0 at each landing followed by the inelastic impact.  Residuals
    are weighted by each signal's noise estimated from its second differences.  The samples are
    given to the phases (and a(t) to its sample intervals) at the current estimate; the problem
    is solved again until no sample changes phase.  Standard errors: Gauss–Newton, with the
    collocation equations eliminated (implicit function theorem) and the landing conditions and
    the active inequalities kept as constraints.  Returns a dict.

    ``glued=True`` is the model that keeps the foot flat (one flat phase, the contact forces
    free in sign, θ_body and ω_body fitted): the comparison that shows what ignoring heel-off
    costs."""
    from scipy.linalg import null_space
    from scipy.sparse import csc_matrix
    from scipy.sparse.linalg import splu

    start = _time.perf_counter()
    trials = list(trials)
    if not trials:
        raise co.OptionsError("heel-off: no trial")
    cur = {**GUESS, **(guess or {})}
    fns = mode_functions()
    seqs = []
    for k, tr in enumerate(trials):
        if glued:
            seqs.append([("flat", float(tr.time[0]), float(tr.time[-1]))])
        elif sequences is not None and sequences[k] is not None:
            given = list(sequences[k])
            if given and isinstance(given[0], str):
                det = detect_modes(tr)
                if [m for m, _a, _b in det] != given:
                    raise co.OptionsError(f"heel-off: {tr.name}: the given mode sequence {given} is not the one in "
                                          f"theta_foot ({[m for m, _a, _b in det]})")
                given = det
            seqs.append(given)
        else:
            seqs.append(detect_modes(tr))
    sigs = [{n: max(_noise(tr.signals[n]), NOISE_FLOOR[n]) for n in STATE_NAMES if n in tr.signals} for tr in trials]
    taus = [_switch_guesses(s) for s in seqs]
    offsets = np.cumsum([0] + [len(t) for t in taus])[:-1]
    clock = {"build_s": 0.0, "solve_s": 0.0}  # over every round and start

    def attempt(taus, cur):
        history = []
        intervals = [None] * len(trials)
        warm = None
        for rnd in range(max_rounds):
            t_build = _time.perf_counter()
            nq = 2 + sum(len(t) for t in taus)
            q = ca.SX.sym("q", nq)
            p_num = np.concatenate([[cur["kp"] / 1000.0, cur["kd"] / 100.0], *[np.asarray(t, float) for t in taus]])
            built = []
            for k, tr in enumerate(trials):
                P = {"q": q, "kp": q[0] * 1000.0, "kd": q[1] * 100.0, "offset": int(offsets[k])}
                built.append(_build(tr, seqs[k], p_num, sigs[k], degree, fns, P, intervals[k], glued))
                intervals[k] = built[-1]["intervals"]
            w = ca.vertcat(*[b["w"] for b in built])
            r = ca.vertcat(*[b["resid"] for b in built])
            eq = ca.vertcat(*[b["eq"] for b in built])
            land = ca.vertcat(*[b["landing"] for b in built])
            ineq = ca.vertcat(*[b["ineq"] for b in built])
            order = []
            for k, tr in enumerate(trials):
                tk = [q[2 + offsets[k] + i] for i in range(len(taus[k]))]
                pts = [float(tr.time[0]), *tk, float(tr.time[-1])]
                min_len = 0.25 * float(tr.time[1] - tr.time[0])
                order += [pts[i + 1] - pts[i] - min_len for i in range(len(pts) - 1)]
            order = ca.vertcat(*order)
            g = ca.vertcat(eq, land, ineq, order)
            V = ca.vertcat(q, w)
            nsamp = r.shape[0]
            solver = ca.nlpsol("heel_off", "ipopt", {"x": V, "f": 0.5 * ca.sumsqr(r) / nsamp, "g": g},
                               {"ipopt.print_level": print_level, "print_time": False, "ipopt.max_iter": max_iter,
                                "ipopt.tol": 1e-10, "ipopt.acceptable_tol": 1e-8,
                                **({"ipopt.mu_init": 1e-5} if warm is not None else {})})
            n_eq = eq.shape[0] + land.shape[0]
            lbg = np.concatenate([np.zeros(n_eq), np.zeros(ineq.shape[0] + order.shape[0])])
            ubg = np.concatenate([np.zeros(n_eq), np.inf * np.ones(ineq.shape[0] + order.shape[0])])
            lbx = np.concatenate([[1e-3, 1e-3], -np.inf * np.ones(nq - 2), *[b["lbw"] for b in built]])
            ubx = np.concatenate([np.inf * np.ones(nq), *[b["ubw"] for b in built]])
            x0 = np.concatenate([p_num, *[b["w0"] for b in built]]) if warm is None else warm
            t_solve = _time.perf_counter()
            clock["build_s"] += t_solve - t_build
            sol = solver(x0=x0, lbx=lbx, ubx=ubx, lbg=lbg, ubg=ubg)
            clock["solve_s"] += _time.perf_counter() - t_solve
            stats = solver.stats()
            stats["success"] = stats["return_status"] in ("Solve_Succeeded", "Solved_To_Acceptable_Level")
            qv = np.array(sol["x"]).ravel()[:nq]
            new_taus = [list(qv[2 + offsets[k]: 2 + offsets[k] + len(taus[k])]) for k in range(len(trials))]
            cur = {"kp": float(qv[0] * 1000.0), "kd": float(qv[1] * 100.0)}
            history.append({"round": rnd + 1, "iterations": int(stats["iter_count"]), "success": bool(stats["success"]),
                            "status": stats["return_status"], "time_s": _time.perf_counter() - start, **cur})
            same = True
            for k, tr in enumerate(trials):
                old_idx = built[k]["idx"]
                new_idx = np.clip(np.searchsorted(np.array(new_taus[k]), tr.time, side="right"), 0, len(seqs[k]) - 1)
                same = same and np.array_equal(old_idx, new_idx)
            taus = new_taus
            warm = np.array(sol["x"]).ravel()  # the same layout next round (the phases keep their intervals)
            warm[:nq] = np.concatenate([qv[:2], *[np.asarray(t, float) for t in taus]])
            if same and stats["success"]:
                break
        return dict(sol=sol, built=built, q=q, nq=nq, V=V, eq=eq, r=r, land=land, ineq=ineq, order=order, lbx=lbx,
                    n_eq=n_eq, stats=stats, taus=taus, history=history, cur=cur)

    # the switching times from θ_foot are poor when a lift is small against the noise, and the
    # fit keeps a pivot phase that is too short (a local minimum): with noisy records, start
    # also from every pivot phase widened by 60 % of its length on each side; keep the best fit
    starts = [taus]
    if not glued and any(_noise(tr.signals["theta_foot"]) > 1e-6 for tr in trials):
        wide = []
        for k, tr in enumerate(trials):
            seq = seqs[k]
            pts = [seq[0][1], *taus[k], seq[-1][2]]
            new = list(taus[k])
            for i, (m, _a, _b) in enumerate(seq):
                if m == "flat":
                    continue
                span = pts[i + 1] - pts[i]
                if i > 0 and seq[i - 1][0] == "flat":
                    new[i - 1] = max(pts[i] - 0.6 * span, 0.5 * (pts[i - 1] + pts[i]))
                if i + 1 < len(seq) and seq[i + 1][0] == "flat":
                    new[i] = min(pts[i + 1] + 0.6 * span, 0.5 * (pts[i + 1] + pts[i + 2]))
            wide.append(new)
        if wide != taus:
            starts.append(wide)
    tried = [attempt(t, dict(cur)) for t in starts]
    best = min(tried, key=lambda d: (not d["stats"]["success"], float(d["sol"]["f"])))
    sol, built, q, nq, V, eq, r, land = (best[k] for k in ("sol", "built", "q", "nq", "V", "eq", "r", "land"))
    ineq, order, lbx, n_eq, stats, taus, history, cur = (best[k] for k in ("ineq", "order", "lbx", "n_eq", "stats",
                                                                              "taus", "history", "cur"))
    history = [h for d in tried for h in d["history"]]
    # Gauss-Newton covariance: z = (kp, kd, switching times, initial states), the rest eliminated
    Vv = np.array(sol["x"]).ravel()
    x0s = [b["x0"] for b in built]
    z = ca.vertcat(q, *x0s)
    nz = z.shape[0]
    pos_z = list(range(nq))
    off = nq
    for b in built:
        pos_z += list(range(off, off + b["x0"].shape[0]))
        off += b["w"].shape[0]
    rest = np.setdiff1d(np.arange(V.shape[0]), pos_z)
    lam_x = np.array(sol["lam_x"]).ravel()
    lam_g = np.array(sol["lam_g"]).ravel()
    gi = np.array(sol["g"]).ravel()
    n_in = ineq.shape[0] + order.shape[0]
    act_g = np.flatnonzero((np.abs(lam_g[n_eq:]) > 1e-8 * max(1.0, np.max(np.abs(lam_g)))) & (gi[n_eq:] < 1e-6)) \
        if n_in else np.array([], int)
    act_x = rest[(np.abs(lam_x[rest]) > 1e-8 * max(1.0, np.max(np.abs(lam_x)))) & (
        np.abs(Vv[rest] - lbx[rest]) < 1e-6)]
    cons = ca.vertcat(land, ca.vertcat(ineq, order)[act_g.tolist()] if len(act_g) else ca.SX(0, 1),
                      V[act_x.tolist()] if len(act_x) else ca.SX(0, 1))
    Wr = V[rest.tolist()]
    fJ = ca.Function("J", [V], [ca.jacobian(eq, Wr), ca.jacobian(eq, z), ca.jacobian(r, Wr), ca.jacobian(r, z),
                                ca.jacobian(cons, Wr), ca.jacobian(cons, z), r])
    Gw, Gz, Rw, Rz, Cw, Cz, rv = fJ(Vv)
    lu = splu(csc_matrix(Gw.sparse()))
    dwdz = -lu.solve(np.asarray(Gz.full()))
    J = np.asarray(Rz.full()) + csc_matrix(Rw.sparse()) @ dwdz
    C = np.asarray(Cz.full()) + csc_matrix(Cw.sparse()) @ dwdz
    N = null_space(C) if C.shape[0] else np.eye(nz)
    rv = np.asarray(rv.full()).ravel()
    dof = max(len(rv) - N.shape[1], 1)
    s2 = float(rv @ rv) / dof
    cov = s2 * N @ np.linalg.inv(N.T @ J.T @ J @ N) @ N.T
    unit = np.array([1000.0, 100.0])
    se = np.sqrt(np.maximum(np.diag(cov)[:2], 0.0)) * unit
    cov_p = cov[:2, :2] * np.outer(unit, unit)
    switches = []
    for k, tr in enumerate(trials):
        modes = [m for m, _a, _b in seqs[k]]
        se_t = np.sqrt(np.maximum(np.diag(cov)[2 + offsets[k]: 2 + offsets[k] + len(taus[k])], 0.0))
        switches.append([{"time": float(t), "std_error": float(e), "from": modes[i], "to": modes[i + 1],
                          "kind": "landing" if modes[i] != "flat" else "lift-off"}
                         for i, (t, e) in enumerate(zip(taus[k], se_t))])
    return {"problem": "heel-off", "parameters": cur, "standard_errors": dict(zip(NAMES, se.tolist())),
            "covariance": cov_p.tolist(), "success": bool(stats["success"]), "status": stats["return_status"],
            "iterations": int(sum(h["iterations"] for h in history)), "rounds": history,
            "objective": float(sol["f"]), "residual_scale": float(np.sqrt(s2)), "noise": sigs,
            "modes": [[m for m, _a, _b in s] for s in seqs], "switches": switches,
            "time_s": _time.perf_counter() - start, **clock, "samples": int(len(rv)), "variables": int(V.shape[0]),
            "solution": Vv, "built": built, "V": V}


def problem(trials):
    """`heel-off` is hybrid: it is identified by :func:`identify` (multi-phase collocation)."""
    raise co.ProblemError("heel-off is a hybrid problem: use colloc_problems.heel_off.identify(trials)")


def identify_result(trials: Sequence[HeelOffTrial], *, method: str | None = None,
                    guess: Mapping[str, float] | None = None, bounds: Mapping[str, tuple] | None = None,
                    max_iter: int = 500, print_level: int = 0) -> co.Result:
    """:func:`identify` as a :class:`colloc.Result` (what ``colloc identify heel-off`` prints
    and writes); ``info`` holds the modes, the switching times with their standard errors,
    the rounds and the noise assumed per signal.  ``method`` (the command line's default
    passes through) and ``bounds`` are not options of this multi-phase transcription."""
    if method not in (None, "radau2"):  # "radau2": the command line's default, passed through
        raise co.OptionsError(f"--method does not apply to problem 'heel-off' (got {method}; it is identified by "
                              "its own multi-phase Radau collocation)")
    if bounds:
        raise co.OptionsError("--bounds does not apply to problem 'heel-off' (its bounds are fixed by the contract)")
    import pandas as pd

    unknown = [k for k in (guess or {}) if k not in NAMES]
    if unknown:
        raise co.OptionsError(f"--guess: unknown parameter(s) {', '.join(unknown)}; parameters: {', '.join(NAMES)}")
    out = identify(trials, guess, max_iter=max_iter, print_level=print_level)
    cov = pd.DataFrame(out["covariance"], index=list(NAMES), columns=list(NAMES))
    info = {k: out[k] for k in ("modes", "switches", "rounds", "noise", "residual_scale", "samples", "variables")}
    info["method_note"] = ("multi-phase Radau collocation (degree 3, one interval per sample) with the mode "
                           "sequence read from theta_foot; switching times unknown")
    return co.Result(problem="heel-off", method="multiphase-radau3", success=out["success"], status=out["status"],
                     message="" if out["success"] else f"IPOPT: {out['status']}", iterations=out["iterations"],
                     objective=out["objective"], parameters=out["parameters"],
                     standard_errors=out["standard_errors"], covariance=cov, trajectories={}, measurements={},
                     residuals={},
                     timings={"build_s": out["build_s"], "solve_s": out["solve_s"], "total_s": out["time_s"]},
                     num_nodes=int(out["variables"]), trials=[t.name for t in trials], versions=co.versions(),
                     units=dict(UNITS), info=info, initial_parameters={**GUESS, **(guess or {})},
                     descriptions={"kp": "ankle stiffness (T = -kp·θ_body - kd·ω_body)", "kd": "ankle damping"})
