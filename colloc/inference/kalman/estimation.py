"""Maximum-likelihood estimation of the parameters: bounded, scaled, with fixed parameters,
exact AD derivatives, standard errors from the Hessian."""

from __future__ import annotations

import hashlib
import math
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import casadi as ca
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ...base.errors import CollocInputError
from .likelihood import negative_log_likelihood
from .model import LinearGaussianModel, ParameterValues

__all__ = ["MLResult", "maximum_likelihood"]


@dataclass
class MLResult:
    """The outcome of :func:`maximum_likelihood`.

    Parameters
    ----------
    parameters : dict
        Estimates, name → value, for every parameter (fixed ones at their fixed value).
    standard_errors : dict
        Standard errors of the free parameters, from the inverse of the observed Fisher
        information of the parameters off their bounds (the Hessian of the NLL at the
        estimate: exact AD with ``optimizer="ipopt"``, differences of the exact gradient with
        ``"lbfgsb"``).  NaN for a parameter on a bound, and for all if that information is not
        positive definite.
    covariance : pandas.DataFrame
        Asymptotic covariance of the free parameters (inverse observed Fisher information).
    correlation : pandas.DataFrame
        The corresponding correlation matrix.
    fisher_information : pandas.DataFrame
        Observed Fisher information of the free parameters (Hessian of the NLL).
    fisher_condition : float
        2-norm condition number of the observed Fisher information of the *relative*
        parameters ``θ_i / |θ̂_i|`` (i.e. of ``diag(|θ̂|) F diag(|θ̂|)``; a zero estimate is
        scaled by the optimisation scale instead); ``inf`` if it is not positive definite.
    nll : float
        Negative log-likelihood at the estimate.
    success : bool
        The optimizer converged (and the Fisher information is positive definite).
    iterations : int
        Optimizer iterations (summed over restarts).
    time_s : float
        Wall time of the whole fit, including building the functions and the Hessian.
    message : str
        Optimizer status and any caveat (active bounds, indefinite Hessian).
    fixed : tuple of str
        Names of the parameters held fixed.
    active_bounds : tuple of str
        Free parameters that ended on a bound (their standard errors are not meaningful).
    gradient : dict
        Gradient of the NLL at the estimate for the free parameters.
    bounds : dict
        The bounds the fit used, name → (lower, upper) (``±inf`` where none).
    newton_decrement : float
        ``½ gᵀ H⁻¹ g`` over the free parameters off the bounds: how much one more Newton step
        would lower the NLL.  Far below 1 (a fraction of one log-likelihood unit) at a
        converged estimate.
    scales : dict
        Each parameter's typical size, name → value: the optimiser's scaling (``scale``, else
        ``|theta0|``, or the bound span or 1 where ``theta0`` is 0).  How near a bound is "on" it
        is judged relative to this (:func:`colloc.results.diagnostics.diagnose`).
    transient : int or None
        Samples over which the covariance was updated before it was held (the steady-state
        likelihood, ``maximum_likelihood(transient=...)``); None: the exact filter throughout.
    """

    parameters: dict[str, float]
    standard_errors: dict[str, float]
    covariance: pd.DataFrame
    correlation: pd.DataFrame
    fisher_information: pd.DataFrame
    fisher_condition: float
    nll: float
    success: bool
    iterations: int
    time_s: float
    message: str = ""
    fixed: tuple[str, ...] = ()
    active_bounds: tuple[str, ...] = ()
    gradient: dict[str, float] = field(default_factory=dict)
    newton_decrement: float = 0.0
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    scales: dict[str, float] = field(default_factory=dict)
    transient: int | None = None

    def summary(self) -> pd.DataFrame:
        """A table of estimates and standard errors.

        Returns
        -------
        pandas.DataFrame
            Index: parameter names; columns ``estimate``, ``std_error``, ``fixed``.
        """
        rows = {
            nm: {"estimate": v, "std_error": self.standard_errors.get(nm, math.nan),
                 "fixed": nm in self.fixed}
            for nm, v in self.parameters.items()
        }
        return pd.DataFrame.from_dict(rows, orient="index")


def _resolve_fixed(model, fixed, theta0) -> dict[str, float]:
    names = model.parameter_names
    if fixed is None:
        return {}
    if isinstance(fixed, str):
        fixed = [fixed]
    if isinstance(fixed, Mapping):
        unknown = sorted(set(fixed) - set(names))
        if unknown:
            raise CollocInputError(f"maximum_likelihood: fixed names unknown parameters {unknown}; "
                                   f"the parameters are {list(names)}")
        out = {}
        for nm, v in fixed.items():
            try:
                v = float(v)
            except (TypeError, ValueError) as exc:
                raise CollocInputError(f"maximum_likelihood: fixed[{nm!r}] must be a number, got "
                                       f"{v!r}") from exc
            if not math.isfinite(v):
                raise CollocInputError(f"maximum_likelihood: fixed[{nm!r}] must be finite, got {v}")
            out[nm] = v
        return out
    if not isinstance(fixed, Iterable):
        raise CollocInputError("maximum_likelihood: fixed must be a mapping name -> value or a "
                               f"list of names, got {fixed!r}")
    fixed = list(fixed)
    unknown = sorted({str(nm) for nm in fixed if nm not in names})
    if unknown:
        raise CollocInputError(f"maximum_likelihood: fixed names unknown parameters {unknown}; "
                               f"the parameters are {list(names)}")
    return {nm: float(theta0[names.index(nm)]) for nm in fixed}


def _resolve_bounds(model, bounds) -> tuple[np.ndarray, np.ndarray]:
    names = model.parameter_names
    lb = np.full(len(names), -np.inf)
    ub = np.full(len(names), np.inf)
    if bounds is None:
        return lb, ub
    if not isinstance(bounds, Mapping):
        raise CollocInputError("maximum_likelihood: bounds must be a mapping name -> (lower, upper)")
    unknown = sorted(set(bounds) - set(names))
    if unknown:
        raise CollocInputError(f"maximum_likelihood: bounds name unknown parameters {unknown}; "
                               f"the parameters are {list(names)}")
    for nm, pair in bounds.items():
        try:
            lo, hi = pair
        except (TypeError, ValueError) as exc:
            raise CollocInputError(f"maximum_likelihood: bounds[{nm!r}] must be a pair (lower, "
                                   f"upper)") from exc
        i = names.index(nm)
        lb[i] = -np.inf if lo is None else float(lo)
        ub[i] = np.inf if hi is None else float(hi)
        if math.isnan(lb[i]) or math.isnan(ub[i]) or lb[i] > ub[i]:
            raise CollocInputError(f"maximum_likelihood: bounds[{nm!r}] = {pair!r} is not an interval")
    return lb, ub


