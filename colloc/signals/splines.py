"""Least-squares and interpolating B-splines in NumPy and CasADi's sparse solvers, without SciPy.

The equation-error start (:mod:`colloc.solving.start`) smooths every measured signal with a
spline before the solve.  Doing that with SciPy's FITPACK meant importing
``scipy.interpolate`` (with ``scipy.optimize``, ``scipy.special`` and, through SciPy's array-API
layer, ``numpy.f2py``: 0.25-0.3 s) on the critical path of every command; these splines need
only NumPy, and the banded normal equations go to CasADi's sparse LDLᵀ.  The knots are
FITPACK's convention (the end knots repeated ``k + 1`` times), so the splines are FITPACK's
``LSQUnivariateSpline`` and ``UnivariateSpline(s=0)`` to rounding (the tests compare them).

The basis is evaluated by the Cox-de Boor recursion (de Boor, *A Practical Guide to Splines*,
2001, ch. X; Piegl & Tiller, *The NURBS Book*, 1997, algorithm A2.2); a derivative is the spline
of degree ``k - 1`` with differenced coefficients (de Boor, ch. X).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..base.buffers import values

__all__ = ["BSpline", "interpolating_spline", "lsq_spline"]


class BSpline:
    """A spline of degree ``k`` on the full knot vector ``knots`` with coefficients ``coef``
    (``len(coef) == len(knots) - k - 1``); evaluated outside its knots by its end pieces."""

    def __init__(self, knots: ArrayLike, coef: ArrayLike, k: int) -> None:
        self.knots = np.asarray(knots, dtype=float)
        self.coef = np.asarray(coef, dtype=float)
        self.k = int(k)
        if self.coef.size != self.knots.size - self.k - 1:
            raise ValueError(f"a spline of degree {k} on {self.knots.size} knots has "
                             f"{self.knots.size - self.k - 1} coefficients, not {self.coef.size}")

    def __call__(self, x: ArrayLike) -> NDArray[np.float64]:
        x = np.asarray(x, dtype=float)
        first, basis = _basis(self.knots, self.k, x.ravel())
        idx = first[:, None] + np.arange(self.k + 1)[None, :]
        return np.einsum("ij,ij->i", basis, self.coef[idx]).reshape(x.shape)

    def derivative(self, n: int = 1) -> BSpline:
        """The ``n``-th derivative, itself a spline (of degree ``k - n``; zero past ``k``)."""
        spline = self
        for _ in range(int(n)):
            spline = spline._derivative()
        return spline

    def _derivative(self) -> BSpline:
        t, c, k = self.knots, self.coef, self.k
        if k == 0:  # a piecewise constant's derivative (away from its jumps) is zero
            return BSpline(t, np.zeros_like(c), 0)
        width = t[k + 1:k + c.size] - t[1:c.size]
        dc = np.zeros(c.size - 1)
        ok = width > 0
        dc[ok] = k * np.diff(c)[ok] / width[ok]
        return BSpline(t[1:-1], dc, k - 1)


def _basis(t: NDArray[np.float64], k: int, x: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """For every point, the index of its first nonzero basis function and the ``k + 1`` values."""
    ncoef = t.size - k - 1
    span = np.clip(np.searchsorted(t, x, side="right") - 1, k, ncoef - 1)
    n = x.size
    values = np.ones((n, 1))
    if k == 0:
        return span, values
    j = np.arange(1, k + 1)
    left = x[:, None] - t[span[:, None] + 1 - j]   # left[:, j-1] = x - t[span + 1 - j]
    right = t[span[:, None] + j] - x[:, None]      # right[:, j-1] = t[span + j] - x
    # after degree d, values[:, r] is the basis function span - d + r; all r at once
    for d in range(1, k + 1):
        lo, hi = left[:, d - 1::-1], right[:, :d]   # x - t[span + 1 - d + r], t[span + 1 + r] - x
        denom = hi + lo
        temp = np.divide(values, denom, out=np.zeros_like(values), where=denom != 0)
        grown = np.empty((n, d + 1))
        grown[:, :d] = hi * temp
        grown[:, d] = 0.0
        grown[:, 1:] += lo * temp
        values = grown
    return span - k, values


def _full_knots(x: NDArray[np.float64], interior: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    return np.concatenate([np.full(k + 1, x[0]), interior, np.full(k + 1, x[-1])])


def _banded_solve(n: int, width: int, entry: Callable[[NDArray[np.intp], NDArray[np.intp]], NDArray[np.float64]],
                  rhs: NDArray[np.float64], solver: str) -> NDArray[np.float64]:
    """The solution of the ``n × n`` system of band ``width`` (each side) whose entry ``(i, j)``
    is ``entry(i, j)`` (vectorised), by CasADi's sparse ``solver``.  The matrix goes in as its
    nonzeros through the function's buffers: building a CasADi matrix from a NumPy array costs
    more than the factorisation (2 ms against 0.1 ms for 600 coefficients)."""
    function, rows, cols = _band_solver(n, width, solver)
    return values(function, entry(rows, cols), rhs)[0].ravel()


@functools.lru_cache(maxsize=16)
def _band_solver(n: int, width: int, solver: str) -> tuple[ca.Function, NDArray[np.intp], NDArray[np.intp]]:
    sparsity = ca.Sparsity.banded(n, width)
    rows, cols = (np.asarray(v, dtype=np.intp) for v in sparsity.get_triplet())
    nonzeros, rhs = ca.MX.sym("A", sparsity.nnz()), ca.MX.sym("b", n)
    function = ca.Function("banded_solve", [nonzeros, rhs], [ca.solve(ca.MX(sparsity, nonzeros), rhs, solver)])
    return function, rows, cols


def _check(x: NDArray[np.float64], y: NDArray[np.float64], k: int) -> None:
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError("x and y must be one-dimensional and of the same length")
    if x.size < k + 1:
        raise ValueError(f"a spline of degree {k} needs at least {k + 1} points, got {x.size}")
    if np.any(np.diff(x) <= 0):
        raise ValueError("x must be strictly increasing")


def lsq_spline(x: ArrayLike, y: ArrayLike, interior_knots: ArrayLike, k: int = 3) -> tuple[BSpline, float]:
    """The spline of degree ``k`` with these interior knots nearest the samples in least
    squares, and its residual sum of squares.  Raises :class:`ValueError` when the knots
    leave the fit undetermined (a knot interval without enough samples: the Schoenberg-Whitney
    conditions fail) or are not strictly inside and increasing."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    _check(x, y, k)
    interior = np.asarray(interior_knots, dtype=float)
    if interior.size and (interior[0] <= x[0] or interior[-1] >= x[-1] or np.any(np.diff(interior) <= 0)):
        raise ValueError("interior knots must be strictly increasing and strictly inside the samples")
    t = _full_knots(x, interior, k)
    ncoef = t.size - k - 1
    if x.size < ncoef:
        raise ValueError(f"{x.size} samples cannot determine {ncoef} spline coefficients")
    a, b = np.triu_indices(k + 1)
    band = np.zeros((k + 1, ncoef))
    rhs = np.zeros(ncoef)
    uniform = _uniform_spacing(x, interior)
    periodic: tuple[int, int, int, NDArray[np.float64]] | None = None  # (lo, hi, m, one interval's basis)
    if uniform is not None and interior.size - 2 * k + 2 >= _MIN_PERIODS:
        # uniform samples with a knot every m-th sample: the intervals k - 1 … J - k (J interior
        # knots) hold m samples each at the same positions between knots that are all evenly
        # spaced, so their basis values repeat with period m.  One interval's values serve
        # them all (up to rounding), and their sums are products of small matrices.
        m, lo, hi = uniform, k - 1, int(interior.size) - k  # the periodic intervals: lo … hi
        rep = _basis(t, k, x[lo * m:(lo + 1) * m])[1]  # m × (k + 1)
        gram = rep.T @ rep
        sums = y[lo * m:(hi + 1) * m].reshape(hi - lo + 1, m) @ rep  # rows: intervals
        for r in range(k + 1):
            rhs[lo + r:hi + r + 1] += sums[:, r]
        for r, c in zip(a.tolist(), b.tolist()):
            band[c - r, lo + r:hi + r + 1] += gram[r, c]
        edge = np.r_[0:lo * m, (hi + 1) * m:x.size]
        periodic = (lo, hi, m, rep)
    else:
        edge = np.arange(x.size)
    first, basis = _basis(t, k, x[edge])
    # normal equations BᵀB c = Bᵀy: banded (k diagonals on each side), the products of every
    # point's basis values summed into diagonal d = b - a at row first + a, in one bincount
    index = ((b - a) * ncoef)[None, :] + first[:, None] + a[None, :]
    band += np.bincount(index.ravel(), weights=(basis[:, a] * basis[:, b]).ravel(),
                        minlength=(k + 1) * ncoef).reshape(k + 1, ncoef)
    if np.any(band[0] == 0):
        raise ValueError("a spline coefficient has no sample in its support (Schoenberg-Whitney)")
    rhs += np.bincount((first[:, None] + np.arange(k + 1)).ravel(), weights=(basis * y[edge, None]).ravel(),
                       minlength=ncoef)
    coef = _banded_solve(ncoef, k, lambda i, j: band[np.abs(i - j), np.minimum(i, j)], rhs, "ldl")
    if not np.all(np.isfinite(coef)):
        raise ValueError("the knots leave the least-squares spline undetermined (Schoenberg-Whitney)")
    fitted = np.empty(x.size)
    fitted[edge] = np.einsum("ij,ij->i", basis, coef[first[:, None] + np.arange(k + 1)])
    if periodic is not None:
        lo, hi, m, rep = periodic
        windows = coef[np.arange(lo, hi + 1)[:, None] + np.arange(k + 1)[None, :]]
        fitted[lo * m:(hi + 1) * m] = (windows @ rep.T).ravel()
    return BSpline(t, coef, k), float(np.sum((y - fitted) ** 2))


