"""k-step-ahead prediction with an identified model: :func:`predict` (``colloc predict``).

For each sample time ``t`` of a window, the predictive distribution of every measured signal
at ``t`` given the data up to ``t − H`` (docs/contracts.md §3).  A model is judged by what it predicts
on data it was not fitted to, against simple references (persistence, an AR model).

* **Stochastic models** (a :class:`~colloc.kalman.LinearGaussianModel`, as the Kalman maximum
  likelihood fits): the Kalman filter runs over the record and its state is carried ``H``
  ahead by the model (:func:`colloc.kalman.k_step_predictions`).  Given the estimate's covariance,
  the variance its uncertainty adds to the predicted mean is added to the filter's (the delta
  method of Ansley & Kohn 1986; :func:`colloc.inference.kalman.robust.prediction_variance`).
* **Deterministic models** (a :class:`~colloc.Problem` whose residual is an ODE): an extended
  Kalman filter estimates the state from the data up to ``t − H`` and the model is simulated
  ``H`` ahead from it (fixed-step RK4 between samples, inputs linear between them), the state's
  covariance carried along by the step's Jacobian.  The measurement noise of each signal is the
  fit's own residual variance (``χ²_red/w``, from the fit verdict); a small process noise, 1 %
  of each state's nominal scale per √s, gives the filter a fading memory, so that its estimate
  follows the recent data when the model is not exact.  Free inputs (an unknown torque) and
  delays cannot be predicted this way and are refused by name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import casadi as ca
import numpy as np

from ..base.errors import ModelError, OptionsError
from ..definition.explicit import explicit_rhs

if TYPE_CHECKING:
    import pandas as pd

    from ..definition.problem import Problem
    from ..definition.trial import Trial

__all__ = ["PROCESS_NOISE_PER_SQRT_S", "StochasticModel", "predict", "registered_model"]


class FittedResult(Protocol):
    """What :func:`predict` reads of a :class:`~colloc.results.result.Result` (named by its
    shape here: ``results/result.py`` imports this module)."""

    @property
    def problem(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, float]: ...

    @property
    def fit_verdict(self) -> Mapping[str, Any]: ...

    @property
    def trajectories(self) -> Mapping[str, pd.DataFrame]: ...


#: Process noise of the deterministic predictor's filter: this fraction of each state's
#: nominal scale, per √s (a random walk's intensity).
PROCESS_NOISE_PER_SQRT_S = 0.01
#: RK4 steps per sample interval in the deterministic predictor.
RK4_STEPS = 4


@dataclass(frozen=True)
class StochasticModel:
    """What a stochastic result predicts with: its linear-Gaussian model, the parameter values,
    the measured signal and the offset added to the model's output (a record's mean); optionally
    the estimate's covariance, ``(names, matrix)``, whose share of the prediction's uncertainty is
    then included (without it the intervals are the plug-in ones, as if the parameters were exact)."""

    model: Any  # colloc.kalman.LinearGaussianModel
    theta: Mapping[str, float]
    signal: str
    offset: float = 0.0
    covariance: tuple[tuple[str, ...], Any] | None = None


def _steps(trial, horizon: float) -> tuple[int, float]:
    dt = np.diff(trial.time)
    if not np.allclose(dt, dt[0], rtol=1e-6, atol=0.0):
        raise OptionsError(f"predict: '{trial.name}' is not on a uniform grid; the horizon is counted in samples")
    steps = horizon / dt[0]
    if not horizon > 0 or abs(steps - round(steps)) > 1e-6 * max(1.0, steps) or round(steps) < 1:
        raise OptionsError(f"predict: --horizon {horizon:g} s is not a whole number (>= 1) of the record's "
                           f"sample interval {dt[0]:g} s")
    return int(np.rint(steps)), float(dt[0])


def predict(result: FittedResult, trial: Trial, *, horizon: float,
            window: tuple[float | None, float | None] | None = None, model: Problem | StochasticModel | None = None,
            signals: list[str] | None = None) -> pd.DataFrame:
    """The ``horizon``-ahead predictive distributions of ``result``'s model on ``trial``.

    Parameters
    ----------
    result : Result
        The identified model's result (its parameters; the fit verdict's residual variance).
    trial : Trial
        The record to predict (the whole of it conditions the filter up to each ``t − H``).
    horizon : float
        ``H`` (s), a whole number of samples.
    window : (start, end), optional
        Predict the sample times ``start + H <= t < end`` (s; default the whole record).
    model : Problem or StochasticModel
        What to predict with: the problem (deterministic) or a :class:`StochasticModel`.
    signals : list of str, optional
        The signals to predict (default: every fitted signal in the trial).

    Returns
    -------
    pandas.DataFrame
        Columns ``time, observed, mean, sd`` for one signal, else ``observed_<s>, mean_<s>,
        sd_<s>`` per signal (SI units); ``attrs["signals"]`` names the signals.
    """
    import pandas as pd

    steps, dt = _steps(trial, float(horizon))
    start, end = window if window is not None else (None, None)
    lo = trial.time[0] + horizon if start is None else float(start) + horizon
    hi = math.inf if end is None else float(end)
    rows = np.flatnonzero((trial.time >= lo - 1e-9 * dt) & (trial.time < hi))
    rows = rows[rows >= steps]
    if rows.size == 0:
        raise OptionsError(f"predict: no sample of '{trial.name}' lies in the window {start}:{end} at "
                           f"least {horizon:g} s after the record's start ({trial.time[0]:g} s)")
    if model is None:
        raise OptionsError("predict: model is required: the problem (deterministic) or a StochasticModel")
    if isinstance(model, StochasticModel):
        names = [model.signal]
        mean, sd = _stochastic(model, trial, steps)
    else:
        names = signals or [s for s in model.fit if s in trial]
        if not names:
            raise OptionsError(f"predict: '{trial.name}' holds none of the fitted signals {', '.join(model.fit)}")
        mean, sd = _deterministic(model, result, trial, names, steps, dt)
    table = {"time": trial.time[rows]}
    for k, name in enumerate(names):
        cols = ("observed", "mean", "sd") if len(names) == 1 else tuple(f"{c}_{name}" for c in
                                                                        ("observed", "mean", "sd"))
        table[cols[0]] = np.asarray(trial[name], dtype=float)[rows]
        table[cols[1]] = mean[rows, k]
        table[cols[2]] = sd[rows, k]
    frame = pd.DataFrame(table)
    frame.attrs["signals"] = list(names)  # which signal each column group is
    return frame


def registered_model(result, trial):
    """What ``result`` predicts ``trial`` with, from its problem's module (the registered
    problem named ``result.problem``, :func:`colloc.definition.registry.problem_spec`): the
    module's ``prediction_model(result, trial)`` when it has one (a stochastic fit), else its
    ``problem([trial])``."""
    from ..definition.registry import problem_entry_points, problem_spec

    if result.problem not in problem_entry_points():
        raise OptionsError(f"predict: the result's problem '{result.problem}' is not installed; available: "
                           f"{', '.join(sorted(problem_entry_points())) or '(none)'} (or pass model=)")
    spec = problem_spec(result.problem)
    return spec.prediction_model(result, trial) if spec.prediction_model is not None else spec.problem([trial])


def _stochastic(model: StochasticModel, trial, steps: int) -> tuple[np.ndarray, np.ndarray]:
    from ..inference.kalman import k_step_predictions

    y = np.asarray(trial[model.signal], dtype=float) - model.offset
    missing = bool(np.isnan(y).any())
    mean, sd = k_step_predictions(model.model, y, dict(model.theta), steps, missing=missing)
    if model.covariance is not None and len(model.covariance[0]):
        from ..inference.kalman.robust import prediction_variance

        names, V = model.covariance
        extra = prediction_variance(model.model, y[:, None], dict(model.theta), list(names), np.asarray(V), steps,
                                    missing=missing)
        sd = np.sqrt(sd**2 + np.nan_to_num(extra))
    return mean + model.offset, sd


def _deterministic(problem, result, trial, names: list[str], steps: int, dt: float):
    """Extended Kalman filter over ``trial``, then ``steps`` model steps ahead of each sample."""
    m = problem.model
    what = f"problem '{result.problem}'"
    if m.element_names("free_input"):
        raise OptionsError(f"predict: {what} has free input(s) {', '.join(m.element_names('free_input'))} "
                           "(estimated per record) that a deterministic prediction cannot know; a stochastic "
                           "model of them (the Kalman maximum likelihood) predicts them")
    if m.delays:
        raise OptionsError(f"predict: {what} has delayed states; its prediction is not available yet")
    try:
        rhs = explicit_rhs(m)
    except ModelError as exc:  # a DAE, or a residual nonlinear in the derivatives
        raise OptionsError(f"predict: {what}: {exc}") from None
    states = m.element_names("state")
    pnames = m.element_names("parameter")
    missing = [n for n in pnames if n not in result.parameters]
    if missing:
        raise OptionsError(f"predict: the result has no value for parameter(s) {', '.join(missing)} of {what}")
    p = np.array([result.parameters[n] for n in pnames], dtype=float)
    known = m.element_names("known_input")
    nx, nu = len(states), len(known)
    x, u0, u1 = ca.SX.sym("x", nx), ca.SX.sym("u0", nu), ca.SX.sym("u1", nu)
    ps, t0 = ca.SX.sym("p", len(pnames)), ca.SX.sym("t")
    r = ca.DM.zeros(0, 1)
    h = dt / RK4_STEPS
    xk = x
    for i in range(RK4_STEPS):  # RK4 with the inputs linear over the sample interval
        a = i / RK4_STEPS

        def f(xx, frac):
            return rhs(xx, r, u0 + frac * (u1 - u0), ps, t0 + frac * dt)

        k1 = f(xk, a)
        k2 = f(xk + h / 2 * k1, a + 0.5 / RK4_STEPS)
        k3 = f(xk + h / 2 * k2, a + 0.5 / RK4_STEPS)
        k4 = f(xk + h * k3, a + 1.0 / RK4_STEPS)
        xk = xk + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    step = ca.Function("predict_step", [x, u0, u1, ps, t0], [xk, ca.jacobian(xk, x)])
    signal_fn = m.functions()["signals"]
    every = m.signal_names()
    pick = [every.index(n) for n in names]
    y = signal_fn(x, r, u0, ps, t0)[pick]
    measure = ca.Function("predict_measure", [x, u0, ps, t0], [y, ca.jacobian(y, x)])

    N = trial.num_samples
    U = np.vstack([np.asarray(trial[k], dtype=float) for k in known]) if nu else np.zeros((0, N))
    Y = np.vstack([np.asarray(trial[n], dtype=float) for n in names])
    # each signal's noise: the residual variance of the fit (its reduced χ² over the weight it was
    # fitted with), else the problem's declared noise
    verdict = result.fit_verdict
    weights = {**problem.fit, **verdict.get("weights", {})}
    chi2 = {k: v.get("chi2_red", 1.0) for k, v in verdict.get("signals", {}).items()}
    unknown = [n for n in names if not weights.get(n)]
    if unknown:
        raise OptionsError(f"predict: no noise is declared for {', '.join(unknown)} (a fit weight 1/σ²)")
    R = np.diag([chi2.get(n, 1.0) / weights[n] for n in names])
    scale = np.abs(m.scales("state")).astype(float)
    Q = np.diag((PROCESS_NOISE_PER_SQRT_S * scale) ** 2 * dt)
    # the first state: the fitted trajectory's where the fit covered this record's start, else the
    # measured values of measured states and zero for the others, with a wide covariance
    xm = np.zeros(nx)
    traj = next((f for f in result.trajectories.values() if len(f.index) and f.index[0] <= trial.time[0]
                 <= f.index[-1]), None)
    for i, s in enumerate(states):
        if traj is not None and s in traj:
            xm[i] = float(np.interp(trial.time[0], traj.index.to_numpy(), traj[s].to_numpy()))
        elif s in trial and np.isfinite(trial[s][0]):
            xm[i] = float(trial[s][0])
    P = np.diag((10.0 * scale) ** 2)
    post_m = np.empty((N, nx))
    post_P = np.empty((N, nx, nx))
    for k in range(N):  # update with y_k, then store the state given y_0 … y_k
        yk = Y[:, k]
        o = np.isfinite(yk)
        if o.any():
            yh, Hk = measure(xm, U[:, k], p, trial.time[k])
            yh, Hk = np.asarray(yh).ravel()[o], np.asarray(Hk)[o]
            S = Hk @ P @ Hk.T + R[np.ix_(o, o)]
            K = np.linalg.solve(S, Hk @ P).T
            xm = xm + K @ (yk[o] - yh)
            P = (np.eye(nx) - K @ Hk) @ P
            P = 0.5 * (P + P.T)
        post_m[k], post_P[k] = xm, P
        if k + 1 < N:
            xn, F = step(xm, U[:, k], U[:, k + 1], p, trial.time[k])
            xm, F = np.asarray(xn).ravel(), np.asarray(F)
            P = F @ P @ F.T + Q
            if not np.all(np.isfinite(xm)):
                raise OptionsError(f"predict: the state estimate of {what} left the finite range at "
                                   f"t = {trial.time[k + 1]:g} s (the identified model diverges on this record)")
    # every anchor j carried `steps` samples ahead at once (mapped over the anchors)
    J = N - steps
    many = step.map(J)
    xs, Ps = post_m[:J].T, post_P[:J]
    for i in range(steps):
        idx = np.arange(J) + i
        xn, F = many(xs, U[:, idx], U[:, idx + 1], np.repeat(p[:, None], J, axis=1), trial.time[idx][None, :])
        xs = np.asarray(xn)
        F = np.asarray(F).reshape(nx, J, nx).transpose(1, 0, 2)
        Ps = np.einsum("nij,njk,nlk->nil", F, Ps, F) + Q
    target = np.arange(J) + steps
    yh, Hs = measure.map(J)(xs, U[:, target], np.repeat(p[:, None], J, axis=1), trial.time[target][None, :])
    Hs = np.asarray(Hs).reshape(len(names), J, nx).transpose(1, 0, 2)
    S = np.einsum("nij,njk,nlk->nil", Hs, Ps, Hs) + R
    mean = np.full((N, len(names)), np.nan)
    sd = np.full((N, len(names)), np.nan)
    mean[steps:] = np.asarray(yh).T
    sd[steps:] = np.sqrt(np.clip(np.diagonal(S, axis1=1, axis2=2), 0.0, None))
    return mean, sd
