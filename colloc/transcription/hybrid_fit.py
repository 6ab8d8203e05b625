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
from .multiphase import Phase, transcribe_phases

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


def _read_window(time: np.ndarray, values, k: int, t: ca.SX):
    """:func:`read_input` at an expression ``t`` near step ``k``: the piece of whichever step of
    ``k ± INPUT_WINDOW`` holds the value of ``t`` (an ``if_else`` chain)."""
    lo, hi = max(k - INPUT_WINDOW, 0), min(k + INPUT_WINDOW, len(time) - 2)
    step = float(time[1] - time[0])
    expr = read_input(time, values, hi, ca.fmin(t, time[hi + 1] + step))
    for j in range(hi - 1, lo - 1, -1):
        tj = ca.fmax(t, time[lo] - step) if j == lo else t
        expr = ca.if_else(t < time[j + 1], read_input(time, values, j, tj), expr)
    return expr


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


class HybridNLP:
    """The NLP of ``problem`` for the ``layouts`` (one per trial) at the start values ``p0``
    (dict), ``x0s`` (initial states) and ``x_guess`` (per trial, ``t → state``)."""

    def __init__(self, problem: HybridProblem, layouts: list, p0: dict, x0s: list, x_guess: list,
                 degree: int = 3, sides: bool = True):
        model = problem.model
        self.problem, self.layouts, self.degree = problem, layouts, degree
        Xs, r = ca.SX.sym("X", len(problem.states), degree + 1), ca.SX.sym("r")
        weights = radau_basis(degree).values(r)  # the Lagrange basis at r
        #: the state at position r (in interval lengths) of an interval with nodes X
        self._read = ca.Function("read", [Xs, r], [ca.mtimes(Xs, ca.vertcat(*weights))])
        names = problem.parameters
        self.scale = np.array([abs(p0[n]) if p0[n] != 0 else 1.0 for n in names])
        ph = ca.SX.sym("p", len(names))
        p = {n: self.scale[i] * ph[i] for i, n in enumerate(names)}
        nx = len(problem.states)
        w, w0, lbw, ubw = [ph], [np.array([p0[n] for n in names]) / self.scale], [], []
        lo = np.array([problem.bounds[n][0] for n in names]) / self.scale
        hi = np.array([problem.bounds[n][1] for n in names]) / self.scale
        lbw.append(lo)
        ubw.append(hi)
        g, lbg, ubg, kinds = [], [], [], []
        self._pieces = []
        self.p_index = np.arange(len(names))
        self.x0_index, self.tau_index = [], []
        offset = len(names)

        def add(expr, lower, upper, kind):
            expr = ca.vec(ca.SX(expr))
            g.append(expr)
            lbg.append(np.broadcast_to(lower, expr.shape[0]).astype(float))
            ubg.append(np.broadcast_to(upper, expr.shape[0]).astype(float))
            kinds.extend([kind] * expr.shape[0])

        def dynamics_of(model):
            def dynamics(mode, t, x, t0):
                return as_column(model.mode(mode).rhs(t, _symbols(x), p, t0))
            return dynamics

        #: per trial, the errors-in-variables inputs' unknowns (their true values at the samples)
        self.inputs: list[dict] = []
        #: per trial, the switching times the inputs' reads were placed at
        self.built_switches = [np.array(lay.switches, dtype=float) for lay in layouts]
        self.input_index: list[dict] = []
        eiv_w: list = []
        for model, trial, lay, x0, xg in zip(problem.models, problem.trials, layouts, x0s, x_guess):
            time = trial.time
            t0, tf = float(time[0]), float(time[-1])
            m = len(lay.switches)
            X0 = ca.SX.sym(f"x0_{trial.name}", nx)
            if problem.fixed_switches:
                tau = ca.SX(ca.DM(lay.switches)) if m else ca.SX(0, 1)
                tau_sym = ca.SX.sym("tau", 0)
            else:
                tau = tau_sym = ca.SX.sym(f"tau_{trial.name}", m)
            values: dict = {}
            for u in problem.inputs:
                if u in problem.input_noise:
                    values[u] = ca.SX.sym(f"{u}_{trial.name}", len(time))
                    eiv_w.append((values[u], np.asarray(trial[u], dtype=float)))
                else:
                    values[u] = np.asarray(trial[u], dtype=float)
            self.inputs.append({u: v for u, v in values.items() if u in problem.input_noise})
            model = model.with_inputs(self._reader(time, values, tau_sym, lay.switches))
            dynamics = dynamics_of(model)
            bound = {g.name: g for g in model.all_guards()}
            ends = [t0] + [tau[i] for i in range(m)] + [tf]
            phases = []
            for i, mode in enumerate(lay.sequence):
                reset: Callable | None
                if i == 0:
                    reset = (lambda _x, X0=X0: X0)
                else:
                    guard: Guard = bound[lay.guards[i - 1].name]
                    reset = None if guard.reset is None else (
                        lambda x, guard=guard, s=ends[i]: as_column(guard.reset(s, _symbols(x), p)))
                phases.append(Phase(mode, ends[i], ends[i + 1], lay.intervals[i], reset))
            tr = transcribe_phases(phases, dynamics, np.zeros(nx), tau_sym, lay.switches if m and not
                                   problem.fixed_switches else np.zeros(0), xg, degree)
            self.x0_index.append(offset + np.arange(nx))
            w.append(X0)
            w0.append(np.asarray(x0, dtype=float))
            lbw.append(np.full(nx, -np.inf))
            ubw.append(np.full(nx, np.inf))
            offset += nx
            if not problem.fixed_switches and m:
                self.tau_index.append(offset + np.arange(m))
                w.append(tau_sym)
                w0.append(np.asarray(lay.switches, dtype=float))
                lbw.append(np.full(m, t0))
                ubw.append(np.full(m, tf))
                offset += m
                gap = 0.1 * lay.dt
                add(ca.vertcat(tau[0] - t0, ca.diff(tau), tf - tau[m - 1]), gap, np.inf,
                    f"switching times in order ({trial.name})")
            else:
                self.tau_index.append(np.zeros(0, dtype=int))
            w.append(tr.w)
            w0.append(tr.w_guess)
            lbw.append(np.full(tr.w.shape[0], -np.inf))
            ubw.append(np.full(tr.w.shape[0], np.inf))
            offset += tr.w.shape[0]
            add(tr.g, 0.0, 0.0, f"collocation defect ({trial.name})")
            tau_pts = tr.tau
            for i, mode in enumerate(lay.sequence):
                h, nodes = tr.blocks[i]
                if i < m:  # the guard that ends the phase is zero there
                    guard = bound[lay.guards[i].name]
                    add(self._guard(guard, ends[i + 1], nodes[-1][-1], p, mode, ends[i]), 0.0, 0.0,
                        f"guard {guard.name} at switch {i + 1} of {trial.name}")
                if not sides:
                    continue
                for guard in model.all_guards():
                    if not guard.watches(mode) or guard.direction == 0:
                        continue
                    vals = []
                    for k, X in enumerate(nodes):
                        for j in range(1, degree + 1):
                            if k == len(nodes) - 1 and j == degree:
                                continue  # the phase's end: the guard's own constraint
                            t = ends[i] + (k + tau_pts[j - 1]) * h
                            vals.append(-guard.direction * self._guard(guard, t, X[j], p, mode, ends[i]))
                    if vals:
                        add(ca.vertcat(*vals), 0.0, np.inf,
                            f"guard {guard.name} on its side in phase {i + 1} ({mode}) of {trial.name}")
            self._pieces.append((tr.blocks, ends))
        for sym, measured in eiv_w:  # the errors-in-variables inputs, last, from their measurement
            w.append(sym)
            w0.append(measured)
            lbw.append(np.full(len(measured), -np.inf))
            ubw.append(np.full(len(measured), np.inf))
        for values in self.inputs:
            self.input_index.append({})
            for u, sym in values.items():
                self.input_index[-1][u] = offset + np.arange(sym.shape[0])
                offset += sym.shape[0]
        self.w = ca.vertcat(*w)
        self.w0 = np.concatenate(w0)
        self.lbw, self.ubw = np.concatenate(lbw), np.concatenate(ubw)
        self.g = ca.vertcat(*g)
        self.lbg, self.ubg = np.concatenate(lbg), np.concatenate(ubg)
        self.kinds = kinds
        self.read_samples()

    def read_samples(self) -> None:
        """The fitted samples (``reads``: per trial, nx × samples; ``res``: the weighted
        residuals), each read in the phase and interval that hold it at the layouts' current
        switching times, by that interval's polynomial, whose position moves with the
        switching times.  Called again after the switching times have moved."""
        problem = self.problem
        res, self.reads = [], []
        for n, (trial, lay, (blocks, ends)) in enumerate(zip(problem.trials, self.layouts, self._pieces)):
            time = trial.time
            phase, interval = assign(lay, time)
            read = []
            for tk, i, k in zip(time, phase, interval):
                h, nodes = blocks[i]
                read.append(self._read(ca.horzcat(*nodes[k]), (tk - ends[i]) / h - k))
            states = ca.horzcat(*read)  # nx × samples
            self.reads.append(states)
            for s, wgt in problem.fit.items():
                if s not in trial:
                    continue
                j = problem.states.index(s)
                present = np.flatnonzero(np.isfinite(trial[s]) & lay.kept(time))
                y = np.asarray(trial[s])[present]
                res.append(math.sqrt(wgt) * (states[j, present.tolist()].T - ca.DM(y)))
            for u, sym in self.inputs[n].items():
                res.append((sym - ca.DM(np.asarray(trial[u], dtype=float))) / problem.input_noise[u])
        self.res = ca.vertcat(*res)
        self.num_observations = int(self.res.shape[0])

    @staticmethod
    def _reader(time: np.ndarray, values: dict, tau_sym: ca.SX, switches: np.ndarray) -> Callable:
        """``t → {input: value}`` for the NLP: ``t`` an expression of the switching times, read in
        the sample step that holds its value at their current values (:func:`read_input`)."""
        def at(t):
            if isinstance(t, ca.SX) and not t.is_constant():
                k = _step(time, float(ca.evalf(ca.substitute(t, tau_sym, ca.DM(switches)))))
                return {u: _read_window(time, v, k, t) for u, v in values.items()}
            t_num = float(ca.evalf(t)) if isinstance(t, ca.SX) else float(t)
            return {u: read_input(time, v, _step(time, t_num), t_num) for u, v in values.items()}
        return at

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
