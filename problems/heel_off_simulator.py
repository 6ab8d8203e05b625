"""The ``heel-off`` simulator: the body of :mod:`colloc_problems.heel_off_body` as a
:class:`colloc.ContactSystem` (heel and toe :class:`colloc.ContactPoint` objects, Signorini's
law, no slip, inelastic landings) integrated by :func:`colloc.simulate_contact`, the delayed
feedback by the method of steps (:func:`simulate` with ``tau``).  Between the samples of
``platform_acc`` the platform acceleration is the not-a-knot cubic spline through them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import colloc as co

from .heel_off_body import BODY, flat_configuration, mechanics

__all__ = ["contact_system", "contract_state", "full_state", "mode_of", "simulate", "spline"]


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

