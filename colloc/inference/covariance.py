"""Uncertainty of a solved NLP: :func:`parameter_covariance`, the Gauss–Newton covariance of
the parameters, with the states and free inputs eliminated through the linearised
constraints (the reduced Hessian), and the residual variance estimated from the fit."""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

import casadi as ca
import numpy as np

from ..base.buffers import function_buffer, view
from ..base.capture import capture_native_output
from ..base.prefetch import LazyModule
from ..base.sparsity import sparsity_from_ccs

#: A Jacobian as :func:`constrained_covariance` takes it: dense or sparse, CasADi's or SciPy's.
Jacobian: TypeAlias = "ca.DM | sps.spmatrix | sps.sparray | np.ndarray"

__all__ = ["Covariance", "constrained_covariance", "parameter_covariance"]

if TYPE_CHECKING:
    import scipy.sparse as sps
else:  # imported when first used, after the solve (beside IPOPT: solving/collocation.py's prefetch)
    sps = LazyModule("scipy.sparse")


@dataclass
class Covariance:
    """Parameter covariance (physical units).

    Attributes
    ----------
    matrix : ndarray, shape (num_params, num_params)
        ``s² · (Zᵀ JᵀJ Z)⁻¹`` restricted to the parameters; NaN when not estimable.
    residual_variance : float
        ``s² = ‖r‖² / dof`` (about 1 when the fit weights are ``1/σ²`` and the model fits).
    dof : int
        Observations minus free directions (initial states, free inputs, parameters).
    message : str
        Empty when all went well, else why the matrix is NaN or unscaled.
    not_identifiable : tuple of int
        Indices of the parameters that take part in a direction the data do not determine
        (a near-zero eigenvalue of the reduced Hessian); all of them when the factorisation
        itself failed; empty when the matrix is usable.
    """

    matrix: np.ndarray
    residual_variance: float
    dof: int
    message: str = ""
    not_identifiable: tuple[int, ...] = ()

    @property
    def standard_errors(self) -> np.ndarray:
        """Square roots of the diagonal."""
        with np.errstate(invalid="ignore"):
            return np.sqrt(np.diag(self.matrix))


def _to_scipy(m) -> sps.csc_matrix:
    if sps.issparse(m):
        return sps.csc_matrix(m)
    sp = m.sparsity()
    return sps.csc_matrix(
        (np.array(m.nonzeros()), np.array(sp.row()), np.array(sp.colind())), shape=m.shape
    )