def _resolve_scale(model, scale, theta0, lb, ub) -> np.ndarray:
    names = model.parameter_names
    out = np.abs(theta0).astype(float)
    for i in range(len(names)):
        if out[i] == 0.0:
            span = ub[i] - lb[i]
            out[i] = span if math.isfinite(span) and span > 0 else 1.0
    if scale is not None:
        if not isinstance(scale, Mapping):
            raise CollocInputError("maximum_likelihood: scale must be a mapping name -> positive number")
        unknown = sorted(set(scale) - set(names))
        if unknown:
            raise CollocInputError(f"maximum_likelihood: scale names unknown parameters {unknown}")
        for nm, v in scale.items():
            v = float(v)
            if not (math.isfinite(v) and v > 0):
                raise CollocInputError(f"maximum_likelihood: scale[{nm!r}] must be finite and > 0, got {v}")
            out[names.index(nm)] = v
    return out


def _fit_ipopt(model, data, theta, free, fixed_mask, sc, lb, ub, s, hessian, tol, max_iter, print_level):
    """One IPOPT solve of the scaled problem; returns ``(theta, iterations, status, success)``."""
    names = model.parameter_names
    Y, W = data
    N = Y.shape[1]
    free_idx = np.array(free)
    z = ca.MX.sym("z", len(free))
    p = ca.MX.sym("Y", 2 * model.num_outputs * N)  # the record and its mask, column-major: the NLP parameter
    Ysym = ca.reshape(p[:model.num_outputs * N], model.num_outputs, N)
    Wsym = ca.reshape(p[model.num_outputs * N:], model.num_outputs, N)
    pieces = [ca.MX(theta[i]) if fixed_mask[i] else z[free.index(i)] * sc[i] for i in range(len(names))]
    opts = {"print_time": False, "ipopt.print_level": int(print_level), "ipopt.sb": "yes",
            "ipopt.tol": float(tol), "ipopt.max_iter": int(max_iter)}
    if hessian == "limited-memory":
        opts["ipopt.hessian_approximation"] = "limited-memory"
    f = model.nll_function(N, s)(ca.vertcat(*pieces), Ysym, Wsym)
    solver = ca.nlpsol(f"{model.name}_ml", "ipopt", {"x": z, "p": p, "f": f}, opts)
    sol = solver(x0=theta[free_idx] / sc[free_idx], p=np.concatenate([Y.ravel(order="F"), W.ravel(order="F")]),
                 lbx=lb[free_idx] / sc[free_idx], ubx=ub[free_idx] / sc[free_idx])
    stats = solver.stats()
    theta = theta.copy()
    theta[free_idx] = np.clip(np.array(sol["x"]).ravel() * sc[free_idx], lb[free_idx], ub[free_idx])
    return (theta, int(stats.get("iter_count", 0)), str(stats.get("return_status", "")),
            bool(stats.get("success", False)))


def _gradient_function(model, N: int, s: int, compile_gradient: bool, transient: int | None = None):
    """``(theta, Y, W) -> (nll, gradient)``, compiled to C when asked (cached on disk); with
    ``transient``, the covariance held after that many samples."""
    return (model._compiled_gradient(N, s, transient) if compile_gradient
            else model._derivative("gradient", N, s, transient))


#: Gradient evaluations remembered per model (:func:`_remembered`): more than a Richardson Hessian's
#: ``4·p + 1`` for the models fitted here, so that a forward-difference Hessian's points are still
#: there when the Richardson Hessian at the same point asks for them.
REMEMBERED = 256
_REMEMBERED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _remembered(model, N: int, s: int, compile_gradient: bool, transient: int | None = None):
    """:func:`_gradient_function`'s ``(theta, Y, W) -> (nll, gradient)``, with the model's last
    :data:`REMEMBERED` evaluations kept: one asked again at the same ``theta`` (bit for bit), record,
    squarings, transient and compilation is returned without running the filter.  The fit asks for
    the same point several times: a search's end is where its NLL is reported and where the finish
    from it starts; a forward-difference Hessian's points ``θ + hᵢ eᵢ`` are half of the central
    difference ``D(hᵢ)`` of the Richardson Hessian taken at the same ``θ`` to confirm convergence
    (:func:`_newton_polish`).  The values are the function's own, so nothing the fit computes
    changes; only the repeated filter passes go."""
    store = _REMEMBERED.setdefault(model, OrderedDict())
    held: dict = {"function": None, "data": None, "digest": b""}

    def evaluate(theta, Y, W):
        if held["data"] is None or held["data"][0] is not Y or held["data"][1] is not W:
            digest = hashlib.blake2b(digest_size=16)
            for array in (Y, W):
                a = np.ascontiguousarray(array, dtype=float)
                digest.update(repr(a.shape).encode())
                digest.update(a.tobytes())
            held.update(data=(Y, W), digest=digest.digest())  # the arrays kept: their identity stays theirs
        key = (N, s, bool(compile_gradient), transient, np.asarray(theta, dtype=float).tobytes(), held["digest"])
        if key in store:
            store.move_to_end(key)
            f, g = store[key]
            return f, g.copy()
        if held["function"] is None:
            held["function"] = _gradient_function(model, N, s, compile_gradient, transient)
        f, g = held["function"](theta, Y, W)
        value = (float(f), np.array(g, dtype=float).ravel())
        store[key] = value
        if len(store) > REMEMBERED:
            store.popitem(last=False)
        return value[0], value[1].copy()
    return evaluate


#: Expected excess NLL (nats) of the steady-state likelihood over the exact one that the transient
#: is chosen for (:func:`settling_samples`): loose where the search starts (it steers L-BFGS-B while
#: the NLL still falls by thousands), tight once L-BFGS-B has ended (the Newton steps, the Hessian and
#: the estimate are those of a likelihood within this of the exact one in expectation).
SEARCH_GAP = 1.0
STEADY_GAP = 1e-6
#: The transient of a steady-state likelihood is a multiple of this many samples (fewer compiled
#: variants), and at most a quarter of the record.
TRANSIENT_QUANTUM = 250
#: Relative change of a covariance from one sample to the next below which its recursion counts as
#: converged (for 20 samples), so that its remaining terms are the last one's.
CONVERGED_RTOL = 1e-10


def _relative_change(a: np.ndarray, b: np.ndarray) -> float:
    if a.size == 1:  # one output: the same arithmetic on floats, without NumPy's per-call cost
        x, z = float(a.flat[0]), float(b.flat[0])
        return abs(x - z) / max(abs(x), abs(z), 1e-300)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(a), np.abs(b)).clip(min=1e-300)))


