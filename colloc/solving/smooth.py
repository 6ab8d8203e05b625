"""The path of a :class:`colloc.Problem` (smooth dynamics) through :func:`colloc.solve`.

A transcription goes the collocation path (:mod:`colloc.solving.collocation`); any other
method object (a shooting baseline, or a user's own, :class:`OwnSolve`) runs its ``solve``.
Either way the parameters start from the equation-error estimate or the guesses
(:mod:`colloc.solving.start`), several starts run when asked or when the first solve is not
acceptable (:mod:`colloc.solving.starts`), and the estimate is judged once
(:func:`colloc.results.report.finalize`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..base.errors import OptionsError, SolveFailed
from ..definition.problem import Problem
from ..results.report import finalize, judge, model_bounds
from ..results.result import Estimate, Result
from ..transcription.methods import AbstractMethod, AbstractTranscription, Midpoint, default_method
from .collocation import solve_collocation
from .ipopt import Ipopt, IterationInfo
from .options import SolveOptions
from .start import InitialEstimate, equation_error, residual_is_linear
from .starts import solve_starts

__all__ = ["AUTO_STARTS", "OwnSolve", "fit_smooth"]

#: When the residual is nonlinear in the parameters and the solve from the default start
#: (the equation-error estimate) is not acceptable — no convergence, a poor fit, or an
#: estimate on a search bound — ``solve`` tries this many starts (that estimate and seeded
#: points of the search box) and keeps the best, saying so in ``initial_estimate``.
AUTO_STARTS = 8


@runtime_checkable
class OwnSolve(Protocol):
    """What a method that is not a transcription provides: its own ``solve``, which
    :func:`colloc.solve` calls once per start and whose :class:`colloc.Estimate` goes through
    the same verdict and report as a transcription's."""

    name: str

    def solve(self, problem: Any, *, solver: Any, guess: Any, progress: Any = None) -> Estimate: ...


def fit_smooth(problem: Problem, method: AbstractMethod | None, options: SolveOptions) -> Result:
    """``solve`` of a :class:`colloc.Problem` (the arguments' meaning: :func:`colloc.solve`)."""
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
    solver, guess, starts = options.solver, options.guess, options.starts
    if guess is not None:
        names = problem.model.element_names("parameter")
        unknown = [k for k in guess if k not in names]
        if unknown:
            raise OptionsError(f"guess for unknown parameter(s) {', '.join(unknown)}; parameters: {', '.join(names)}")
    # the default start: the equation-error estimate (a bounded NLP in the parameters from the
    # lowest of several points of the search box when the residual is nonlinear in them); when
    # the residual is nonlinear the solve it starts is checked, and several starts follow if it
    # is not acceptable
    start, fallback = options.start, False
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
        found = _solve_from(problem, method, solver, first, options.progress)
        why = _not_acceptable(found, problem, options.verdict) if fallback else None
        if why is not None:
            again, _ = solve_starts(problem, method, solver, _solve_from, first, AUTO_STARTS, seed=options.seed,
                                    client=options.client, done=found)
            kept = "the first solve (no start did better)"
            if again is not None and again.objective < found.objective:
                found, kept = again, "several starts"
            auto_starts = {"count": AUTO_STARTS, "why": why, "kept": kept}
    else:
        several, runs = solve_starts(problem, method, solver, _solve_from, first, starts, seed=options.seed,
                                     client=options.client)
        if several is None:
            errors = "; ".join(f"start {r['start']}: {r['error']}" for r in runs[:3])
            raise SolveFailed(f"{method.name} on '{problem.name}': all {starts} starts raised ({errors})", None)
        found = several
    found.initial_estimate = estimate.to_info()
    if auto_starts is not None:
        found.initial_estimate["auto_starts"] = auto_starts
        found.initial_estimate["message"] += (
            f"; the solve from it was not acceptable ({auto_starts['why']}), so {AUTO_STARTS} starts were "
            f"tried; kept: {auto_starts['kept']}")
    found.solver_status = found.status
    if not isinstance(method, AbstractTranscription):
        no_simulation = f"{method.name} fits a simulation of each trial: its trajectories are the integrator's"
    elif not solver.simulate:
        no_simulation = "switched off (Ipopt(simulate=False))"
    else:
        no_simulation = "the solve ended before it"
    result = finalize(found, **model_bounds(problem.model), fit=problem.fit, verdict=options.verdict,
                      no_simulation=no_simulation)
    result.timings["start_s"] = start_s
    return result


def _not_acceptable(estimate: Estimate, problem: Problem, verdict: bool) -> str | None:
    """Why the solve from the default start is not acceptable (the judgement :func:`finalize`
    will make), or None."""
    success, status, *_ = judge(estimate, **model_bounds(problem.model), fit=problem.fit, verdict=verdict)
    if success:
        return None
    return status


def _solve_from(problem: Problem, method: AbstractMethod, solver: Ipopt, guess: Mapping[str, float],
                progress: Callable[[IterationInfo], None] | None = None) -> Estimate:
    """One solve from the parameter values ``guess`` (a full set, by element name)."""
    if isinstance(method, AbstractTranscription):
        result = solve_collocation(problem, method, solver=solver, guess=guess, progress=progress)
    else:
        assert isinstance(method, OwnSolve)  # checked by fit_smooth()
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
