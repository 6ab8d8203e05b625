"""``solve(problem, method)``: the one entry point for every method.

The collocation path: transcribe → assemble the structure-exploiting NLP → IPOPT →
unpack by name → standard errors → forward-simulation check → :class:`Result`.
"""

from __future__ import annotations

import dataclasses

import logging
import time as _time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import casadi as ca
import numpy as np
import pandas as pd

from . import __version__
from ._callbacks import IterationCallback
from .collocation import Layout, transcribe
from .diagnostics import parameter_covariance, worst_violations
from .errors import OptionsError, SolveFailed
from .nlp import NLP
from .problem import Problem
from .result import Result
from .simulate import simulate
from .transcriptions import AbstractMethod, AbstractTranscription, Midpoint

__all__ = ["Ipopt", "IterationInfo", "solve", "versions"]

log = logging.getLogger(__name__)

_HESSIANS = ("exact", "gauss-newton", "limited-memory")


@dataclass(frozen=True)
class Ipopt:
    """IPOPT settings (defaults in one place).

    Parameters
    ----------
    hessian : {"exact", "gauss-newton", "limited-memory"}
        Exact Hessian of the Lagrangian (default); the Gauss–Newton approximation
        ``JᵀJ`` of the least-squares terms (constraint curvature ignored); or IPOPT's
        L-BFGS.
    tol : float
        IPOPT's overall tolerance.
    max_iter : int
    linear_solver : str
        IPOPT linear solver (``"mumps"`` ships with CasADi).
    mumps_pivot_order : int
        MUMPS ordering; 6 (QAMD) scales far better than the default when constant
        parameters couple every node.
    print_level : int
        IPOPT's own output (0 = silent, 5 = the usual table).
    parallel : int
        Threads used to evaluate the mapped local functions.
    standard_errors : bool
        Compute the parameter covariance after the solve.
    simulate : bool
        Run the forward-simulation check after the solve.
    extra : mapping, optional
        Further raw IPOPT options (``{"mu_strategy": "adaptive"}``).
    """

    hessian: Literal["exact", "gauss-newton", "limited-memory"] = "exact"
    tol: float = 1e-8
    max_iter: int = 500
    linear_solver: str = "mumps"
    mumps_pivot_order: int = 6
    print_level: int = 0
    parallel: int = 1
    standard_errors: bool = True
    simulate: bool = True
    extra: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.hessian not in _HESSIANS:
            raise OptionsError(f"Ipopt(hessian={self.hessian!r}): expected one of {', '.join(_HESSIANS)}")
        if not (self.tol > 0):
            raise OptionsError(f"Ipopt(tol={self.tol!r}): must be > 0")
        if int(self.max_iter) != self.max_iter or self.max_iter < 0:
            raise OptionsError(f"Ipopt(max_iter={self.max_iter!r}): must be an integer >= 0")
        if self.parallel < 1:
            raise OptionsError(f"Ipopt(parallel={self.parallel!r}): must be >= 1")

    def nlpsol_options(self) -> dict:
        """Options dict for ``casadi.nlpsol``."""
        opts = {
            "print_time": False,
            "ipopt.print_level": int(self.print_level),
            "ipopt.sb": "yes",
            "ipopt.tol": float(self.tol),
            "ipopt.max_iter": int(self.max_iter),
            "ipopt.linear_solver": self.linear_solver,
        }
        if self.linear_solver == "mumps":
            opts["ipopt.mumps_pivot_order"] = int(self.mumps_pivot_order)
        if self.hessian == "limited-memory":
            opts["ipopt.hessian_approximation"] = "limited-memory"
        for k, v in (self.extra or {}).items():
            opts[k if "." in k else f"ipopt.{k}"] = v
        return opts


@dataclass(frozen=True)
class IterationInfo:
    """What a progress callback receives after every solver iteration."""

    iteration: int
    objective: float
    max_violation: float
    elapsed_s: float


_VERSIONS: dict[str, str] = {}


def versions() -> dict[str, str]:
    """Versions of colloc, CasADi, IPOPT (from the bundled library's file name), numpy, scipy, pandas."""
    if not _VERSIONS:
        import re
        from pathlib import Path

        import scipy

        # CasADi bundles IPOPT as a shared library whose file name carries the version
        ipopt = "unknown"
        found = sorted(Path(ca.__file__).parent.glob("*ipopt*"))
        for path in found:
            match = re.search(r"ipopt[.\w-]*?(\d+\.\d+\.\d+)", path.name)
            if match and "sipopt" not in path.name:
                ipopt = match.group(1)
                break
        _VERSIONS.update(
            colloc=__version__, casadi=ca.__version__, ipopt=ipopt, numpy=np.__version__,
            scipy=scipy.__version__, pandas=pd.__version__,
        )
    return dict(_VERSIONS)