def parameter_covariance(
    jac_res: ca.DM,
    res: np.ndarray,
    jac_g: ca.DM,
    equality: np.ndarray,
    param_index: np.ndarray,
    param_scale: np.ndarray,
    num_fit_residuals: int,
    fit_res: np.ndarray,
    absolute_sigma: bool = False,
) -> Covariance:
    """Gauss–Newton covariance of the parameters of an equality-constrained least squares.

    Parameters
    ----------
    jac_res : casadi.DM or scipy.sparse matrix, shape (nres, nx)
        Jacobian of all weighted residuals with respect to the (scaled) NLP variables.
    res : ndarray, shape (nres,)
        All weighted residuals (fit and regularisation).
    jac_g : casadi.DM or scipy.sparse matrix, shape (ng, nx)
        Constraint Jacobian; only rows flagged in ``equality`` are used.
    equality : ndarray of bool, shape (ng,)
    param_index : ndarray of int
        NLP indices of the parameters.
    param_scale : ndarray
        Physical = scale · NLP value.
    num_fit_residuals : int
        Number of fitted observations (for the degrees of freedom).
    fit_res : ndarray
        The weighted fit residuals alone (for the residual variance).
    absolute_sigma : bool
        Take the weights as exact ``1/σ²``: no rescaling by the residual variance.

    Notes
    -----
    The top-left block of the inverse KKT matrix ``[[JᵀJ, Aᵀ], [A, 0]]`` equals
    ``Z (Zᵀ JᵀJ Z)⁻¹ Zᵀ`` with ``Z`` a null-space basis of ``A``, the linearised
    constraints.  Its parameter block is the inverse of the Schur complement of the other
    unknowns (states, free inputs) and the multipliers: with ``K_SS`` the KKT matrix of the
    problem at fixed parameters, ``C = (K_PP − K_PSᵀ K_SS⁻¹ K_SP)⁻¹``.  So one sparse LDLᵀ
    factorisation of ``K_SS`` (no pivoting; see :class:`_KKTSolver` for its orderings) and
    one solve per parameter give it; the dense parameter columns never enter the factor.

    ``JᵀJ`` alone is far from definite: every collocation variable that no sample sees
    (an unmeasured state, nodes between samples, free inputs) has a zero diagonal.  Without
    pivoting the obvious fix, a tiny shift that leaves the answer unchanged, gives pivots
    of that tiny size and an elimination that overflows (the non-finite values seen on a
    ten-experiment reactor with nodes between its samples).  Instead the constraint rows
    are equilibrated (``Â = D A``, unit row maxima) and every row that touches a variable
    whose ``JᵀJ`` row is not strictly diagonally dominant (unseen, or seen only in
    combination with others, like the states behind a centre-of-pressure output) is added
    as ``ρ âᵀâ`` to ``JᵀJ`` (``ρ`` the median non-zero diagonal entry of ``JᵀJ``); should
    that still leave a zero pivot or an inaccurate solve, every row is.  When those rows'
    ``ÂᵀÂ`` would be large, a matched subset of them (one row per such variable, sparse
    rows preferred) is tried first (:func:`_row_choices`).  On the null space of
    ``A`` this adds nothing, so the answer is unchanged, while those variables get pivots of
    the size of the data.  A small ``−δI`` in the constraint block (``δ = 10⁻⁹/ρ``) makes
    ``K_SS`` quasi-definite, so its factorisation exists for any ordering; iterative
    refinement against the exact (``δ = 0``) matrix removes the ``δ`` bias, and the Schur
    complement takes the residual's correction (:func:`_schur`), so that its error is the
    square of the solve's.  The cost is one sparse factorisation with the sparsity of the
    KKT matrix, linear in the grid.
    """
    J = _to_scipy(jac_res)
    A = _to_scipy(jac_g)[np.flatnonzero(equality), :]
    nx = J.shape[1]
    npar = len(param_index)
    free_dirs = nx - A.shape[0]
    dof = int(num_fit_residuals - free_dirs)
    message = ""
    if dof > 0:
        s2 = float(np.einsum("i,i->", fit_res, fit_res) / dof)  # no BLAS threads (see _norm)
    else:
        s2 = 1.0
        message = (
            f"no residual degrees of freedom ({num_fit_residuals} observations, {free_dirs} free "
            "directions): covariance uses the fit weights as exact 1/σ²"
        )
    nan = np.full((npar, npar), np.nan)
    # equilibrate the constraint rows (unit maximum); structurally empty rows carry nothing
    A = _equilibrated(A)
    H = (J.T @ J).tocsc()
    diag_h = H.diagonal()
    # the shift's size: a typical pivot of the data (the median, not the largest: weights of
    # one signal can exceed another's by many decades, and ρ far above the smallest pivots
    # makes the block ill-conditioned)
    rho = float(np.median(diag_h[diag_h > 0])) if np.any(diag_h > 0) else 1.0
    is_param = np.zeros(nx, dtype=bool)
    is_param[param_index] = True
    rest = np.flatnonzero(~is_param)
    # variables whose JᵀJ row is strictly diagonally dominant (among the non-parameters) give
    # a definite block by themselves; rows of Â that touch any other variable are added
    H_rr = H[rest, :][:, rest]
    diag = H_rr.diagonal()
    off = np.asarray(abs(H_rr).sum(axis=0)).ravel() - np.abs(diag)
    seen = np.zeros(nx, dtype=bool)
    seen[rest] = diag > off
    unseen = np.flatnonzero(~seen & ~is_param)
    touch = np.flatnonzero(np.asarray(abs(A[:, unseen]).sum(axis=1)).ravel() > 0)
    del J, H_rr  # (memory: the factorisation below is the peak)
    # a few rows first (one per unseen variable, sparse ones preferred), then every row that
    # touches an unseen variable, then every row, until the factorisation and solve succeed
    outcome = "no rows tried"
    for rows in _row_choices(A, unseen, touch):
        outcome = _solve_reduced(H, A, rho, rest, param_index, rows)
        if not isinstance(outcome, str):
            break
    if isinstance(outcome, str):
        return Covariance(nan, s2, dof, outcome, tuple(range(npar)))
    schur = outcome
    if npar and not np.all(np.isfinite(schur)):
        return Covariance(nan, s2, dof, "reduced Hessian is not finite; parameters not identifiable",
                          tuple(range(npar)))
    eig, vec = np.linalg.eigh(schur) if npar else (np.zeros(0), np.zeros((0, 0)))
    flat = eig <= 1e-13 * max(abs(eig).max() if npar else 0.0, 1e-300)
    if npar and flat.any():
        # the parameters that carry the undetermined directions (components ≥ 0.1 of a unit
        # eigenvector of a near-zero eigenvalue; physical and solver scales differ, so this
        # names rather than measures)
        involved = np.flatnonzero(np.any(np.abs(vec[:, flat]) >= 0.1, axis=1))
        return Covariance(nan, s2, dof, "reduced Hessian is not positive definite; parameters not identifiable",
                          tuple(int(i) for i in involved))
    if absolute_sigma:
        s2_scale = 1.0
    elif dof > 0 and s2 <= 1e-24:
        return Covariance(nan, s2, dof, "the residuals are zero (the model reproduces the data exactly), so "
                          "standard errors rescaled by the residual variance would be 0; not estimable from "
                          "these data")
    else:
        s2_scale = s2
    C = np.linalg.inv(schur)
    C = 0.5 * (C + C.T)
    S = np.diag(param_scale)
    return Covariance(S @ C @ S * s2_scale, s2, dof, message)


