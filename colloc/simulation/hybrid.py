"""Event-driven simulation of hybrid models (Wieber & Billet 2006, §5, Fig. 4).

Integrate the current mode with SciPy's ``solve_ivp`` (its event location, Brent's method on
the dense output); stop at the first event; handle it (reset, new mode); restart.  The
numerical-precision rules of §5.2 are built in:

* every event is the zero crossing of one watched function (a :class:`~colloc.definition.
  hybrid.Guard`; a :class:`~colloc.definition.hybrid.Switch` watches one function for both
  directions);
* a guard that has fired is disarmed until its function has moved back by √ε_n to the side
  it came from (so a state that sits on the surface after a reset cannot fire it twice), and
  a switch's way back is at ``+√ε_n`` (hysteresis);
* events closer than ``100 ε_n`` (times relative to max(1, |t|)) are handled as one group in
  the order :data:`~colloc.definition.hybrid.EVENT_ORDER`; after each stop every watched
  function is checked for a crossing that the integrator did not report, so that no event of
  a close pair is missed, and none is reported twice.

Time events and the expiry of timed modes are integration end points (never located by root
finding), so they are met exactly.

A model with a delay (``HybridModel(delay=..., delayed=...)``) is integrated by the method of
steps: pieces no longer than the delay, in each of which the delayed states are an input read
from the pieces already done (the initial state before the first time); a piece also ends a
delay after every event, where a jump or kink of the state is fed back, so that the integrator
never steps over a discontinuity of the rates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.integrate import solve_ivp

from ..base.errors import ModelError, SolveFailed
from ..definition.hybrid import EPS, SQRT_EPS, HybridModel, HybridParameters, _target

__all__ = ["Event", "HybridSimulation", "simulate_hybrid"]


@dataclass(frozen=True)
class Event:
    """One handled event: its time, its kind (``"guard"``, ``"time"``, ``"duration"``,
    ``"switch"``), the name of what fired, and the modes before and after."""

    time: float
    kind: str
    name: str
    before: str
    after: str


@dataclass
class HybridSimulation:
    """Result of :func:`simulate_hybrid`: ``t``, ``x`` (rows = times) at the requested times,
    the handled ``events``, and the ``segments`` ``(t_start, t_end, mode, dense)``."""

    t: np.ndarray
    x: np.ndarray
    events: list = field(default_factory=list)
    segments: list = field(default_factory=list)
    modes: list = field(default_factory=list)

    def event_times(self, kind: str | None = None, name: str | None = None) -> np.ndarray:
        """Times of the handled events of ``kind`` whose name starts with ``name``."""
        return np.array([e.time for e in self.events
                         if (kind is None or e.kind == kind) and (name is None or e.name.startswith(name))])

    def state(self, times: ArrayLike) -> np.ndarray:
        """The state at ``times`` (after the events at a time that is an event time)."""
        times = np.atleast_1d(np.asarray(times, dtype=float))
        out = np.empty((len(times), self.x.shape[1]))
        starts = np.array([s[0] for s in self.segments])
        idx = np.clip(np.searchsorted(starts, times, side="right") - 1, 0, len(starts) - 1)
        for k, (t, i) in enumerate(zip(times, idx)):
            t0, t1, _mode, dense, x0 = self.segments[i]
            out[k] = x0 if dense is None or t1 <= t0 else dense(min(max(t, t0), t1))
        return out



class _Watch:
    """An event function of ``solve_ivp``: ``g(t, y)`` crossing zero in ``direction`` ends the
    integration (``terminal``)."""

    def __init__(self, g: Callable[..., float], direction: int) -> None:
        self.g, self.direction, self.terminal = g, direction, True

    def __call__(self, t: float, y: np.ndarray) -> float:
        return self.g(t, y)

def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 100 * EPS * max(1.0, abs(a), abs(b))


def simulate_hybrid(model: HybridModel, x0: ArrayLike, t_span: tuple[float, float], p: HybridParameters, *,
                    t_eval: ArrayLike | None = None, mode: str | None = None,
                    method: str = "DOP853", rtol: float = 1e-12, atol: float = 1e-12,
                    max_events: int = 1_000_000,
                    inputs: Callable[[float], Mapping[str, float]] | None = None) -> HybridSimulation:
    """Simulate ``model`` from ``x0`` over ``t_span`` with parameters ``p`` (any object the
    model's functions accept, usually a dict).  A model with inputs needs ``inputs``: a function
    ``t → {input: value}`` (e.g. :func:`colloc.signals.sampled.input_values` of samples).

    Returns a :class:`HybridSimulation` with the state at ``t_eval`` (default: the
    integrator's own steps) and the list of events, each with its time and kind.
    """
    t0, tf = map(float, t_span)
    if not tf > t0:
        raise ModelError(f"simulate_hybrid: t_span must increase, got {t_span}")
    if model.delay is not None:
        return _method_of_steps(model, x0, (t0, tf), p, t_eval=t_eval, mode=mode, method=method, rtol=rtol,
                                atol=atol, max_events=max_events, inputs=inputs)
    x = np.array(x0, dtype=float)
    if model.inputs:
        if inputs is None:
            raise ModelError(f"simulate_hybrid: model {model.name!r} has the inputs {', '.join(model.inputs)}; "
                             "give inputs=(t → {input: value})")
        model = model.with_inputs(inputs)
    guards = model.all_guards()
    pending = sorted(((tt, i, ev) for i, ev in enumerate(model.time_events) for tt in ev.at(p)
                      if t0 - 100 * EPS * max(1, abs(t0)) <= tt <= tf), key=lambda r: (r[0], r[1]))
    qi = 0
    current = model.consistent_mode(mode or model.initial_mode, t0, x, p, t0)
    entered = t0
    length = model.mode(current).length(p)
    expiry = None if length is None else t0 + length
    disarmed: dict[int, int] = {}  # guard index -> side it must return to (±1)
    events: list[Event] = []
    segments: list = []
    steps_t: list = [np.array([t0])]
    steps_x: list = [x[None, :]]
    t = t0

    def handle(t_e: float, x_e: np.ndarray, fired: list[int]):
        nonlocal current, entered, expiry, qi, x
        # 1. expiry of the timed mode
        if expiry is not None and (expiry <= t_e or _close(expiry, t_e)):
            before = current
            current = model.mode(current).next_mode()
            entered, length = t_e, model.mode(current).length(p)
            expiry = None if length is None else t_e + length
            events.append(Event(t_e, "duration", before, before, current))
        # 2. time events due (in time order, then declaration order)
        while qi < len(pending) and (pending[qi][0] <= t_e or _close(pending[qi][0], t_e)):
            _tt, _i, ev = pending[qi]
            qi += 1
            before = current
            if ev.reset is not None:
                x_e = np.asarray(ev.reset(t_e, x_e, p), dtype=float)
            if ev.target is not None:
                current = _target(ev.target, before)
                entered, length = t_e, model.mode(current).length(p)
                expiry = None if length is None else t_e + length
            events.append(Event(t_e, "time", ev.name, before, current))
        # 3. guards, in declaration order
        for gi in fired:
            g = guards[gi]
            if not g.watches(current):
                continue
            before = current
            if g.reset is not None:
                x_e = np.asarray(g.reset(t_e, x_e, p), dtype=float)
            if g.target is not None:
                current = _target(g.target, before)
                if current != before:
                    entered, length = t_e, model.mode(current).length(p)
                    expiry = None if length is None else t_e + length
            events.append(Event(t_e, "guard", g.name, before, current))
            disarmed[gi] = -g.direction if g.direction else -int(np.sign(g.value(t_e, x_e, p, current, entered)) or 1)
        # 4. switches: the side the watched function is on (keeps the clock of the mode)
        new = model.consistent_mode(current, t_e, x_e, p, entered)
        if new != current:
            events.append(Event(t_e, "switch", "consistency", current, new))
            current = new
        x = x_e

    if pending and (pending[0][0] <= t0 or _close(pending[0][0], t0)):
        handle(t0, x, [])
    while t < tf and not _close(t, tf):
        if len(events) > max_events:
            raise SolveFailed(f"simulate_hybrid: more than {max_events} events before t = {t}", None)
        t_stop = tf
        if qi < len(pending):
            t_stop = min(t_stop, pending[qi][0])
        if expiry is not None:
            t_stop = min(t_stop, expiry)
        mode_obj = model.mode(current)
        for gi in list(disarmed):
            if not guards[gi].watches(current):
                del disarmed[gi]
        watched = [gi for gi, g in enumerate(guards) if g.watches(current)]
        h_start = {gi: guards[gi].value(t, x, p, current, entered) for gi in watched}
        fired: list[int] = []
        was_disarmed = set(disarmed)
        x_e = x
        if t_stop > t and not _close(t, t_stop):
            funcs: list[_Watch] = []
            for gi in watched:
                g = guards[gi]
                if gi in disarmed:  # re-arm once back by √ε on the side it came from
                    side = disarmed[gi]
                    funcs.append(_Watch(lambda tt, y, g=g, side=side: g.value(tt, y, p, current, entered)
                                        - side * SQRT_EPS, side))
                else:
                    funcs.append(_Watch(lambda tt, y, g=g: g.value(tt, y, p, current, entered), g.direction))
            t_in = entered
            sol = solve_ivp(lambda tt, y, m=mode_obj, t0=t_in: m.rhs(tt, y, p, t0), (t, t_stop), x, method=method,
                            rtol=rtol, atol=atol, events=funcs or None, dense_output=True)
            if sol.status == -1:
                raise SolveFailed(f"simulate_hybrid: integration failed in mode {current} at t = {t}: {sol.message}",
                                  None)
            t_e, x_e = float(sol.t[-1]), sol.y[:, -1].copy()
            segments.append((t, t_e, current, sol.sol, x.copy()))
            steps_t.append(sol.t[1:])
            steps_x.append(sol.y[:, 1:].T)
            if sol.status == 1:
                for k, gi in enumerate(watched):
                    if len(sol.t_events[k]) and gi in disarmed:
                        del disarmed[gi]  # back on its side: armed again
            for gi in watched:  # reported or not: every crossing up to t_e, none twice
                if gi in was_disarmed:
                    continue
                g = guards[gi]
                h0, h1 = h_start[gi], g.value(t_e, x_e, p, current, entered)
                k = watched.index(gi)
                reported = sol.status == 1 and len(sol.t_events[k]) > 0
                crossed = (np.sign(h1) != np.sign(h0) or h1 == 0) and h0 != 0 and (
                    g.direction == 0 or g.direction * (h1 - h0) > 0)
                if reported or crossed:
                    fired.append(gi)
            t = t_e
        else:
            segments.append((t, t, current, None, x.copy()))
            t = max(t, t_stop)
        handle(t, x_e, fired)
        segments.append((t, t, current, None, x.copy()))
    ts = np.concatenate(steps_t)
    xs = np.vstack(steps_x)
    sim = HybridSimulation(ts, xs, events, [s for s in segments], [s[2] for s in segments])
    if t_eval is not None:
        te = np.asarray(t_eval, dtype=float)
        sim.t, sim.x = te, sim.state(te)
    return sim


def _method_of_steps(model: HybridModel, x0: ArrayLike, t_span: tuple[float, float], p: HybridParameters, *,
                     t_eval: ArrayLike | None, mode: str | None, inputs: Callable[[float], Mapping[str, float]] | None,
                     max_events: int, **integrator) -> HybridSimulation:
    """:func:`simulate_hybrid` of a model with a delay (see the module docstring)."""
    t0, tf = t_span
    tau = float(p[model.delay])
    if not (np.isfinite(tau) and tau > 0):
        raise ModelError(f"simulate_hybrid: the delay {model.delay} of model {model.name!r} must be finite and > 0, "
                         f"got {tau!r}")
    if model.inputs and inputs is None:
        raise ModelError(f"simulate_hybrid: model {model.name!r} has the inputs {', '.join(model.inputs)}; "
                         "give inputs=(t → {input: value})")
    plain = model.delays_as_inputs()
    cols = [list(model.states).index(s) for s in model.delayed]
    keys = model.delayed_names()
    x = np.array(x0, dtype=float)
    first = x[cols].copy()
    done = HybridSimulation(np.zeros(0), np.zeros((0, len(x))), [], [], [])

    def bound(t: float) -> dict:
        s = t - tau
        past = first if s <= t0 or not done.segments else done.state([s])[0][cols]
        return {**(inputs(t) if inputs is not None else {}), **dict(zip(keys, past.tolist()))}

    steps_t, steps_x = [np.array([t0])], [x[None, :]]
    breaks: list[float] = []
    t, current = t0, mode
    while tf - t > 1e-12 * max(1.0, abs(tf)):
        end = min([t + tau, tf, *[b for b in breaks if b > t + 1e-12 * max(1.0, abs(t))]])
        piece = simulate_hybrid(plain, x, (t, end), p, mode=current, inputs=bound,
                                max_events=max_events - len(done.events), **integrator)
        done.events += piece.events
        done.segments += piece.segments
        done.modes += piece.modes
        breaks += [e.time + tau for e in piece.events]
        steps_t.append(piece.t[1:])
        steps_x.append(piece.x[1:])
        x, current, t = piece.segments[-1][4].copy(), piece.segments[-1][2], end  # after the events at the end
    done.t, done.x = np.concatenate(steps_t), np.vstack(steps_x)
    if t_eval is not None:
        te = np.asarray(t_eval, dtype=float)
        done.t, done.x = te, done.state(te)
    return done