def settling_samples(model: LinearGaussianModel, theta: ParameterValues, num_samples: int,
                     tolerance: float = STEADY_GAP) -> int | None:
    """How many samples the filter's covariance is updated at ``theta`` before it is held
    (``transient`` of the steady-state likelihood); None for a record too short to gain from it
    (under 8 quanta).

    The smallest multiple ``T`` of :data:`TRANSIENT_QUANTUM` (at most a quarter of the record) whose
    held covariance costs at most ``tolerance`` nats of expected NLL over the exact filter: with
    the exact recursion's innovation covariances ``S_k`` and, for the filter whose gain is held at
    ``K_T`` from sample ``T`` on, the innovation covariances ``V_k = C P̃_k Cᵀ + D Dᵀ + R``
    (``P̃_{k+1} = F P̃_k Fᵀ + Q + K_T R̃ K_Tᵀ − K_T S_xᵀ − S_x K_Tᵀ``, ``F = Φ − K_T C``, ``P̃_T = P_T``),
    the excess is ``Σ_{k≥T} ½[log det S_T − log det S_k + tr(S_T⁻¹ V_k) − n_y]``, each term ≥ 0
    (``V_k ≥ S_k``: the exact filter is the optimal one).  Both the innovation variance held and the
    gain held count: a state whose initial value the filter is still learning (an integral of the
    sway) hardly moves ``S`` but keeps the gain wrong.  The recursions stop once they have converged
    (:data:`CONVERGED_RTOL`) and their last term stands for the rest.  Where no multiple passes,
    the cap; the caller checks the exact NLL at the estimate."""
    if num_samples < 8 * TRANSIENT_QUANTUM:
        return None
    cap = (num_samples // 4) // TRANSIENT_QUANTUM * TRANSIENT_QUANTUM
    d = model.discretize(theta)
    Phi, Q, C, R, Sx, P = d["Phi"], d["Q"], d["C"], d["D"] @ d["D"].T + d["R"], d["S"], d["P0"]
    ny = C.shape[0]
    logdets = np.empty(num_samples)
    held: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    last, calm, settled = None, 0, num_samples
    for k in range(num_samples):
        PC = P @ C.T
        S = C @ PC + R
        if ny == 1:
            logdets[k], K = math.log(S[0, 0]), (Phi @ PC + Sx) / S[0, 0]
        else:
            logdets[k], K = np.linalg.slogdet(S)[1], np.linalg.solve(S.T, (Phi @ PC + Sx).T).T
        if k % TRANSIENT_QUANTUM == 0 and 0 < k <= cap:
            held[k] = (P, K, S)
        calm = calm + 1 if last is not None and _relative_change(S, last) < CONVERGED_RTOL else 0
        last = S
        if calm >= 20:  # converged: the later samples (and transients) have this covariance
            logdets[k + 1:], settled = logdets[k], k
            held.update({T: (P, K, S) for T in range(TRANSIENT_QUANTUM, cap + 1, TRANSIENT_QUANTUM) if T > k})
            break
        P = Phi @ P @ Phi.T + Q - K @ S @ K.T
        P = 0.5 * (P + P.T)
    for T in range(TRANSIENT_QUANTUM, cap + 1, TRANSIENT_QUANTUM):
        Pt, K, S_T = held[T]
        S_inv, logdet_T = np.linalg.inv(S_T), logdets[T]
        F = Phi - K @ C
        noise = Q + K @ R @ K.T - K @ Sx.T - Sx @ K.T
        gap, last, calm = 0.0, None, 0
        for k in range(T, num_samples):
            V = C @ Pt @ C.T + R
            spread = V[0, 0] * S_inv[0, 0] if ny == 1 else float(np.trace(S_inv @ V))
            term = 0.5 * (logdet_T - logdets[k] + spread - ny)
            gap += term
            if gap > tolerance:
                break
            calm = calm + 1 if k >= settled and last is not None and _relative_change(V, last) < CONVERGED_RTOL else 0
            last = V
            if calm >= 20:
                gap += term * (num_samples - 1 - k)
                break
            Pt = F @ Pt @ F.T + noise
        if gap <= tolerance:
            return T
    return cap


def exact_newton_decrement(model: LinearGaussianModel, y: ArrayLike, fit: MLResult, *, compiled: bool = False,
                           missing: bool = False) -> tuple[float, float]:
    """``(NLL, ½ gᵀ H⁻¹ g)`` at ``fit``'s estimate with ``g`` the gradient of the *exact* filter's NLL
    and ``H`` the fit's observed information, over the parameters off their bounds: how much one
    Newton step on the exact likelihood would still lower it.  A fit of the steady-state
    likelihood (``transient``) whose decrement is far below 1 (the convergence threshold of
    :func:`maximum_likelihood` is :data:`CONVERGED_DECREMENT`) is an estimate of the exact one; a
    constant offset between the two NLLs (a slowly settling state) does not move it."""
    Y = model.data_matrix(y, missing)
    data = model.observed(Y)
    names = model.parameter_names
    theta = np.array([fit.parameters[k] for k in names], dtype=float)
    nll, g = _remembered(model, Y.shape[1], model.squarings(theta) + 1, compiled)(theta, *data)
    g = np.array(g).ravel()
    inner = [k for k in fit.fisher_information.index if k not in fit.active_bounds]
    if not inner:
        return float(nll), 0.0
    H = fit.fisher_information.loc[inner, inner].to_numpy(dtype=float)
    gi = g[[names.index(k) for k in inner]]
    try:
        return float(nll), float(0.5 * gi @ np.linalg.solve(H, gi))
    except np.linalg.LinAlgError:
        return float(nll), math.inf


def _hessian_by_differences(gradient, theta, data, steps, kind: str = "richardson"):
    """The Hessian of the NLL by differences of its exact AD gradient, Richardson-extrapolated
    (``kind="richardson"``, for the standard errors), central (``"central"``: ``D(hᵢ)`` alone,
    2·(free parameters) gradients) or forward (``"forward"``: ``(g(θ + hᵢ eᵢ) − g(θ)) / hᵢ``,
    one gradient a parameter, for the Newton steps, whose convergence is then judged on the
    central one).

    Column ``i`` is ``(4 D(hᵢ/2) − D(hᵢ)) / 3`` with the central difference
    ``D(h) = (g(θ + h eᵢ) − g(θ − h eᵢ)) / 2h``, symmetrised.  With ``hᵢ`` = 4e-3 of the
    parameter's magnitude (:func:`_steps`) it agrees with the AD Hessian to ~1e-10 (relative to
    √(H_ii H_jj)) on the CIP with PID control, and to ~3e-4 with a Padé feedback delay, whose
    gradient carries rounding noise (smaller steps make it worse); either is far below what
    standard errors need.  It costs 4·(free parameters) gradients, against an AD Hessian whose
    construction alone takes 2-13 s on these models.  Returns ``(nll, g, H)``.
    """
    f, g = gradient(theta, *data)
    n = theta.size
    H = np.full((n, n), np.nan)

    def central(i, h):
        e = np.zeros(n)
        e[i] = h
        return (np.array(gradient(theta + e, *data)[1]).ravel()
                - np.array(gradient(theta - e, *data)[1]).ravel()) / (2 * h)

    def forward(i, h):
        e = np.zeros(n)
        e[i] = h
        return (np.array(gradient(theta + e, *data)[1]).ravel() - np.array(g).ravel()) / h

    for i, h in steps.items():
        if kind == "forward":
            H[:, i] = forward(i, h)
        elif kind == "central":
            H[:, i] = central(i, h)
        else:
            H[:, i] = (4.0 * central(i, h / 2) - central(i, h)) / 3.0
    idx = list(steps)
    block = H[np.ix_(idx, idx)]
    H[np.ix_(idx, idx)] = 0.5 * (block + block.T)
    return float(f), np.array(g).ravel(), H


#: Relative NLL change below which the optimisation stops: L-BFGS-B once its best NLL has not
#: fallen by more than this (times ``max(1, |NLL|)``) over :data:`STALL_EVALUATIONS` evaluations,
#: and a Newton step that would lower it by less is not taken.  It is the NLL's own rounding
#: noise: the sum of N terms of a long record is known to ~1e-10 of its size (with a Padé
#: delay, differences of the 6000-sample COP record's NLL below ~1e-5 in 7e4 are noise); the
#: estimate it leaves is within √(2·1e-10·|NLL|) ≲ 0.005 standard errors of the optimum.
STALL_RTOL = 1e-10
#: Evaluations over which L-BFGS-B must make progress (more than a line search's usual few).
STALL_EVALUATIONS = 10
#: Newton decrement (nats) the Newton steps aim below (:func:`_newton_polish`): the estimate is then
#: within √(2·1e-3) ≈ 0.045 standard errors of the optimum.
AIM_DECREMENT = 1e-3
#: Largest Newton decrement (nats) at the estimate that is accepted as converged: one more Newton
#: step would move it by √(2·0.005) = 0.1 standard errors (in the metric of the observed
#: information), which no conclusion drawn from the estimate can see.  Between this and
#: :data:`AIM_DECREMENT` lie estimates whose last step the NLL's evaluation noise hides: BDS00012's
#: PD-delay fit of the whole 60 s (|NLL| 8.4e4, evaluation noise SD ≈ 7e-4 nats) stopped at 0.00115,
#: and the exact filter's refit from there at 0.00115 again.
CONVERGED_DECREMENT = 5e-3
#: Relative evaluation noise of the NLL below which a Newton step's change of it is not seen: the
#: sway models' NLL of a 60 s, 100 Hz COP record (``sway-lp``, PID, BDS00011 near its optimum) varies
#: by up to 3e-3 nats (SD 7e-4) of 8.4e4 under relative parameter changes of 1e-7 that move it by
#: less than 1e-6, while its exact gradient stays smooth (a sum over thousands of samples of
#: innovations that are 1e-6 of the states' sizes).  A Newton step whose NLL rises by less than this
#: is taken when the gradient shows it nearer the optimum (:func:`_newton_polish`); a decrease below
#: it (≲ 0.01 nats, ≈ 0.1 standard errors) is not statistically visible either.
NOISE_RTOL = 1e-7
#: L-BFGS-B hands over to the Newton steps once its best NLL has not fallen by more than this
#: (times ``max(1, |NLL|)``) in :data:`STALL_EVALUATIONS` evaluations: the NLL's evaluation noise
#: (SD ≈ 8e-9 of |NLL| on the sway models, :data:`NOISE_RTOL`); below it the search follows the
#: noise, and the Newton steps, judged on the exact gradient's decrement, finish.
SEARCH_STALL_RTOL = 1e-8


class _Stalled(Exception):
    """L-BFGS-B made no progress beyond the NLL's noise (:data:`STALL_RTOL`)."""


def _newton_polish(hessian, at, fun, z, free_idx, chain, logs, lo, hi, max_steps: int = 8,
                   rtol: float = STALL_RTOL, fine_hessian=None):
    """Projected Newton steps in the optimiser's variables ``z`` (θ a function of z with
    derivative ``chain(z)``, linear or exponential) off their bounds; ``hessian(θ)`` gives
    ``(nll, gradient, Hessian)`` in θ.  ``fine_hessian`` (optional, the same, more accurate and
    dearer): where the cheap Hessian's step does not lower the NLL, its decrement says
    "converged" or it has negative curvature, the decision is taken again with the fine one (in a
    narrow ridge a forward difference's error turns the Newton step, or makes the Hessian
    indefinite: on BDS00010's whole record, PD-delay, the saddle steps it sent back to L-BFGS-B
    left every start short of convergence, and the exact filter's refit then cost 26 of 34 s).

    A step is taken while it would lower the NLL by more than ``rtol·max(1, |NLL|)`` (and 1e-9); it
    is accepted where the NLL falls, or, when the step's decrement exceeds 1e-3 (the convergence
    threshold), where it rises by less than its evaluation noise (:data:`NOISE_RTOL`, or three
    times the SD measured there, :func:`_evaluation_noise`, where that is larger) while the Newton
    decrement of the gradient there, under the same Hessian, is at most a quarter of the step's (a
    decrease hidden by that noise).
    Returns ``(z, steps, saddle, converged)``; ``saddle`` is True when the Hessian had negative
    curvature and one step was taken downhill along it (the caller then goes back to the
    quasi-Newton); ``converged`` when the last Newton step would lower the NLL by less than that
    (or by at most 1e-3, the caller's threshold, where no step lowered it).
    """
    steps = 0
    fine = fine_hessian is None
    noise = None  # the NLL's evaluation noise here (_evaluation_noise), measured once where needed
    for _ in range(max_steps):
        f, g, H = (hessian if fine_hessian is None or not fine else fine_hessian)(at(z))
        J = chain(z)
        curvature = np.where(logs, J, 0.0)  # d²θ/dz²: θ for the log-space ones, 0 for the others
        g = g[free_idx]
        H = H[np.ix_(free_idx, free_idx)] * np.outer(J, J) + np.diag(g * curvature)
        g = g * J
        inner = np.flatnonzero(np.minimum(z - lo, hi - z) > 1e-9 * np.maximum(1.0, np.abs(z)))
        if not inner.size:
            return z, steps, False, True
        if not np.all(np.isfinite(H)):
            return z, steps, False, False
        w, V = np.linalg.eigh(0.5 * (H[np.ix_(inner, inner)] + H[np.ix_(inner, inner)].T))
        saddle = bool(w.min() <= 0)
        if saddle and not fine:  # negative curvature: confirmed by the fine Hessian first
            fine = True
            continue
        if saddle:  # downhill along the most negative curvature, as far as the bounds allow
            v = V[:, 0] * (-1.0 if float(g[inner] @ V[:, 0]) > 0 else 1.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                reach = np.where(v > 0, (hi[inner] - z[inner]) / v,
                                 np.where(v < 0, (lo[inner] - z[inner]) / v, np.inf))
            step = v * min(float(np.min(reach)), 1.0)
        else:
            step = -(V @ ((V.T @ g[inner]) / w))
            decrement = -0.5 * float(g[inner] @ step)
            if not (decrement > max(1e-9, rtol * max(1.0, abs(float(f))))):
                if not fine:  # confirmed by the fine Hessian
                    fine = True
                    continue
                return z, steps, False, True
        for t in (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125):
            trial = z.copy()
            trial[inner] = np.clip(z[inner] + t * step, lo[inner], hi[inner])
            f_trial, g_trial = fun(trial)
            # lower, or, where the step matters for convergence (a decrement above the caller's 1e-3)
            # and the NLL's own evaluation noise hides a decrease this small, not higher beyond that
            # noise while the exact gradient says the optimum is nearer: its Newton decrement under
            # this Hessian at most a quarter of the one it started from.  The noise is NOISE_RTOL of
            # the NLL, or three times the SD measured here where that is larger
            closer = (not saddle and decrement > AIM_DECREMENT and f_trial >= f
                      and 0.5 * float(np.sum((V.T @ g_trial[inner]) ** 2 / w)) <= 0.25 * decrement)
            if closer and f_trial >= f + NOISE_RTOL * max(1.0, abs(float(f))):
                if noise is None:
                    noise = _evaluation_noise(fun, z, float(f), g, lo, hi)
                closer = f_trial < f + 3.0 * noise
            if f_trial < f or closer:
                z, steps = trial, steps + 1
                break
        else:
            if not fine:
                fine = True
                continue
            return z, steps, False, (not saddle) and decrement <= AIM_DECREMENT
        fine = fine_hessian is None
        if saddle:
            return z, steps, True, False
    return z, steps, False, False


def _evaluation_noise(fun, z, f: float, g: np.ndarray, lo, hi, draws: int = 6) -> float:
    """SD of the NLL's evaluation noise at ``z`` (optimiser variables; ``f, g`` its value and
    gradient there): the spread of its departures from the linear change ``g·d`` over ``draws``
    seeded perturbations ``d`` of 1e-7 of each variable's size, far below the reach of any
    curvature.  On BDS00012's whole record, PD-delay near its optimum (|NLL| 8.4e4), SD 0.02 nats,
    where :data:`NOISE_RTOL` allows 0.0084: the filter's rounding, amplified where the COP noise σ
    is 10⁶ times below the sway (with Φ and Q within 3e-13 and 2e-15 of a 35-digit exponential it
    stays 0.02; perturbing σ alone moves the NLL by 1e-5)."""
    rng = np.random.default_rng(20261129)
    out = []
    for _ in range(draws):
        trial = np.clip(z + 1e-7 * np.maximum(1.0, np.abs(z)) * rng.standard_normal(z.size), lo, hi)
        f_trial, _ = fun(trial)
        out.append(f_trial - f - float(g @ (trial - z)))
    return float(np.std(out, ddof=1))


def _outside(z, lowest: dict) -> tuple[float, np.ndarray]:
    """The value and gradient L-BFGS-B is given at a point where the likelihood does not exist (an
    unstable closed loop: the innovation covariance is not positive definite): a bowl around the
    lowest point so far, ``f_low + 1e-6·|f_low| + s·|z − z_low|²`` with ``s`` the likelihood's
    gradient norm there.  Above the lowest value and rising away from it, so that the line search
    takes a shorter step back towards it.  (A huge value with a zero gradient, as before, made the
    line search end at its first trial step: on BDS00010's first 57.5 s, the PD-delay fit's first
    start, and a start added near a better optimum, ended where they began, 2·10⁴ and 131 nats above
    the optimum.)"""
    if lowest["z"] is None:  # no point with a likelihood yet: nothing to come back to
        return 1e300, np.zeros_like(z)
    d = np.asarray(z, dtype=float) - lowest["z"]
    s = lowest["slope"]
    return (lowest["f"] + 1e-6 * max(1.0, abs(lowest["f"])) + s * float(d @ d)), 2.0 * s * d


def _steps(theta, free_idx, sc) -> dict:
    """Difference steps: 4e-3 of each free parameter's magnitude (of its scale where it is 0)."""
    return {int(i): 4e-3 * (abs(theta[i]) if theta[i] != 0 else sc[i]) for i in free_idx}


def _run_lbfgsb(fun, z, lo, hi, max_iter, stall: bool):
    """SciPy's L-BFGS-B from ``z``; with ``stall``, stopped once its best NLL has not fallen by
    more than :data:`SEARCH_STALL_RTOL` (relative) in :data:`STALL_EVALUATIONS` evaluations.  Returns
    ``(z, iterations, status, success, stalled)``."""
    from scipy.optimize import minimize

    best = {"f": math.inf, "z": z}
    history: list[float] = []
    iterations = [0]

    def watched(z_):
        f, g = fun(z_)
        if f < best["f"]:
            best["f"], best["z"] = f, np.array(z_, dtype=float)
        history.append(best["f"])
        if (stall and len(history) > STALL_EVALUATIONS and math.isfinite(history[-1 - STALL_EVALUATIONS])
                and history[-1 - STALL_EVALUATIONS] - history[-1] <= SEARCH_STALL_RTOL * max(1.0, abs(history[-1]))):
            raise _Stalled
        return f, g

    def count(*_):
        iterations[0] += 1

    try:
        res = minimize(watched, z, jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi)), callback=count,
                       options={"maxiter": int(max_iter) * 5, "maxfun": int(max_iter) * 10, "ftol": 1e-15,
                                "gtol": 1e-9})
    except _Stalled:
        status = (f"L-BFGS-B: no decrease beyond {SEARCH_STALL_RTOL:g}·|NLL| (the NLL's evaluation noise) in "
                  f"{STALL_EVALUATIONS} evaluations")
        return np.clip(best["z"], lo, hi), iterations[0], status, True, True
    # an "ABNORMAL" line-search stop happens at the limits of precision near an optimum: the
    # Newton steps and the caller's Newton decrement decide
    return (np.clip(res.x, lo, hi), int(res.nit), f"L-BFGS-B: {res.message}",
            bool(res.success) or "ABNORMAL" in str(res.message), False)