def _equilibrated(A: sps.csr_matrix) -> sps.csr_matrix:
    """The rows of ``A`` with a non-zero entry, each divided by its largest magnitude (its
    data scaled in place of a product with a diagonal matrix: the same numbers)."""
    A = sps.csr_matrix(A)
    A.sum_duplicates()
    counts = np.diff(A.indptr)
    row_max = np.zeros(A.shape[0])
    filled = counts > 0
    if A.nnz:
        row_max[filled] = np.maximum.reduceat(np.abs(A.data), A.indptr[:-1][filled])
    keep = np.flatnonzero(row_max > 0)
    A = A[keep, :] if keep.size < A.shape[0] else A.copy()
    A.data *= np.repeat(1.0 / row_max[keep], np.diff(A.indptr))
    return A


#: Σ (non-zeros per row)² over the rows that touch unseen variables (a bound on the size of
#: their ``AᵀA``) above which a matched subset of them is tried first; below it the fill
#: costs little and every touching row is added.
_MATCH_ABOVE = 2e6


def _row_choices(A: sps.csr_matrix, unseen: np.ndarray, touch: np.ndarray):
    """The sets of rows of ``A`` to add as ``ρ AᵀA``, fewest first.

    1. When their ``AᵀA`` could be large (``_MATCH_ABOVE``; on a 60 s ship-stance record it
       would hold 20 M non-zeros, more than the rest of the KKT matrix), a matching: each
       variable in ``unseen`` paired with its own row (Hopcroft–Karp on
       the rows' sparsity; the rows with at most the median number of non-zeros among
       ``touch`` first, then any row for the variables left), so that the added term is
       structurally definite on those variables while coupling few others: a kinematic
       row q̇ = u has four non-zeros where a row of a multibody residual has dozens.
    2. Every row in ``touch`` (those touching any variable in ``unseen``).
    3. Every row.
    A set equal to the one before it is skipped."""
    from scipy.sparse.csgraph import maximum_bipartite_matching

    na = A.shape[0]
    choices = []
    row_nnz = np.diff(A.indptr)
    if unseen.size and touch.size and float(np.sum(row_nnz[touch].astype(float) ** 2)) > _MATCH_ABOVE:
        B = A[:, unseen].tocsr()
        B.eliminate_zeros()
        match = np.full(unseen.size, -1)
        sparse_rows = touch[row_nnz[touch] <= np.median(row_nnz[touch])]
        for candidates in (sparse_rows, touch):
            left = np.flatnonzero(match < 0)
            if not left.size:
                break
            graph = B[candidates][:, left].tocsr()
            graph.data[:] = 1.0
            found = maximum_bipartite_matching(graph, perm_type="row")
            match[left[found >= 0]] = candidates[found[found >= 0]]
        if np.all(match >= 0):
            choices.append(np.unique(match))
    choices.append(touch)
    choices.append(np.arange(na))
    out, last = [], None
    for rows in choices:
        if last is None or rows.size != last.size:
            out.append(rows)
            last = rows
    return out


