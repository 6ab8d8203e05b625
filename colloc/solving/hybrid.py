"""Fit a :class:`~colloc.HybridProblem`: ``co.solve(problem, co.Radau())`` comes here.

1. **Phases.** The sequence of modes of each trial and the start values of its switching
   times are given, or read from an event-driven simulation (:func:`colloc.simulate_hybrid`)
   at the start guess from the start initial state; each phase gets collocation intervals
   in proportion to the samples it holds.
2. **Solve.** The NLP of :class:`colloc.transcription.hybrid_fit.HybridNLP` (the switching
   times free, the guards zero at them, the reset maps between phases) is solved by IPOPT;
   since the samples a phase holds depend on the switching times, they are re-assigned at
   the solution and the NLP solved again from it until no sample changes phase (at most
   :data:`MAX_ROUNDS` solves; a sample that moves to a neighbouring interval of its phase
   is read by the same polynomial extended, which the next solve would only re-label).
3. **Result**, like every other estimator's: the Gauss–Newton covariance of the parameters
   (:func:`colloc.inference.covariance.parameter_covariance`, the switching times and
   initial states among the eliminated unknowns), a simulation check by the event-driven
   simulator at the estimate (another code path than the fit), then
   :func:`colloc.finalize` (verdict, warnings, intervals).  The phases, switching times and
   their standard errors are in ``result.info["phases"]``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import time as _time
from collections.abc import Callable, Mapping

import casadi as ca
import numpy as np

from ..base.compiler import native
from ..base.errors import OptionsError, SolveFailed
from ..base.versions import versions
from ..definition.hybrid import HybridModel
from ..definition.hybrid_problem import HybridProblem
from ..inference.covariance import parameter_covariance
from ..results.report import finalize
from ..results.result import Estimate, Result
from ..signals.sampled import input_values
from ..simulation.hybrid import simulate_hybrid
from ..transcription.hybrid_fit import INPUT_WINDOW, HybridNLP, TrialLayout, as_column, assign
from ..transcription.methods import Radau
from .collocation import worst_violations
from .ipopt import Ipopt, IterationInfo, progress_callback

__all__ = ["MAX_ROUNDS", "estimate_hybrid", "finalize_hybrid", "solve_hybrid", "start_hybrid"]

#: IPOPT's options unless the solver's ``extra`` sets them: its acceptable level, and no
#: gradient-based scaling of the problem.  The residuals are weighted by 1/σ² and a clean record's
#: σ is small (heel-off's noise floors 1e-5 rad): IPOPT's scaling then shrinks the objective by
#: orders of magnitude and stops where the scaled dual infeasibility is small, far from the
#: optimum (heel-off, 4 s clean from the truth: kp 747 against 900, objective 5.6e7 against 3.2).
#: The barrier parameter adaptive: on heel-off's noisy 20 s record with errors-in-variables the
#: monotone rule was still at μ = 0.02 after 420 iterations.
ACCEPTABLE = {"acceptable_tol": 1e-4, "acceptable_iter": 5, "nlp_scaling_method": "none", "mu_strategy": "adaptive"}

#: Solves of one fit at most (each after re-assigning the samples to the phases).
MAX_ROUNDS = 10


#: Tolerances of the simulation check at the estimate: those of the smooth path's check
#: (:func:`colloc.simulate`).  At 1e-12 (the simulator's default, kept for the simulation at the
#: start guess, whose events lay out the phases) heel-off's 20 s record with a noisy platform
#: acceleration (a cubic read of noisy samples, whose third derivative jumps at every sample)
#: took 10,808 steps, at 1e-9 4,644; its states differed by at most 2e-5 and its events by 2e-6 s.
SIMULATION_TOLERANCE = 1e-9

#: Records of at least this many samples are simulated with the model's functions compiled to
#: C (:func:`native_model`): a first compile costs a second or two, a call then some
#: microseconds against tens to hundreds for the functions evaluated in Python and CasADi.
NATIVE_SAMPLES = 1000


def _simulate(problem: HybridProblem, trial, x0, p, inputs: Mapping | None = None, tolerance: float = 1e-12):
    """The event-driven simulation of a trial (None with the reason when it fails); the model's
    inputs are the trial's samples unless ``inputs`` gives others (errors-in-variables estimates);
    ``tolerance`` the integrator's relative and absolute tolerances."""
    try:
        # one event per sample at most: more cannot be told apart by the data (and a
        # Zeno trajectory, a ball bouncing ever faster, would never end)
        model = problem.models[[t.name for t in problem.trials].index(trial.name)]
        if trial.num_samples >= NATIVE_SAMPLES:
            model = native_model(model, list(problem.parameters))
        samples = {u: trial[u] for u in problem.inputs} | dict(inputs or {})
        return simulate_hybrid(model, x0, (trial.time[0], trial.time[-1]), p, max_events=max(10, trial.num_samples),
                               rtol=tolerance, atol=tolerance,
                               inputs=input_values(trial.time, samples) if samples else None), ""
    except (SolveFailed, ValueError, ArithmeticError) as exc:
        return None, str(exc)


