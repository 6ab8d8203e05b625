"""The ordered sparse LDLᵀ of the covariance (colloc.inference.ldl) against NumPy's dense
solve, its refusals (too much fill, a zero pivot), the function-buffer evaluation helper, and
the covariance's parameter block against a dense inverse of the whole KKT matrix."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import scipy.sparse as sps

from colloc.base.buffers import values
from colloc.inference import covariance, ldl

needs_compiler = pytest.mark.needs_compiler


def chain_kkt(n_nodes: int, seed: int = 0, delta: float = 1e-9):
    """A KKT matrix [[H, Aᵀ], [A, −δI]] of a chain: node j has 2 unknowns, a constraint per
    interval couples the unknowns of nodes j and j + 1, H is diagonal (the second unknown of
    a node weighted a hundred times less) plus ½ AᵀA."""
    rng = np.random.default_rng(seed)
    nv = 2 * n_nodes
    rows, cols, vals = [], [], []
    for k in range(n_nodes - 1):
        for c in (2 * k, 2 * k + 1, 2 * k + 2, 2 * k + 3):
            rows.append(k)
            cols.append(c)
            vals.append(rng.uniform(0.5, 2.0) * rng.choice([-1.0, 1.0]))
    A = sps.csr_matrix((vals, (rows, cols)), shape=(n_nodes - 1, nv))
    h = np.zeros(nv)
    h[0::2] = rng.uniform(1.0, 3.0, n_nodes)
    h[1::2] = rng.uniform(0.01, 0.03, n_nodes)
    H = (sps.diags(h) + 0.5 * (A.T @ A)).tocsc()
    K = sps.bmat([[H, A.T], [A, -delta * sps.eye(A.shape[0])]], format="csc")
    return H, A, delta, K


@needs_compiler
def test_ordered_ldl_solves_like_a_dense_solve_in_any_order():
    # a quasi-definite matrix has a stable LDLᵀ in every order when δ is not tiny (the
    # covariance's δ = 1e-9/ρ is, and is followed by iterative refinement)
    H, A, delta, K = chain_kkt(40, delta=0.1)
    n = K.shape[0]
    B = np.random.default_rng(1).standard_normal((n, 3))
    expected = np.linalg.solve(K.toarray(), B)  # dense LU with pivoting, independent of ours
    upper = sps.triu(K, format="csc")
    for perm in (covariance._time_order(A.tocsr()), np.random.default_rng(2).permutation(n)):
        f = ldl.ordered_ldl(upper, perm, max_fill=1e9)
        assert isinstance(f, ldl.OrderedLDL), f
        np.testing.assert_allclose(f.solve(B), expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())
        np.testing.assert_allclose(f.solve(B[:, 0]), expected[:, 0], rtol=1e-7, atol=1e-9 * np.abs(expected).max())
        # its product with the stored triangle is K's (a diagonal left out where asked)
        np.testing.assert_allclose(f.times(B), K @ B, rtol=1e-12, atol=1e-12)
        nr = H.shape[0]
        exact = K.toarray()
        exact[nr:, nr:] = 0.0
        np.testing.assert_allclose(f.times(B, diagonal_to=nr), exact @ B, rtol=1e-12, atol=1e-12)


@needs_compiler
def test_the_time_order_fills_little_and_a_bad_order_is_refused():
    H, A, delta, K = chain_kkt(400)
    upper = sps.triu(K, format="csc")
    good = ldl.ordered_ldl(upper, covariance._time_order(A.tocsr()))
    assert isinstance(good, ldl.OrderedLDL)
    assert good.factor_nnz <= 3 * upper.nnz  # a band: fill of the order of the matrix
    # unknowns first, multipliers last: each multiplier's row fills against all the others
    refused = ldl.ordered_ldl(upper, np.arange(K.shape[0]), max_fill=2.0)
    assert isinstance(refused, str) and "fills" in refused


@needs_compiler
def test_a_zero_pivot_is_reported_not_factorised():
    K = sps.csc_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))  # indefinite, no quasi-definite shift
    out = ldl.ordered_ldl(sps.triu(K, format="csc"), np.arange(2))
    assert isinstance(out, str) and "pivot" in out


def test_without_a_compiler_the_covariance_takes_another_route(monkeypatch):
    monkeypatch.setattr(ldl, "_library", lambda: None)
    H, A, delta, K = chain_kkt(30)
    assert ldl.ordered_ldl(sps.triu(K, format="csc"), np.arange(K.shape[0])) is None
    assert covariance._ordered_factor(sps.triu(K, format="csc"), A.tocsr()) is None


@pytest.mark.parametrize("route", ["ordered", "qdldl", "casadi-ldl"])
def test_reduced_hessian_equals_the_parameter_block_of_a_dense_kkt_inverse(route, covariance_route):
    """K_PP − K_SPᵀ K_SS⁻¹ K_SP against the inverse of the whole (δ = 0) KKT matrix of a
    small least squares with a parameter coupling every node, computed densely by NumPy."""
    used = covariance_route(route)
    rng = np.random.default_rng(3)
    n_nodes, npar = 60, 2
    nv = 2 * n_nodes + npar
    par = np.arange(2 * n_nodes, nv)
    # constraints x_{k+1} − x_k − h (v_k + p₀ x_k) = 0 and v_{k+1} − v_k − h (p₁ v_k) = 0 linearised
    rows, cols, vals = [], [], []
    h = 0.05
    for k in range(n_nodes - 1):
        for r, entries in ((2 * k, [(2 * k + 2, 1.0), (2 * k, -1.0 - h * 0.3), (2 * k + 1, -h), (par[0], -h * 0.7)]),
                           (2 * k + 1, [(2 * k + 3, 1.0), (2 * k + 1, -1.0 - h * 0.2), (par[1], -h * rng.uniform(0.5, 1.5))])):
            for c, v in entries:
                rows.append(r)
                cols.append(c)
                vals.append(v)
    A = sps.csr_matrix((vals, (rows, cols)), shape=(2 * (n_nodes - 1), nv))
    J = sps.csr_matrix((rng.uniform(5, 15, n_nodes), (np.arange(n_nodes), 2 * np.arange(n_nodes))),
                       shape=(n_nodes, nv))  # only x measured: v and the parameters unseen by J
    H = (J.T @ J).tocsc()
    rest = np.setdiff1d(np.arange(nv), par)
    rho = float(np.median(H.diagonal()[H.diagonal() > 0]))
    A_eq = covariance._equilibrated(A)
    touch = np.arange(A_eq.shape[0])
    schur = covariance._solve_reduced(H, A_eq, rho, rest, par, touch)
    assert not isinstance(schur, str), schur
    assert route != "ordered" or (used and used[0] is not None)
    # dense reference: (Zᵀ H Z)⁻¹ restricted to the parameters = the parameter block of the
    # inverse of [[H, Aᵀ], [A, 0]] (H alone is singular on v; the KKT matrix is not)
    Kd = np.block([[H.toarray(), A.toarray().T], [A.toarray(), np.zeros((A.shape[0], A.shape[0]))]])
    expected = np.linalg.inv(Kd)[np.ix_(par, par)]
    np.testing.assert_allclose(np.linalg.inv(schur), expected, rtol=1e-9)


def test_values_through_buffers_equal_a_call():
    x = ca.SX.sym("x", 2)
    y = ca.SX.sym("y", 3)
    f = ca.Function("f", [x, y], [ca.vertcat(x[0] * y[1], ca.sin(x[1]) + y[2]), ca.sumsqr(y)])
    F = f.map(5)
    X = np.random.default_rng(4).standard_normal((2, 5))
    Y = np.random.default_rng(5).standard_normal((3, 1))  # one column for all: repeated
    got = values(F, X, Y)
    want = [np.array(v) for v in F(X, Y)]
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(ValueError, match="input 0 has 4 entries, expected 10"):
        values(F, np.zeros(4), Y)


@needs_compiler
def test_an_answer_without_a_compiler_is_not_kept_once_there_is_one(monkeypatch):
    # a solve run with COLLOC_NO_COMPILER=1 (a test, a user) found no library; the next factorisation
    # in the same process, with the compiler back, must get it
    _, A, _, K = chain_kkt(10, delta=0.1)
    upper, perm = sps.triu(K, format="csc"), covariance._time_order(A.tocsr())
    monkeypatch.setenv("COLLOC_NO_COMPILER", "1")
    assert ldl.ordered_ldl(upper, perm, max_fill=1e9) is None
    monkeypatch.delenv("COLLOC_NO_COMPILER")
    assert isinstance(ldl.ordered_ldl(upper, perm, max_fill=1e9), ldl.OrderedLDL)
