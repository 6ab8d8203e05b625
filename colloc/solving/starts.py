"""Several starts: seeded space-filling initial parameters, solved in parallel, best kept.

Start 0 is the single-start default (the equation-error estimate or the guesses); the others
are a scrambled Latin hypercube (``scipy.stats.qmc``, fixed seed) inside the parameters'
bounds, log-spaced for positive parameters.  The solves are tasks on a Dask client
(:mod:`colloc.base.engine`).  The distinct local minima the starts reached are clustered by
objective and parameters and listed in the result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.stats import qmc

from ..base.engine import local_client, pack, single_threaded, unpack
from ..definition.problem import Problem
from ..results.result import Result

__all__ = ["start_box", "start_points", "cluster_minima", "solve_starts"]

#: Relative tolerance for two starts to have reached the same local minimum.
MINIMUM_RTOL = 1e-3


def start_box(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Finite box ``(lo, hi, log)`` the starts are drawn from, per parameter element.

    Finite bounds are used as they are; an infinite side extends ten scales beyond the
    guess.  ``log`` marks positive boxes spanning more than a decade (drawn log-uniformly).
    """
    model = problem.model
    lb, ub = model.bounds("parameter")
    guess, scale = model.guesses("parameter"), model.scales("parameter")
    lo = np.where(np.isfinite(lb), lb, np.minimum(guess, np.where(np.isfinite(ub), ub, guess)) - 10 * scale)
    hi = np.where(np.isfinite(ub), ub, np.maximum(guess, lo) + 10 * scale)
    log = (lo > 0) & (hi / np.where(lo > 0, lo, 1.0) > 10.0)
    return lo, hi, log


def start_points(problem: Problem, count: int, *, seed: int = 0) -> list[dict[str, float]]:
    """``count`` seeded space-filling parameter points inside :func:`start_box`."""
    names = problem.model.element_names("parameter")
    if count <= 0 or not names:
        return [{} for _ in range(max(count, 0))]
    lo, hi, log = start_box(problem)
    u = qmc.LatinHypercube(len(names), rng=np.random.default_rng(seed)).random(count)
    values = np.where(log, np.exp(np.log(np.where(log, lo, 1.0)) + u * np.log(np.where(log, hi / np.where(log, lo, 1.0), 1.0))),
                      lo + u * (hi - lo))
    return [dict(zip(names, row.tolist())) for row in values]


def _same(a: dict, b: dict, rtol: float) -> bool:
    ja, jb = a["objective"], b["objective"]
    if abs(ja - jb) > rtol * max(abs(ja), abs(jb), 1e-12):
        return False
    return all(abs(a["parameters"][k] - b["parameters"][k])
               <= rtol * max(abs(a["parameters"][k]), abs(b["parameters"][k])) + 1e-9 * a["scale"].get(k, 1.0)
               for k in a["parameters"])


def cluster_minima(runs: list[dict], rtol: float = MINIMUM_RTOL) -> list[dict]:
    """Distinct local minima among converged runs, best first.

    Each run: ``{"start", "objective", "parameters", "scale"}``.  Returns dicts with
    ``objective``, ``parameters``, ``starts`` (how many runs reached it) and ``start_indices``.
    """
    minima: list[dict] = []
    for run in sorted(runs, key=lambda r: r["objective"]):
        for m in minima:
            if _same(m["_rep"], run, rtol):
                m["starts"] += 1
                m["start_indices"].append(run["start"])
                break
        else:
            minima.append({"objective": run["objective"], "parameters": dict(run["parameters"]), "starts": 1,
                           "start_indices": [run["start"]], "_rep": run})
    for m in minima:
        m.pop("_rep")
        m["start_indices"].sort()
    return minima


def _run_start(blob: bytes, index: int, guess: Mapping[str, float]) -> dict[str, Any]:
    """Worker task: one solve from ``guess``; never raises (a failure is reported)."""
    single_threaded()
    try:
        problem, method, solver, runner = unpack(blob)
        result = runner(problem, method, solver, dict(guess))
        return {"start": index, "result": result, "error": None}
    except Exception as exc:  # a failed start is counted, not fatal
        return {"start": index, "result": None, "error": f"{type(exc).__name__}: {exc}"}


