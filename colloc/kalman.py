"""Exact maximum likelihood for linear-Gaussian state-space models (Kalman prediction-error method).

The model is continuous in time with parameters ``θ``::

    s'(t) = A(θ) s(t) + G(θ) x(t)
    y_k   = C(θ) s(t_k) + D(θ) x_k + e_k,        e_k ~ N(0, R(θ))

where ``x(t)`` is a vector of independent unit-variance Gaussian white sequences held
constant over each sample interval (zero-order hold: ``x(t) = x_k`` on ``[t_k, t_k + dt)``,
``x_k ~ N(0, I)``).  That is how records are usually generated (``randn`` at the sample rate,
then filtered), and the discretisation below is exact for it::

    s_{k+1} = Φ s_k + Γ x_k,     Φ = expm(A dt),   Γ = ∫₀^dt expm(A τ) dτ · G,

both read off one block exponential ``expm([[A, G], [0, 0]] dt)``.  Because ``x_k`` drives
both ``s_{k+1}`` (through ``Γ``) and ``y_k`` (through ``D``), the process and measurement noise
are correlated (cross-covariance ``Γ Dᵀ``); the filter below is the one-step *predictor*
form, which handles that correlation exactly.  ``D`` defaults to zero.

The initial state ``s_0`` has mean ``s̄_0`` (default zero) and covariance ``P_0`` (default the
zero matrix: the initial state is known exactly).

The negative log-likelihood of a record ``y_0 … y_{N-1}`` is, with the innovations
``ε_k = y_k − C m_k`` and their covariances ``S_k = C P_k Cᵀ + D Dᵀ + R``::

    NLL(θ) = ½ Σ_k [ log det S_k + ε_kᵀ S_k⁻¹ ε_k + m log 2π ].

Everything is a CasADi expression: one filter step is an SX :class:`casadi.Function` mapped
over the record with ``mapaccum`` (no Python loop in the evaluation path, the data enter as
a matrix input), so the exact gradient and Hessian of the NLL come from algorithmic
differentiation.  The matrix exponential is a Padé-13 approximant with scaling and squaring
(Higham 2005) written in CasADi, because ``casadi.expm`` needs the SLICOT plugin, which is not
always installed and has no derivatives.

Parameters that must be positive (a noise standard deviation, say) are kept positive with
``bounds``; alternatively parameterise the model in ``log σ`` and leave it unbounded.

Example: the controlled inverted pendulum of quiet standing (Barauskas & Krušinskienė 2007)::

    def cip(theta):
        kp, ki, kd, sigma = theta[0], theta[1], theta[2], theta[3]
        A = ca.vertcat(ca.horzcat(0, 1, 0, 0),
                       ca.horzcat((m*g*h - kp)/I, -kd/I, -ki/I, 1/I),
                       ca.horzcat(1, 0, 0, 0),
                       ca.horzcat(0, 0, 0, -1/B))
        G = ca.vertcat(0, 0, 0, A_d/B)
        C = ca.horzcat(kp, kd, ki, -1)/(m*g)
        return A, G, C, sigma**2

    model = LinearGaussianModel(["KP", "KI", "KD", "sigma"], cip, dt=0.01)
    fit = maximum_likelihood(model, cop, [1100, 10, 250, 1e-4],
                             bounds={"sigma": (1e-9, None)})
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import casadi as ca
import numpy as np
import pandas as pd

from .errors import CollocInputError, DataError, ModelError

__all__ = [
    "LinearGaussianModel",
    "MLResult",
    "expm",
    "expm_squarings",
    "maximum_likelihood",
    "negative_log_likelihood",
    "simulate",
]

# Padé-13 coefficients and the 1-norm up to which it is accurate to unit roundoff (Higham 2005).
_PADE13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
    129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
    40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)
_THETA13 = 5.371920351148152
_LOG_2PI = math.log(2.0 * math.pi)


# ---------------------------------------------------------------------------------------------
# matrix exponential
# ---------------------------------------------------------------------------------------------


def expm_squarings(norm1: float) -> int:
    """Number of squarings the Padé-13 approximant needs for a matrix of this 1-norm.

    Parameters
    ----------
    norm1 : float
        The 1-norm (largest absolute column sum) of the matrix to exponentiate.

    Returns
    -------
    int
        The smallest ``s >= 0`` with ``norm1 / 2**s <= 5.37`` (Higham 2005, θ₁₃).
    """
    norm1 = float(norm1)
    if not math.isfinite(norm1):
        raise CollocInputError(f"expm: the matrix norm is {norm1}; the matrix must be finite")
    if norm1 <= _THETA13:
        return 0
    return max(0, math.ceil(math.log2(norm1 / _THETA13)))


def expm(M, squarings: int):
    """Matrix exponential of a CasADi matrix by Padé-13 with scaling and squaring.

    The approximant is evaluated on ``M / 2**squarings`` and squared back.  It is a plain
    CasADi expression (SX, MX or DM), so it can be differentiated to any order.  It is
    accurate to unit roundoff when ``‖M‖₁ / 2**squarings <= 5.37``; choose ``squarings`` with
    :func:`expm_squarings` (a few more are harmless, fewer lose accuracy).

    Parameters
    ----------
    M : casadi.SX, casadi.MX or casadi.DM
        A square matrix.
    squarings : int
        Number of scalings by ½ before, and squarings after, the Padé approximant.

    Returns
    -------
    Same type as ``M``
        ``expm(M)``.
    """
    if M.shape[0] != M.shape[1]:
        raise CollocInputError(f"expm: the matrix must be square, got {M.shape[0]}x{M.shape[1]}")
    squarings = int(squarings)
    if squarings < 0:
        raise CollocInputError(f"expm: squarings must be >= 0, got {squarings}")
    n = M.shape[0]
    eye = ca.DM.eye(n)
    a = M / (2.0**squarings)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    b = _PADE13
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    x = ca.solve(v - u, v + u)
    for _ in range(squarings):
        x = x @ x
    return x


# ---------------------------------------------------------------------------------------------
# small symbolic linear algebra for the filter step (elementwise, so it stays SX)
# ---------------------------------------------------------------------------------------------


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
    X = [[None] * m for _ in range(n)]
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
    X = [[None] * m for _ in range(n)]
    for c in range(m):
        for i in reversed(range(n)):
            v = B[i, c]
            for k in range(i + 1, n):
                v = v - L[k][i] * X[k][c]
            X[i][c] = v / L[i][i]
    return ca.vertcat(*[ca.horzcat(*row) for row in X])


def _filter_step(n: int, nx: int, ny: int) -> ca.Function:
    """One predictor-form Kalman step with correlated process/measurement noise.

    Inputs ``(m, P, y, Φ, Γ, C, D, R)``: the predicted mean and covariance of ``s_k`` given
    ``y_0 … y_{k-1}``, the sample ``y_k`` and the discrete matrices.  Outputs the predicted
    mean and covariance of ``s_{k+1}`` and the term ``½[log det S + εᵀS⁻¹ε + m log 2π]``.

    The gain is ``K = (Φ P Cᵀ + Γ Dᵀ) S⁻¹`` and the covariance update is the Joseph form
    ``(Φ − KC) P (Φ − KC)ᵀ + (Γ − KD)(Γ − KD)ᵀ + K R Kᵀ``, positive semidefinite by
    construction and exact for the optimal gain.  Only the upper triangle of ``P`` is read.
    """
    m = ca.SX.sym("m", n)
    P_in = ca.SX.sym("P", n, n)
    P = _symmetric_from_upper(P_in)
    y = ca.SX.sym("y", ny)
    Phi = ca.SX.sym("Phi", n, n)
    Gam = ca.SX.sym("Gamma", n, nx)
    C = ca.SX.sym("C", ny, n)
    D = ca.SX.sym("D", ny, nx)
    R = ca.SX.sym("R", ny, ny)

    eps = y - C @ m
    S = _symmetric_from_upper(C @ P @ C.T + D @ D.T + R)
    L = _cholesky_lower(S)
    z = _forward_solve(L, eps)  # L⁻¹ ε
    logdet = 0
    for i in range(ny):
        logdet = logdet + 2.0 * ca.log(L[i][i])
    term = 0.5 * (logdet + ca.sumsqr(z) + ny * _LOG_2PI)

    B = Phi @ P @ C.T + Gam @ D.T  # cross-covariance of s_{k+1} and y_k, n × ny
    K = _backward_solve_transposed(L, _forward_solve(L, B.T)).T  # B S⁻¹
    m_next = Phi @ m + K @ eps
    F = Phi - K @ C
    H = Gam - K @ D
    P_next = F @ P @ F.T + H @ H.T + K @ R @ K.T
    P_next = _symmetric_from_upper(P_next)
    return ca.Function("kalman_step", [m, P_in, y, Phi, Gam, C, D, R], [m_next, P_next, term],
                       ["m", "P", "y", "Phi", "Gamma", "C", "D", "R"], ["m_next", "P_next", "nll"])


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------


def _as_symbolic(value, sym_type, what: str):
    """Convert a user's matrix (CasADi expression, number or array) to ``sym_type``."""
    if isinstance(value, (ca.SX, ca.MX)):
        if not isinstance(value, sym_type):
            raise ModelError(f"LinearGaussianModel: {what} is {type(value).__name__}, expected "
                             f"{sym_type.__name__}")
        return value
    if isinstance(value, ca.DM):
        return sym_type(value)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"LinearGaussianModel: {what} must be a CasADi expression or numeric, "
                         f"got {value!r}") from exc
    if arr.ndim > 2:
        raise ModelError(f"LinearGaussianModel: {what} must be a matrix, got an array of shape {arr.shape}")
    if arr.ndim < 2:
        arr = arr.reshape(-1, 1)
    return sym_type(ca.DM(arr))


