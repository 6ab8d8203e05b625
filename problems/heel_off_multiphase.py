"""Standing with unilateral foot–ground contact: kp, kd through heel-off (Wieber & Billet 2006, §3);
the body, its simulator and the multi-phase method.  The problem ``heel-off`` is
:mod:`colloc_problems.heel_off`, which adds the complementarity method
(:mod:`colloc_problems.heel_off_complementarity`, which polishes with this module's
:func:`identify`); this module imports neither.

Planar (x forward, y up), contract `heel-off` (docs/contracts.md §2): a rigid foot on a flat platform
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
with the mode sequence read from θ_foot and ω_foot, the switching times unknown, the contact forces
variables with λ_n ≥ 0, the lifted point's gap φ ≥ 0 in the pivot phases, a landing closing
each pivot phase (θ_foot = 0, then the inelastic impact: the foot stops, the body's angular
momentum about the ankle is conserved).

Delayed feedback (``--controller PD-delay``, fitted on the library's hybrid path by
:func:`colloc_problems.heel_off_fit.identify_result` with ``delay=True``): T =
−kp·θ_body(t − τ) − kd·ω_body(t − τ), the history before the record the initial state.  This module holds its simulator (:func:`simulate` with ``tau``, the method of
steps, :func:`_simulate_delayed`) and its start (:func:`equation_error_start`, :func:`start_of`).
With τ = 0.1 s the seed gains leave little margin in the pivot phases (the flat foot's delay
margin is 0.24 s, ``colloc.delay_margin`` of the linearised loop): the shipped delayed record uses
milder pulses (:data:`DELAY_PULSES`).
"""

from __future__ import annotations

import time as _time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import casadi as ca
import numpy as np

import colloc as co

__all__ = ["BODY", "CHI2_POOR", "COLUMNS", "CONTROLLERS", "DEFAULT_DATA",
           "DELAY_PULSES", "DESCRIPTIONS", "FLAGS", "FORCE_ROWS", "FORCE_SCALE", "GAIN_FLOOR", "GUESS", "LIFT_ROW",
           "MODES", "NAMES", "NOISE_FLOOR", "OPTIONAL_COLUMNS", "PATH_ROWS", "PULSES", "SCALE", "SETTLE_TOLERANCE",
           "SIGMA_OMEGA", "SIGMA_THETA", "SIGNAL_UNITS", "STARTS", "START_LEVEL", "STATE_NAMES", "TAU_BOUNDS",
           "TAU_GUESS", "TAU_TRUE", "TIME_LIMIT", "TRUE", "UNITS", "HeelOffTrial", "chain_functions",
           "contact_system", "contract_state", "detect_modes", "equation_error_start", "excitation",
           "finish", "flat_configuration", "full_state", "identify", "load_trial", "make_trial",
           "mechanics", "mode_of", "problem", "simulate", "simulation_check", "spline", "start_of", "write_trial"]

#: Geometry and inertia (contract `heel-off`; SI units).  Foot points relative to the ankle
#: in the foot's frame (x forward, y up, foot flat).
BODY = {"heel": (-0.05, -0.08), "toe": (0.15, -0.08), "foot_com": (0.05, -0.04), "m_f": 2.0, "I_f": 0.01,
        "m_b": 70.0, "L": 0.90, "I_b": 10.0, "g": 9.81}
#: Seed-case gains.
TRUE = {"kp": 900.0, "kd": 250.0}
NAMES = ("kp", "kd")
UNITS = {"kp": "N·m/rad", "kd": "N·m·s/rad", "tau": "s"}
#: What the parameters mean.
DESCRIPTIONS = {"kp": "ankle stiffness (T = -kp·θ_body - kd·ω_body)", "kd": "ankle damping",
                "tau": "feedback delay (T = -kp·θ_body(t-tau) - kd·ω_body(t-tau))"}
#: Units of the signals (contract `heel-off`).
SIGNAL_UNITS = {"theta_body": "rad", "theta_foot": "rad", "omega_body": "rad/s", "omega_foot": "rad/s"}
#: A poor default start.
GUESS = {"kp": 600.0, "kd": 120.0}
#: The delayed feedback (``--controller PD-delay``): the delay of the shipped delayed record (s),
#: the default start of τ and its bounds.
TAU_TRUE = 0.1
TAU_GUESS = 0.05
TAU_BOUNDS = (0.0, 0.3)
#: Controllers of ``colloc identify heel-off --controller``: whether the feedback is delayed.
CONTROLLERS = {"PD": False, "PD-delay": True}
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


def _mechanics(delayed: bool = False):
    """CasADi functions of the full-coordinate mechanics: mass(q), forces(q, q̇, a, kp, kd),
    and per contact point its position, Jacobian and J̇·q̇.  ``delayed``: one more input, the
    fed-back (θ_body, ω_body) at t − τ, and T = −kp·θ_body(t − τ) − kd·ω_body(t − τ)."""
    q, qd = ca.SX.sym("q", 4), ca.SX.sym("qd", 4)
    a, kp, kd = ca.SX.sym("a"), ca.SX.sym("kp"), ca.SX.sym("kd")
    fed = ca.SX.sym("fed", 2) if delayed else ca.vertcat(q[3], qd[3])
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
    T = -kp * fed[0] - kd * fed[1]
    f[3] += T
    f[2] -= T
    outs = [M, f]
    for name in ("heel", "toe"):
        P = A + _rot(th_f, b[name])
        J = ca.jacobian(P, q)
        outs += [P, J, ca.jacobian(J @ qd, q) @ qd]
    return ca.Function("heel_off_mechanics" + ("_delayed" if delayed else ""),
                       [q, qd, a, kp, kd, *([fed] if delayed else [])], outs)


_MECH: dict = {}


def mechanics(delayed: bool = False) -> ca.Function:
    """The (cached) CasADi function of :func:`_mechanics`."""
    if delayed not in _MECH:
        _MECH[delayed] = _mechanics(delayed)
    return _MECH[delayed]


def flat_configuration() -> np.ndarray:
    """q with the foot flat, heel and toe on the ground (ankle above the origin), body upright."""
    return np.array([0.0, -BODY["heel"][1], 0.0, 0.0])


class _Evaluator:
    """Every piece of the mechanics at (t, q, q̇) by one CasADi call, kept for the next
    request at the same point (the simulator asks for M, f and each contact in turn).  With
    ``history`` (t → the fed-back (θ_body, ω_body) at t − τ) the torque is the delayed one."""

    def __init__(self, acc, kp: float, kd: float, history=None):
        self.acc, self.kp, self.kd, self.history = acc, kp, kd, history
        self.q = self.qd = self.t = None
        self.value, self.f = None, mechanics(history is not None)

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
            fed = () if self.history is None else (np.zeros(2) if t is None else self.history(t),)
            self.value = [np.asarray(v) for v in self.f(self.q, self.qd, a, self.kp, self.kd, *fed)]
        return self.value


