"""The nonlinear program of a *timed* :class:`~colloc.HybridProblem`: a model whose modes
change at time events (:class:`~colloc.TimeEvent`, e.g. a stimulation pulse at ``t_k``
starting a calcium cycle at ``t_k + τ``) and at the ends of timed modes (a ``duration``, e.g.
the cycle's plateau τ1), collocated phase by phase on Radau points.

The phase boundaries are those events' times, known numbers or affine functions of the
parameters (``t_k + τ``, ``t_k + τ + τ1``); they move with the parameters but are not
unknowns of their own.  Which phases a record has (a plateau cut short by the next pulse,
a fall that reaches rest) is read at the current estimate by walking the events in time
order (:meth:`TimedClock.walk`); each choice made on the way is kept by a linear constraint
``c ≥ 0`` on the parameters (the event that came first stays first), relaxed by
:data:`SLACK` collocation intervals.  The mode of each phase is the one an event-driven
simulation at the estimate is in at the phase's middle (so that a :class:`~colloc.Switch` of
the model picks a side).  Samples are read by the polynomial of the interval that holds them
at the estimate; the solving layer (:mod:`colloc.solving.hybrid_events`) lays the phases
again at each solution and solves until they settle.

The NLP is assembled from one CasADi Function per interval
(:class:`~colloc.transcription.multiphase.IntervalChain`, mapped over every interval), with
exact Hessian and constraint Jacobian from per-interval and per-sample blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ..base.errors import ModelError
from ..definition.hybrid import HybridModel, TimeEvent, _target
from .hybrid_fit import _symbols, as_column
from .layout import ChainLayout
from .multiphase import IntervalChain

__all__ = ["SLACK", "TimedClock", "TimedNLP", "UnlaidMode", "carry", "same_layout", "timed_layout", "timed_rates"]

#: The relaxation of the structure constraints and the rounds' settling tolerance, in
#: collocation intervals (``max_step``): an event exactly on another (a 50 Hz train whose
#: plateau τ1 equals the pulse period) would otherwise be a degenerate active constraint.
SLACK = 1e-3

Affine = tuple[float, np.ndarray]  # a + b·q, q the scaled parameters


def _affine_of(value, q: ca.SX, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``(a, B)`` with ``value = a + B·q`` (``value`` a model function's return at the
    symbolic parameters); a value that is not affine in them is refused, naming ``what``."""
    col = as_column(value)
    jac = ca.jacobian(col, q)
    if ca.depends_on(jac, q):
        raise ModelError(f"{what} must be affine in the parameters (a known time, or one such as t_k + tau) "
                         "for the timed hybrid fit")
    a, b = ca.Function("affine", [q], [col, jac])(np.zeros(q.shape[0]))
    return np.asarray(a, dtype=float).ravel(), np.asarray(ca.DM(b).full(), dtype=float).reshape(col.shape[0], -1)


class UnlaidMode(KeyError):
    """A phase in a mode the rates were not built for (:func:`timed_layout`'s ``modes``)."""

    def __init__(self, mode: str):
        super().__init__(mode)
        self.mode = mode


@dataclass
class TimedPhase:
    """A phase of the walk: its mode (by the events' targets), start and end (affine)."""

    mode: str
    start: Affine
    end: Affine