def _norm(v: np.ndarray) -> float:
    """The Frobenius norm, summed by NumPy's own loop: ``np.linalg.norm`` calls BLAS's dot,
    which on a long array starts threads (0.13 s of the two-link covariance with other jobs
    on the machine, for seven norms of a million elements)."""
    return math.sqrt(float(np.einsum("ij,ij->", v, v) if v.ndim == 2 else np.einsum("i,i->", v, v)))


def _gram(M: sps.spmatrix) -> sps.spmatrix:
    """``MᵀM`` (its own function, so the transposed copy is freed on return)."""
    return M.T @ M


def _solve_reduced(H, A, rho, rest, param_index, rows):
    """The Schur complement ``K_PP − K_SPᵀ K_SS⁻¹ K_SP`` (the reduced Hessian of the
    parameters) with the rows ``rows`` of ``A`` added as ``ρ AᵀA``, or a message saying why
    the factorisation failed."""
    na = A.shape[0]
    if rows.size:
        H = (H + rho * _gram(A[rows, :])).tocsc()
    H_rr = H[rest, :][:, rest].tocsc()
    A_r = A[:, rest].tocsr()
    A_r.sort_indices()
    nr = rest.size
    delta = 1e-9 / rho

    def exact_times(v: np.ndarray) -> np.ndarray:  # the exact (δ = 0) KKT matrix times v
        if solve is not None and solve.times is not None:
            return solve.times(v)
        return np.vstack([H_rr @ v[:nr] + A_r.T @ v[nr:], A_r @ v[:nr]])

    # K_SP: coupling of the other unknowns and the multipliers with the parameters
    H_p = H[:, param_index].tocsr()  # the parameters' columns first: a copy of a few columns, not of H
    K_sp = np.vstack([H_p[rest, :].toarray(), A[:, param_index].toarray()])
    K_pp = H_p[param_index, :].toarray()
    del H  # only the blocks of K and the parameter columns are needed from here on (memory)
    # the scale of a residual that rounding alone leaves: ‖K‖·‖x‖ + ‖b‖ (Frobenius norms of
    # the exact matrix), the denominator of the normwise backward error (a solution far
    # larger than the right-hand side cannot have a residual far below ε‖K‖‖x‖)
    k_norm = float(np.sqrt(_norm(H_rr.data) ** 2 + 2.0 * _norm(A_r.data) ** 2)) if nr else 0.0
    b_norm = _norm(K_sp)

    def scale(v: np.ndarray) -> float:
        return k_norm * _norm(v) + b_norm

    if nr + na == 0:  # nothing but parameters: the reduced Hessian is JᵀJ itself
        return _schur(K_pp, np.zeros_like(K_pp))
    solve = None
    try:
        solve = _KKTSolver(H_rr, A_r, delta, K_sp.shape[1])
        with capture_native_output():  # it prints "zeros in D" from C++ when not identifiable
            sol = solve(K_sp)
            # refinement towards the exact (δ = 0) system.  The Schur complement is taken with
            # the residual's correction (:func:`_schur`), whose error is quadratic in the
            # solution's: stopped when the correction changes the covariance by at most 1e-6
            # (correlation-scaled), so that what it leaves is about its square; or when a step
            # no longer halves the residual (rounding reached; that step is undone).  Not
            # stopped at a small backward error alone: the solution of the δ-shifted system
            # has one (1e-13 on the two-link seed case) while its parameter block, a
            # difference of near-equal terms, is off by up to 1e-5 relative there (0.8 % on
            # cip).  The three LDLᵀ routes (the ordered one, qdldl's AMD, CasADi's ldl) give
            # covariances 1e-12 apart on the two-link case, 4e-12 on cip.
            best, best_size, last = sol, np.inf, np.inf
            best_resid = best_parts = None
            for _ in range(10):
                if not np.all(np.isfinite(sol)):
                    break
                resid = K_sp - exact_times(sol)
                size = _norm(resid)
                parts = (K_pp - K_sp.T @ sol, sol.T @ resid)
                if size < best_size:
                    best, best_size, best_resid, best_parts = sol, size, resid, parts
                if size == 0.0 or size > 0.5 * last or _correction_size(*parts) <= 1e-6:
                    break
                last = size
                sol = sol + solve(resid)
            sol = best
    except RuntimeError as exc:
        msg = str(exc).splitlines()[-1][:120]
        return f"KKT factorisation failed ({msg}); parameters not identifiable"
    if not np.all(np.isfinite(sol)):
        return ("the states are not determined at fixed parameters (zero pivots in the KKT factorisation); "
                "parameters not identifiable")
    # the residual of the solution kept (computed in the loop)
    residual = best_resid if best_resid is not None else K_sp - exact_times(sol)
    resid = _norm(residual)
    plain, correction = best_parts if best_parts is not None else (K_pp - K_sp.T @ sol, sol.T @ residual)
    if os.environ.get("COLLOC_DEBUG_COV"):
        print(f"covariance LDLᵀ residual {resid:.3g}, normwise backward error {resid / scale(sol):.3g}",
              file=sys.__stderr__)
    if resid > 1e-8 * scale(sol):  # normwise backward error of the solve
        return (f"KKT solve inaccurate (backward error {resid / scale(sol):.2g}); parameters not identifiable "
                "(try colloc.bootstrap)")
    return _schur(plain, correction)


