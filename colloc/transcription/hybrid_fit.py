"""The nonlinear program of a :class:`~colloc.HybridProblem`: multi-phase Radau collocation
of every trial, joined by the guards and reset maps of the model, with the switching times as
unknowns (:class:`HybridNLP`, assembled from one small CasADi Function per mode, guard, reset
and sample read, mapped over the places each applies to).

Unknowns: the parameters (scaled by their start values), then per trial its initial state,
its phase boundaries (the record's ends, held fixed, and the switching times τ_1 < … < τ_{m}),
its collocation states and the state entering each phase through a reset map; last the
errors-in-variables inputs' values at the samples.  Constraints:

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

import dataclasses
import math
import time as _time
from collections.abc import Callable
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ..base.compiler import compiled_all, compiler_runs, has_compiler
from ..definition.hybrid import Guard
from ..definition.hybrid_problem import HybridProblem
from ..signals.sampled import HERMITE, input_values, read_input
from .grid import radau_basis
from .multiphase import assemble_hessian, assemble_jacobian
from .nlp import COMPILE_WORK_ABOVE

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


#: Sample steps on either side of the one an NLP's time is in at the start values that its input
#: read covers exactly (the switching times, and with them the collocation times, move in the
#: solve); beyond them the outermost cubic piece is read, at most one step further.
INPUT_WINDOW = 2


def _step(time: np.ndarray, t: float) -> int:
    return int(np.clip(np.searchsorted(time, t, side="right") - 1, 0, len(time) - 2))


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
    #: a model with a delay: the pairs (break, jump) of switching-time positions where a phase
    #: is cut, without an event, a delay after a jump of a delayed state (``guards[break]`` None;
    #: the NLP ties the break's time to the jump's plus the delay), so that no interval's
    #: polynomial has to follow the jump fed back
    ties: list = dataclasses.field(default_factory=list)

    def events(self) -> list[int]:
        """The positions of the switching times that are events (not delay breaks)."""
        return [i for i, g in enumerate(self.guards) if g is not None]

    def merged(self) -> list[str]:
        """The modes of the phases, those cut by a delay break once."""
        return [self.sequence[0]] + [self.sequence[i + 1] for i in self.events()]

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
        return HERMITE((ts - tk) / h, v0, v1, h * (b0 - a0) / den0, h * (b1 - a1) / den1)

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


class _Places:
    """One CasADi Function ``(z, data) → m values`` applied at B places of an NLP: ``z`` the
    NLP variables it reads at a place (one row of ``index``, B × nz), ``data`` that place's
    numbers (one row of ``data``, B × nd).  Its values, and the Jacobian and Hessian blocks of
    every place in the form :func:`assemble_jacobian` and :func:`assemble_hessian` sum."""

    def __init__(self, name: str, out: ca.SX, z: ca.SX, data: ca.SX):
        self.name, self.m, self.nz = name, int(out.shape[0]), int(z.shape[0])
        self._out, self._z, self._data = out, z, data
        self.fn = ca.Function(name, [z, data], [out])
        self._derivatives: dict = {}

    def _derivative(self, kind: str) -> ca.Function:
        if kind not in self._derivatives:
            out, z, data = self._out, self._z, self._data
            if kind == "jac":
                fn = ca.Function(f"{self.name}_jac", [z, data], [ca.jacobian(out, z)])
            elif kind == "hess":
                lam = ca.SX.sym("lam", self.m)
                fn = ca.Function(f"{self.name}_hess", [z, data, lam], [ca.triu(ca.hessian(ca.dot(lam, out), z)[0])])
            else:  # the Hessian of s·½|out|² (a block of residuals in a least-squares objective)
                s = ca.SX.sym("s")
                fn = ca.Function(f"{self.name}_gn", [z, data, s], [ca.triu(ca.hessian(0.5 * s * ca.sumsqr(out), z)[0])])
            self._derivatives[kind] = fn
        return self._derivatives[kind]

    def linear(self) -> bool:
        """Whether the values are affine in ``z`` (no Hessian block)."""
        return self._derivative("hess").sparsity_out(0).nnz() == 0

    def derivatives(self, kinds: tuple[str, ...]) -> list[tuple[str, ca.Function]]:
        """The derivative Functions of ``kinds`` (built now if not yet), with their kinds."""
        return [(kind, self._derivative(kind)) for kind in kinds]

    def replace(self, kind: str, fn: ca.Function) -> None:
        """Use ``fn`` (the same function compiled) for the derivative ``kind``."""
        self._derivatives[kind] = fn

    def _args(self, W, index, data):
        index = np.asarray(index, dtype=int)
        return ca.reshape(W[index.ravel().tolist()], self.nz, index.shape[0]), ca.DM(np.asarray(data, float).T)

    def values(self, W, index, data):
        """The values at every place (m × B)."""
        return self.fn.map(len(index))(*self._args(W, index, data))

    def jacobian_block(self, W, index, data, row_offset: int) -> tuple:
        """The Jacobian blocks of ``vec`` of the values (their rows from ``row_offset``)."""
        index = np.asarray(index, dtype=int)
        rows = row_offset + np.arange(len(index))[:, None] * self.m + np.arange(self.m)[None, :]
        return self._derivative("jac").map(len(index))(*self._args(W, index, data)), rows, index

    def hessian_block(self, W, index, data, lam) -> tuple:
        """The Hessian blocks of ``lam · vec(values)`` (``lam`` m·B)."""
        index = np.asarray(index, dtype=int)
        return (self._derivative("hess").map(len(index))(*self._args(W, index, data),
                                                         ca.reshape(lam, self.m, len(index))), index)

    def square_block(self, W, index, data, s) -> tuple:
        """The Hessian blocks of ``s · ½ |values|²``."""
        index = np.asarray(index, dtype=int)
        return self._derivative("gn").map(len(index))(*self._args(W, index, data), s), index


def _symbols_of(parts: list) -> tuple[ca.SX, list]:
    """One SX column of the named sizes and its pieces."""
    syms = [ca.SX.sym(name, size) for name, size in parts]
    return (ca.vertcat(*syms) if syms else ca.SX(0, 1)), syms


class _Pieces:
    """The :class:`_Places` of one model (built once per NLP): each mode's defects of one
    interval, each guard's value in a mode at one point, each reset map's condition, a sample's
    read.  The model's inputs at a point are read from their samples by
    :func:`_window_function`: those measured with noise (errors-in-variables) from NLP
    variables, the others from the place's numbers."""

    def __init__(self, model, problem: HybridProblem, degree: int):
        self.model, self.d = model, degree
        self.nx, self.np = len(problem.states), len(problem.parameters)
        self.names = problem.parameters
        self.eiv = [u for u in problem.inputs if u in problem.input_noise]
        self.exact = [u for u in problem.inputs if u not in problem.input_noise]
        #: numbers of the input pieces at a point (none without inputs)
        self.n_num = 7 * _SLOTS if problem.inputs else 0
        basis = radau_basis(degree)
        self.tau, self._C, self._basis = basis.tau, basis.derivative.T, basis
        self._guards = {g.name: g for g in model.all_guards()}
        self._cache: dict = {}
        #: a delayed read at a point: its NLP variables (the start and collocation states of the
        #: interval holding t − delay, that interval's phase ends) and numbers (the interval's
        #: place in its phase, the phase's intervals, 1 for the history before the record)
        self.delay_keys = model.delayed_names()
        self.delay_rows = [list(problem.states).index(s) for s in model.delayed]
        self.n_dz = 2 + self.nx * (degree + 1) if self.delay_keys else 0
        self.n_dd = 3 if self.delay_keys else 0
        self.delay = model.delay

    def _delay_parts(self, points: int) -> tuple[list, list]:
        """The symbols' parts of the delayed reads at ``points`` points (none without a delay)."""
        if not self.delay_keys:
            return [], []
        return ([(f"delay_z{j}", self.n_dz) for j in range(points)],
                [(f"delay_data{j}", self.n_dd) for j in range(points)])

    def _delayed(self, zd: ca.SX, dd: ca.SX, t, p: dict) -> dict:
        """{delayed state key: its value at ``t − delay``}: the polynomial of the interval the
        variables ``zd`` (x0, xc, Ea, Eb) and numbers ``dd`` (k, n, history) say holds it, or the
        initial state (``zd``'s x0) before the record."""
        if not self.delay_keys:
            return {}
        nx, d = self.nx, self.d
        x0, xc, ea, eb = zd[:nx], zd[nx:nx * (d + 1)], zd[-2], zd[-1]
        k, n, hist = dd[0], dd[1], dd[2]
        r = (t - p[self.delay] - ea) * n / (eb - ea) - k
        state = ca.mtimes(ca.horzcat(x0, ca.reshape(xc, nx, d)), ca.vertcat(*self._basis.values(r)))
        return {key: hist * x0[i] + (1 - hist) * state[i] for key, i in zip(self.delay_keys, self.delay_rows)}

    def _inputs(self, z_vals: list, num, exact_vals: list, t) -> dict:
        """{input: value at t} from the pieces' numbers ``num`` (7·S) and each input's six
        values per piece (6·S: NLP variables or numbers)."""
        out: dict = {}
        if not self.n_num:
            return out
        nums = ca.reshape(num, 7, _SLOTS)
        for u, v in zip(self.eiv, z_vals):
            out[u] = _WINDOW(t, nums, ca.reshape(v, 6, _SLOTS))
        for u, v in zip(self.exact, exact_vals):
            out[u] = _WINDOW(t, nums, ca.reshape(v, 6, _SLOTS))
        return out

    def _p(self, ph, scale) -> dict:
        return {n: scale[i] * ph[i] for i, n in enumerate(self.names)}

    def defect(self, mode: str) -> _Places:
        """z = [x0, xc (nx·d), Ea, Eb, p̂, the errors-in-variables inputs' values per point];
        data = [scale, q (d), 1/n, the pieces' numbers per point, the exact inputs' values per
        point]: the defects of an interval of ``mode`` whose phase is [Ea, Eb], collocation
        times Ea + q·(Eb − Ea), length (Eb − Ea)/n."""
        key = ("defect", mode)
        if key not in self._cache:
            nx, d, npar, ns = self.nx, self.d, self.np, 6 * _SLOTS
            dz_parts, dd_parts = self._delay_parts(d)
            z, (x0, xc, ea, eb, ph, *ue) = _symbols_of(
                [("x0", nx), ("xc", nx * d), ("ea", 1), ("eb", 1), ("p", npar)]
                + [(f"{u}_{j}", ns) for u in self.eiv for j in range(d)] + dz_parts)
            ue, dz = ue[:len(ue) - len(dz_parts)], ue[len(ue) - len(dz_parts):]
            data, (scale, q, ninv, *rest) = _symbols_of(
                [("scale", npar), ("q", d), ("ninv", 1)] + [(f"num_{j}", self.n_num) for j in range(d)]
                + [(f"{u}_{j}", ns) for u in self.exact for j in range(d)] + dd_parts)
            rest, dd = rest[:len(rest) - len(dd_parts)], rest[len(rest) - len(dd_parts):]
            nums, uv = rest[:d], rest[d:]
            p = self._p(ph, scale)
            X = [x0] + [xc[j * nx:(j + 1) * nx] for j in range(d)]
            h = (eb - ea) * ninv
            rhs = self.model.mode(mode).rhs
            cols = []
            for j in range(1, d + 1):
                t = ea + q[j - 1] * (eb - ea)
                u = self._inputs([ue[i * d + j - 1] for i in range(len(self.eiv))], nums[j - 1],
                                 [uv[i * d + j - 1] for i in range(len(self.exact))], t)
                late = self._delayed(dz[j - 1], dd[j - 1], t, p) if dz else {}
                f = as_column(rhs(t, _symbols(X[j]), {**p, **u, **late}, ea))
                cols.append(sum(self._C[m, j] * X[m] for m in range(d + 1)) - h * f)
            self._cache[key] = _Places(f"defect_{mode}", ca.vertcat(*cols), z, data)
        return self._cache[key]

    def guard(self, name: str, mode: str) -> _Places:
        """z = [x, Ea, Eb, p̂, inputs' values]; data = [scale, q, sign, numbers, exact inputs'
        values]: ``sign · g`` of the guard ``name`` in ``mode`` at t = Ea + q·(Eb − Ea) of a
        phase [Ea, Eb]."""
        key = ("guard", name, mode)
        if key not in self._cache:
            dz_parts, dd_parts = self._delay_parts(1)
            z, (x, ea, eb, ph, *ue) = _symbols_of([("x", self.nx), ("ea", 1), ("eb", 1), ("p", self.np)]
                                                  + [(u, 6 * _SLOTS) for u in self.eiv] + dz_parts)
            data, (scale, q, sign, num, *uv) = _symbols_of([("scale", self.np), ("q", 1), ("sign", 1),
                                                            ("num", self.n_num)]
                                                           + [(u, 6 * _SLOTS) for u in self.exact] + dd_parts)
            t = ea + q * (eb - ea)
            p = self._p(ph, scale)
            if dz_parts:
                p.update(self._delayed(ue.pop(), uv.pop(), t, p))
            p.update(self._inputs(ue, num, uv, t))
            value = HybridNLP._guard(self._guards[name], t, x, p, mode, ea)
            self._cache[key] = _Places(f"guard_{name}_{mode}", sign * value, z, data)
        return self._cache[key]

    def reset(self, name: str) -> _Places:
        """z = [y, x, s, p̂, inputs' values]; data = [scale, numbers, exact inputs' values]:
        ``y − reset(s, x)`` of the guard ``name`` (the state entering the next phase)."""
        key = ("reset", name)
        if key not in self._cache:
            dz_parts, dd_parts = self._delay_parts(1)
            z, (y, x, s, ph, *ue) = _symbols_of([("y", self.nx), ("x", self.nx), ("s", 1), ("p", self.np)]
                                                + [(u, 6 * _SLOTS) for u in self.eiv] + dz_parts)
            data, (scale, num, *uv) = _symbols_of([("scale", self.np), ("num", self.n_num)]
                                                  + [(u, 6 * _SLOTS) for u in self.exact] + dd_parts)
            p = self._p(ph, scale)
            if dz_parts:
                p.update(self._delayed(ue.pop(), uv.pop(), s, p))
            p.update(self._inputs(ue, num, uv, s))
            value = as_column(self._guards[name].reset(s, _symbols(x), p))
            self._cache[key] = _Places(f"reset_{name}", y - value, z, data)
        return self._cache[key]

    def sides(self, mode: str) -> list:
        """The guards watched in ``mode`` with a direction (kept on their side inside its phases)."""
        return [g for g in self.model.all_guards() if g.watches(mode) and g.direction != 0]

    def read(self, weighted: bool) -> _Places:
        """z = [x0, xc, Ea, Eb]; data = [t, k, n] (+ [c (nx), y] ``weighted``): the state at t
        in interval k of n of a phase [Ea, Eb] (``weighted``: the residual c·x(t) − y)."""
        key = ("read", weighted)
        if key not in self._cache:
            nx, d = self.nx, self.d
            z, (x0, xc, ea, eb) = _symbols_of([("x0", nx), ("xc", nx * d), ("ea", 1), ("eb", 1)])
            data, (t, k, n, *cy) = _symbols_of([("t", 1), ("k", 1), ("n", 1)]
                                               + ([("c", nx), ("y", 1)] if weighted else []))
            r = (t - ea) * n / (eb - ea) - k
            X = ca.horzcat(x0, ca.reshape(xc, nx, d))
            state = ca.mtimes(X, ca.vertcat(*self._basis.values(r)))
            out = ca.dot(cy[0], state) - cy[1] if weighted else state
            self._cache[key] = _Places("residual" if weighted else "read", out, z, data)
        return self._cache[key]


