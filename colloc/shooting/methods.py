"""Shooting baselines on the same :class:`~colloc.Problem` as the collocation methods.

* :class:`SingleShooting`: the unknowns are each trial's initial state (plus free and
  errors-in-variables input values at the samples) and the parameters; the states come from
  integrating the model (CVODES or RK4) over the whole record.  The gradient of the
  least-squares objective comes from a strategy object: :class:`Adjoint` (reverse mode
  through the integrator: CVODES adjoint sensitivities, the conjugate-equation method of
  Barauskas & Krušinskienė 2007) or :class:`Forward` (forward sensitivities, one direction
  per unknown).  An optimizer object (:class:`~colloc.SteepestDescent`,
  :class:`~colloc.LBFGS`, :class:`~colloc.ReducedIpopt`) minimises it.
* :class:`MultipleShooting`: the record is cut into segments whose initial states are
  unknowns too, tied by continuity constraints; IPOPT (L-BFGS Hessian) solves it.

Both return an :class:`~colloc.results.result.Estimate`, judged into a
:class:`~colloc.Result` by :func:`colloc.solve`.  A simulation that diverges or fails never raises:
the run ends with a named status (``"simulation_failed"``…).
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import casadi as ca
import numpy as np
import pandas as pd

from ..base.errors import OptionsError, ProblemError
from ..base.versions import versions
from ..definition.explicit import explicit_rhs
from ..definition.problem import Problem
from ..results.result import Estimate
from ..simulation.integrators import Cvodes, RungeKutta, interval_data_size
from ..solving.ipopt import Ipopt, IterationInfo
from ..transcription.interpolation import InputReader, held_inputs, keys_kernel
from ..transcription.methods import AbstractMethod
from .optimizers import LBFGS, Outcome, ReducedIpopt, SteepestDescent

__all__ = ["Adjoint", "Forward", "MultipleShooting", "SingleShooting"]


@dataclass(frozen=True)
class Adjoint:
    """Gradient by reverse-mode AD through the integrator (adjoint sensitivities): one
    backward sweep whatever the number of unknowns."""

    name = "adjoint"

    def gradient(self, J: ca.Function, theta: ca.MX, value: ca.MX) -> ca.MX:
        """Symbolic ∇J at ``theta`` (``value`` = J(theta), shared with the forward pass)."""
        return J.reverse(1)(theta, value, 1.0)


@dataclass(frozen=True)
class Forward:
    """Gradient by forward sensitivities: one directional derivative per unknown."""

    name = "forward"

    def gradient(self, J: ca.Function, theta: ca.MX, value: ca.MX) -> ca.MX:
        """Symbolic ∇J at ``theta`` from ``len(theta)`` forward directions."""
        n = theta.numel()
        return J.forward(n)(theta, value, ca.DM.eye(n)).T


class _Shooting:
    """The reduced problem of one (single or multiple) shooting set-up, as CasADi graphs."""

    def __init__(self, problem: Problem, integrator, segments: int) -> None:
        model = problem.model
        # a point constraint on a plain state at a trial's first sample is a bound on that
        # trial's unknown initial state; anything else needs a collocation transcription
        initial_bounds: dict[tuple[int, str], tuple[float, float]] = {}
        states = model.element_names("state")
        for term in problem.terms:
            if term.kind == "point":
                expr = term.expr
                name = expr.name() if expr.numel() == 1 and expr.is_symbolic() else None
                starts = [i for i, t in enumerate(problem.trials)
                          if (term.trial is None or term.trial == i) and term.time == t.time[0]]
                if (name in states and starts and term.lower is not None and term.upper is not None
                        and len(starts) == (1 if term.trial is not None else len(problem.trials))):
                    for i in starts:
                        initial_bounds[(i, name)] = (float(term.lower[0]), float(term.upper[0]))
                    continue
            if term.kind in ("path", "point"):
                raise OptionsError(
                    f"{term.kind} constraint '{term.name}': shooting baselines handle only point constraints "
                    "that fix a state at a trial's first sample; use a collocation transcription"
                )
        self.problem = problem
        rhs = explicit_rhs(model)  # ModelError for DAEs: shooting needs an ODE
        self.n = n = len(model.element_names("state"))
        self.q = q = len(model.element_names("free_input"))
        known = model.element_names("known_input")
        self.s = s = len(known)
        self.eiv = eiv = list(problem.input_noise)
        self.pnames = pnames = model.element_names("parameter")
        npar = len(pnames)
        if model.delays:
            if not isinstance(integrator, RungeKutta):
                raise OptionsError(
                    f"model '{model.name}' has delayed states: shooting integrates it by the method of steps "
                    "with RungeKutta(substeps=...), not with CVODES"
                )
            if segments > 1:
                raise OptionsError(f"model '{model.name}' has delayed states: use SingleShooting, not multiple "
                                   "shooting (a segment's start would need the history before it)")
            steps = [np.diff(t.time) for t in problem.trials]
            h_all = np.concatenate(steps)
            if not np.allclose(h_all, h_all[0], rtol=1e-9, atol=0):
                raise OptionsError("delayed states need uniformly sampled trials with one common step")
            step, buf = _delayed_rk4(model, rhs, n, npar, s, q, float(h_all[0]), integrator.substeps)
        else:
            step, buf = integrator.step(rhs, n, npar, s, q), 1
        signals = model.functions()["signals"]
        sx, sr = model.scales("state"), model.scales("free_input")
        known_scale = dict(zip(known, model.scales("known_input")))
        se = np.array([known_scale[u] for u in eiv])
        sp = model.scales("parameter")

        # ---- unknowns: per trial [segment start states, r at samples, û at samples]; params
        names, scale, lo, hi, guess = [], [], [], [], []
        self.slices = []
        xlo, xhi = model.bounds("state")
        rlo, rhi = model.bounds("free_input")
        offset = 0
        for i, trial in enumerate(problem.trials):
            N = trial.num_samples
            bounds = np.linspace(0, N - 1, min(segments, N - 1) + 1).round().astype(int)
            g = problem.guess_trajectories(i, trial.time)
            start = offset
            for b in bounds[:-1]:
                names += [f"{e}(t={trial.time[b]:.4g})" for e in model.element_names("state")]
                scale += list(sx)
                if b == 0:
                    lo += [max(a, initial_bounds.get((i, e), (a, z))[0]) for e, a, z in zip(states, xlo, xhi)]
                    hi += [min(z, initial_bounds.get((i, e), (a, z))[1]) for e, a, z in zip(states, xlo, xhi)]
                else:
                    lo += list(xlo)
                    hi += list(xhi)
                guess += [g[e][b] for e in model.element_names("state")]
            for e, sc, a, z in zip(model.element_names("free_input"), sr, rlo, rhi):
                names += [e] * N
                scale += [sc] * N
                lo += [a] * N
                hi += [z] * N
                guess += list(g[e])
            for e, sc in zip(eiv, se):
                names += [e] * N
                scale += [sc] * N
                lo += [-np.inf] * N
                hi += [np.inf] * N
                guess += list(g[e])
            offset = len(names)
            self.slices.append((start, bounds))
        self.p_offset = len(names)
        scale += list(sp)
        lo += list(model.bounds("parameter")[0])
        hi += list(model.bounds("parameter")[1])
        guess += list(model.guesses("parameter"))
        self.names = names + pnames
        self.scale = np.array(scale, dtype=float)
        self.lb = np.array(lo, dtype=float) / self.scale
        self.ub = np.array(hi, dtype=float) / self.scale
        self.x0 = np.clip(np.array(guess, dtype=float) / self.scale, self.lb, self.ub)

        # ---- graphs -------------------------------------------------------------------
        theta = ca.MX.sym("theta", len(self.names))
        phys = theta * ca.DM(self.scale)
        p = phys[self.p_offset :]
        res_parts, extra, gaps, self.traj = [], [], [], []
        signal_names = problem.signal_names()
        for i, trial in enumerate(problem.trials):
            start, bounds = self.slices[i]
            N = trial.num_samples
            S = len(bounds) - 1
            X0 = ca.reshape(phys[start : start + n * S], n, S)
            o = start + n * S
            R = ca.reshape(phys[o : o + q * N], N, q).T if q else ca.MX(0, N)
            o += q * N
            E = ca.reshape(phys[o : o + len(eiv) * N], N, len(eiv)).T if eiv else ca.MX(0, N)
            if problem.input_jumps(i):
                raise ProblemError(
                    f"trial '{trial.name}': known input(s) {', '.join(problem.input_jumps(i))} jump; the shooting "
                    "baselines read inputs linearly between samples and cannot take a jump: use a collocation method"
                )
            measured_u = InputReader(trial, known, "linear")(trial.time)  # unmeasured samples interpolated
            rows = [E[eiv.index(u), :] if u in eiv else ca.DM(measured_u[k][None, :]) for k, u in enumerate(known)]
            U = ca.vertcat(*rows) if rows else ca.MX(0, N)
            t = ca.DM(trial.time[None, :])
            h = ca.DM(np.diff(trial.time)[None, :])
            held = model.held_inputs()
            R1 = ca.vertcat(*[R[j, :-1] if held[j] else R[j, 1:] for j in range(q)]) if q else R[:, 1:]
            held_u = held_inputs(trial, known)  # zero-order hold: the interval's start value throughout
            U1 = ca.vertcat(*[U[j, :-1] if held_u[j] else U[j, 1:] for j in range(len(known))]) if known else U[:, 1:]
            cols = ca.vertcat(ca.repmat(p, 1, N - 1), U[:, :-1], U1, R[:, :-1], R1, t[:, :-1], h)
            # segment k covers nodes bounds[k]..bounds[k+1]: its start state is unknown, the
            # rest is simulated; the simulated end must meet the next segment's start
            pieces = []
            for k in range(S):
                a, b = bounds[k], bounds[k + 1]
                Xk = step.mapaccum(b - a)(ca.repmat(X0[:, k], buf, 1), cols[:, a:b])[:n, :]  # nodes a+1 … b
                if k < S - 1:
                    gaps.append(Xk[:, -1] - X0[:, k + 1])
                pieces += [X0[:, k], Xk[:, :-1] if k < S - 1 else Xk]
            X = ca.horzcat(*pieces)
            self.traj.append((X, R, U, E))
            Y = ca.vertcat(signals.map(N)(X, R, U, p, t), E)
            fitted = problem.fitted_signals(i)
            sel = [signal_names.index(sig) for sig in fitted]
            meas = np.stack([trial[sig] for sig in fitted]) if fitted else np.zeros((0, N))
            weights = problem.fit_weights(i)
            w = np.sqrt([weights[sig] for sig in fitted])[:, None] * np.ones((1, N))
            w[np.isnan(meas)] = 0.0  # a sample not measured has no residual
            meas = np.nan_to_num(meas, nan=0.0)
            res_parts.append(ca.vec((Y[sel, :] - ca.DM(meas)) * ca.DM(w)))
            for term in problem.terms:
                if term.kind == "trajectory" and term.function is not None:
                    values = {sig: Y[signal_names.index(sig), :].T for sig in term.signals}
                    extra.append(ca.MX(term.function(values, trial.time, trial)))
                    continue
                val = ca.Function("term", [model._vec("state"), model._vec("free_input"),
                                           model._vec("known_input"), model._vec("parameter"), model.time],
                                  [term.expr]).map(N)(X, R, U, p, t)
                qw = np.zeros(N)
                qw[:-1] += np.diff(trial.time) / 2
                qw[1:] += np.diff(trial.time) / 2
                if term.kind == "regularization":
                    wq = qw if term.integral else np.ones(N)
                    res_parts.append(ca.vec(val * ca.DM(np.sqrt(term.weight * wq)[None, :])))
                else:
                    extra.append(ca.sum2(val * ca.DM((qw if term.integral else np.ones(N))[None, :])))
        self.theta = theta
        res = ca.vertcat(*res_parts)
        self.num_fit = problem.num_observations
        J = 0.5 * ca.sumsqr(res) + (ca.sum1(ca.vertcat(*extra)) if extra else 0)
        self.J = ca.Function("J", [theta], [J])
        self.res = ca.Function("res", [theta], [res])
        self.gaps = ca.vertcat(*gaps) if gaps else ca.MX(0, 1)
        self.traj_fn = ca.Function("traj", [theta], [ca.vertcat(X, R, U, E) for X, R, U, E in self.traj])


def _delayed_rk4(model, rhs: ca.Function, n: int, npar: int, s: int, q: int, h: float, substeps: int):
    """One sample interval of the method of steps for a delayed model: ``substeps`` RK4 steps
    carrying a buffer of past states (``(B+1)·n``, newest first, constant history at the
    start).  Delayed values come from the same cubic-convolution kernel as collocation;
    nodes the kernel would need from the future (τ shorter than two substeps) are replaced
    by the current state.  Returns ``(step, B + 1)``."""
    states = model.element_names("state")
    pnames = model.element_names("parameter")
    hs = h / substeps
    B = max(int(np.ceil(d.upper / hs - 1e-9)) for d in model.delays) + 3
    buf = ca.SX.sym("buf", n * (B + 1))
    data = ca.SX.sym("data", interval_data_size(npar, s, q))
    p = data[:npar]
    u0, u1 = data[npar : npar + s], data[npar + s : npar + 2 * s]
    o = npar + 2 * s
    r0, r1 = data[o : o + q], data[o + q : o + 2 * q]
    t0, hh = data[-2], data[-1]
    held = model.held_inputs()
    Bm = ca.reshape(buf, n, B + 1)

    def delayed(Bcur, c):
        parts = []
        for d in model.delays:
            tau = p[pnames.index(d.parameter)] if d.parameter is not None else d.value
            shift = c - tau / hs
            w = [keys_kernel(shift + j) for j in range(B + 1)]
            w[0] = w[0] + keys_kernel(shift - 1) + keys_kernel(shift - 2)
            idx = [states.index(e) for e in d.state_elements]
            parts.append(ca.mtimes(Bcur[idx, :], ca.vertcat(*w)))
        return ca.vertcat(*parts)

    for i in range(substeps):
        x = Bm[:, 0]

        def f(xx, c, i=i, Bcur=Bm):
            frac = (i + c) / substeps
            u = u0 + frac * (u1 - u0)
            r = ca.vertcat(*[r0[j] if held[j] else r0[j] + frac * (r1[j] - r0[j]) for j in range(q)]) if q else r0
            return rhs(xx, r, ca.vertcat(u, delayed(Bcur, c)), p, t0 + frac * hh)

        k1 = f(x, 0.0)
        k2 = f(x + hs / 2 * k1, 0.5)
        k3 = f(x + hs / 2 * k2, 0.5)
        k4 = f(x + hs * k3, 1.0)
        Bm = ca.horzcat(x + hs / 6 * (k1 + 2 * k2 + 2 * k3 + k4), Bm[:, :-1])
    return ca.Function("delayed_step", [buf, data], [ca.vec(Bm)], ["x", "data"], ["x_next"]), B + 1


def _evaluate(fun: ca.Function):
    def call(x):
        try:
            f, g = fun(x)
        except RuntimeError:
            return float("inf"), np.full(x.shape, np.nan)
        f = float(f)
        g = np.array(g).ravel()
        if not np.isfinite(f) or not np.all(np.isfinite(g)):
            return float("inf"), np.full(x.shape, np.nan)
        return f, g

    return call


def _result(problem: Problem, method, setup: _Shooting, outcome: Outcome, build_s: float, solve_s: float,
            standard_errors: bool) -> Estimate:
    model = problem.model
    x = outcome.x
    phys = x * setup.scale
    params = dict(zip(setup.pnames, phys[setup.p_offset :].tolist()))
    trajectories, residuals, measurements = {}, {}, {}
    names = problem.signal_names()
    try:
        trajs = setup.traj_fn(x)
        trajs = [trajs] if len(problem.trials) == 1 and not isinstance(trajs, (list, tuple)) else trajs
        signals = model.functions()["signals"]
        for i, trial in enumerate(problem.trials):
            T = np.array(trajs[i])
            n, q, s = setup.n, setup.q, setup.s
            X, R, U, E = T[:n], T[n : n + q], T[n + q : n + q + s], T[n + q + s :]
            Y = np.vstack([np.array(signals.map(trial.num_samples)(X, R, U, phys[setup.p_offset :],
                                                                    trial.time[None, :])), E])
            idx = pd.Index(trial.time, name="time")
            trajectories[trial.name] = pd.DataFrame(Y.T, columns=names, index=idx)
            fitted = problem.fitted_signals(i)
            measurements[trial.name] = pd.DataFrame({f: trial[f] for f in fitted}, index=idx)
            residuals[trial.name] = pd.DataFrame({f: trajectories[trial.name][f].to_numpy() - trial[f]
                                                  for f in fitted}, index=idx)
    except RuntimeError:
        pass
    se = cov = None
    info: dict = {"objective_history": [h[1] for h in outcome.history],
                  "time_history": [h[2] for h in outcome.history],
                  "nfev": outcome.nfev, "njev": outcome.njev, "num_unknowns": len(setup.names)}
    # the covariance comes from least-squares residuals: not valid with trajectory objectives
    no_traj = not any(t.kind == "trajectory" for t in problem.terms)
    if standard_errors and no_traj and setup.pnames and outcome.success and len(setup.names) <= 400:
        try:
            Jr = np.array(setup.res.jacobian()(x, 0))
            r = np.array(setup.res(x)).ravel()
            dof = setup.num_fit - len(setup.names)
            s2 = float(r @ r / dof) if dof > 0 else 1.0
            C = np.linalg.pinv(Jr.T @ Jr)[setup.p_offset :, setup.p_offset :]
            S = np.diag(setup.scale[setup.p_offset :])
            C = S @ C @ S * s2
            se = dict(zip(setup.pnames, np.sqrt(np.clip(np.diag(C), 0, None)).tolist()))
            cov = pd.DataFrame(C, index=setup.pnames, columns=setup.pnames)
            info.update(residual_variance=s2, dof=dof)
        except RuntimeError:
            pass
    return Estimate(
        problem=problem.name, method=method.name, success=outcome.success, status=outcome.status,
        message=outcome.message, iterations=outcome.iterations, objective=outcome.fun,
        parameters=params, standard_errors=se, covariance=cov, trajectories=trajectories,
        measurements=measurements, residuals=residuals,
        timings={"build_s": build_s, "compile_s": 0.0, "solve_s": solve_s, "total_s": build_s + solve_s},
        num_nodes=sum(t.num_samples for t in problem.trials), trials=[t.name for t in problem.trials],
        versions=versions(), units={k: model.unit_of(k) for k in names + setup.pnames}, info=info,
        descriptions={k: model.description_of(k) for k in setup.pnames if model.description_of(k)},
        model_evaluation=(f"interpreted (shooting runs it inside CasADi's {type(method.integrator).__name__} "
                          "integrator, whose graphs are not compiled)"),
    )


@dataclass(frozen=True)
class SingleShooting(AbstractMethod):
    """Single shooting: simulate each whole trial from its unknown initial state.

    Parameters
    ----------
    gradient : Adjoint or Forward
        How ∇J is computed through the integrator.
    optimizer : SteepestDescent, LBFGS or ReducedIpopt
    integrator : Cvodes or RungeKutta
    """

    gradient: Adjoint | Forward = field(default_factory=Adjoint)
    optimizer: SteepestDescent | LBFGS | ReducedIpopt = field(default_factory=LBFGS)
    integrator: Cvodes | RungeKutta = field(default_factory=Cvodes)

    @property
    def name(self) -> str:  # type: ignore[override]
        """``single-shooting(<gradient>, <optimizer>)``."""
        return f"single-shooting({self.gradient.name}, {self.optimizer.name})"

    def solve(self, problem: Problem, *, solver: Ipopt | None = None, guess: Mapping[str, float] | None = None,
              progress: Callable[[IterationInfo], None] | None = None) -> Estimate:
        """Build the reduced problem, minimise it, return its :class:`~colloc.results.result.Estimate`."""
        start = _time.perf_counter()
        setup = _Shooting(problem, self.integrator, segments=1)
        x0 = setup.x0.copy()
        for k, v in (guess or {}).items():
            j = setup.p_offset + setup.pnames.index(k)
            x0[j] = np.clip(v / setup.scale[j], setup.lb[j], setup.ub[j])
        value = setup.J(setup.theta)
        fun = ca.Function("fg", [setup.theta], [value, self.gradient.gradient(setup.J, setup.theta, value)])
        build_s = _time.perf_counter() - start
        t0 = _time.perf_counter()
        report = None
        if progress is not None:
            def report(iteration, objective, seconds):
                progress(IterationInfo(iteration, objective, 0.0, seconds))

        outcome = self.optimizer.minimize(_evaluate(fun), x0, setup.lb, setup.ub, callback=report)
        solve_s = _time.perf_counter() - t0
        se = solver is None or solver.standard_errors
        return _result(problem, self, setup, outcome, build_s, solve_s, se)


@dataclass(frozen=True)
class MultipleShooting(AbstractMethod):
    """Multiple shooting: ``segments`` per trial with unknown start states and continuity
    constraints, solved by IPOPT with an L-BFGS Hessian; derivatives by CasADi's AD through
    the integrator.

    Parameters
    ----------
    segments : int
        Segments per trial.
    integrator : Cvodes or RungeKutta
    max_iter : int
    tol : float
    """

    segments: int = 20
    integrator: Cvodes | RungeKutta = field(default_factory=Cvodes)
    max_iter: int = 1000
    tol: float = 1e-8
    name = "multiple-shooting"

    def __post_init__(self) -> None:
        if int(self.segments) != self.segments or self.segments < 1:
            raise OptionsError(f"MultipleShooting(segments={self.segments!r}): must be an integer >= 1")

    def solve(self, problem: Problem, *, solver: Ipopt | None = None, guess: Mapping[str, float] | None = None,
              progress: Callable[[IterationInfo], None] | None = None) -> Estimate:
        """Build the segment NLP, solve it with IPOPT, return its :class:`~colloc.results.result.Estimate`."""
        start = _time.perf_counter()
        setup = _Shooting(problem, self.integrator, segments=self.segments)
        x0 = setup.x0.copy()
        for k, v in (guess or {}).items():
            j = setup.p_offset + setup.pnames.index(k)
            x0[j] = np.clip(v / setup.scale[j], setup.lb[j], setup.ub[j])
        history: list[tuple[int, float, float]] = []
        nlp: dict[str, Any] = {"x": setup.theta, "f": setup.J(setup.theta), "g": setup.gaps}
        opts: dict[str, Any] = {"print_time": False, "ipopt.print_level": 0, "ipopt.sb": "yes",
                "ipopt.hessian_approximation": "limited-memory", "ipopt.max_iter": self.max_iter,
                "ipopt.tol": self.tol, "calc_lam_p": False}
        try:
            nlpsol = ca.nlpsol("multiple_shooting", "ipopt", nlp, opts)
        except RuntimeError as exc:  # pragma: no cover - construction errors are bugs
            raise OptionsError(f"multiple shooting could not be set up: {exc}") from None
        build_s = _time.perf_counter() - start
        t0 = _time.perf_counter()
        ng = setup.gaps.numel()
        try:
            sol = nlpsol(x0=x0, lbx=setup.lb, ubx=setup.ub, lbg=np.zeros(ng), ubg=np.zeros(ng))
            stats = nlpsol.stats()
            for i, f in enumerate(stats.get("iterations", {}).get("obj", [])):
                history.append((i, float(f), float("nan")))
            outcome = Outcome(np.array(sol["x"]).ravel(), float(sol["f"]), bool(stats["success"]),
                              str(stats["return_status"]), str(stats["return_status"]),
                              int(stats["iter_count"]), int(stats.get("n_call_nlp_f", 0)),
                              int(stats.get("n_call_nlp_grad_f", 0)), history)
        except RuntimeError as exc:
            outcome = Outcome(x0, float("inf"), False, "simulation_failed",
                              str(exc).splitlines()[-1][:200], 0, 0, 0, history)
        solve_s = _time.perf_counter() - t0
        se = solver is None or solver.standard_errors
        return _result(problem, self, setup, outcome, build_s, solve_s, se)
