"""``solve(problem, method)``: the one entry point for every method.

A transcription goes the collocation path (:mod:`colloc.solving.collocation`); any other
method object (a shooting baseline, or a user's own) runs its ``solve``.
"""

from __future__ import annotations

import numbers
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ..base.engine import check_client
from ..base.errors import OptionsError, SolveFailed
from ..definition.hybrid_problem import HybridProblem
from ..definition.problem import Problem
from ..definition.stochastic import StochasticProblem
from ..results.report import POOR_FIT_HINT, finalize, judge, model_bounds
from ..results.result import Estimate, Result
from ..transcription.methods import (
    AbstractMethod,
    AbstractTranscription,
    Midpoint,
    Radau,
    default_method,
)
from .collocation import solve_collocation
from .ipopt import Ipopt, IterationInfo
from .start import InitialEstimate, equation_error, residual_is_linear
from .starts import solve_starts

if TYPE_CHECKING:
    from distributed import Client

    from .kalman_ml import KalmanML


@runtime_checkable
class OwnSolve(Protocol):
    """What a method that is not a transcription provides: its own ``solve``, which
    :func:`colloc.solve` calls once per start and whose :class:`colloc.Estimate` goes through
    the same verdict and report as a transcription's."""

    name: str

    def solve(self, problem: Any, *, solver: Any, guess: Any, progress: Any = None) -> Estimate: ...

__all__ = ["AUTO_STARTS", "POOR_FIT_HINT", "START_CHOICES", "OwnSolve", "solve"]

#: Values of ``solve(start=...)``.
START_CHOICES = ("equation-error", "guess")
#: When the residual is nonlinear in the parameters and the solve from the default start
#: (the equation-error estimate) is not acceptable — no convergence, a poor fit, or an
#: estimate on a search bound — ``solve`` tries this many starts (that estimate and seeded
#: points of the search box) and keeps the best, saying so in ``initial_estimate``.
AUTO_STARTS = 8


