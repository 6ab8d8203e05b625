"""Uncertainty of a solved NLP: :func:`parameter_covariance`, the Gauss–Newton covariance of
the parameters, with the states and free inputs eliminated through the linearised
constraints (the reduced Hessian), and the residual variance estimated from the fit."""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass

import casadi as ca
import numpy as np
import scipy.sparse as sps
import scipy.sparse.linalg as spla

__all__ = ["Covariance", "parameter_covariance"]


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
    """

    matrix: np.ndarray
    residual_variance: float
    dof: int
    message: str = ""

    @property
    def standard_errors(self) -> np.ndarray:
        """Square roots of the diagonal."""
        with np.errstate(invalid="ignore"):
            return np.sqrt(np.diag(self.matrix))


def _to_scipy(m: ca.DM) -> sps.csc_matrix:
    sp = m.sparsity()
    return sps.csc_matrix(
        (np.array(m.nonzeros()), np.array(sp.row()), np.array(sp.colind())), shape=m.shape
    )


@contextlib.contextmanager
def _quiet_output():
    """Silence what compiled code writes to file descriptors 1 and 2 (not Python output)."""
    fds = []
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
            fds.append(stream.fileno())
        except (AttributeError, OSError, ValueError):  # not a real file (e.g. captured)
            pass
    saved = [os.dup(fd) for fd in fds]
    try:
        with open(os.devnull, "w") as null:
            for fd in fds:
                os.dup2(null.fileno(), fd)
            yield
    finally:
        for fd, keep in zip(fds, saved):
            os.dup2(keep, fd)
            os.close(keep)


def parameter_covariance(
    jac_res: ca.DM,
    res: np.ndarray,
    jac_g: ca.DM,
    equality: np.ndarray,
    param_index: np.ndarray,
    param_scale: np.ndarray,
    num_fit_residuals: int,
    fit_res: np.ndarray,
) -> Covariance:
    """Gauss–Newton covariance of the parameters of an equality-constrained least squares.

    Parameters
    ----------
    jac_res : casadi.DM, shape (nres, nx)
        Jacobian of all weighted residuals with respect to the (scaled) NLP variables.
    res : ndarray, shape (nres,)
        All weighted residuals (fit and regularisation).
    jac_g : casadi.DM, shape (ng, nx)
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

    Notes
    -----
    The top-left block of the inverse KKT matrix ``[[JᵀJ, Aᵀ], [A, 0]]`` equals
    ``Z (Zᵀ JᵀJ Z)⁻¹ Zᵀ`` with ``Z`` a null-space basis of ``A``, the linearised
    constraints.  One sparse LDLᵀ factorisation (CasADi's ``ldl``, fill-reducing ordering)
    and one solve per parameter give the parameter block without forming ``Z``.
    """
    J = _to_scipy(jac_res)
    A = _to_scipy(jac_g)[np.flatnonzero(equality), :]
    nx = J.shape[1]
    na = A.shape[0]
    npar = len(param_index)
    free_dirs = nx - na
    dof = int(num_fit_residuals - free_dirs)
    message = ""
    if dof > 0:
        s2 = float(np.dot(fit_res, fit_res) / dof)
    else:
        s2 = 1.0
        message = (
            f"no residual degrees of freedom ({num_fit_residuals} observations, {free_dirs} free "
            "directions): covariance uses the fit weights as exact 1/σ²"
        )
    # quasi-definite regularisation: an LDLᵀ factorisation exists for any ordering, and
    # the O(eps) perturbation is far below the statistical precision of the result
    H = (J.T @ J).tocsc()
    hmax = max(1.0, float(abs(H).max()) if H.nnz else 1.0)
    amax = float(abs(A).max()) if A.nnz else 1.0
    eps = 1e-13 * hmax
    # the −δ block acts like a penalty (1/δ)·AᵀA on the constraints: δ must be tiny relative
    # to ‖A‖²/‖H‖, or the constraints are softened and the covariance inflated
    delta = 1e-13 * amax**2 / hmax
    K = sps.bmat([[H + eps * sps.eye(nx), A.T], [A, -delta * sps.eye(na) if na else None]], format="csc")
    K.sort_indices()
    rhs = np.zeros((nx + na, npar))
    rhs[param_index, np.arange(npar)] = 1.0
    try:
        Kc = ca.DM(ca.Sparsity(K.shape[0], K.shape[1], K.indptr.tolist(), K.indices.tolist()), K.data)
        sol = None
        # CasADi's sparse LDLᵀ (no pivoting) on the quasi-definite matrix, with a few steps
        # of iterative refinement; an unstable pivot sequence shows in the residual
        solver = ca.Linsol("covariance", "ldl", Kc.sparsity(), {})
        with _quiet_output():  # it prints "zeros in D" from C++; the residual decides
            solver.sfact(Kc)
            solver.nfact(Kc)
            trial = np.array(solver.solve(Kc, ca.DM(rhs)))
            for _ in range(3):
                trial = trial + np.array(solver.solve(Kc, ca.DM(rhs - K @ trial)))
        kmax = float(abs(K).max()) if K.nnz else 1.0
        if np.all(np.isfinite(trial)):
            resid = np.linalg.norm(K @ trial - rhs)
            if os.environ.get("COLLOC_DEBUG_COV"):
                print(f"covariance LDLᵀ residual {resid:.3g}", file=sys.__stderr__)
            if resid <= 1e-9 * (kmax * np.linalg.norm(trial) + np.linalg.norm(rhs)):
                sol = trial
        if sol is None:
            if K.shape[0] > 50_000:  # a general LU of a large KKT matrix can exhaust memory
                nan = np.full((npar, npar), np.nan)
                return Covariance(nan, s2, dof, "the sparse LDLᵀ of the KKT matrix was not accurate and the "
                                  "matrix is too large for an LU fallback; use colloc.bootstrap")
            sol = spla.splu(K, permc_spec="MMD_AT_PLUS_A").solve(rhs)  # LU with partial pivoting
    except RuntimeError as exc:
        nan = np.full((npar, npar), np.nan)
        msg = str(exc).splitlines()[-1][:120]
        return Covariance(nan, s2, dof, f"KKT factorisation failed ({msg}); parameters not identifiable")
    C = sol[param_index, :]
    C = 0.5 * (C + C.T)
    if not np.all(np.isfinite(C)) or np.any(np.diag(C) < -1e-12 * np.abs(C).max()):
        nan = np.full((npar, npar), np.nan)
        return Covariance(nan, s2, dof, "reduced Hessian is not positive definite; parameters not identifiable")
    S = np.diag(param_scale)
    return Covariance(S @ C @ S * s2, s2, dof, message)
