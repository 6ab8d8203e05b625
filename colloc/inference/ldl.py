"""A sparse LDLᵀ factorisation in an ordering given from the problem's structure
(:class:`OrderedLDL`), for the KKT matrix of the covariance.

A general sparse LDLᵀ (qdldl, CasADi's ``ldl``) spends most of its time finding a
fill-reducing ordering: on the two-link seed case's KKT matrix (114k rows, 606k non-zeros)
qdldl's AMD ordering and symbolic analysis took ≈ 0.17 s of its 0.19 s, the numeric
factorisation 0.02 s.  A collocation KKT matrix needs no search: its unknowns follow time.
The NLP's node variables are stored node after node (``Layout``), and a constraint row
lives where its first variable does, so sorting the unknowns by that position (a row just
before the first variable it touches) puts the matrix in a narrow band whose fill is close
to AMD's (1.02 M against 0.82 M factor non-zeros there).  The caller gives the ordering;
this module counts the fill of it (the elimination tree, in C, aborted past a limit so
that a poor ordering costs little) and factorises.

The algorithm is the up-looking LDLᵀ of a symmetric matrix's upper triangle (T. A. Davis,
*Direct Methods for Sparse Linear Systems*, SIAM 2006, ch. 4): row ``k`` of ``L`` is the
solution of a sparse triangular system whose pattern is the set of elimination-tree paths
from the non-zeros of column ``k``.  There is no pivoting, as in qdldl: the matrix must be
quasi-definite (``[[H, Aᵀ], [A, −δI]]`` with ``H`` positive definite on the needed
directions), for which every symmetric ordering has a factorisation.  The C code is
compiled once per machine (:func:`colloc.base.compiler.shared_library`) and called through
:mod:`ctypes`: one library serves every size.  Without a C compiler :func:`ordered_ldl`
returns ``None`` and the caller factorises another way.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
import scipy.sparse as sps

__all__ = ["OrderedLDL", "ordered_ldl"]

_SOURCE = r"""/* colloc: up-looking sparse LDL' in a given ordering */
#include <stdint.h>
typedef int64_t idx;  /* sizes, column pointers */
typedef int32_t row;  /* row indices (half the memory traffic of 64 bits) */
#include <math.h>
#if defined(__GNUC__) && !defined(__clang__)
#define HOT __attribute__((optimize("O3")))  /* the substitutions: 15 % faster than at -O1 */
#else
#define HOT
#endif
#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#define FLUSH_BEGIN unsigned int mxcsr = _mm_getcsr(); _mm_setcsr(mxcsr | 0x8040); /* FTZ, DAZ */
#define FLUSH_END _mm_setcsr(mxcsr);
#else
#define FLUSH_BEGIN
#define FLUSH_END
#endif

/* C = upper triangle of P A P' (CSC) from the upper triangle of A; pinv[old] = new.
   w: n integers of work. */
void colloc_ldl_permute(idx n, const idx *Ap, const row *Ai, const double *Ax, const idx *pinv,
                        idx *Cp, row *Ci, double *Cx, idx *w) {
  idx j, k, a, b, c, q;
  for (j = 0; j < n; ++j) w[j] = 0;
  for (j = 0; j < n; ++j)
    for (k = Ap[j]; k < Ap[j + 1]; ++k) {
      if (Ai[k] > j) continue;
      a = pinv[Ai[k]]; b = pinv[j];
      w[a > b ? a : b]++;
    }
  Cp[0] = 0;
  for (j = 0; j < n; ++j) { Cp[j + 1] = Cp[j] + w[j]; w[j] = Cp[j]; }
  for (j = 0; j < n; ++j)
    for (k = Ap[j]; k < Ap[j + 1]; ++k) {
      if (Ai[k] > j) continue;
      a = pinv[Ai[k]]; b = pinv[j];
      c = a > b ? a : b;
      q = w[c]++;
      Ci[q] = (row)(a < b ? a : b);
      Cx[q] = Ax[k];
    }
}

/* Elimination tree (parent, -1 at a root) and the number of strictly lower non-zeros of each
   column of L; returns their total, or -1 as soon as it exceeds limit. flag: n of work. */
