"""Evaluate a CasADi function on NumPy arrays through its buffers.

Calling a ``casadi.Function`` on NumPy arrays converts every argument to a CasADi matrix
and every result back, element by element through SWIG: for the two-link seed case's
residuals (60k variables, 126k data values) the conversion took 22 of the call's 23 ms.
:func:`values` hands the arrays' memory to the function instead (``Function.buffer()``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import casadi as ca
import numpy as np

__all__ = ["function_buffer", "values", "view"]


def function_buffer(f: ca.Function) -> tuple[Any, Callable[[], None]]:
    """``f.buffer()``: the function's buffer and its evaluation.  Bind an input with
    ``buf.set_arg(i, view(array))`` and an output with ``buf.set_res(i, view(array))`` (CasADi's
    type stubs ask for a byte size that its binding takes from the memoryview itself)."""
    buf, evaluate = f.buffer()
    return buf, evaluate


def view(array: np.ndarray) -> memoryview:
    """A memoryview of a contiguous float array, for :func:`function_buffer` (NumPy declares
    the buffer protocol to type checkers only from Python 3.12)."""
    return memoryview(cast(Any, array))


def values(f: ca.Function, *args) -> list[np.ndarray]:
    """The outputs of ``f(*args)`` as dense NumPy arrays of the outputs' shapes (a sparse
    output densified).  Each argument is a NumPy array (or a number) holding the input's
    dense entries in column-major order, as ``f(*args)`` would read them; one column where
    the input has several is repeated, as a call does."""
    buf, evaluate = function_buffer(f)
    kept = []
    for i, a in enumerate(args):
        v = np.asarray(a, dtype=float).reshape(-1, order="F")
        rows, cols = f.size_in(i)
        if v.size == rows and cols > 1:  # one column for all, as a call repeats it
            v = np.tile(v, cols)
        v = np.ascontiguousarray(v)
        if v.size != f.numel_in(i):
            raise ValueError(f"{f.name()}: input {i} has {v.size} entries, expected {f.numel_in(i)}")
        sp = f.sparsity_in(i)
        if not sp.is_dense():
            v = v[np.array(sp.find(), dtype=np.int64)]  # the input's nonzeros, column-major
        kept.append(v)
        buf.set_arg(i, view(v))
    outs = []
    for i in range(f.n_out()):
        out = np.empty(f.nnz_out(i))
        buf.set_res(i, view(out))
        outs.append(out)
    evaluate()
    shaped = []
    for i, out in enumerate(outs):
        sp = f.sparsity_out(i)
        dense = out if sp.is_dense() else _scatter(out, sp)
        shaped.append(dense.reshape(sp.size2(), sp.size1()).T)
    return shaped


def _scatter(nz: np.ndarray, sp: ca.Sparsity) -> np.ndarray:
    dense = np.zeros(sp.numel())
    dense[np.array(sp.find(), dtype=np.int64)] = nz
    return dense