class LinearGaussianModel:
    """A linear-Gaussian state-space model with zero-order-hold white-noise inputs.

    ``s' = A(θ) s + G(θ) x(t)``, ``y_k = C(θ) s(t_k) + D(θ) x_k + e_k`` with ``e_k ~ N(0, R(θ))``
    and ``x(t) = x_k ~ N(0, I)`` on each sample interval.  See the module docstring.

    Parameters
    ----------
    parameter_names : sequence of str
        Names of the entries of the parameter vector ``θ``, in order.
    matrices : callable
        ``matrices(theta) -> (A, G, C, R)`` or ``(A, G, C, R, D)`` or a mapping with keys
        ``"A", "G", "C", "R"`` and optionally ``"D"``.  ``theta`` is a CasADi column vector
        (SX; MX if the callable fails on SX), and the matrices are CasADi expressions of it
        (or constants): ``A`` is n×n, ``G`` n×q, ``C`` p×n, ``R`` p×p (symmetric positive
        semidefinite; the innovation covariance must be positive definite), ``D`` p×q.  A
        scalar ``R`` is allowed for one output.
    dt : float
        Uniform sampling interval.
    initial_mean : array-like or callable, optional
        Mean of the state at the first sample, length n, or ``callable(theta)`` returning
        a CasADi expression.  Default zero.
    initial_covariance : array-like or callable, optional
        Covariance of the state at the first sample (n×n, symmetric positive semidefinite),
        or ``callable(theta)``.  Default the zero matrix (state known exactly).
    name : str, optional
        Used in CasADi function names and messages.

    Notes
    -----
    The matrix exponential is compiled for a fixed number of squarings; the number is
    chosen from ``‖[[A, G], [0, 0]] dt‖₁`` at the parameters where the model is evaluated
    (one compiled version is cached per number of squarings and record length).
    """

    def __init__(
        self,
        parameter_names: Sequence[str],
        matrices: Callable[[Any], Any],
        *,
        dt: float,
        initial_mean=None,
        initial_covariance=None,
        name: str = "lgss",
    ) -> None:
        if isinstance(parameter_names, str):
            raise ModelError("LinearGaussianModel: parameter_names must be a sequence of names, "
                             "not one string")
        names = list(parameter_names)
        if not names:
            raise ModelError("LinearGaussianModel: at least one parameter is needed")
        for nm in names:
            if not isinstance(nm, str) or not nm:
                raise ModelError("LinearGaussianModel: parameter names must be non-empty "
                                 f"strings, got {nm!r}")
        dup = sorted({nm for nm in names if names.count(nm) > 1})
        if dup:
            raise ModelError(f"LinearGaussianModel: duplicate parameter names {dup}")
        if not callable(matrices):
            raise ModelError("LinearGaussianModel: matrices must be a callable theta -> (A, G, C, R)")
        try:
            dt = float(dt)
        except (TypeError, ValueError) as exc:
            raise ModelError(f"LinearGaussianModel: dt must be a number, got {dt!r}") from exc
        if not (math.isfinite(dt) and dt > 0):
            raise ModelError(f"LinearGaussianModel: dt must be finite and > 0, got {dt}")

        self.parameter_names: tuple[str, ...] = tuple(names)
        self.dt = dt
        self.name = str(name)
        np_ = len(names)

        built = None
        errors = []
        for sym_type in (ca.SX, ca.MX):
            theta = sym_type.sym("theta", np_)
            try:
                out = matrices(theta)
            except Exception as exc:  # noqa: BLE001 - retried with MX, then reported
                errors.append(f"{sym_type.__name__}: {type(exc).__name__}: {exc}")
                continue
            built = (sym_type, theta, out)
            break
        if built is None:
            raise ModelError("LinearGaussianModel: calling matrices(theta) failed: " + "; ".join(errors))
        sym_type, theta, out = built

        if isinstance(out, Mapping):
            missing = [k for k in ("A", "G", "C", "R") if k not in out]
            extra = sorted(set(out) - {"A", "G", "C", "R", "D"})
            if missing or extra:
                raise ModelError("LinearGaussianModel: matrices() mapping needs keys A, G, C, R "
                                 f"(and optionally D); missing {missing}, unknown {extra}")
            mats = [out["A"], out["G"], out["C"], out["R"], out.get("D")]
        else:
            try:
                mats = list(out)
            except TypeError as exc:
                raise ModelError("LinearGaussianModel: matrices() must return (A, G, C, R) "
                                 "or (A, G, C, R, D)") from exc
            if len(mats) not in (4, 5):
                raise ModelError(f"LinearGaussianModel: matrices() returned {len(mats)} items; "
                                 "expected (A, G, C, R) or (A, G, C, R, D)")
            if len(mats) == 4:
                mats.append(None)
        for v, k in zip(mats[:4], "AGCR"):
            if v is None:
                raise ModelError(f"LinearGaussianModel: matrices() returned None for {k}")
        A, G, C, R, D = (None if v is None else _as_symbolic(v, sym_type, k)
                         for v, k in zip(mats, "AGCRD"))
        n = A.shape[0]
        if A.shape != (n, n) or n == 0:
            raise ModelError("LinearGaussianModel: A must be square and non-empty, got "
                             f"{A.shape[0]}x{A.shape[1]}")
        if G.shape[0] != n or G.shape[1] == 0:
            raise ModelError(f"LinearGaussianModel: G must have {n} rows and at least one column, "
                             f"got {G.shape[0]}x{G.shape[1]}")
        q = G.shape[1]
        if C.shape[1] != n or C.shape[0] == 0:
            raise ModelError(f"LinearGaussianModel: C must have {n} columns and at least one row, "
                             f"got {C.shape[0]}x{C.shape[1]}")
        p = C.shape[0]
        if R.shape == (1, 1) and p > 1:
            raise ModelError(f"LinearGaussianModel: R must be {p}x{p} for {p} outputs, got a scalar")
        if R.shape != (p, p):
            raise ModelError(f"LinearGaussianModel: R must be {p}x{p}, got {R.shape[0]}x{R.shape[1]}")
        if D is None:
            D = sym_type(p, q)
        elif D.shape != (p, q):
            raise ModelError(f"LinearGaussianModel: D must be {p}x{q}, got {D.shape[0]}x{D.shape[1]}")

        m0 = self._initial(initial_mean, theta, sym_type, (n, 1), "initial_mean")
        P0 = self._initial(initial_covariance, theta, sym_type, (n, n), "initial_covariance")

        self.num_states, self.num_inputs, self.num_outputs = n, q, p
        self._theta = theta
        self._sym_type = sym_type
        self._A, self._G, self._C, self._D, self._R, self._m0, self._P0 = A, G, C, D, R, m0, P0
        try:
            self._continuous = ca.Function(
                f"{self.name}_continuous", [theta], [A, G, C, D, R, m0, P0],
                ["theta"], ["A", "G", "C", "D", "R", "m0", "P0"])
        except RuntimeError as exc:
            raise ModelError("LinearGaussianModel: the matrices may depend on theta only "
                             f"(free symbols found): {exc}") from exc
        M = ca.blockcat([[A, G], [sym_type(q, n), sym_type(q, q)]]) * dt
        self._block = ca.Function(f"{self.name}_block", [theta], [M])
        self._step = _filter_step(n, q, p)
        self._discrete_cache: dict[int, ca.Function] = {}
        self._nll_cache: dict[tuple[int, int], ca.Function] = {}
        self._deriv_cache: dict[tuple[str, int, int], ca.Function] = {}

    @staticmethod
    def _initial(value, theta, sym_type, shape, what):
        if value is None:
            return sym_type(*shape)
        if callable(value):
            try:
                value = value(theta)
            except Exception as exc:
                raise ModelError(f"LinearGaussianModel: {what}(theta) failed: "
                                 f"{type(exc).__name__}: {exc}") from exc
            expr = _as_symbolic(value, sym_type, what)
        else:
            try:
                arr = np.asarray(value, dtype=float)
            except (TypeError, ValueError) as exc:
                raise ModelError(f"LinearGaussianModel: {what} must be numeric or callable, got "
                                 f"{value!r}") from exc
            if shape[1] == 1:
                arr = arr.reshape(-1, 1) if arr.ndim <= 1 else arr
            if not np.all(np.isfinite(arr)):
                raise ModelError(f"LinearGaussianModel: {what} must be finite")
            if arr.shape != shape:
                raise ModelError(f"LinearGaussianModel: {what} must have shape {shape}, got {arr.shape}")
            if shape[1] != 1:
                if not np.allclose(arr, arr.T, rtol=1e-12, atol=0.0):
                    raise ModelError(f"LinearGaussianModel: {what} must be symmetric")
                eig = np.linalg.eigvalsh(arr)
                if eig.min() < -1e-12 * max(1.0, float(np.abs(eig).max())):
                    raise ModelError(f"LinearGaussianModel: {what} must be positive semidefinite "
                                     f"(smallest eigenvalue {eig.min():.3g})")
            expr = sym_type(ca.DM(arr))
        if expr.shape == (shape[1], shape[0]) and shape[1] == 1:
            expr = expr.T
        if expr.shape != shape:
            raise ModelError(f"LinearGaussianModel: {what} must have shape {shape}, got {expr.shape}")
        return expr

    # -- parameters ------------------------------------------------------------------------------

    @property
    def num_parameters(self) -> int:
        """Length of the parameter vector ``θ``."""
        return len(self.parameter_names)

    def parameter_vector(self, theta) -> np.ndarray:
        """Validate ``theta`` and return it as a float vector in ``parameter_names`` order.

        Parameters
        ----------
        theta : array-like or mapping
            Values in ``parameter_names`` order, or a mapping name → value naming every
            parameter.

        Returns
        -------
        numpy.ndarray
            Shape ``(num_parameters,)``.
        """
        names = self.parameter_names
        if isinstance(theta, Mapping):
            unknown = sorted(set(theta) - set(names))
            missing = [nm for nm in names if nm not in theta]
            if unknown or missing:
                raise CollocInputError(f"{self.name}: theta mapping has unknown names {unknown} "
                                       f"and lacks {missing}")
            values = [theta[nm] for nm in names]
        else:
            values = theta
        try:
            vec = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as exc:
            raise CollocInputError(f"{self.name}: theta must be numeric, got {theta!r}") from exc
        if vec.ndim == 2 and 1 in vec.shape:
            vec = vec.ravel()
        if vec.ndim != 1 or vec.size != len(names):
            raise CollocInputError(f"{self.name}: theta must have {len(names)} entries ({', '.join(names)}), "
                                   f"got shape {vec.shape}")
        if not np.all(np.isfinite(vec)):
            bad = [nm for nm, v in zip(names, vec) if not math.isfinite(v)]
            raise CollocInputError(f"{self.name}: theta is not finite for {bad}")
        return vec

    def data_matrix(self, y) -> np.ndarray:
        """Validate a record and return it as an ``(num_outputs, N)`` matrix (columns are samples).

        Parameters
        ----------
        y : array-like
            Shape ``(N, num_outputs)``; for one output also ``(N,)``.  Finite values only.

        Returns
        -------
        numpy.ndarray
            The transposed record, shape ``(num_outputs, N)``.
        """
        try:
            arr = np.asarray(y, dtype=float)
        except (TypeError, ValueError) as exc:
            raise DataError(f"{self.name}: y must be numeric") from exc
        p = self.num_outputs
        if arr.ndim == 1 and p == 1:
            arr = arr.reshape(-1, 1)
        if arr.ndim != 2 or arr.shape[1] != p:
            expected = "(N,) or (N, 1)" if p == 1 else f"(N, {p})"
            raise DataError(f"{self.name}: y must have shape {expected} (rows are samples), got {arr.shape}")
        if arr.shape[0] < 1:
            raise DataError(f"{self.name}: y has no samples")
        bad = ~np.isfinite(arr)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise DataError(f"{self.name}: y has {int(bad.sum())} non-finite values (NaN or inf); "
                            f"the first is at sample {row}, output {col}")
        return np.ascontiguousarray(arr.T)

    # -- numeric matrices ------------------------------------------------------------------------

    def squarings(self, theta) -> int:
        """Squarings the matrix exponential needs at ``theta`` (see :func:`expm_squarings`).

        Parameters
        ----------
        theta : array-like or mapping
            Parameter values.

        Returns
        -------
        int
        """
        M = np.array(self._block(self.parameter_vector(theta)))
        if not np.all(np.isfinite(M)):
            raise CollocInputError(f"{self.name}: the model matrices are not finite at theta")
        return expm_squarings(float(np.abs(M).sum(axis=0).max()))

    def _discrete(self, s: int) -> ca.Function:
        if s not in self._discrete_cache:
            n = self.num_states
            E = expm(self._block(self._theta), s)
            Phi, Gam = E[:n, :n], E[:n, n:]
            self._discrete_cache[s] = ca.Function(
                f"{self.name}_discrete_s{s}", [self._theta],
                [Phi, Gam, self._C, self._D, self._R, self._m0, self._P0],
                ["theta"], ["Phi", "Gamma", "C", "D", "R", "m0", "P0"])
        return self._discrete_cache[s]

    def continuous(self, theta) -> dict[str, np.ndarray]:
        """The continuous-time matrices at ``theta``.

        Parameters
        ----------
        theta : array-like or mapping
            Parameter values.

        Returns
        -------
        dict
            Keys ``A, G, C, D, R, m0, P0`` (``m0`` is a vector).
        """
        out = self._continuous(self.parameter_vector(theta))
        res = {k: np.array(v) for k, v in zip(["A", "G", "C", "D", "R", "m0", "P0"], out)}
        res["m0"] = res["m0"].ravel()
        return res

    def discretize(self, theta) -> dict[str, np.ndarray]:
        """The exact zero-order-hold discretisation at ``theta``.

        Parameters
        ----------
        theta : array-like or mapping
            Parameter values.

        Returns
        -------
        dict
            ``Phi, Gamma, Q (= Γ Γᵀ), C, D, R, S (= Γ Dᵀ, the process/measurement noise
            cross-covariance), m0, P0``.
        """
        vec = self.parameter_vector(theta)
        out = self._discrete(self.squarings(vec))(vec)
        res = {k: np.array(v) for k, v in zip(["Phi", "Gamma", "C", "D", "R", "m0", "P0"], out)}
        res["m0"] = res["m0"].ravel()
        res["Q"] = res["Gamma"] @ res["Gamma"].T
        res["S"] = res["Gamma"] @ res["D"].T
        return res

    # -- likelihood functions --------------------------------------------------------------------

    def nll_function(self, num_samples: int, squarings: int) -> ca.Function:
        """The CasADi function ``(theta, Y) -> NLL`` for records of ``num_samples`` samples.

        Parameters
        ----------
        num_samples : int
            Record length N; ``Y`` is ``num_outputs × N`` (columns are samples).
        squarings : int
            Squarings of the matrix exponential (see :meth:`squarings`).

        Returns
        -------
        casadi.Function
            MX function built from the SX filter step mapped with ``mapaccum``; differentiable.
        """
        key = (int(num_samples), int(squarings))
        if key not in self._nll_cache:
            N, s = key
            theta = ca.MX.sym("theta", self.num_parameters)
            Y = ca.MX.sym("Y", self.num_outputs, N)
            Phi, Gam, C, D, R, m0, P0 = self._discrete(s)(theta)
            scan = self._step.mapaccum(f"{self.name}_filter_{N}", N, 2, {})
            _, _, terms = scan(m0, P0, Y, Phi, Gam, C, D, R)
            nll = ca.sum2(terms)
            self._nll_cache[key] = ca.Function(f"{self.name}_nll_{N}_s{s}", [theta, Y], [nll],
                                               ["theta", "Y"], ["nll"])
        return self._nll_cache[key]

    def _derivative(self, kind: str, num_samples: int, squarings: int) -> ca.Function:
        key = (kind, int(num_samples), int(squarings))
        if key not in self._deriv_cache:
            f = self.nll_function(num_samples, squarings)
            theta = ca.MX.sym("theta", self.num_parameters)
            Y = ca.MX.sym("Y", self.num_outputs, int(num_samples))
            nll = f(theta, Y)
            if kind == "gradient":
                outs, onames = [nll, ca.gradient(nll, theta)], ["nll", "gradient"]
            else:
                H, g = ca.hessian(nll, theta)
                outs, onames = [nll, g, H], ["nll", "gradient", "hessian"]
            self._deriv_cache[key] = ca.Function(f"{self.name}_{kind}_{num_samples}", [theta, Y], outs,
                                                 ["theta", "Y"], onames)
        return self._deriv_cache[key]

    def __repr__(self) -> str:
        return (f"LinearGaussianModel({self.name!r}, parameters={list(self.parameter_names)}, "
                f"states={self.num_states}, inputs={self.num_inputs}, outputs={self.num_outputs}, "
                f"dt={self.dt})")


