"""The collocation path of :func:`colloc.solve`.

Transcribe → assemble the structure-exploiting NLP → IPOPT → unpack by name → standard
errors → forward-simulation check → :class:`~colloc.Result`.
"""

from __future__ import annotations

import dataclasses
import time as _time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..base.buffers import values
from ..base.errors import OptionsError
from ..base.prefetch import prefetch
from ..base.versions import versions
from ..definition.problem import Problem
from ..inference.covariance import Covariance, parameter_covariance
from ..results.result import Estimate
from ..simulation.ode import simulate
from ..transcription.collocation import Layout, transcribe
from ..transcription.interpolation import InputReader, held_inputs
from ..transcription.methods import AbstractTranscription
from ..transcription.nlp import NLP
from .ipopt import Ipopt, IterationInfo, progress_callback

__all__ = ["reuse_builds", "solve_collocation", "worst_violations"]

#: The last NLP built in this process, kept for the next solve of the same problem, method
#: and solver once :func:`reuse_builds` has been called (a worker of several starts); None:
#: nothing is kept (the default: a kept NLP would hold its memory after the solve).
_KEPT: dict[str, Any] | None = None


def reuse_builds(on: bool = True) -> None:
    """Keep (``on``) the last NLP built in this process (its transcription and IPOPT instance) and
    solve the next call on the same problem object, method, solver and options with it.

    For the worker processes of several starts, whose tasks differ only in their starting
    parameters: the build (0.3-0.5 s of a two-link start's 1-1.5 s) is then paid once per
    worker instead of once per start.  Not for the main process, where the kept NLP (gigabytes
    at 60k nodes) would outlive its solve.  ``reuse_builds(False)`` drops what is kept and
    stops keeping."""
    global _KEPT
    _KEPT = {} if on else None


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