def _schur(plain: np.ndarray, correction: np.ndarray) -> np.ndarray:
    """``K_pp − K_spᵀ K_ss⁻¹ K_sp`` from an approximate ``sol`` of ``K_ss sol = K_sp`` and its
    residual ``resid = K_sp − K_ss sol``: ``plain − correction`` with ``plain = K_pp − K_spᵀ sol``
    and ``correction = solᵀ resid``, symmetrised.  With ``sol = X + E`` (``X`` exact) this is
    ``S + Eᵀ K_ss E``: the error is quadratic in ``E`` where ``plain`` has ``−K_spᵀ E``."""
    schur = plain - correction
    return 0.5 * (schur + schur.T)


def _correction_size(plain: np.ndarray, correction: np.ndarray) -> float:
    """How much ``correction`` in :func:`_schur` changes the covariance: the largest change
    of an entry over ``√(C_ii C_jj)`` (``inf`` when either inverse fails)."""
    try:
        before = np.linalg.inv(0.5 * (plain + plain.T))
        after = np.linalg.inv(_schur(plain, correction))
    except np.linalg.LinAlgError:
        return np.inf
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.sqrt(np.outer(np.abs(np.diag(after)), np.abs(np.diag(after))))
        change = float(np.max(np.abs(before - after) / scale)) if after.size else 0.0
    return change if np.isfinite(change) else np.inf


