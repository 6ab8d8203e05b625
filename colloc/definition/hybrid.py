"""Hybrid models: modes with their own dynamics, guards, resets, time events, timed modes.

Wieber & Billet (2006, §5.1, Fig. 4) integrate dynamics that change qualitatively (contacts,
calcium clocks, contractile elements) by integrating the current *mode*, stopping at an
*event*, handling it and restarting.  This module holds the definition of such a model only;
the event-driven simulator is :func:`colloc.simulation.hybrid.simulate_hybrid`.

Vocabulary (the names of the API):

* :class:`Mode` — a named set of ODEs ``ẋ = rhs(t, x, p, t0)`` (``t0`` the time the mode was
  entered, for dynamics that follow a clock such as the falling calcium ramp of §4.1), with
  an optional implicit ``residual(xdot, x, p, t, t0)`` (default ``xdot − rhs``) used by the
  collocation transcription, and an optional parameter-dependent ``duration`` after which the
  mode is left for ``then`` (the calcium clock's τ1 and τ2).
* :class:`Guard` — a watched function ``g(t, x, p)``; the event is its zero crossing in the
  given ``direction`` (+1 upward, −1 downward, 0 both) while in one of ``modes``.  When it
  fires, the optional ``reset`` maps the state and ``target`` picks the next mode.
* :class:`Switch` — a two-sided switch watched through **one** function (§5.2: watch φ, not
  λ): mode ``above`` is left when ``g`` falls through 0, mode ``below`` when ``g`` rises
  through ``+hysteresis`` (√ε by default, §5.2).  It expands into two guards.
* :class:`TimeEvent` — events at known times, or at times that depend on the parameters
  (a stimulation pulse at ``t_k`` starts a calcium cycle at ``t_k + τ``).
* :class:`HybridModel` — the modes, guards, switches and time events, the initial mode, and
  the order in which events closer than ``100 ε`` are processed (:data:`EVENT_ORDER`).

A model may declare measured **inputs** (``inputs=("platform_acc",)``): every function of the
model reads an input's value at its time ``t`` as ``p[name]``, beside the parameters.  The
simulator and the fit give them through :meth:`HybridModel.with_inputs` (the measured samples
interpolated, or, for an input measured with noise, its estimate: errors-in-variables,
``HybridProblem(input_noise=...)``).

A model may read some of its states **delayed** by a parameter (a feedback with a transport or
neural delay): ``HybridModel(delay="tau", delayed=("theta",))`` gives every function of the
model, beside ``the state ``x``, the value of ``theta`` at ``t − tau``
as ``p["theta_delayed"]`` (:func:`delayed_name`); before the record's first time the history is
the initial state.  The simulator integrates such a model by the method of steps, the fit reads
the delayed state by the collocation polynomial of the interval that holds ``t − tau``, in
whichever earlier phase that is.

Mode targets are a mode name or a function of the current mode name (so that a product of
discrete states, e.g. clock × contractile element, can change one component only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from ..base.errors import ModelError

if TYPE_CHECKING:
    import casadi as ca

__all__ = ["EPS", "EVENT_ORDER", "SQRT_EPS", "Guard", "HybridModel", "Mode", "Switch", "TimeEvent", "delayed_name"]

#: Machine epsilon ε_n of doubles (Wieber & Billet 2006, §5.2: 2⁻⁵² ≈ 2.22e-16).
EPS = float(np.finfo(float).eps)
#: The hysteresis of §5.2, √ε_n ≈ 1.49e-8.
SQRT_EPS = math.sqrt(EPS)
#: Events closer than ``100 ε`` (relative to max(1, |t|)) form one group and are processed
#: in this order of kinds: first the expiry of a timed mode, then time events, then guards
#: (each kind in declaration order).  §5.2 warns that closer events may be missed by an ODE
#: solver's event location; the simulator handles them as a group instead.
EVENT_ORDER = ("duration", "time", "guard")

Target = "str | Callable[[str], str] | None"

#: A time, state or parameter vector as a mode's, guard's or reset's functions receive it:
#: numbers when the model is simulated, CasADi symbols when it is transcribed.
HybridValue: TypeAlias = "float | np.ndarray | ca.SX | ca.MX"
#: The parameters as those functions take them: whatever the caller passes (usually a dict
#: name → value when simulating, CasADi symbols when transcribing), unchecked here.
HybridParameters: TypeAlias = Any


def delayed_name(state: str) -> str:
    """The key under which a model's functions find ``state`` at ``t − delay`` in ``p``
    (``HybridModel(delayed=...)``): ``"<state>_delayed"``."""
    return f"{state}_delayed"


def _target(target, mode: str) -> str:
    if target is None:
        return mode
    return target(mode) if callable(target) else target


@dataclass(frozen=True)
class Mode:
    """One mode of a hybrid model (see the module docstring)."""

    name: str
    rhs: Callable
    residual: Callable | None = None
    duration: Callable | float | None = None
    then: object = None

    def implicit(self, xdot: HybridValue, x: HybridValue, p: HybridParameters, t: HybridValue,
                 t0: HybridValue) -> HybridValue:
        """The mode's residual ``0 = f(ẋ, x, p, t, t0)`` (``ẋ − rhs`` unless given)."""
        if self.residual is not None:
            return self.residual(xdot, x, p, t, t0)
        return xdot - self.rhs(t, x, p, t0)

    def length(self, p: HybridParameters) -> float | None:
        """The mode's parameter-dependent duration (None: the mode lasts until an event)."""
        if self.duration is None:
            return None
        return float(self.duration(p)) if callable(self.duration) else float(self.duration)

    def next_mode(self) -> str:
        """The mode entered when this timed mode expires."""
        return _target(self.then, self.name)


