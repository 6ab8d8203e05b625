"""Event-driven simulation of unilateral point contacts (Wieber & Billet 2006, §3, §5).

A mode is the set of *active* contacts of a :class:`~colloc.definition.contact.ContactSystem`.
In a mode the constrained dynamics (Eq. 4 with the active rows of C) are integrated by SciPy's
``solve_ivp`` (DOP853); the integration stops at the first event:

* **lift-off**: the normal force λ_n of an active contact falls through 0 (it would turn
  negative: the ground cannot pull);
* **landing**: the gap φ of an inactive contact falls through 0.  Only φ is watched for the
  way down (§5.2: watch one function); a contact that has just lifted off is armed again once
  φ > √ε (the hysteresis of §5.2), so a point leaving the ground cannot land at once.

At a landing the impact is perfectly inelastic: the normal (and, for a point that does not
slip, tangential) velocities of the landing point and of the points already in contact are
set to zero by the impulse of least kinetic energy, q̇⁺ = q̇⁻ − M⁻¹Cᵀ(CM⁻¹Cᵀ)⁺Cq̇⁻ (the
generalized momentum of every coordinate the contact rows do not touch is conserved).  After
every event the new mode is the solution of the acceleration-level complementarity problem,
Eqs. (4)–(7): among the candidate contacts (in contact, not separating), the set A such that
λ_n ≥ 0 on A and φ̈ ≥ 0 off A; with a handful of contacts it is found by enumeration, largest
sets first.  When no contact stays active the simulation stops with status ``lost_contact``.

Redundant rows (a flat foot: two normal and two tangential rows for three degrees of freedom)
are handled by least squares: the accelerations and the normal forces are unique, the split of
the tangential force is the one of least norm.  Drift of the active constraints is corrected
by Baumgarte's terms 2α·ċ + α²·c (c the gap or tangential displacement from the point where the
contact began).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike
from scipy.integrate import solve_ivp

from ..base.errors import ModelError, SolveFailed
from ..definition.contact import ContactSystem
from ..definition.hybrid import SQRT_EPS, HybridParameters
from .hybrid import Event, HybridSimulation, _Watch

__all__ = ["ContactSimulation", "complementary_mode", "constrained_dynamics", "inelastic_impact",
           "simulate_contact"]


@dataclass
class ContactSimulation(HybridSimulation):
    """Result of :func:`simulate_contact`: as :class:`~colloc.simulation.hybrid.HybridSimulation`
    (modes are named by their active contacts joined with ``+``), plus ``status`` (``"ok"`` or
    ``"lost_contact"``) and ``message``; ``anchors`` per segment (where each active contact
    began, for the tangential rows)."""

    status: str = "ok"
    message: str = ""
    anchors: list = field(default_factory=list)


def _mode_name(system: ContactSystem, active) -> str:
    return "+".join(system.contacts[i].name for i in sorted(active))


def constrained_dynamics(system: ContactSystem, t, q, qd, p, active, anchors=None, baumgarte: float = 0.0):
    """q̈ and the contact forces of Eq. (4) with the contacts ``active`` (indices).

    Returns ``(q̈, forces)``, ``forces[i] = (λ_n, λ_t)`` (λ_t None for a point that slips).
    ``anchors[i]`` is the x where contact i began (for the Baumgarte term of its tangential
    row; without it that row gets no position correction)."""
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    f = np.asarray(system.forces(t, q, qd, p), dtype=float).ravel()
    M = np.asarray(system.mass(q, p), dtype=float)
    y0 = np.linalg.solve(M, f)
    if not active:
        return y0, {}
    rows, rhs, sizes = [], [], []
    for i in active:
        c = system.contacts[i]
        C_i, b_i = c.rows(q, qd)
        x_i, y_i = np.asarray(c.point(q), dtype=float).ravel()[:2]
        err = np.array([y_i]) if c.slip else np.array([y_i, x_i - (anchors or {}).get(i, x_i)])
        rows.append(C_i)
        rhs.append(-(b_i + 2 * baumgarte * (C_i @ qd) + baumgarte ** 2 * err))
        sizes.append(len(b_i))
    C = np.vstack(rows)
    X = np.linalg.solve(M, C.T)
    lam = np.linalg.lstsq(C @ X, np.concatenate(rhs) - C @ y0, rcond=1e-12)[0]
    qdd = y0 + X @ lam
    forces, k = {}, 0
    for i, s in zip(active, sizes):
        forces[i] = (float(lam[k]), float(lam[k + 1]) if s == 2 else None)
        k += s
    return qdd, forces


def _normal_acceleration(system, i, q, qd, qdd) -> float:
    c = system.contacts[i]
    J = np.asarray(c.jacobian(q), dtype=float).reshape(2, -1)
    return float(J[1] @ qdd + np.asarray(c.bias(q, qd), dtype=float).ravel()[1])


def complementary_mode(system: ContactSystem, t, q, qd, p, candidates, anchors=None, exclude=(),
                       tol: float = 1e-9) -> tuple | None:
    """The active set of the acceleration-level complementarity problem, Eqs. (4)–(7): among
    ``candidates`` (contacts touching the ground with no normal velocity) minus ``exclude``,
    the largest set A with λ_n ≥ 0 on A and φ̈ ≥ 0 on the other candidates (within ``tol``
    relative to the scale of the forces and accelerations).  None when there is none."""
    cands = [i for i in sorted(candidates) if i not in exclude]
    f = np.asarray(system.forces(t, q, qd, p), dtype=float)
    f_scale = tol * (1.0 + float(np.max(np.abs(f))))
    for size in range(len(cands), -1, -1):
        for A in combinations(cands, size):
            qdd, forces = constrained_dynamics(system, t, q, qd, p, A, anchors)
            a_scale = tol * (1.0 + float(np.max(np.abs(qdd))))
            if all(forces[i][0] >= -f_scale for i in A) and all(
                    _normal_acceleration(system, j, q, qd, qdd) >= -a_scale for j in candidates if j not in A):
                return tuple(A)
    return None


def inelastic_impact(system: ContactSystem, q, qd, p, contacts) -> np.ndarray:
    """q̇ after a perfectly inelastic impact that stops ``contacts`` (indices; all rows):
    the least-kinetic-energy projection q̇ − M⁻¹Cᵀ(CM⁻¹Cᵀ)⁺Cq̇."""
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    M = np.asarray(system.mass(q, p), dtype=float)
    C = np.vstack([system.contacts[i].rows(q, qd)[0] for i in contacts])
    X = np.linalg.solve(M, C.T)
    return qd - X @ np.linalg.lstsq(C @ X, C @ qd, rcond=1e-12)[0]


def simulate_contact(system: ContactSystem, x0: ArrayLike, t_span: tuple[float, float], p: HybridParameters, *,
                     active: Sequence[str] | None = None, t_eval: ArrayLike | None = None, rtol: float = 1e-12,
                     atol: float = 1e-12, baumgarte: float = 10.0, contact_tol: float = 1e-9,
                     max_events: int = 100_000) -> ContactSimulation:
    """Simulate ``system`` from x0 = [q, q̇] over ``t_span``.

    ``active``: the contact names active at the start (default: the complementarity problem
    among the points with ``|φ|`` ≤ ``contact_tol`` and ``|φ̇|`` ≤ ``contact_tol`` per second).
    Returns a :class:`ContactSimulation`; its events have kinds ``"lift-off"``, ``"landing"``
    and ``"lost-contact"`` and name the contact."""
    t0, tf = map(float, t_span)
    if not tf > t0:
        raise ModelError(f"simulate_contact: t_span must increase, got {t_span}")
    n = system.n
    x = np.array(x0, dtype=float)
    if x.shape != (2 * n,):
        raise ModelError(f"simulate_contact: x0 must have {2 * n} entries (q, q̇), got {x.shape}")
    nc = len(system.contacts)
    q, qd = x[:n], x[n:]
    if active is None:
        touching = [i for i in range(nc) if abs(system.contacts[i].gap(q)) <= contact_tol
                    and abs(system.gap_rates(q, qd)[i]) <= contact_tol]
        current = complementary_mode(system, t0, q, qd, p, touching) or ()
    else:
        current = tuple(sorted(system.index(a) for a in active))
    anchors = {i: float(np.asarray(system.contacts[i].point(q)).ravel()[0]) for i in current}
    armed = {j: system.contacts[j].gap(q) > SQRT_EPS for j in range(nc)}
    events: list[Event] = []
    segments: list[tuple] = []
    seg_anchors: list[dict] = []
    steps_t, steps_x = [np.array([t0])], [x[None, :]]
    status, message = "ok", ""
    t = t0
    same_time = 0
    if not current:
        status, message = "lost_contact", f"no contact is active at t = {t0}"
        events.append(Event(t0, "lost-contact", "", "", ""))
        segments.append((t0, t0, "", None, x.copy()))
        seg_anchors.append({})
    while status == "ok" and t < tf and tf - t > 1e-14 * max(1.0, abs(tf)):
        if len(events) > max_events:
            raise SolveFailed(f"simulate_contact: more than {max_events} events before t = {t}", None)
        A, anc = current, dict(anchors)

        def rhs(tt, y, A=A, anc=anc):
            qdd = constrained_dynamics(system, tt, y[:n], y[n:], p, A, anc, baumgarte)[0]
            return np.concatenate([y[n:], qdd])

        funcs: list[_Watch] = []
        kinds: list[tuple[str, int]] = []
        for i in A:
            funcs.append(_Watch(lambda tt, y, i=i, A=A, anc=anc:
                                constrained_dynamics(system, tt, y[:n], y[n:], p, A, anc, baumgarte)[1][i][0], -1))
            kinds.append(("lift-off", i))
        for j in range(nc):
            if j in A:
                continue
            c = system.contacts[j]
            if armed[j]:
                funcs.append(_Watch(lambda tt, y, c=c: c.gap(y[:n]), -1))
                kinds.append(("landing", j))
            else:
                funcs.append(_Watch(lambda tt, y, c=c: c.gap(y[:n]) - SQRT_EPS, +1))
                kinds.append(("arm", j))
        sol = solve_ivp(rhs, (t, tf), x, method="DOP853", rtol=rtol, atol=atol, events=funcs, dense_output=True)
        if sol.status == -1:
            raise SolveFailed(f"simulate_contact: integration failed in mode {_mode_name(system, A)} at t = {t}: "
                              f"{sol.message}", None)
        t_e, x_e = float(sol.t[-1]), sol.y[:, -1].copy()
        segments.append((t, t_e, _mode_name(system, A), sol.sol, x.copy()))
        seg_anchors.append(anc)
        steps_t.append(sol.t[1:])
        steps_x.append(sol.y[:, 1:].T)
        same_time = same_time + 1 if t_e - t <= 1e-12 * max(1.0, abs(t)) else 0
        if same_time > 20:
            raise SolveFailed(f"simulate_contact: the contact mode keeps changing at t = {t_e} (no consistent mode)",
                              None)
        t, x = t_e, x_e
        if sol.status != 1:
            break
        fired = [kinds[k] for k in range(len(funcs)) if len(sol.t_events[k])]
        q = x[:n]
        for kind, j in fired:
            if kind == "arm":
                armed[j] = True
        landed = [j for kind, j in fired if kind == "landing"]
        lifted = [i for kind, i in fired if kind == "lift-off"]
        if not landed and not lifted:
            continue
        candidates = tuple(sorted(set(A) | set(landed)))
        if landed:
            x[n:] = inelastic_impact(system, q, x[n:], p, candidates)
            for j in landed:
                anchors[j] = float(np.asarray(system.contacts[j].point(q)).ravel()[0])
        new = complementary_mode(system, t, q, x[n:], p, candidates, anchors, exclude=lifted)
        if new is None:
            raise SolveFailed(f"simulate_contact: no consistent contact mode at t = {t}", None)
        for kind, j in fired:
            if kind != "arm":
                events.append(Event(t, kind, system.contacts[j].name, _mode_name(system, A), _mode_name(system, new)))
        for j in set(A) | set(landed):
            if j not in new:
                armed[j] = False
                anchors.pop(j, None)
        current = new
        if not new:
            status, message = "lost_contact", f"every contact is lost at t = {t:.9g}"
            events.append(Event(t, "lost-contact", "", _mode_name(system, A), ""))
        segments.append((t, t, _mode_name(system, new), None, x.copy()))
        seg_anchors.append(dict(anchors))
    sim = ContactSimulation(np.concatenate(steps_t), np.vstack(steps_x), events, segments,
                            [s[2] for s in segments], status=status, message=message, anchors=seg_anchors)
    if t_eval is not None:
        te = np.asarray(t_eval, dtype=float)
        if status != "ok":
            te = te[te <= t + 1e-12]
        sim.t, sim.x = te, sim.state(te)
    return sim