class _KKTSolver:
    """``K⁻¹ B`` by a sparse LDLᵀ (no pivoting).

    First, when a C compiler exists, in the time order of the collocation structure
    (:func:`_time_order`, :mod:`colloc.inference.ldl`): no ordering search, which was most of
    a general factorisation's time (two-link seed case: 0.17 of qdldl's 0.19 s); its
    products with the exact ``K`` (``times``) run in C as well.  Should that order fill the
    factor too much or meet a zero pivot, a general ordering follows.

    With the optional package ``qdldl`` installed (``pip install qdldl``; the LDLᵀ of
    quasi-definite matrices behind OSQP, Stellato et al. 2020) K is factorised once from its
    NumPy arrays (its upper triangle assembled directly from the blocks' index arrays), with
    AMD ordering; on a 60 s ship-stance record (576k rows, 35M non-zeros) that took 9 s
    against 24 s for the CasADi route below, which spends 10 s building CasADi's pattern and
    9 s in its symbolic analysis.  Should qdldl refuse the matrix
    (a zero pivot: not quasi-definite), the CasADi route is taken, as without qdldl.

    Otherwise CasADi's ``ldl``: the factorisation and the solve run inside one CasADi
    function whose numbers are passed through its buffers (no copy through SWIG's
    element-wise conversion, which for a KKT matrix of a million non-zeros costs more than
    the factorisation).  Each call factorises the numbers anew (cheap next to the symbolic
    analysis, done once here); a zero pivot gives non-finite values, not an exception."""

    def __init__(self, H: sps.csc_matrix, A: sps.csr_matrix, delta: float, ncol: int) -> None:
        """``K = [[H, Aᵀ], [A, −δI]]`` (H symmetric, A with sorted indices)."""
        nr, na = H.shape[0], A.shape[0]
        n = nr + na
        self.shape = (n, ncol)
        upper = _upper_kkt(H, A, delta)
        self._ordered = _ordered_factor(upper, A)
        self.times = None  # the exact (δ = 0) K times a matrix, in C when the ordered route is taken
        if self._ordered is not None:
            self.times = lambda v: self._ordered.times(v, diagonal_to=nr)
            return
        self._qdldl = _qdldl_factor(upper)
        if self._qdldl is not None:
            return
        K = sps.bmat([[H, A.T], [A, -delta * sps.eye(na) if na else None]], format="csc")
        K.sort_indices()
        pattern = sparsity_from_ccs(n, n, K.indptr, K.indices)
        Ks, Bs = ca.MX.sym("K", pattern), ca.MX.sym("B", n, ncol)
        linsol = ca.Linsol("covariance", "ldl", pattern, {})
        self._f = ca.Function("kkt_solve", [Ks, Bs], [linsol.solve(Ks, Bs)])
        self._buf, self._eval = function_buffer(self._f)
        self._K = np.ascontiguousarray(K.data, dtype=float)  # kept alive: the buffer points at it
        self._buf.set_arg(0, view(self._K))

    def __call__(self, B: np.ndarray) -> np.ndarray:
        n, ncol = self.shape
        if self._ordered is not None:
            return self._ordered.solve(B) if ncol else np.zeros((n, 0))
        if self._qdldl is not None:
            B = np.asarray(B, dtype=float)
            return np.column_stack([self._qdldl.solve(np.ascontiguousarray(B[:, j])) for j in range(ncol)]) \
                if ncol else np.zeros((n, 0))
        b = np.ascontiguousarray(np.asarray(B, dtype=float).T).ravel()  # column-major
        out = np.empty(n * ncol)
        self._buf.set_arg(1, view(b))
        self._buf.set_res(0, view(out))
        self._eval()
        return out.reshape(ncol, n).T