def contact_system(acc, params: Mapping[str, float], history=None) -> co.ContactSystem:
    """The foot and body as a :class:`colloc.ContactSystem`; ``acc(t)`` the platform
    acceleration; ``params`` kp, kd; ``history(t)`` the fed-back (θ_body, ω_body) at t − τ
    for a delayed feedback (None: T = −kp·θ_body − kd·ω_body at t)."""
    ev = _Evaluator(acc, float(params["kp"]), float(params["kd"]), history)
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
    spline through ``platform_acc``.  A lost contact raises :class:`colloc.SolveFailed`.

    ``params`` with ``tau`` > 0: the delayed feedback T = −kp·θ_body(t − τ) − kd·ω_body(t − τ),
    the history before the first time the initial state, integrated by the method of steps
    (:func:`_simulate_delayed`)."""
    time = np.asarray(time, dtype=float)
    acc = acc or spline(time, platform_acc)
    tau = float(params.get("tau", 0.0))
    if not (np.isfinite(tau) and tau >= 0.0):
        raise co.ModelError(f"heel-off: the feedback delay tau must be finite and >= 0 s, got {tau!r}")
    if tau > 0.0:
        sim = _simulate_delayed(params, acc, tau, full_state(state0), time, rtol, atol)
    else:
        system = contact_system(acc, params)
        sim = co.simulate_contact(system, full_state(state0), (time[0], time[-1]), params, t_eval=time,
                                  rtol=rtol, atol=atol)
    if sim.status != "ok":
        raise co.SolveFailed(f"heel-off: {sim.message} (losing both contacts is an error, contract `heel-off`)", sim)
    return contract_state(sim.x), sim


def _simulate_delayed(params, acc, tau: float, x0: np.ndarray, time: np.ndarray, rtol: float, atol: float):
    """The delayed closed loop by the method of steps: :func:`colloc.simulate_contact` over
    pieces no longer than τ, in each of which the fed-back (θ_body, ω_body)(t − τ) is read from
    the dense output of the pieces already done (the initial state before the first time).
    A piece also ends at τ after every contact event, where the fed-back ω_body jumps (a
    landing) or bends, so that the integrator never steps over a discontinuity of the torque.
    Returns one :class:`colloc.ContactSimulation` of the whole span."""
    t0, tf = float(time[0]), float(time[-1])
    done: list = []  # (start, end, sim) of the pieces integrated
    starts: list = []
    hist0 = np.array([x0[3], x0[7]])

    def history(t):
        s = t - tau
        if s <= t0:
            return hist0
        i = int(np.searchsorted(starts, s, side="right")) - 1
        x = done[i][2].state(min(s, done[i][1]))[0]
        return np.array([x[3], x[7]])

    breaks: list = []
    t, x, active = t0, np.array(x0, dtype=float), None
    events, segments, anchors = [], [], []
    status, message = "ok", ""
    while tf - t > 1e-12 * max(1.0, abs(tf)):
        end = min([t + tau, tf, *[b for b in breaks if b > t + 1e-12]])
        system = contact_system(acc, params, history)
        sim = co.simulate_contact(system, x, (t, end), params, active=active, rtol=rtol, atol=atol)
        done.append((t, end, sim))
        starts.append(t)
        events += sim.events
        segments += sim.segments
        anchors += sim.anchors
        breaks += [e.time + tau for e in sim.events]
        if sim.status != "ok":
            status, message = sim.status, sim.message
            break
        last = sim.segments[-1]
        x = sim.state(last[1])[0]
        active = tuple(last[2].split("+"))
        t = end
    out = co.ContactSimulation(np.zeros(0), np.zeros((0, len(x0))), events, segments, [s[2] for s in segments],
                               status=status, message=message, anchors=anchors)
    te = time if status == "ok" else time[time <= t + 1e-12]
    out.t, out.x = te, out.state(te)
    return out


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
#: Platform pulses of the delayed record (τ = :data:`TAU_TRUE`): the seed pulses, backwards ones at
#: 0.8 and forwards ones at 0.3 of their amplitude.  With τ = 0.1 s the pivot phases are far less
#: stable than without delay: the full seed pulses make the foot lose both contacts (at 0.99 s), and
#: so does a forwards pulse of more than ~1 m/s² (the foot tips back onto the heel and falls over).
DELAY_PULSES = tuple((t0, amp * (0.8 if amp < 0 else 0.3), dur) for t0, amp, dur in PULSES)
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
               params: Mapping[str, float] = TRUE, name: str = "heel_off.csv", omegas: bool = True,
               tau: float | None = None):
    """A synthetic record from rest (foot flat, body upright) by :func:`simulate` with the
    smooth :func:`excitation`; seeded Gaussian noise σ_θ = 0.1°, σ_ω = 1°/s when ``noise``;
    ``tau`` (s) a feedback delay (default: ``params``' ``tau``, else none).
    Returns ``(trial, sim)`` (the simulation holds the true events)."""
    n = int(round(duration * rate))
    time = np.arange(n + 1) / rate
    acc = excitation([p for p in pulses if p[0] < duration])
    params = dict(params) if tau is None else {**params, "tau": float(tau)}
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


def detect_modes(trial: HeelOffTrial, false_alarm: float = 1e-7) -> list[tuple[str, float, float]]:
    """The mode sequence read from θ_foot (and ω_foot when measured): ``[(mode, start, end), ...]``
    with estimated switching times.

    While the foot is flat θ_foot = ω_foot = 0 exactly, so a lift shows as samples inconsistent
    with zero at the noise σ of each signal (estimated from its second differences, at least
    :data:`NOISE_FLOOR`): the sum of (θ_f/σ_θ)² (+ (ω_f/σ_ω)²) over five consecutive samples
    exceeds its χ² quantile at ``false_alarm``, and at least two samples of the stretch are 3σ
    away from zero in one signal (a single outlier is not a lift).  Each stretch is then fitted,
    by weighted least squares on θ_f and ω_f, with a hump that leaves zero with zero speed at the
    lift-off t₀ (the lifted point starts from rest) and returns to zero with a finite speed at
    the landing t₁: θ_f = (t − t₀)²·(t₁ − t)·P(s), s = (t − t₀)/(t₁ − t₀), P a polynomial (degree
    growing with the lift's length); t₀, t₁ by a grid of half samples refined by Nelder–Mead.
    The sign of the hump gives the mode: ``toe`` (heel lifted, θ_f > 0) or ``heel``.  A stretch
    whose hump does not lower the χ² by 25 (5σ) is dropped.  A foot that never lifts is one
    ``flat`` phase."""
    from scipy.optimize import minimize
    from scipy.stats import chi2

    t = np.asarray(trial.time, dtype=float)
    dt = float(t[1] - t[0])
    sig = trial.signals
    th = np.asarray(sig["theta_foot"], dtype=float)
    s_th = max(_noise(th), NOISE_FLOOR["theta_foot"])
    om = np.asarray(sig["omega_foot"], dtype=float) if "omega_foot" in sig else None
    s_om = max(_noise(om), NOISE_FLOOR["omega_foot"]) if om is not None else None
    z2 = (th / s_th) ** 2 + ((om / s_om) ** 2 if om is not None else 0.0)
    zmax = np.maximum(np.abs(th) / s_th, np.abs(om) / s_om if om is not None else 0.0)
    width, dof = 5, 5 * (2 if om is not None else 1)
    stat = np.convolve(z2, np.ones(width), mode="same")
    hot = stat > chi2.isf(false_alarm, dof)
    runs, i = [], 0
    while i < len(t):
        if hot[i]:
            j = i
            while j + 1 < len(t) and (hot[j + 1] or (j + 3 < len(t) and hot[j + 2:j + 4].any())):
                j += 1
            runs.append((i, j))
            i = j + 1
        else:
            i += 1
    lifts = []
    for i0, i1 in runs:
        if np.count_nonzero(zmax[i0:i1 + 1] > 3.0) < 2:
            continue
        lo = max(0, i0 - 8) if not lifts else max(i0 - 8, int(np.searchsorted(t, lifts[-1][2])) + 1)
        hi = min(len(t) - 1, i1 + 8)
        fit = _hump_fit(t[lo:hi + 1], th[lo:hi + 1], s_th, None if om is None else om[lo:hi + 1], s_om,
                        (t[i0], t[i1]), dt, minimize)
        if fit is None:
            continue
        sign, t0, t1, gain = fit
        if gain < 25.0:
            continue
        lo_t = float(t[0]) if not lifts else lifts[-1][2] + 0.5 * dt
        lifts.append(("toe" if sign > 0 else "heel", max(t0, lo_t), min(max(t1, t0 + dt), float(t[-1]) - 0.5 * dt)))
    out, start = [], float(t[0])
    for mode, t0, t1 in lifts:
        if t0 - start < 0.5 * dt or t1 - t0 < 0.5 * dt:
            continue
        out.append(("flat", start, t0))
        out.append((mode, t0, t1))
        start = t1
    out.append(("flat", start, float(t[-1])))
    return out


def _hump_fit(t, th, s_th, om, s_om, span, dt, minimize):
    """Fit θ_f (and ω_f) on the samples ``t`` with the hump of :func:`detect_modes` around the
    stretch ``span``: returns (sign, t₀, t₁, χ² gain over θ_f = 0) or None."""
    n_in = max(2, int(round((span[1] - span[0]) / dt)))
    deg = int(np.clip(n_in // 6, 0, 4))
    y = np.concatenate([th / s_th, om / s_om]) if om is not None else th / s_th
    base = float(y @ y)

    def design(t0, t1):
        L = t1 - t0
        u = np.clip(t - t0, 0.0, None)
        inside = (t > t0) & (t < t1)
        s = u / L
        cols = []
        for k in range(deg + 1):
            f = u ** 2 * (t1 - t) * s ** k
            df = (2 * u * (t1 - t) * s ** k - u ** 2 * s ** k + (k * u ** 2 * (t1 - t) * s ** (k - 1) / L if k else 0.0))
            f, df = np.where(inside, f, 0.0), np.where(inside, df, 0.0)
            cols.append(np.concatenate([f / s_th, df / s_om]) if om is not None else f / s_th)
        return np.column_stack(cols)

    def cost(v):
        t0, t1 = v
        if t1 - t0 < dt:
            return base + 1e6 * (dt - (t1 - t0))
        A = design(t0, t1)
        c, *_ = np.linalg.lstsq(A, y, rcond=None)
        r = y - A @ c
        return float(r @ r)

    g0 = np.arange(span[0] - 3 * dt, span[0] + 3 * dt + 1e-9, dt / 2)
    g1 = np.arange(span[1] - 3 * dt, span[1] + 3 * dt + 1e-9, dt / 2)
    best = min(((cost((a, b)), a, b) for a in g0 for b in g1), key=lambda z: z[0])
    res = minimize(cost, [best[1], best[2]], method="Nelder-Mead",
                   options={"xatol": 1e-4 * dt, "fatol": 1e-9, "initial_simplex": [[best[1], best[2]],
                                                                                    [best[1] + dt / 4, best[2]],
                                                                                    [best[1], best[2] + dt / 4]]})
    t0, t1 = (res.x if res.fun <= best[0] else np.array(best[1:]))
    A = design(t0, t1)
    c, *_ = np.linalg.lstsq(A, y, rcond=None)
    mid = A[: len(t)] @ c
    sign = float(np.sum(mid))
    if sign == 0.0:
        return None
    return np.sign(sign), float(t0), float(t1), base - min(res.fun, best[0])


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


FORCE_SCALE = 100.0  # N: the contact forces are bounded in this unit
#: One-hot mode flags (the first rows of an interval's data).
FLAGS = {"flat": (1.0, 0.0, 0.0), "toe": (0.0, 1.0, 0.0), "heel": (0.0, 0.0, 1.0)}
#: Rows of the path constraints (≥ 0) in each mode: the normal forces of the contacts that
#: hold (/ FORCE_SCALE) and the lifted point's gap (m).  A lift-off from ``flat`` happens
#: when the force of the contact that lifts reaches zero: that row is an equality at the
#: last point of the flat phase (the heel's, row 0, before ``toe``; the toe's, row 1, before ``heel``).
PATH_ROWS = {"flat": ("heel force", "toe force"), "toe": ("toe force", "heel gap"), "heel": ("heel force", "toe gap")}
LIFT_ROW = {"toe": 0, "heel": 1}
SCALE = np.array([1000.0, 100.0])  # the unknowns kp, kd are solved as kp/1000, kd/100
#: Lower bound of the scaled gains kp/1000, kd/100: it stands in for 0 (a search range, not a
#: limit of the model: a gain on it is a failure, ``parameter_at_bound``).
GAIN_FLOOR = 1e-3


def _mode_pieces(x, a, kp, kd, xd=None):
    """Per mode: (ẋ, path values) at the state x = [θ_b, θ_f, ω_b, ω_f] with the platform
    acceleration a: the mode's degrees of freedom (θ_b; θ_f and θ_b on a pivot) accelerate by
    the reduced equations of motion Jᵀ(M q̈ − f) = 0 (J = ∂q/∂(dofs)), and the contact forces
    λ of :data:`FORCE_ROWS` solve Cᵀλ = M q̈ − f (Eq. 4 of Wieber & Billet 2006, the
    contacts' rows C of the mode; no slip).  ``xd``: the state at t − τ (the torque fed back
    from its θ_body, ω_body)."""
    F = mechanics(xd is not None)
    fed = [] if xd is None else [ca.vertcat(xd[0], xd[2])]
    out = {}
    for mode in MODES:
        q = _mode_q(mode, x[1], x[0])
        if mode == "flat":
            s, w = x[0], x[2]
        else:
            s, w = ca.vertcat(x[1], x[0]), ca.vertcat(x[3], x[2])
        J = ca.jacobian(q, s)
        qd = J @ w
        bias = ca.jacobian(qd, s) @ w
        M, f, Ph, Jh, _bh, Pt, Jt, _bt = F(q, qd, a, kp, kd, *fed)
        alpha = ca.solve(J.T @ M @ J, J.T @ (f - M @ bias))
        r = M @ (J @ alpha + bias) - f
        Jc = {"heel": Jh, "toe": Jt}
        C = ca.vertcat(*[Jc[c][1 if dd == "n" else 0, :] for c, dd in FORCE_ROWS[mode]])
        lam = ca.solve(C @ C.T, C @ r) / FORCE_SCALE
        if mode == "flat":
            out[mode] = (ca.vertcat(x[2], 0.0, alpha, 0.0), ca.vertcat(lam[0], lam[1]))
        else:
            gap = Ph[1] if mode == "toe" else Pt[1]
            out[mode] = (ca.vertcat(x[2], x[3], alpha[1], alpha[0]), ca.vertcat(lam[0], gap))
    return out


def _impacts() -> dict:
    """Per pivot mode, the landing as a function x⁻ → x⁺: the foot stops flat and the
    generalized momentum of θ_b (the body's angular momentum about the ankle) is conserved."""
    F = mechanics()
    xm = ca.SX.sym("xm", 4)
    out = {}
    for mode in ("toe", "heel"):
        q = _mode_q(mode, xm[1], xm[0])
        qd = ca.jacobian(q, ca.vertcat(xm[1], xm[0])) @ ca.vertcat(xm[3], xm[2])
        M = F(q, qd, 0, 0, 0)[0]
        out[mode] = ca.Function(f"impact_{mode}", [xm], [ca.vertcat(xm[0], 0.0, (M[3, :] @ qd) / M[3, 3], 0.0)])
    return out


_CHAIN: dict = {}


def chain_functions(degree: int = 3) -> dict:
    """The collocation pieces (built once per process): ``chain`` a :class:`colloc.IntervalChain`
    of the rates ``(x, t, data, p) → ẋ`` and path constraints in every mode (``data`` = the
    mode's one-hot :data:`FLAGS`, then the knot t_k and the coefficients c0..c3 of the piece
    a(t) = ((c0·d + c1)·d + c2)·d + c3, d = t − t_k, of the cubic spline through
    ``platform_acc``; ``p`` = (kp/1000, kd/100)), each interval's times affine in the two
    switching times that bound its phase; ``landing`` per pivot mode a
    :class:`colloc.PointFunction` of [x⁻, x⁺]: θ_f(x⁻) = 0 and x⁺ = impact(x⁻)."""
    key = degree
    if key not in _CHAIN:
        x, t, data = ca.SX.sym("x", 4), ca.SX.sym("t"), ca.SX.sym("data", 8)
        p = ca.SX.sym("p", 2)
        dt = t - data[3]
        a = ((data[4] * dt + data[5]) * dt + data[6]) * dt + data[7]
        pieces = _mode_pieces(x, a, p[0] * SCALE[0], p[1] * SCALE[1])
        xdot = sum(data[i] * pieces[m][0] for i, m in enumerate(MODES))
        path = sum(data[i] * pieces[m][1] for i, m in enumerate(MODES))
        ins = [x, t, data, p]
        chain = co.IntervalChain(ca.Function("heel_off_rates", ins, [xdot]), degree,
                                 path=ca.Function("heel_off_path", ins, [path]), n_times=2, compiled=True)
        z = ca.SX.sym("z", 8)
        landing = {m: co.PointFunction(ca.Function(f"landing_{m}", [z], [ca.vertcat(z[1], z[4:] - f(z[:4]))]))
                   for m, f in _impacts().items()}
        _CHAIN[key] = {"chain": chain, "landing": landing}
    return _CHAIN[key]


#: The least noise assumed (rad, rad/s): clean records are weighted as if this noisy.
NOISE_FLOOR = {"theta_body": 1e-5, "theta_foot": 1e-5, "omega_body": 1e-4, "omega_foot": 1e-4}


def _noise(y: np.ndarray) -> float:
    """Noise σ of a smooth signal sampled finely, from its second differences (robust)."""
    d2 = np.diff(y, 2)
    return 1.4826 * float(np.median(np.abs(d2 - np.median(d2)))) / np.sqrt(6.0)


def _layout(trial: HeelOffTrial, sequence, taus: np.ndarray, tpos: int, chain, intervals=None,
            glued: bool = False) -> co.ChainLayout:
    """The layout of a record with the phase ``sequence`` (mode names), switching times
    ``taus`` (numbers; unknowns ``tpos``, ``tpos + 1``, ...) and ``intervals`` per phase
    (default: phases cut into intervals no longer than the sampling step)."""
    from scipy.interpolate import CubicSpline

    tt = trial.time
    t0, T, dt = float(tt[0]), float(tt[-1]), float(tt[1] - tt[0])
    ends = [t0, *map(float, taus), T]
    nph = len(sequence)
    if intervals is None:
        intervals = [max(1, int(np.ceil((ends[k + 1] - ends[k]) / dt - 1e-3))) for k in range(nph)]
    a, b, ha, hb, tidx, modes_i, entries, landings = [], [], [], [], [], [], [], []
    for k, mode in enumerate(sequence):
        n = intervals[k]
        fixed = [k == 0, k == nph - 1]
        idx = [-1 if fixed[0] else tpos + k - 1, -1 if fixed[1] else tpos + k]
        if k == 0 or sequence[k - 1] != "flat":
            entries.append(len(a))
        if k + 1 < nph and mode != "flat":
            landings.append((mode, k))
        for j in range(n):
            wt = np.array([1 - j / n, j / n])  # interval start = wt · (phase start, phase end)
            wh = np.array([-1 / n, 1 / n])
            a_j = sum(wt[i] * ends[k + i] for i in range(2) if fixed[i])
            h_j = sum(wh[i] * ends[k + i] for i in range(2) if fixed[i])
            a.append(a_j), ha.append(h_j)
            b.append([0.0 if fixed[i] else wt[i] for i in range(2)])
            hb.append([0.0 if fixed[i] else wh[i] for i in range(2)])
            tidx.append(idx), modes_i.append(mode)
    a, b, ha, hb, tidx = np.array(a), np.array(b), np.array(ha), np.array(hb), np.array(tidx)
    s_num = np.where(tidx >= 0, np.asarray(taus, float)[np.maximum(tidx - tpos, 0)] if len(taus) else 0.0, 0.0)
    t_num = a + (b * s_num).sum(axis=1)
    h_num = ha + (hb * s_num).sum(axis=1)
    sp = CubicSpline(tt, trial.platform_acc)
    piece = np.clip(np.searchsorted(tt, t_num + 0.5 * h_num, side="right") - 1, 0, len(tt) - 2)
    data = np.vstack([np.array([FLAGS[m] for m in modes_i]).T, tt[piece], sp.c[:, piece]])
    # a sample on a boundary (to 1 ns) is read at the start of the later interval
    interval = np.clip(np.searchsorted(t_num - 1e-9, tt, side="right") - 1, 0, len(t_num) - 1)
    d, N = chain.degree, len(a)
    lb = np.full((chain.n_path, N * d), -np.inf if glued else 0.0)
    ub = np.full((chain.n_path, N * d), np.inf)
    last = np.cumsum(intervals) * d - 1  # the last collocation point of each phase
    for k, mode in enumerate(sequence[:-1]):
        if mode != "flat":  # the landing point: the gap is 0 by the landing condition
            lb[1, last[k]] = -np.inf
        elif not glued and sequence[k + 1] != "flat":  # lift-off: the lifting contact's force reaches zero
            lb[LIFT_ROW[sequence[k + 1]], last[k]] = ub[LIFT_ROW[sequence[k + 1]], last[k]] = 0.0
    tc = (t_num[:, None] + chain.tau[None, :] * h_num[:, None]).ravel()
    sig = trial.signals
    cols = []
    for i, nme in enumerate(STATE_NAMES):
        y = sig[nme] if nme in sig else np.gradient(sig[STATE_NAMES[i - 2]], tt)
        cols.append(np.interp(tc, tt, y))
    x_guess = np.vstack(cols)
    flat = np.repeat(np.array([m == "flat" for m in modes_i]), d)
    x_guess[1:4:2, flat] = 0.0
    # times affine in the two switching times that bound each interval's phase (tindex: their
    # positions among the unknowns, −1 for a record's fixed ends)
    return co.ChainLayout(list(sequence), list(intervals), (a, b), (ha, hb), data, interval, x_guess, tindex=tidx,
                          entries=entries, landings=landings, lb_path=lb, ub_path=ub, t_num=t_num, h_num=h_num,
                          time=tt)


#: How far (in interval lengths, and in sample steps for the spline pieces) a sample may lie
#: outside the interval it is read in, after the switching times moved, for the layout to
#: count as settled: inside a phase the state is smooth and its interval polynomial is read a
#: little past the interval's ends at the order of the method.
SETTLE_TOLERANCE = 0.25


def _smoothed_trial(trial: HeelOffTrial, sequence) -> HeelOffTrial:
    """The record with each signal smoothed inside each phase of ``sequence`` (a cubic
    Savitzky–Golay filter over nine samples, never across a switching time, where ω jumps at
    a landing), θ_f and ω_f set to 0 in the flat phases: nearly a trajectory of the model, so that
    its fit converges as a clean record's does and starts the fit of the record itself."""
    from scipy.signal import savgol_filter

    t = trial.time
    edges = [s for (_m, s, _e) in sequence[1:]]
    phase = np.searchsorted(np.asarray(edges, float), t, side="right")
    signals = {}
    for name, y in trial.signals.items():
        y = np.asarray(y, dtype=float).copy()
        for k, (mode, _a, _b) in enumerate(sequence):
            idx = np.flatnonzero(phase == k)
            if mode == "flat" and name.endswith("_foot"):
                y[idx] = 0.0
            elif len(idx) >= 5:
                y[idx] = savgol_filter(y[idx], min(9, len(idx) - 1 + len(idx) % 2), 3)
        signals[name] = y
    return HeelOffTrial(trial.name, t, signals, trial.platform_acc, trial.source)


def _same_layout(old: co.ChainLayout, new: co.ChainLayout, tol: float = SETTLE_TOLERANCE) -> bool:
    """Whether the NLP of ``old`` still holds at the switching times of ``new`` (the same
    phases and intervals): every sample is read in the same phase as ``new`` would read it, and
    within ``tol`` interval lengths of the interval it is read in; every interval's spline piece
    of ``platform_acc`` within ``tol`` sample steps of the interval's midpoint."""
    phase = np.repeat(np.arange(len(old.intervals)), old.intervals)
    if not np.array_equal(phase[old.interval], phase[new.interval]):
        return False
    pos = (old.time - new.t_num[old.interval]) / new.h_num[old.interval]
    if np.any(pos < -tol) or np.any(pos > 1 + tol):
        return False
    dt = float(old.time[1] - old.time[0])
    mid = new.t_num + 0.5 * new.h_num
    knot = old.data[3]
    return bool(np.all(mid >= knot - tol * dt) and np.all(mid <= knot + (1 + tol) * dt))


class _NLP:
    """The NLP of one round (records × layouts): variables V = [kp/1000, kd/100, switching
    times, then per record its entry states (4 per entry) and collocation states], the
    constraints g = [defects, landings, path constraints, ordering of the switching times],
    the residuals r, and the block-assembled exact Hessian and Jacobian."""

    def __init__(self, trials, layouts, sigs, fitted, pieces, nq: int, tpos: list):
        chain, land = pieces["chain"], pieces["landing"]
        nx, d = chain.nx, chain.degree
        self.layouts = layouts
        n_x = [nx * len(lay.entries) + nx * d * len(lay.t[0]) for lay in layouts]
        n_var = nq + sum(n_x)
        V = ca.MX.sym("V", n_var)
        Vz = ca.vertcat(V, 0.0)  # index n_var: the constant 0 (a record's fixed ends)
        npar = chain.np
        pidx = list(range(npar))
        p = V[:npar]
        lam_f = ca.MX.sym("lam_f")
        n_samples = sum(len(tr.time) * len(fitted[i]) for i, tr in enumerate(trials))
        g_def, g_land, g_path, resid = [], [], [], []
        self.samples = n_samples
        self.reads = []
        parts = []  # per record: arguments of the chain
        off = nq
        self.entry_index, self.xc_offset = [], []
        for k, (tr, lay) in enumerate(zip(trials, layouts)):
            N = len(lay.t[0])
            ne = len(lay.entries)
            eidx = off + np.arange(ne * nx).reshape(ne, nx)
            X = ca.reshape(V[off:off + ne * nx], nx, ne)
            xoff = off + ne * nx
            xc = ca.reshape(V[xoff:xoff + nx * N * d], nx, N * d)
            tix = np.where(lay.tindex >= 0, lay.tindex, -1)
            S = ca.reshape(Vz[np.where(tix >= 0, tix, n_var).ravel().tolist()], 2, N)
            kw = dict(s=S, entry=(lay.entries, X))
            ix = dict(time_index=tix, entry_index=(lay.entries, eidx))
            parts.append((xc, kw, ix, xoff))
            self.entry_index.append(eidx)
            self.xc_offset.append(xoff)
            g_def.append(ca.vec(chain.defects(None, xc, lay.t, lay.h, lay.data, p, **kw)))
            g_path.append(ca.vec(chain.paths(None, xc, lay.t, lay.h, lay.data, p, **kw)))
            states = chain.values(None, xc, lay.interval, tr.time, lay.t, lay.h, p, s=S, entry=kw["entry"])
            self.reads.append(states)
            for nme in fitted[k]:
                i = STATE_NAMES.index(nme)
                resid.append((states[i, :].T - tr.signals[nme]) / sigs[k][nme])
            off = xoff + nx * N * d
        # landings: [x at the phase's last point, the next phase's entry state]
        land_idx = {"toe": [], "heel": []}
        for k, lay in enumerate(layouts):
            xoff = self.xc_offset[k]
            last = np.cumsum(lay.intervals) * d - 1
            for mode, ph in lay.landings:
                e = lay.entries.index(int(np.sum(lay.intervals[:ph + 1])))
                land_idx[mode].append(np.concatenate([xoff + last[ph] * nx + np.arange(nx), self.entry_index[k][e]]))
        land_idx = {m: np.array(v, dtype=int).reshape(-1, 2 * nx) for m, v in land_idx.items() if v}
        for m, idx in land_idx.items():
            g_land.append(ca.vec(land[m](V, idx)))
        # ordering of the switching times (linear): τ_{i+1} − τ_i ≥ a quarter of a sample step
        order_rows, order_lb = [], []
        for k, (tr, lay) in enumerate(zip(trials, layouts)):
            m = len(lay.modes) - 1
            dt = float(tr.time[1] - tr.time[0])
            pts = [("c", float(tr.time[0]))] + [("v", tpos[k] + i) for i in range(m)] + [("c", float(tr.time[-1]))]
            for i in range(len(pts) - 1):
                row, lo = np.zeros(n_var), 0.25 * dt
                for sign, (kind, v) in ((-1, pts[i]), (1, pts[i + 1])):
                    if kind == "v":
                        row[v] += sign
                    else:
                        lo -= sign * v
                if np.any(row):
                    order_rows.append(row), order_lb.append(lo)
        order_ub = [np.inf] * len(order_rows)
        n_def = sum(int(x.shape[0]) for x in g_def)
        n_land = sum(int(x.shape[0]) for x in g_land)
        n_path = sum(int(x.shape[0]) for x in g_path)
        n_order = len(order_rows)
        n_con = n_def + n_land + n_path + n_order
        lam_g = ca.MX.sym("lam_g", n_con)
        hess_blocks, jac_blocks = [], []
        r_def, r_path = 0, n_def + n_land
        for k, (tr, lay) in enumerate(zip(trials, layouts)):
            xc, kw, ix, xoff = parts[k]
            N = len(lay.t[0])
            args = (None, xc, lay.t, lay.h, lay.data, p)
            size, psize = nx * N * d, chain.n_path * N * d
            lam = ca.reshape(lam_g[r_def:r_def + size], nx, N * d)
            mu = ca.reshape(lam_g[r_path:r_path + psize], chain.n_path, N * d)
            hess_blocks.append(chain.defect_block(*args, lam, xoff, pidx, **kw, **ix))
            hess_blocks.append(chain.path_block(*args, mu, xoff, pidx, **kw, **ix))
            jac_blocks.append(chain.jacobian_block(*args, xoff, pidx, r_def, **kw, **ix))
            jac_blocks.append(chain.path_jacobian_block(*args, xoff, pidx, r_path, **kw, **ix))
            for nme in fitted[k]:
                c = np.zeros(nx)
                c[STATE_NAMES.index(nme)] = 1.0 / sigs[k][nme]
                hess_blocks.append(chain.fit_block(None, xc, lay.interval, tr.time, lay.t, lay.h, p, c,
                                                   tr.signals[nme] / sigs[k][nme], lam_f / n_samples, xoff, pidx,
                                                   s=kw["s"], entry=kw["entry"], **ix))
            r_def += size
            r_path += psize
        r_land = n_def
        for m, idx in land_idx.items():
            lam = ca.reshape(lam_g[r_land:r_land + land[m].m * len(idx)], land[m].m, len(idx))
            hess_blocks.append(land[m].hessian_block(V, idx, lam))
            jac_blocks.append(land[m].jacobian_block(V, idx, r_land))
            r_land += land[m].m * len(idx)
        constant = ca.DM(n_con, n_var)
        if order_rows:
            constant[n_def + n_land + n_path:, :] = np.vstack(order_rows)
        g_order = ca.mtimes(ca.DM(np.vstack(order_rows)), V) if order_rows else ca.MX(0, 1)
        G = ca.vertcat(*g_def, *g_land, *g_path, g_order)
        self.V, self.g, self.r = V, G, ca.vertcat(*resid)
        self.hess = ca.Function("hess_lag", [V, ca.MX(0, 1), lam_f, lam_g], [chain.hessian(n_var, hess_blocks)],
                                ["x", "p", "lam_f", "lam_g"], ["triu_hess_gamma_x_x"])
        self.jac = ca.Function("jac_g", [V, ca.MX(0, 1)], [G, chain.jacobian(n_con, n_var, jac_blocks, constant)],
                               ["x", "p"], ["g", "jac_g_x"])
        self.lbg = np.concatenate([np.zeros(n_def + n_land), *[lay.lb_path.ravel(order="F") for lay in layouts],
                                   np.array(order_lb)])
        self.ubg = np.concatenate([np.zeros(n_def + n_land), *[lay.ub_path.ravel(order="F") for lay in layouts],
                                   np.array(order_ub)])
        self.sizes = dict(defects=n_def, landings=n_land, path=n_path, order=n_order)
        # bounds: kp, kd > 0; a record that starts flat starts with θ_f = ω_f = 0
        self.lbx = np.full(n_var, -np.inf)
        self.ubx = np.full(n_var, np.inf)
        self.lbx[:2] = GAIN_FLOOR
        if npar > 2:  # τ: bounds set per round
            self.lbx[2], self.ubx[2] = TAU_BOUNDS
        for k, lay in enumerate(layouts):
            if lay.modes[0] == "flat":
                self.lbx[self.entry_index[k][0][[1, 3]]] = 0.0
                self.ubx[self.entry_index[k][0][[1, 3]]] = 0.0
        self.n_var, self.n_con = n_var, n_con

    def guess(self, qv) -> np.ndarray:
        w = [np.asarray(qv, float)]
        for lay in self.layouts:
            d = len(lay.x_guess[0]) // len(lay.t[0])
            w.append(np.concatenate([lay.x_guess[:, e * d] for e in lay.entries]))
            w.append(lay.x_guess.ravel(order="F"))
        return np.concatenate(w)


def _sequences(trials, sequences, glued):
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
    return seqs


#: Wall-clock budget (s) of :func:`identify` when none is given: every IPOPT solve stops at what
#: is left of it, and a fit that ran out of it is reported as ``time_limit`` (never a hang).
TIME_LIMIT = 600.0

#: A signal whose residuals, divided by the record's noise σ, have a reduced χ² above this (an rms
#: above 1.5 σ) makes the fit ``poor_fit`` (:func:`colloc.fit_verdict`'s ``chi2_poor``).  Stricter
#: than the library's 4 on purpose: σ is not a declaration that may be off by a factor of two but
#: is read from the record itself (:func:`_noise`), so the χ² of a right model is 1 ± √(2/n) (0.05
#: for 800 samples).  Measured on the shipped heel_off.csv: the model that keeps the foot flat
#: (``glued``; kp −2.2 %, −4.3 SE) leaves χ² 3.4 in θ_body and ω_body, within the library's 4;
#: the unilateral fits of the shipped records leave 0.7–1.4.
CHI2_POOR = 1.5 ** 2


def identify(trials: Sequence[HeelOffTrial], guess: Mapping[str, float] | None = None, *,
             sequences: Sequence | None = None, degree: int = 3, max_rounds: int | None = None,
             print_level: int = 0,
             max_iter: int = 500, glued: bool = False, time_limit: float = None,
             ipopt_options: Mapping | None = None, start: str | None = None) -> dict:
    """Identify kp, kd from records sharing them, by multi-phase Radau collocation assembled
    from one CasADi Function per interval (:class:`colloc.IntervalChain`, mapped over every
    interval; the mode a one-hot data flag; exact Hessian from per-interval blocks), with the
    mode sequence of each record read from θ_foot and ω_foot (:func:`detect_modes`, or given in
    ``sequences``: lists of mode names).  The switching times are unknowns; the contact forces
    (functions of the state in each mode) are ≥ 0, the lifted point's gap ≥ 0 in the pivot
    phases; a lift-off happens when the lifting contact's force reaches zero (Signorini's law:
    an equality at the end of the flat phase), a landing where θ_foot = 0, followed by the
    inelastic impact.  Residuals are weighted by each signal's noise estimated from its second
    differences.  The samples are given to the intervals at the current estimate; the problem is
    solved again until no sample changes interval.  A fit that the library's verdict
    (:func:`colloc.fit_verdict` of the residuals divided by that noise, at :data:`CHI2_POOR`) calls
    poor is reported as ``poor_fit`` (not a success; ``solver_status`` keeps what the solves ended
    in).  Standard errors:
    Gauss–Newton, with the collocation and impact equations eliminated (implicit function
    theorem) and the landing and lift-off conditions kept.  A noisy record is first fitted
    smoothed inside its phases, and that fit starts the fit of the record itself.  Every solve
    stops at what is left of ``time_limit`` (default :data:`TIME_LIMIT`); a fit that ran out of
    it is reported as ``time_limit``.  ``ipopt_options`` are passed to IPOPT.  Returns a dict:
    the estimates, their covariance, the modes and switching times, ``fit_verdict``,
    ``converged`` and ``solver_status`` (before the verdict), and per record the fit itself
    (``records``, :func:`_records`).

    ``start`` (:data:`STARTS`; where kp, kd start, :func:`start_of`): ``"guess"`` the guesses
    (:data:`GUESS` for those not given; the default), ``"equation-error"`` the estimate of
    :func:`equation_error_start`.  The returned ``start`` says which (parameters, source, message).

    ``glued=True`` is the model that keeps the foot flat (one flat phase, the contact forces
    free in sign, θ_body and ω_body fitted): the comparison that shows what ignoring heel-off
    costs."""
    start_from, start = start, _time.perf_counter()  # ``start`` the clock from here on
    trials = list(trials)
    if not trials:
        raise co.OptionsError("heel-off: no trial")
    if "tau" in (guess or {}):
        raise co.OptionsError("heel-off: a guess of tau needs the delayed feedback (--controller PD-delay, "
                              "heel_off_fit.identify_result(delay=True))")
    cur = {**GUESS, **(guess or {})}
    names = NAMES
    npar = len(names)
    scale = SCALE
    pieces = chain_functions(degree)
    chain = pieces["chain"]
    seqs = _sequences(trials, sequences, glued)
    cur, start_info = start_of(trials, None if glued else seqs, guess, cur, False, start_from)
    modes = [[m for m, _a, _b in s] for s in seqs]
    sigs = [{n: max(_noise(tr.signals[n]), NOISE_FLOOR[n]) for n in STATE_NAMES if n in tr.signals} for tr in trials]
    fitted = [[n for n in STATE_NAMES if n in tr.signals and not (glued and n.endswith("_foot"))] for tr in trials]
    taus = [[b for (_m, _a, b) in s[:-1]] for s in seqs]
    tpos = list(npar + np.cumsum([0] + [len(t) for t in taus])[:-1])
    nq = npar + sum(len(t) for t in taus)
    clock = {"build_s": 0.0, "solve_s": 0.0}
    limit = TIME_LIMIT if time_limit is None else float(time_limit)
    noisy = any(sg[n] > 10 * NOISE_FLOOR[n] for sg in sigs for n in sg)

    if max_rounds is None:
        max_rounds = 4

    def attempt(taus, cur, data=trials, rounds=max_rounds):
        history, warm, intervals = [], None, [None] * len(trials)
        sol = nlp = Vv = stats = None
        ok = settled = False
        for rnd in range(rounds):
            t_build = _time.perf_counter()
            if rnd and t_build - start >= limit:
                break
            layouts = [_layout(tr, modes[k], taus[k], tpos[k], chain, intervals[k], glued)
                       for k, tr in enumerate(data)]
            intervals = [lay.intervals for lay in layouts]
            nlp = _NLP(data, layouts, sigs, fitted, pieces, nq, tpos)
            problem = {"x": nlp.V, "f": 0.5 * ca.sumsqr(nlp.r) / nlp.samples, "g": nlp.g}
            # acceptable_iter 2: a clean fit's primal infeasibility stalls at ~2e-9 (round-off), just
            # above tol, and the last iterates only creep along (the 20 s clean record: 5 wasted
            # iterations of 40, the same estimates to 12 digits when it stops after 2)
            # MUMPS: QAMD ordering, and no maximum-transversal permutation/scaling (with it, the
            # first factorisation of a noisy record's KKT matrix asked for gigabytes and minutes)
            opts = {"ipopt.print_level": print_level, "print_time": False, "ipopt.max_iter": max_iter,
                    "ipopt.tol": 1e-9, "ipopt.acceptable_tol": 1e-7, "ipopt.acceptable_iter": 2,
                    "ipopt.sb": "yes", "ipopt.mumps_pivot_order": 6, "ipopt.mumps_permuting_scaling": 0,
                    # the objective is the mean of the squared weighted residuals (O(1) for a
                    # noisy record); IPOPT works on their sum, χ²/2, whose scale against the
                    # constraints and the barrier keeps a noisy fit from stopping early at a
                    # worse point (a clean record, weighted by the noise floor, is left as it is)
                    "ipopt.obj_scaling_factor": float(nlp.samples) if noisy else 1.0,
                    "hess_lag": nlp.hess, "jac_g": nlp.jac,
                    **({"ipopt.mu_init": 1e-5} if warm is not None else {}),
                    **{f"ipopt.{k}": v for k, v in (ipopt_options or {}).items()}}
            p_num = np.concatenate([[cur[n] / scale[i] for i, n in enumerate(names)],
                                    *[np.asarray(t, float) for t in taus]])
            x0 = nlp.guess(p_num) if warm is None else warm
            t_solve = _time.perf_counter()
            clock["build_s"] += t_solve - t_build
            # the time left, however little (a floor of 1 s let a fast machine finish a fit
            # well past a short limit and report it as a success)
            solver = ca.nlpsol("heel_off", "ipopt", problem, {**opts, "ipopt.max_wall_time": max(
                0.01, limit - (t_solve - start))})
            sol = solver(x0=x0, lbx=nlp.lbx, ubx=nlp.ubx, lbg=nlp.lbg, ubg=nlp.ubg)
            clock["solve_s"] += _time.perf_counter() - t_solve
            stats = solver.stats()
            ok = stats["return_status"] in ("Solve_Succeeded", "Solved_To_Acceptable_Level")
            Vv = np.array(sol["x"]).ravel()
            cur = {n: float(Vv[i] * scale[i]) for i, n in enumerate(names)}
            taus = [list(Vv[tpos[k]:tpos[k] + len(taus[k])]) for k in range(len(trials))]
            history.append({"round": rnd + 1, "record": "smoothed" if data is not trials else "measured", "iterations": int(stats["iter_count"]), "success": ok,
                            "status": stats["return_status"], "time_s": _time.perf_counter() - start, **cur})
            new = [_layout(tr, modes[k], taus[k], tpos[k], chain, intervals[k], glued)
                   for k, tr in enumerate(data)]
            settled = all(map(_same_layout, layouts, new))
            warm = Vv
            if (settled and ok) or stats["return_status"] == "Maximum_WallTime_Exceeded":
                break
        return dict(sol=sol, nlp=nlp, Vv=Vv, stats=stats, ok=ok, settled=settled, taus=taus, cur=cur,
                    history=history)

    def fit_ok(d):
        verdict = _verdict(_named(trials, _standardized(d, trials, fitted)), npar)
        return d["ok"] and d["settled"] and verdict["verdict"] != "poor_fit"

    if noisy:
        # a noisy record: first fit the record smoothed inside its phases (nearly a model
        # trajectory, so the fit converges as a clean record's does; one round), then the record
        # itself from its samples with the gains and switching times found (not from the smoothed
        # fit's states: IPOPT warm-started there wandered for hundreds of iterations)
        pre = attempt(taus, dict(cur), data=[_smoothed_trial(tr, seqs[k]) for k, tr in enumerate(trials)], rounds=1)
        best = attempt(pre["taus"], pre["cur"])
        best["history"] = pre["history"] + best["history"]
    else:
        best = attempt(taus, dict(cur))
    if not glued and not fit_ok(best):
        # the switching times from θ_foot are poor when a lift is small against the noise, and the
        # fit may keep a pivot phase that is too short (a local minimum): start again from every
        # pivot phase widened by 60 % of its length on each side; keep the better fit
        wide = []
        for k, tr in enumerate(trials):
            seq, new = seqs[k], list(taus[k])
            pts = [seq[0][1], *taus[k], seq[-1][2]]
            for i, (m, _a, _b) in enumerate(seq):
                if m == "flat":
                    continue
                span = pts[i + 1] - pts[i]
                if i > 0 and seq[i - 1][0] == "flat":
                    new[i - 1] = max(pts[i] - 0.6 * span, 0.5 * (pts[i - 1] + pts[i]))
                if i + 1 < len(seq) and seq[i + 1][0] == "flat":
                    new[i] = min(pts[i + 1] + 0.6 * span, 0.5 * (pts[i + 1] + pts[i + 2]))
            wide.append(new)
        if wide != taus and _time.perf_counter() - start < limit:
            other = attempt(wide, dict(cur))
            if (fit_ok(other), -float(other["sol"]["f"])) > (fit_ok(best), -float(best["sol"]["f"])):
                best = other
    sol, nlp, stats = best["sol"], best["nlp"], best["stats"]
    cov, s2, rv = _covariance(nlp, sol, nq)
    unit = np.concatenate([scale, np.ones(nq - npar)])
    se_all = np.sqrt(np.maximum(np.diag(cov)[:nq], 0.0)) * unit
    cov_p = cov[:npar, :npar] * np.outer(scale, scale)
    switches = []
    for k in range(len(trials)):
        m = modes[k]
        switches.append([{"time": float(t), "std_error": float(se_all[tpos[k] + i]), "from": m[i], "to": m[i + 1],
                          "kind": "landing" if m[i] != "flat" else "lift-off"}
                         for i, t in enumerate(best["taus"][k])])
    standardized = _standardized(best, trials, fitted)
    verdict = _verdict(_named(trials, standardized), npar)
    status = stats["return_status"]
    converged = best["ok"] and best["settled"]
    if best["ok"] and not best["settled"]:
        status = "phases_not_settled"
    if not converged and (status == "Maximum_WallTime_Exceeded" or _time.perf_counter() - start >= limit):
        status = "time_limit"
    solver_status = status
    success = converged and verdict["verdict"] != "poor_fit"
    if converged and not success:
        status = "poor_fit"
    records = _records(best, trials, fitted, sigs, chain, standardized)
    return {"problem": "heel-off", "parameters": best["cur"], "standard_errors": dict(zip(names, se_all[:npar].tolist())),
            "covariance": cov_p.tolist(), "success": bool(success), "status": status,
            "solver_status": solver_status, "converged": bool(converged), "fit_verdict": verdict,
            "iterations": int(sum(h["iterations"] for h in best["history"])), "rounds": best["history"],
            "objective": float(sol["f"]), "residual_scale": float(np.sqrt(s2)),
            "residual_rms": _rms(standardized),
            "noise": sigs, "modes": modes, "switches": switches, "time_s": _time.perf_counter() - start, **clock,
            "samples": int(len(rv)), "variables": int(nlp.n_var), "start": start_info, "records": records}


def _standardized(attempt: dict, trials, fitted) -> list[dict]:
    """Per record, each fitted signal's residuals (model − measurement) at its samples divided
    by the signal's noise σ: the NLP's residual vector, cut into its pieces."""
    r = np.asarray(ca.Function("r", [attempt["nlp"].V], [attempt["nlp"].r])(attempt["Vv"])).ravel()
    out, i = [], 0
    for tr, names in zip(trials, fitted):
        n = len(tr.time)
        out.append({name: r[i + j * n:i + (j + 1) * n] for j, name in enumerate(names)})
        i += n * len(names)
    return out


def _named(trials, standardized: list[dict]) -> dict:
    """``name → (sample times, residuals)`` of records fitted at all their samples."""
    return {tr.name: (tr.time, r) for tr, r in zip(trials, standardized)}


def _rms(standardized: list[dict]) -> float:
    """The rms of the residuals divided by their noise (≈ 1 for a fit that explains the records)."""
    return float(np.sqrt(np.mean(np.concatenate([v for r in standardized for v in r.values()]) ** 2)))


def _verdict(records: Mapping[str, tuple], num_parameters: int, simulation=None) -> dict:
    """The library's fit verdict (:func:`colloc.fit_verdict`) at :data:`CHI2_POOR` of residuals
    already divided by their noise σ (so every fit weight is 1), ``records`` name → (sample
    times, signal → residuals): the one judgement of a poor fit, of :func:`identify` and of the
    result (:func:`finish`)."""
    import pandas as pd

    frames = {name: pd.DataFrame(r, index=pd.Index(t, name="time")) for name, (t, r) in records.items()}
    return co.fit_verdict(frames, dict.fromkeys(STATE_NAMES, 1.0), num_parameters=num_parameters,
                          simulation=simulation, chi2_poor=CHI2_POOR)


def _records(attempt: dict, trials, fitted, sigs, chain, standardized) -> list[dict]:
    """What the fit says of each record: ``node_time`` and ``node_states`` (rows in
    :data:`STATE_NAMES` order) at the entry state of each interval that starts from one and at
    the collocation points of every interval (Radau: the last at the interval's end), so that a
    landing appears twice at its time, before and after the impact; ``initial_state``;
    ``samples`` (the record's samples fitted: all), ``residuals`` (fitted signal → model −
    measurement at those samples, unweighted) and the ``noise`` σ they were weighted by."""
    nlp, Vv = attempt["nlp"], attempt["Vv"]
    nx, d = chain.nx, chain.degree
    out = []
    for k, (tr, lay) in enumerate(zip(trials, nlp.layouts)):
        s = np.where(lay.tindex >= 0, Vv[np.maximum(lay.tindex, 0)], 0.0)  # the switching times found
        t = lay.t[0] + (lay.t[1] * s).sum(axis=1)
        h = lay.h[0] + (lay.h[1] * s).sum(axis=1)
        N = len(t)
        xc = Vv[nlp.xc_offset[k]:nlp.xc_offset[k] + nx * N * d].reshape(N, d, nx)
        entry = dict(zip(lay.entries, Vv[nlp.entry_index[k]].reshape(-1, nx)))
        times, states = [], []
        for i in range(N):
            if i in entry:
                times.append([t[i]]), states.append(entry[i][None, :])
            times.append(t[i] + chain.tau * h[i]), states.append(xc[i])
        out.append({"name": tr.name, "node_time": np.concatenate(times), "node_states": np.vstack(states),
                    "initial_state": entry[0].copy(), "noise": dict(sigs[k]),
                    "samples": np.arange(len(tr.time)),
                    "residuals": {n: standardized[k][n] * sigs[k][n] for n in fitted[k]}})
    return out


def simulation_check(trial: HeelOffTrial, params: Mapping[str, float], state0,
                     signals: Sequence[str]) -> dict:
    """The forward-simulation check of a fit: the record simulated by the event-driven contact
    simulator (:func:`simulate`, :func:`colloc.simulate_contact`; not the collocation that made
    the fit) from the fit's initial state ``state0`` ([θ_b, θ_f, ω_b, ω_f]) with the identified
    ``params``.  Returns ``status`` (``"ok"``, ``"lost_contact"`` or ``"failed"``), ``message``
    and ``nrmse``: per signal of ``signals``, the rms of simulated − measured over the range of
    the measured samples."""
    try:
        states, _sim = simulate(params, trial.time, trial.platform_acc, state0, rtol=1e-10, atol=1e-10)
    except co.SolveFailed as exc:
        return {"status": getattr(exc.result, "status", "failed"), "message": str(exc), "nrmse": {}}
    nrmse = {}
    for name in signals:
        y = np.asarray(trial.signals[name], dtype=float)
        span = float(np.ptp(y))
        rms = float(np.sqrt(np.mean((states[:, STATE_NAMES.index(name)] - y) ** 2)))
        nrmse[name] = rms / span if span > 0 else float("nan")
    return {"status": "ok", "message": "event-driven contact simulation (colloc.simulate_contact)",
            "nrmse": nrmse}


def _covariance(nlp: _NLP, sol, nq: int):
    """Gauss–Newton covariance of z = (kp/1000, kd/100, switching times, free initial states):
    the collocation states and the states entering after a landing are eliminated through the
    defects and impact equations; the landing conditions and lift-off equalities are kept as
    constraints (null-space projection).  Inequalities that happen to be active at the estimate
    (a contact force or gap at zero at a few collocation points of a noisy fit) are not: they are
    not known equations of the record, and holding them as such pinned kd with standard errors
    ten to fifty times smaller than the scatter over noise seeds.  Returns (cov of z, s², r)."""
    from scipy.sparse import csc_matrix

    Vv = np.array(sol["x"]).ravel()
    n_var = nlp.n_var
    fixed = np.flatnonzero(nlp.lbx == nlp.ubx)
    z = list(range(nq))
    for eidx in nlp.entry_index:
        z += [int(i) for i in eidx[0] if i not in fixed]
    rest = np.setdiff1d(np.arange(n_var), np.concatenate([z, fixed]))
    G = csc_matrix(nlp.jac(Vv, [])[1].sparse())
    sz = nlp.sizes
    n_def, n_land = sz["defects"], sz["landings"]
    land_rows = np.arange(n_def, n_def + n_land)
    # the landing PointFunction: row 0 of each block is θ_f = 0 (a constraint), rows 1-4 the impact
    cond = land_rows[(land_rows - n_def) % 5 == 0]
    impact = np.setdiff1d(land_rows, cond)
    eq_rows = np.concatenate([np.arange(n_def), impact])
    ineq = np.arange(n_def + n_land, nlp.n_con)
    equal = ineq[nlp.lbg[ineq] == nlp.ubg[ineq]]
    con_rows = np.unique(np.concatenate([cond, equal])).astype(int)
    Rf = ca.Function("R", [nlp.V], [ca.jacobian(nlp.r, nlp.V), nlp.r])
    Rj, rv = Rf(Vv)
    rv = np.asarray(rv.full()).ravel()
    cov = co.constrained_covariance(csc_matrix(Rj.sparse()), rv, G[eq_rows], np.array(z), rest,
                                    jac_con=G[con_rows] if len(con_rows) else None)
    return cov.matrix, cov.residual_variance, rv


# ---------------------------------------------------------------------------------------------
# the equation-error start of (kp, kd, τ)

#: Of the equation-error start (:func:`equation_error_start`): a guess of τ is kept when the record
#: does not reject it, its profile sum of squares within this quantile of the one-parameter F
#: test (a χ²₁ quantile over the residual variance at the minimum) of the least.
START_LEVEL = 0.01
#: Start options of :func:`identify` (``colloc identify heel-off --start``).
STARTS = ("equation-error", "guess")


def _flat_rates() -> ca.Function:
    """(x, a) → (α₀, b): the body's angular acceleration with the foot flat is α₀ + b·T (T the
    ankle torque on the body; the model's flat mode, :func:`_mode_pieces`)."""
    if "flat_rates" not in _MECH:
        x, a, xd = ca.SX.sym("x", 4), ca.SX.sym("a"), ca.SX.sym("xd", 4)
        kp, kd = ca.SX.sym("kp"), ca.SX.sym("kd")
        alpha = _mode_pieces(x, a, kp, kd, xd)["flat"][0][2]  # T = −kp·xd[0] − kd·xd[2]
        zero = {kp: 0.0, kd: 0.0}
        a0 = ca.substitute(alpha, ca.vertcat(*zero), ca.DM.zeros(2))
        b = -ca.jacobian(alpha, kp) / xd[0]  # α is affine in T: dα/dT
        b = ca.substitute(ca.substitute(b, xd, ca.DM([1.0, 0.0, 0.0, 0.0])), ca.vertcat(kp, kd), ca.DM.zeros(2))
        _MECH["flat_rates"] = ca.Function("heel_off_flat_rates", [x, a], [a0, b])
    return _MECH["flat_rates"]


def _smooth_rate(theta: np.ndarray, dt: float) -> np.ndarray:
    """dθ/dt by a cubic Savitzky–Golay filter over eleven samples (0.1 s at 100 Hz; the gradient
    of a noisy θ at 100 Hz has a noise of σ_θ/(√2·dt), seven times the seed's σ_ω)."""
    from scipy.signal import savgol_filter

    n = len(theta)
    window = min(11, n - 1 + n % 2)
    if window < 5:
        return np.gradient(theta, dt)
    return savgol_filter(theta, window, 3, deriv=1, delta=dt)


def _integral_equation_error(trials, seqs, tau: float):
    """The least-squares fit of the integrated flat-foot equation of motion at the delay ``tau``:
    (sum of squares, kp, kd, degrees of freedom), or None without two flat stretches' worth of
    samples.  Per flat phase from its first sample s (a sample kept clear of each switching time):
    ω_b(t) = ω_s + ∫ₛᵗ α₀ − kp·∫ₛᵗ b·θ_b(u − τ) du − kd·∫ₛᵗ b·ω_b(u − τ) du, ω_s a nuisance unknown
    per phase; the measured ω_b enters undifferentiated (unmeasured: :func:`_smooth_rate` of θ_b)."""
    F = _flat_rates()
    ys, cols, stretch = [], [], []
    for tr, seq in zip(trials, seqs):
        t = np.asarray(tr.time, dtype=float)
        dt = float(t[1] - t[0])
        th = np.asarray(tr.signals["theta_body"], dtype=float)
        om = (np.asarray(tr.signals["omega_body"], dtype=float) if "omega_body" in tr.signals
              else _smooth_rate(th, dt))
        zero = np.zeros_like(th)
        a0, b = (np.asarray(v).ravel() for v in F(np.vstack([th, zero, om, zero]), tr.platform_acc[None, :]))
        # before the record: the initial state (as in the simulator and the collocation)
        thd, omd = np.interp(t - tau, t, th), np.interp(t - tau, t, om)

        def cum(f):
            return np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(t))])

        c_a, c_th, c_om = cum(a0), cum(b * thd), cum(b * omd)
        for mode, t0, t1 in seq:
            idx = np.flatnonzero((t >= t0 + dt - 1e-9) & (t <= t1 - dt + 1e-9)) if mode == "flat" else []
            if len(idx) < 5:
                continue
            i0 = idx[0]
            ys.append(om[idx] - (c_a[idx] - c_a[i0]))
            cols.append(np.column_stack([-(c_th[idx] - c_th[i0]) * SCALE[0], -(c_om[idx] - c_om[i0]) * SCALE[1]]))
            stretch.append(len(idx))
    n = sum(stretch)
    if n - 2 - len(stretch) < 3:
        return None
    A = np.zeros((n, 2 + len(stretch)))
    A[:, :2] = np.vstack(cols)
    A[np.arange(n), 2 + np.repeat(np.arange(len(stretch)), stretch)] = 1.0
    y = np.concatenate(ys)
    c, *_ = np.linalg.lstsq(A, y, rcond=None)
    r = y - A @ c
    return float(r @ r), float(c[0] * SCALE[0]), float(c[1] * SCALE[1]), n - A.shape[1]