def _progress_callback(nx, ng, np_, lbg, ubg, objective_scale, report, start) -> IterationCallback:
    """IPOPT iteration callback forwarding a compact :class:`IterationInfo` to ``report``."""

    def on_iteration(iteration, arg):
        g = np.asarray(arg[2]).ravel()
        viol = float(np.max(np.maximum(lbg - g, 0) + np.maximum(g - ubg, 0), initial=0.0))
        report(IterationInfo(iteration, float(arg[1]) / objective_scale, viol, _time.perf_counter() - start))

    sizes = {"x": nx, "f": 1, "g": ng, "lam_x": nx, "lam_g": ng, "lam_p": np_}
    return IterationCallback(sizes, on_iteration)


def _describe_row(nlp: NLP, problem: Problem) -> Callable[[int], str]:
    def describe(i: int) -> str:
        b = int(np.searchsorted(nlp.row_offsets, i, side="right") - 1)
        while nlp.blocks[b].num_rows * nlp.blocks[b].count == 0:  # pragma: no cover
            b -= 1
        block = nlp.blocks[b]
        k, r = divmod(i - nlp.row_offsets[b], block.num_rows)
        where = f"trial '{problem.trials[block.trial].name}'" if block.trial is not None else "problem"
        return f"{block.name} {block.row_names[r]} of {where} at t = {block.instance_times[k]:.6g} s"

    return describe


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
    result = method.solve(problem, solver=solver, guess=guess, progress=progress)
    if throw and not result.success:
        raise SolveFailed(f"{result.method} on '{result.problem}' failed: {result.status}. {result.message}", result)
    return result


def solve_collocation(
    problem: Problem,
    method: AbstractTranscription,
    *,
    solver: Ipopt | None,
    guess: Mapping[str, float] | None,
    progress: Callable[[IterationInfo], None] | None,
) -> Result:
    """Collocation path of :func:`solve` (see there)."""
    solver = Ipopt() if solver is None else solver
    trajectory_terms = [t.name for t in problem.terms if t.kind == "trajectory"]
    if trajectory_terms and solver.hessian != "limited-memory":
        raise OptionsError(
            f"trajectory objective '{trajectory_terms[0]}' couples every node with every other one "
            f"(dense Hessian); solve it with Ipopt(hessian='limited-memory'), not {solver.hessian!r}"
        )
    if trajectory_terms and solver.standard_errors:
        # the covariance comes from least-squares residuals and would ignore the term
        solver = dataclasses.replace(solver, standard_errors=False)
    start = _time.perf_counter()
    layout, blocks, x0, lbx, ubx = transcribe(problem, method)
    if guess:
        for name, value in guess.items():
            j = layout.param_names.index(name)
            x0[layout.param_offset + j] = value / layout.scale[layout.param_offset + j]
    x0 = np.clip(x0, lbx, ubx)
    objective_scale = 1.0 / max(problem.num_observations, 1)
    nlp = NLP(layout.size, blocks, hessian=solver.hessian, objective_scale=objective_scale,
              parallel=solver.parallel, residual_jacobian=solver.standard_errors)
    opts = solver.nlpsol_options()
    if progress is not None:  # the callback copies x and g every iteration: only when asked
        opts["iteration_callback"] = _progress_callback(layout.size, nlp.num_rows, nlp.data.size, nlp.lbg,
                                                        nlp.ubg, objective_scale, progress, start)
    nlpsol = nlp.solver(opts)
    build_s = _time.perf_counter() - start

    t_solve = _time.perf_counter()
    sol = nlpsol(x0=x0, p=nlp.data, lbx=lbx, ubx=ubx, lbg=nlp.lbg, ubg=nlp.ubg)
    solve_s = _time.perf_counter() - t_solve
    stats = nlpsol.stats()
    status = str(stats.get("return_status", "unknown"))
    success = bool(stats.get("success", False))
    x = np.array(sol["x"]).ravel()
    g = np.array(sol["g"]).ravel()

    result = _unpack(problem, method, layout, nlp, x, g, solver, stats)
    result.success, result.status = success, status
    result.message = _message(status, success)
    result.iterations = int(stats.get("iter_count", 0))
    history = stats.get("iterations", {})
    result.info["objective_history"] = [float(v) / objective_scale for v in history.get("obj", [])]
    result.info["primal_infeasibility_history"] = [float(v) for v in history.get("inf_pr", [])]
    if not success:
        result.violations = worst_violations(g, nlp.lbg, nlp.ubg, _describe_row(nlp, problem), tol=1e-6)
    post = _time.perf_counter() - t_solve - solve_s
    result.timings = {
        "build_s": build_s,
        "solve_s": solve_s,
        "total_s": build_s + solve_s,
        "postprocess_s": post,
        # time spent evaluating f, g and their derivatives; the rest of solve_s is IPOPT + MUMPS
        "functions_s": float(sum(v for k, v in stats.items() if k.startswith("t_wall_nlp_"))),
    }
    return result