def _upper_kkt(H: sps.csc_matrix, A: sps.csr_matrix, delta: float) -> sps.csc_matrix:
    """The upper triangle of ``[[H, Aᵀ], [A, −δI]]`` in CSC, assembled from the index arrays:
    column ``nr + j`` holds row ``j`` of ``A`` (its CSR arrays) and the diagonal ``−δ``."""
    nr, na = H.shape[0], A.shape[0]
    top = sps.triu(H, format="csc")
    top.sort_indices()
    ptr = A.indptr + np.arange(na + 1)          # one more entry per column: the diagonal
    diag = ptr[1:] - 1
    keep = np.ones(A.nnz + na, dtype=bool)
    keep[diag] = False
    indices = np.empty(A.nnz + na, dtype=np.int64)
    data = np.empty(A.nnz + na)
    indices[keep], data[keep] = A.indices, A.data
    indices[diag], data[diag] = nr + np.arange(na), -delta
    return sps.csc_matrix(
        (np.concatenate([top.data, data]), np.concatenate([top.indices, indices]),
         np.concatenate([top.indptr, top.nnz + ptr[1:]])), shape=(nr + na, nr + na))


def _time_order(A: sps.csr_matrix) -> np.ndarray:
    """An elimination order of ``[[H, Aᵀ], [A, −δI]]`` from the collocation structure: the
    variables in their NLP order (node after node, so in time), each constraint row just
    before the first variable it touches (rows touching nothing last)."""
    na, nr = A.shape
    first = np.full(na, nr, dtype=np.int64)
    nonempty = np.diff(A.indptr) > 0
    if nonempty.any():
        first[nonempty] = np.minimum.reduceat(A.indices, A.indptr[:-1][nonempty])
    return np.argsort(np.concatenate([2 * np.arange(nr, dtype=np.int64), 2 * first - 1]), kind="stable")


def _ordered_factor(K: sps.csc_matrix, A: sps.csr_matrix):
    """The LDLᵀ of K (an upper triangle) in the order of :func:`_time_order`
    (:mod:`colloc.inference.ldl`), or None without a compiler or when that order fills the
    factor too much or meets a zero pivot (a general ordering is tried then)."""
    from .ldl import ordered_ldl

    factor = ordered_ldl(K, _time_order(A))
    return None if factor is None or isinstance(factor, str) else factor


def _qdldl_factor(K: sps.csc_matrix):
    """qdldl's factorisation of K (an upper triangle), or None without qdldl or when it refuses."""
    try:
        import qdldl
    except ImportError:
        return None
    try:
        return qdldl.Solver(K, upper=True)
    except (RuntimeError, ValueError):
        return None


