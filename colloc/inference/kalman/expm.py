"""Matrix exponential by Padé-13 with scaling and squaring (Higham 2005; the squarings from the norms
of the powers, Al-Mohy & Higham 2009), as a CasADi expression: ``casadi.expm`` needs the SLICOT
plugin, which is not always installed and has no derivatives."""

from __future__ import annotations

import math
from typing import TypeVar

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from ...base.errors import CollocInputError

__all__ = ["expm", "expm_squarings", "expm_squarings_for", "van_loan"]

#: A CasADi matrix; the exponential is an expression of the same kind.
_Matrix = TypeVar("_Matrix", ca.SX, ca.MX, ca.DM)


# Padé-13 coefficients and the 1-norm up to which it is accurate to unit roundoff (Higham 2005).
_PADE13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
    129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
    40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)
_THETA13 = 5.371920351148152


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


#: 1 / c₂₇, c₂₇ the leading coefficient of the Padé-13 approximant's backward error series,
#: (13!)² / (26!·27!) (Al-Mohy & Higham 2009, SIAM J. Matrix Anal. Appl. 31:970, §5)
_PADE13_ERROR_RECIPROCAL = math.factorial(26) * math.factorial(27) / math.factorial(13) ** 2


def expm_squarings_for(M: ArrayLike) -> int:
    """Squarings for the Padé-13 exponential of the numeric matrix ``M``, from the norms of its
    powers (Al-Mohy & Higham 2009, SIAM J. Matrix Anal. Appl. 31:970, Algorithm 5.1).

    ``‖M^k‖₁^{1/k}`` (``k`` = 6, 8, 10) bound the approximant's backward error far more tightly than
    ``‖M‖₁`` where ``M`` is far from normal, as the sway models' (a low-pass filter and a Padé delay in
    companion form: ``‖A dt‖₁`` 8,057 on BDS00012's estimate, where these give 1.7–2.8).  Every squaring multiplies the
    rounding of the approximant, so the fewer the better: on BDS00010's PD-delay model, 12 squarings
    (:func:`expm_squarings` of ``‖A dt‖₁``) leave Φ 4.6e-9 of its largest entry from a 40-digit
    exponential, 0 leave 3.8e-13.  A further ``ell`` squarings are added where the approximant's
    truncation, bounded with ``|M|``, is not below the unit roundoff (the algorithm's ``ℓ``).

    Parameters
    ----------
    M : array-like
        A square, finite matrix.

    Returns
    -------
    int
    """
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise CollocInputError(f"expm: the matrix must be square, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise CollocInputError("expm: the matrix must be finite")

    def norm1(X):
        return float(np.abs(X).sum(axis=0).max())

    if norm1(M) == 0.0:
        return 0
    with np.errstate(over="ignore", invalid="ignore"):
        M2 = M @ M
        M4 = M2 @ M2
        M6, M8 = M4 @ M2, M4 @ M4
        M10 = M8 @ M2
        d6, d8, d10 = norm1(M6) ** (1 / 6), norm1(M8) ** (1 / 8), norm1(M10) ** (1 / 10)
        eta = min(max(d6, d8), max(d8, d10))
        if not math.isfinite(eta):  # powers beyond the floating-point range: the 1-norm's count
            return expm_squarings(norm1(M))
        s = max(0, math.ceil(math.log2(eta / _THETA13))) if eta > _THETA13 else 0
        scaled = np.abs(M) / 2.0**s
        power = scaled
        for _ in range(26):
            power = power @ scaled
        alpha = norm1(power) / (norm1(scaled) * _PADE13_ERROR_RECIPROCAL)
    if not math.isfinite(alpha):
        return max(s, expm_squarings(norm1(M)))
    if alpha > 0:
        s += max(0, math.ceil(math.log2(alpha / 2.0**-53) / 26))
    return s


def expm(M: _Matrix, squarings: int) -> _Matrix:
    """Matrix exponential of a CasADi matrix by Padé-13 with scaling and squaring.

    The approximant is evaluated on ``M / 2**squarings`` and squared back.  It is a plain
    CasADi expression (SX, MX or DM), so it can be differentiated to any order.  It is
    accurate to unit roundoff when ``‖M‖₁ / 2**squarings <= 5.37`` (:func:`expm_squarings`), and
    with the fewer squarings :func:`expm_squarings_for` chooses from the norms of ``M``'s powers
    (more squarings than needed multiply the rounding where ``M`` is far from normal).

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


def van_loan(A: _Matrix, H: _Matrix, squarings: int) -> tuple[_Matrix, _Matrix]:
    """``Φ = e^A`` and ``Q = ∫₀¹ e^{Aτ} H e^{Aᵀτ} dτ`` (Van Loan 1978) for a symmetric ``H``.

    Both are blocks of ``E = expm([[−A, H], [0, Aᵀ]])``: ``Φ = E₂₂ᵀ`` and ``Q = Φ E₁₂``.  With the
    time step folded into the arguments (``A dt``, ``H dt``) they are the transition matrix and
    the covariance of the process noise over one step of ``s' = A s + w(t)``, ``E w wᵀ = H δ``.
    Computed as :func:`expm` would compute ``E`` (Padé-13 of ``E`` at ``2^−squarings`` of the
    argument), but on n×n blocks: the diagonal blocks of the block-triangular powers are powers
    of ``A`` (``(−A)^k`` and ``(Aᵀ)^k``), the Padé quotient's diagonal blocks are ``e^{±A}`` of
    the one n×n quotient, and the squarings are the doubling ``Q ← Φ Q Φᵀ + Q``, ``Φ ← Φ²``
    (the integral over two half steps).  About a third of the work of the 2n×2n exponential, and
    a plain CasADi expression, so it is differentiable.

    Parameters
    ----------
    A, H : casadi.SX, casadi.MX or casadi.DM
        n×n matrices (``H`` symmetric).
    squarings : int
        As for :func:`expm`; choose it from the 1-norm of ``[[−A, H], [0, Aᵀ]]``.

    Returns
    -------
    (Φ, Q)
    """
    if A.shape[0] != A.shape[1] or H.shape != A.shape:
        raise CollocInputError(f"van_loan: A and H must be square and of one size, got {A.shape} and {H.shape}")
    squarings = int(squarings)
    if squarings < 0:
        raise CollocInputError(f"van_loan: squarings must be >= 0, got {squarings}")
    n = A.shape[0]
    eye = ca.DM.eye(n)
    F = A / (2.0**squarings)
    Hs = H / (2.0**squarings)
    # M = [[−F, Hs], [0, Fᵀ]]; M^k = [[(−F)^k, Y_k], [0, (F^k)ᵀ]]
    F2 = F @ F
    F4 = F2 @ F2
    F6 = F4 @ F2
    Y2 = -F @ Hs + Hs @ F.T
    Y4 = F2 @ Y2 + Y2 @ F2.T
    Y6 = F4 @ Y2 + Y4 @ F2.T
    b = _PADE13
    # even polynomial parts: diagonal blocks in F^k (the same for −F), off-diagonal from Y_k
    w_diag = b[13] * F6 + b[11] * F4 + b[9] * F2
    w_off = b[13] * Y6 + b[11] * Y4 + b[9] * Y2
    # U1 = M6·W + b7 M6 + b5 M4 + b3 M2 + b1 I  (even in M), u(M) = M·U1
    u1_diag = F6 @ w_diag + b[7] * F6 + b[5] * F4 + b[3] * F2 + b[1] * eye
    u1_off = F6 @ w_off + Y6 @ w_diag.T + b[7] * Y6 + b[5] * Y4 + b[3] * Y2
    # u(M) = M U1: top-left (−F) U1(F) = −u(F), off-diagonal −F U1_off + Hs U1(F)ᵀ
    u_diag = F @ u1_diag  # u(F); u(−F) = −u(F), u(Fᵀ) = u(F)ᵀ
    u_off = -F @ u1_off + Hs @ u1_diag.T
    v_w_diag = b[12] * F6 + b[10] * F4 + b[8] * F2
    v_w_off = b[12] * Y6 + b[10] * Y4 + b[8] * Y2
    v_diag = F6 @ v_w_diag + b[6] * F6 + b[4] * F4 + b[2] * F2 + b[0] * eye
    v_off = F6 @ v_w_off + Y6 @ v_w_diag.T + b[6] * Y6 + b[4] * Y4 + b[2] * Y2
    # E ≈ (v − u)⁻¹ (v + u), block upper triangular:
    #   top-left  (v(F) + u(F))⁻¹ (v(F) − u(F)) = e^{−F};  bottom-right ((v − u)⁻¹(v + u))ᵀ = Φᵀ
    #   top-right E₁₂ = (v(F) + u(F))⁻¹ [(v_off + u_off) − (v_off − u_off) Φᵀ]; as v(F) + u(F) is
    #   (v(F) − u(F)) Φ, Q = Φ E₁₂ = (v(F) − u(F))⁻¹ [...]: one factorisation for Φ and Q
    Phi = ca.solve(v_diag - u_diag, v_diag + u_diag)
    Q = ca.solve(v_diag - u_diag, (v_off + u_off) - (v_off - u_off) @ Phi.T)
    Q = 0.5 * (Q + Q.T)
    for _ in range(squarings):
        Q = Phi @ Q @ Phi.T + Q
        Q = 0.5 * (Q + Q.T)
        Phi = Phi @ Phi
    return Phi, Q