idx colloc_ldl_symbolic(idx n, const idx *Cp, const row *Ci, idx limit, idx *parent, idx *Lnz, idx *flag) {
  idx k, p, i, total = 0;
  for (k = 0; k < n; ++k) {
    parent[k] = -1; flag[k] = k; Lnz[k] = 0;
    for (p = Cp[k]; p < Cp[k + 1]; ++p) {
      /* the path from a non-zero above the diagonal up the tree to k: row k of L */
      for (i = Ci[p]; i < k && flag[i] != k; i = parent[i]) {
        if (parent[i] == -1) parent[i] = k;
        Lnz[i]++;
        flag[i] = k;
        if (++total > limit) return -1;
      }
    }
  }
  return total;
}

/* Numeric factorisation: L (strictly lower, CSC with column pointers Lp) and D. Returns 0,
   or k + 1 when the pivot of column k is zero or not finite.
   y: n doubles; pattern, flag, filled: n integers each (work). */
idx colloc_ldl_numeric(idx n, const idx *Cp, const row *Ci, const double *Cx, const idx *Lp,
                       const idx *parent, row *Li, double *Lx, double *D,
                       double *y, idx *pattern, idx *flag, idx *filled) {
  idx k, p, i, top, len, end;
  double yi, lki, dk;
  for (k = 0; k < n; ++k) {
    /* scatter column k of the upper triangle; collect the rows of L(k, :) in topological order */
    y[k] = 0.0; top = n; flag[k] = k; filled[k] = 0;
    for (p = Cp[k]; p < Cp[k + 1]; ++p) {
      i = Ci[p];
      y[i] += Cx[p];
      for (len = 0; flag[i] != k; i = parent[i]) {
        pattern[len++] = i;
        flag[i] = k;
      }
      while (len > 0) pattern[--top] = pattern[--len];
    }
    dk = y[k]; y[k] = 0.0;
    /* the triangular solve for row k, one column of L at a time */
    for (; top < n; ++top) {
      i = pattern[top];
      yi = y[i]; y[i] = 0.0;
      end = Lp[i] + filled[i];
      for (p = Lp[i]; p < end; ++p) y[Li[p]] -= Lx[p] * yi;
      lki = yi / D[i];
      dk -= lki * yi;
      Li[end] = (row)k; Lx[end] = lki;
      filled[i]++;
    }
    D[k] = dk;
    if (!(dk != 0.0) || dk - dk != 0.0) return k + 1;
  }
  return 0;
}

/* X := P' (L D L')^-1 P B for m right-hand sides, B and X n-by-m row-major arrays (one pass
   over L serves all of them), perm[k] the row of B eliminated k-th; W: n*m + m doubles of
   work.  Each column is scaled by a power of two (exactly) to a largest entry near 1, and
   numbers below the normal range are flushed to zero meanwhile (on x86-64): a refinement's
   right-hand side (1e-10 and less) made them, and each costs a hundred cycles. */
HOT void colloc_ldl_solve(idx n, idx m, const idx *Lp, const row *Li, const double *Lx, const double *D,
                          const idx *perm, const double *B, double *X, double *W) {
  idx r, j, p;
  int e;
  double l, a, *xj, *xi, *s = W + n * m;
  const double *bj;
  FLUSH_BEGIN
  for (r = 0; r < m; ++r) s[r] = 0.0;
  for (j = 0; j < n * m; j += m)
    for (r = 0; r < m; ++r) { a = fabs(B[j + r]); if (a > s[r]) s[r] = a; }
  for (r = 0; r < m; ++r) {
    if (!(s[r] > 0.0) || s[r] - s[r] != 0.0) { s[r] = 1.0; continue; }
    frexp(s[r], &e);
    s[r] = ldexp(1.0, e);
  }
  for (j = 0; j < n; ++j) {
    bj = B + perm[j] * m; xj = W + j * m;
    for (r = 0; r < m; ++r) xj[r] = bj[r] / s[r];
  }
  for (j = 0; j < n; ++j) {
    xj = W + j * m;
    for (p = Lp[j]; p < Lp[j + 1]; ++p) {
      l = Lx[p]; xi = W + Li[p] * m;
      for (r = 0; r < m; ++r) xi[r] -= l * xj[r];
    }
  }
  for (j = 0; j < n; ++j) for (r = 0; r < m; ++r) W[j * m + r] /= D[j];
  for (j = n - 1; j >= 0; --j) {
    xj = W + j * m;
    for (p = Lp[j]; p < Lp[j + 1]; ++p) {
      l = Lx[p]; xi = W + Li[p] * m;
      for (r = 0; r < m; ++r) xj[r] -= l * xi[r];
    }
  }
  for (j = 0; j < n; ++j) {
    xi = X + perm[j] * m; xj = W + j * m;
    for (r = 0; r < m; ++r) xi[r] = xj[r] * s[r];
  }
  FLUSH_END
}

