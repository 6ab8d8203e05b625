"""Fit a *timed* :class:`~colloc.HybridProblem` (time events, timed modes): ``co.solve(problem,
co.Radau())`` comes here when the model has them.

1. **Phases.** Each record is laid at the start guess (:func:`colloc.transcription.
   hybrid_events.timed_layout`): the phases between its time events and timed-mode ends,
   their modes from an event-driven simulation (:func:`colloc.simulate_hybrid`) at the
   estimate, ``ceil(length / max_step)`` Radau intervals each, and linear constraints that
   keep the events' order.
2. **Solve, lay again, solve.** The NLP (:class:`~colloc.transcription.hybrid_events.TimedNLP`,
   exact Hessian from per-interval blocks) is solved by IPOPT; the first solve, on the guess's
   phases, loosely (tolerance 10⁻⁶).  The records are laid again at the solution and the NLP
   solved again, from the last solution carried onto the new intervals (and from its
   multipliers when only samples changed interval), until the phase boundaries move by less
   than :data:`~colloc.transcription.hybrid_events.SLACK` intervals or the layout no longer
   changes, at most :data:`MAX_ROUNDS` solves.
3. **Result**, like every other estimator's: the Gauss–Newton covariance of the parameters,
   the collocation states eliminated through the defects
   (:func:`colloc.inference.covariance.constrained_covariance`); a simulation check by the
   event-driven simulator at the estimate; then :func:`colloc.finalize` (verdict, warnings,
   intervals).  ``result.info["phases"]`` has each record's phases.
"""

from __future__ import annotations

import math
import time as _time
from collections.abc import Callable, Mapping
from typing import Any

import casadi as ca
import numpy as np

from ..base.errors import ModelError, OptionsError, ProblemError, SolveFailed
from ..base.versions import versions
from ..definition.hybrid_problem import HybridProblem
from ..inference.covariance import constrained_covariance
from ..results.result import Estimate, Result
from ..simulation.hybrid import simulate_hybrid
from ..transcription.hybrid_events import (
    SLACK,
    TimedClock,
    TimedNLP,
    UnlaidMode,
    carry,
    same_layout,
    timed_layout,
    timed_rates,
)
from ..transcription.multiphase import IntervalChain
from .hybrid import finalize_hybrid
from .ipopt import Ipopt, IterationInfo, progress_callback

__all__ = ["MAX_ROUNDS", "solve_timed"]

#: Solves of one fit at most (each after laying the records' phases again).
MAX_ROUNDS = 8


def _mode_finder(sim) -> Callable[[float], str | None]:
    """``t → mode`` of an event-driven simulation (None without one)."""
    if sim is None:
        return lambda t: None
    starts = np.array([s[0] for s in sim.segments])

    def mode_at(t: float) -> str | None:
        i = int(np.clip(np.searchsorted(starts, t, side="right") - 1, 0, len(starts) - 1))
        return sim.segments[i][2]

    return mode_at


def _simulate(model, x0, time, p, rtol: float = 1e-8, atol: float = 1e-8):
    try:
        return simulate_hybrid(model, x0, (time[0], time[-1]), p, rtol=rtol, atol=atol), ""
    except (SolveFailed, ValueError, ArithmeticError) as exc:
        return None, str(exc)


def _collapsed(modes) -> list:
    out: list = []
    for m in modes:
        if not out or out[-1] != m:
            out.append(m)
    return out