def _linear(name: str, nz: int, nd: int, body: Callable) -> _Places:
    z, data = ca.SX.sym("z", nz), ca.SX.sym("data", nd)
    return _Places(name, body(z, data), z, data)


#: (v − measured)/σ of an errors-in-variables input at one sample
_INPUT_RESIDUAL = _linear("input_residual", 1, 2, lambda z, c: (z[0] - c[0]) * c[1])
#: Eb − Ea (switching times in order)
_ORDER = _linear("order", 2, 0, lambda z, c: z[1] - z[0])
#: t_break − t_jump − delay (a delay break, :attr:`TrialLayout.ties`; the delay scaled)
_TIE = _linear("delay_tie", 3, 1, lambda z, c: z[0] - z[1] - c[0] * z[2])


#: Sample steps the delay of a model (``HybridModel(delay=...)``) may move in one solve: its
#: reads are given to intervals where the solve starts, and a read far outside its interval
#: would extrapolate that interval's polynomial (the solving layer lays them again and solves on).
DELAY_STEP = 3.0
#: How far (in interval lengths) a delayed read may lie outside the interval it was given, in the
#: same phase, at the solution and still count as settled: inside a phase the state is smooth and
#: its polynomial is read a little past the interval's ends at the order of the method.
DELAY_SETTLE = 0.25