/* Y := A X for the symmetric A given by its upper triangle (Ap, Ai, Ax; entries below the
   diagonal ignored), X and Y n-by-m row-major; the diagonal entries of the columns from
   `diagonal_to` on are left out. */
HOT void colloc_ldl_symv(idx n, idx m, const idx *Ap, const row *Ai, const double *Ax, idx diagonal_to,
                     const double *X, double *Y) {
  idx r, j, p, i;
  double a;
  const double *xj, *xi;
  double *yj, *yi;
  for (j = 0; j < n * m; ++j) Y[j] = 0.0;
  for (j = 0; j < n; ++j) {
    xj = X + j * m; yj = Y + j * m;
    for (p = Ap[j]; p < Ap[j + 1]; ++p) {
      i = Ai[p];
      if (i > j) continue;
      a = Ax[p];
      if (i == j) {
        if (j < diagonal_to) for (r = 0; r < m; ++r) yj[r] += a * xj[r];
        continue;
      }
      xi = X + i * m; yi = Y + i * m;
      for (r = 0; r < m; ++r) { yi[r] += a * xj[r]; yj[r] += a * xi[r]; }
    }
  }
}
"""

_I = np.ctypeslib.ndpointer(dtype=np.int64, flags="C_CONTIGUOUS")
_R = np.ctypeslib.ndpointer(dtype=np.int32, flags="C_CONTIGUOUS")
_D = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
_N = ctypes.c_int64


def _library() -> ctypes.CDLL | None:
    """The compiled library (compiled on first use, cached on disk), or ``None``."""
    from ..base.compiler import _compiler

    return _load(_compiler())


@functools.lru_cache(maxsize=4)
def _load(compiler: str | None) -> ctypes.CDLL | None:
    """:func:`_library` for the compiler in use: keyed by it, so that an answer without one
    (``$COLLOC_NO_COMPILER``, a ``$CC`` that fails) is not kept once a compiler is there."""
    from ..base.compiler import shared_library

    path = shared_library("ldl", _SOURCE, quiet=True)
    if path is None:
        return None
    lib = ctypes.CDLL(str(path))
    lib.colloc_ldl_permute.argtypes = [_N, _I, _R, _D, _I, _I, _R, _D, _I]
    lib.colloc_ldl_permute.restype = None
    lib.colloc_ldl_symbolic.argtypes = [_N, _I, _R, _N, _I, _I, _I]
    lib.colloc_ldl_symbolic.restype = _N
    lib.colloc_ldl_numeric.argtypes = [_N, _I, _R, _D, _I, _I, _R, _D, _D, _D, _I, _I, _I]
    lib.colloc_ldl_numeric.restype = _N
    lib.colloc_ldl_solve.argtypes = [_N, _N, _I, _R, _D, _D, _I, _D, _D, _D]
    lib.colloc_ldl_solve.restype = None
    lib.colloc_ldl_symv.argtypes = [_N, _N, _I, _R, _D, _N, _D, _D]
    lib.colloc_ldl_symv.restype = None
    return lib


class OrderedLDL:
    """``K = P' L D L' P`` of a symmetric matrix given by its upper triangle, in the ordering
    ``perm`` (``perm[k]`` is the row of ``K`` eliminated ``k``-th).  Build it with
    :func:`ordered_ldl`; ``solve(B)`` returns ``K⁻¹ B`` for a matrix or a vector ``B``.

    Attributes
    ----------
    factor_nnz : int
        Strictly lower non-zeros of ``L`` (the fill of the ordering).
    """

    def __init__(self, lib, n: int, perm: np.ndarray, upper, Lp, Li, Lx, D) -> None:
        self._lib, self.n, self._perm, self._upper = lib, n, perm, upper
        self._Lp, self._Li, self._Lx, self._D = Lp, Li, Lx, D
        self.factor_nnz = int(Lp[-1])

    def times(self, X: np.ndarray, diagonal_to: int | None = None) -> np.ndarray:
        """``K X`` (``X`` of shape ``(n, m)``), leaving out the diagonal entries of the rows
        from ``diagonal_to`` on (a shift placed there to make ``K`` factorisable)."""
        X = np.ascontiguousarray(X, dtype=float)
        Y = np.empty_like(X)
        Ap, Ai, Ax = self._upper
        self._lib.colloc_ldl_symv(self.n, X.shape[1], Ap, Ai, Ax, self.n if diagonal_to is None else diagonal_to, X, Y)
        return Y

    def solve(self, B: np.ndarray) -> np.ndarray:
        """``K⁻¹ B`` (``B`` of shape ``(n,)`` or ``(n, m)``)."""
        B = np.asarray(B, dtype=float)
        vector = B.ndim == 1
        cols = np.ascontiguousarray(B[:, None] if vector else B)
        out = np.empty_like(cols)
        work = np.empty(cols.size + cols.shape[1])
        self._lib.colloc_ldl_solve(self.n, cols.shape[1], self._Lp, self._Li, self._Lx, self._D, self._perm, cols,
                                   out, work)
        return out[:, 0] if vector else out


def ordered_ldl(upper: sps.csc_matrix, perm: np.ndarray, max_fill: float = 3.0) -> OrderedLDL | str | None:
    """The LDLᵀ factorisation of the symmetric matrix whose upper triangle is ``upper`` (CSC;
    entries below the diagonal are ignored) in the elimination order ``perm``.

    Returns ``None`` without a C compiler; a message (a ``str``) when the ordering would fill
    the factor with more than ``max_fill`` times the non-zeros of ``upper`` (the caller then
    orders by a general method; the time order filled 1.7× on the two-link seed case and
    2.2× on the 20 s ship-stance record, AMD 1.35× and 1.7×, but 4.6× on the delayed
    two-link record, whose delayed reads couple nodes 0.1 s apart, against AMD's 0.86×) or
    when a pivot is zero or not finite (the matrix is not quasi-definite)."""
    lib = _library()
    if lib is None:
        return None
    n = upper.shape[0]
    if n >= 2**31 - 1:
        return "too many rows for 32-bit row indices"
    Ap = np.ascontiguousarray(upper.indptr, dtype=np.int64)
    Ai = np.ascontiguousarray(upper.indices, dtype=np.int32)
    Ax = np.ascontiguousarray(upper.data, dtype=float)
    perm = np.ascontiguousarray(perm, dtype=np.int64)
    pinv = np.empty(n, dtype=np.int64)
    pinv[perm] = np.arange(n, dtype=np.int64)
    Cp, Ci, Cx = np.empty(n + 1, dtype=np.int64), np.empty(Ai.size, dtype=np.int32), np.empty(Ai.size)
    work = np.empty(n, dtype=np.int64)
    lib.colloc_ldl_permute(n, Ap, Ai, Ax, pinv, Cp, Ci, Cx, work)
    Ci, Cx = Ci[: Cp[-1]], Cx[: Cp[-1]]
    parent, Lnz = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    limit = int(max_fill * max(Cp[-1], 1))
    total = lib.colloc_ldl_symbolic(n, Cp, np.ascontiguousarray(Ci), limit, parent, Lnz, work)
    if total < 0:
        return f"the ordering fills the factor beyond {max_fill:g}× the matrix's non-zeros"
    Lp = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(Lnz, out=Lp[1:])
    Li, Lx, D = np.empty(total, dtype=np.int32), np.empty(total), np.empty(n)
    y = np.empty(n)
    pattern, filled = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    bad = lib.colloc_ldl_numeric(n, Cp, np.ascontiguousarray(Ci), np.ascontiguousarray(Cx), Lp, parent,
                                 Li, Lx, D, y, pattern, work, filled)
    if bad:
        return f"zero or non-finite pivot in column {int(perm[bad - 1])}: the matrix is not quasi-definite"
    return OrderedLDL(lib, n, perm, (Ap, Ai, Ax), Lp, Li, Lx, D)