def solve(
    problem: Problem | HybridProblem | StochasticProblem,
    method: AbstractMethod | None = None,
    *,
    solver: Ipopt | None = None,
    guess: Mapping[str, float] | None = None,
    progress: Callable[[IterationInfo], None] | None = None,
    throw: bool = True,
    start: str | None = None,
    starts: int = 1,
    client: Client | None = None,
    seed: int = 0,
    verdict: bool = True,
) -> Result:
    """Identify the parameters of ``problem`` with ``method``.

    Parameters
    ----------
    problem : Problem or HybridProblem
        A :class:`~colloc.HybridProblem` is fitted phase by phase with free switching
        times (:func:`colloc.solving.hybrid.solve_hybrid`; method ``Radau``, one start).
    method : AbstractMethod, optional
        A transcription (default ``Radau(degree=2)``; ``Radau()``, ``HermiteSimpson()``, ``Midpoint()``,
        ``BackwardEuler()``, ``Trapezoidal()``)
        or a baseline.
    solver : Ipopt, optional
        Solver settings.
    guess : mapping of str to float, optional
        Initial parameter values by element name (overriding the declared guesses).  A
        given ``guess`` is the start unless ``start="equation-error"`` is asked for.
    progress : callable, optional
        Called with an :class:`IterationInfo` after every iteration.
    throw : bool
        Raise :class:`SolveFailed` (carrying the inspectable result) when the solver does
        not succeed; with ``False`` the failed result is returned.
    start : {"equation-error", "guess"}, optional
        Where the parameters start.  ``"equation-error"`` (the default for collocation
        without a ``guess``): a first estimate from the data alone, the model's
        residual fitted to the smoothed measurements and their derivatives
        (:func:`colloc.solving.start.equation_error`; linear least squares when the residual
        is linear in the parameters, else a bounded NLP from the lowest of several points of
        the search box); it falls back to the guesses, and says so in
        ``result.initial_estimate``, when it cannot be trusted.  By default, when the
        residual is nonlinear in the parameters and the solve from that estimate is not
        acceptable (no convergence, a poor fit, an estimate on a search bound),
        :data:`AUTO_STARTS` starts follow and the best is kept
        (``result.initial_estimate["auto_starts"]``).
        ``"guess"`` (the default for the shooting baselines or with ``guess``): the
        declared guesses overridden by ``guess``.  ``result.initial_parameters`` reports it.
    starts : int
        Number of starts (default 1).  With more, start 0 is the one above and the others
        are seeded space-filling points within the bounds (log-spaced for positive
        parameters); they are explored in parallel worker processes (the midpoint rule
        when ``method`` has interior nodes), each distinct minimum is polished with
        ``method``, and the best converged one is returned, with the distinct local minima
        in ``result.local_minima`` (see :func:`colloc.solving.starts.solve_starts`).
    client : dask.distributed.Client, optional
        Where the starts run; by default a pool of single-threaded local processes (one
        per core) forked from a fork server that has imported colloc.
    seed : int
        Seed of the space-filling starts.
    verdict : bool
        Judge the fit against the declared noise (the fit weights ``1/σ²``) after the solve,
        see :mod:`colloc.results.verdict`: ``result.info["fit_verdict"]`` holds the reduced
        χ² and whiteness of every fitted signal.  When the solver converged but a signal's
        residuals exceed twice its declared σ (reduced χ² > 4) the result is not a success:
        ``success`` is False and ``status`` is ``"poor_fit"``; the solver's own status stays
        in ``result.solver_status``.  ``False`` skips the check (for re-solves whose fit is
        worse on purpose, such as profile points, or data whose noise is unknown).

    Returns
    -------
    Result
    """
    t_call = time.perf_counter()
    if isinstance(problem, HybridProblem):
        return _solve_hybrid(problem, method, solver, guess, progress, throw, start, starts, client, verdict, seed)
    if isinstance(problem, StochasticProblem):
        return _solve_stochastic(problem, method, guess, starts, throw, t_call)
    kalman = sys.modules.get(f"{__package__}.kalman_ml")  # a KalmanML exists only once its module is imported
    if kalman is not None and isinstance(method, kalman.KalmanML):
        raise OptionsError("solve(): KalmanML estimates a colloc.StochasticProblem (a linear-Gaussian model); "
                           f"a colloc.Problem is fitted by a transcription, got {type(problem).__name__}")
    if not isinstance(problem, Problem):
        raise OptionsError("solve() needs a colloc.Problem, colloc.HybridProblem or colloc.StochasticProblem, got "
                           f"{type(problem).__name__}")
    method = default_method() if method is None else method
    if not isinstance(method, AbstractMethod):
        raise OptionsError(
            f"solve(method={method!r}): expected a method object such as colloc.Midpoint(); "
            "strings are accepted only on the command line"
        )
    if not isinstance(method, AbstractTranscription | OwnSolve):
        raise OptionsError(
            f"solve(method={type(method).__name__}()): a method that is not a transcription must provide "
            "solve(problem, *, solver, guess, progress) returning a colloc.Estimate"
        )
    solver = Ipopt() if solver is None else solver
    if not isinstance(solver, Ipopt):
        raise OptionsError(f"solve(solver=...): expected colloc.Ipopt, got {type(solver).__name__}")
    if guess is not None:
        names = problem.model.element_names("parameter")
        unknown = [k for k in guess if k not in names]
        if unknown:
            raise OptionsError(f"guess for unknown parameter(s) {', '.join(unknown)}; parameters: {', '.join(names)}")
    if start is not None and start not in START_CHOICES:
        raise OptionsError(f"solve(start={start!r}): expected one of {', '.join(map(repr, START_CHOICES))}")
    if isinstance(starts, bool) or not isinstance(starts, numbers.Integral) or starts < 1:
        raise OptionsError(f"solve(starts={starts!r}): expected an integer >= 1")
    starts = int(starts)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise OptionsError(f"solve(seed={seed!r}): expected an integer >= 0")
    check_client(client, "solve")
    # the default start: the equation-error estimate (a bounded NLP in the parameters from the
    # lowest of several points of the search box when the residual is nonlinear in them); when
    # the residual is nonlinear the solve it starts is checked, and several starts follow if it
    # is not acceptable
    fallback = False
    if start is None:
        if not isinstance(method, AbstractTranscription) or guess is not None:
            start = "guess"
        else:
            start = "equation-error"
            fallback = starts == 1 and not residual_is_linear(problem)
    t_start = time.perf_counter()
    estimate = _initial_estimate(problem, method, start, guess)
    start_s = time.perf_counter() - t_start
    first = estimate.parameters
    auto_starts = None
    if starts == 1:
        result = _solve_from(problem, method, solver, first, progress)
        why = _not_acceptable(result, problem, verdict) if fallback else None
        if why is not None:
            again, _ = solve_starts(problem, method, solver, _solve_from, first, AUTO_STARTS, seed=seed,
                                    client=client, done=result)
            auto_starts = {"count": AUTO_STARTS, "why": why,
                           "kept": "several starts" if again is not None and again.objective < result.objective
                           else "the first solve (no start did better)"}
            if again is not None and again.objective < result.objective:
                result = again
    else:
        if progress is not None:
            raise OptionsError("solve(progress=...): progress reports are for one start; with starts > 1 "
                               "pass progress=None")
        result, runs = solve_starts(problem, method, solver, _solve_from, first, starts, seed=seed,
                                    client=client)
        if result is None:
            errors = "; ".join(f"start {r['start']}: {r['error']}" for r in runs[:3])
            raise SolveFailed(f"{method.name} on '{problem.name}': all {starts} starts raised ({errors})", None)
    result.initial_estimate = estimate.to_info()
    if auto_starts is not None:
        result.initial_estimate["auto_starts"] = auto_starts
        result.initial_estimate["message"] += (
            f"; the solve from it was not acceptable ({auto_starts['why']}), so {AUTO_STARTS} starts were "
            f"tried; kept: {auto_starts['kept']}")
    result.solver_status = result.status
    if not isinstance(method, AbstractTranscription):
        no_simulation = f"{method.name} fits a simulation of each trial: its trajectories are the integrator's"
    elif not solver.simulate:
        no_simulation = "switched off (Ipopt(simulate=False))"
    else:
        no_simulation = "the solve ended before it"
    result = finalize(result, **model_bounds(problem.model), fit=problem.fit, verdict=verdict,
                      no_simulation=no_simulation)
    # ``total_s`` is the whole call: start, build, solve(s), covariance, simulation, verdict
    result.timings["start_s"] = start_s
    result.timings["total_s"] = time.perf_counter() - t_call
    if throw and not result.success:
        raise SolveFailed(f"{result.method} on '{result.problem}' failed: {result.status}. {result.message}", result)
    return result