#: Periodic intervals below which the uniform path of :func:`lsq_spline` is not worth taking.
_MIN_PERIODS = 4


def _uniform_spacing(x: NDArray[np.float64], interior: NDArray[np.float64]) -> int | None:
    """``m`` when the samples are evenly spaced (to 1e-9 of the step) and the interior knots
    are the samples ``m, 2m, …`` exactly; otherwise None."""
    if interior.size < 2 or x.size < 3:
        return None
    step = (x[-1] - x[0]) / (x.size - 1)
    m = round(float((interior[0] - x[0]) / step))
    last = m * interior.size
    if m < 1 or last >= x.size or np.ptp(np.diff(x)) > 1e-9 * step:
        return None
    return m if np.array_equal(interior, x[m:last + 1:m]) else None


def interpolating_spline(x: ArrayLike, y: ArrayLike, k: int = 3) -> BSpline:
    """The spline of odd degree ``k`` through every sample, with FITPACK's interior knots (at the
    samples, ``(k + 1) / 2`` in from each end)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    _check(x, y, k)
    if k % 2 == 0:
        raise ValueError(f"interpolating splines here are of odd degree, not {k}")
    h = (k + 1) // 2
    t = _full_knots(x, x[h:x.size - h], k)
    first, basis = _basis(t, k, x)
    n = x.size

    def entry(i: NDArray[np.intp], j: NDArray[np.intp]) -> NDArray[np.float64]:
        offset = j - first[i]
        inside = (offset >= 0) & (offset <= k)
        return np.where(inside, basis[i, np.clip(offset, 0, k)], 0.0)

    coef = _banded_solve(n, k, entry, y, "csparse")
    if not np.all(np.isfinite(coef)):
        raise ValueError("the interpolation system is singular")
    return BSpline(t, coef, k)