_NATIVE: dict = {}


def native_model(model: HybridModel, parameters: list) -> HybridModel:
    """``model`` with the right-hand sides of its modes, its guards (those of no mode's clock)
    and their reset maps evaluated by compiled C (:func:`colloc.base.compiler.native`; the
    functions traced on CasADi symbols as the fit traces them), for a simulation with numbers
    ``p`` holding ``parameters`` and the model's inputs.  What cannot be compiled (an implicit
    mode, a guard with ``with_mode``, switches, time events, or no C compiler) stays as it is;
    built once per model and parameters."""
    from dataclasses import replace

    key = (id(model), tuple(parameters))
    if key in _NATIVE and _NATIVE[key][0] is model:
        return _NATIVE[key][1]
    names = [*parameters, *model.inputs, *model.delayed_names()]
    nx = len(model.states)
    t, t0, x, pv = ca.SX.sym("t"), ca.SX.sym("t0"), ca.SX.sym("x", nx), ca.SX.sym("p", len(names))
    xs = np.array([x[i] for i in range(nx)], dtype=object)
    ps = {n: pv[i] for i, n in enumerate(names)}

    def compiled(name, args, expr):
        fn = native(ca.Function(re.sub(r"\W", "_", name), args, [as_column(expr)]))
        if fn is None:
            raise ArithmeticError("no C compiler")
        return fn

    def values(p):
        return [p[n] for n in names]

    try:
        modes = []
        for m in model.modes:
            if m.residual is not None:
                modes.append(m)
                continue
            f = compiled(f"{model.name}_{m.name}_rhs", [t, x, pv, t0], m.rhs(t, xs, ps, t0))
            modes.append(replace(m, rhs=lambda tt, xx, p, tt0, f=f: f(tt, xx, values(p), tt0)[0]))
        guards = []
        for k, g in enumerate(model.guards):
            if g.with_mode:
                guards.append(g)
                continue
            f = compiled(f"{model.name}_guard{k}", [t, x, pv], g.function(t, xs, ps))
            r = None if g.reset is None else compiled(f"{model.name}_reset{k}", [t, x, pv], g.reset(t, xs, ps))
            guards.append(replace(g, function=lambda tt, xx, p, f=f: f(tt, xx, values(p))[0][0],
                                  reset=None if r is None else lambda tt, xx, p, r=r: r(tt, xx, values(p))[0]))
        fast = HybridModel(model.name, model.states, modes, model.initial_mode, guards=guards,
                           switches=model.switches, time_events=model.time_events, parameters=model.parameters,
                           inputs=model.inputs, delay=model.delay, delayed=model.delayed)
    except Exception:  # noqa: BLE001 — a function that cannot be traced or compiled: the model as it is
        fast = model
    _NATIVE[key] = (model, fast)
    return fast


def _boundaries(sim) -> tuple[list, list]:
    """The modes and switching times of a simulation: one boundary per group of state events
    at one time (the mode after the group)."""
    modes: list[str | None] = [sim.modes[0] if sim.modes else None]
    times: list[float] = []
    for e in sim.events:
        if times and abs(e.time - times[-1]) <= 1e-12 * max(1.0, abs(e.time)):
            modes[-1] = e.after
            continue
        times.append(e.time)
        modes.append(e.after)
    return modes, times


