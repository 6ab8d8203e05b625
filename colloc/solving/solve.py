"""``solve(problem, method)``: the one entry point for every kind of problem and method.

``solve`` checks the options that every path shares (:class:`colloc.solving.options.SolveOptions`)
and hands the problem to the path of its kind: a :class:`colloc.Problem` to
:func:`colloc.solving.smooth.fit_smooth` (a transcription, or a method with its own ``solve``), a
:class:`colloc.HybridProblem` to the multi-phase fit (:mod:`colloc.solving.hybrid`), a
:class:`colloc.StochasticProblem` to its estimator (:class:`colloc.KalmanML`).  Each path builds
its :class:`colloc.Result` once, judged by :func:`colloc.results.report.finalize`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..base.engine import one_blas_thread
from ..base.errors import OptionsError, SolveFailed
from ..definition.contact_problem import ContactProblem
from ..definition.hybrid_problem import HybridProblem
from ..definition.problem import Problem
from ..definition.stochastic import StochasticProblem
from ..results.report import POOR_FIT_HINT
from ..results.result import Result
from ..transcription.methods import AbstractMethod, Radau
from .ipopt import Ipopt, IterationInfo
from .options import START_CHOICES, SolveOptions
from .smooth import AUTO_STARTS, OwnSolve, fit_smooth
from .starts import solve_starts

if TYPE_CHECKING:
    from distributed import Client

    from .kalman_ml import KalmanML

__all__ = ["AUTO_STARTS", "POOR_FIT_HINT", "START_CHOICES", "OwnSolve", "solve"]


def solve(
    problem: Problem | HybridProblem | StochasticProblem | ContactProblem,
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
    problem : Problem, HybridProblem or StochasticProblem
        A :class:`~colloc.HybridProblem` is fitted phase by phase with free switching
        times (:func:`colloc.solving.hybrid.solve_hybrid`; method ``Radau``; several starts
        unless its phases are laid by time events); a :class:`~colloc.StochasticProblem` by
        its estimator (:class:`~colloc.KalmanML`, one start); a :class:`~colloc.ContactProblem`
        by :class:`~colloc.Complementarity` (the contact modes out of the fit, one start).
    method : AbstractMethod, optional
        A transcription (default ``Radau(degree=2)``; ``Radau()``, ``HermiteSimpson()``, ``Midpoint()``,
        ``BackwardEuler()``, ``Trapezoidal()``), a baseline, or for a stochastic problem
        ``KalmanML()``.
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

    Notes
    -----
    During the call the BLAS and OpenMP libraries run one thread
    (:func:`colloc.base.engine.one_blas_thread`), as in the ``colloc`` command, unless the
    environment sets their thread count (``OPENBLAS_NUM_THREADS`` and the like).
    """
    t_call = time.perf_counter()
    fit = _path_of(problem, method)
    options = SolveOptions.checked(solver=solver, guess=guess, progress=progress, start=start, starts=starts,
                                   client=client, seed=seed, verdict=verdict)
    with one_blas_thread():
        result = fit(problem, method, options)
    # ``total_s`` is the whole call: start, build, solve(s), covariance, simulation, verdict
    result.timings["total_s"] = time.perf_counter() - t_call
    if throw and not result.success:
        raise SolveFailed(f"{result.method} on '{result.problem}' failed: {result.status}. {result.message}", result)
    return result


def _path_of(problem, method) -> Callable[..., Result]:
    """The function that fits a problem of this kind (an :class:`OptionsError` for any other object)."""
    if isinstance(problem, HybridProblem):
        return _fit_timed if problem.timed else _fit_hybrid
    if isinstance(problem, StochasticProblem):
        return _fit_stochastic
    if isinstance(problem, ContactProblem):
        return _fit_contact
    kalman = sys.modules.get(f"{__package__}.kalman_ml")  # a KalmanML exists only once its module is imported
    if kalman is not None and isinstance(method, kalman.KalmanML):
        raise OptionsError("solve(): KalmanML estimates a colloc.StochasticProblem (a linear-Gaussian model); "
                           f"a colloc.Problem is fitted by a transcription, got {type(problem).__name__}")
    if not isinstance(problem, Problem):
        raise OptionsError("solve() needs a colloc.Problem, colloc.HybridProblem or colloc.StochasticProblem, got "
                           f"{type(problem).__name__}")
    return fit_smooth


