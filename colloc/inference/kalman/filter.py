"""One step of the one-step-predictor Kalman filter as an SX function, with the small symbolic
linear algebra it needs (elementwise, so it stays SX)."""

from __future__ import annotations

import math
from typing import Any

import casadi as ca
import numpy as np

__all__ = ["filter_step", "steady_gain"]


_LOG_2PI = math.log(2.0 * math.pi)


def _symmetric_from_upper(M: ca.SX) -> ca.SX:
    """The symmetric matrix whose upper triangle is that of ``M`` (the lower one is ignored).

    Computing only one triangle of a covariance update roughly halves its cost and keeps it
    exactly symmetric.
    """
    n = M.shape[0]
    return ca.vertcat(*[ca.horzcat(*[M[min(i, j), max(i, j)] for j in range(n)]) for i in range(n)])


def _cholesky_lower(S: ca.SX) -> list[list[Any]]:
    """Lower Cholesky factor of a small symbolic SPD matrix, as nested lists of SX scalars."""
    n = S.shape[0]
    L: list[list[Any]] = [[ca.SX(0) for _ in range(n)] for _ in range(n)]
    for j in range(n):
        d = S[j, j]
        for k in range(j):
            d = d - L[j][k] * L[j][k]
        L[j][j] = ca.sqrt(d)
        for i in range(j + 1, n):
            v = S[i, j]
            for k in range(j):
                v = v - L[i][k] * L[j][k]
            L[i][j] = v / L[j][j]
    return L


def _forward_solve(L: list[list[Any]], B: ca.SX) -> ca.SX:
    """``L⁻¹ B`` for a lower-triangular ``L`` given as nested lists."""
    n, m = B.shape
    X: list[list[Any]] = [[None] * m for _ in range(n)]
    for c in range(m):
        for i in range(n):
            v = B[i, c]
            for k in range(i):
                v = v - L[i][k] * X[k][c]
            X[i][c] = v / L[i][i]
    return ca.vertcat(*[ca.horzcat(*row) for row in X])


def _backward_solve_transposed(L: list[list[Any]], B: ca.SX) -> ca.SX:
    """``L⁻ᵀ B`` for a lower-triangular ``L`` given as nested lists."""
    n, m = B.shape
    X: list[list[Any]] = [[None] * m for _ in range(n)]
    for c in range(m):
        for i in reversed(range(n)):
            v = B[i, c]
            for k in range(i + 1, n):
                v = v - L[k][i] * X[k][c]
            X[i][c] = v / L[i][i]
    return ca.vertcat(*[ca.horzcat(*row) for row in X])


def _constant(value, rows: int, cols: int) -> ca.SX:
    """A numeric matrix as SX with its zeros structural (products with them are not formed)."""
    return ca.sparsify(ca.SX(ca.DM(np.asarray(value, dtype=float).reshape(rows, cols))))


def _step_symbols(n: int, nx: int, ny: int, C_value, D_value, covariance: bool) -> tuple:
    """The symbols of a filter step's covariance and matrices, ``(P_in, P, Φ, Γ or Q, C_in, D_in, R,
    C, D)``: ``P`` the symmetric matrix of ``P_in``'s upper triangle, ``C`` / ``D`` the constants
    ``C_value`` / ``D_value`` where given (``D`` zero for covariance noise), else the inputs."""
    P_in = ca.SX.sym("P", n, n)
    Phi = ca.SX.sym("Phi", n, n)
    Gam = ca.SX.sym("Q", n, n) if covariance else ca.SX.sym("Gamma", n, nx)
    C_in = ca.SX.sym("C", ny, n)
    D_in = ca.SX.sym("D", ny, nx)
    R = ca.SX.sym("R", ny, ny)
    C = C_in if C_value is None else _constant(C_value, ny, n)
    D = ca.SX(ny, nx) if covariance else (D_in if D_value is None else _constant(D_value, ny, nx))
    return P_in, _symmetric_from_upper(P_in), Phi, Gam, C_in, D_in, R, C, D


