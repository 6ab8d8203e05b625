"""The negative log-likelihood of a record, and records simulated from the model."""

from __future__ import annotations

import math
from typing import Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...base.errors import CollocInputError
from .model import LinearGaussianModel, ParameterValues

__all__ = ["negative_log_likelihood", "one_step_predictions", "simulate"]

#: The covariance is held (the gain fixed) once no entry of it moves by more than this fraction of
#: its largest entry in one sample: the per-sample terms then differ from the exact filter's by
#: rounding (checked against statsmodels' exact filter in tests/unit/test_kalman_robust.py, and the
#: predictions against the conditioned joint Gaussian in tests/unit/test_predict.py).
STEADY_TOL = 1e-13


@overload
def negative_log_likelihood(model: LinearGaussianModel, y: ArrayLike, theta: ParameterValues, *,
                            gradient: Literal[False] = False, hessian: Literal[False] = False,
                            missing: bool = False) -> float: ...


@overload
def negative_log_likelihood(model: LinearGaussianModel, y: ArrayLike, theta: ParameterValues, *,
                            gradient: Literal[True], hessian: Literal[False] = False,
                            missing: bool = False) -> tuple[float, NDArray[np.float64]]: ...


@overload
def negative_log_likelihood(model: LinearGaussianModel, y: ArrayLike, theta: ParameterValues, *,
                            gradient: bool = False, hessian: Literal[True],
                            missing: bool = False) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]: ...


def negative_log_likelihood(
    model: LinearGaussianModel, y: ArrayLike, theta: ParameterValues, *, gradient: bool = False, hessian: bool = False,
    missing: bool = False,
) -> float | tuple[float, NDArray[np.float64]] | tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    """Exact negative log-likelihood of a record (Kalman prediction-error decomposition).

    Parameters
    ----------
    model : LinearGaussianModel
        The model.
    y : array-like
        The record, shape ``(N, num_outputs)`` (or ``(N,)`` for one output), finite.
    theta : array-like or mapping
        Parameter values (``parameter_names`` order, or name → value).
    gradient : bool, optional
        Also return the exact AD gradient.
    hessian : bool, optional
        Also return the gradient and the exact AD Hessian.
    missing : bool, optional
        NaN in ``y`` marks a value not measured: the filter predicts through it and the
        likelihood is that of the measured values alone (exact, not imputed).

    Returns
    -------
    float or tuple
        ``nll``; ``(nll, gradient)`` if ``gradient``; ``(nll, gradient, hessian)`` if ``hessian``.
        ``nll`` is ``inf`` (and the derivatives NaN) where an innovation covariance is not
        positive definite.
    """
    Y, W = model.observed(model.data_matrix(y, missing))
    vec = model.parameter_vector(theta)
    s = model.squarings(vec)
    N = Y.shape[1]
    if hessian:
        f, g, H = model._derivative("hessian", N, s)(vec, Y, W)
        nll = _finite_or_inf(f)
        return nll, np.array(g).ravel(), np.array(H)
    if gradient:
        f, g = model._derivative("gradient", N, s)(vec, Y, W)
        return _finite_or_inf(f), np.array(g).ravel()
    return _finite_or_inf(model.nll_function(N, s)(vec, Y, W))


def _finite_or_inf(value) -> float:
    v = float(value)
    return v if math.isfinite(v) else math.inf


def _psd_sqrt(M: np.ndarray) -> np.ndarray:
    """A square root ``B`` with ``B Bᵀ = M`` of a symmetric positive semidefinite matrix."""
    M = 0.5 * (M + M.T)
    w, V = np.linalg.eigh(M)
    if w.size and w.min() < -1e-10 * max(1.0, float(np.abs(w).max())):
        raise CollocInputError("simulate: a covariance matrix is not positive semidefinite "
                               f"(eigenvalue {w.min():.3g})")
    return V * np.sqrt(np.clip(w, 0.0, None))


@overload
def simulate(model: LinearGaussianModel, theta: ParameterValues, num_samples: int,
             rng: np.random.Generator | int | None = None, *,
             return_states: Literal[False] = False) -> NDArray[np.float64]: ...