class TimedClock:
    """The time events and timed-mode durations of ``model`` as affine functions of the
    scaled parameters ``q`` (``names`` in order, physical = ``scale · q``)."""

    def __init__(self, model: HybridModel, names: Sequence[str], scale: np.ndarray):
        self.model = model
        n = len(names)
        q = ca.SX.sym("q", n)
        P = {name: float(scale[i]) * q[i] for i, name in enumerate(names)}
        self.events: list[tuple[float, np.ndarray, TimeEvent]] = []
        for ev in model.time_events:
            if ev.reset is not None:
                raise ModelError(f"hybrid model {model.name!r}: time event {ev.name!r} has a reset map; the timed "
                                 "fit takes time events that change the mode only")
            times = ev.times(P) if callable(ev.times) else ev.times
            a, B = _affine_of(times, q, f"the times of time event {ev.name!r}")
            self.events += [(float(a[i]), B[i], ev) for i in range(len(a))]
        self.durations: dict[str, tuple[float, np.ndarray]] = {}
        for m in model.modes:
            if m.duration is not None:
                d = m.duration(P) if callable(m.duration) else m.duration
                a, B = _affine_of([d], q, f"the duration of mode {m.name!r}")
                self.durations[m.name] = (float(a[0]), B[0])
        self.n = n

    def walk(self, t0: float, tf: float, qv: np.ndarray) -> tuple[list[TimedPhase], list[Affine]]:
        """The phases of a record on ``[t0, tf]`` at the scaled parameters ``qv``, and the
        affine values ``c`` whose sign (``c ≥ 0``) keeps each choice of the walk: at every
        step, whichever comes first of the next time event, the current timed mode's end and
        the record's end (an event at the very time a mode ends comes first); and the time
        events' order at ``qv``."""
        zero = np.zeros(self.n)

        def val(x: Affine) -> float:
            return float(x[0] + x[1] @ qv)

        events = sorted(((a, b, ev) for a, b, ev in self.events), key=lambda e: e[0] + e[1] @ qv)
        events = [e for e in events if t0 < e[0] + e[1] @ qv < tf]
        phases: list[TimedPhase] = []
        # the time events stay in their order at the estimate (rows no parameter moves are dropped
        # by the layout: events of one family shifted by the same delay keep their order anyway)
        keep: list[Affine] = [(b1[0] - a1[0], b1[1] - a1[1]) for a1, b1 in
                              zip(((a, b) for a, b, _ in events[:-1]), ((a, b) for a, b, _ in events[1:]))]
        mode = self.model.initial_mode
        start: Affine = (float(t0), zero)
        end: Affine = (float(tf), zero)
        i = 0
        while True:
            if i < len(events):
                a, b, ev = events[i]
                nxt: Affine = (a, b)
            else:
                nxt, ev = end, None
            if mode in self.durations:
                da, db = self.durations[mode]
                expiry: Affine = (start[0] + da, start[1] + db)
                if not val(expiry) > val(start):
                    raise ModelError(f"hybrid model {self.model.name!r}: timed mode {mode!r} lasts "
                                     f"{val(expiry) - val(start)} s at the estimate; a timed mode must last > 0 "
                                     "(bound the parameters of its duration)")
                if val(expiry) < val(nxt):  # the mode ends first
                    keep.append((nxt[0] - expiry[0], nxt[1] - expiry[1]))
                    phases.append(TimedPhase(mode, start, expiry))
                    mode, start = self.model.mode(mode).next_mode(), expiry
                    continue
                keep.append((expiry[0] - nxt[0], expiry[1] - nxt[1]))
            phases.append(TimedPhase(mode, start, nxt))
            if ev is None:
                return phases, keep
            mode, start = _target(ev.target, mode), nxt
            i += 1


def timed_rates(model: HybridModel, names: Sequence[str], scale: np.ndarray, state_scale: np.ndarray,
                modes: Sequence[str]) -> ca.Function:
    """The rates of every mode of ``model`` as one CasADi Function ``(x, s, data, q) → ẋ``:
    ``x`` the states over ``state_scale``, ``s`` the time since the phase began, ``data`` =
    (a one-hot flag per mode of ``modes``, then the phase's start ``a, b`` with
    ``t0 = a + b·q``), ``q`` the parameters over ``scale``; ``ẋ`` over ``state_scale``."""
    nx, n, nm = len(state_scale), len(names), len(modes)
    x, s, data, q = ca.SX.sym("x", nx), ca.SX.sym("s"), ca.SX.sym("data", nm + 1 + n), ca.SX.sym("q", n)
    P = {name: float(scale[i]) * q[i] for i, name in enumerate(names)}
    t0 = data[nm] + ca.dot(data[nm + 1:], q)
    X = _symbols(x * ca.DM(state_scale))
    rates = ca.SX.zeros(nx)
    for k, m in enumerate(modes):
        rates += data[k] * as_column(model.mode(m).rhs(t0 + s, X, P, t0))
    return ca.Function("timed_rates", [x, s, data, q], [rates / ca.DM(state_scale)])


