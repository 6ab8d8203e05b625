"""The options of :func:`colloc.solve` that every kind of problem shares, checked once."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.engine import check_client
from ..base.errors import OptionsError
from .ipopt import Ipopt, IterationInfo

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["START_CHOICES", "SolveOptions"]

#: Values of ``solve(start=...)``.
START_CHOICES = ("equation-error", "guess")


@dataclass(frozen=True)
class SolveOptions:
    """``solve``'s keyword arguments (their meaning: :func:`colloc.solve`), checked on
    construction; ``solver`` is an :class:`Ipopt` (the default settings when None is given)."""

    solver: Ipopt
    guess: Mapping[str, float] | None = None
    progress: Callable[[IterationInfo], None] | None = None
    start: str | None = None
    starts: int = 1
    client: Client | None = None
    seed: int = 0
    verdict: bool = True

    @classmethod
    def checked(cls, *, solver: Ipopt | None, guess: Mapping[str, float] | None,
                progress: Callable[[IterationInfo], None] | None, start: str | None, starts: int,
                client: Client | None, seed: int, verdict: bool) -> SolveOptions:
        """The options, or an :class:`OptionsError` naming the argument that is wrong."""
        solver = Ipopt() if solver is None else solver
        if not isinstance(solver, Ipopt):
            raise OptionsError(f"solve(solver=...): expected colloc.Ipopt, got {type(solver).__name__}")
        if start is not None and start not in START_CHOICES:
            raise OptionsError(f"solve(start={start!r}): expected one of {', '.join(map(repr, START_CHOICES))}")
        if isinstance(starts, bool) or not isinstance(starts, numbers.Integral) or starts < 1:
            raise OptionsError(f"solve(starts={starts!r}): expected an integer >= 1")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise OptionsError(f"solve(seed={seed!r}): expected an integer >= 0")
        if int(starts) > 1 and progress is not None:
            raise OptionsError("solve(progress=...): progress reports are for one start; with starts > 1 "
                               "pass progress=None")
        check_client(client, "solve")
        return cls(solver=solver, guess=guess, progress=progress, start=start, starts=int(starts), client=client,
                   seed=int(seed), verdict=bool(verdict))
