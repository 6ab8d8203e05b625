"""Maximum-likelihood estimation of the parameters: bounded, scaled, with fixed parameters,
exact AD derivatives, standard errors from the Hessian."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import casadi as ca
import numpy as np
import pandas as pd

from ...base.errors import CollocInputError
from .likelihood import negative_log_likelihood
from .model import LinearGaussianModel

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
        information (the exact AD Hessian of the NLL at the estimate).  NaN if that Hessian
        is not positive definite.
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
    newton_decrement : float
        ``½ gᵀ H⁻¹ g`` over the free parameters off the bounds: how much one more Newton step
        would lower the NLL.  Far below 1 (a fraction of one log-likelihood unit) at a
        converged estimate.
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


def maximum_likelihood(
    model: LinearGaussianModel,
    y,
    theta0,
    *,
    bounds: Mapping[str, tuple[float | None, float | None]] | None = None,
    fixed: Mapping[str, float] | Iterable[str] | None = None,
    scale: Mapping[str, float] | None = None,
    hessian: str = "limited-memory",
    tol: float = 1e-10,
    max_iter: int = 200,
    print_level: int = 0,
) -> MLResult:
    """Exact maximum-likelihood estimate by the Kalman prediction-error method (IPOPT).

    The free parameters are optimised in scaled form ``z = θ / scale`` by IPOPT with the
    exact AD gradient and, by default, IPOPT's limited-memory (L-BFGS) Hessian: on the
    6000-sample CIP record it needs 25–65 iterations against 6–15 with the exact AD Hessian,
    yet is about 1.5–3 times faster overall, because one exact Hessian costs about as much
    as 13 gradients (and IPOPT must first build it).  The number of
    squarings of the matrix exponential is chosen at ``theta0`` with one in reserve; if the
    estimate needs more, the fit is restarted from it with more.  Standard errors come from
    the inverse of the observed Fisher information, the exact AD Hessian at the estimate.

    Parameters
    ----------
    model : LinearGaussianModel
        The model.
    y : array-like
        The record, shape ``(N, num_outputs)`` (or ``(N,)`` for one output), finite.
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

    Returns
    -------
    MLResult
    """
    start = time.perf_counter()
    if hessian not in ("exact", "limited-memory"):
        raise CollocInputError("maximum_likelihood: hessian must be 'exact' or 'limited-memory', "
                               f"got {hessian!r}")
    if not (tol > 0):
        raise CollocInputError(f"maximum_likelihood: tol must be > 0, got {tol!r}")
    Y = model.data_matrix(y)
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
    N = Y.shape[1]
    free_idx = np.array(free)
    fixed_mask = np.ones(len(names), bool)
    fixed_mask[free_idx] = False

    f0 = negative_log_likelihood(model, Y.T, theta)
    if not math.isfinite(f0):
        raise CollocInputError("maximum_likelihood: the NLL is not finite at theta0 (an innovation "
                               "covariance is not positive definite; is a noise variance zero?)")

    z = ca.MX.sym("z", len(free))
    data = ca.MX.sym("Y", model.num_outputs * N)  # the record, column-major, as the NLP parameter
    Ysym = ca.reshape(data, model.num_outputs, N)
    pieces = []
    for i in range(len(names)):
        if fixed_mask[i]:
            pieces.append(ca.MX(theta[i]))
        else:
            pieces.append(z[free.index(i)] * sc[i])
    theta_expr = ca.vertcat(*pieces)
    opts = {
        "print_time": False,
        "ipopt.print_level": int(print_level),
        "ipopt.sb": "yes",
        "ipopt.tol": float(tol),
        "ipopt.max_iter": int(max_iter),
    }
    if hessian == "limited-memory":
        opts["ipopt.hessian_approximation"] = "limited-memory"

    s = model.squarings(theta) + 1
    iterations = 0
    status = ""
    success = False
    for _restart in range(4):
        f = model.nll_function(N, s)(theta_expr, Ysym)
        solver = ca.nlpsol(f"{model.name}_ml", "ipopt", {"x": z, "p": data, "f": f}, opts)
        z0 = theta[free_idx] / sc[free_idx]
        sol = solver(x0=z0, p=Y.ravel(order="F"),
                     lbx=lb[free_idx] / sc[free_idx], ubx=ub[free_idx] / sc[free_idx])
        stats = solver.stats()
        iterations += int(stats.get("iter_count", 0))
        status = str(stats.get("return_status", ""))
        success = bool(stats.get("success", False))
        zhat = np.array(sol["x"]).ravel()
        theta = theta.copy()
        theta[free_idx] = np.clip(zhat * sc[free_idx], lb[free_idx], ub[free_idx])
        needed = model.squarings(theta)
        if needed <= s:
            break
        s = needed + 1
    else:
        success = False
        status += "; the matrix exponential kept needing more squarings"

    nll, grad, H = negative_log_likelihood(model, Y.T, theta, hessian=True)
    free_names = [names[i] for i in free]
    Hf = H[np.ix_(free_idx, free_idx)]
    Hf = 0.5 * (Hf + Hf.T)
    gf = grad[free_idx]
    messages = [status]
    cov = np.full_like(Hf, np.nan)
    cond = math.inf
    rel = np.where(theta[free_idx] != 0.0, np.abs(theta[free_idx]), sc[free_idx])
    if np.all(np.isfinite(Hf)):
        Hrel = Hf * np.outer(rel, rel)
        w = np.linalg.eigvalsh(Hrel)
        if w.min() > 0:
            cond = float(w.max() / w.min())
            # invert in relative units (better conditioned), then scale back
            cov = np.linalg.inv(Hrel) * np.outer(rel, rel)
            cov = 0.5 * (cov + cov.T)
        else:
            messages.append("the observed Fisher information is not positive definite: no standard errors")
            success = False
    else:
        messages.append("the Hessian at the estimate is not finite")
        success = False
    se = np.sqrt(np.diag(cov)) if np.all(np.isfinite(cov)) else np.full(len(free), np.nan)
    if np.all(np.isfinite(cov)):
        corr = cov / np.outer(se, se)
    else:
        corr = np.full_like(cov, np.nan)
    near = 1e-6 * sc
    active = tuple(names[i] for i in free if theta[i] - lb[i] <= near[i] or ub[i] - theta[i] <= near[i])
    if active:
        messages.append(f"parameters on a bound: {list(active)} (their standard errors are not meaningful)")
    # predicted NLL decrease of one more Newton step in the parameters off the bounds
    inner = [j for j, nm in enumerate(free_names) if nm not in active]
    decrement = 0.0
    if inner:
        Hi = Hf[np.ix_(inner, inner)]
        gi = gf[inner]
        try:
            decrement = float(0.5 * gi @ np.linalg.solve(Hi, gi)) if np.all(np.isfinite(Hi)) else math.nan
        except np.linalg.LinAlgError:
            decrement = math.nan
    if not (decrement <= 1e-3):
        messages.append(f"one more Newton step would lower the NLL by {decrement:.3g}: not fully converged?")
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
    )