@dataclass(frozen=True)
class Guard:
    """A state event: ``function(t, x, p)`` crossing zero in ``direction`` in one of ``modes``
    (None: every mode); then ``reset(t, x, p) → x`` and mode ``target``."""

    name: str
    function: Callable
    direction: int = 0
    modes: Sequence[str] | None = None
    target: object = None
    reset: Callable | None = None
    offset: float = 0.0
    with_mode: bool = False

    def __post_init__(self):
        if self.direction not in (-1, 0, 1):
            raise ModelError(f"guard {self.name}: direction must be -1, 0 or +1, got {self.direction}")

    def watches(self, mode: str) -> bool:
        """Whether the guard is watched in ``mode``."""
        return self.modes is None or mode in self.modes

    def value(self, t: HybridValue, x: HybridValue, p: HybridParameters, mode: str | None = None,
              t0: float | None = None) -> float:
        """``function(t, x, p)`` (or ``function(t, x, p, mode, t0)`` with ``with_mode``, for a
        function of the mode's clock) minus the offset."""
        g = self.function(t, x, p, mode, t0) if self.with_mode else self.function(t, x, p)
        return float(g) - self.offset


@dataclass(frozen=True)
class Switch:
    """A two-sided switch between the modes of ``above`` (g > 0) and those of ``below``,
    watched through the single function ``g`` with the hysteresis of §5.2 on the way back.

    ``above``/``below`` are sequences of mode names; ``to_below``/``to_above`` map a mode name
    to the mode on the other side (so the switch can change one component of a product mode).
    """

    name: str
    function: Callable
    above: Sequence[str]
    below: Sequence[str]
    to_below: object
    to_above: object
    hysteresis: float = SQRT_EPS
    with_mode: bool = False

    def guards(self) -> list[Guard]:
        """The two guards: down through 0 (from ``above``), up through ``+hysteresis`` (from ``below``)."""
        return [
            Guard(f"{self.name}:down", self.function, -1, tuple(self.above), self.to_below, with_mode=self.with_mode),
            Guard(f"{self.name}:up", self.function, +1, tuple(self.below), self.to_above, offset=self.hysteresis,
                  with_mode=self.with_mode),
        ]

    def side(self, mode: str) -> int:
        """+1 for a mode of ``above``, −1 for one of ``below``, 0 otherwise."""
        return 1 if mode in self.above else -1 if mode in self.below else 0

    def consistent(self, mode: str, t: HybridValue, x: HybridValue, p: HybridParameters,
                   t0: float | None = None) -> str:
        """The mode on the side of the switch that ``g`` is on (with the hysteresis band
        ``(0, hysteresis)`` keeping the current side)."""
        g = float(self.function(t, x, p, mode, t0) if self.with_mode else self.function(t, x, p))
        side = self.side(mode)
        if side > 0 and g < 0:
            return _target(self.to_below, mode)
        if side < 0 and g > self.hysteresis:
            return _target(self.to_above, mode)
        return mode


@dataclass(frozen=True)
class TimeEvent:
    """Events at the times ``times`` (an array, or a function of the parameters returning
    one); at each, the state is mapped by ``reset`` and the mode set to ``target``."""

    name: str
    times: Callable | Sequence[float]
    target: object = None
    reset: Callable | None = None

    def at(self, p: HybridParameters) -> np.ndarray:
        """The event times (sorted) for parameters ``p``."""
        times = self.times(p) if callable(self.times) else self.times
        return np.sort(np.atleast_1d(np.asarray(times, dtype=float)))


