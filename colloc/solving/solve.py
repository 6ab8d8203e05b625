"""``solve(problem, method)``: the one entry point for every method.

A transcription goes the collocation path (:mod:`colloc.solving.collocation`); any other
method object (a shooting baseline, or a user's own) runs its ``solve``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..base.errors import OptionsError, SolveFailed
from ..definition.problem import Problem
from ..results.result import Result
from ..results.verdict import fit_verdict
from ..transcription.methods import AbstractMethod, AbstractTranscription, Midpoint
from .collocation import solve_collocation
from .ipopt import Ipopt, IterationInfo

__all__ = ["solve"]


def solve(
    problem: Problem,
    method: AbstractMethod | None = None,
    *,
    solver: Ipopt | None = None,
    guess: Mapping[str, float] | None = None,
    progress: Callable[[IterationInfo], None] | None = None,
    throw: bool = True,
    verdict: bool = True,
) -> Result:
    """Identify the parameters of ``problem`` with ``method``.

    Parameters
    ----------
    problem : Problem
    method : AbstractMethod, optional
        A transcription (``Midpoint()`` default, ``BackwardEuler()``, ``Trapezoidal()``)
        or a baseline.
    solver : Ipopt, optional
        Solver settings.
    guess : mapping of str to float, optional
        Initial parameter values by element name (overriding the declared guesses).
    progress : callable, optional
        Called with an :class:`IterationInfo` after every iteration.
    throw : bool
        Raise :class:`SolveFailed` (carrying the inspectable result) when the solver does
        not succeed; with ``False`` the failed result is returned.
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
    if not isinstance(problem, Problem):
        raise OptionsError(f"solve() needs a colloc.Problem, got {type(problem).__name__}")
    method = Midpoint() if method is None else method
    if not isinstance(method, AbstractMethod):
        raise OptionsError(
            f"solve(method={method!r}): expected a method object such as colloc.Midpoint(); "
            "strings are accepted only on the command line"
        )
    solver = Ipopt() if solver is None else solver
    if not isinstance(solver, Ipopt):
        raise OptionsError(f"solve(solver=...): expected colloc.Ipopt, got {type(solver).__name__}")
    if guess is not None:
        names = problem.model.element_names("parameter")
        unknown = [k for k in guess if k not in names]
        if unknown:
            raise OptionsError(f"guess for unknown parameter(s) {', '.join(unknown)}; parameters: {', '.join(names)}")
    if isinstance(method, AbstractTranscription):
        result = solve_collocation(problem, method, solver=solver, guess=guess, progress=progress)
    else:
        result = method.solve(problem, solver=solver, guess=guess, progress=progress)
    result.solver_status = result.status
    if verdict:
        _apply_verdict(problem, result)
    if throw and not result.success:
        raise SolveFailed(f"{result.method} on '{result.problem}' failed: {result.status}. {result.message}", result)
    return result


#: What to try when a converged fit is poor (shown in the message and by the CLI).
POOR_FIT_HINT = ("try other initial guesses (solve(guess=...), or colloc compare ... --starts N), "
                 "a model that captures the missing dynamics, or check the declared noise (fit weights 1/σ²)")


def _apply_verdict(problem: Problem, result: Result) -> None:
    """Judge ``result`` against the declared noise; a poor fit of a converged solve fails."""
    if not result.residuals:
        return
    v = fit_verdict(result.residuals, problem.fit, num_parameters=len(result.parameters),
                    simulation=result.simulation)
    result.info["fit_verdict"] = v
    if result.success and v["verdict"] == "poor_fit":
        result.success = False
        result.status = "poor_fit"
        result.message = f"{result.message} But the fit is poor: {v['reason']}. To do: {POOR_FIT_HINT}."
