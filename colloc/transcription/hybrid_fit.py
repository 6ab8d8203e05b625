"""The nonlinear program of a :class:`~colloc.HybridProblem`: multi-phase Radau collocation
(:func:`colloc.transcribe_phases`) of every trial, joined by the guards and reset maps of
the model, with the switching times as unknowns.

Unknowns: the parameters (scaled by their start values), then per trial its initial state,
its switching times τ_1 < … < τ_{m} (the phase boundaries; the record's ends are the first
and last), and the collocation states.  Constraints:

* the collocation defects of every phase (its mode's dynamics);
* at each switching time the guard that ends the phase is zero, ``g(τ_i, x(τ_i⁻), p) = 0``,
  and the next phase starts from its reset ``x(τ_i⁺) = reset(τ_i, x(τ_i⁻), p)``;
* the watched guards stay on the side they come from inside each phase (``−direction·g ≥ 0``
  at every collocation point; a trajectory that crossed a guard unnoticed would not be the
  model's) — the event-driven simulator's rule, written for the optimizer;
* the switching times increase by at least a tenth of the sampling step and stay inside the
  record ("bounded by the data").

The objective is ``½ Σ w (x_s(t_k) − y_k)²``, each sample read by the collocation
polynomial of the phase and interval that hold it.  Which phase and interval hold a sample
depends on the switching times: it is assigned at the current values (:func:`assign`) and
the solving layer re-assigns and re-solves until it no longer changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ..definition.hybrid import Guard
from ..definition.hybrid_problem import HybridProblem
from .grid import radau_basis

__all__ = ["HybridNLP", "TrialLayout", "as_column", "assign", "input_values", "read_input"]


def as_column(value) -> ca.SX:
    """A user function's return value (a list, a NumPy array of symbols, a CasADi column)
    as one CasADi column."""
    if isinstance(value, ca.MX):
        raise TypeError("a hybrid model's functions are evaluated on SX symbols; got an MX expression")
    if isinstance(value, ca.SX | ca.DM):
        return ca.SX(value)
    items = list(np.ravel(np.asarray(value, dtype=object))) if not isinstance(value, list | tuple) else list(value)
    return ca.vertcat(*[ca.SX(v) if isinstance(v, int | float | np.floating | np.integer) else v for v in items])


def _symbols(x: ca.SX) -> np.ndarray:
    """A CasADi column as a NumPy object array of scalars (so that ``x[0]``, unpacking and
    NumPy arithmetic work as on the simulator's arrays)."""
    out = np.empty(x.shape[0], dtype=object)
    for i in range(x.shape[0]):
        out[i] = x[i]
    return out


def _hermite() -> ca.Function:
    s, v0, v1, d0, d1 = (ca.SX.sym(n) for n in ("s", "v0", "v1", "d0", "d1"))
    s2, s3 = s * s, s * s * s
    return ca.Function("hermite", [s, v0, v1, d0, d1], [(2 * s3 - 3 * s2 + 1) * v0 + (s3 - 2 * s2 + s) * d0
                                                         + (3 * s2 - 2 * s3) * v1 + (s3 - s2) * d1])


_HERMITE = _hermite()


def read_input(time: np.ndarray, values, k: int, t):
    """An input at ``t`` in the sample step ``k`` (``time[k] ≤ t ≤ time[k + 1]``, or a little
    outside it): the cubic Hermite piece through ``values[k]``, ``values[k + 1]`` with the
    Catmull–Rom slopes (central differences; one-sided at the record's ends).  ``values`` may be
    numbers or CasADi symbols (an errors-in-variables input), ``t`` a number or an expression."""
    n = len(time)

    def slope(i):
        lo, hi = max(i - 1, 0), min(i + 1, n - 1)
        return (values[hi] - values[lo]) / (time[hi] - time[lo])

    h = time[k + 1] - time[k]
    out = _HERMITE((t - time[k]) / h, values[k], values[k + 1], h * slope(k), h * slope(k + 1))
    return float(out) if isinstance(out, ca.DM) else out


#: Sample steps on either side of the one an NLP's time is in at the start values that its input
#: read covers exactly (the switching times, and with them the collocation times, move in the
#: solve); beyond them the outermost cubic piece is read, at most one step further.
INPUT_WINDOW = 2


def _step(time: np.ndarray, t: float) -> int:
    return int(np.clip(np.searchsorted(time, t, side="right") - 1, 0, len(time) - 2))


def input_values(time, samples: dict) -> Callable:
    """``t → {input: value}`` of inputs given by their ``samples`` at ``time`` (numbers), by
    :func:`read_input`: what the simulator reads (:func:`colloc.simulate_hybrid`)."""
    time = np.asarray(time, dtype=float)
    arrays = {u: np.asarray(v, dtype=float) for u, v in samples.items()}
    return lambda t: {u: float(read_input(time, v, _step(time, float(t)), float(t))) for u, v in arrays.items()}


@dataclass
class TrialLayout:
    """One trial's phases: the ``sequence`` of modes, the ``guards`` between them, the
    switching times ``switches`` (numbers: the current values), the collocation
    ``intervals`` of each phase, the sampling step ``dt`` and the ``bands``."""

    sequence: list
    guards: list
    switches: np.ndarray
    intervals: list
    dt: float
    #: half-widths of bands around the switching times whose samples are left out of the fit
    #: (while a switching time is still moving between re-assignments; 0: every sample fitted)
    bands: np.ndarray | None = None

    def kept(self, times: np.ndarray) -> np.ndarray:
        """Whether each time is fitted (outside every band)."""
        keep = np.ones(len(times), dtype=bool)
        for tau, band in zip(self.switches, self.bands if self.bands is not None else ()):
            if band > 0:
                keep &= np.abs(times - tau) > band
        return keep

    def phase_of(self, times: np.ndarray) -> np.ndarray:
        """The phase holding each time (a sample at a switching time belongs to the later phase)."""
        return np.searchsorted(self.switches, times, side="right")


def assign(layout: TrialLayout, time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(phase, interval) of each sample at the current switching times."""
    t0, tf = float(time[0]), float(time[-1])
    bounds = np.concatenate([[t0], layout.switches, [tf]])
    phase = layout.phase_of(time)
    n = np.asarray(layout.intervals)[phase]
    h = (bounds[phase + 1] - bounds[phase]) / n
    k = np.clip(np.floor((time - bounds[phase]) / h), 0, n - 1).astype(int)
    return phase, k


#: Pieces an input read by :func:`_window` chooses among: the sample step a time is in at the
#: start values and INPUT_WINDOW steps on either side.
_SLOTS = 2 * INPUT_WINDOW + 1


def _window_function() -> ca.Function:
    """``(t, num, vals) → input at t``: :func:`read_input` over the window of sample steps a
    time may be in (one if_else chain; see :func:`_window_stencil` for ``num`` and ``vals``)."""
    t, num, vals = ca.SX.sym("t"), ca.SX.sym("num", 7, _SLOTS), ca.SX.sym("vals", 6, _SLOTS)

    def piece(s):
        tk, h, den0, den1, _thr, lo, hi = (num[i, s] for i in range(7))
        v0, v1, a0, b0, a1, b1 = (vals[i, s] for i in range(6))
        ts = ca.fmin(ca.fmax(t, lo), hi)
        return _HERMITE((ts - tk) / h, v0, v1, h * (b0 - a0) / den0, h * (b1 - a1) / den1)

    expr = piece(0)
    for s in range(1, _SLOTS):
        expr = ca.if_else(t < num[4, s], piece(s), expr)
    return ca.Function("input_window", [t, num, vals], [expr])


_WINDOW = _window_function()


def _window_stencil(time: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The numbers (S × 7: the step's start, length, the two slopes' spans, the time below
    which the step is taken, the clamps of the time read) and the sample indices (S × 6: the
    step's two values, the two values of each slope) of the pieces of the steps around ``k``
    that :func:`_window_function` reads, as :func:`_read_window` does: the highest step first,
    then down to the lowest; unused slots are never taken (threshold −∞)."""
    n = len(time)
    lo, hi = max(k - INPUT_WINDOW, 0), min(k + INPUT_WINDOW, n - 2)
    step = float(time[1] - time[0])
    steps = list(range(hi, lo - 1, -1))
    num, idx = np.zeros((_SLOTS, 7)), np.zeros((_SLOTS, 6), dtype=int)
    for s in range(_SLOTS):
        j = steps[min(s, len(steps) - 1)]
        a0, b0, a1, b1 = max(j - 1, 0), min(j + 1, n - 1), max(j, 0), min(j + 2, n - 1)
        clamp_lo = time[lo] - step if j == lo and s > 0 else -np.inf
        clamp_hi = time[hi + 1] + step if s == 0 else np.inf
        thr = time[j + 1] if s < len(steps) else -np.inf
        num[s] = (time[j], time[j + 1] - time[j], time[b0] - time[a0], time[b1] - time[a1], thr, clamp_lo, clamp_hi)
        idx[s] = (j, j + 1, a0, b0, a1, b1)
    return num, idx


class _Functions:
    """The per-point CasADi Functions of one model (built once, mapped over every interval,
    collocation point, switching time and sample): each mode's defects of one interval, each
    guard's value in each mode, each reset map.  The inputs of the model are arguments ``u``
    (their values at the point), the parameters ``p`` are in physical units."""

    def __init__(self, model, states: int, parameters: list, inputs: list, degree: int):
        self.nx, self.nu, self.degree = states, len(inputs), degree
        self.names = parameters
        basis = radau_basis(degree)
        self.tau, self._C = basis.tau, basis.derivative.T  # C[j, k]: derivative of basis j at point k
        self._x, self._t, self._t0 = ca.SX.sym("x", states), ca.SX.sym("t"), ca.SX.sym("t0")
        self._p, self._u = ca.SX.sym("p", len(parameters)), ca.SX.sym("u", len(inputs))
        self._pd = {n: self._p[i] for i, n in enumerate(parameters)}
        values = {name: self._u[i] for i, name in enumerate(inputs)}
        self.model = model.with_inputs(lambda _t: values)
        self._guards = {g.name: g for g in self.model.all_guards()}
        self._defect: dict = {}
        self._guard: dict = {}
        self._reset: dict = {}
        xs, r = ca.SX.sym("X", states, degree + 1), ca.SX.sym("r")
        #: the state at position r (in interval lengths) of an interval with nodes X (start, then xc)
        self.read = ca.Function("read", [xs[:, 0], xs[:, 1:], r],
                                [ca.mtimes(xs, ca.vertcat(*basis.values(r)))])

    def defect(self, mode: str) -> ca.Function:
        """``(x0, xc, t, h, t0, p, u) → nx × d``: the collocation defects of one interval of
        ``mode`` (``t`` the d collocation times, ``u`` the inputs there, ``t0`` the phase's start)."""
        if mode not in self._defect:
            d, nx = self.degree, self.nx
            x0, xc = ca.SX.sym("x0", nx), ca.SX.sym("xc", nx, d)
            t, h, u = ca.SX.sym("t", 1, d), ca.SX.sym("h"), ca.SX.sym("u", self.nu, d)
            rhs = ca.Function("rhs", [self._x, self._t, self._t0, self._p, self._u],
                              [as_column(self.model.mode(mode).rhs(self._t, _symbols(self._x), self._pd, self._t0))])
            X = [x0] + [xc[:, j] for j in range(d)]
            cols = [sum(self._C[m, j] * X[m] for m in range(d + 1))
                    - h * rhs(X[j], t[j - 1], self._t0, self._p, u[:, j - 1]) for j in range(1, d + 1)]
            self._defect[mode] = ca.Function(f"defect_{mode}", [x0, xc, t, h, self._t0, self._p, u],
                                             [ca.horzcat(*cols)])
        return self._defect[mode]

    def guard(self, name: str, mode: str) -> ca.Function:
        """``(t, x, t0, p, u) → g − offset`` of the guard ``name`` in ``mode``."""
        if (name, mode) not in self._guard:
            value = HybridNLP._guard(self._guards[name], self._t, self._x, self._pd, mode, self._t0)
            self._guard[name, mode] = ca.Function(f"guard_{name}_{mode}",
                                                  [self._t, self._x, self._t0, self._p, self._u], [value])
        return self._guard[name, mode]

    def reset(self, name: str) -> ca.Function | None:
        """``(t, x, p, u) → x⁺`` of the guard ``name`` (None: the state goes on unchanged)."""
        guard = self._guards[name]
        if guard.reset is None:
            return None
        if name not in self._reset:
            value = as_column(guard.reset(self._t, _symbols(self._x), self._pd))
            self._reset[name] = ca.Function(f"reset_{name}", [self._t, self._x, self._p, self._u], [value])
        return self._reset[name]

    def sides(self, mode: str) -> list:
        """The guards watched in ``mode`` with a direction (kept on their side inside its phases)."""
        return [g for g in self.model.all_guards() if g.watches(mode) and g.direction != 0]


def _affine(n_cols: int, a, b, wa, wb) -> ca.DM:
    """The sparse matrix M with ``(M E)[r] = wa[r]·E[a[r]] + wb[r]·E[b[r]]`` (``a[r] ≠ b[r]``;
    ``E`` a trial's phase boundaries: its start, its switching times, its end)."""
    n = len(a)
    return ca.DM.triplet(np.concatenate([np.arange(n), np.arange(n)]).tolist(),
                         np.concatenate([a, b]).astype(int).tolist(),
                         np.concatenate([wa, wb]).astype(float).tolist(), n, n_cols)


class HybridNLP:
    """The NLP of ``problem`` for the ``layouts`` (one per trial) at the start values ``p0``
    (dict), ``x0s`` (initial states) and ``x_guess`` (per trial, ``t → state``).

    Built in CasADi MX on one Function per mode, guard and reset (:class:`_Functions`), each
    mapped over the places it applies (intervals, collocation points, switching times,
    samples) with the numbers of those places (times, sample positions, the inputs' pieces)
    as arguments: the size of the symbolic graph does not grow with the record."""

    def __init__(self, problem: HybridProblem, layouts: list, p0: dict, x0s: list, x_guess: list,
                 degree: int = 3, sides: bool = True):
        self.problem, self.layouts, self.degree = problem, layouts, degree
        names = problem.parameters
        nx, npar, d = len(problem.states), len(names), degree
        tau = radau_basis(degree).tau
        self.scale = np.array([abs(p0[n]) if p0[n] != 0 else 1.0 for n in names])
        free = not problem.fixed_switches
        # the unknowns: the parameters (scaled), per trial its initial state, its switching
        # times and its collocation states, then the errors-in-variables inputs' true values
        self.p_index = np.arange(npar)
        self.x0_index, self.tau_index, xc_offsets = [], [], []
        offset = npar
        w0 = [np.array([p0[n] for n in names]) / self.scale]
        lbw = [np.array([problem.bounds[n][0] for n in names]) / self.scale]
        ubw = [np.array([problem.bounds[n][1] for n in names]) / self.scale]
        for trial, lay, x0, xg in zip(problem.trials, layouts, x0s, x_guess):
            m = len(lay.switches) if free else 0
            self.x0_index.append(offset + np.arange(nx))
            self.tau_index.append(offset + nx + np.arange(m))
            xc_offsets.append(offset + nx + m)
            t0, tf = float(trial.time[0]), float(trial.time[-1])
            ends = np.concatenate([[t0], lay.switches, [tf]])
            guess = [np.asarray(xg(a + (k + tj) * (b - a) / n), dtype=float)
                     for a, b, n in zip(ends[:-1], ends[1:], lay.intervals) for k in range(n) for tj in tau]
            w0 += [np.asarray(x0, dtype=float), np.asarray(lay.switches[:m], dtype=float), *guess]
            lbw += [np.full(nx, -np.inf), np.full(m, t0), np.full(len(guess) * nx, -np.inf)]
            ubw += [np.full(nx, np.inf), np.full(m, tf), np.full(len(guess) * nx, np.inf)]
            offset += nx + m + len(guess) * nx
        self.input_index: list[dict] = []
        for trial in problem.trials:
            self.input_index.append({})
            for u in problem.inputs:
                if u in problem.input_noise:
                    measured = np.asarray(trial[u], dtype=float)
                    self.input_index[-1][u] = offset + np.arange(len(measured))
                    w0.append(measured)
                    lbw.append(np.full(len(measured), -np.inf))
                    ubw.append(np.full(len(measured), np.inf))
                    offset += len(measured)
        self.w = W = ca.MX.sym("w", offset)
        self.w0 = np.concatenate(w0)
        self.lbw, self.ubw = np.concatenate(lbw), np.concatenate(ubw)
        #: per trial, the switching times the inputs' reads were placed at
        self.built_switches = [np.array(lay.switches, dtype=float) for lay in layouts]
        p = ca.DM(self.scale) * W[:npar]  # physical units
        g: list = []
        lbg: list = []
        ubg: list = []
        kinds: list = []

        def add(expr, lower, upper, kind):
            expr = ca.vec(expr)
            g.append(expr)
            lbg.append(np.broadcast_to(lower, expr.shape[0]).astype(float))
            ubg.append(np.broadcast_to(upper, expr.shape[0]).astype(float))
            kinds.extend([kind] * expr.shape[0] if isinstance(kind, str) else kind)

        cache: dict = {}
        self._trials: list = []
        for n_trial, (model, trial, lay) in enumerate(zip(problem.models, problem.trials, layouts)):
            if id(model) not in cache:
                cache[id(model)] = _Functions(model, nx, names, problem.inputs, degree)
            fns = cache[id(model)]
            time = trial.time
            t0, tf = float(time[0]), float(time[-1])
            m = len(lay.switches)
            tau_m = W[self.tau_index[n_trial].tolist()] if free and m else ca.DM(np.asarray(lay.switches, float))
            E = ca.vertcat(ca.DM(t0), tau_m, ca.DM(tf)) if m else ca.vertcat(ca.DM(t0), ca.DM(tf))
            e_num = np.concatenate([[t0], lay.switches, [tf]])
            if free and m:
                gap = 0.1 * lay.dt
                add(ca.vertcat(tau_m[0] - t0, ca.diff(tau_m), tf - tau_m[m - 1]), gap, np.inf,
                    f"switching times in order ({trial.name})")
            counts = np.asarray(lay.intervals, dtype=int)
            first = np.concatenate([[0], np.cumsum(counts)])  # each phase's first interval
            N = int(first[-1])
            phase = np.repeat(np.arange(len(counts)), counts)  # of each interval
            k_in = np.arange(N) - first[phase]
            n_of = counts[phase].astype(float)
            XC = ca.reshape(W[xc_offsets[n_trial]:xc_offsets[n_trial] + N * d * nx], nx, N * d)
            # per collocation point (interval-major): its phase, time and its phase's start
            pt_phase = np.repeat(phase, d)
            q = (np.repeat(k_in, d) + np.tile(tau, N)) / np.repeat(n_of, d)
            m_time = _affine(m + 2, pt_phase, pt_phase + 1, 1 - q, q)
            T = ca.mtimes(m_time, E)
            T_num = np.asarray(m_time @ e_num, dtype=float).ravel()
            H = ca.mtimes(_affine(m + 2, phase, phase + 1, -1 / n_of, 1 / n_of), E)
            T0 = ca.mtimes(_affine(m + 2, phase, phase + 1, np.ones(N), np.zeros(N)), E)
            U = self._inputs(W, trial, n_trial, T, T_num)
            sw = ca.mtimes(_affine(m + 2, np.arange(1, m + 1), np.zeros(m, dtype=int), np.ones(m), np.zeros(m)), E) \
                if m else ca.DM(0, 1)
            U_sw = self._inputs(W, trial, n_trial, sw, e_num[1:-1])
            # the start of each interval: the end of the one before (the initial state for the
            # first), through the reset map of the guard that ends a phase
            pool = ca.horzcat(W[self.x0_index[n_trial].tolist()], XC[:, [k * d + d - 1 for k in range(N - 1)]])
            entries: list = []
            entry_cols = list(range(N))
            by_reset: dict = {}
            for i in range(1, len(counts)):
                fn = fns.reset(lay.guards[i - 1].name)
                if fn is not None:
                    by_reset.setdefault(lay.guards[i - 1].name, []).append(i)
            for name, phases in by_reset.items():
                cols = [int(first[i]) for i in phases]
                out = fns.reset(name).map(len(phases))(E[phases].T, pool[:, cols], p, U_sw[:, [i - 1 for i in phases]])
                for j, c in enumerate(cols):
                    entry_cols[c] = N + len(entries) + j
                entries.append(out)
            starts = ca.horzcat(pool, *entries)[:, entry_cols] if entries else pool
            # the collocation defects, one mapped Function per mode, in the order of the intervals
            outs, order = [], []
            for mode in dict.fromkeys(lay.sequence):
                ints = np.flatnonzero(np.isin(phase, [i for i, mm in enumerate(lay.sequence) if mm == mode]))
                pts = (ints[:, None] * d + np.arange(d)[None, :]).ravel().tolist()
                outs.append(fns.defect(mode).map(len(ints))(starts[:, ints.tolist()], XC[:, pts], T[pts].T,
                                                            H[ints.tolist()].T, T0[ints.tolist()].T, p, U[:, pts]))
                order.extend(pts)
            inverse = np.empty(N * d, dtype=int)
            inverse[np.asarray(order)] = np.arange(N * d)
            add(ca.horzcat(*outs)[:, inverse.tolist()], 0.0, 0.0, f"collocation defect ({trial.name})")
            # the guard that ends each phase is zero at its switching time
            last = [int(first[i + 1]) * d - 1 for i in range(m)]  # each phase's last point
            groups: dict = {}
            for i in range(m):
                groups.setdefault((lay.guards[i].name, lay.sequence[i]), []).append(i)
            for (name, mode), where in groups.items():
                value = fns.guard(name, mode).map(len(where))(sw[where].T, XC[:, [last[i] for i in where]],
                                                              E[where].T, p, U_sw[:, where])
                add(value, 0.0, 0.0, [f"guard {name} at switch {i + 1} of {trial.name}" for i in where])
            if sides:  # the watched guards on their side at every point inside the phase
                inner = np.ones(N * d, dtype=bool)
                inner[[int(first[i + 1]) * d - 1 for i in range(len(counts))]] = False
                for mode in dict.fromkeys(lay.sequence):
                    inside = np.flatnonzero(inner & np.isin(pt_phase, [i for i, mm in enumerate(lay.sequence)
                                                                       if mm == mode]))
                    if not len(inside):
                        continue
                    at = inside.tolist()
                    t0_pts = T0[(inside // d).tolist()]
                    for guard in fns.sides(mode):
                        value = fns.guard(guard.name, mode).map(len(at))(T[at].T, XC[:, at], t0_pts.T, p, U[:, at])
                        add(-guard.direction * value, 0.0, np.inf,
                            [f"guard {guard.name} on its side in phase {i + 1} ({mode}) of {trial.name}"
                             for i in pt_phase[inside]])
            self._trials.append({"E": E, "starts": starts, "XC": XC, "first": first, "read": fns.read})
        self.g = ca.vertcat(*g)
        self.lbg, self.ubg = np.concatenate(lbg), np.concatenate(ubg)
        self.kinds = kinds
        self.read_samples()

    def _inputs(self, W: ca.MX, trial, n_trial: int, times: ca.MX | ca.DM, numbers: np.ndarray) -> ca.MX | ca.DM:
        """The model's inputs (n_inputs × P) at P times (``times``, expressions of the switching
        times, whose current values are ``numbers``), each read in the sample steps around the
        one holding its current value (:func:`_window_stencil`)."""
        P = len(numbers)
        if not self.problem.inputs or P == 0:
            return ca.DM(len(self.problem.inputs), P)
        time = np.asarray(trial.time, dtype=float)
        stencils = [_window_stencil(time, _step(time, float(t))) for t in numbers]
        num = ca.DM(np.concatenate([s[0] for s in stencils]).T)  # 7 × S·P
        idx = np.concatenate([s[1] for s in stencils])  # S·P × 6
        rows = []
        for u in self.problem.inputs:
            vals: ca.MX | ca.DM
            if u in self.input_index[n_trial]:
                vals = W[self.input_index[n_trial][u][idx.ravel()].tolist()]
            else:
                vals = ca.DM(np.asarray(trial[u], dtype=float)[idx.ravel()])
            rows.append(_WINDOW.map(P)(ca.vec(times).T, num, ca.reshape(vals, 6, _SLOTS * P)))
        return ca.vertcat(*rows)

    def read_samples(self) -> None:
        """The fitted samples (``reads``: per trial, nx × samples; ``res``: the weighted
        residuals), each read in the phase and interval that hold it at the layouts' current
        switching times, by that interval's polynomial, whose position moves with the
        switching times.  Called again after the switching times have moved."""
        problem, d = self.problem, self.degree
        res, self.reads = [], []
        for n, (trial, lay, built) in enumerate(zip(problem.trials, self.layouts, self._trials)):
            time = np.asarray(trial.time, dtype=float)
            phase, interval = assign(lay, time)
            m2 = len(lay.switches) + 2
            n_of = np.asarray(lay.intervals, dtype=float)[phase]
            E = built["E"]
            start = ca.mtimes(_affine(m2, phase, phase + 1, np.ones(len(time)), np.zeros(len(time))), E)
            h = ca.mtimes(_affine(m2, phase, phase + 1, -1 / n_of, 1 / n_of), E)
            r = (ca.DM(time) - start) / h - ca.DM(interval.astype(float))
            g = built["first"][phase] + interval
            cols = (g[:, None] * d + np.arange(d)[None, :]).ravel().tolist()
            states = built["read"].map(len(time))(built["starts"][:, g.tolist()], built["XC"][:, cols], r.T)
            self.reads.append(states)
            for s, wgt in problem.fit.items():
                if s not in trial:
                    continue
                j = problem.states.index(s)
                present = np.flatnonzero(np.isfinite(trial[s]) & lay.kept(time))
                y = np.asarray(trial[s])[present]
                res.append(math.sqrt(wgt) * (states[j, present.tolist()].T - ca.DM(y)))
            for u, idx in self.input_index[n].items():
                res.append((self.w[idx.tolist()] - ca.DM(np.asarray(trial[u], dtype=float))) / problem.input_noise[u])
        self.res = ca.vertcat(*res)
        self.num_observations = int(self.res.shape[0])

    def input_estimates(self, w: np.ndarray) -> list[dict]:
        """Per trial, each errors-in-variables input's estimate at the samples."""
        return [{u: np.asarray(w[idx], dtype=float) for u, idx in index.items()} for index in self.input_index]

    @staticmethod
    def _guard(guard: Guard, t, x, p, mode: str, t0):
        value = guard.function(t, _symbols(x), p, mode, t0) if guard.with_mode else guard.function(t, _symbols(x), p)
        return as_column(value)[0] - guard.offset

    def parameters(self, w: np.ndarray) -> dict:
        """The parameters (physical units) from a value of the unknowns."""
        return dict(zip(self.problem.parameters, (self.scale * w[self.p_index]).tolist()))

    def functions(self) -> dict:
        """CasADi Functions of the unknowns: ``res`` (weighted residuals), ``g`` (the
        constraints, whose rows :attr:`kinds` names), ``states`` (per trial, nx × samples), and
        the Jacobians ``jac_res`` and ``jac_g``."""
        return {"res": ca.Function("res", [self.w], [self.res]), "g": ca.Function("g", [self.w], [self.g]),
                "jac_res": ca.Function("jac_res", [self.w], [ca.jacobian(self.res, self.w)]),
                "jac_g": ca.Function("jac_g", [self.w], [ca.jacobian(self.g, self.w)]),
                "states": [ca.Function(f"states_{k}", [self.w], [s]) for k, s in enumerate(self.reads)]}
