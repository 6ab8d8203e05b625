"""Multi-phase collocation of hybrid trajectories: one phase per mode interval.

A record of a hybrid model (:mod:`colloc.definition.hybrid`) is a sequence of phases, each
integrating one mode between two boundaries.  Boundaries are CasADi expressions of the
unknown parameters — known times (pulses) or parameter-dependent ones (a clock's τ, τ1, τ2,
Wieber & Billet 2006 §4.1) — so the phase durations, and hence the collocation mesh, move with
the parameters.  Each phase is cut into ``intervals`` equal intervals of Radau collocation;
phases are joined by continuity (or a reset map); a sample is read in the phase that holds it
by the phase's collocation polynomial at its time, which is differentiable in the boundaries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from .grid import radau_basis

__all__ = ["IntervalChain", "Phase", "PhaseTranscription", "PointFunction", "assemble_hessian", "assemble_jacobian",
           "transcribe_phases"]

#: The NLP's symbols a chain is built on (collocation states, parameters, time unknowns,
#: multipliers): all SX or all MX (or all numbers, DM); the results are of the same kind.
Sym = TypeVar("Sym", ca.SX, ca.MX, ca.DM)
#: Numbers, one per interval or per sample.
Numbers: TypeAlias = "np.ndarray | Sequence[float]"
#: Indices of NLP variables (the parameters').
Indices: TypeAlias = "np.ndarray | Sequence[int]"
#: Affine interval times ``(a, b)``: ``a`` (N) and ``b`` (N × np, or N × K), ``t = a + b·p``.
Affine: TypeAlias = "tuple[np.ndarray | Sequence[float], np.ndarray | Sequence[Sequence[float]]]"
#: The intervals entered through a reset and their entry states' symbols (``nx × B``).
Entry: TypeAlias = "tuple[Sequence[int] | np.ndarray, Sym]"
#: The intervals entered through a reset and their entry states' NLP indices (``B × nx``).
EntryIndex: TypeAlias = "tuple[Sequence[int] | np.ndarray, ArrayLike]"
#: Where each delayed read is: ``(D, hist)``, the interval holding ``t − τ`` and whether it is
#: before the start (each N × d).
Delayed: TypeAlias = "tuple[ArrayLike, ArrayLike]"
#: The known initial state (None: unknown, an entry state).
Initial: TypeAlias = "np.ndarray | Sequence[float] | ca.DM | None"


@dataclass
class Phase:
    """A phase: ``mode`` (a name passed to the dynamics), boundaries ``start``/``end``
    (CasADi expressions or numbers), number of collocation ``intervals``, and an optional
    ``reset(x) → x`` applied to the state entering it."""

    mode: str
    start: ca.SX | float
    end: ca.SX | float
    intervals: int = 1
    reset: Callable | None = None


@dataclass
class PhaseTranscription:
    """The collocation of one record: decision variables ``w`` (with ``w_guess``), equality
    constraints ``g`` (= 0) and :meth:`state_at` for the samples."""

    w: ca.SX
    g: ca.SX
    w_guess: np.ndarray
    phases: list
    blocks: list  # per phase: list of (h, [X_0 .. X_d]) per interval
    tau: np.ndarray
    #: numerical phase starts and interval lengths at the guess (pick a sample's interval)
    num_start: list = field(default_factory=list)
    num_h: list = field(default_factory=list)

    def state_at(self, phase: int, times: np.ndarray) -> list:
        """The state (one CasADi column per time) at ``times`` in phase ``phase``, by the
        collocation polynomial of the interval holding each time (extrapolated at the ends)."""
        ph = self.phases[phase]
        h, nodes = self.blocks[phase]
        n = len(nodes)
        out = []
        for t in times:
            # the interval holding the sample is chosen at the guess and fixed for the solve;
            # its position in it is a CasADi expression of the boundaries
            s = (t - ph.start) / h
            k = int(np.clip(np.floor((t - self.num_start[phase]) / self.num_h[phase]), 0, n - 1))
            r = s - k
            X = nodes[k]
            out.append(sum(X[j] * ell for j, ell in enumerate(radau_basis(len(X) - 1).values(r))))
        return out



def transcribe_phases(phases: Sequence[Phase], dynamics: Callable, x0: np.ndarray | Sequence[float], params: ca.SX,
                      p_guess: np.ndarray, x_guess: Callable, degree: int = 3) -> PhaseTranscription:
    """Collocate ``dynamics(mode, t, x, t0) → ẋ`` (CasADi, in the symbols ``params``) over the
    phases, from the known initial state ``x0``.  ``x_guess(t)`` gives the initial values of
    the state variables; ``p_guess`` evaluates the boundaries for the guess."""
    basis = radau_basis(degree)
    tau, C = basis.tau, basis.derivative.T  # C[j, k]: derivative of basis j at point k
    nx = len(x0)
    bound_f = ca.Function("b", [params], [ca.vertcat(*[ca.vertcat(ph.start, ph.end) for ph in phases])])
    bvals = np.array(bound_f(p_guess)).ravel().reshape(-1, 2)
    w, w0, g, blocks = [], [], [], []
    num_start, num_h = [], []
    x_prev: Any = ca.DM(x0)  # numbers first, then the last state of the phase before (SX)
    for ip, ph in enumerate(phases):
        a, b = ph.start, ph.end
        n = ph.intervals
        h = (b - a) / n
        a_num, b_num = bvals[ip]
        num_start.append(a_num)
        num_h.append((b_num - a_num) / n)
        x_start = ph.reset(x_prev) if ph.reset is not None else x_prev
        nodes: list[list[Any]] = []  # per interval: its start state, then its collocation states
        for k in range(n):
            t_k = a + k * h
            X = [x_start] if k == 0 else [nodes[-1][-1]]
            for j in range(degree):
                v = ca.SX.sym(f"x{ip}_{k}_{j}", nx)
                w.append(v)
                w0.append(x_guess(a_num + (k + tau[j]) * (b_num - a_num) / n))
                X.append(v)
            for j in range(1, degree + 1):
                xp = sum(C[m, j] * X[m] for m in range(degree + 1))
                g.append(xp - h * dynamics(ph.mode, t_k + tau[j - 1] * h, X[j], a))
            nodes.append(X)
        blocks.append((h, nodes))
        x_prev = nodes[-1][-1]
    return PhaseTranscription(ca.vertcat(*w), ca.vertcat(*g), np.concatenate(w0), list(phases), blocks, tau,
                              num_start, num_h)


# ---------------------------------------------------------------------------------------------
# the same collocation from one CasADi Function per interval, mapped over every interval


class IntervalChain:
    """Radau collocation of a chain of intervals (phases laid end to end) from one CasADi
    Function per interval, called at every interval through :meth:`casadi.Function.map`.

    ``rates`` is a :class:`casadi.Function` ``(x, t, data, p) → ẋ``: ``t`` a scalar time
    (whatever origin the rates use, e.g. the time since their phase began), ``data`` a column
    of numbers per interval (the mode's flags, an input's value, ...), ``p`` the parameters.
    Interval times are affine, ``t = a + b·s``, given as numbers ``(a, b)``: by default ``s``
    is ``p`` (phase boundaries at known times or at parameter-dependent ones such as a clock's
    τ, τ1, τ2); with ``n_times = K`` each interval has its own K time unknowns ``s`` (e.g. the
    switching times at the two ends of its phase, unknowns of the NLP that the rates do not
    see), so that a record with many switching times keeps every block small.

    ``path`` (optional) is a :class:`casadi.Function` ``(x, t, data, p) → c`` evaluated at the
    d collocation points of every interval (:meth:`paths`; path constraints such as contact
    forces λ(x) ≥ 0 or gaps φ(x) ≥ 0, bounded by the caller row by row).

    A chain is continuous: each interval starts where the previous one ended, except at the
    intervals named in ``entry = (intervals, X)`` which start from the columns of ``X`` (NLP
    variables: a phase entered through a reset map, whose condition ``X = reset(x⁻)`` the
    caller adds, e.g. with :class:`PointFunction`; interval 0 may be one of them, which makes
    the initial state unknown).

    ``delay`` (optional, the position of a delay τ among the parameters ``p``): the rates and
    path Functions take a fifth input, the state at t − τ (nx), for a delayed feedback.  The
    delayed state at each collocation point is read, like a sample, by the collocation
    polynomial of the interval that holds t − τ (any earlier interval of the chain, across
    phases and resets; the caller assigns it at the current estimates, as it assigns the
    samples, and checks the assignment after the solve); before the chain's first time the
    history is the initial state (the entry state of interval 0).  The methods that build
    defects, paths and their derivative blocks then take ``delayed = (D, hist)``: ``D``
    (N × d ints) the interval holding t − τ of each collocation point, ``hist`` (N × d, 0/1)
    whether t − τ is before the start.  With delays a block may hold one NLP variable twice
    (the delayed interval's switching times are often its own); :meth:`hessian` counts both.

    ``compiled``: the per-interval derivative Functions (Jacobian and Hessian blocks, which the
    solver evaluates at every iteration and nothing differentiates further) run as machine code
    (:func:`colloc.base.compiler.compiled_all`, cached on disk); the heel-off fit of a 20 s
    record spends 40 % less CPU time.

    The defect, reading, path and Hessian Functions are built once per ``rates`` and reused
    for every record and every re-assignment of the phases: only numbers (interval times,
    data, sample positions) change, not the symbolic structure of one interval.  The exact
    Hessian of the Lagrangian is assembled from per-interval and per-sample blocks
    (:meth:`hessian`), which avoids the symbolic Hessian of the whole NLP.
    """

    def __init__(self, rates: ca.Function, degree: int = 3, *, path: ca.Function | None = None,
                 n_times: int | None = None, delay: int | None = None, compiled: bool = False) -> None:
        self.degree = d = int(degree)
        self.nx = nx = rates.size1_in(0)
        self.np = npar = rates.numel_in(3)
        #: number of per-interval time unknowns (0: the times are affine in ``p``)
        self.n_times = K = int(n_times or 0)
        basis = radau_basis(d)
        self.tau, C = basis.tau, basis.derivative.T  # C[j, k]: derivative of basis j at point k
        x0, xc = ca.SX.sym("x0", nx), ca.SX.sym("xc", nx, d)
        data, p, s = ca.SX.sym("data", rates.sparsity_in(2)), ca.SX.sym("p", npar), ca.SX.sym("s", K)
        nb = K if K else npar
        ta, tb, ha, hb = ca.SX.sym("ta"), ca.SX.sym("tb", nb), ca.SX.sym("ha"), ca.SX.sym("hb", nb)
        clock = s if K else p
        t, h = ta + ca.dot(tb, clock), ha + ca.dot(hb, clock)
        X = [x0] + [xc[:, j] for j in range(d)]
        #: position of τ among the parameters (None: no delayed state)
        self.delay = None if delay is None else int(delay)
        #: rows of the numbers that place each delayed read: ta, tb (nb), ha, hb (nb), hist
        self.n_dnum = 2 * nb + 3
        extra, zd, xd = [], [], [None] * (d + 1)
        if self.delay is not None:
            dx0, dxc = ca.SX.sym("dx0", nx, d), ca.SX.sym("dxc", nx, d * d)
            dnum, ds = ca.SX.sym("dnum", self.n_dnum, d), ca.SX.sym("ds", K, d)
            for j in range(1, d + 1):
                col = dnum[:, j - 1]
                dclock = ds[:, j - 1] if K else p
                t_m = col[0] + ca.dot(col[1:1 + nb], dclock)
                h_m = col[1 + nb] + ca.dot(col[2 + nb:2 + 2 * nb], dclock)
                r = (t + self.tau[j - 1] * h - p[self.delay] - t_m) / h_m
                nodes = [dx0[:, j - 1]] + [dxc[:, (j - 1) * d + m] for m in range(d)]
                poly = sum(nodes[m] * ell for m, ell in enumerate(basis.values(r)))
                hist = col[2 + 2 * nb]
                xd[j] = hist * dx0[:, j - 1] + (1 - hist) * poly
            extra, zd = [dx0, dxc, dnum, ds], [ca.vec(dx0), ca.vec(dxc), ca.vec(ds)]

        def call(fn, j):
            return fn(X[j], t + self.tau[j - 1] * h, data, p, *([xd[j]] if self.delay is not None else []))

        defect = ca.horzcat(*[sum(C[m, j] * X[m] for m in range(d + 1)) - h * call(rates, j)
                              for j in range(1, d + 1)])
        z = ca.vertcat(x0, ca.vec(xc), p, s, *zd)  # the local variables of one block
        args = [x0, xc, ta, tb, ha, hb, data, p, s, *extra]
        #: defects of one interval: (x0, xc, ta, tb, ha, hb, data, p, s) → nx × d
        self.defect = ca.Function("defect", args, [defect])
        #: their Jacobian in the local variables [x0, vec(xc), p, s] (sparse, the same for every interval)
        self.defect_jac = ca.Function("defect_jac", args, [ca.jacobian(ca.vec(defect), z)])
        lam = ca.SX.sym("lam", nx, d)
        #: the upper triangle of the Hessian of lam · defects in the local variables
        self.defect_hess = ca.Function("defect_hess", [*args, lam], [ca.triu(ca.hessian(ca.dot(lam, defect), z)[0])])
        self.n_path = 0
        if path is not None:
            self.n_path = m = path.numel_out(0)
            pv = ca.horzcat(*[call(path, j) for j in range(1, d + 1)])
            mu = ca.SX.sym("mu", m, d)
            #: path constraints of one interval (m × d, one column per collocation point)
            self.path = ca.Function("path", args, [pv])
            self.path_jac = ca.Function("path_jac", args, [ca.jacobian(ca.vec(pv), z)])
            self.path_hess = ca.Function("path_hess", [*args, mu], [ca.triu(ca.hessian(ca.dot(mu, pv), z)[0])])
        ts, c, y, wgt = ca.SX.sym("ts"), ca.SX.sym("c", nx), ca.SX.sym("y"), ca.SX.sym("wgt")
        value = sum(X[j] * ell for j, ell in enumerate(basis.values((ts - t) / h)))
        read_args = [x0, xc, ts, ta, tb, ha, hb, p, s]
        #: the state of one interval at time ts: (x0, xc, ts, ta, tb, ha, hb, p, s) → nx
        self.read = ca.Function("read", read_args, [value])
        fit = 0.5 * wgt * (ca.dot(c, value) - y) ** 2
        z_read = ca.vertcat(x0, ca.vec(xc), p, s)
        self.read_hess = ca.Function("read_hess", [*read_args, c, y, wgt], [ca.triu(ca.hessian(fit, z_read)[0])])
        self.nz = z.shape[0]
        if compiled:
            from ..base.compiler import compiled_all

            names = ["defect_jac", "defect_hess", "read_hess"] + (["path_jac", "path_hess"] if path is not None else [])
            for name, fn in zip(names, compiled_all([getattr(self, n) for n in names])):
                setattr(self, name, fn)

    def starts(self, x0: Initial, xc: Sym, entry: Entry[Sym] | None = None) -> Sym:
        """The state at the start of each interval (nx × N): ``x0`` (or the entry state of
        interval 0), then the last collocation state of the previous interval, except at the
        ``entry`` intervals."""
        d = self.degree
        n = xc.shape[1] // d
        first = ca.DM.zeros(self.nx, 1) if x0 is None else ca.DM(x0)
        pool = ca.horzcat(first, xc[:, [k * d + d - 1 for k in range(n - 1)]])
        if entry is None or not len(entry[0]):
            return pool
        cols = list(range(n))
        for j, k in enumerate(entry[0]):
            cols[int(k)] = n + j
        return ca.horzcat(pool, entry[1])[:, cols]

    def _args(self, x0, xc, t, h, data, p, s, entry, delayed):
        """The arguments of the mapped interval Functions (with the delayed reads' when the
        chain has a delay)."""
        n = len(t[0])
        starts = self.starts(x0, xc, entry)
        out = [starts, xc, *_row(t), *_row(h), ca.DM(data), p, self._times(s, n)]
        if self.delay is None:
            return out
        if delayed is None:
            raise ValueError("IntervalChain with a delay: pass delayed=(D, hist), the interval of each delayed read")
        D, hist = (np.asarray(v).reshape(n, self.degree) for v in delayed)
        D = D.astype(int)
        flat = D.ravel()
        d = self.degree
        cols = (flat[:, None] * d + np.arange(d)[None, :]).ravel().tolist()
        a, b = np.asarray(t[0], dtype=float)[flat], np.asarray(t[1], dtype=float)[flat]
        ha, hb = np.asarray(h[0], dtype=float)[flat], np.asarray(h[1], dtype=float)[flat]
        dnum = np.column_stack([a, b.reshape(len(flat), -1), ha, hb.reshape(len(flat), -1),
                                np.asarray(hist, dtype=float).ravel()]).T
        ds = ca.DM(0, 1) if not self.n_times else s[:, flat.tolist()]
        return out + [starts[:, flat.tolist()], xc[:, cols], ca.DM(dnum), ds]

    def _times(self, s, n):
        """The per-interval time unknowns (K × N; an empty input when the times are in ``p``)."""
        return ca.DM(0, 1) if not self.n_times else s

    def defects(self, x0: Initial, xc: Sym, t: Affine, h: Affine, data: np.ndarray | ca.DM, p: Sym,
                s: Sym | None = None, entry: Entry[Sym] | None = None, delayed: Delayed | None = None) -> Sym:
        """Defects (nx × N·d) of a chain of N intervals: ``xc`` (nx × N·d, symbols) the
        collocation states, ``x0`` the known initial state, ``t``/``h`` pairs ``(a, b)`` of
        the interval times (as the rates take them) and lengths, ``a`` (N) and ``b`` (N × np,
        or N × K with ``s`` the K × N time unknowns of each interval) with ``t = a + b·p``
        (``a + b·s``); ``data`` (k × N) numbers per interval; ``p`` the parameters; ``entry``
        as in the class description."""
        n = len(t[0])
        return self.defect.map(n)(*self._args(x0, xc, t, h, data, p, s, entry, delayed))

    def paths(self, x0: Initial, xc: Sym, t: Affine, h: Affine, data: np.ndarray | ca.DM, p: Sym,
              s: Sym | None = None, entry: Entry[Sym] | None = None, delayed: Delayed | None = None) -> Sym:
        """The path constraints (n_path × N·d, one column per collocation point, in the order
        of ``xc``) of a chain: arguments as in :meth:`defects`."""
        n = len(t[0])
        return self.path.map(n)(*self._args(x0, xc, t, h, data, p, s, entry, delayed))

    def values(self, x0: Initial, xc: Sym, interval: ArrayLike, times: Numbers, t: Affine, h: Affine, p: Sym,
               s: Sym | None = None, entry: Entry[Sym] | None = None) -> Sym:
        """The states (nx × M) at the M ``times``, each read in its ``interval`` (M ints, the
        polynomial extrapolated past the interval's ends); ``t``/``h`` as in :meth:`defects`
        but with the interval times on the absolute clock of ``times``."""
        interval = np.asarray(interval, dtype=int)
        return self.read.map(len(interval))(*self._gather(x0, xc, interval, entry), ca.DM(times).T,
                                             *_row(t, interval), *_row(h, interval), p,
                                             self._select(s, interval))

    def _select(self, s, interval):
        return ca.DM(0, 1) if not self.n_times else s[:, np.asarray(interval).tolist()]

    def _gather(self, x0, xc, interval, entry=None):
        d = self.degree
        cols = (interval[:, None] * d + np.arange(d)[None, :]).ravel().tolist()
        return self.starts(x0, xc, entry)[:, interval.tolist()], xc[:, cols]

    def local_indices(self, n: int, offset: int, p_index: Indices, time_index: ArrayLike | None = None,
                      entry_index: EntryIndex | None = None, delayed: Delayed | None = None) -> np.ndarray:
        """Indices in the NLP's variables of each interval's local block [x0, vec(xc), p, s]
        (N × nz; −1 for the known initial state and for time unknowns that are constants),
        for a chain whose ``vec(xc)`` starts at ``offset`` and whose parameters are at
        ``p_index``; ``time_index`` (N × K) the NLP indices of each interval's time unknowns,
        ``entry_index = (intervals, B × nx)`` those of the entry states."""
        nx, d = self.nx, self.degree
        k = np.arange(n)[:, None]
        x0 = offset + (k * d - 1) * nx + np.arange(nx)[None, :]
        x0[0] = -1
        if entry_index is not None:
            for kk, idx in zip(entry_index[0], np.asarray(entry_index[1], dtype=int).reshape(-1, nx)):
                x0[int(kk)] = idx
        xc = offset + k * d * nx + np.arange(d * nx)[None, :]
        parts = [x0, xc, np.broadcast_to(np.asarray(p_index, dtype=int), (n, len(p_index)))]
        if self.n_times:
            parts.append(np.asarray(time_index, dtype=int).reshape(n, self.n_times))
        if self.delay is not None and delayed is not None:  # the delayed reads' intervals
            D = np.asarray(delayed[0], dtype=int).reshape(n, self.degree)
            parts.append(x0[D].reshape(n, -1))
            parts.append(xc[D].reshape(n, -1))
            if self.n_times:
                parts.append(np.asarray(time_index, dtype=int).reshape(n, self.n_times)[D].reshape(n, -1))
        return np.hstack(parts)

    def defect_block(self, x0: Initial, xc: Sym, t: Affine, h: Affine, data: np.ndarray | ca.DM, p: Sym, lam: Sym,
                     offset: int, p_index: Indices, s: Sym | None = None, entry: Entry[Sym] | None = None,
                     time_index: ArrayLike | None = None, entry_index: EntryIndex | None = None,
                     delayed: Delayed | None = None) -> tuple:
        """The Hessian blocks of ``lam · defects`` (``lam`` nx × N·d, the multipliers of
        :meth:`defects` in the same layout), one per interval, for :meth:`hessian`."""
        n = len(t[0])
        values = self.defect_hess.map(n)(*self._args(x0, xc, t, h, data, p, s, entry, delayed), lam)
        return values, self.local_indices(n, offset, p_index, time_index, entry_index, delayed)

    def path_block(self, x0: Initial, xc: Sym, t: Affine, h: Affine, data: np.ndarray | ca.DM, p: Sym, mu: Sym,
                   offset: int, p_index: Indices, s: Sym | None = None, entry: Entry[Sym] | None = None,
                   time_index: ArrayLike | None = None, entry_index: EntryIndex | None = None,
                   delayed: Delayed | None = None) -> tuple:
        """The Hessian blocks of ``mu · paths`` (``mu`` n_path × N·d), one per interval."""
        n = len(t[0])
        values = self.path_hess.map(n)(*self._args(x0, xc, t, h, data, p, s, entry, delayed), mu)
        return values, self.local_indices(n, offset, p_index, time_index, entry_index, delayed)

    def fit_block(self, x0: Initial, xc: Sym, interval: ArrayLike, times: Numbers, t: Affine, h: Affine, p: Sym,
                  c: Numbers, y: Numbers, weight: float | Sym, offset: int, p_index: Indices,
                  s: Sym | None = None, entry: Entry[Sym] | None = None, time_index: ArrayLike | None = None,
                  entry_index: EntryIndex | None = None) -> tuple:
        """The Hessian blocks of ``weight · ½ (c · x(times) − y)²``, one per sample (``y`` the
        M measured values, ``c`` the nx weights of the states, read as in :meth:`values`)."""
        interval = np.asarray(interval, dtype=int)
        values = self.read_hess.map(len(interval))(*self._gather(x0, xc, interval, entry), ca.DM(times).T,
                                                    *_row(t, interval), *_row(h, interval), p,
                                                    self._select(s, interval), ca.DM(c), ca.DM(y).T, weight)
        n = xc.shape[1] // self.degree
        return values, self.local_indices(n, offset, p_index, time_index, entry_index)[interval]

    def jacobian_block(self, x0: Initial, xc: Sym, t: Affine, h: Affine, data: np.ndarray | ca.DM, p: Sym,
                       offset: int, p_index: Indices, row_offset: int, s: Sym | None = None,
                       entry: Entry[Sym] | None = None, time_index: ArrayLike | None = None,
                       entry_index: EntryIndex | None = None, delayed: Delayed | None = None) -> tuple:
        """The Jacobian blocks of :meth:`defects` (``vec`` of it, starting at constraint
        ``row_offset``), one per interval, for :meth:`jacobian`."""
        n = len(t[0])
        values = self.defect_jac.map(n)(*self._args(x0, xc, t, h, data, p, s, entry, delayed))
        rows = row_offset + np.arange(n)[:, None] * self.nx * self.degree + np.arange(self.nx * self.degree)[None, :]
        return values, rows, self.local_indices(n, offset, p_index, time_index, entry_index, delayed)

    def path_jacobian_block(self, x0: Initial, xc: Sym, t: Affine, h: Affine, data: np.ndarray | ca.DM, p: Sym,
                            offset: int, p_index: Indices, row_offset: int, s: Sym | None = None,
                            entry: Entry[Sym] | None = None, time_index: ArrayLike | None = None,
                            entry_index: EntryIndex | None = None, delayed: Delayed | None = None) -> tuple:
        """The Jacobian blocks of :meth:`paths` (``vec`` of it from constraint ``row_offset``)."""
        n = len(t[0])
        values = self.path_jac.map(n)(*self._args(x0, xc, t, h, data, p, s, entry, delayed))
        m = self.n_path * self.degree
        rows = row_offset + np.arange(n)[:, None] * m + np.arange(m)[None, :]
        return values, rows, self.local_indices(n, offset, p_index, time_index, entry_index, delayed)

    def hessian(self, n_var: int, blocks: Sequence[tuple]) -> ca.MX:
        """The upper triangle of the Lagrangian's Hessian (MX, ``n_var`` × ``n_var``) from
        blocks ``(values, indices)`` made by :meth:`defect_block`, :meth:`path_block`,
        :meth:`fit_block` and :meth:`PointFunction.hessian_block` (``values`` the mapped upper
        triangles, ``indices`` B × nz the NLP indices of each block's local variables),
        summed into the global matrix by one constant sparse matrix."""
        return assemble_hessian(n_var, blocks)

    def jacobian(self, n_con: int, n_var: int, blocks: Sequence[tuple], constant: ca.DM | None = None) -> ca.MX:
        """The constraints' Jacobian (MX, ``n_con`` × ``n_var``) from :meth:`jacobian_block`,
        :meth:`path_jacobian_block` and :meth:`PointFunction.jacobian_block` blocks
        ``(values, rows, indices)`` and an optional ``constant`` (a sparse DM of the same
        shape, e.g. the rows of linear constraints)."""
        return assemble_jacobian(n_con, n_var, blocks, constant)


class PointFunction:
    """A constraint ``g(z)`` (a :class:`casadi.Function` of one column ``z``) of a few NLP
    variables, applied at B places (junctions between phases: a reset map, a landing
    condition): its values, and Jacobian and Hessian blocks in the format of
    :meth:`IntervalChain.jacobian` / :meth:`IntervalChain.hessian`.  ``index`` (B × nz) gives
    the NLP variables of ``z`` at each place; ``V`` is the NLP's variable vector (MX)."""

    def __init__(self, fn: ca.Function) -> None:
        nz, m = fn.numel_in(0), fn.numel_out(0)
        z, lam = ca.SX.sym("z", nz), ca.SX.sym("lam", m)
        g = fn(z)
        self.nz, self.m, self.fn = nz, m, fn
        self.jac = ca.Function("point_jac", [z], [ca.jacobian(g, z)])
        self.hess = ca.Function("point_hess", [z, lam], [ca.triu(ca.hessian(ca.dot(lam, g), z)[0])])

    def _z(self, V, index):
        index = np.asarray(index, dtype=int)
        return ca.reshape(V[index.ravel().tolist()], self.nz, index.shape[0])

    def __call__(self, V: Sym, index: np.ndarray | Sequence[Sequence[int]]) -> Sym:
        """The values (m × B)."""
        return self.fn.map(len(index))(self._z(V, index))

    def jacobian_block(self, V: Sym, index: np.ndarray | Sequence[Sequence[int]], row_offset: int) -> tuple:
        """The Jacobian blocks of ``vec`` of the values (from constraint ``row_offset``)."""
        index = np.asarray(index, dtype=int)
        rows = row_offset + np.arange(len(index))[:, None] * self.m + np.arange(self.m)[None, :]
        return self.jac.map(len(index))(self._z(V, index)), rows, index

    def hessian_block(self, V: Sym, index: np.ndarray | Sequence[Sequence[int]], lam: Sym) -> tuple:
        """The Hessian blocks of ``lam · values`` (``lam`` m × B)."""
        index = np.asarray(index, dtype=int)
        return self.hess.map(len(index))(self._z(V, index), lam), index


def assemble_hessian(n_var: int, blocks: Sequence[tuple]) -> ca.MX:
    """The upper triangle of a Hessian (MX, ``n_var`` × ``n_var``) summed from blocks
    ``(values, indices)``: ``values`` the mapped upper triangles of B places' local Hessians,
    ``indices`` (B × nz) the NLP variable of each local variable (−1: a constant).  A variable
    held more than once in a block counts once per pair of its places (∂²/∂v² of f(v, v))."""
    parts = []
    for values, idx in blocks:
        r, c = _block_pattern(values, idx.shape[1])
        gi, gj = idx[:, r], idx[:, c]
        # an off-diagonal local entry of one variable held twice lands on the global diagonal,
        # where the symmetric entry the upper triangle leaves out counts as well
        twice = (gi == gj) & (r != c)[None, :]
        parts.append((values, np.minimum(gi, gj), np.maximum(gi, gj), np.where(twice, 2.0, 1.0)))
    return _assemble(n_var, n_var, parts)


def assemble_jacobian(n_con: int, n_var: int, blocks: Sequence[tuple], constant: ca.DM | None = None) -> ca.MX:
    """A constraints' Jacobian (MX, ``n_con`` × ``n_var``) summed from blocks ``(values, rows,
    indices)`` (the mapped local Jacobians of B places, their constraint rows B × m and NLP
    variables B × nz) and an optional ``constant`` sparse DM of the same shape."""
    parts = []
    for values, rows, idx in blocks:
        r, c = _block_pattern(values, idx.shape[1])
        parts.append((values, rows[:, r], idx[:, c]))
    return _assemble(n_con, n_var, parts, constant)


def _block_pattern(values, ncol: int):
    """(rows, cols) of the nonzeros of one block of a horizontally mapped output."""
    sp = values.sparsity()
    r, c = sp.get_triplet()
    nnz = sp.nnz() // (sp.size2() // ncol)
    return np.asarray(r[:nnz]), np.asarray(c[:nnz])


def _assemble(n_rows: int, n_cols: int, parts, constant=None):
    """A sparse MX summing block nonzeros into a global matrix: ``parts`` are ``(values,
    rows, cols)`` with ``values`` a mapped output (B blocks of the same pattern) and
    ``rows``/``cols`` (B × nnz) the global position of each nonzero (−1: dropped), and
    optionally a fourth entry, the weight of each nonzero (B × nnz; default 1)."""
    rs: list[np.ndarray] = []
    cs: list[np.ndarray] = []
    ss: list[np.ndarray] = []
    ws: list[np.ndarray] = []
    base = 0
    for values, rows, cols, *weight in parts:
        nb, nnz = rows.shape
        src = base + np.arange(nb * nnz).reshape(nb, nnz)
        ok = (rows >= 0) & (cols >= 0)
        rs.append(rows[ok])
        cs.append(cols[ok])
        ss.append(src[ok])
        ws.append(np.broadcast_to(weight[0], rows.shape)[ok] if weight else np.ones(int(ok.sum())))
        base += nb * nnz
    if constant is not None:
        cr, cc = ca.DM(constant).sparsity().get_triplet()
        rs.append(np.asarray(cr, dtype=int))
        cs.append(np.asarray(cc, dtype=int))
        ss.append(base + np.arange(len(cr)))
        ws.append(np.ones(len(cr)))
    R, C, S = (np.concatenate(v).astype(np.int64) for v in (rs, cs, ss))
    W = np.concatenate(ws)
    # the compressed-column patterns are built here (numpy) rather than by Sparsity.triplet:
    # the same result without CasADi sorting millions of triplets
    keys = np.sort(C * n_rows + R)
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys
    sp = _ccs(n_rows, n_cols, keys % n_rows, keys // n_rows)
    pos = np.searchsorted(keys, C * n_rows + R)
    n_src = base + (0 if constant is None else ca.DM(constant).nnz())
    order = np.argsort(S, kind="stable")  # one nonzero per source column: its row is the target
    scatter = ca.DM(_ccs(len(keys), n_src, pos[order], S[order]), W[order])
    tail = [] if constant is None else [ca.DM(ca.DM(constant).nonzeros())]
    stacked = ca.vertcat(*[ca.vec(part[0].nz[:]) for part in parts], *tail)
    return ca.MX(sp, ca.mtimes(scatter, stacked))


def _ccs(n_rows: int, n_cols: int, rows: np.ndarray, cols: np.ndarray) -> ca.Sparsity:
    """The sparsity of nonzeros at (``rows``, ``cols``), given sorted by column then row and
    without repeats."""
    colind = np.searchsorted(cols, np.arange(n_cols + 1), side="left")
    return ca.Sparsity(int(n_rows), int(n_cols), colind.tolist(), np.asarray(rows, dtype=np.int64).tolist())


def _row(aff, select=None):
    """(a, b) of affine times → (1 × N, np × N) numbers, optionally at the rows ``select``."""
    a, b = np.asarray(aff[0], dtype=float), np.asarray(aff[1], dtype=float)
    if select is not None:
        a, b = a[select], b[select]
    return ca.DM(a).T, ca.DM(b).T
