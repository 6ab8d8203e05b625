"""Collocation transcriptions: how the implicit dynamics become interval defects.

Each transcription turns ``0 = f(ẋ, x, r, u, p, t)`` on the interval ``[t_k, t_k + h]``
into one algebraic defect per equation, and declares its order of accuracy (the tests
measure it).  Transcriptions know nothing of data; :mod:`colloc.transcription.nlp` maps the defect of
one interval over the grid.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import ClassVar

import casadi as ca

from ..base.errors import OptionsError

__all__ = ["AbstractMethod", "AbstractTranscription", "BackwardEuler", "Midpoint", "Trapezoidal"]


class AbstractMethod(abc.ABC):
    """Anything :func:`colloc.solve` accepts: a transcription or a baseline.

    :func:`colloc.solve` runs a transcription (an :class:`AbstractTranscription`) on its
    collocation path.  Any other method (the shooting baselines, or a user's own) provides
    ``solve(problem, *, solver, guess, progress)`` returning a :class:`colloc.Result`.
    """

    #: Name used in result documents and on the command line.
    name: str = "method"


@dataclass(frozen=True)
class AbstractTranscription(AbstractMethod):
    """Direct collocation on a grid of nodes.

    Parameters
    ----------
    num_nodes : int, optional
        Nodes per trial.  ``None`` (default) puts a node at every sample time; an int
        uses a uniform grid and compares data to the linearly interpolated trajectory.
    input_interpolation : {"cubic", "linear"}
        How measured (known) inputs are read between their samples: at nodes off the
        sample times and where a scheme evaluates inside an interval (the midpoint rule's
        centre, where delayed states are read too, by their own cubic kernel).
        ``"cubic"`` (default): the not-a-knot cubic spline through the samples, fourth-order
        accurate.  Linear interpolation is only second order, and its error ``h²/8·u''``
        biases parameters tied to timing (a feedback delay from 100 Hz data moves by about
        1.6 ms).  ``"linear"`` is for inputs with jumps, which a spline would make ring.
    """

    num_nodes: int | None = None
    input_interpolation: str = "cubic"

    def __post_init__(self) -> None:
        if self.num_nodes is not None and (
            not isinstance(self.num_nodes, int) or self.num_nodes < 2
        ):
            raise OptionsError(
                f"{type(self).__name__}(num_nodes={self.num_nodes!r}): expected an int >= 2 or None"
            )
        if self.input_interpolation not in ("cubic", "linear"):
            raise OptionsError(
                f"{type(self).__name__}(input_interpolation={self.input_interpolation!r}): "
                "expected 'cubic' or 'linear'"
            )

    #: Where in an interval (fraction of ``h``) the scheme reads the measured inputs and
    #: delayed states it receives in ``u0`` and ``u1``.
    input_fractions: ClassVar[tuple[float, float]] = (0.0, 1.0)

    @property
    @abc.abstractmethod
    def order(self) -> int:
        """Order of accuracy of the scheme (global error O(h^order))."""

    @abc.abstractmethod
    def defect(self, residual: ca.Function, x0, x1, r0, r1, u0, u1, p, t0, h) -> ca.SX:
        """Defect of one interval, in the units of ``residual`` (not multiplied by h)."""


@dataclass(frozen=True)
class BackwardEuler(AbstractTranscription):
    """Implicit (backward) Euler: ``f((x₁−x₀)/h, x₁, r₁, u₁, p, t₀+h) = 0``; first order."""

    name = "backward-euler"

    @property
    def order(self) -> int:
        """First order."""
        return 1

    def defect(self, residual, x0, x1, r0, r1, u0, u1, p, t0, h):
        """Residual at the end of the interval with the finite-difference slope."""
        return residual((x1 - x0) / h, x1, r1, u1, p, t0 + h)


@dataclass(frozen=True)
class Midpoint(AbstractTranscription):
    """Implicit midpoint rule: the residual at the interval centre; second order."""

    name = "midpoint"

    @property
    def order(self) -> int:
        """Second order."""
        return 2

    #: Measured inputs and delayed states are read at the centre (``u0 = u1 = u(t₀ + h/2)``),
    #: not averaged from the ends.
    input_fractions = (0.5, 0.5)

    def defect(self, residual, x0, x1, r0, r1, u0, u1, p, t0, h):
        """Residual at the midpoint with averaged states and estimated inputs."""
        return residual((x1 - x0) / h, (x0 + x1) / 2, (r0 + r1) / 2, (u0 + u1) / 2, p, t0 + h / 2)


@dataclass(frozen=True)
class Trapezoidal(AbstractTranscription):
    """Trapezoidal rule on the implicit residual: mean of the end-point residuals.

    For explicit dynamics ``ẋ = g`` this is exactly ``x₁ − x₀ = h (g₀ + g₁)/2``; second order.
    """

    name = "trapezoidal"

    @property
    def order(self) -> int:
        """Second order."""
        return 2

    def defect(self, residual, x0, x1, r0, r1, u0, u1, p, t0, h):
        """Average of the residuals at both ends with the finite-difference slope."""
        slope = (x1 - x0) / h
        return (residual(slope, x0, r0, u0, p, t0) + residual(slope, x1, r1, u1, p, t0 + h)) / 2