@overload
def simulate(model: LinearGaussianModel, theta: ParameterValues, num_samples: int,
             rng: np.random.Generator | int | None = None, *,
             return_states: Literal[True]) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...


def simulate(model: LinearGaussianModel, theta: ParameterValues, num_samples: int,
             rng: np.random.Generator | int | None = None, *,
             return_states: bool = False) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Draw a record exactly from the discrete model.

    ``s_0 ~ N(m0, P0)``, ``x_k ~ N(0, I)``, ``e_k ~ N(0, R)``, ``y_k = C s_k + D x_k + e_k``,
    ``s_{k+1} = Φ s_k + Γ x_k`` for held noise; for continuous noise ``s_{k+1} = Φ s_k + w_k``
    with ``w_k ~ N(0, Q_d)`` (Van Loan's covariance: the exact law of the sampled process).

    Parameters
    ----------
    model : LinearGaussianModel
        The model.
    theta : array-like or mapping
        Parameter values.
    num_samples : int
        Number of samples N (>= 1).
    rng : numpy.random.Generator or int or None, optional
        Random generator or seed.
    return_states : bool, optional
        Also return the states ``s_0 … s_{N-1}``.

    Returns
    -------
    numpy.ndarray or tuple
        ``y`` of shape ``(N, num_outputs)``; with ``return_states`` also the states, shape
        ``(N, num_states)``.
    """
    if int(num_samples) != num_samples or num_samples < 1:
        raise CollocInputError(f"simulate: num_samples must be an integer >= 1, got {num_samples!r}")
    N = int(num_samples)
    rng = np.random.default_rng(rng)
    d = model.discretize(theta)
    n, q, p = model.num_states, model.num_inputs, model.num_outputs
    s = d["m0"] + _psd_sqrt(d["P0"]) @ rng.standard_normal(n)
    x = rng.standard_normal((N, q))
    e = rng.standard_normal((N, p)) @ _psd_sqrt(d["R"]).T
    Phi, C, D = d["Phi"], d["C"], d["D"]
    if model.noise == "continuous":  # w_k = Q_d^{1/2} z_k, independent of the measurement
        Gam = _psd_sqrt(d["Q"])
        z = rng.standard_normal((N, n))
        D = np.zeros((p, n))
    else:
        Gam, z = d["Gamma"], x
    states = np.empty((N, n))
    for k in range(N):
        states[k] = s
        s = Phi @ s + Gam @ z[k]
    y = states @ C.T + z @ D.T + e
    return (y, states) if return_states else y


def one_step_predictions(model: LinearGaussianModel, y: ArrayLike, theta: ParameterValues, *,
                         missing: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The Kalman filter's one-step-ahead predictions of a record and their standard deviations.

    ``ŷ_k = C m_k`` with ``m_k`` the mean of the state given ``y_0 … y_{k-1}`` (the same
    predictor-form filter, with correlated noise, as the likelihood), and the innovation
    standard deviations ``√diag(S_k)``.  ``y − ŷ`` are the innovations, white under the model.

    Parameters
    ----------
    model : LinearGaussianModel
        The model.
    y : array-like
        The record, shape ``(N, num_outputs)`` (or ``(N,)``), finite.
    theta : array-like or mapping
        Parameter values.
    missing : bool, optional
        NaN in ``y`` marks a value not measured: no update from it (the filter predicts
        through gaps); its prediction is still returned.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Predictions and their standard deviations, both ``(N, num_outputs)``.
    """
    return k_step_predictions(model, y, theta, 1, missing=missing)


def k_step_predictions(model: LinearGaussianModel, y: ArrayLike, theta: ParameterValues, steps: int, *,
                       missing: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``steps``-ahead predictions of a record: row ``k`` is the predictive mean and standard
    deviation of ``y_k`` given ``y_0 … y_{k−steps}`` (the rows before ``steps`` are NaN).

    The filter of :func:`one_step_predictions` gives ``m_{j+1|j}, P_{j+1|j}``; they are carried
    ``steps − 1`` more samples by the model alone (``m ← Φ m``, ``P ← Φ P Φᵀ + Γ Γᵀ``), and
    ``ŷ = C m``, ``S = C P Cᵀ + D Dᵀ + R``.  ``steps = 1`` is the one-step prediction.
    """
    if int(steps) != steps or steps < 1:
        raise ValueError(f"k_step_predictions: steps must be an integer >= 1, got {steps!r}")
    steps = int(steps)
    Y = model.data_matrix(y, missing).T
    if steps > Y.shape[0]:
        raise ValueError(f"k_step_predictions: {steps} steps ahead of a record of {Y.shape[0]} samples")
    d = model.discretize(theta)
    Phi, Q, GD, C, D, R = d["Phi"], d["Q"], d["S"], d["C"], d["D"], d["R"]
    N, nx = Y.shape[0], Phi.shape[0]
    means = np.empty((N, nx))
    covs = np.empty((N, nx, nx))
    m, P = d["m0"].copy(), d["P0"].copy()
    DDR, DD = D @ D.T + R, D @ D.T
    feedthrough = bool(D.any())  # without it, Γ Dᵀ and K D Dᵀ Kᵀ are zero: their terms add nothing
    measured = np.isfinite(Y)
    # after the last sample with an output not measured, the covariance may settle (no entry moving
    # by more than STEADY_TOL of the largest in a sample): from there the gain is held, and the rest
    # of the means is F m + K y, O(n²) a sample instead of the covariance's O(n³)
    gaps = np.flatnonzero(~measured.all(axis=1))
    complete_from = int(gaps[-1]) + 1 if gaps.size else 0
    held: tuple[np.ndarray, np.ndarray] | None = None  # (F, K) once the covariance has settled
    for k, yk in enumerate(Y):  # predictor-form filter: m, P are the state's given y_0 … y_{k−1}
        if held is not None and k > complete_from:
            F_held, K_held = held
            covs[k:] = P
            for j in range(k, N):
                means[j] = m
                m = F_held @ m + K_held @ Y[j]
            break
        means[k], covs[k] = m, P
        S = C @ P @ C.T + DDR
        o = measured[k]
        if o.all():  # every output measured (the common case, without the index bookkeeping)
            B = Phi @ P @ C.T + GD
            K = B / S[0, 0] if yk.size == 1 else np.linalg.solve(S.T, B.T).T
        else:
            K = np.zeros((nx, yk.size))
            if o.any():
                B = (Phi @ P @ C.T + GD)[:, o]
                K[:, o] = np.linalg.solve(S[np.ix_(o, o)].T, B.T).T
        F = Phi - K @ C
        m = Phi @ m + K @ np.where(o, yk - C @ m, 0.0)
        if feedthrough:
            KS = K @ GD.T  # (Γ − KD)(Γ − KD)ᵀ = Q − K Sᵀ − S Kᵀ + K D Dᵀ Kᵀ
            P_new = F @ P @ F.T + Q - KS - KS.T + K @ DD @ K.T + K @ R @ K.T
        else:
            P_new = F @ P @ F.T + Q + K @ R @ K.T
        P_new = 0.5 * (P_new + P_new.T)
        held = (F, K) if np.abs(P_new - P).max() <= STEADY_TOL * np.abs(P_new).max() else None
        P = P_new
    m, P = means[: N - steps + 1], covs[: N - steps + 1]  # given y up to row j − 1, for row j
    if steps > 1:  # carried steps − 1 samples at once: Φ^{s−1} m and Φ^{s−1} P Φ^{s−1}ᵀ + Σ_{i<s−1} Φ^i Q Φ^iᵀ
        power, carried = np.eye(Phi.shape[0]), np.zeros_like(Q)
        for _ in range(steps - 1):
            carried = Phi @ carried @ Phi.T + Q
            power = Phi @ power
        m = m @ power.T
        P = power @ P @ power.T + carried
    pred = np.full((N, C.shape[0]), np.nan)
    sd = np.full((N, C.shape[0]), np.nan)
    pred[steps - 1:] = m @ C.T
    S = C @ P @ C.T + D @ D.T + R
    sd[steps - 1:] = np.sqrt(np.clip(np.diagonal(S, axis1=1, axis2=2), 0.0, None))
    return pred, sd
