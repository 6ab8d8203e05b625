"""An IPOPT iteration callback for ``casadi.nlpsol`` (shared by the collocation and
reduced-shooting solvers)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import casadi as ca

__all__ = ["IterationCallback"]


class IterationCallback(ca.Callback):
    """Calls ``on_iteration(iteration, arg)`` after every IPOPT iteration; a true return value
    stops the solve there (IPOPT's status ``User_Requested_Stop``: a deadline checked inside a
    solve).

    ``arg`` holds the nlpsol outputs in order (``x, f, g, lam_x, lam_g, lam_p``) as DMs.

    Parameters
    ----------
    sizes : dict
        Length of each nlpsol output: keys ``x, f, g, lam_x, lam_g, lam_p``.
    on_iteration : callable
        ``on_iteration(iteration, arg)``; a true return value stops IPOPT.
    """

    def __init__(self, sizes: dict[str, int], on_iteration: Callable[[int, list], None]) -> None:
        ca.Callback.__init__(self)
        self.sizes = sizes
        self.on_iteration = on_iteration
        self.iteration = 0
        self.construct("iteration_callback", {})

    def get_n_in(self) -> int:
        """casadi.Callback: one input per nlpsol output."""
        return ca.nlpsol_n_out()

    def get_n_out(self) -> int:
        """casadi.Callback: one output, the stop flag."""
        return 1

    def get_name_in(self, i: int) -> str:
        """casadi.Callback: input ``i`` is nlpsol's output ``i``."""
        return ca.nlpsol_out(i)

    def get_name_out(self, i: int) -> str:
        """casadi.Callback: the stop flag's name."""
        return "ret"

    def get_sparsity_in(self, i: int) -> ca.Sparsity:
        """casadi.Callback: input ``i`` dense, of the size given in ``sizes``."""
        return ca.Sparsity.dense(self.sizes[ca.nlpsol_out(i)], 1)

    def eval(self, arg: Sequence[ca.DM]) -> list[int]:
        """casadi.Callback: call ``on_iteration``; 1 (stop) when it returns true."""
        stop = self.on_iteration(self.iteration, list(arg))
        self.iteration += 1
        return [1 if stop else 0]
