"""CasADi sparsity patterns from NumPy compressed-column arrays, without large Python lists."""

from __future__ import annotations

import itertools

import casadi as ca
import numpy as np

__all__ = ["sparsity_from_ccs"]


def sparsity_from_ccs(nrow: int, ncol: int, colind: np.ndarray, rows: np.ndarray,
                      chunk: int = 2_000_000) -> ca.Sparsity:
    """A CasADi sparsity from compressed-column arrays.

    SWIG takes Python lists (36 bytes an entry, and NumPy arrays element by element, far
    slower), so a pattern of more than ``chunk`` non-zeros is made from column blocks of at
    most about ``chunk`` non-zeros each, joined in C++: the transient lists stay small.
    """
    colind = np.asarray(colind, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size <= chunk:
        return ca.Sparsity(nrow, ncol, colind.tolist(), rows.tolist())
    cuts = np.unique(np.concatenate([[0], np.searchsorted(colind, np.arange(chunk, rows.size, chunk)), [ncol]]))
    parts = []
    for a, b in itertools.pairwise(cuts):
        lo, hi = colind[a], colind[b]
        parts.append(ca.Sparsity(nrow, int(b - a), (colind[a:b + 1] - lo).tolist(), rows[lo:hi].tolist()))
    return ca.horzcat(*parts)