def timed_layout(clock: TimedClock, time: np.ndarray, qv: np.ndarray, max_step: float, chain: IntervalChain,
                 modes: Sequence[str], mode_at: Callable[[float], str | None],
                 state_guess: Callable[[np.ndarray], np.ndarray], state_scale: np.ndarray,
                 previous: ChainLayout | None = None) -> tuple[ChainLayout, list[str]]:
    """One record laid at the scaled parameters ``qv``: its phases (by :meth:`TimedClock.walk`,
    each in the mode ``mode_at`` its middle, the walk's own mode when that gives None),
    ``ceil(length / max_step)`` intervals each (a phase keeps the ``previous`` layout's count
    while its phases are the same and its step stays within 25 % of ``max_step``), the
    structure constraints, the samples' intervals, the rates' data and the states' start
    values (``state_guess``, physical units at given times).  Also the walk's modes.  A phase in
    a mode not among ``modes`` (those the rates were built for) raises :class:`UnlaidMode`."""
    t0, tf = float(time[0]), float(time[-1])
    walked, keep = clock.walk(t0, tf, qv)
    lengths = [float(ph.end[0] - ph.start[0] + (ph.end[1] - ph.start[1]) @ qv) for ph in walked]
    names = []
    for ph, length in zip(walked, lengths):
        mid = float(ph.start[0] + ph.start[1] @ qv) + 0.5 * length
        names.append(mode_at(mid) or ph.mode)
    counts = [max(1, math.ceil(length / max_step - 1e-3)) for length in lengths]  # no flip-flop at a multiple
    if previous is not None and tuple(names) == tuple(previous.modes):
        counts = [c0 if 0.5 * max_step < length / c0 <= 1.25 * max_step else c
                  for c, c0, length in zip(counts, previous.intervals, lengths)]
    t_abs, t_rel, h, start_a, start_b, flags = [], [], [], [], [], []
    for ph, name, n in zip(walked, names, counts):
        sa, sb = ph.start
        step_a, step_b = (ph.end[0] - sa) / n, (ph.end[1] - sb) / n
        k = np.arange(n)
        t_abs.append((sa + k * step_a, sb[None, :] + k[:, None] * step_b[None, :]))
        t_rel.append((k * step_a, k[:, None] * step_b[None, :]))
        h.append((np.full(n, step_a), np.broadcast_to(step_b, (n, len(sb)))))
        start_a.append(np.full(n, sa))
        start_b.append(np.broadcast_to(sb, (n, len(sb))))
        flag = np.zeros(len(modes))
        if name not in modes:
            raise UnlaidMode(name)
        flag[list(modes).index(name)] = 1.0
        flags.append(np.broadcast_to(flag, (n, len(modes))))
    T, R, H = ((np.concatenate([p[0] for p in v]), np.vstack([p[1] for p in v])) for v in (t_abs, t_rel, h))
    if keep:
        Ka, Kb = np.array([c[0] for c in keep]), np.vstack([c[1] for c in keep])
        informative = np.any(Kb != 0, axis=1)  # a row that no parameter moves cannot change
        Ka, Kb = Ka[informative], Kb[informative]
        # a regular train repeats the same constraint at every cycle: keep one of each
        _, first = np.unique(np.round(np.column_stack([Ka, Kb]), 12), axis=0, return_index=True)
        first = np.sort(first)
        K = (Ka[first] + SLACK * max_step, Kb[first])
    else:
        K = (np.zeros(0), np.zeros((0, len(qv))))
    t_num, h_num = T[0] + T[1] @ qv, H[0] + H[1] @ qv
    # a sample on a boundary (to 1 ns) is read at the start of the later interval, whichever side
    # of it the estimate lies: either is exact, and the choice does not flip from round to round
    interval = np.clip(np.searchsorted(t_num - 1e-9, time, side="right") - 1, 0, len(t_num) - 1)
    data = np.column_stack([np.vstack(flags), np.concatenate(start_a), np.vstack(start_b)]).T
    tc = (t_num[:, None] + chain.tau[None, :] * h_num[:, None]).ravel()
    x_guess = state_guess(tc) / state_scale[:, None]
    layout = ChainLayout(tuple(names), tuple(counts), T, H, data, interval, x_guess, t_rates=R, keep=K,
                         t_num=t_num, h_num=h_num, time=np.asarray(time, dtype=float))
    return layout, [ph.mode for ph in walked]


def same_layout(a: ChainLayout, b: ChainLayout) -> bool:
    """Whether two layouts make the same NLP (the start values aside)."""
    arrays = ("t", "h", "t_rates", "keep")
    return (a.interval_modes == b.interval_modes and np.array_equal(a.interval, b.interval)
            and np.array_equal(a.data, b.data)
            and all(np.array_equal(x, y) for f in arrays for x, y in zip(getattr(a, f), getattr(b, f))))


def carry(chain: IntervalChain, x0: np.ndarray, old: ChainLayout, xc: np.ndarray, new: ChainLayout,
          qv: np.ndarray) -> np.ndarray:
    """The collocation states (scaled, ``vec`` order) of layout ``new`` read from the solution
    ``xc`` (nx × N·d) on layout ``old``, both at the scaled parameters ``qv``: the next solve
    starts where the last one ended, whatever the intervals became."""
    t_old = old.t[0] + old.t[1] @ qv
    t_new, h_new = new.t[0] + new.t[1] @ qv, new.h[0] + new.h[1] @ qv
    tc = (t_new[:, None] + chain.tau[None, :] * h_new[:, None]).ravel()
    interval = np.clip(np.searchsorted(t_old, tc, side="right") - 1, 0, len(t_old) - 1)
    x = chain.values(x0, ca.DM(xc), interval, tc, old.t, old.h, ca.DM(qv))
    return np.asarray(ca.DM(x).full()).ravel(order="F")


