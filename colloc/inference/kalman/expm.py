"""Matrix exponential by Padé-13 with scaling and squaring (Higham 2005), as a CasADi expression:
``casadi.expm`` needs the SLICOT plugin, which is not always installed and has no derivatives."""

from __future__ import annotations

import math

import casadi as ca

from ...base.errors import CollocInputError

__all__ = ["expm", "expm_squarings"]


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
