"""Grid maths: node placement, quadrature weights, interpolation and the Radau collocation basis
(numpy; CasADi only for the Radau points)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..base.errors import OptionsError

if TYPE_CHECKING:
    import casadi as ca

#: Where a basis is evaluated: a number, an array or a CasADi expression (the values are of that kind).
_Point = TypeVar("_Point", float, "np.ndarray", "ca.SX", "ca.MX")

__all__ = ["RadauBasis", "differentiation_matrix", "interpolation_stencil", "locate", "mesh_nodes", "node_times",
           "radau_basis", "radau_points", "trapezoid_weights"]


def node_times(sample_times: np.ndarray, num_nodes: int | None) -> np.ndarray:
    """Collocation node times for one trial.

    Parameters
    ----------
    sample_times : ndarray, shape (num_samples,)
        Strictly increasing measurement times.
    num_nodes : int or None
        ``None`` puts a node at every sample (non-uniform grids included); an int gives a
        uniform grid over the same time span.

    Returns
    -------
    ndarray, shape (num_nodes,)
    """
    if num_nodes is None:
        return np.asarray(sample_times, dtype=float).copy()
    if int(num_nodes) != num_nodes or num_nodes < 2:
        raise OptionsError(f"num_nodes must be an integer >= 2 or None, got {num_nodes!r}")
    return np.linspace(sample_times[0], sample_times[-1], int(num_nodes))


def mesh_nodes(sample_times: np.ndarray, num_nodes: int | None, refine: int,
               fractions: tuple[float, ...], jumps: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mesh points and all nodes of one trial.

    The mesh is :func:`node_times` with ``refine`` equal intervals per interval, plus a
    mesh point at each time in ``jumps`` (where a known input may jump) that is not one
    already (within 1e-9 of the span); each mesh interval then gets nodes at ``fractions``
    of its length (``(0, …, 1)``).  Returns ``(mesh, nodes)``; node
    ``k·(len(fractions) − 1)`` is mesh point ``k``.
    """
    mesh = node_times(sample_times, num_nodes)
    if refine > 1:
        steps = np.diff(mesh)[:, None] * (np.arange(refine) / refine)[None, :]
        mesh = np.append((mesh[:-1, None] + steps).ravel(), mesh[-1])
    if jumps is not None and len(jumps):
        tol = 1e-9 * max(float(mesh[-1] - mesh[0]), 1.0)
        jumps = np.asarray(jumps, dtype=float)
        j = np.clip(np.searchsorted(mesh, jumps), 1, mesh.size - 1)
        near = np.minimum(np.abs(mesh[j - 1] - jumps), np.abs(mesh[j] - jumps)) <= tol
        inside = (jumps > mesh[0]) & (jumps < mesh[-1])
        mesh = np.union1d(mesh, jumps[~near & inside])
    inner = np.asarray(fractions[1:-1], dtype=float)
    if inner.size == 0:
        return mesh, mesh.copy()
    h = np.diff(mesh)
    per = np.hstack([mesh[:-1, None], mesh[:-1, None] + h[:, None] * inner[None, :]])
    return mesh, np.append(per.ravel(), mesh[-1])


