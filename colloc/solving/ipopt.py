"""IPOPT's settings and the per-iteration progress report every solve path shares."""

from __future__ import annotations

import time as _time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..base.callbacks import IterationCallback
from ..base.errors import OptionsError

__all__ = ["Ipopt", "IterationInfo", "progress_callback"]

_HESSIANS = ("exact", "gauss-newton", "limited-memory")


@dataclass(frozen=True)
class Ipopt:
    """IPOPT settings (defaults in one place).

    Parameters
    ----------
    hessian : {"exact", "gauss-newton", "limited-memory"}
        Exact Hessian of the Lagrangian (default); the Gauss–Newton approximation
        ``JᵀJ`` of the least-squares terms (constraint curvature ignored); or IPOPT's
        L-BFGS.
    tol : float
        IPOPT's overall tolerance.
    max_iter : int
    linear_solver : str
        IPOPT linear solver (``"mumps"`` ships with CasADi).
    mumps_pivot_order : int
        MUMPS ordering; 6 (QAMD) scales far better than the default when constant
        parameters couple every node.
    mumps_permuting_scaling : int
        MUMPS's ICNTL(6) (IPOPT's ``mumps_permuting_scaling``): 0 (default here) no
        maximum-transversal permutation and scaling; IPOPT's own default is 7 (automatic).
        With parameters coupling every node, the automatic choice can make the first
        factorization need many times the memory its analysis predicted (IPOPT then
        reports ``MUMPS returned INFO(1) = -9 ... reallocating`` again and again and does
        not get past it): four 2 s `fes-muscle` records never finished their first
        iteration with 7 and solve in seconds with 0; the two-link seed case is as fast
        or faster with 0 (``benchmarks/README.md``, `fes_muscle.py`).
    mumps_mem_percent : int
        How much more factor workspace than its analysis predicts MUMPS reserves, in per
        cent (IPOPT's ``mumps_mem_percent``; IPOPT's default 1000, 100 here).  MUMPS touches
        only what the factor fills, so the reservation does not show in the resident
        memory, but at 600,001 nodes of the two-link case eleven times the prediction was
        more than the allocator would give: the first factorization failed (MUMPS
        INFO(1) = -13) and the solve ended in ``Restoration_Failed``.  A reservation too
        small is not fatal: IPOPT enlarges it and factorizes again.
    print_level : int
        IPOPT's own output (0 = silent, 5 = the usual table).
    parallel : int
        Threads used to evaluate the mapped local functions.
    standard_errors : bool
        Compute the parameter covariance after the solve.
    simulate : bool
        Run the forward-simulation check after the solve.
    absolute_sigma : bool
        ``False`` (default): the covariance is rescaled by the residual variance
        ``s² = ‖r‖²/dof`` of the weighted fit, so standard errors hold when the declared
        noise (fit weights ``1/σ²``) is only right up to a common factor.  ``True``: the
        fit weights are taken as the exact ``1/σ²`` and nothing is rescaled (SciPy's
        ``curve_fit(absolute_sigma=True)``); ``colloc identify --absolute-sigma``.
    extra : mapping, optional
        Further raw IPOPT options (``{"mu_strategy": "adaptive"}``).
    """

    hessian: Literal["exact", "gauss-newton", "limited-memory"] = "exact"
    tol: float = 1e-8
    max_iter: int = 500
    linear_solver: str = "mumps"
    mumps_pivot_order: int = 6
    mumps_permuting_scaling: int = 0
    mumps_mem_percent: int = 100
    print_level: int = 0
    parallel: int = 1
    standard_errors: bool = True
    simulate: bool = True
    absolute_sigma: bool = False
    extra: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.hessian not in _HESSIANS:
            raise OptionsError(f"Ipopt(hessian={self.hessian!r}): expected one of {', '.join(_HESSIANS)}")
        if not (self.tol > 0):
            raise OptionsError(f"Ipopt(tol={self.tol!r}): must be > 0")
        if int(self.max_iter) != self.max_iter or self.max_iter < 0:
            raise OptionsError(f"Ipopt(max_iter={self.max_iter!r}): must be an integer >= 0")
        if self.parallel < 1:
            raise OptionsError(f"Ipopt(parallel={self.parallel!r}): must be >= 1")

    def nlpsol_options(self) -> dict:
        """Options dict for ``casadi.nlpsol``."""
        opts = {
            "print_time": False,
            "ipopt.print_level": int(self.print_level),
            "ipopt.sb": "yes",
            "ipopt.tol": float(self.tol),
            "ipopt.max_iter": int(self.max_iter),
            "ipopt.linear_solver": self.linear_solver,
        }
        if self.linear_solver == "mumps":
            opts["ipopt.mumps_pivot_order"] = int(self.mumps_pivot_order)
            opts["ipopt.mumps_permuting_scaling"] = int(self.mumps_permuting_scaling)
            opts["ipopt.mumps_mem_percent"] = int(self.mumps_mem_percent)
        if self.hessian == "limited-memory":
            opts["ipopt.hessian_approximation"] = "limited-memory"
        for k, v in (self.extra or {}).items():
            opts[k if "." in k else f"ipopt.{k}"] = v
        return opts


@dataclass(frozen=True)
class IterationInfo:
    """What a progress callback receives after every solver iteration."""

    iteration: int
    objective: float
    max_violation: float
    elapsed_s: float


def progress_callback(nx, ng, np_, lbg, ubg, objective_scale, report, start) -> IterationCallback:
    """IPOPT iteration callback forwarding a compact :class:`IterationInfo` to ``report``."""

    def on_iteration(iteration, arg):
        g = np.asarray(arg[2]).ravel()
        viol = float(np.max(np.maximum(lbg - g, 0) + np.maximum(g - ubg, 0), initial=0.0))
        report(IterationInfo(iteration, float(arg[1]) / objective_scale, viol, _time.perf_counter() - start))

    sizes = {"x": nx, "f": 1, "g": ng, "lam_x": nx, "lam_g": ng, "lam_p": np_}
    return IterationCallback(sizes, on_iteration)