def constrained_covariance(
    jac_res: Jacobian,
    res: np.ndarray,
    jac_eq: Jacobian,
    kept: np.ndarray,
    eliminated: np.ndarray,
    jac_con: Jacobian | None = None,
    scale: np.ndarray | None = None,
) -> Covariance:
    """Gauss–Newton covariance of the unknowns ``z`` of an equality-constrained least squares,
    the other unknowns ``w`` eliminated through equations that determine them.

    The NLP's variables ``v`` split into ``z = v[kept]``, ``w = v[eliminated]`` and the rest,
    held fixed (bounds that are equal, contact forces of a contact out of touch).  Linearised
    at the solution, the equations ``E(z, w) = 0`` (as many as ``w``, ``∂E/∂w`` non-singular:
    collocation defects, continuity, jumps) give ``dw/dz = −E_w⁻¹ E_z`` (the implicit function
    theorem); the residuals' sensitivity is then ``J = R_z + R_w dw/dz`` and the constraints
    ``C(z, w) = 0`` left on ``z`` (landing conditions, consistent initial states) restrict ``z``
    to the null space of ``C_z + C_w dw/dz``, spanned by the orthonormal columns of ``N``::

        cov(z) = s² · N (Nᵀ JᵀJ N)⁻¹ Nᵀ,   s² = ‖r‖² / (len(r) − dim N).

    This is the reduced-Hessian form of the top-left block of the inverse KKT matrix, the same
    covariance :func:`parameter_covariance` computes by a sparse factorisation of the whole KKT
    system (Nocedal & Wright, *Numerical Optimization*, 2nd ed. 2006, §16.2, the null-space
    method; for the Gauss–Newton covariance of constrained least squares see Bock, Kostina &
    Schlöder 2007, GAMM-Mitteilungen 30(2)).  It suits hybrid problems whose unknowns sort
    into the two kinds by hand; ``dim N`` is small (parameters, switching times, initial states).

    Parameters
    ----------
    jac_res : casadi.DM, scipy.sparse matrix or ndarray, shape (nres, nvar)
        Jacobian of the weighted residuals ``r`` in the NLP variables.
    res : ndarray, shape (nres,)
        The weighted residuals at the solution.
    jac_eq : (the same kinds), shape (len(eliminated), nvar)
        Jacobian of the equations that determine ``w``.
    kept, eliminated : ndarray of int
        Indices of ``z`` and ``w`` among the NLP variables (disjoint).
    jac_con : (the same kinds), shape (ncon, nvar), optional
        Jacobian of the constraints left on ``z`` (none: ``N = I``).
    scale : ndarray, shape (len(kept),), optional
        Physical = ``scale`` · NLP value of each ``z``: the matrix is returned in physical units.

    Returns
    -------
    Covariance
        ``matrix`` the covariance of ``z`` (NaN, and ``message`` why, when ``Nᵀ JᵀJ N`` is
        singular: the data do not determine every direction); ``dof = max(nres − dim N, 1)``.
    """
    from scipy.linalg import null_space
    from scipy.sparse.linalg import splu

    z = np.asarray(kept, dtype=int)
    w = np.asarray(eliminated, dtype=int)
    if np.intersect1d(z, w).size:
        raise ValueError("constrained_covariance: an unknown is both kept and eliminated")
    R, E = _as_csc(jac_res), _as_csc(jac_eq)
    if E.shape[0] != w.size:
        raise ValueError(f"constrained_covariance: {E.shape[0]} equations for {w.size} eliminated unknowns")
    r = np.asarray(res, dtype=float).ravel()
    if R.shape[0] != r.size:
        raise ValueError(f"constrained_covariance: {R.shape[0]} Jacobian rows for {r.size} residuals")
    dwdz = -splu(E[:, w].tocsc()).solve(E[:, z].toarray()) if w.size else np.zeros((0, z.size))
    J = R[:, z].toarray() + R[:, w] @ dwdz
    G = None if jac_con is None else _as_csc(jac_con)
    if G is not None and G.shape[0]:
        N = null_space(G[:, z].toarray() + G[:, w] @ dwdz)
    else:
        N = np.eye(z.size)
    dof = max(r.size - N.shape[1], 1)
    s2 = float(r @ r) / dof
    try:
        cov = s2 * N @ np.linalg.inv(N.T @ J.T @ J @ N) @ N.T
        message = ""
    except np.linalg.LinAlgError:
        cov = np.full((z.size, z.size), np.nan)
        message = "the reduced Gauss–Newton matrix is singular: the data do not determine every unknown"
    if scale is not None:
        S = np.asarray(scale, dtype=float)
        cov = cov * S[:, None] * S[None, :]
    return Covariance(cov, s2, dof, message)


def _as_csc(m) -> sps.csc_matrix:
    """A CasADi DM, scipy sparse matrix or numpy array as a CSC matrix."""
    if isinstance(m, np.ndarray):
        return sps.csc_matrix(np.atleast_2d(m))
    return _to_scipy(m).tocsc()