def _solve_hybrid(problem: HybridProblem, method, solver, guess, progress, throw, start, starts, client,
                  verdict, seed: int = 0) -> Result:
    """``solve`` of a hybrid problem: the arguments it takes checked, then
    :func:`colloc.solving.hybrid.solve_hybrid` (several starts: :func:`solve_starts` from the
    guess and seeded space-filling points of the parameters' box)."""
    from .hybrid import finalize_hybrid, solve_hybrid, start_hybrid

    method = Radau() if method is None else method
    solver = Ipopt() if solver is None else solver
    if not isinstance(solver, Ipopt):
        raise OptionsError(f"solve(solver=...): expected colloc.Ipopt, got {type(solver).__name__}")
    if solver.hessian == "gauss-newton":
        raise OptionsError("solve(HybridProblem, solver=Ipopt(hessian='gauss-newton')): the hybrid fit uses the exact "
                           "Hessian or 'limited-memory'")
    if isinstance(starts, bool) or not isinstance(starts, numbers.Integral) or starts < 1:
        raise OptionsError(f"solve(starts={starts!r}): expected an integer >= 1")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise OptionsError(f"solve(seed={seed!r}): expected an integer >= 0")
    check_client(client, "solve")
    if starts != 1 and problem.timed:
        raise OptionsError(f"solve(HybridProblem, starts={starts!r}): a hybrid problem with time events or timed "
                           "modes is fitted from one start (its guess); pass starts=1")
    if starts != 1 and progress is not None:
        raise OptionsError("solve(progress=...): progress reports are for one start; with starts > 1 "
                           "pass progress=None")
    if start not in (None, "guess"):
        raise OptionsError(f"solve(HybridProblem, start={start!r}): a hybrid problem starts from its guess")
    if problem.timed:  # phases laid by time events and timed modes
        from .hybrid_events import solve_timed

        if not isinstance(method, Radau):
            raise OptionsError(f"solve(HybridProblem, method={method!r}): a hybrid problem is collocated phase by "
                               "phase on Radau points; pass colloc.Radau(degree=...)")
        result = solve_timed(problem, method, solver=solver, guess=guess, progress=progress, verdict=verdict)
    elif starts == 1:
        result = solve_hybrid(problem, method, solver=solver, guess=guess, progress=progress, verdict=verdict)
    else:
        t_call = time.perf_counter()
        if not isinstance(method, Radau):
            raise OptionsError(f"solve(HybridProblem, method={method!r}): a hybrid problem is collocated phase by "
                               "phase on Radau points; pass colloc.Radau(degree=...)")
        first = {**problem.guess, **{k: float(v) for k, v in (guess or {}).items()}}
        for name in guess or {}:
            problem.check_parameter(name, "guess")
        estimate, runs = solve_starts(problem, method, solver, start_hybrid, first, int(starts), seed=int(seed),
                                      client=client)
        if estimate is None:
            errors = "; ".join(f"start {r['start']}: {r['error']}" for r in runs[:3])
            raise SolveFailed(f"hybrid-{method.name} on '{problem.name}': all {starts} starts raised ({errors})", None)
        result = finalize_hybrid(estimate, problem, verdict=verdict, t_call=t_call)
    if throw and not result.success:
        raise SolveFailed(f"{result.method} on '{result.problem}' failed: {result.status}. {result.message}", result)
    return result