def interpolation_stencil(known_times: np.ndarray, times: np.ndarray, points: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Lagrange interpolation from values at ``known_times`` to ``times``: for each time the
    indices of the ``points`` nearest known times (a window that holds it) and the weights.

    Exact for polynomials of degree ``points − 1``; shapes ``(points, len(times))``.
    """
    known_times = np.asarray(known_times, dtype=float)
    points = min(points, known_times.size)
    j = np.clip(np.searchsorted(known_times, times, side="right") - 1, 0, known_times.size - 2)
    first = np.clip(j - (points - 2) // 2, 0, known_times.size - points)
    idx = first[None, :] + np.arange(points)[:, None]
    tk = known_times[idx]
    weights = np.ones_like(tk)
    for a in range(points):
        for b in range(points):
            if a != b:
                weights[a] *= (times - tk[b]) / (tk[a] - tk[b])
    return idx, weights


def trapezoid_weights(times: np.ndarray) -> np.ndarray:
    """Weights ``w`` with ``Σ w_k f(t_k) ≈ ∫ f dt`` (trapezoidal rule), shape like ``times``."""
    h = np.diff(times)
    w = np.zeros_like(times, dtype=float)
    w[:-1] += h / 2
    w[1:] += h / 2
    return w


def locate(nodes: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Interval index and fraction of each time for linear interpolation between nodes.

    Returns ``(j, theta)`` such that ``f(t) ≈ (1 − θ) f_j + θ f_{j+1}`` with
    ``0 ≤ j ≤ len(nodes) − 2`` and ``0 ≤ θ ≤ 1``.  Times must lie within the node span
    (a tolerance of 1e-9 of the span is accepted at both ends).
    """
    nodes = np.asarray(nodes, dtype=float)
    times = np.asarray(times, dtype=float)
    span = nodes[-1] - nodes[0]
    tol = 1e-9 * max(span, 1.0)
    if np.any(times < nodes[0] - tol) or np.any(times > nodes[-1] + tol):
        raise OptionsError(
            f"times {times.min():g}..{times.max():g} s fall outside the grid "
            f"{nodes[0]:g}..{nodes[-1]:g} s"
        )
    j = np.clip(np.searchsorted(nodes, times, side="right") - 1, 0, len(nodes) - 2)
    theta = np.clip((times - nodes[j]) / (nodes[j + 1] - nodes[j]), 0.0, 1.0)
    return j, theta


# ---------------------------------------------------------------------------------------------
# the Radau collocation basis: one implementation for every transcription that uses it


def radau_points(degree: int) -> np.ndarray:
    """The Legendre–Gauss–Radau collocation points c₁ < … < c_d = 1 on (0, 1] of Radau IIA
    (the zeros of P_d(2c − 1) − P_{d−1}(2c − 1), P the Legendre polynomials; Hairer & Wanner
    1996, §IV.5), as :func:`casadi.collocation_points` gives them."""
    import casadi as ca

    if isinstance(degree, bool) or int(degree) != degree or degree < 1:
        raise OptionsError(f"Radau degree must be an int >= 1, got {degree!r}")
    return np.array(ca.collocation_points(int(degree), "radau"), dtype=float)


def differentiation_matrix(tau: np.ndarray) -> np.ndarray:
    """``D[j, i] = ℓᵢ'(τⱼ)`` for the Lagrange basis ℓ on the distinct points ``tau``.

    Barycentric form (Berrut & Trefethen 2004, "Barycentric Lagrange interpolation", SIAM
    Review 46(3), §9, Eqs. 9.4–9.5): with weights ``wᵢ = 1/∏_{k≠i}(τᵢ − τₖ)``,
    ``D[j, i] = (wᵢ/wⱼ)/(τⱼ − τᵢ)`` off the diagonal and each row summing to zero.
    """
    tau = np.asarray(tau, dtype=float)
    diff = tau[:, None] - tau[None, :]
    np.fill_diagonal(diff, 1.0)
    w = 1.0 / np.prod(diff, axis=1)  # barycentric weights
    D = (w[None, :] / w[:, None]) / diff
    np.fill_diagonal(D, 0.0)
    np.fill_diagonal(D, -D.sum(axis=1))
    return D


@dataclass(frozen=True, eq=False)
class RadauBasis:
    """The Radau IIA collocation basis of one degree on the unit interval (:func:`radau_basis`).

    The state on an interval ``[t₀, t₀ + h]`` is the polynomial of degree ``d`` through the
    start and the ``d`` collocation points: ``x(t₀ + s·h) = Σᵢ xᵢ ℓᵢ(s)``, ``ℓ`` the Lagrange
    basis on :attr:`points` ``= (0, c₁, …, c_d)``.

    Attributes
    ----------
    degree : int
    tau : ndarray, shape (d,)
        The collocation points c₁ < … < c_d = 1.
    points : ndarray, shape (d + 1,)
        0 and the collocation points: the nodes of the basis.
    derivative : ndarray, shape (d + 1, d + 1)
        ``derivative[j, i] = ℓᵢ'(points[j])``: ``h·ẋ(t₀ + points[j]·h) = Σᵢ derivative[j, i]·xᵢ``
        (:func:`differentiation_matrix`; exact for polynomials of degree ≤ d).
    end : ndarray, shape (d + 1,)
        ``ℓᵢ(1)``, the continuity coefficients: the state at the interval's end is
        ``Σᵢ end[i]·xᵢ`` (a unit vector on the last point, since c_d = 1).
    weights : ndarray, shape (d,)
        Radau IIA quadrature weights ``bⱼ = ∫₀¹ Lⱼ`` with L the Lagrange basis on the
        collocation points: ``∫₀¹ g ≈ Σⱼ bⱼ g(cⱼ)``, exact for degree ≤ 2d − 2.
    integration : ndarray, shape (d, d)
        The Butcher matrix ``A[j, k] = ∫₀^{cⱼ} Lₖ`` of Radau IIA (Hairer & Wanner 1996,
        §IV.5): ``x(t₀ + cⱼ·h) = x₀ + h Σₖ A[j, k]·ẋ(t₀ + cₖ·h)``.
    coefficients : ndarray, shape (d + 1, d + 1)
        Monomial coefficients of ℓᵢ (row i, highest power first), for :meth:`values`.
    """

    degree: int
    tau: np.ndarray
    points: np.ndarray
    derivative: np.ndarray
    end: np.ndarray
    weights: np.ndarray
    integration: np.ndarray
    coefficients: np.ndarray

    def values(self, s: _Point) -> list[_Point]:
        """``[ℓ₀(s), …, ℓ_d(s)]`` at ``s`` (a number, an array or a CasADi expression; the
        polynomials are extrapolated outside [0, 1]), by Horner's rule."""
        out = []
        for row in self.coefficients:
            v: Any = 0.0  # then the kind of s
            for c in row:
                v = v * s + float(c)
            out.append(v)
        return out


@functools.cache
def radau_basis(degree: int) -> RadauBasis:
    """The :class:`RadauBasis` of ``degree`` (cached: the arrays are shared, do not modify them).

    Collocation at the Radau points is the Radau IIA Runge–Kutta method of order 2d − 1 at the
    mesh points (Hairer & Wanner, *Solving Ordinary Differential Equations II*, 2nd ed. 1996,
    §IV.5; Ehle 1969).  The basis polynomials ℓᵢ and Lⱼ are the Lagrange polynomials on the
    nodes; their derivatives are taken in barycentric form (Berrut & Trefethen 2004) and their
    integrals from their monomial coefficients.
    """
    tau = radau_points(degree)
    d = tau.size
    points = np.concatenate([[0.0], tau])
    coefficients = np.zeros((d + 1, d + 1))
    for i in range(d + 1):
        others = np.delete(points, i)
        coefficients[i] = np.poly(others) / np.prod(points[i] - others)
    weights, integration = np.zeros(d), np.zeros((d, d))
    for k in range(d):  # L_k: the Lagrange polynomial of degree d − 1 on the collocation points
        others = np.delete(tau, k)
        primitive = np.polyint(np.atleast_1d(np.poly(others)) / np.prod(tau[k] - others))
        weights[k] = np.polyval(primitive, 1.0)
        integration[:, k] = np.polyval(primitive, tau)
    end = np.array([np.polyval(row, 1.0) for row in coefficients])
    arrays = [tau, points, differentiation_matrix(points), end, weights, integration, coefficients]
    for a in arrays:
        a.setflags(write=False)
    return RadauBasis(d, *arrays)