def _layout(problem: HybridProblem, k: int, p0: dict, x0: np.ndarray) -> tuple[TrialLayout, object, dict]:
    trial = problem.trials[k]
    time = trial.time
    dt = float(np.median(np.diff(time)))
    seq, sw = problem.sequences[k], problem.switch_guesses[k]
    # the simulation at the start guess gives what the record does not: the sequence of modes,
    # the switching times, the states not measured
    needed = seq is None or sw is None or not all(s in trial for s in problem.states)
    sim, why = _simulate(problem, trial, x0, p0) if needed else (None, "")
    source = "given"
    if seq is None:
        if sim is None:
            raise SolveFailed(f"hybrid fit of '{problem.name}': the simulation at the start guess failed ({why}); "
                              "give the sequence of modes and the switch_times", None)
        modes, times = _boundaries(sim)
        modes[0] = modes[0] or problem.model.initial_mode
        # boundaries within a tenth of a step of the record's ends hold no sample
        keep = [i for i, t in enumerate(times) if time[0] + 0.1 * dt < t < time[-1] - 0.1 * dt]
        seq = [modes[0]] + [modes[i + 1] for i in keep]
        sw = [times[i] for i in keep]
        source = "simulation at the start guess"
    elif sw is None:
        modes, times = _boundaries(sim) if sim is not None else ([None], [])
        modes[0] = modes[0] or problem.model.initial_mode
        # the simulation's times as far as its modes agree with the sequence, the rest evenly
        # spread over what is left of the record
        agree = 0
        while agree < min(len(seq), len(modes)) - 1 and modes[agree + 1] == seq[agree + 1] and modes[0] == seq[0]:
            agree += 1
        known = [t for t in times[:agree] if time[0] < t < time[-1]]
        after = known[-1] if known else time[0]
        sw = known + list(np.linspace(after, time[-1], len(seq) - len(known) + 1)[1:-1])
        source = ("simulation at the start guess" if len(known) == len(seq) - 1 else
                  f"simulation at the start guess for the first {len(known)}, the others evenly spread")
    guards = [problem.transition(a, b) for a, b in itertools.pairwise(seq)]
    sw = np.asarray(sw, dtype=float)
    return TrialLayout(list(seq), guards, sw, _intervals(problem, time, sw), dt), sim, {"switch_times_start": source}


#: A delay break (:attr:`colloc.transcription.hybrid_fit.TrialLayout.ties`) is laid only for a delay
#: of at least this many sampling steps (the switching times stay a tenth of a step apart, and a
#: break that close to its jump would hold the delay there)...
BREAK_MIN_STEPS = 2.0
#: ... and only where it leaves this many sampling steps of its phase after it and one before it
#: (the delay moves over the solves, and the break with it).  On heel-off's clean 1.5 s delayed
#: record, started at kp 540, kd 150, τ 0.05: kp +0.061 % without the break after the landing.
BREAK_ROOM = 10.0


def _delay_breaks(problem: HybridProblem, lay: TrialLayout, time: np.ndarray, delay: float) -> TrialLayout:
    """The layout with a phase cut (no event: the same mode on both sides, the state continuous) a
    delay after every switch whose reset changes a delayed state, where the jump is fed back; tied
    to it in the NLP (``lay.ties``).  None where it would fall within one sampling step of its
    phase's start or :data:`BREAK_ROOM` steps of its end, or for a delay under
    :data:`BREAK_MIN_STEPS` steps, or with the switching times fixed (``fixed_switches``: a break
    tied to them would hold the delay at its start)."""
    if problem.model.delay is None or problem.fixed_switches or delay < BREAK_MIN_STEPS * lay.dt:
        return lay
    seq, guards, sw = list(lay.sequence), list(lay.guards), list(map(float, lay.switches))
    for i in reversed([i for i, g in enumerate(guards) if g is not None and g.name in problem.delayed_jumps]):
        t_break, ends = sw[i] + delay, [float(time[0]), *sw, float(time[-1])]
        j = next((j for j in range(i + 1, len(seq))
                  if ends[j] + lay.dt <= t_break <= ends[j + 1] - BREAK_ROOM * lay.dt), None)
        if j is not None:
            seq.insert(j + 1, seq[j])
            guards.insert(j, None)
            sw.insert(j, t_break)
    ties = [(b, next(i for i in range(b) if guards[i] is not None and abs(sw[i] + delay - sw[b]) < 1e-9))
            for b in range(len(sw)) if guards[b] is None]
    return dataclasses.replace(lay, sequence=seq, guards=guards, switches=np.asarray(sw), ties=ties,
                               intervals=_intervals(problem, time, np.asarray(sw)))


def _coarse(intervals: list, target: list) -> bool:
    """Whether a phase has fewer than 80 % of the intervals its samples ask for."""
    return any(n < 0.8 * m for n, m in zip(intervals, target))