class TimedNLP:
    """The NLP of one solve: the scaled parameters ``q``, then per trial its collocation
    states (``vec`` of nx × N·d, over the state scale), from the known initial states ``x0s``
    (scaled).  ``fits`` per trial: ``(state index, weight, sample times, values)`` of each
    fitted state.  The objective is ``½ Σ w (x_s(t_k) − y_k)² / M`` (M fitted samples)."""

    def __init__(self, chains: Sequence[IntervalChain], layouts: Sequence[ChainLayout], x0s: Sequence[np.ndarray],
                 fits: Sequence[list], state_scale: np.ndarray, n_par: int):
        q = ca.MX.sym("q", n_par)
        d = chains[0].degree
        nx = len(state_scale)
        sizes = [nx * lay.size * d for lay in layouts]
        n_obs = sum(len(y) for fit in fits for *_, y in fit)
        lam_f = ca.MX.sym("lam_f")
        kept = [lay.keep if lay.keep is not None else (np.zeros(0), np.zeros((0, n_par))) for lay in layouts]
        lam_g = ca.MX.sym("lam_g", int(sum(sizes)) + int(sum(len(k[0]) for k in kept)))
        ws, gs, keeps, resid, blocks, jac_blocks, reads = [], [], [], [], [], [], []
        offset, g_offset = n_par, 0
        p_index = np.arange(n_par)
        self.x_index = []
        for k, (chain, lay, x0, size, keep) in enumerate(zip(chains, layouts, x0s, sizes, kept)):
            n = lay.size
            assert lay.t_rates is not None  # ChainLayout.__post_init__ sets it
            xc = ca.MX.sym(f"x_{k}", nx, n * d)
            gs.append(ca.vec(chain.defects(x0, xc, lay.t_rates, lay.h, lay.data, q)))
            time = np.asarray(lay.time, dtype=float)
            reads.append(chain.values(x0, xc, lay.interval, time, lay.t, lay.h, q) * ca.DM(state_scale))
            for j, wgt, rows, y in fits[k]:
                c = np.zeros(nx)
                c[j] = state_scale[j]
                sel = lay.interval[rows]
                value = chain.values(x0, xc, sel, time[rows], lay.t, lay.h, q)
                resid.append(math.sqrt(wgt) * (ca.mtimes(ca.DM(c).T, value) - ca.DM(y).T).T)
                blocks.append(chain.fit_block(x0, xc, sel, time[rows], lay.t, lay.h, q, c, y,
                                              wgt * lam_f / max(n_obs, 1), offset, p_index))
            if keep[0].size:
                keeps.append(ca.DM(keep[0]) + ca.mtimes(ca.DM(keep[1]), q))
            ws.append(ca.vec(xc))
            lam = ca.reshape(lam_g[g_offset:g_offset + size], nx, n * d)
            blocks.append(chain.defect_block(x0, xc, lay.t_rates, lay.h, lay.data, q, lam, offset, p_index))
            jac_blocks.append(chain.jacobian_block(x0, xc, lay.t_rates, lay.h, lay.data, q, offset, p_index,
                                                   g_offset))
            self.x_index.append(offset + np.arange(size))
            offset += size
            g_offset += size
        V = ca.vertcat(q, *ws)
        g_keep = ca.vertcat(*keeps) if keeps else ca.MX(0, 1)
        n_var, n_con = V.shape[0], g_offset + g_keep.shape[0]
        keep_rows = ca.DM(n_con, n_var)  # the linear structure constraints: constant rows in q
        if keeps:
            keep_rows[g_offset:, :n_par] = np.vstack([k[1] for k in kept if k[0].size])
        G = ca.vertcat(*gs, g_keep)
        #: the unknowns, the residuals (weighted), the constraints (defects, then structure)
        self.V, self.res, self.g = V, ca.vertcat(*resid), G
        self.n_defects, self.n_keep = g_offset, int(g_keep.shape[0])
        self.num_observations = n_obs
        #: per trial, the states (physical units) at every sample, nx × samples
        self.reads = reads
        #: the upper triangle of the Lagrangian's Hessian and the constraints' Jacobian, as IPOPT takes them
        self.hess = ca.Function("hess_lag", [V, ca.MX(0, 1), lam_f, lam_g], [chains[0].hessian(n_var, blocks)],
                                ["x", "p", "lam_f", "lam_g"], ["triu_hess_gamma_x_x"])
        self.jac = ca.Function("jac_g", [V, ca.MX(0, 1)], [G, chains[0].jacobian(n_con, n_var, jac_blocks,
                                                                                   keep_rows)],
                               ["x", "p"], ["g", "jac_g_x"])

    def bounds_g(self) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the constraints: the defects zero, the structure constraints ≥ 0."""
        return (np.zeros(self.n_defects + self.n_keep),
                np.concatenate([np.zeros(self.n_defects), np.full(self.n_keep, np.inf)]))