def solve_collocation(
    problem: Problem,
    method: AbstractTranscription,
    *,
    solver: Ipopt | None,
    guess: Mapping[str, float] | None,
    progress: Callable[[IterationInfo], None] | None,
    fix_parameters: bool = False,
) -> Estimate:
    """Collocation path of :func:`solve` (see there).

    ``fix_parameters`` holds the parameters at their initial values (only the trajectories
    are solved for), as the equation-error estimate does for states it cannot recover.
    """
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
    key = (method, solver, fix_parameters) if progress is None else None
    kept = _KEPT is not None and key is not None and _KEPT.get("problem") is problem and _KEPT.get("key") == key
    if kept:
        assert _KEPT is not None
        layout, x0, lbx, ubx, nlp, nlpsol = (_KEPT[k] for k in ("layout", "x0", "lbx", "ubx", "nlp", "nlpsol"))
        x0 = x0.copy()
    else:
        layout, blocks, x0, lbx, ubx = transcribe(problem, method)
        pristine = {"x0": x0.copy(), "lbx": lbx, "ubx": ubx}  # before the guess and any fixing
    if guess:
        for name, value in guess.items():
            j = layout.param_names.index(name)
            x0[layout.param_offset + j] = value / layout.scale[layout.param_offset + j]
    x0 = np.clip(x0, lbx, ubx)
    if fix_parameters:
        lbx, ubx = lbx.copy(), ubx.copy()
        lbx[layout.p_index] = ubx[layout.p_index] = x0[layout.p_index]
    objective_scale = 1.0 / max(problem.num_observations, 1)
    if not kept:
        nlp = NLP(layout.size, blocks, hessian=solver.hessian, objective_scale=objective_scale,
                  parallel=solver.parallel, residual_jacobian=solver.standard_errors)
        opts = solver.nlpsol_options()
        if progress is not None:  # the callback copies x and g every iteration: only when asked
            opts["iteration_callback"] = progress_callback(layout.size, nlp.num_rows, nlp.data.size, nlp.lbg,
                                                            nlp.ubg, objective_scale, progress, start)
        nlpsol = nlp.solver(opts)
        if _KEPT is not None and key is not None:
            _KEPT.clear()
            _KEPT.update(problem=problem, key=key, layout=layout, nlp=nlp, nlpsol=nlpsol, **pristine)
    build_s = _time.perf_counter() - start

    t_solve = _time.perf_counter()
    # for the result's tables, the covariance and the verdict, beside IPOPT (which holds no lock)
    importing = prefetch("pandas", "scipy.sparse", "scipy.sparse.linalg", "scipy.special")
    sol = nlpsol(x0=x0, p=nlp.data, lbx=lbx, ubx=ubx, lbg=nlp.lbg, ubg=nlp.ubg)
    solve_s = _time.perf_counter() - t_solve
    if importing is not None:
        importing.join()  # what is left of it (a short solve) counts as post-processing
    stats = nlpsol.stats()
    status = str(stats.get("return_status", "unknown"))
    success = bool(stats.get("success", False))
    x = np.array(sol["x"]).ravel()
    g = np.array(sol["g"]).ravel()
    objective = float(sol["f"]) / objective_scale  # f(x) as IPOPT last evaluated it (no second evaluation)
    # IPOPT's memory (its KKT factorisation among it) is released before the covariance
    # builds a factorisation of its own: at 60k nodes that is ~0.6 GB off the peak
    del sol, nlpsol
    if _KEPT is None:
        nlp.functions.pop("hess_lag", None)  # with it the Hessian's assembly matrix (~0.3 GB there)

    result = _unpack(problem, method, layout, nlp, x, objective, solver)
    result.success, result.status = success, status
    result.message = _message(status, success)
    result.iterations = int(stats.get("iter_count", 0))
    history = stats.get("iterations", {})
    result.info["objective_history"] = [float(v) / objective_scale for v in history.get("obj", [])]
    result.info["primal_infeasibility_history"] = [float(v) for v in history.get("inf_pr", [])]
    result.model_evaluation = nlp.compile_note  # e.g. "compiled (cache hit)", "interpreted (small problem)"
    if not success:
        result.violations = worst_violations(g, nlp.lbg, nlp.ubg, _describe_row(nlp, problem), tol=1e-6)
    post = _time.perf_counter() - t_solve - solve_s
    result.timings = {
        "build_s": build_s,
        "compile_s": nlp.compile_s,  # part of build_s; 0 when the compile cache held everything
        "solve_s": solve_s,
        "total_s": build_s + solve_s,
        "postprocess_s": post,
        "covariance_s": float(result.info.get("covariance_s", 0.0)),
        "simulation_s": float(result.info.get("simulation_s", 0.0)),
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


def _unpack(problem, method, layout: Layout, nlp: NLP, x, objective: float, solver: Ipopt) -> Estimate:
    import pandas as pd

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

    res_all, _ = nlp.residual_values(x)
    fit_res_parts, trajectories, residuals, measurements = [], {}, {}, {}
    simulation: dict[str, Any] = {}
    checks = None  # the simulation checks run while the standard errors are computed
    for i, trial in enumerate(problem.trials):
        tn = layout.nodes[i]
        Z = trials_z[i]
        # known inputs at the nodes: measured, or estimated (errors-in-variables)
        plan = layout.plans[i]
        reader = InputReader(trial, known, method.input_interpolation, plan.input_jumps)
        measured_u = reader(tn)  # through the measured samples, piecewise between jumps
        held = held_inputs(trial, known)  # the inputs the simulation check holds between samples
        U = np.stack([
            Z[n + q + eiv.index(u)] if u in eiv else measured_u[k] for k, u in enumerate(known)
        ]) if known else np.zeros((0, tn.size))
        R_free = Z[n : n + q]
        Y = values(signals_fn.map(tn.size), Z[:n], R_free, U, params, tn[None, :])[0]
        Y = np.vstack([Y, Z[n + q : n + q + len(eiv)]])  # delayed-state rows (if any) follow
        traj = pd.DataFrame(Y.T, columns=signal_names, index=pd.Index(tn, name="time"))
        trajectories[trial.name] = traj
        fitted = plan.fitted
        b = next(k for k, blk in enumerate(nlp.blocks) if blk.name == "fit" and blk.trial == i)
        blk = nlp.blocks[b]
        r = res_all[nlp.res_offsets[b] : nlp.res_offsets[b] + blk.num_res * blk.count]
        fit_res_parts.append(r)
        weights = plan.weights
        w = np.sqrt([weights[s] for s in fitted])
        R = r.reshape(blk.count, blk.num_res) / w[None, :]
        if fitted:  # a sample not measured has no residual
            R[~np.stack([trial.present(s) for s in fitted], axis=1)] = np.nan
        idx = pd.Index(trial.time, name="time")
        residuals[trial.name] = pd.DataFrame(R, columns=fitted, index=idx)
        measurements[trial.name] = pd.DataFrame({s: trial[s] for s in fitted}, index=idx)
        if solver.simulate:
            # at the mesh points, inputs linear between (held ones constant: one integration per
            # interval); a jump is a repeated mesh point whose rows hold the inputs before and
            # after it, so the integration restarts there
            mesh = np.arange(0, tn.size, layout.stride)
            t_sim, U_sim, R_sim = tn[mesh], U[:, mesh], R_free[:, mesh]
            jumps = plan.jump_times
            if jumps.size:
                k = np.flatnonzero(np.isin(t_sim, jumps))
                left = reader(t_sim[k], side="left")
                left_u = np.stack([U_sim[e, k] if u in eiv else left[e] for e, u in enumerate(known)])
                t_sim = np.insert(t_sim, k, t_sim[k])
                U_sim = np.insert(U_sim, k, left_u, axis=1)
                R_sim = np.insert(R_sim, k, R_sim[:, k], axis=1)
            if checks is None:  # one worker beside this thread (the compiled integrator releases the GIL)
                checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="colloc-simulation")
            simulation[trial.name] = checks.submit(_simulation_check, model, trial, fitted, Z[:n, 0], params,
                                                   t_sim, U_sim, R_sim, held)

    se = cov = None
    info: dict[str, Any] = {"hessian": solver.hessian, "num_variables": layout.size,
                            "num_constraints": nlp.num_rows, "num_observations": problem.num_observations}
    try:
        c = _standard_errors(problem, layout, nlp, x, res_all, fit_res_parts, solver, info)
    finally:
        if checks is not None:
            checks.shutdown(wait=True)
    simulation_s = 0.0
    for name, check in simulation.items():  # a failed check raises here, as it would have in line
        simulation[name], elapsed = check.result()
        simulation_s += elapsed
    info["simulation_s"] = simulation_s  # the checks' own time, overlapping the standard errors'
    if c is not None:
        se = dict(zip(pnames, c.standard_errors.tolist()))
        cov = pd.DataFrame(c.matrix, index=pnames, columns=pnames)
    units = {name: model.unit_of(name) for name in signal_names + pnames}
    if eiv:
        info["input_noise"] = dict(problem.input_noise)
    if known:  # how each known input was read between samples, per trial
        info["input_interpolation"] = {t.name: problem.input_interpolation(i, method.input_interpolation)
                                       for i, t in enumerate(problem.trials)}
    return Estimate(
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
        descriptions={name: model.description_of(name) for name in pnames if model.description_of(name)},
    )