def _intervals(problem: HybridProblem, time: np.ndarray, switches: np.ndarray) -> list:
    """Collocation intervals of each phase: its samples over ``samples_per_interval``, at least 2."""
    bounds = np.concatenate([[time[0]], switches, [time[-1]]])
    counts = [int(np.sum((time >= a) & (time < b))) for a, b in itertools.pairwise(bounds)]
    return [max(2, math.ceil(c / problem.samples_per_interval)) for c in counts]


#: Samples of the Savitzky–Golay filter (cubic) that smooths a measured state inside each phase
#: for the start of the collocation states (:func:`_state_guess`).
SMOOTHING_WINDOW = 9


def _smoothed(time: np.ndarray, y: np.ndarray, switches) -> np.ndarray:
    """``y`` smoothed inside each phase (a cubic Savitzky–Golay filter over
    :data:`SMOOTHING_WINDOW` samples, never across a switching time, where a reset may make the
    state jump); phases of fewer than five samples are left as measured."""
    from scipy.signal import savgol_filter

    out = y.copy()
    phase = np.searchsorted(np.asarray(switches, dtype=float), time, side="right")
    for k in np.unique(phase):
        idx = np.flatnonzero(phase == k)
        if len(idx) >= 5:
            out[idx] = savgol_filter(y[idx], min(SMOOTHING_WINDOW, len(idx) - 1 + len(idx) % 2), 3)
    return out


def _state_guess(problem: HybridProblem, trial, sim, x0: np.ndarray, switches=()) -> Callable:
    """``t → state``: the measured states interpolated from the data, smoothed inside the phases
    that ``switches`` bound (noisy samples would start the collocation far from any trajectory:
    heel-off's noisy 20 s record, seed 1, began with a constraint violation of 6.3 and took 126
    iterations), the others from the simulation at the start guess (or their start values)."""
    meas = {}
    for j, s in enumerate(problem.states):
        if s in trial:
            ok = np.isfinite(trial[s])
            meas[j] = (trial.time[ok], _smoothed(trial.time[ok], np.asarray(trial[s][ok], dtype=float), switches))

    def guess(t: float) -> np.ndarray:
        x = sim.state([t])[0] if sim is not None else np.array(x0, dtype=float)
        for j, (tt, yy) in meas.items():
            x[j] = np.interp(t, tt, yy)
        return x

    return guess


def solve_hybrid(problem: HybridProblem, method: Radau, *, solver: Ipopt, guess: Mapping[str, float] | None = None,
                 progress: Callable[[IterationInfo], None] | None = None, verdict: bool = True) -> Result:
    """Fit ``problem`` by multi-phase Radau collocation of degree ``method.degree`` (see the
    module docstring); the result is judged by :func:`colloc.finalize`."""
    t_call = _time.perf_counter()
    estimate = estimate_hybrid(problem, method, solver=solver, guess=guess, progress=progress)
    return finalize_hybrid(estimate, problem, verdict=verdict, t_call=t_call)


def start_hybrid(problem: HybridProblem, method: Radau, solver: Ipopt, guess: Mapping[str, float]) -> Estimate:
    """One start of several (:func:`colloc.solving.starts.solve_starts`' runner): the fit from
    ``guess``, not yet judged."""
    return estimate_hybrid(problem, method, solver=solver, guess=guess)