def _fit_lbfgsb(model, data, theta, free_idx, sc, lb, ub, s, max_iter, compile_gradient, transient=None,
                last_hessian=None, settle=None, search_only=False, searched=False):
    """L-BFGS-B with the exact gradient, then projected Newton steps with the forward-difference
    Hessian (Richardson's to confirm convergence); returns ``(theta, iterations, status, success)``.
    ``last_hessian`` (a dict, if given) receives the last Richardson Hessian: ``theta``,
    ``squarings`` and ``value`` (``(nll, gradient, Hessian)``), so that the caller need not
    recompute it at the estimate.  ``settle`` (optional, ``θ -> transient``): once L-BFGS-B has
    ended, the transient is chosen again at its point and the rest (Newton steps, Hessians) uses
    that one.  ``search_only``: L-BFGS-B alone, from ``theta`` once.  ``searched``: ``theta`` is where
    L-BFGS-B stalled already (a search of the same likelihood): the Newton steps first, and L-BFGS-B
    only where they cannot finish.  Returns also the transient used last."""
    used = {"transient": transient,
            "gradient": _remembered(model, data[0].shape[1], s, compile_gradient, transient)}

    def gradient(*args):
        return used["gradient"](*args)
    theta = theta.copy()
    # parameters bounded away from 0 move in log space (scale-free steps along ridges such as a
    # time constant and an amplitude growing together); the others in units of their scale
    logs = lb[free_idx] > 0
    zs = np.where(logs, 1.0, sc[free_idx])
    lo = np.where(logs, np.log(np.where(logs, lb[free_idx], 1.0)), lb[free_idx] / zs)
    hi = np.where(logs, np.log(np.where(logs, ub[free_idx], 1.0)), ub[free_idx] / zs)

    def values(z):
        return np.where(logs, np.exp(np.where(logs, z, 0.0)), z * zs)

    def at(z):
        full = theta.copy()
        full[free_idx] = np.clip(values(z), lb[free_idx], ub[free_idx])
        return full

    def chain(z):  # d theta / d z
        return np.where(logs, values(z), zs)

    lowest: dict = {"f": math.inf, "z": None, "slope": 1.0}

    def fun(z):
        f, g = gradient(at(z), *data)
        f = float(f)
        if not math.isfinite(f):  # an innovation covariance not positive definite (an unstable loop)
            return _outside(z, lowest)
        g = np.array(g).ravel()[free_idx] * chain(z)
        if f < lowest["f"]:
            lowest.update(f=f, z=np.array(z, dtype=float), slope=max(float(np.linalg.norm(g)), 1.0))
        return f, g

    def hessian(th):  # forward differences: the Newton steps' Hessian
        return _hessian_by_differences(gradient, th, data, _steps(th, free_idx, sc), "forward")

    def fine_hessian(th):  # Richardson's: where the forward one is not trusted, and the standard errors'
        value = _hessian_by_differences(gradient, th, data, _steps(th, free_idx, sc))
        if last_hessian is not None:
            last_hessian.update(theta=th.copy(), squarings=s, transient=used["transient"], value=value)
        return value

    z = np.where(logs, np.log(np.where(logs, theta[free_idx], 1.0)), theta[free_idx] / zs)
    iterations, status, success = 0, "", False
    stall = True  # hand over to Newton once L-BFGS-B stalls; off again if Newton cannot finish
    for _round in range(4):  # L-BFGS-B, then Newton; a saddle point sends it back to L-BFGS-B
        skipped = searched and _round == 0
        if skipped:  # the search that ended at theta was this L-BFGS-B run, stopped by its stall rule
            its, status, success, stalled = 0, "Newton steps from the end of the search", True, True
        else:
            z, its, status, success, stalled = _run_lbfgsb(fun, z, lo, hi, max_iter, stall)
        iterations += its
        if search_only:
            return at(z), iterations, status, False, used["transient"]
        if settle is not None and _round == 0:  # the transient for the likelihood near its optimum
            again = settle(at(z))
            if again != used["transient"]:
                used.update(transient=again,
                            gradient=_remembered(model, data[0].shape[1], s, compile_gradient, again))
                status += f"; transient {transient} -> {again} samples at its end"
        z, steps, saddle, converged = _newton_polish(hessian, at, fun, z, free_idx, chain, logs, lo, hi,
                                                     fine_hessian=fine_hessian)
        iterations += steps
        if steps:
            status += f"; {steps} Newton step(s)"
        if saddle:
            status += " (left a saddle point along its negative curvature)"
            continue
        if stalled and not converged:
            stall = skipped  # L-BFGS-B as a search ends first; without its stall rule after that
            continue
        break
    return at(z), iterations, status, success, used["transient"]