def _not_acceptable(estimate: Estimate, problem: Problem, verdict: bool) -> str | None:
    """Why the solve from the default start is not acceptable (the judgement :func:`finalize`
    will make), or None."""
    success, status, *_ = judge(estimate, **model_bounds(problem.model), fit=problem.fit, verdict=verdict)
    if success:
        return None
    return status


def _kalman_ml() -> type[KalmanML]:
    """:class:`colloc.KalmanML`, imported when a stochastic problem or the method is met (its
    signal tools stay off the collocation path's start-up)."""
    from .kalman_ml import KalmanML

    return KalmanML


def _solve_stochastic(problem: StochasticProblem, method, guess, starts, throw: bool, t_call: float) -> Result:
    """``solve`` of a :class:`StochasticProblem`: its estimator (default :class:`KalmanML`)."""
    KalmanML = _kalman_ml()
    method = KalmanML() if method is None else method
    if not isinstance(method, KalmanML):
        raise OptionsError(f"solve(): a colloc.StochasticProblem is estimated by colloc.KalmanML(), not "
                           f"{getattr(method, 'name', type(method).__name__)}")
    if starts != 1:
        raise OptionsError("solve(starts=...): KalmanML runs from one start (its problem's start or guess)")
    unknown = [k for k in (guess or {}) if k not in problem.parameter_names]
    if unknown:
        raise OptionsError(f"guess for unknown parameter(s) {', '.join(unknown)}; parameters: "
                           f"{', '.join(problem.parameter_names)}")
    result = method.solve(problem, guess=guess)
    result.timings["total_s"] = time.perf_counter() - t_call
    if throw and not result.success:
        raise SolveFailed(f"{result.method} on '{result.problem}' failed: {result.status}. {result.message}", result)
    return result


def _solve_from(problem: Problem, method: AbstractMethod, solver: Ipopt, guess: Mapping[str, float],
                progress: Callable[[IterationInfo], None] | None = None) -> Estimate:
    """One solve from the parameter values ``guess`` (a full set, by element name)."""
    if isinstance(method, AbstractTranscription):
        result = solve_collocation(problem, method, solver=solver, guess=guess, progress=progress)
    else:
        assert isinstance(method, OwnSolve)  # checked by solve()
        result = method.solve(problem, solver=solver, guess=guess, progress=progress)
    result.initial_parameters = {k: float(v) for k, v in guess.items()}
    return result


def _declared_start(problem: Problem, guess: Mapping[str, float] | None) -> dict[str, float]:
    model = problem.model
    lb, ub = model.bounds("parameter")
    values = np.clip(model.guesses("parameter"), lb, ub)
    start = dict(zip(model.element_names("parameter"), values.tolist()))
    start.update({k: float(v) for k, v in (guess or {}).items()})
    return start


def _initial_estimate(problem: Problem, method: AbstractMethod, start: str,
                      guess: Mapping[str, float] | None) -> InitialEstimate:
    if start == "guess":
        return InitialEstimate(_declared_start(problem, guess), "guess", None,
                               "the declared guesses" + (" overridden by guess=" if guess else ""))
    # the unmeasured states of a first estimate: the cheapest transcription on the samples
    # (an interior-node scheme would cost several times more and change little here)
    transcription = Midpoint(input_interpolation=getattr(method, "input_interpolation", "cubic"))

    def states_at_guess(p: Problem):
        """Trajectories from a collocation solve with the parameters held at the guess."""
        quick = Ipopt(max_iter=100, standard_errors=False, simulate=False)
        r = solve_collocation(p, transcription, solver=quick, guess=_declared_start(p, guess), progress=None,
                              fix_parameters=True)
        if not r.success:
            return None
        return [{"time": r.trajectories[t.name].index.to_numpy(),
                 **{s: r.trajectories[t.name][s].to_numpy() for s in p.model.element_names("state")}}
                for t in p.trials]

    return equation_error(problem, guess=guess, collocation_states=states_at_guess)