def _hybrid_method(problem: HybridProblem, method, options: SolveOptions) -> Radau:
    """The method of a hybrid fit (default ``Radau()``), after refusing what a hybrid fit does
    not take."""
    method = Radau() if method is None else method
    if options.solver.hessian == "gauss-newton":
        raise OptionsError("solve(HybridProblem, solver=Ipopt(hessian='gauss-newton')): the hybrid fit uses the exact "
                           "Hessian or 'limited-memory'")
    if options.start not in (None, "guess"):
        raise OptionsError(f"solve(HybridProblem, start={options.start!r}): a hybrid problem starts from its guess")
    if not isinstance(method, Radau) and (problem.timed or options.starts != 1):
        raise OptionsError(f"solve(HybridProblem, method={method!r}): a hybrid problem is collocated phase by "
                           "phase on Radau points; pass colloc.Radau(degree=...)")
    return method


def _fit_timed(problem: HybridProblem, method, options: SolveOptions) -> Result:
    """``solve`` of a hybrid problem whose phases are laid by time events and timed modes:
    :func:`colloc.solving.hybrid_events.solve_timed`, from one start."""
    from .hybrid_events import solve_timed

    method = _hybrid_method(problem, method, options)
    if options.starts != 1:
        raise OptionsError(f"solve(HybridProblem, starts={options.starts!r}): a hybrid problem with time events or "
                           "timed modes is fitted from one start (its guess); pass starts=1")
    return solve_timed(problem, method, solver=options.solver, guess=options.guess, progress=options.progress,
                       verdict=options.verdict)


def _fit_hybrid(problem: HybridProblem, method, options: SolveOptions) -> Result:
    """``solve`` of a hybrid problem with guards: :func:`colloc.solving.hybrid.solve_hybrid`
    (several starts: :func:`solve_starts` from the guess and seeded space-filling points of the
    parameters' box)."""
    from .hybrid import finalize_hybrid, solve_hybrid, start_hybrid

    method = _hybrid_method(problem, method, options)
    solver, guess, starts = options.solver, options.guess, options.starts
    if starts == 1:
        return solve_hybrid(problem, method, solver=solver, guess=guess, progress=options.progress,
                            verdict=options.verdict)
    t_call = time.perf_counter()
    first = {**problem.guess, **{k: float(v) for k, v in (guess or {}).items()}}
    for name in guess or {}:
        problem.check_parameter(name, "guess")
    estimate, runs = solve_starts(problem, method, solver, start_hybrid, first, starts, seed=options.seed,
                                  client=options.client)
    if estimate is None:
        errors = "; ".join(f"start {r['start']}: {r['error']}" for r in runs[:3])
        raise SolveFailed(f"hybrid-{method.name} on '{problem.name}': all {starts} starts raised ({errors})", None)
    return finalize_hybrid(estimate, problem, verdict=options.verdict, t_call=t_call)


def _fit_contact(problem: ContactProblem, method, options: SolveOptions) -> Result:
    """``solve`` of a :class:`ContactProblem`: :class:`colloc.Complementarity` (the default), the
    contact modes out of the fit, polished on the problem's hybrid path."""
    from .complementarity import Complementarity, solve_complementarity

    method = Complementarity() if method is None else method
    if not isinstance(method, Complementarity):
        raise OptionsError(f"solve(): a colloc.ContactProblem is fitted by colloc.Complementarity(), not "
                           f"{getattr(method, 'name', type(method).__name__)}")
    if options.starts != 1 or options.start not in (None, "guess"):
        raise OptionsError("solve(ContactProblem): Complementarity runs from one start (the problem's guess, or "
                           "guess=)")
    return solve_complementarity(problem, method, solver=options.solver, guess=options.guess, verdict=options.verdict,
                                 solve=solve)


def _kalman_ml() -> type[KalmanML]:
    """:class:`colloc.KalmanML`, imported when a stochastic problem or the method is met (its
    signal tools stay off the collocation path's start-up)."""
    from .kalman_ml import KalmanML

    return KalmanML


def _fit_stochastic(problem: StochasticProblem, method, options: SolveOptions) -> Result:
    """``solve`` of a :class:`StochasticProblem`: its estimator (default :class:`KalmanML`)."""
    KalmanML = _kalman_ml()
    method = KalmanML() if method is None else method
    if not isinstance(method, KalmanML):
        raise OptionsError(f"solve(): a colloc.StochasticProblem is estimated by colloc.KalmanML(), not "
                           f"{getattr(method, 'name', type(method).__name__)}")
    if options.starts != 1:
        raise OptionsError("solve(starts=...): KalmanML runs from one start (its problem's start or guess)")
    unknown = [k for k in (options.guess or {}) if k not in problem.parameter_names]
    if unknown:
        raise OptionsError(f"guess for unknown parameter(s) {', '.join(unknown)}; parameters: "
                           f"{', '.join(problem.parameter_names)}")
    return method.solve(problem, guess=options.guess)
