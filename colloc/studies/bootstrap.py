"""Bootstrap of an identification: uncertainty without linearisation.

The Gauss–Newton standard errors of :func:`colloc.solve` linearise the problem at the
optimum.  That is accurate when the noise is small against the signal.  It is not accurate
for errors-in-variables problems, where every node carries its own nuisance unknown.
:func:`bootstrap` makes no such assumption. It draws new measurements from the identified
model plus Gaussian noise with the fitted variances, re-identifies each replicate and
reports the spread of the estimates.  With ``kind="trials"`` it resamples the trials
themselves instead (with replacement): the spread then includes whatever varies from one
trial to the next, not only the measurement noise the model assumes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..base.engine import check_client, pack, single_threaded, unpack
from ..base.errors import OptionsError
from ..definition.problem import Problem
from ..definition.trial import Trial
from ..results.result import Result
from ..solving.ipopt import Ipopt
from ..solving.solve import solve
from ..transcription.methods import AbstractMethod, default_method

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["Bootstrap", "bootstrap"]


@dataclass
class Bootstrap:
    """Outcome of :func:`bootstrap`.

    Attributes
    ----------
    estimates : pandas.DataFrame
        One row per successful replicate, one column per parameter.
    standard_errors : dict of str to float
        Standard deviation of the replicate estimates.
    intervals : dict of str to (float, float)
        Percentile interval at ``level`` (default 95 %).
    bias : dict of str to float
        Mean of the replicates minus the original estimate.
    failures : int
        Replicates whose solve did not succeed (excluded).
    level : float
    seed : int
    kind : str
        ``"parametric"`` or ``"trials"``.
    """

    estimates: pd.DataFrame
    standard_errors: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    bias: dict[str, float]
    failures: int
    level: float
    seed: int
    kind: str = "parametric"

    def table(self, result: Result) -> pd.DataFrame:
        """Side by side: estimate, Gauss–Newton SE, bootstrap SE, their ratio, interval."""
        rows = {}
        for name, value in result.parameters.items():
            gn = (result.standard_errors or {}).get(name, np.nan)
            bs = self.standard_errors[name]
            lo, hi = self.intervals[name]
            rows[name] = {"estimate": value, "se_gauss_newton": gn, "se_bootstrap": bs,
                          "ratio": bs / gn if gn else np.nan, "lower": lo, "upper": hi}
        return pd.DataFrame(rows).T


def _replicate(problem: Problem, result: Result, rng: np.random.Generator, s2: float) -> list[Trial]:
    trials = []
    for i, trial in enumerate(problem.trials):
        traj = result.trajectories[trial.name]
        signals = {}
        for name in problem.fitted_signals(i):
            model_value = np.interp(trial.time, traj.index.to_numpy(), traj[name].to_numpy())
            sigma = np.sqrt(s2 / problem.fit[name])
            noisy = model_value + sigma * rng.standard_normal(trial.num_samples)
            signals[name] = np.where(trial.present(name), noisy, np.nan)  # measured where the data are
        # exact known inputs (and their jumps) are kept as measured
        trials.append(trial.with_signals(**signals))
    return trials


def _replicate_solve(replica: Problem, method, solver, start) -> tuple[bool, dict]:
    r = solve(replica, method, solver=solver, guess=start, throw=False, verdict=False)
    return bool(r.success), dict(r.parameters)


def _replicate_task(blob: bytes) -> tuple[bool, dict]:
    """Worker task: one replicate (single-threaded)."""
    single_threaded()
    return _replicate_solve(*unpack(blob))


def bootstrap(
    problem: Problem,
    result: Result,
    method: AbstractMethod | None = None,
    *,
    replicates: int = 50,
    seed: int = 0,
    level: float = 0.95,
    solver: Ipopt | None = None,
    progress: Callable[[int, int], None] | None = None,
    kind: str = "parametric",
    client: Client | None = None,
) -> Bootstrap:
    """Bootstrap of ``result`` (identified from ``problem``): parametric or by trials.

    Parameters
    ----------
    problem : Problem
        The problem that produced ``result``.
    result : Result
    method : AbstractMethod, optional
        Method for the replicates (default ``Radau(degree=2)``, as :func:`colloc.solve`; use the one of ``result``).
    replicates : int
        Number of synthetic data sets.
    seed : int
        Seed of ``numpy.random.default_rng``.
    level : float
        Coverage of the percentile intervals.
    solver : Ipopt, optional
        Settings for the replicate solves (standard errors and simulation are switched off).
    progress : callable, optional
        Called as ``progress(done, replicates)`` after each replicate.
    kind : {"parametric", "trials"}
        ``"parametric"`` (default): new noise on the identified trajectories.
        ``"trials"``: each replicate draws as many trials as the problem has, with
        replacement, from its trials (a trial drawn twice enters as ``'name'`` and
        ``'name#2'``, keeping its constraints, guesses and trial weight); needs at least
        two trials.
    client : dask.distributed.Client, optional
        Solve the replicates as tasks on this Dask client (the engine of ``solve(starts=N)``
        and ``colloc batch``).  The replicates are drawn here first, so the estimates are the
        same with or without a client.

    Returns
    -------
    Bootstrap

    Notes
    -----
    Replicate data are the identified trajectories at the sample times plus Gaussian noise
    with variance ``s²/w`` per fitted signal (``w`` the fit weight, ``s²`` the residual
    variance estimated by the fit).  Each replicate starts from the original estimate and
    is solved without the fit verdict (its success means the solver converged).
    """
    kinds = ("parametric", "trials")
    if kind not in kinds:
        raise OptionsError(f"bootstrap(kind={kind!r}): expected one of {', '.join(map(repr, kinds))}")
    if kind == "trials" and len(problem.trials) < 2:
        raise OptionsError(f"bootstrap(kind='trials') resamples trials: problem '{problem.name}' has "
                           f"{len(problem.trials)}, need at least 2 (use kind='parametric')")
    if replicates < 2:
        raise OptionsError(f"bootstrap(replicates={replicates}): need at least 2")
    if not 0 < level < 1:
        raise OptionsError(f"bootstrap(level={level}): must be between 0 and 1")
    method = default_method() if method is None else method
    base = Ipopt() if solver is None else solver
    quiet = Ipopt(**{**base.__dict__, "standard_errors": False, "simulate": False})
    s2 = float(result.info.get("residual_variance", 1.0) or 1.0)
    rng = np.random.default_rng(seed)
    names = list(result.parameters)
    check_client(client, "bootstrap")
    rows, failures = [], 0
    replicas = []
    for k in range(replicates):
        if kind == "trials":
            replicas.append(problem.resampled(rng.integers(0, len(problem.trials), len(problem.trials)).tolist()))
        else:
            replicas.append(problem.with_trials(_replicate(problem, result, rng, s2)))
    if client is None:
        outcomes = (_replicate_solve(replica, method, quiet, result.parameters) for replica in replicas)
    else:
        futures = [client.submit(_replicate_task, pack((replica, method, quiet, dict(result.parameters))), pure=False)
                   for replica in replicas]
        outcomes = (f.result() for f in futures)
    for k, (success, params) in enumerate(outcomes):
        if success:
            rows.append([params[n] for n in names])
        else:
            failures += 1
        if progress is not None:
            progress(k + 1, replicates)
    est = pd.DataFrame(rows, columns=names)
    alpha = (1 - level) / 2
    return Bootstrap(
        estimates=est,
        standard_errors={n: float(est[n].std(ddof=1)) if len(est) > 1 else float("nan") for n in names},
        intervals={n: (float(est[n].quantile(alpha)), float(est[n].quantile(1 - alpha))) for n in names},
        bias={n: float(est[n].mean() - result.parameters[n]) for n in names},
        failures=failures,
        level=level,
        seed=seed,
        kind=kind,
    )