def filter_step(n: int, nx: int, ny: int, *, C_value=None, D_value=None, covariance: bool = False) -> ca.Function:
    """One predictor-form Kalman step with correlated process/measurement noise and missing samples.

    Inputs ``(m, P, y, w, Φ, Γ, C, D, R)``: the predicted mean and covariance of ``s_k`` given
    the samples before ``k``, the sample ``y_k``, its observation mask ``w`` (1 for an output
    measured at ``k``, 0 for one not measured; the value of ``y`` there is ignored) and the
    discrete matrices.  Outputs the predicted mean and covariance of ``s_{k+1}`` and the term
    ``½[log det S_o + ε_oᵀS_o⁻¹ε_o + m_o log 2π]`` over the ``m_o`` measured outputs ``o``.

    With ``W = diag(w)`` the step uses ``S̃ = W S W + (I − W)``, ``ε̃ = W ε`` and the cross
    covariance ``B W``: up to a permutation ``S̃`` is ``S_oo`` beside an identity, so its log
    determinant, ``ε̃ᵀS̃⁻¹ε̃`` and the gain ``K = B W S̃⁻¹`` (zero columns for the outputs not
    measured) are those of the measured outputs alone, and an unmeasured sample is a pure
    prediction ``m⁺ = Φ m``, ``P⁺ = Φ P Φᵀ + Γ Γᵀ``.  With ``w = 1`` it is the ordinary step.

    The gain is ``K = (Φ P Cᵀ + Γ Dᵀ) S⁻¹`` and the covariance update is the Joseph form
    ``(Φ − KC) P (Φ − KC)ᵀ + (Γ − KD)(Γ − KD)ᵀ + K R Kᵀ``, positive semidefinite by
    construction and exact for the optimal gain.  Only the upper triangle of ``P`` is read.

    ``C_value`` / ``D_value`` (numeric arrays, optional): a ``C`` / ``D`` that does not depend on
    the parameters, built into the step (its inputs ``C`` / ``D`` are then ignored), so that
    products with its zeros and ones are not evaluated (a measured state: ``C`` a unit row;
    no direct feedthrough: ``D = 0``).  ``Φ P Cᵀ`` is evaluated as ``Φ (P Cᵀ)`` (n²·ny, not n³).

    ``covariance=True``: the input in place of ``Γ`` is the process noise covariance ``Q`` itself
    (n×n, symmetric; named ``Q``), for noise that has no factor through ``x_k`` (continuous white
    noise discretised by Van Loan's integral, uncorrelated with the measurement); ``D`` is then
    ignored (taken as zero), and the update is ``(Φ − KC) P (Φ − KC)ᵀ + Q + K R Kᵀ``.
    """
    m = ca.SX.sym("m", n)
    y = ca.SX.sym("y", ny)
    w = ca.SX.sym("w", ny)
    P_in, P, Phi, Gam, C_in, D_in, R, C, D = _step_symbols(n, nx, ny, C_value, D_value, covariance)

    W = ca.diag(w)
    eps = w * (y - C @ m)
    PC = P @ C.T  # n × ny
    S = _symmetric_from_upper(W @ (C @ PC + D @ D.T + R) @ W + ca.diag(1 - w))
    L = _cholesky_lower(S)
    z = _forward_solve(L, eps)  # L⁻¹ ε
    logdet = 0
    for i in range(ny):
        logdet = logdet + 2.0 * ca.log(L[i][i])
    term = 0.5 * (logdet + ca.sumsqr(z) + ca.sum1(w) * _LOG_2PI)

    # cross-covariance of s_{k+1} and the measured y_k, n × ny
    B = (Phi @ PC if covariance else Phi @ PC + Gam @ D.T) @ W
    K = _backward_solve_transposed(L, _forward_solve(L, B.T)).T  # B S⁻¹
    m_next = Phi @ m + K @ eps
    F = Phi - K @ C
    if covariance:
        noise = _symmetric_from_upper(Gam)
    else:
        H = Gam - K @ D
        noise = H @ H.T
    P_next = F @ P @ F.T + noise + K @ R @ K.T
    P_next = _symmetric_from_upper(P_next)
    return ca.Function("kalman_step", [m, P_in, y, w, Phi, Gam, C_in, D_in, R], [m_next, P_next, term],
                       ["m", "P", "y", "w", "Phi", "Q" if covariance else "Gamma", "C", "D", "R"],
                       ["m_next", "P_next", "nll"])


def steady_gain(n: int, nx: int, ny: int, *, C_value=None, D_value=None, covariance: bool = False) -> ca.Function:
    """The gain of :func:`filter_step` at a held covariance, for the steady part of a record.

    Inputs ``(P, Φ, Γ or Q, C, D, R)`` as :func:`filter_step`'s (only the upper triangle of ``P``
    is read; every output measured).  Outputs ``K = (Φ P Cᵀ + Γ Dᵀ) S⁻¹``, ``S⁻¹`` and
    ``log det S`` with ``S = C P Cᵀ + D Dᵀ + R``, and the ``C`` the step uses (``C_value`` when
    given): once the covariance is held these are constant, and a step is ``m⁺ = Φ m + K ε``,
    ``ε = y − C m``, with the likelihood term ``½[log det S + εᵀS⁻¹ε + ny log 2π]``.
    """
    P_in, P, Phi, Gam, C_in, D_in, R, C, D = _step_symbols(n, nx, ny, C_value, D_value, covariance)
    PC = P @ C.T
    S = _symmetric_from_upper(C @ PC + D @ D.T + R)
    L = _cholesky_lower(S)
    S_inv = _symmetric_from_upper(_backward_solve_transposed(L, _forward_solve(L, ca.SX.eye(ny))))
    logdet = 0
    for i in range(ny):
        logdet = logdet + 2.0 * ca.log(L[i][i])
    B = Phi @ PC if covariance else Phi @ PC + Gam @ D.T
    return ca.Function("kalman_steady_gain", [P_in, Phi, Gam, C_in, D_in, R], [B @ S_inv, S_inv, logdet, C],
                       ["P", "Phi", "Q" if covariance else "Gamma", "C", "D", "R"], ["K", "S_inv", "logdet", "C_used"])