def estimate_hybrid(problem: HybridProblem, method: Radau, *, solver: Ipopt, guess: Mapping[str, float] | None = None,
                    progress: Callable[[IterationInfo], None] | None = None) -> Estimate:
    """The fit of :func:`solve_hybrid` before its judgement (:func:`finalize_hybrid`); with
    ``Ipopt(simulate=False)`` without the simulation check."""
    import pandas as pd

    if not isinstance(method, Radau):
        raise OptionsError(f"solve(HybridProblem, method={method!r}): a hybrid problem is collocated phase by "
                           "phase on Radau points; pass colloc.Radau(degree=...)")
    p0 = dict(problem.guess)
    for name, v in (guess or {}).items():
        problem.check_parameter(name, "guess")
        p0[name] = float(v)
    x0s = [problem.state_guess(t) for t in problem.trials]
    layouts, guesses, info_trials = [], [], {}
    for k, trial in enumerate(problem.trials):
        lay, sim, note = _layout(problem, k, p0, x0s[k])
        if problem.model.delay is not None:
            lay = _delay_breaks(problem, lay, trial.time, float(p0[problem.model.delay]))
        layouts.append(lay)
        guesses.append(_state_guess(problem, trial, sim, x0s[k], lay.switches))
        info_trials[trial.name] = note
    w_start, round_log, remeshed = None, [], False
    rounds, stats, x, build_s, solve_s, compile_s = 0, {}, None, 0.0, 0.0, 0.0
    t0 = _time.perf_counter()
    nlp = HybridNLP(problem, layouts, p0, x0s, guesses, method.degree)
    for rounds in range(1, MAX_ROUNDS + 1):
        if rounds > 1 and w_start is not None:
            t0 = _time.perf_counter()
            nlp.read_samples()
        nobs = max(nlp.num_observations, 1)
        opts = solver.nlpsol_options()
        # the optimum of a record with many switching times is often found to a dual
        # infeasibility of ~1e-5 only (its objective flat to the last digit while the line
        # search backtracks for hundreds of iterations): accept it then, unless the caller
        # said otherwise
        for key, value in ACCEPTABLE.items():
            opts.setdefault(f"ipopt.{key}", value)
        # the objective is the mean of the squared weighted residuals.  With residuals weighted
        # by a declared noise (HybridProblem(noise=...), errors-in-variables inputs) IPOPT works
        # on their sum, χ²/2, about half the observations at the optimum, so that the barrier
        # of the many guard inequalities (μ·Σ log s) does not outweigh it.  Heel-off's noisy
        # 20 s record (10,005 residuals, 11,460 inequalities): with the mean 134 iterations from
        # the default guesses and 97 + 7 even from the truth (the barrier parameter climbing
        # back again and again); with the sum 7 + 6 from the default guesses, the same estimates
        # to 8 digits.  Weights of no declared noise are left as they are (the pushed ball's
        # clean record, weight 1 on heights in metres: 11 iterations; on the sum, from a start
        # simulated at 1e-9, it ran out of iterations)
        if problem.noise or problem.input_noise:
            opts.setdefault("ipopt.obj_scaling_factor", float(nobs))
        # the constraints' Jacobian and the Lagrangian's Hessian summed from the NLP's blocks,
        # compiled for a large problem
        if nlp.compile_note is None:
            nlp.compile()
            compile_s += nlp.compile_s
        derivatives = nlp.derivatives(1.0 / nobs)
        opts["jac_g"] = derivatives["jac_g"]
        if solver.hessian != "limited-memory":
            opts["hess_lag"] = derivatives["hess_lag"]
        if progress is not None:
            opts["iteration_callback"] = progress_callback(nlp.w.shape[0], nlp.g.shape[0], 0, nlp.lbg, nlp.ubg,
                                                            1.0 / nobs, progress, t0)
        nlpsol = ca.nlpsol("hybrid", "ipopt", {"x": nlp.w, "f": 0.5 * ca.sumsqr(nlp.res) / nobs, "g": nlp.g}, opts)
        build_s += _time.perf_counter() - t0
        start = nlp.w0 if w_start is None else w_start
        t1 = _time.perf_counter()
        sol = nlpsol(x0=np.clip(start, nlp.lbw, nlp.ubw), lbx=nlp.lbw, ubx=nlp.ubw, lbg=nlp.lbg, ubg=nlp.ubg)
        solve_s += _time.perf_counter() - t1
        stats = nlpsol.stats()
        round_log.append({"status": str(stats.get("return_status")), "iterations": int(stats.get("iter_count", 0)),
                          "solve_s": _time.perf_counter() - t1})
        x = np.array(sol["x"]).ravel()
        # the samples re-assigned at the solution's switching times; a switching time that
        # moved by more than half a step leaves the samples it crossed out of the next
        # solve (read in the wrong phase they would hold it back), until it settles
        changed = False
        for k, (trial, lay) in enumerate(zip(problem.trials, layouts)):
            new = np.asarray(x[nlp.tau_index[k]] if len(nlp.tau_index[k]) else lay.switches, dtype=np.float64)
            old = assign(lay, trial.time)
            moved = np.abs(new - lay.switches)
            lay.switches = new
            lay.bands = np.where(moved > 0.5 * lay.dt, moved, 0.0)
            changed |= not np.array_equal(old[0], assign(lay, trial.time)[0]) or bool(np.any(lay.bands > 0))
        # a delay: its reads laid again where the solution's delay and switching times put them
        # (the next solve then starts from the solution), as long as it still moves
        delay_moved = not nlp.delay_settled(x)
        changed |= delay_moved
        if not stats.get("success", False) or rounds == MAX_ROUNDS:
            break
        if not changed:
            # settled; but a phase that grew from a short start may have too few intervals for
            # its samples (fewer than 80 %): once, lay the mesh out again at the estimate and
            # solve on it
            if remeshed or not any(_coarse(lay.intervals, _intervals(problem, t.time, lay.switches))
                                   for t, lay in zip(problem.trials, layouts)):
                break
            remeshed = True
            t0 = _time.perf_counter()
            p0 = nlp.parameters(x)
            x0s = [x[i] for i in nlp.x0_index]
            guesses = []
            for trial, lay, x0 in zip(problem.trials, layouts, x0s):
                lay.intervals = _intervals(problem, trial.time, lay.switches)
                guesses.append(_state_guess(problem, trial, _simulate(problem, trial, x0, p0)[0], x0, lay.switches))
            nlp = HybridNLP(problem, layouts, p0, x0s, guesses, method.degree)
            w_start = None
            continue
        w_start = x  # the same unknowns (the phases keep their intervals): start from the solution
        if delay_moved or problem.inputs and any(np.any(np.abs(lay.switches - old) > 0.5 * INPUT_WINDOW * lay.dt)
                                                 for lay, old in zip(layouts, nlp.built_switches)):
            # the inputs are read in the sample steps around the collocation times of the build:
            # once a switching time has moved far from them, build the NLP again where it is now
            # (the parameters keep the scale of the build: the solution is the next start)
            t0 = _time.perf_counter()
            delay = None if nlp.delay_at is None else float(x[nlp.delay_at] * nlp.scale[nlp.delay_at])
            nlp = HybridNLP(problem, layouts, p0, x0s, guesses, method.degree, delay=delay)
    for lay in layouts:  # what the result reports: every sample
        lay.bands = None
    nlp.read_samples()
    success = bool(stats.get("success", False))
    status = str(stats.get("return_status", "unknown"))
    settled = not changed
    if success and not settled:
        # the last solve read some samples in phases they are no longer in
        success, status = False, "switching_times_not_settled"
    if status in ("Maximum_WallTime_Exceeded", "Maximum_CpuTime_Exceeded"):
        status = "time_limit"  # the solver's max_wall_time (colloc identify --time-limit) ran out
    assert x is not None  # the loop above solves at least once
    fn = nlp.functions()
    res = np.array(fn["res"](x)).ravel()
    violations = [] if success else worst_violations(np.array(fn["g"](x)).ravel(), nlp.lbg, nlp.ubg,
                                                     lambda i: f"{nlp.kinds[i]} (row {i})", tol=1e-6)
    params = nlp.parameters(x)
    # the states at the collocation nodes, a jump's time twice (before, after), when asked for
    nodes = [nlp.nodes(x, k) for k in range(len(problem.trials))] if problem.node_trajectories else []
    names = problem.parameters
    info: dict = {"rounds": rounds, "round_log": round_log, "settled": settled, "remeshed": remeshed,
                  "num_variables": int(nlp.w.shape[0]), "num_constraints": int(nlp.g.shape[0]),
                  "num_observations": nlp.num_observations}
    se = cov = None
    t2 = _time.perf_counter()
    tau_se: dict = {}
    if solver.standard_errors:
        # the unknowns held fixed (the records' ends, known switching times) are no unknowns
        free = np.flatnonzero(nlp.lbw < nlp.ubw)
        jr, jg = fn["jac_res"](x)[:, free.tolist()], fn["jac_g"](x)[:, free.tolist()]
        eq = nlp.lbg == nlp.ubg
        # the parameters and, to report them, the switching times: both kept, the rest eliminated
        events = [nlp.tau_index[k][lay.events()] if len(nlp.tau_index[k]) else nlp.tau_index[k]
                  for k, lay in enumerate(layouts)]
        keep = np.searchsorted(free, np.concatenate([nlp.p_index, *events]).astype(int))
        scale = np.concatenate([nlp.scale, np.ones(len(keep) - len(names))])
        c = parameter_covariance(jr, res, jg, eq, keep, scale, nlp.num_observations, res,
                                 absolute_sigma=solver.absolute_sigma)
        if len(keep) > len(names) and not np.all(np.isfinite(c.standard_errors[:len(names)])):
            # the switching times kept beside the parameters can spoil the elimination's
            # accuracy (heel-off's noisy 20 s record: one switching time's reduced Hessian
            # entry −5.6e4 where a point 1e-10 away gives +6.1e6); the parameters alone then
            # (their standard errors to 8 digits those of the good case), the switching
            # times' left unknown
            alone = parameter_covariance(jr, res, jg, eq, keep[:len(names)], nlp.scale, nlp.num_observations,
                                         res, absolute_sigma=solver.absolute_sigma)
            if np.all(np.isfinite(alone.standard_errors)):
                info["covariance_note"] = f"switching times' standard errors not estimated ({c.message})"
                matrix = np.full((len(keep), len(keep)), np.nan)
                matrix[:len(names), :len(names)] = alone.matrix
                c = dataclasses.replace(alone, matrix=matrix)
        info["covariance_message"] = c.message
        errors = c.standard_errors
        se = dict(zip(names, errors[:len(names)].tolist()))
        cov = pd.DataFrame(c.matrix[:len(names), :len(names)], index=names, columns=names)
        pos = len(names)
        for k, trial in enumerate(problem.trials):
            m = len(events[k])
            tau_se[trial.name] = errors[pos:pos + m].tolist()
            pos += m
    covariance_s = _time.perf_counter() - t2
    trajectories, measurements, residuals, simulation, phases = {}, {}, {}, {}, {}
    t3 = _time.perf_counter()
    estimates = nlp.input_estimates(x)
    for k, (trial, lay) in enumerate(zip(problem.trials, layouts)):
        states = np.array(fn["states"][k](x))
        time = trial.time
        if problem.node_trajectories:
            node_time, node_states = nodes[k]
            trajectories[trial.name] = pd.DataFrame(node_states, index=pd.Index(node_time, name="time"),
                                                    columns=problem.states)
        else:
            trajectories[trial.name] = pd.DataFrame(states.T, index=pd.Index(time, name="time"),
                                                    columns=problem.states)
        fitted = [s for s in problem.fit if s in trial]
        eiv = estimates[k]  # an errors-in-variables input: its estimate against its measurement
        measurements[trial.name] = pd.DataFrame({s: trial[s] for s in [*fitted, *eiv]},
                                                index=pd.Index(time, name="time"))
        residuals[trial.name] = pd.DataFrame({**{s: states[problem.states.index(s)] - trial[s] for s in fitted},
                                              **{u: v - trial[u] for u, v in eiv.items()}},
                                             index=pd.Index(time, name="time"))
        x0 = x[nlp.x0_index[k]]
        ev = lay.events()  # a delay break is no event: the phases it cuts are reported as one
        ends = np.concatenate([[time[0]], lay.switches[ev], [time[-1]]])
        phases[trial.name] = {"modes": lay.merged(), "switch_times": lay.switches[ev].tolist(),
                              "switch_standard_errors": tau_se.get(trial.name, []),
                              "guards": [lay.guards[i].name for i in ev], "initial_state": x0.tolist(),
                              "durations": np.diff(ends).tolist(), **info_trials[trial.name]}
        if lay.ties:
            phases[trial.name]["delay_breaks"] = lay.switches[[b for b, _ in lay.ties]].tolist()
        if solver.simulate:
            simulation[trial.name] = _simulation_check(problem, trial, x0, params, fitted,
                                                       phases[trial.name]["modes"], eiv)
    simulation_s = _time.perf_counter() - t3
    info["phases"] = phases
    info["objective_history"] = [float(v) * max(nlp.num_observations, 1)
                                 for v in stats.get("iterations", {}).get("obj", [])]
    if success:
        message = "IPOPT converged to a local optimum within tolerance."
    elif status == "time_limit":
        message = ("the fit ran out of its time limit (IPOPT's max_wall_time, colloc identify --time-limit): "
                   "allow more time or start from better guesses.")
    elif status == "switching_times_not_settled":
        message = (f"the switching times still moved across samples after {rounds} solves: give switch_times "
                   "closer to the data's events or better guesses.")
    else:
        message = (f"IPOPT stopped with {status}: try other guesses, switch_times read from the data, or check "
                   "that the model and the sequence of modes can produce the data.")
    estimate = Estimate(
        problem=problem.name, method=f"hybrid-{method.name}", success=success, status=status, message=message,
        iterations=int(stats.get("iter_count", 0)), objective=0.5 * float(res @ res), parameters=params,
        standard_errors=se, covariance=cov, trajectories=trajectories, measurements=measurements,
        residuals=residuals,
        timings={"build_s": build_s, "compile_s": compile_s, "solve_s": solve_s, "covariance_s": covariance_s,
                 "simulation_s": simulation_s},
        num_nodes=int(sum(sum(lay.intervals) * method.degree + 1 for lay in layouts)),
        trials=[t.name for t in problem.trials], versions=versions(), simulation=simulation, info=info,
        violations=violations,
        initial_parameters=dict(p0), solver_status=status, units=dict(problem.units),
        descriptions=dict(problem.descriptions),
        model_evaluation=nlp.compile_note or "interpreted")  # e.g. "compiled (cache hit)"
    return estimate