def _message(status: str, success: bool) -> str:
    if success:
        return "IPOPT converged to a local optimum within tolerance."
    hints = {
        "Maximum_Iterations_Exceeded": "raise Ipopt(max_iter=...) or improve the initial guess",
        "Infeasible_Problem_Detected": "the dynamics, bounds and constraints cannot all hold; check bounds",
        "Restoration_Failed": "the solver lost feasibility; check scales and the initial guess",
        "Invalid_Number_Detected": "the model produced NaN/inf at the initial guess or an iterate",
    }
    return f"IPOPT stopped with {status}" + (f": {hints[status]}" if status in hints else "") + "."


def _unpack(problem, method, layout: Layout, nlp: NLP, x, g, solver: Ipopt, stats) -> Result:
    model = problem.model
    trials_z, params = layout.unpack(x)
    pnames = layout.param_names
    parameters = dict(zip(pnames, params.tolist()))
    signals_fn = model.functions()["signals"]
    signal_names = problem.signal_names()
    known = model.element_names("known_input")
    n = layout.num_states
    q = len(model.element_names("free_input"))
    eiv = list(problem.input_noise)

    res_all = np.array(nlp.functions["res"](x, nlp.data)).ravel()
    fit_res_parts, trajectories, residuals, measurements = [], {}, {}, {}
    simulation = {}
    for i, trial in enumerate(problem.trials):
        tn = layout.nodes[i]
        Z = trials_z[i]
        # known inputs at the nodes: measured, or estimated (errors-in-variables)
        U = np.stack([
            Z[n + q + eiv.index(u)] if u in eiv else np.interp(tn, trial.time, trial[u]) for u in known
        ]) if known else np.zeros((0, tn.size))
        R_free = Z[n : n + q]
        Y = np.array(signals_fn.map(tn.size)(Z[:n], R_free, U, params, tn[None, :]))
        Y = np.vstack([Y, Z[n + q : n + q + len(eiv)]])  # delayed-state rows (if any) follow
        traj = pd.DataFrame(Y.T, columns=signal_names, index=pd.Index(tn, name="time"))
        trajectories[trial.name] = traj
        fitted = problem.fitted_signals(i)
        b = next(k for k, blk in enumerate(nlp.blocks) if blk.name == "fit" and blk.trial == i)
        blk = nlp.blocks[b]
        r = res_all[nlp.res_offsets[b] : nlp.res_offsets[b] + blk.num_res * blk.count]
        fit_res_parts.append(r)
        w = np.sqrt([problem.fit[s] for s in fitted])
        R = r.reshape(blk.count, blk.num_res) / w[None, :]
        idx = pd.Index(trial.time, name="time")
        residuals[trial.name] = pd.DataFrame(R, columns=fitted, index=idx)
        measurements[trial.name] = pd.DataFrame({s: trial[s] for s in fitted}, index=idx)
        if solver.simulate:
            sim = simulate(
                model, Z[:n, 0], params, tn,
                known_inputs=U.T, free_inputs=R_free.T,
            )
            entry = {"status": sim.status, "message": sim.message, "nrmse": {}}
            if sim.success:
                for s in (s for s in fitted if s in sim.signals):
                    ys = np.interp(trial.time, tn, sim.signals[s])
                    span = np.ptp(trial[s])
                    rms = float(np.sqrt(np.mean((ys - trial[s]) ** 2)))
                    entry["nrmse"][s] = float(rms / span) if span > 0 else float("nan")
            simulation[trial.name] = entry

    objective = float(nlp.functions["f"](x, nlp.data)) / nlp.objective_scale
    se = cov = None
    info: dict[str, Any] = {"hessian": solver.hessian, "num_variables": layout.size,
                            "num_constraints": nlp.num_rows, "num_observations": problem.num_observations}
    if solver.standard_errors and pnames:
        t0 = _time.perf_counter()
        jac_res = nlp.functions["jac_res"](x, nlp.data)
        _, jac_g = nlp.functions["jac_g"](x, nlp.data)
        fit_res = np.concatenate(fit_res_parts)
        c = parameter_covariance(
            jac_res, res_all, jac_g, nlp.lbg == nlp.ubg, layout.p_index,
            layout.scale[layout.p_index], problem.num_observations, fit_res,
        )
        se = dict(zip(pnames, c.standard_errors.tolist()))
        cov = pd.DataFrame(c.matrix, index=pnames, columns=pnames)
        info.update(residual_variance=c.residual_variance, dof=c.dof, covariance_message=c.message,
                    covariance_s=_time.perf_counter() - t0)
    units = {name: model.unit_of(name) for name in signal_names + pnames}
    if eiv:
        info["input_noise"] = dict(problem.input_noise)
    return Result(
        problem=problem.name,
        method=method.name,
        success=False,
        status="",
        message="",
        iterations=0,
        objective=objective,
        parameters=parameters,
        standard_errors=se,
        covariance=cov,
        trajectories=trajectories,
        measurements=measurements,
        residuals=residuals,
        timings={},
        num_nodes=int(sum(len(t) for t in layout.nodes)),
        trials=[t.name for t in problem.trials],
        versions=versions(),
        simulation=simulation,
        units=units,
        info=info,
    )