def solve_timed(problem: HybridProblem, method, *, solver: Ipopt, guess: Mapping[str, float] | None = None,
                progress: Callable[[IterationInfo], None] | None = None, verdict: bool = True) -> Result:
    """Fit the timed ``problem`` by multi-phase Radau collocation of degree ``method.degree``
    (see the module docstring); the result is judged by :func:`colloc.finalize`."""
    import pandas as pd

    t_call = _time.perf_counter()
    if not problem.known_initial_state:
        raise ProblemError(f"HybridProblem {problem.name!r}: a timed model (time events, timed modes) is fitted from "
                           "a known initial state; pass known_initial_state=True with initial_state")
    names = list(problem.parameters)
    n = len(names)
    cur = dict(problem.guess)
    for key, v in (guess or {}).items():
        problem.check_parameter(key, "guess")
        cur[key] = float(v)
    scale = np.array([abs(problem.guess[p]) if problem.guess[p] != 0 else 1.0 for p in names])
    lo = np.array([problem.bounds[p][0] for p in names]) / scale
    hi = np.array([problem.bounds[p][1] for p in names]) / scale
    ss = problem.state_scale
    nx = len(problem.states)
    degree = int(method.degree)
    clocks, built_clocks = [], {}
    for model in problem.models:
        if id(model) not in built_clocks:
            built_clocks[id(model)] = TimedClock(model, names, scale)
        clocks.append(built_clocks[id(model)])
    # the rates are built for the modes the records' phases are in (a mode met later adds itself):
    # each interval evaluates the rates of every one of them, weighted by its mode's flag
    all_modes = [m.name for m in problem.model.modes]
    modes: list[str] = list(all_modes)
    chains: list[IntervalChain] = []
    built_chains: dict = {}

    def build_chains() -> None:
        chains.clear()
        for model in problem.models:
            key = (id(model), tuple(modes))
            if key not in built_chains:
                built_chains[key] = IntervalChain(timed_rates(model, names, scale, ss, modes), degree)
            chains.append(built_chains[key])
    x0s = [problem.initial_state_of(t) for t in problem.trials]
    steps = [problem.max_step or problem.samples_per_interval * float(np.median(np.diff(t.time)))
             for t in problem.trials]
    fits = []
    for trial in problem.trials:
        rows = []
        weights = problem.fit_weights(trial)
        for s in problem.fit:
            if s in trial:
                w = weights[s]
                y = np.asarray(trial[s], dtype=float)
                ok = np.flatnonzero(np.isfinite(y))
                rows.append((problem.states.index(s), float(w), ok, y[ok]))
        fits.append(rows)
    sims: list = [None] * len(problem.trials)
    walked: list = [None] * len(problem.trials)

    def lay(k: int, qv: np.ndarray, previous=None):
        trial, model = problem.trials[k], problem.models[k]
        pv = {p: float(qv[i] * scale[i]) for i, p in enumerate(names)}
        walk = tuple(ph.mode for ph in clocks[k].walk(float(trial.time[0]), float(trial.time[-1]), qv)[0])
        # the modes of the phases (the sides of the model's switches) from a simulation at the
        # estimate, read again only when the walk's phases change
        fresh = sims[k] is None or walk != walked[k][0]
        if fresh:
            sims[k] = _simulate(model, x0s[k], trial.time, pv)[0]
        sim = sims[k]
        mode_at = _mode_finder(sim)
        measured = {j: (trial.time[ok], y) for j, _w, ok, y in fits[k]}

        def state_guess(t: np.ndarray) -> np.ndarray:
            if problem.start_states is not None:
                x = np.asarray(problem.start_states(trial, t), dtype=float)
                if x.shape != (nx, len(t)):
                    raise ProblemError(f"HybridProblem(start_states=...): returned shape {x.shape} for trial "
                                       f"{trial.name!r}, expected {(nx, len(t))}")
                return x
            x = sim.state(t).T if sim is not None else np.tile(x0s[k][:, None], (1, len(t)))
            for j, (tt, yy) in measured.items():
                x[j] = np.interp(t, tt, yy)
            return x

        if not fresh:  # the same phases as the last layout: their modes in turn
            known = iter(walked[k][1])

            def mode_at(_t: float) -> str | None:
                return next(known)

        layout = timed_layout(clocks[k], trial.time, qv, steps[k], chains[k], modes, mode_at, state_guess, ss,
                              previous)[0]
        walked[k] = (walk, list(layout.modes))
        return layout

    def lay_all(qv: np.ndarray, previous: list | None = None) -> list:
        """Every record laid at ``qv``; the rates built again when a phase is in a new mode."""
        while True:
            try:
                return [lay(k, qv, None if previous is None else previous[k]) for k in range(len(problem.trials))]
            except UnlaidMode as new:
                if new.mode not in all_modes:
                    raise ModelError(f"hybrid model {problem.model.name!r}: a phase in mode {new.mode!r}, which the "
                                     "model does not declare") from None
                modes[:] = [m for m in all_modes if m in modes or m == new.mode]
                build_chains()

    qcur = np.array([cur[p] for p in names]) / scale
    build_chains()
    layouts = lay_all(qcur)
    seen = {m for lay_ in layouts for m in lay_.modes}
    if len(seen) < len(modes):
        modes[:] = [m for m in all_modes if m in seen]
        build_chains()
        layouts = lay_all(qcur)
    x0_scaled = [x0 / ss for x0 in x0s]
    round_iterations, round_moved, build_s, solve_s = [], [], 0.0, 0.0
    w_prev: list[np.ndarray] = []
    solved: list = []
    sol: dict = {}
    stats: dict = {}
    settled, rounds = False, 0
    Vv = np.zeros(0)
    nlp: TimedNLP | None = None
    for rounds in range(1, MAX_ROUNDS + 1):
        t0 = _time.perf_counter()
        nlp = TimedNLP(chains, layouts, x0_scaled, fits, ss, n)
        nobs = max(nlp.num_observations, 1)
        opts = solver.nlpsol_options()
        # the first solve is on the guess's phases, which are laid again anyway: loosely
        if not w_prev:
            opts["ipopt.tol"] = max(float(solver.tol), 1e-6)
        defaults = {"acceptable_iter": 5, "acceptable_tol": 1e-5 if w_prev else 1e-4,
                    "mu_strategy": "adaptive"}
        # the same phases and intervals as the last solve (only samples changed interval): its
        # primal-dual solution is a start for this one as it is
        same = bool(w_prev) and all(a.interval_modes == b.interval_modes and len(a.keep[0]) == len(b.keep[0])
                                          for a, b in zip(solved, layouts))
        if same:
            defaults.update({"warm_start_init_point": "yes", "mu_init": 1e-9, "warm_start_bound_push": 1e-9,
                             "warm_start_bound_frac": 1e-9, "warm_start_slack_bound_push": 1e-9,
                             "warm_start_slack_bound_frac": 1e-9, "warm_start_mult_bound_push": 1e-9})
        elif w_prev:
            defaults.update({"mu_init": 1e-6, "bound_push": 1e-8, "bound_frac": 1e-8})
        for key, value in defaults.items():
            opts.setdefault(f"ipopt.{key}", value)
        lbg, ubg = nlp.bounds_g()
        if progress is not None:
            opts["iteration_callback"] = progress_callback(nlp.V.shape[0], nlp.g.shape[0], 0, lbg, ubg, 1.0 / nobs,
                                                            progress, t0)
        if solver.hessian != "limited-memory":
            opts["hess_lag"] = nlp.hess
        opts["jac_g"] = nlp.jac
        nlpsol = ca.nlpsol("hybrid_timed", "ipopt", {"x": nlp.V, "f": 0.5 * ca.sumsqr(nlp.res) / nobs, "g": nlp.g},
                           opts)
        build_s += _time.perf_counter() - t0
        t1 = _time.perf_counter()
        if not w_prev:
            w0 = np.concatenate([lay_.x_guess.ravel(order="F") for lay_ in layouts])
        else:
            w0 = np.concatenate([carry(chains[k], x0_scaled[k], solved[k], w_prev[k], layouts[k], qcur)
                                 for k in range(len(layouts))])
        nw = nlp.V.shape[0] - n
        duals = {"lam_x0": sol["lam_x"], "lam_g0": sol["lam_g"]} if same else {}
        sol = nlpsol(x0=np.concatenate([np.clip(qcur, lo, hi), w0]), lbx=np.concatenate([lo, np.full(nw, -np.inf)]),
                     ubx=np.concatenate([hi, np.full(nw, np.inf)]), lbg=lbg, ubg=ubg, **duals)
        solve_s += _time.perf_counter() - t1
        stats = nlpsol.stats()
        round_iterations.append(int(stats.get("iter_count", 0)))
        Vv = np.array(sol["x"]).ravel()
        q_new = Vv[:n]
        w_prev = [Vv[idx].reshape(nx, -1, order="F") for idx in nlp.x_index]
        # the samples' phases and intervals were those of the previous estimate: lay again and
        # solve until they no longer change (the NLP would be the same) or the phase boundaries
        # stop moving (well inside one collocation interval)
        moved = max(float(np.max(np.abs(lay_.t[1] @ (q_new - qcur)), initial=0.0)) for lay_ in layouts)
        round_moved.append(moved)
        qcur = q_new
        solved, layouts = layouts, lay_all(qcur, layouts)
        settled = rounds > 1 and (moved < SLACK * min(steps) or all(map(same_layout, solved, layouts)))
        if stats.get("success", False) and settled:
            break
        if stats.get("return_status") in ("Maximum_WallTime_Exceeded", "Maximum_CpuTime_Exceeded",
                                          "User_Requested_Stop"):
            break
    params = {p: float(qcur[i] * scale[i]) for i, p in enumerate(names)}
    success = bool(stats.get("success", False)) and settled
    status = str(stats.get("return_status", "unknown"))
    if stats.get("success", False) and not settled:
        status = "phases_not_settled"
    # what the result reports: the last solve's NLP (its layouts are ``solved``)
    assert nlp is not None  # MAX_ROUNDS ≥ 1
    t2 = _time.perf_counter()
    V: Any = nlp.V
    fn = ca.Function("timed_result", [V], [ca.jacobian(nlp.res, V), nlp.res, *nlp.reads])
    out = fn(Vv)
    res = np.asarray(out[1].full()).ravel()
    states = [np.asarray(x.full()) for x in out[2:]]
    se = cov = None
    info: dict = {"rounds": rounds, "round_iterations": round_iterations, "round_moved_s": round_moved,
                  "settled": settled, "degree": degree, "max_step_s": steps, "num_variables": int(V.shape[0]),
                  "num_constraints": int(nlp.g.shape[0]), "num_observations": nlp.num_observations,
                  "formulation": "multi-phase Radau collocation between time events"}
    if solver.standard_errors:
        jac_eq = nlp.jac(Vv, [])[1][:nlp.n_defects, :]
        c = constrained_covariance(out[0], res, jac_eq, np.arange(n), np.arange(n, V.shape[0]), scale=scale)
        # absolute_sigma: the weights are the true 1/σ², the covariance not rescaled by s²
        s2 = float(c.residual_variance) if solver.absolute_sigma else 1.0
        se = dict(zip(names, (np.asarray(c.standard_errors, dtype=float) / math.sqrt(s2)).tolist()))
        cov = pd.DataFrame(np.asarray(c.matrix) / s2, index=names, columns=names)
        info["residual_std"] = float(math.sqrt(c.residual_variance))
    covariance_s = _time.perf_counter() - t2
    trajectories, measurements, residuals, simulation, phases = {}, {}, {}, {}, {}
    t3 = _time.perf_counter()
    for k, (trial, lay_, xs) in enumerate(zip(problem.trials, solved, states)):
        index = pd.Index(trial.time, name="time")
        trajectories[trial.name] = pd.DataFrame(xs.T, index=index, columns=problem.states)
        fitted = [s for s in problem.fit if s in trial]
        measurements[trial.name] = pd.DataFrame({s: trial[s] for s in fitted}, index=index)
        residuals[trial.name] = pd.DataFrame({s: xs[problem.states.index(s)] - trial[s] for s in fitted}, index=index)
        starts = lay_.t[0] + lay_.t[1] @ qcur
        bounds_idx = np.concatenate([[0], np.cumsum(lay_.intervals)[:-1]]).astype(int)
        phases[trial.name] = {"modes": list(lay_.modes), "starts": starts[bounds_idx].tolist(),
                              "intervals": [int(v) for v in lay_.intervals]}
        simulation[trial.name] = _simulation_check(problem, k, params, fitted, list(lay_.modes))
    info["phases"] = phases
    simulation_s = _time.perf_counter() - t3
    if success:
        message = f"IPOPT converged to a local optimum within tolerance ({rounds} solve(s), the phases laid again)."
    elif status == "phases_not_settled":
        message = (f"the phase boundaries still moved across samples after {rounds} solves: try better guesses or a "
                   "shorter max_step.")
    else:
        message = (f"IPOPT stopped with {status}: try other guesses, or check that the model and its events can "
                   "produce the data.")
    estimate = Estimate(
        problem=problem.name, method=f"hybrid-{method.name}", success=success, status=status, message=message,
        iterations=int(sum(round_iterations)), objective=0.5 * float(res @ res), parameters=params,
        standard_errors=se, covariance=cov, trajectories=trajectories, measurements=measurements,
        residuals=residuals,
        timings={"build_s": build_s, "compile_s": 0.0, "solve_s": solve_s, "covariance_s": covariance_s,
                 "simulation_s": simulation_s},
        num_nodes=int(sum(lay_.size * degree + 1 for lay_ in solved)), trials=[t.name for t in problem.trials],
        versions=versions(), simulation=simulation, info=info, units=dict(problem.units),
        descriptions=dict(problem.descriptions), initial_parameters=dict(cur), solver_status=status,
        model_evaluation="interpreted (the timed-event transcription is evaluated by CasADi's graphs, not compiled)")
    return finalize_hybrid(estimate, problem, verdict=verdict, t_call=t_call)


