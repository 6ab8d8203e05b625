"""Grid maths: node placement, quadrature weights and interpolation (pure numpy)."""

from __future__ import annotations

import numpy as np

from ..base.errors import OptionsError

__all__ = ["interpolation_stencil", "locate", "mesh_nodes", "node_times", "trapezoid_weights"]


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