# ---------------------------------------------------------------------------------------------
# evaluation, simulation
# ---------------------------------------------------------------------------------------------


def negative_log_likelihood(
    model: LinearGaussianModel, y, theta, *, gradient: bool = False, hessian: bool = False
):
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

    Returns
    -------
    float or tuple
        ``nll``; ``(nll, gradient)`` if ``gradient``; ``(nll, gradient, hessian)`` if ``hessian``.
        ``nll`` is ``inf`` (and the derivatives NaN) where an innovation covariance is not
        positive definite.
    """
    Y = model.data_matrix(y)
    vec = model.parameter_vector(theta)
    s = model.squarings(vec)
    N = Y.shape[1]
    if hessian:
        f, g, H = model._derivative("hessian", N, s)(vec, Y)
        nll = _finite_or_inf(f)
        return nll, np.array(g).ravel(), np.array(H)
    if gradient:
        f, g = model._derivative("gradient", N, s)(vec, Y)
        return _finite_or_inf(f), np.array(g).ravel()
    return _finite_or_inf(model.nll_function(N, s)(vec, Y))


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


def simulate(model: LinearGaussianModel, theta, num_samples: int, rng=None, *, return_states: bool = False):
    """Draw a record exactly from the discrete model.

    ``s_0 ~ N(m0, P0)``, ``x_k ~ N(0, I)``, ``e_k ~ N(0, R)``, ``y_k = C s_k + D x_k + e_k``,
    ``s_{k+1} = Φ s_k + Γ x_k``.

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
    Phi, Gam, C, D = d["Phi"], d["Gamma"], d["C"], d["D"]
    states = np.empty((N, n))
    for k in range(N):
        states[k] = s
        s = Phi @ s + Gam @ x[k]
    y = states @ C.T + x @ D.T + e
    return (y, states) if return_states else y


# ---------------------------------------------------------------------------------------------
# maximum likelihood
# ---------------------------------------------------------------------------------------------


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
