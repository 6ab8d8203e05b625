"""Several starts: seeded space-filling initial parameters, solved in parallel, best kept.

Start 0 is the single-start default (the equation-error estimate or the guesses); the others
are a scrambled Latin hypercube (``scipy.stats.qmc``, fixed seed) inside the parameters'
bounds, log-spaced for positive parameters.  The solves are tasks on a Dask client, or on a
local process pool when none is given (:mod:`colloc.base.engine`).  The distinct local minima
the starts reached are clustered by objective and parameters and listed in the result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..base.engine import pack, process_pool, single_threaded, unpack
from ..definition.hybrid_problem import HybridProblem
from ..definition.problem import Problem
from ..results.result import Estimate
from ..transcription.methods import AbstractMethod, AbstractTranscription, Midpoint
from ..transcription.nlp import FUSE_CACHED_ABOVE
from .collocation import reuse_builds

__all__ = ["cluster_minima", "solve_starts", "start_box", "start_points"]

#: Relative tolerance for two starts to have reached the same local minimum.
MINIMUM_RTOL = 1e-3


def _parameters(problem: Problem | HybridProblem) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(names, lower bounds, upper bounds, guesses, scales) of the parameter elements; a hybrid
    problem's scales are its guesses' sizes (1 for a zero guess), as its fit scales them."""
    if isinstance(problem, HybridProblem):
        names = list(problem.parameters)
        guess = np.array([problem.guess[n] for n in names], dtype=float)
        return (names, np.array([problem.bounds[n][0] for n in names], dtype=float),
                np.array([problem.bounds[n][1] for n in names], dtype=float), guess,
                np.where(guess != 0, np.abs(guess), 1.0))
    model = problem.model
    lb, ub = model.bounds("parameter")
    return model.element_names("parameter"), lb, ub, model.guesses("parameter"), model.scales("parameter")