def _standard_errors(problem: Problem, layout: Layout, nlp: NLP, x, res_all, fit_res_parts, solver: Ipopt,
                     info: dict) -> Covariance | None:
    """The parameters' covariance (``None`` when not asked for or there are no parameters);
    its summary and time go into ``info``."""
    pnames = layout.param_names
    if not (solver.standard_errors and pnames):
        return None
    t0 = _time.perf_counter()
    _, jac_res = nlp.residual_values(x, jacobian=True)
    jac_g = nlp.sparse_value("jac_g", x)
    c = parameter_covariance(
        jac_res, res_all, jac_g, nlp.lbg == nlp.ubg, layout.p_index,
        layout.scale[layout.p_index], problem.num_observations, np.concatenate(fit_res_parts),
        absolute_sigma=solver.absolute_sigma,
    )
    info.update(residual_variance=c.residual_variance, dof=c.dof, covariance_message=c.message,
                covariance_s=_time.perf_counter() - t0, absolute_sigma=solver.absolute_sigma,
                not_identifiable=[pnames[i] for i in c.not_identifiable])
    return c


def _simulation_check(model, trial, fitted, x0, params, t_sim, U_sim, R_sim, held=None) -> tuple[dict, float]:
    """The forward simulation of one trial from the estimated initial state, and the NRMSE of
    each fitted signal against its measured samples; with the time it took.  ``held``: the
    known inputs held over each interval (zero-order hold)."""
    t0 = _time.perf_counter()
    sim = simulate(model, x0, params, t_sim, known_inputs=U_sim.T, free_inputs=R_sim.T, held_known_inputs=held)
    elapsed = _time.perf_counter() - t0
    nrmse: dict[str, float] = {}
    entry = {"status": sim.status, "message": sim.message, "nrmse": nrmse}
    if sim.success:
        for s in (s for s in fitted if s in sim.signals):
            m = trial.present(s)  # measured values only
            ys = np.interp(trial.time[m], t_sim, sim.signals[s])
            span = np.ptp(trial[s][m])
            rms = float(np.sqrt(np.mean((ys - trial[s][m]) ** 2)))
            nrmse[s] = float(rms / span) if span > 0 else float("nan")
    return entry, elapsed


def worst_violations(
    g: np.ndarray, lbg: np.ndarray, ubg: np.ndarray, describe, count: int = 5, tol: float = 0.0
) -> list[dict]:
    """The ``count`` constraint rows with the largest violation above ``tol``.

    ``describe(i)`` names row ``i``.  Each entry: ``{"constraint": name, "violation": value}``.
    """
    viol = np.maximum(lbg - g, 0.0) + np.maximum(g - ubg, 0.0)
    viol = np.where(np.isfinite(viol), viol, np.inf)
    order = np.argsort(-viol)[:count]
    return [
        {"constraint": describe(int(i)), "violation": float(viol[i])}
        for i in order
        if viol[i] > tol
    ]