def equation_error_start(trials: Sequence[HeelOffTrial], sequences=None, *, delay: bool = True,
                         tau_guess: float | None = None) -> dict:
    """A start of kp, kd (and τ with ``delay``) from the measured records alone, no collocation:
    while the foot is flat the body is a pendulum on a fixed ankle, θ̈_b = α₀(θ_b, a) + b·T with
    T = −kp·θ_b(t − τ) − kd·ω_b(t − τ) (:func:`_flat_rates`), linear in kp, kd for a given τ.
    Integrated from the start of each flat phase (:func:`_integral_equation_error`; no noise
    differentiated), kp and kd follow by linear least squares; τ by a scan of the sample grid over
    :data:`TAU_BOUNDS`, the least sum of squares refined by the parabola through its neighbours.
    ``sequences``: the mode sequences (default :func:`detect_modes`).

    ``tau_guess``: whether the record rejects that τ (``tau_rejected``): its profile sum of squares
    S(τ) (kp, kd refitted) against the least S₀ by the F test of one parameter,
    (S(τ) − S₀)/(S₀/dof) above the χ²₁ quantile at :data:`START_LEVEL`.

    Returns ``{"parameters", "usable", "message", "profile", "tau_rejected"}``; not usable (the
    message says why) when no flat stretch is long enough or kp or kd comes out ≤ 0."""
    from scipy.stats import chi2

    trials = list(trials)
    seqs = [detect_modes(tr) for tr in trials] if sequences is None else list(sequences)
    dt = float(trials[0].time[1] - trials[0].time[0])
    grid = np.arange(0, int(np.floor(TAU_BOUNDS[1] / dt + 1e-9)) + 1) * dt if delay else np.zeros(1)
    prof = [_integral_equation_error(trials, seqs, float(tau)) for tau in grid]
    out = {"usable": False, "parameters": {}, "profile": None, "tau_rejected": None}
    if prof[0] is None:
        return {**out, "message": "no flat stretch of five samples or more to fit the equation error on"}
    S = np.array([p[0] for p in prof])
    i = int(np.argmin(S))
    tau = float(grid[i])
    if 0 < i < len(grid) - 1 and S[i - 1] + S[i + 1] - 2 * S[i] > 0:
        tau += 0.5 * dt * (S[i - 1] - S[i + 1]) / (S[i - 1] + S[i + 1] - 2 * S[i])
    best = _integral_equation_error(trials, seqs, tau)
    if best[0] > S[i]:  # the parabola's vertex no better than the grid point
        tau, best = float(grid[i]), prof[i]
    s0, kp, kd, dof = best
    params = {"kp": kp, "kd": kd, **({"tau": float(tau)} if delay else {})}
    out.update(parameters=params, profile={"tau": grid.tolist(), "sum_of_squares": S.tolist(), "dof": dof})
    if delay and tau_guess is not None:
        g = _integral_equation_error(trials, seqs, float(tau_guess))
        out["tau_rejected"] = bool(g[0] - s0 > chi2.isf(START_LEVEL, 1) * max(s0, 1e-300) / dof)
    if not (kp > 0 and kd > 0):
        return {**out, "message": f"the equation-error estimate is not a stable feedback (kp {kp:.4g}, kd {kd:.4g})"}
    return {**out, "usable": True, "message": "equation error of the flat-foot phases, integrated"
            + (f"; tau scanned on the {dt:g} s grid over {list(TAU_BOUNDS)} s" if delay else "")}