def maximum_likelihood(
    model: LinearGaussianModel,
    y: ArrayLike,
    theta0: ParameterValues,
    *,
    bounds: Mapping[str, tuple[float | None, float | None]] | None = None,
    fixed: Mapping[str, float] | Iterable[str] | None = None,
    scale: Mapping[str, float] | None = None,
    hessian: str = "limited-memory",
    tol: float = 1e-10,
    max_iter: int = 200,
    print_level: int = 0,
    optimizer: str = "ipopt",
    compiled: bool = False,
    missing: bool = False,
    transient: int | str | None = None,
    search_only: bool = False,
    searched: bool = False,
) -> MLResult:
    """Exact maximum-likelihood estimate by the Kalman prediction-error method.

    By default (``optimizer="ipopt"``) the free parameters are optimised in scaled form
    ``z = θ / scale`` by IPOPT with the exact AD gradient and IPOPT's limited-memory (L-BFGS)
    Hessian: on the 6000-sample CIP record it needs 25–65 iterations against 6–15 with the
    exact AD Hessian, yet is about 1.5–3 times faster overall, because one exact Hessian costs
    about as much as 13 gradients (and IPOPT must first build it).  ``optimizer="lbfgsb"`` is
    faster still on long records (see below).  The number of squarings of the matrix
    exponential is chosen at ``theta0`` with one in reserve; if the estimate needs more, the
    fit is restarted from it with more.  Standard errors come from the inverse of the observed
    Fisher information of the parameters off their bounds.

    Parameters
    ----------
    model : LinearGaussianModel
        The model.
    y : array-like
        The record, shape ``(N, num_outputs)`` (or ``(N,)`` for one output), finite unless
        ``missing``.
    theta0 : array-like or mapping
        Initial guess (``parameter_names`` order, or name → value).
    bounds : mapping, optional
        ``name -> (lower, upper)``, ``None`` for no bound on that side.  Use a positive lower
        bound for standard deviations (or parameterise ``log σ``).  ``theta0`` must lie
        within the bounds.  Bounds of fixed parameters are ignored.
    fixed : mapping or iterable of str, optional
        Parameters held fixed: ``name -> value``, or names (held at their ``theta0`` value).
    scale : mapping, optional
        ``name -> typical magnitude`` for the optimiser scaling; default ``|theta0|`` (or the
        bound span, or 1, where ``theta0`` is zero).
    hessian : {"limited-memory", "exact"}, optional
        IPOPT Hessian: L-BFGS (default) or the exact AD Hessian (fewer, dearer iterations).
        The standard errors always use the exact Hessian.
    tol : float, optional
        IPOPT tolerance (on the scaled problem).
    max_iter : int, optional
        IPOPT iteration limit (per restart).
    print_level : int, optional
        IPOPT output level (0 silent).
    optimizer : {"ipopt", "lbfgsb"}, optional
        ``"ipopt"`` (default): IPOPT with the Hessian chosen by ``hessian``.  ``"lbfgsb"``:
        SciPy's L-BFGS-B with the exact AD gradient (parameters with a positive lower bound
        in log space, the others scaled), then projected Newton steps; a saddle point (the
        Hessian not positive definite) is left along its negative curvature and L-BFGS-B
        restarted.  L-BFGS-B hands over to Newton once its NLL stops falling beyond the NLL's
        evaluation noise (:data:`SEARCH_STALL_RTOL`); Newton steps stop once they would lower it by
        less than :data:`STALL_RTOL`.  The Newton
        steps' Hessians are forward differences of the exact gradient (one gradient a
        parameter), the standard errors' Richardson-extrapolated central ones at the estimate
        (:func:`_hessian_by_differences`): the AD Hessian of a long record costs 2-13 s to
        build.  On a 30 s, 100 Hz real COP record it reaches IPOPT's NLL for the PID and
        PID + delay models, and a lower one (by 1.2) for PD + delay, where IPOPT stops at its
        iteration limit.
    compiled : bool, optional
        Evaluate the gradient (``"lbfgsb"``) from C code compiled with the system compiler
        and cached on disk (:func:`colloc.base.compiler.compiled`; one compilation per
        model, record length and squaring count, about 2 s).  Without a compiler it warns
        and runs uncompiled.
    missing : bool, optional
        NaN in ``y`` marks a value not measured (gaps, or an output at a lower rate): the
        exact likelihood of the measured values (:func:`negative_log_likelihood`).
    transient : int or "auto", optional
        ``optimizer="lbfgsb"`` on a complete record: update the filter's covariance over the
        first ``transient`` samples only and hold it for the rest (O(n²) a sample instead of
        O(n³): the gain computed once for the held part; the filter's adjoint with a held
        covariance, an exact gradient), the steady-state likelihood, equal to the exact one once
        the Riccati recursion has settled.  ``"auto"``: :func:`settling_samples` at ``theta0``
        with the search's tolerance :data:`SEARCH_GAP`, and again, with :data:`STEADY_GAP`, where
        L-BFGS-B ends (the Newton steps, Hessians and standard errors use that one); the full
        filter for a record under 8 quanta.  Default None: the exact filter throughout.  The
        caller checks the exact NLL at the estimate (``MLResult.transient`` says what was used
        last).
    search_only : bool, optional
        ``optimizer="lbfgsb"``: the L-BFGS-B search alone, without the Newton steps, the Hessian
        and the standard errors (NaN; ``success`` False): where it ends and its NLL, to choose
        among several starts which to finish.
    searched : bool, optional
        ``optimizer="lbfgsb"``: ``theta0`` is where a ``search_only`` fit of the same likelihood
        ended (its L-BFGS-B stalled there): the fit starts with the Newton steps, with the transient
        chosen at ``theta0`` as where L-BFGS-B ends, and runs L-BFGS-B again only where they cannot
        finish (a saddle point, or no convergence), instead of an L-BFGS-B run that would spend its
        first :data:`STALL_EVALUATIONS` evaluations finding the stall again.

    Returns
    -------
    MLResult
    """
    start = time.perf_counter()
    if optimizer not in ("ipopt", "lbfgsb"):
        raise CollocInputError(f"maximum_likelihood: optimizer must be 'ipopt' or 'lbfgsb', got {optimizer!r}")
    if hessian not in ("exact", "limited-memory"):
        raise CollocInputError("maximum_likelihood: hessian must be 'exact' or 'limited-memory', "
                               f"got {hessian!r}")
    if not (tol > 0):
        raise CollocInputError(f"maximum_likelihood: tol must be > 0, got {tol!r}")
    Y = model.data_matrix(y, missing)
    data = model.observed(Y)
    theta = model.parameter_vector(theta0).copy()
    names = model.parameter_names
    fixed_values = _resolve_fixed(model, fixed, theta)
    for nm, v in fixed_values.items():
        theta[names.index(nm)] = v
    lb, ub = _resolve_bounds(model, bounds)
    free = [i for i, nm in enumerate(names) if nm not in fixed_values]
    if not free:
        raise CollocInputError("maximum_likelihood: every parameter is fixed; nothing to estimate")
    outside = [names[i] for i in free if not (lb[i] <= theta[i] <= ub[i])]
    if outside:
        raise CollocInputError(f"maximum_likelihood: theta0 lies outside the bounds for {outside}")
    sc = _resolve_scale(model, scale, theta, lb, ub)
    free_idx = np.array(free)
    fixed_mask = np.ones(len(names), bool)
    fixed_mask[free_idx] = False

    s = model.squarings(theta) + 1
    settle = None
    held: int | None = None  # the transient in use
    if transient == "auto":
        if optimizer == "lbfgsb" and not missing:
            chosen: dict[tuple, int | None] = {}

            def settled(th, tolerance):  # once per point (to 12 digits: θ through its log and back)
                key = (tolerance, *(f"{v:.12g}" for v in th))
                if key not in chosen:
                    chosen[key] = settling_samples(model, th, Y.shape[1], tolerance)
                return chosen[key]
            held = settled(theta, STEADY_GAP if searched else SEARCH_GAP)
            if held is not None:
                def settle(th):
                    return settled(th, STEADY_GAP)
    elif transient is not None:
        held = int(transient)
        if optimizer != "lbfgsb" or missing or not 0 < held < Y.shape[1] - 1:
            raise CollocInputError(f"maximum_likelihood: transient={held} needs optimizer='lbfgsb', a record "
                                   f"without missing samples and 0 < transient < {Y.shape[1] - 1}")
    if optimizer == "lbfgsb" and compiled:  # the compiled gradient the fit starts with, not the VM's NLL
        f0 = float(_remembered(model, Y.shape[1], s, compiled, held)(theta, *data)[0])
    else:
        f0 = negative_log_likelihood(model, Y.T, theta, missing=missing)
    if not math.isfinite(f0):
        raise CollocInputError("maximum_likelihood: the NLL is not finite at theta0 (an innovation "
                               "covariance is not positive definite; is a noise variance zero?)")

    last_hessian: dict = {}
    iterations = 0
    status = ""
    success = False
    for _restart in range(4):
        if optimizer == "ipopt":
            theta, its, status, success = _fit_ipopt(model, data, theta, free, fixed_mask, sc, lb, ub, s, hessian,
                                                     tol, max_iter, print_level)
        else:
            theta, its, status, success, held = _fit_lbfgsb(model, data, theta, free_idx, sc, lb, ub, s, max_iter,
                                                            compiled, held, last_hessian, settle,
                                                            search_only and optimizer == "lbfgsb",
                                                            searched and not search_only and _restart == 0)
        iterations += its
        needed = model.squarings(theta)
        if needed <= s:
            break
        s = needed + 1
    else:
        success = False
        status += "; the matrix exponential kept needing more squarings"

    if search_only and optimizer == "lbfgsb":
        free_names = [names[i] for i in free]
        nan_frame = pd.DataFrame(np.nan, index=free_names, columns=free_names)
        nll = float(_remembered(model, Y.shape[1], s, compiled, held)(theta, *data)[0])
        return MLResult(parameters={nm: float(v) for nm, v in zip(names, theta)},
                        standard_errors={nm: math.nan for nm in free_names}, covariance=nan_frame,
                        correlation=nan_frame.copy(), fisher_information=nan_frame.copy(), fisher_condition=math.inf,
                        nll=nll if math.isfinite(nll) else math.inf, success=False, iterations=iterations,
                        time_s=time.perf_counter() - start, message=status + "; the search alone (search_only)",
                        fixed=tuple(nm for nm in names if nm in fixed_values), newton_decrement=math.nan,
                        bounds={nm: (float(lo), float(hi)) for nm, lo, hi in zip(names, lb, ub)},
                        scales={nm: float(v) for nm, v in zip(names, sc)},
                        transient=held)
    if optimizer == "lbfgsb":
        s = max(s, model.squarings(theta))
        # Richardson's Hessian: with two estimates correlated at 0.998 (a disturbance's intensity and
        # time constant) a plain central difference's O(h²) error moves their standard errors by ~6 %
        if (last_hessian.get("squarings") == s and last_hessian.get("transient") == held
                and np.array_equal(last_hessian["theta"], theta)):
            nll, grad, H = last_hessian["value"]  # the Newton steps' last Richardson Hessian is at the estimate
        else:
            gradient = _remembered(model, Y.shape[1], s, compiled, held)
            nll, grad, H = _hessian_by_differences(gradient, theta, data, _steps(theta, free_idx, sc))
    else:
        nll, grad, H = negative_log_likelihood(model, Y.T, theta, hessian=True, missing=missing)
    free_names = [names[i] for i in free]
    Hf = H[np.ix_(free_idx, free_idx)]
    Hf = 0.5 * (Hf + Hf.T)
    gf = grad[free_idx]
    messages = [status]
    near = 1e-6 * sc
    active = tuple(names[i] for i in free if theta[i] - lb[i] <= near[i] or ub[i] - theta[i] <= near[i])
    if active:
        messages.append(f"parameters on a bound: {list(active)} (no standard errors for them; the others' "
                        "are conditional on the bound)")
    # the covariance of the parameters off their bounds (inverse of their observed information)
    inner = [j for j, nm in enumerate(free_names) if nm not in active]
    cov = np.full_like(Hf, np.nan)
    cond = math.inf
    rel = np.where(theta[free_idx] != 0.0, np.abs(theta[free_idx]), sc[free_idx])
    if not inner:
        pass
    elif np.all(np.isfinite(Hf)):
        ix = np.ix_(inner, inner)
        Hrel = Hf[ix] * np.outer(rel[inner], rel[inner])
        w = np.linalg.eigvalsh(Hrel)
        if w.min() > 0:
            cond = float(w.max() / w.min())
            # invert in relative units (better conditioned), then scale back
            block = np.linalg.inv(Hrel) * np.outer(rel[inner], rel[inner])
            cov[ix] = 0.5 * (block + block.T)
        else:
            messages.append("the observed Fisher information is not positive definite: no standard errors")
            success = False
    else:
        messages.append("the Hessian at the estimate is not finite")
        success = False
    se = np.sqrt(np.diag(cov))
    with np.errstate(invalid="ignore"):
        corr = cov / np.outer(se, se)
    # predicted NLL decrease of one more Newton step in the parameters off the bounds
    decrement = 0.0
    if inner:
        Hi = Hf[np.ix_(inner, inner)]
        gi = gf[inner]
        try:
            decrement = float(0.5 * gi @ np.linalg.solve(Hi, gi)) if np.all(np.isfinite(Hi)) else math.nan
        except np.linalg.LinAlgError:
            decrement = math.nan
    if not (decrement <= CONVERGED_DECREMENT):
        messages.append(f"one more Newton step would lower the NLL by {decrement:.3g} (it would move the estimate "
                        f"by {math.sqrt(2 * decrement):.2g} standard errors): not converged")
        if optimizer == "lbfgsb":
            success = False
    return MLResult(
        parameters={nm: float(v) for nm, v in zip(names, theta)},
        standard_errors={nm: float(v) for nm, v in zip(free_names, se)},
        covariance=pd.DataFrame(cov, index=free_names, columns=free_names),
        correlation=pd.DataFrame(corr, index=free_names, columns=free_names),
        fisher_information=pd.DataFrame(Hf, index=free_names, columns=free_names),
        fisher_condition=cond,
        nll=float(nll),
        success=success,
        iterations=iterations,
        time_s=time.perf_counter() - start,
        message="; ".join(m for m in messages if m),
        fixed=tuple(nm for nm in names if nm in fixed_values),
        active_bounds=active,
        gradient={nm: float(v) for nm, v in zip(free_names, gf)},
        newton_decrement=decrement,
        bounds={nm: (float(lo), float(hi)) for nm, lo, hi in zip(names, lb, ub)},
        scales={nm: float(v) for nm, v in zip(names, sc)},
        transient=held,
    )
