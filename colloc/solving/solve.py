"""``solve(problem, method)``: the one entry point for every method.

A transcription goes the collocation path (:mod:`colloc.solving.collocation`); any other
method object (a shooting baseline, or a user's own) runs its ``solve``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..base.errors import OptionsError, SolveFailed
from ..definition.problem import Problem
from ..results.result import Result
from ..transcription.methods import AbstractMethod, AbstractTranscription, default_method
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
) -> Result:
    """Identify the parameters of ``problem`` with ``method``.

    Parameters
    ----------
    problem : Problem
    method : AbstractMethod, optional
        A transcription (default ``Radau(degree=2)``; ``Radau()``, ``HermiteSimpson()``, ``Midpoint()``,
        ``BackwardEuler()``, ``Trapezoidal()``)
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

    Returns
    -------
    Result
    """
    if not isinstance(problem, Problem):
        raise OptionsError(f"solve() needs a colloc.Problem, got {type(problem).__name__}")
    method = default_method() if method is None else method
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
    if throw and not result.success:
        raise SolveFailed(f"{result.method} on '{result.problem}' failed: {result.status}. {result.message}", result)
    return result