def start_of(trials, seqs, guess, cur: dict, delay: bool, start: str | None):
    """Where kp, kd (and τ) start, and how that was decided (see :func:`identify`'s ``start``):
    returns (parameters, {"source", "parameters", "message"}).  An equation-error estimate that
    cannot be used leaves the guesses, and says why."""
    if start is not None and start not in STARTS:
        raise co.OptionsError(f"heel-off: start must be one of {', '.join(STARTS)}, got {start!r}")
    given = dict(guess or {})
    if start == "guess" or (start is None and not delay):
        return cur, {"source": "guess", "parameters": dict(cur), "message": "the guesses"}
    auto = start is None
    est = equation_error_start(trials, seqs, delay=delay, tau_guess=given.get("tau") if auto else None)
    if not est["usable"]:
        return cur, {"source": "guess", "parameters": dict(cur),
                     "message": f"the guesses: the equation-error start is not usable ({est['message']})"}
    new, how, source = dict(est["parameters"]), "the equation-error estimate", "equation-error"
    if auto and "tau" in given and not est["tau_rejected"]:
        at = _integral_equation_error(trials, seqs or [detect_modes(tr) for tr in trials], float(given["tau"]))
        new = {"kp": at[1], "kd": at[2], **given} if at[1] > 0 and at[2] > 0 else {**new, **given}
        how = f"the guess of tau ({given['tau']:g} s, not rejected by the record's equation error)"
        source = "guess"
    elif auto and "tau" in given:
        how = (f"the equation-error estimate: the record rejects the guess of tau ({given['tau']:g} s; its "
               f"equation error exceeds the least by more than the {1 - START_LEVEL:.0%} F test of one parameter)")
    elif auto:
        new.update(given)
        if given:
            how += f", with the guess of {', '.join(given)}"
    new = {k: float(v) for k, v in new.items()}
    return new, {"source": source, "parameters": dict(new), "message": how + "; " + est["message"]}