def _holding(starts: np.ndarray, times: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the interval holding each time of ``times`` (N × d, one row per interval, its points at
    ``points``), whether it is before the record).  A time on a boundary belongs to the later
    interval, except one read by an interval's end point, which takes the earlier: the left
    limit, as the interval's other points do (before a jump, the state before it)."""
    later = np.searchsorted(starts - 1e-9, times, side="right") - 1
    earlier = np.searchsorted(starts + 1e-9, times, side="left") - 1
    held = np.clip(np.where(np.asarray(points)[None, :] >= 1.0, earlier, later), 0, len(starts) - 1)
    return held, times < starts[0]


class _DelayReads:
    """Where the delayed states of a trial's collocation points are read: the interval that holds
    ``t − delay`` at the switching times and delay of the build (:func:`_holding`), and the NLP
    variables and numbers of that read (:meth:`_Pieces._delayed`) at given points."""

    def __init__(self, ends, counts, points, delay: float, start, xc, E, x0_index):
        self.counts, self.points, self.start, self.xc, self.E, self.x0 = counts, points, start, xc, E, x0_index
        self.first = np.concatenate([[0], np.cumsum(counts)])
        self.phase = np.repeat(np.arange(len(counts)), counts)
        self.k_in = np.arange(int(counts.sum())) - self.first[self.phase]
        self.held, self.history = _holding(*self._times(ends, delay), points)

    def _times(self, ends, delay: float) -> tuple[np.ndarray, np.ndarray]:
        h = (np.diff(ends) / self.counts)[self.phase]
        starts = ends[self.phase] + self.k_in * h
        return starts, starts[:, None] + self.points[None, :] * h[:, None] - delay

    def at(self, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The variables (B × (nx·(d + 1) + 2)) and numbers (B × 3) of the reads at the points
        ``pts`` (interval · d + point)."""
        J, hist = self.held.ravel()[pts], self.history.ravel()[pts]
        x0 = np.where(hist[:, None], self.x0[None, :], self.start[J])
        return (np.column_stack([x0, self.xc[J], self.E[self.phase[J]], self.E[self.phase[J] + 1]]),
                np.column_stack([self.k_in[J], self.counts[self.phase[J]], hist.astype(float)]))

    def settled(self, ends, delay: float) -> bool:
        """Whether every read is still in the phase of its interval and within
        :data:`DELAY_SETTLE` of it at the switching times ``ends`` and ``delay``."""
        starts, times = self._times(ends, delay)
        held, history = _holding(starts, times, self.points)
        if not np.array_equal(history, self.history):
            return False
        inside = ~history
        if not np.array_equal(self.phase[held][inside], self.phase[self.held][inside]):
            return False
        h = (np.diff(ends) / self.counts)[self.phase]
        r = (times - starts[self.held]) / h[self.held]
        return bool(np.all((r[inside] >= -DELAY_SETTLE) & (r[inside] <= 1 + DELAY_SETTLE)))


def _delayed_at(reads: _DelayReads | None, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The delayed reads' variables and numbers at the points ``pts`` (B × c: c points per place,
    their columns side by side); none without a delay."""
    if reads is None:
        return np.zeros((len(pts), 0), dtype=int), np.zeros((len(pts), 0))
    parts = [reads.at(pts[:, j]) for j in range(pts.shape[1])]
    return np.hstack([a for a, _ in parts]), np.hstack([b for _, b in parts])


@dataclass
class _Use:
    """A :class:`_Places` at its places: NLP variables ``index`` (B × nz), numbers ``data``
    (B × nd), and what its rows are (``kinds``; constraints' bounds ``lower``/``upper``)."""

    places: _Places
    index: np.ndarray
    data: np.ndarray
    kinds: list
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    #: the first constraint row of a constraint's places
    row: int = 0


class HybridNLP:
    """The NLP of ``problem`` for the ``layouts`` (one per trial) at the start values ``p0``
    (dict), ``x0s`` (initial states) and ``x_guess`` (per trial, ``t → state``).

    Unknowns: the parameters (scaled by their start values), then per trial its initial
    state, its phase boundaries (the record's ends, fixed; the switching times), its
    collocation states, and the state entering each phase through a reset map; last the
    errors-in-variables inputs' values.  Every constraint and residual is one small CasADi
    Function of a few of them (:class:`_Places`: an interval's defects, a guard at a point, a
    reset's condition, a sample's residual) mapped over the places it applies, with the
    places' numbers (times, sample positions, the inputs' pieces) as arguments; the
    constraints' Jacobian and the Lagrangian's Hessian are summed from those Functions'
    derivative blocks (:func:`assemble_jacobian`, :func:`assemble_hessian`), so that neither
    the build nor an iteration grows faster than the record."""

    def __init__(self, problem: HybridProblem, layouts: list, p0: dict, x0s: list, x_guess: list,
                 degree: int = 3, sides: bool = True, delay: float | None = None):
        self.problem, self.layouts, self.degree = problem, layouts, degree
        #: seconds spent compiling (:meth:`compile`; 0 on a cache hit) and what was done
        self.compile_s: float = 0.0
        self.compile_note: str | None = None
        #: the multipliers' symbols, the constraints' Hessian and their Jacobian (:meth:`derivatives`)
        self._constraint_part: tuple | None = None
        names = problem.parameters
        nx, npar, d = len(problem.states), len(names), degree
        tau = radau_basis(degree).tau
        self.scale = np.array([abs(p0[n]) if p0[n] != 0 else 1.0 for n in names])
        free = not problem.fixed_switches
        self.p_index = np.arange(npar)
        self.x0_index, self.tau_index = [], []
        w0 = [np.array([p0[n] for n in names]) / self.scale]
        lbw = [np.array([problem.bounds[n][0] for n in names]) / self.scale]
        ubw = [np.array([problem.bounds[n][1] for n in names]) / self.scale]
        offset = npar
        plan = []
        for model, trial, lay, x0, xg in zip(problem.models, problem.trials, layouts, x0s, x_guess):
            m = len(lay.switches)
            t0, tf = float(trial.time[0]), float(trial.time[-1])
            ends = np.concatenate([[t0], lay.switches, [tf]])
            counts = np.asarray(lay.intervals, dtype=int)
            entries = [i for i in range(1, m + 1)
                       if lay.guards[i - 1] is not None and self._has_reset(model, lay.guards[i - 1].name)]
            N = int(counts.sum())
            at = {"x0": offset, "E": offset + nx, "xc": offset + nx + m + 2}
            at["y"] = at["xc"] + N * d * nx
            self.x0_index.append(offset + np.arange(nx))
            self.tau_index.append(at["E"] + 1 + np.arange(m) if free else np.zeros(0, dtype=int))
            guess = [np.asarray(xg(a + (k + tj) * (b - a) / n), dtype=float)
                     for a, b, n in zip(ends[:-1], ends[1:], counts) for k in range(n) for tj in tau]
            fixed = np.concatenate([[t0], np.asarray(lay.switches, float)[:0 if free else m], [tf]])
            lo = np.concatenate([[t0], np.full(m, t0)]) if free else fixed
            hi = np.concatenate([[t0], np.full(m, tf)]) if free else fixed
            if free:
                lo, hi = np.append(lo, tf), np.append(hi, tf)
            w0 += [np.asarray(x0, dtype=float), ends, *guess, np.zeros(len(entries) * nx)]
            lbw += [np.full(nx, -np.inf), lo, np.full(len(guess) * nx, -np.inf), np.full(len(entries) * nx, -np.inf)]
            ubw += [np.full(nx, np.inf), hi, np.full(len(guess) * nx, np.inf), np.full(len(entries) * nx, np.inf)]
            offset = at["y"] + len(entries) * nx
            plan.append((at, entries, ends, counts))
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
        #: a model with a delay: its parameter's position, its value the reads are laid at (``delay``,
        #: else its start value), and the delayed reads of each trial (:class:`_DelayReads`)
        self.delay_at: int | None = None
        self.delay_value = math.nan
        self.delay_reads: list[_DelayReads] = []
        if problem.model.delay is not None:
            i = self.delay_at = names.index(problem.model.delay)
            self.delay_value = float(p0[names[i]] if delay is None else delay)
            step = DELAY_STEP * min(lay.dt for lay in layouts)
            self.lbw[i] = max(self.lbw[i], (self.delay_value - step) / self.scale[i])
            self.ubw[i] = min(self.ubw[i], (self.delay_value + step) / self.scale[i])
        #: per trial, the switching times the inputs' reads were placed at
        self.built_switches = [np.array(lay.switches, dtype=float) for lay in layouts]
        cache: dict = {}
        self._constraints: list[_Use] = []
        self._trials: list = []
        for n_trial, (model, trial, lay, (at, entries, ends, counts)) in enumerate(
                zip(problem.models, problem.trials, layouts, plan)):
            if id(model) not in cache:
                cache[id(model)] = _Pieces(model, problem, degree)
            pc = cache[id(model)]
            m, N = len(lay.switches), int(counts.sum())
            first = np.concatenate([[0], np.cumsum(counts)])
            phase = np.repeat(np.arange(len(counts)), counts)
            k_in = np.arange(N) - first[phase]
            E = at["E"] + np.arange(m + 2)
            xc = (at["xc"] + np.arange(N * d * nx)).reshape(N, d * nx)  # per interval
            ends_of = xc[:, -nx:]  # each interval's last collocation state
            start = np.vstack([self.x0_index[n_trial][None, :], ends_of[:-1]])  # each interval's start
            entry_of = {}
            for j, i in enumerate(entries):
                entry_of[i] = at["y"] + j * nx + np.arange(nx)
                start[first[i]] = entry_of[i]
            scale = np.broadcast_to(self.scale, (1, npar))
            inputs = _InputReads(trial, pc, self.input_index[n_trial])
            if self.delay_at is not None:
                self.delay_reads.append(_DelayReads(ends, counts, tau, self.delay_value, start, xc, E,
                                                    self.x0_index[n_trial]))
            late = self.delay_reads[-1] if self.delay_at is not None else None

            if free and m:
                self._constraints.append(_Use(_ORDER, np.column_stack([E[:-1], E[1:]]), np.zeros((m + 1, 0)),
                                              [f"switching times in order ({trial.name})"] * (m + 1),
                                              np.full(m + 1, 0.1 * lay.dt), np.full(m + 1, np.inf)))
            # collocation defects, one Function per mode
            for mode in dict.fromkeys(lay.sequence):
                ints = np.flatnonzero(np.isin(phase, [i for i, mm in enumerate(lay.sequence) if mm == mode]))
                q = (k_in[ints, None] + tau[None, :]) / counts[phase[ints], None]
                t_num = ends[phase[ints], None] + q * (ends[phase[ints] + 1] - ends[phase[ints]])[:, None]
                u_idx, u_num, u_val = inputs.at(t_num)
                d_idx, d_num = _delayed_at(late, ints[:, None] * d + np.arange(d)[None, :])
                index = np.column_stack([start[ints], xc[ints], E[phase[ints]], E[phase[ints] + 1],
                                         np.broadcast_to(self.p_index, (len(ints), npar)), u_idx, d_idx])
                data = np.column_stack([np.repeat(scale, len(ints), 0), q, 1.0 / counts[phase[ints]], u_num, u_val,
                                        d_num])
                self._constraints.append(_Use(pc.defect(mode), index, data,
                                              [f"collocation defect ({trial.name})"] * (len(ints) * nx * d),
                                              np.zeros(len(ints) * nx * d), np.zeros(len(ints) * nx * d)))
            if lay.ties:  # a delay break: the jump's time plus the delay
                pairs = np.array(lay.ties, dtype=int)
                index = np.column_stack([E[pairs[:, 0] + 1], E[pairs[:, 1] + 1],
                                         np.full(len(pairs), self.p_index[self.delay_at])])
                self._constraints.append(_Use(_TIE, index, np.full((len(pairs), 1), self.scale[self.delay_at]),
                                              [f"delay break of {trial.name}"] * len(pairs), np.zeros(len(pairs)),
                                              np.zeros(len(pairs))))
            # the guard that ends each phase is zero at its switching time; the resets
            for i in range(m):
                if lay.guards[i] is None:  # a delay break: the state runs on
                    continue
                u_idx, u_num, u_val = inputs.at(np.array([[ends[i + 1]]]))
                d_idx, d_num = _delayed_at(late, np.array([[first[i + 1] * d - 1]]))  # the phase's last point
                pv = self.p_index[None, :]
                index = np.column_stack([ends_of[first[i + 1] - 1][None, :], [[E[i]]], [[E[i + 1]]], pv, u_idx,
                                         d_idx])
                data = np.column_stack([scale, [[1.0]], [[1.0]], u_num, u_val, d_num])
                name = lay.guards[i].name
                self._constraints.append(_Use(pc.guard(name, lay.sequence[i]), index, data,
                                              [f"guard {name} at switch {i + 1} of {trial.name}"],
                                              np.zeros(1), np.zeros(1)))
                if i + 1 in entry_of:
                    index = np.column_stack([entry_of[i + 1][None, :], ends_of[first[i + 1] - 1][None, :],
                                             [[E[i + 1]]], pv, u_idx, d_idx])
                    self._constraints.append(_Use(pc.reset(name), index, np.column_stack([scale, u_num, u_val, d_num]),
                                                  [f"reset of guard {name} at switch {i + 1} of {trial.name}"] * nx,
                                                  np.zeros(nx), np.zeros(nx)))
            if sides:  # the watched guards on their side at every point inside the phase
                for mode in dict.fromkeys(lay.sequence):
                    ints = np.flatnonzero(np.isin(phase, [i for i, mm in enumerate(lay.sequence) if mm == mode]))
                    pts = (ints[:, None] * d + np.arange(d)[None, :]).ravel()
                    pts = pts[~np.isin(pts, first[1:] * d - 1)]  # a phase's last point: its guard's own
                    if not len(pts) or not pc.sides(mode):
                        continue
                    g_int, jp = pts // d, pts % d
                    q = (k_in[g_int] + tau[jp]) / counts[phase[g_int]]
                    t_num = ends[phase[g_int]] + q * (ends[phase[g_int] + 1] - ends[phase[g_int]])
                    u_idx, u_num, u_val = inputs.at(t_num[:, None])
                    d_idx, d_num = _delayed_at(late, pts[:, None])
                    x_idx = xc[g_int[:, None], jp[:, None] * nx + np.arange(nx)[None, :]]
                    index = np.column_stack([x_idx, E[phase[g_int]], E[phase[g_int] + 1],
                                             np.broadcast_to(self.p_index, (len(pts), npar)), u_idx, d_idx])
                    for guard in pc.sides(mode):
                        data = np.column_stack([np.repeat(scale, len(pts), 0), q, np.full(len(pts), -guard.direction),
                                                u_num, u_val, d_num])
                        self._constraints.append(_Use(pc.guard(guard.name, mode), index, data,
                                                      [f"guard {guard.name} on its side in phase {i + 1} ({mode}) "
                                                       f"of {trial.name}" for i in phase[g_int]],
                                                      np.zeros(len(pts)), np.full(len(pts), np.inf)))
            self._trials.append({"pieces": pc, "E": E, "xc": xc, "start": start, "first": first, "counts": counts,
                                 "entries": entry_of})
        # the reset maps' states start at their value from the start guess
        w_start = self.w0.copy()
        for use in self._constraints:
            if use.places.name.startswith("reset_"):
                z = w_start[use.index]
                z[:, :nx] = 0.0
                w_start[use.index[:, :nx]] = -np.asarray(use.places.fn.map(len(use.index))(z.T, use.data.T)).T
        self.w0 = w_start
        row, g, self.kinds = 0, [], []
        for use in self._constraints:
            use.row = row
            g.append(ca.vec(use.places.values(W, use.index, use.data)))
            self.kinds.extend(use.kinds)
            row += use.places.m * len(use.index)
        self.g = ca.vertcat(*g)
        self.lbg = np.concatenate([u.lower for u in self._constraints])
        self.ubg = np.concatenate([u.upper for u in self._constraints])
        self.read_samples()

    def delay_settled(self, w: np.ndarray) -> bool:
        """Whether the delayed reads can stay where they were laid for the solution ``w``: each in
        its interval (:meth:`_DelayReads.settled`) and the delay inside this solve's bounds, not
        stopped on one of them (True for a model without a delay)."""
        if self.delay_at is None:
            return True
        i, lo, hi = self.delay_at, self.lbw[self.delay_at], self.ubw[self.delay_at]
        bounds = self.problem.bounds[self.problem.parameters[i]]
        at_bound = (w[i] <= lo + 1e-9 * abs(lo) and lo * self.scale[i] > bounds[0]
                    or w[i] >= hi - 1e-9 * abs(hi) and hi * self.scale[i] < bounds[1])
        value = float(w[i] * self.scale[i])
        return not at_bound and all(reads.settled(np.asarray(w[built["E"]], dtype=float), value)
                                    for reads, built in zip(self.delay_reads, self._trials))

    @staticmethod
    def _has_reset(model, name: str) -> bool:
        return any(g.name == name and g.reset is not None for g in model.all_guards())

    def read_samples(self) -> None:
        """The fitted samples (``reads``: per trial, nx × samples; ``res``: the weighted
        residuals), each read in the phase and interval that hold it at the layouts' current
        switching times, by that interval's polynomial, whose position moves with the
        switching times.  Called again after the switching times have moved."""
        problem = self.problem
        nx = len(problem.states)
        self._residuals: list[_Use] = []
        self.reads = []
        for n, (trial, lay, built) in enumerate(zip(problem.trials, self.layouts, self._trials)):
            time = np.asarray(trial.time, dtype=float)
            phase, interval = assign(lay, time)
            g = built["first"][phase] + interval
            E = built["E"]
            index = np.column_stack([built["start"][g], built["xc"][g], E[phase], E[phase + 1]])
            data = np.column_stack([time, interval, np.asarray(lay.intervals, dtype=float)[phase]])
            self.reads.append(built["pieces"].read(False).values(self.w, index, data))
            weights = problem.fit_weights(trial)
            for s in problem.fit:
                if s not in trial:
                    continue
                wgt = weights[s]
                j = problem.states.index(s)
                present = np.flatnonzero(np.isfinite(trial[s]) & lay.kept(time))
                c = np.zeros((len(present), nx))
                c[:, j] = math.sqrt(wgt)
                y = math.sqrt(wgt) * np.asarray(trial[s], dtype=float)[present]
                self._residuals.append(_Use(built["pieces"].read(True), index[present],
                                            np.column_stack([data[present], c, y]), [s] * len(present)))
            for u, idx in self.input_index[n].items():
                data = np.column_stack([np.asarray(trial[u], dtype=float),
                                        np.full(len(idx), math.sqrt(weights[u]))])
                self._residuals.append(_Use(_INPUT_RESIDUAL, idx[:, None], data, [u] * len(idx)))
        self.res = ca.vertcat(*[ca.vec(u.places.values(self.w, u.index, u.data)) for u in self._residuals])
        self.num_observations = int(self.res.shape[0])

    def compile(self) -> None:
        """Compile the derivative blocks IPOPT evaluates at every iteration (each constraint's
        Jacobian and Hessian blocks, each nonlinear residual's Gauss–Newton-free Hessian block)
        to machine code (:func:`colloc.base.compiler.compiled_all`, cached on disk), as the
        smooth path does, when the NLP's work (places times instructions, summed) reaches
        :data:`colloc.transcription.nlp.COMPILE_WORK_ABOVE` and a C compiler is there.  Nothing
        differentiates these blocks further.  Sets :attr:`compile_s` and :attr:`compile_note`."""
        if self.compile_note is not None:
            return
        uses = [*self._constraints, *self._residuals]
        work = sum(len(u.index) * u.places.fn.n_instructions() for u in uses)
        if not has_compiler():
            self.compile_note = "interpreted (no C compiler)"
            return
        if work < COMPILE_WORK_ABOVE:
            self.compile_note = "interpreted (small problem)"
            return
        wanted: dict = {}
        for use in self._constraints:
            wanted.setdefault(id(use.places), (use.places, ("jac", "hess") if not use.places.linear() else ("jac",)))
        for use in self._residuals:
            if not use.places.linear():
                wanted.setdefault(id(use.places), (use.places, ("gn",)))
        todo = [(places, kind, fn) for places, kinds in wanted.values() for kind, fn in places.derivatives(kinds)
                if fn.class_name() == "SXFunction"]  # not those compiled for an earlier NLP (_ORDER's)
        runs, t0 = compiler_runs(), _time.perf_counter()
        for (places, kind, _fn), fn in zip(todo, compiled_all([fn for _p, _k, fn in todo])):
            places.replace(kind, fn)
        self.compile_s = _time.perf_counter() - t0 if compiler_runs() > runs else 0.0
        self.compile_note = "compiled (cache hit)" if compiler_runs() == runs else f"compiled ({self.compile_s:.1f} s)"

    def jacobian(self) -> ca.Function:
        """IPOPT's ``jac_g`` (an nlpsol option): the constraints and their Jacobian, summed from
        the places' derivative blocks."""
        W, n_var, n_con = self.w, self.w.shape[0], self.g.shape[0]
        jac = [use.places.jacobian_block(W, use.index, use.data, use.row) for use in self._constraints]
        return ca.Function("jac_g", [W, ca.MX(0, 1)], [self.g, assemble_jacobian(n_con, n_var, jac)],
                           ["x", "p"], ["g", "jac_g_x"])

    def derivatives(self, objective_scale: float) -> dict:
        """IPOPT's ``jac_g`` and ``hess_lag`` (nlpsol options) for the objective
        ``objective_scale · ½ |res|²``, summed from the places' derivative blocks.  The
        constraints' part (their Jacobian, their share of the Hessian) is assembled once per
        NLP: only the residuals change when the samples are re-assigned (:meth:`read_samples`)."""
        W, n_var, n_con = self.w, self.w.shape[0], self.g.shape[0]
        if self._constraint_part is None:
            lam_f, lam_g = ca.MX.sym("lam_f"), ca.MX.sym("lam_g", n_con)
            hess = []
            for use in self._constraints:
                if not use.places.linear():
                    rows = use.row + np.arange(use.places.m * len(use.index))
                    hess.append(use.places.hessian_block(W, use.index, use.data, lam_g[rows.tolist()]))
            self._constraint_part = (lam_f, lam_g, assemble_hessian(n_var, hess) if hess else None, self.jacobian())
        lam_f, lam_g, H_con, jac_g = self._constraint_part
        hess = [use.places.square_block(W, use.index, use.data, objective_scale * lam_f)
                for use in self._residuals if not use.places.linear()]
        diagonal = [(objective_scale * np.asarray(u.data[:, 1], dtype=float) ** 2, u.index[:, 0])
                    for u in self._residuals if u.places is _INPUT_RESIDUAL]
        H = assemble_hessian(n_var, hess)
        if H_con is not None:
            H = H + H_con
        if diagonal:
            values = np.concatenate([v for v, _ in diagonal])
            idx = np.concatenate([i for _, i in diagonal]).tolist()
            H = H + lam_f * ca.DM.triplet(idx, idx, values.tolist(), n_var, n_var)
        return {"jac_g": jac_g,
                "hess_lag": ca.Function("hess_lag", [W, ca.MX(0, 1), lam_f, lam_g], [H],
                                        ["x", "p", "lam_f", "lam_g"], ["triu_hess_gamma_x_x"])}

    def input_estimates(self, w: np.ndarray) -> list[dict]:
        """Per trial, each errors-in-variables input's estimate at the samples."""
        return [{u: np.asarray(w[idx], dtype=float) for u, idx in index.items()} for index in self.input_index]

    @staticmethod
    def _guard(guard: Guard, t, x, p, mode: str, t0):
        xs = _symbols(x) if isinstance(x, ca.SX) else x
        value = guard.function(t, xs, p, mode, t0) if guard.with_mode else guard.function(t, xs, p)
        return as_column(value)[0] - guard.offset

    def nodes(self, w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Trial ``k``'s times and states (nodes × nx) at the collocation nodes of a value of the
        unknowns: the initial state, then every interval's Radau points; where a reset map acts,
        its switching time twice, the state before the jump (the last point of the phase that
        ends) and after it (the state the next phase starts from)."""
        built, nx = self._trials[k], len(self.problem.states)
        tau = radau_basis(self.degree).tau
        ends = np.asarray(w[built["E"]], dtype=float)
        times, states = [ends[:1]], [np.asarray(w[self.x0_index[k]], dtype=float)[None, :]]
        first, counts = built["first"], built["counts"]
        for ph, n in enumerate(counts):
            if ph in built["entries"]:
                times.append(ends[ph:ph + 1])
                states.append(np.asarray(w[built["entries"][ph]], dtype=float)[None, :])
            for i in range(first[ph], first[ph] + n):
                q = (i - first[ph] + tau) / n
                times.append(ends[ph] + q * (ends[ph + 1] - ends[ph]))
                states.append(np.asarray(w[built["xc"][i]], dtype=float).reshape(self.degree, nx))
        return np.concatenate(times), np.vstack(states)

    def parameters(self, w: np.ndarray) -> dict:
        """The parameters (physical units) from a value of the unknowns."""
        return dict(zip(self.problem.parameters, (self.scale * w[self.p_index]).tolist()))

    def functions(self) -> dict:
        """CasADi Functions of the unknowns: ``res`` (weighted residuals), ``g`` (the
        constraints, whose rows :attr:`kinds` names), ``states`` (per trial, nx × samples), and
        the Jacobians ``jac_res`` and ``jac_g`` (columns of every unknown, fixed ones too)."""
        W, n_var = self.w, self.w.shape[0]
        jac = [u.places.jacobian_block(W, u.index, u.data, row) for u, row in
               zip(self._residuals, np.cumsum([0] + [u.places.m * len(u.index) for u in self._residuals])[:-1])]
        return {"res": ca.Function("res", [W], [self.res]), "g": ca.Function("g", [W], [self.g]),
                "jac_res": ca.Function("jac_res", [W], [assemble_jacobian(self.num_observations, n_var, jac)]),
                "jac_g": ca.Function("jac_g", [W], [self.jacobian()(W, ca.DM(0, 1))[1]]),
                "states": [ca.Function(f"states_{k}", [W], [s]) for k, s in enumerate(self.reads)]}


class _InputReads:
    """Where a trial's inputs are read at given times: per time the NLP variables of the
    errors-in-variables inputs' values of the pieces around it, the pieces' numbers and the
    exact inputs' values (:func:`_window_stencil` at the sample step holding the time now)."""

    def __init__(self, trial, pieces: _Pieces, index: dict):
        self.time = np.asarray(trial.time, dtype=float)
        self.eiv = [index[u] for u in pieces.eiv]
        self.exact = [np.asarray(trial[u], dtype=float) for u in pieces.exact]
        self.any = bool(pieces.eiv or pieces.exact)

    def at(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For times (B × d): (B × 6S·d per errors-in-variables input, B × 7S·d, B × 6S·d per
        exact input), each input's points in order."""
        B = times.shape[0]
        if not self.any:
            return np.zeros((B, 0), dtype=int), np.zeros((B, 0)), np.zeros((B, 0))
        stencils = [_window_stencil(self.time, _step(self.time, float(t))) for t in times.ravel()]
        num = np.stack([s[0].ravel() for s in stencils]).reshape(B, -1)
        idx = np.stack([s[1].ravel() for s in stencils])  # (B·d) × 6S
        eiv = [v[idx].reshape(B, -1) for v in self.eiv]
        exact = [v[idx].reshape(B, -1) for v in self.exact]
        return (np.hstack(eiv) if eiv else np.zeros((B, 0), dtype=int), num,
                np.hstack(exact) if exact else np.zeros((B, 0)))