def finalize_hybrid(estimate: Estimate, problem: HybridProblem, *, verdict: bool, t_call: float) -> Result:
    """Judge a hybrid fit (:func:`colloc.finalize`): a ``simulation_modes`` warning for each
    trial whose event-driven simulation at the estimate goes through other modes than the fit,
    the verdict by :func:`verdict_arguments`, the bounds' sides that are limits of the model."""
    simulation = estimate.simulation
    other = [name for name, check in simulation.items() if check.get("status") == "ok" and not check["same_modes"]]
    found = [{"code": "simulation_modes", "trials": other,
              "message": "the event-driven simulation at the estimate goes through other modes than the fit in "
                         + "; ".join(f"{n} ({simulation[n]['message']})" for n in other)}] if other else []
    result = finalize(estimate, bounds=problem.bounds, physical=problem.limits,
                      scales={n: abs(v) if v else 1.0 for n, v in problem.guess.items()}, verdict=verdict,
                      warnings=found, no_simulation=None if simulation else "switched off (Ipopt(simulate=False))",
                      **verdict_arguments(problem, estimate.residuals, estimate.info))
    result.timings["total_s"] = _time.perf_counter() - t_call
    return result


def verdict_arguments(problem: HybridProblem, residuals: Mapping, info: dict) -> dict:
    """What :func:`colloc.finalize` judges the fit by: the residuals over each record's declared
    noise (``HybridProblem(noise=...)``, kept in ``info["noise"]``) when there is one, else the
    fit weights."""
    weights = {**problem.fit, **{u: 1.0 / v ** 2 for u, v in problem.input_noise.items()}}
    strict = {} if problem.chi2_poor is None else {"chi2_poor": problem.chi2_poor}
    if not problem.noise:
        return {"fit": weights, **strict}
    noise, scaled = {}, {}
    for trial in problem.trials:
        noise[trial.name] = {**problem.noise_of(trial), **problem.input_noise}
        frame = residuals[trial.name]
        scaled[trial.name] = frame.copy()
        for s in frame.columns:
            scaled[trial.name][s] = frame[s] / noise[trial.name].get(s, 1.0 / math.sqrt(weights[s]))
    info["noise"] = noise
    return {"fit": {s: 1.0 for s in weights}, "verdict_residuals": scaled, **strict,
            "verdict_note": "model − measurement divided by the noise σ of each record (HybridProblem(noise=...), "
                            "info['noise']); the fit is weighted by fit="}


