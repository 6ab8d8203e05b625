"""Mechanical systems with unilateral point contacts on a flat ground (Wieber & Billet 2006, §3).

The equations of motion with contact forces λ, Eq. (4),

    M(q)·q̈ = f(t, q, q̇, p) + C(q)ᵀ·λ,

where ``f`` holds everything but the contact forces (gravity, inertial forces, the actions of
the muscles: ``γ − N`` of Eq. 4), and ``C`` stacks the Jacobians of the active contact points.
Each :class:`ContactPoint` is a point of the system with its position ``point(q) → (x, y)`` in
the ground's frame (the ground is the line y = 0, y up), so its gap is φ = y (Eqs. 1–3:
φ ≥ 0, λ_n ≥ 0, λ_n·φ = 0).  A point that does not slip (unlimited friction, the default) also
carries a tangential row, bilateral while the point is in contact.

This module is the definition only; the event-driven simulator (acceleration-level
complementarity, Eqs. 4–7, at each mode change; lift-off, landing, inelastic impact) is
:func:`colloc.simulation.contact.simulate_contact`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import ModelError

__all__ = ["ContactPoint", "ContactSystem"]


@dataclass(frozen=True)
class ContactPoint:
    """A point that may touch the ground y = 0.

    ``point(q)`` → (x, y); ``jacobian(q)`` → the 2×n matrix ∂(x, y)/∂q; ``bias(q, q̇)`` → the
    2-vector J̇·q̇ (so that the point's acceleration is J·q̈ + J̇·q̇).  ``slip=False``: no
    sliding while in contact (a bilateral tangential row besides the unilateral normal one).
    """

    name: str
    point: Callable
    jacobian: Callable
    bias: Callable
    slip: bool = False

    def gap(self, q: ArrayLike) -> float:
        """φ(q): the height of the point above the ground."""
        return float(np.asarray(self.point(q), dtype=float).ravel()[1])

    def rows(self, q: ArrayLike, qd: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """The constraint rows of the contact (normal first, then tangential unless it slips)
        and their J̇·q̇ terms."""
        J = np.asarray(self.jacobian(q), dtype=float).reshape(2, -1)
        b = np.asarray(self.bias(q, qd), dtype=float).ravel()
        return (J[1:2], b[1:2]) if self.slip else (J[::-1], b[::-1])


@dataclass
class ContactSystem:
    """``coordinates`` q (names), ``mass(q, p)`` → M (n×n, symmetric positive definite),
    ``forces(t, q, q̇, p)`` → f (n) and the ``contacts``; state x = [q, q̇]."""

    name: str
    coordinates: Sequence[str]
    mass: Callable
    forces: Callable
    contacts: Sequence[ContactPoint]

    def __post_init__(self):
        names = [c.name for c in self.contacts]
        if len(set(names)) != len(names):
            raise ModelError(f"contact system {self.name}: duplicate contact names")
        if not self.contacts:
            raise ModelError(f"contact system {self.name}: no contact points")

    @property
    def n(self) -> int:
        """The number of generalized coordinates."""
        return len(self.coordinates)

    def index(self, name: str) -> int:
        """The index of the contact named ``name``."""
        for i, c in enumerate(self.contacts):
            if c.name == name:
                return i
        raise ModelError(f"contact system {self.name}: unknown contact {name!r}")

    def gaps(self, q: ArrayLike) -> np.ndarray:
        """φ of every contact point."""
        return np.array([c.gap(q) for c in self.contacts])

    def gap_rates(self, q: ArrayLike, qd: ArrayLike) -> np.ndarray:
        """φ̇ of every contact point."""
        return np.array([float(np.asarray(c.jacobian(q), dtype=float).reshape(2, -1)[1] @ qd)
                         for c in self.contacts])