def _simulation_check(problem: HybridProblem, k: int, params: dict, fitted: list, fit_modes: list) -> dict:
    """The event-driven simulation of trial ``k`` at the estimate (another code path than the
    fit): NRMSE of each fitted state against its samples, and its modes against the fit's."""
    trial = problem.trials[k]
    try:
        sim = simulate_hybrid(problem.models[k], problem.initial_state_of(trial), (trial.time[0], trial.time[-1]),
                              params, t_eval=trial.time, rtol=1e-10, atol=1e-8)
    except (SolveFailed, ValueError, ArithmeticError, OptionsError) as exc:
        return {"status": "failed", "message": f"{type(exc).__name__}: {exc}", "nrmse": {}}
    nrmse = {}
    for s in fitted:
        y = np.asarray(trial[s], dtype=float)
        m = np.isfinite(y)
        span = float(np.ptp(y[m]))
        rms = float(np.sqrt(np.mean((sim.x[m, problem.states.index(s)] - y[m]) ** 2)))
        nrmse[s] = rms / span if span > 0 else math.nan
    sim_modes = _collapsed(seg[2] for seg in sim.segments if seg[1] > seg[0])
    same = sim_modes == _collapsed(fit_modes)
    message = ("event-driven simulation (colloc.simulate_hybrid) through the fitted modes" if same else
               f"the simulation goes through {len(sim_modes)} modes in turn, the fit {len(_collapsed(fit_modes))}")
    return {"status": "ok", "message": message, "nrmse": nrmse, "same_modes": bool(same)}