def solve_starts(problem: Problem, method, solver, runner, first: Mapping[str, float], count: int, *,
                 seed: int = 0, client=None) -> tuple[Result | None, list[dict]]:
    """Solve from ``first`` and ``count − 1`` space-filling starts; return the best result.

    ``runner(problem, method, solver, guess) -> Result`` is the single-start solve (it must
    be importable by name in the workers).  Every start runs on a single-threaded Dask
    worker; start 0 with the full solver, the others without the standard errors and the
    forward simulation (only the best result needs them).  When an extra start reaches a better minimum than start 0's, it is solved
    once more here, from its optimum, with the full solver, so the returned result always has
    its standard errors and simulation.
    The best result (lowest objective among the converged starts, else among all) gets
    ``info["local_minima"]`` and ``info["starts"]``.  Returns ``(best, runs)`` where ``runs``
    has one entry per start (``None`` result on error).
    """
    guesses = [dict(first)] + start_points(problem, count - 1, seed=seed)
    explore = dataclasses.replace(solver, standard_errors=False, simulate=False)
    with local_client(client, tasks=count) as c:
        full = c.scatter(pack((problem, method, solver, runner)), broadcast=True, hash=False)
        light = c.scatter(pack((problem, method, explore, runner)), broadcast=True, hash=False)
        futures = [c.submit(_run_start, full if i == 0 else light, i, g, pure=False) for i, g in enumerate(guesses)]
        runs = c.gather(futures)
    runs = sorted(runs, key=lambda r: r["start"])
    scale = dict(zip(problem.model.element_names("parameter"), problem.model.scales("parameter").tolist()))
    converged = [{"start": r["start"], "objective": r["result"].objective, "parameters": r["result"].parameters,
                  "scale": scale}
                 for r in runs if r["result"] is not None and r["result"].success
                 and np.isfinite(r["result"].objective)]
    minima = cluster_minima(converged)
    done = [r for r in runs if r["result"] is not None]
    if not done:
        return None, runs
    ok = [r for r in done if r["result"].success and np.isfinite(r["result"].objective)]
    pool_ = ok or done
    best = min(pool_, key=lambda r: (r["result"].objective if np.isfinite(r["result"].objective) else np.inf))
    result = best["result"]
    polished = False
    with_zero = next((m for m in minima if 0 in m["start_indices"]), None)
    if with_zero is not None and best["start"] in with_zero["start_indices"]:
        best = runs[0]  # the same minimum as start 0, whose result is complete
        result = best["result"]
    elif best["start"] != 0 and (solver.standard_errors or solver.simulate):
        again = _run_local(problem, method, solver, runner, result.parameters)["result"]
        if again is not None and (again.success or not result.success):
            result, polished = again, True
            result.initial_parameters = dict(guesses[best["start"]])
    result.info["local_minima"] = minima
    result.info["starts"] = {
        "count": count,
        "seed": seed,
        "converged": len(ok),
        "failed": count - len(ok),
        "best_start": best["start"],
        "polished": polished,
        "runs": [{"start": r["start"], "initial_parameters": guesses[r["start"]],
                  "success": None if r["result"] is None else r["result"].success,
                  "status": r["error"] if r["result"] is None else r["result"].status,
                  "iterations": None if r["result"] is None else r["result"].iterations,
                  "objective": None if r["result"] is None else r["result"].objective,
                  "parameters": None if r["result"] is None else r["result"].parameters}
                 for r in runs],
    }
    return result, runs


def _run_local(problem: Problem, method, solver, runner, guess: Mapping[str, float]) -> dict[str, Any]:
    """Start 0 (or the polish of the winner) in this process; never raises."""
    try:
        return {"start": 0, "result": runner(problem, method, solver, dict(guess)), "error": None}
    except Exception as exc:  # counted like a failed worker start
        return {"start": 0, "result": None, "error": f"{type(exc).__name__}: {exc}"}