def start_box(problem: Problem | HybridProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Finite box ``(lo, hi, log)`` the starts are drawn from, per parameter element.

    Finite bounds are used as they are; an infinite side extends ten scales beyond the
    guess.  ``log`` marks positive boxes spanning more than a decade (drawn log-uniformly).
    """
    _names, lb, ub, guess, scale = _parameters(problem)
    lo = np.where(np.isfinite(lb), lb, np.minimum(guess, np.where(np.isfinite(ub), ub, guess)) - 10 * scale)
    hi = np.where(np.isfinite(ub), ub, np.maximum(guess, lo) + 10 * scale)
    log = (lo > 0) & (hi / np.where(lo > 0, lo, 1.0) > 10.0)
    return lo, hi, log


def start_points(problem: Problem | HybridProblem, count: int, *, seed: int = 0) -> list[dict[str, float]]:
    """``count`` seeded space-filling parameter points inside :func:`start_box`."""
    names = _parameters(problem)[0]
    if count <= 0 or not names:
        return [{} for _ in range(max(count, 0))]
    lo, hi, log = start_box(problem)
    from scipy.stats import qmc  # on demand: scipy.stats takes ~0.4 s to import

    u = qmc.LatinHypercube(len(names), rng=np.random.default_rng(seed)).random(count)
    lo_log = np.where(log, lo, 1.0)
    values = np.where(log, np.exp(np.log(lo_log) + u * np.log(np.where(log, hi / lo_log, 1.0))), lo + u * (hi - lo))
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

    Each run: ``{"start", "objective", "parameters", "scale"}`` and optionally ``"members"``,
    the start indices the run stands for (default ``[start]``).  Returns dicts with
    ``objective``, ``parameters``, ``starts`` (how many starts reached it) and
    ``start_indices``.
    """
    minima: list[dict] = []
    for run in sorted(runs, key=lambda r: r["objective"]):
        members = list(run.get("members", [run["start"]]))
        for m in minima:
            if _same(m["_rep"], run, rtol):
                m["starts"] += len(members)
                m["start_indices"] += members
                break
        else:
            minima.append({"objective": run["objective"], "parameters": dict(run["parameters"]),
                           "starts": len(members), "start_indices": members, "_rep": run})
    for m in minima:
        m.pop("_rep")
        m["start_indices"].sort()
    return minima


def explore_method(method: AbstractMethod) -> AbstractMethod:
    """The method the extra starts explore with.

    The midpoint rule on the same grid when ``method`` has nodes inside its mesh intervals
    (Radau, Hermite–Simpson: two to three times the variables of the midpoint rule, and
    each IPOPT iteration costs about that much more), else ``method`` itself.
    """
    if isinstance(method, AbstractTranscription) and len(method.node_fractions) > 2:
        return Midpoint(num_nodes=method.num_nodes, input_interpolation=method.input_interpolation,
                        refine=method.refine)
    return method


def _run_start(blob: bytes, index: int, guess: Mapping[str, float], keep_build: bool = False) -> dict[str, Any]:
    """Worker task: one solve from ``guess``; never raises (a failure is reported)."""
    single_threaded()
    # in a worker of this call's own pool, which ends with the call: not in a Dask worker, which
    # outlives it (a kept NLP would hold its memory) and may run other tasks on other threads
    if keep_build:
        reuse_builds()
    began = time.time()
    try:
        problem, method, solver, runner = _unpacked(blob)
        with _compiled_on_a_miss() if keep_build else contextlib.nullcontext():
            result = runner(problem, method, solver, dict(guess))
        return {"start": index, "result": result, "error": None, "wall_s": time.time() - began}
    except Exception as exc:  # noqa: BLE001 - a failed start is counted, not fatal
        return {"start": index, "result": None, "error": f"{type(exc).__name__}: {exc}", "wall_s": time.time() - began}


@contextlib.contextmanager
def _compiled_on_a_miss() -> Iterator[None]:
    """Within a start's task, an NLP big enough to look for its compiled functions in the cache
    (:data:`~colloc.transcription.nlp.FUSE_CACHED_ABOVE` block instances) compiles them on a
    miss, where a single solve would evaluate CasADi's graphs instead: every start of the call
    solves the same NLP, and the libraries stay in the cache for the next call.  The two-link
    seed case's midpoint exploration: function evaluations 0.6-1.2 s a start on the graphs,
    0.02-0.07 s compiled, after one compile of 2 s.  A ``$COLLOC_FUSE_ABOVE`` of the user's own
    is left as it is."""
    if "COLLOC_FUSE_ABOVE" in os.environ:
        yield
        return
    os.environ["COLLOC_FUSE_ABOVE"] = str(FUSE_CACHED_ABOVE)
    try:
        yield
    finally:
        os.environ.pop("COLLOC_FUSE_ABOVE", None)


#: The last task blob this worker unpacked and its objects: the tasks of one call share one
#: blob, and solving the same problem object lets the worker reuse its NLP (:func:`reuse_builds`).
_UNPACKED: tuple[bytes, Any] | None = None


def _unpacked(blob: bytes) -> Any:
    global _UNPACKED
    digest = hashlib.blake2b(blob, digest_size=16).digest()
    if _UNPACKED is None or _UNPACKED[0] != digest:
        _UNPACKED = (digest, unpack(blob))
    return _UNPACKED[1]


def _converged(run: dict) -> bool:
    r = run["result"]
    return r is not None and r.success and bool(np.isfinite(r.objective))


def _entry(run: dict, scale: dict, members: list[int]) -> dict:
    return {"start": run["start"], "objective": run["result"].objective, "parameters": run["result"].parameters,
            "scale": scale, "members": members, "run": run}


def _describe(run: dict, method_name: str, guess: Mapping[str, float] | None = None) -> dict:
    r = run["result"]
    out = {"start": run["start"], "method": method_name}
    if guess is not None:
        out["initial_parameters"] = dict(guess)
    out.update({"success": None if r is None else r.success,
                "status": run["error"] if r is None else r.status,
                "iterations": None if r is None else r.iterations,
                "objective": None if r is None else r.objective,
                "parameters": None if r is None else r.parameters})
    if "wall_s" in run:  # a worker's task: its whole time there (unpacking, build or reuse, solve)
        out["wall_s"] = run["wall_s"]
    return out


def solve_starts(problem: Problem | HybridProblem, method, solver, runner, first: Mapping[str, float], count: int, *,
                 seed: int = 0, client=None, done: Estimate | None = None) -> tuple[Estimate | None, list[dict]]:
    """Solve from ``first`` and ``count − 1`` space-filling starts; return the best result.

    ``done``: start 0's result when the caller has already solved from ``first`` with
    ``method`` and ``solver`` (:func:`colloc.solve`'s fallback to several starts): it is used
    as it is, not solved again.

    ``runner(problem, method, solver, guess) -> Estimate`` is the single-start solve (it must
    be importable by name in the workers).

    Start 0 is solved in this process (a thread of it) with ``method`` and the full
    ``solver`` (standard errors and the simulation check), while the workers come up and the
    other starts run.  The starts are *explored* on single-threaded worker processes (the
    Dask ``client``'s, else a local pool forked from a fork server,
    :func:`colloc.base.engine.process_pool`) without standard errors or simulation, with
    :func:`explore_method` (the midpoint rule when ``method`` has interior nodes; then start
    0 is explored too, so that the minimum it reaches is known in the explored problem).
    Each distinct explored minimum other than start 0's is *polished*: solved with
    ``method`` from the explored optimum, so that every minimum listed has its objective
    under ``method``.  When a polished minimum is better than start 0's, it is solved once
    more with the full solver, so the returned result always has its standard errors and
    simulation.

    The best result (lowest objective among the converged minima, else start 0's) gets
    ``local_minima`` and ``starts``.  Returns ``(best, runs)`` where
    ``runs`` has start 0's solve, then one entry per explored start (``None`` result on
    error).  CasADi objects are pickled before start 0's thread begins, and the main thread
    touches none while it runs.
    """
    guesses = [dict(first)] + start_points(problem, count - 1, seed=seed)
    light = dataclasses.replace(solver, standard_errors=False, simulate=False)
    # a hybrid problem is collocated on Radau points phase by phase: explored by its own method
    explore = method if isinstance(problem, HybridProblem) else explore_method(method)
    cheap = explore is not method
    explored = list(range(count)) if cheap else list(range(1, count))
    names, *_bounds, scales = _parameters(problem)
    scale = dict(zip(names, scales.tolist()))
    # pickled before start 0's thread begins: CasADi objects are not touched by two threads
    explore_blob = pack((problem, explore, light, runner))
    polish_blob = pack((problem, method, light, runner)) if cheap else None
    with ThreadPoolExecutor(max_workers=1) as thread:
        zero_future = thread.submit(_run_local, problem, method, solver, runner, first) if done is None else None
        with _tasks(client, len(explored)) as tasks:
            runs = tasks.run(explore_blob, [(i, guesses[i]) for i in explored])
            clusters = cluster_minima([_entry(r, scale, [r["start"]]) for r in runs if _converged(r)])
            zero_cluster = next((m for m in clusters if 0 in m["start_indices"]), None)
            polish_runs: list[dict] = []
            todo = [m for m in clusters if m is not zero_cluster] if cheap else []
            if todo:
                assert polish_blob is not None  # packed whenever clusters are polished (cheap)
                polish_runs = tasks.run(polish_blob, [(m["start_indices"][0], m["parameters"]) for m in todo])
                for run, m in zip(polish_runs, todo):
                    run["members"] = m["start_indices"]
        zero: dict[str, Any] = (zero_future.result() if zero_future is not None
                                else {"start": 0, "result": done, "error": None})
    entries = []
    if _converged(zero):
        entries.append(_entry(zero, scale, zero_cluster["start_indices"] if cheap and zero_cluster else [0]))
    if cheap:
        entries += [_entry(r, scale, r["members"]) for r in polish_runs if _converged(r)]
    else:
        entries += [_entry(r, scale, [r["start"]]) for r in runs if _converged(r)]
    minima = cluster_minima(entries)
    converged = sum(m["starts"] for m in minima)
    # the representative of each minimum: the best run reaching it (start 0's when it does)
    best_entry = min(entries, key=lambda e: e["objective"], default=None)
    polished = False
    if best_entry is None:  # nothing converged: start 0's result, else any that exists
        pool_ = [r for r in [zero, *runs] if r["result"] is not None]
        if not pool_:
            return None, [zero, *runs]
        best_run = pool_[0]
        result = best_run["result"]
        best_start = best_run["start"]
    else:
        same_as_zero = _converged(zero) and any(0 in m["start_indices"] and best_entry["start"] in m["start_indices"]
                                                for m in minima)
        best_start = min(best_entry["members"])
        if same_as_zero or best_entry["run"] is zero:
            result, best_start = zero["result"], 0
        else:
            result = best_entry["run"]["result"]
            if solver.standard_errors or solver.simulate:
                again = _run_local(problem, method, solver, runner, result.parameters)["result"]
                if again is not None and (again.success or not result.success):
                    result, polished = again, True
            result.initial_parameters = dict(guesses[best_start])
    result.local_minima = minima
    result.starts = {
        "count": count,
        "seed": seed,
        "converged": converged,
        "failed": count - converged,
        "best_start": best_start,
        "polished": polished,
        "explored_with": explore.name,
        "start0": _describe(zero, method.name, guesses[0]),
        "runs": [_describe(r, explore.name, guesses[r["start"]]) for r in runs],
        "polish": [dict(_describe(r, method.name), start_indices=r["members"]) for r in polish_runs],
    }
    return result, [zero, *runs]


class _Tasks:
    """The starts' tasks on a Dask client, or on a local process pool when none is given."""

    def __init__(self, client=None, pool=None):
        self.client, self.pool = client, pool

    def run(self, blob: bytes, jobs: list[tuple[int, Mapping[str, float]]]) -> list[dict]:
        """``_run_start(blob, index, guess)`` for every job; a lost task is a failed run."""
        if self.client is not None:
            shared = self.client.scatter(blob, broadcast=True, hash=False)
            futures = [self.client.submit(_run_start, shared, i, g, pure=False) for i, g in jobs]
            return sorted(self.client.gather(futures), key=lambda r: r["start"])
        futures = [self.pool.submit(_run_start, blob, i, g, True) for i, g in jobs]
        out = []
        for (i, _), f in zip(jobs, futures):
            try:
                out.append(f.result())
            except Exception as exc:  # noqa: BLE001 - a worker process that died (BrokenProcessPool)
                out.append({"start": i, "result": None, "error": f"{type(exc).__name__}: {exc}"})
        return sorted(out, key=lambda r: r["start"])


@contextlib.contextmanager
def _tasks(client, count: int) -> Iterator[_Tasks]:
    if client is not None:
        yield _Tasks(client=client)
        return
    # SciPy is imported by the solves after IPOPT (the verdict, the covariance): once, in the fork server
    preload = ("colloc.solving.solve", "scipy.sparse", "scipy.special")
    with process_pool(min(os.cpu_count() or 1, max(count, 1)), preload=preload) as pool:
        yield _Tasks(pool=pool)


def _run_local(problem: Problem | HybridProblem, method, solver, runner, guess: Mapping[str, float]) -> dict[str, Any]:
    """Start 0 (or the polish of the winner) in this process; never raises."""
    try:
        return {"start": 0, "result": runner(problem, method, solver, dict(guess)), "error": None}
    except Exception as exc:  # noqa: BLE001 - counted like a failed worker start
        return {"start": 0, "result": None, "error": f"{type(exc).__name__}: {exc}"}