def problem(trials):
    """`heel-off` is hybrid: it is identified by :func:`identify` (multi-phase collocation)."""
    raise co.ProblemError("heel-off is a hybrid problem: use colloc_problems.heel_off.identify(trials)")


def finish(out: Mapping, trials: Sequence[HeelOffTrial], *, method: str, message: str, info: dict,
           bounds: Mapping[str, tuple[float, float]], initial_parameters: Mapping[str, float],
           descriptions: Mapping[str, str]) -> co.Result:
    """A fit of :func:`identify` (or of the complementarity method) as a :class:`colloc.Result`,
    ended by :func:`colloc.finalize`: the fit's states at its nodes (``trajectories``), the fitted
    signals as measured and the residuals at the samples, the forward-simulation check of every
    record (:func:`simulation_check`), the fit verdict (:func:`colloc.fit_verdict` at
    :data:`CHI2_POOR`, ``result.fit_verdict``) of the residuals divided by the noise σ the fit
    weighted them by (``info["noise"]``), the warnings and the intervals.  ``bounds``: those of
    the unknowns; only τ's lower bound (no delay) is a limit of the model, the others are search
    ranges."""
    import pandas as pd

    t0 = _time.perf_counter()
    trajectories, measurements, residuals, standardized, simulation = {}, {}, {}, {}, {}
    for tr, rec in zip(trials, out["records"]):
        at, fitted = rec["samples"], list(rec["residuals"])
        index = pd.Index(tr.time[at], name="time")
        trajectories[tr.name] = pd.DataFrame(rec["node_states"], columns=list(STATE_NAMES),
                                             index=pd.Index(rec["node_time"], name="time"))
        measurements[tr.name] = pd.DataFrame({n: tr.signals[n][at] for n in fitted}, index=index)
        residuals[tr.name] = pd.DataFrame(rec["residuals"], index=index)
        standardized[tr.name] = (tr.time[at], {n: r / rec["noise"][n] for n, r in rec["residuals"].items()})
        simulation[tr.name] = simulation_check(tr, out["parameters"], rec["initial_state"], fitted)
    names = list(out["parameters"])
    verdict = _verdict(standardized, len(names), simulation)
    verdict["residuals"] = ("model − measurement divided by the noise σ of its signal in its record, estimated "
                            "from the record's second differences (info['noise']): the fit's own weights")
    if out["status"] == "poor_fit":  # the same verdict of the same residuals in identify
        why = verdict["reason"] if verdict["verdict"] == "poor_fit" else "the fit of a window is poor"
        message += (f". But the fit is poor: {why}: a local minimum (try other guesses) or a model that does "
                    "not explain the record")
    estimate = co.Estimate(
        problem="heel-off", method=method, success=bool(out["success"]), status=out["status"], message=message,
        iterations=out["iterations"], objective=out["objective"], parameters=dict(out["parameters"]),
        standard_errors=dict(out["standard_errors"]),
        covariance=pd.DataFrame(out["covariance"], index=names, columns=names), trajectories=trajectories,
        measurements=measurements, residuals=residuals,
        timings={"build_s": out["build_s"], "solve_s": out["solve_s"],
                 "simulation_s": _time.perf_counter() - t0, "total_s": out["time_s"] + _time.perf_counter() - t0},
        num_nodes=sum(len(f) for f in trajectories.values()), trials=[t.name for t in trials],
        versions=co.versions(), simulation=simulation, units={**{k: UNITS[k] for k in names}, **SIGNAL_UNITS},
        info=dict(info), fit_verdict=verdict, initial_parameters=dict(initial_parameters),
        descriptions=dict(descriptions), solver_status=out["solver_status"])
    # the verdict is made above at heel-off's threshold; finalize adds its warning, the rest
    return co.finalize(estimate, bounds=bounds, physical={k: (k == "tau", False) for k in names}, verdict=False)
