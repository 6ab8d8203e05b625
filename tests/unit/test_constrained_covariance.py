"""The Gauss–Newton covariance under equality constraints (:func:`colloc.constrained_covariance`)
on a linear least squares small enough to solve here by other means: the top-left block of the
inverse KKT matrix (numpy), and the scatter of the estimates over noise replicates.

v = (z₁, z₂, z₃, w₁, w₂, f): residuals A v − y; equations w = B z + c determine w (eliminated);
the constraint z₁ + z₂ − z₃ = 1 is left on z; f is held fixed at 0.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import colloc as co

RNG = np.random.default_rng(7)
NRES, SIGMA = 40, 0.3
A = RNG.normal(size=(NRES, 6))
B = RNG.normal(size=(2, 3))
E = np.hstack([-B, np.eye(2), np.zeros((2, 1))])  # w − B z = c
C = np.array([[1.0, 1.0, -1.0, 0.0, 0.0, 0.0]])  # z₁ + z₂ − z₃ = 1
V_TRUE = np.array([0.5, 1.5, 1.0, *(B @ [0.5, 1.5, 1.0] + [0.2, -0.1]), 0.0])
KEPT, ELIMINATED = np.arange(3), np.array([3, 4])


def _kkt():
    """The KKT matrix of the problem over the free unknowns (f fixed) and its inverse."""
    free = np.arange(5)
    K_eq = np.vstack([E, C])[:, free]
    H = A[:, free].T @ A[:, free]
    K = np.block([[H, K_eq.T], [K_eq, np.zeros((3, 3))]])
    return K, np.linalg.inv(K)


def _estimate(Y):
    """The constrained least-squares estimates (columns) for the records Y (columns), by the KKT system."""
    K, _ = _kkt()
    rhs = np.vstack([A[:, :5].T @ Y, np.tile(np.array([[0.2], [-0.1], [1.0]]), (1, Y.shape[1]))])
    return np.linalg.solve(K, rhs)[:5]


def _residuals(seed):
    y = A @ V_TRUE + np.random.default_rng(seed).normal(0, SIGMA, NRES)
    v = np.append(_estimate(y[:, None])[:, 0], 0.0)
    return A @ v - y


def test_equals_the_kkt_inverse_block_times_the_residual_variance():
    r = _residuals(1)
    cov = co.constrained_covariance(sps.csc_matrix(A), r, sps.csc_matrix(E), KEPT, ELIMINATED, jac_con=C)
    dof = NRES - 2  # three kept unknowns, one constraint on them
    s2 = float(r @ r) / dof
    _, Kinv = _kkt()
    assert cov.dof == dof and cov.residual_variance == pytest.approx(s2, rel=1e-12)
    np.testing.assert_allclose(cov.matrix, s2 * Kinv[:3, :3], rtol=1e-9, atol=1e-14)
    assert cov.message == ""
    # the constraint direction has no variance: (1, 1, −1) · cov · (1, 1, −1) = 0
    assert abs(C[0, :3] @ cov.matrix @ C[0, :3]) < 1e-12 * np.trace(cov.matrix)
    # physical units: scale · NLP value
    scale = np.array([2.0, 3.0, 0.5])
    scaled = co.constrained_covariance(A, r, E, KEPT, ELIMINATED, jac_con=sps.csr_matrix(C), scale=scale)
    np.testing.assert_allclose(scaled.matrix, cov.matrix * np.outer(scale, scale), rtol=1e-12)
    np.testing.assert_allclose(scaled.standard_errors, np.sqrt(np.diag(cov.matrix)) * scale, rtol=1e-12)


def test_matches_the_scatter_of_the_estimates_over_noise_replicates():
    """With the noise known, s²·(…) is the covariance of the estimates: the sample covariance
    of 4000 replicates agrees within its own sampling error (≈ √(2/4000) ≈ 2 %)."""
    Y = (A @ V_TRUE)[:, None] + np.random.default_rng(2).normal(0, SIGMA, (NRES, 4000))
    est = _estimate(Y)[:3]
    empirical = np.cov(est)
    r = _residuals(3)
    cov = co.constrained_covariance(A, r, E, KEPT, ELIMINATED, jac_con=C)
    predicted = cov.matrix / cov.residual_variance * SIGMA**2
    np.testing.assert_allclose(np.sqrt(np.diag(empirical)), np.sqrt(np.diag(predicted)), rtol=0.05)


def test_without_constraints_it_is_the_eliminated_gauss_newton_covariance():
    """No constraint: z free, w = B z + c; cov(z) = s² (JᵀJ)⁻¹ with J = A_z + A_w B (by hand)."""
    r = _residuals(4)
    J = A[:, :3] + A[:, 3:5] @ B
    cov = co.constrained_covariance(A, r, E, KEPT, ELIMINATED)
    s2 = float(r @ r) / (NRES - 3)
    np.testing.assert_allclose(cov.matrix, s2 * np.linalg.inv(J.T @ J), rtol=1e-9)
    assert cov.dof == NRES - 3


def test_an_undetermined_unknown_gives_nan_and_says_why():
    A0 = A.copy()
    A0[:, 0] = 0.0
    B0 = B.copy()
    B0[:, 0] = 0.0  # z₁ reaches no residual, directly or through w
    E0 = np.hstack([-B0, np.eye(2), np.zeros((2, 1))])
    cov = co.constrained_covariance(A0, _residuals(5), E0, KEPT, ELIMINATED)
    assert np.all(np.isnan(cov.matrix)) and "singular" in cov.message


def test_bad_input_is_named():
    r = _residuals(6)
    with pytest.raises(ValueError, match="2 equations for 3 eliminated unknowns"):
        co.constrained_covariance(A, r, E, KEPT, np.array([3, 4, 5]))
    with pytest.raises(ValueError, match="both kept and eliminated"):
        co.constrained_covariance(A, r, E, np.array([0, 1, 3]), ELIMINATED)
    with pytest.raises(ValueError, match="40 Jacobian rows for 39 residuals"):
        co.constrained_covariance(A, r[:-1], E, KEPT, ELIMINATED)