@dataclass
class HybridModel:
    """A hybrid model: ``modes`` (by name), ``guards``, ``switches``, ``time_events``, the
    state names, and the initial mode; ``delay`` (a parameter, the delay in the model's time
    unit) and the ``delayed`` states that every function reads at ``t − delay`` as
    ``p[delayed_name(state)]`` (the initial state before the record)."""

    name: str
    states: Sequence[str]
    modes: Sequence[Mode]
    initial_mode: str
    guards: Sequence[Guard] = ()
    switches: Sequence[Switch] = ()
    time_events: Sequence[TimeEvent] = ()
    parameters: Sequence[str] = ()
    inputs: Sequence[str] = ()
    delay: str | None = None
    delayed: Sequence[str] = ()
    _by_name: dict = field(init=False, repr=False)

    def __post_init__(self):
        self._by_name = {m.name: m for m in self.modes}
        if len(self._by_name) != len(self.modes):
            raise ModelError(f"hybrid model {self.name}: duplicate mode names")
        if self.initial_mode not in self._by_name:
            raise ModelError(f"hybrid model {self.name}: unknown initial mode {self.initial_mode!r}")
        for s in self.switches:
            for m in (*s.above, *s.below):
                self.mode(m)
        clash = sorted(set(self.inputs) & set(self.parameters))
        if clash:
            raise ModelError(f"hybrid model {self.name}: {', '.join(clash)} both an input and a parameter")
        if (self.delay is None) != (not self.delayed):
            raise ModelError(f"hybrid model {self.name}: a delay needs both delay= (its parameter) and delayed= "
                             "(the states read delayed)")
        if self.delay is not None:
            if self.delay not in self.parameters:
                raise ModelError(f"hybrid model {self.name}: delay={self.delay!r} is not one of its parameters "
                                 f"({', '.join(self.parameters)})")
            if self.time_events or any(m.duration is not None for m in self.modes):
                raise ModelError(f"hybrid model {self.name}: a delay applies to models without time events or timed "
                                 "modes")
            for s in self.delayed:
                if s not in self.states:
                    raise ModelError(f"hybrid model {self.name}: delayed={s!r} is not one of its states "
                                     f"({', '.join(self.states)})")
            clash = sorted({delayed_name(s) for s in self.delayed} & {*self.inputs, *self.parameters})
            if clash:
                raise ModelError(f"hybrid model {self.name}: {', '.join(clash)} is the name of a delayed state")

    def delayed_names(self) -> list[str]:
        """The keys of the delayed states in ``p`` (:func:`delayed_name`)."""
        return [delayed_name(s) for s in self.delayed]

    def resets_delayed(self, guard: Guard) -> bool:
        """Whether ``guard``'s reset map may change a delayed state (its value minus the state is
        not identically zero, traced on CasADi symbols): its jump is fed back a delay later."""
        if guard.reset is None or not self.delayed:
            return False
        import casadi as ca  # here: the definitions import without CasADi

        x = ca.SX.sym("x", len(self.states))
        p = {n: ca.SX.sym(n) for n in (*self.parameters, *self.inputs, *self.delayed_names())}
        out = guard.reset(ca.SX.sym("t"), np.array([x[i] for i in range(x.shape[0])], dtype=object), p)
        y = out if isinstance(out, ca.SX) else ca.vertcat(*[ca.SX(v) for v in np.ravel(np.asarray(out, dtype=object))])
        return any(not ca.simplify(y[i] - x[i]).is_zero() for i in (list(self.states).index(s) for s in self.delayed))

    def delays_as_inputs(self) -> HybridModel:
        """The model with its delayed states declared as inputs (what the simulator binds, piece
        by piece of the method of steps) and no delay."""
        if self.delay is None:
            return self
        return replace(self, inputs=(*self.inputs, *self.delayed_names()), delay=None, delayed=())

    def with_inputs(self, values: Callable[[Any], Mapping[str, Any]]) -> HybridModel:
        """The model with its inputs bound: ``values(t)`` → {input: value at t} (numbers, or CasADi
        expressions in a fit), merged into the ``p`` that every function receives.  The bound
        model declares no inputs; timed modes' durations and time events' times see the
        parameters only."""
        if not self.inputs:
            return self

        def at(t, p):
            return {**p, **values(t)}

        modes = [replace(m, rhs=(lambda t, x, p, t0, f=m.rhs: f(t, x, at(t, p), t0)),
                         residual=None if m.residual is None else
                         (lambda xdot, x, p, t, t0, f=m.residual: f(xdot, x, at(t, p), t, t0))) for m in self.modes]

        def function(g):
            if g.with_mode:
                return lambda t, x, p, mode, t0, f=g.function: f(t, x, at(t, p), mode, t0)
            return lambda t, x, p, f=g.function: f(t, x, at(t, p))

        def reset(r):
            return None if r is None else (lambda t, x, p, f=r: f(t, x, at(t, p)))

        return HybridModel(self.name, self.states, modes, self.initial_mode,
                           guards=[replace(g, function=function(g), reset=reset(g.reset)) for g in self.guards],
                           switches=[replace(s, function=function(s)) for s in self.switches],
                           time_events=[replace(e, reset=reset(e.reset)) for e in self.time_events],
                           parameters=self.parameters)

    def mode(self, name: str) -> Mode:
        """The mode named ``name``."""
        try:
            return self._by_name[name]
        except KeyError:
            raise ModelError(f"hybrid model {self.name}: unknown mode {name!r}") from None

    def all_guards(self) -> list[Guard]:
        """Guards, then the two guards of each switch."""
        out = list(self.guards)
        for s in self.switches:
            out += s.guards()
        return out

    def consistent_mode(self, mode: str, t: HybridValue, x: HybridValue, p: HybridParameters,
                        t0: float | None = None) -> str:
        """Apply every switch's side test to ``mode`` (after an event, before restarting)."""
        for s in self.switches:
            mode = s.consistent(mode, t, x, p, t0)
        return mode