def _simulation_check(problem: HybridProblem, trial, x0, params: dict, fitted: list, fit_modes: list,
                      inputs: Mapping | None = None) -> dict:
    """The event-driven simulation from the estimated initial state at the estimate (with the
    errors-in-variables inputs' estimates, ``inputs``): NRMSE of each fitted state against its
    samples, and the modes it went through against the fit's (``fit_modes``, a phase cut by a
    delay break once)."""
    sim, why = _simulate(problem, trial, x0, params, inputs, SIMULATION_TOLERANCE)
    if sim is None:
        return {"status": "failed", "message": why, "nrmse": {}}
    xs = sim.state(trial.time)
    nrmse = {}
    for s in fitted:
        m = np.isfinite(trial[s])
        span = float(np.ptp(trial[s][m]))
        rms = float(np.sqrt(np.mean((xs[m, problem.states.index(s)] - trial[s][m]) ** 2)))
        nrmse[s] = rms / span if span > 0 else math.nan
    modes, times = _boundaries(sim)
    modes[0] = modes[0] or problem.model.initial_mode
    same = modes == list(fit_modes)
    message = ("the simulation goes through the fitted modes" if same else
               f"the simulation goes through {len(modes)} phases ({', '.join(modes[:8])}"
               f"{', …' if len(modes) > 8 else ''}), the fit {len(fit_modes)}")
    return {"status": "ok", "message": message, "nrmse": nrmse, "modes": modes, "switch_times": list(times),
            "same_modes": bool(same)}
