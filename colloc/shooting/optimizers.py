"""Optimizers for the reduced (shooting) problem ``min J(θ)``, ``lb ≤ θ ≤ ub``.

Each takes ``fun(θ) → (J, ∇J)`` (``J = inf`` when the simulation failed) and reports what a
comparison needs: iterations, function and gradient evaluations, wall time and the
objective history.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import casadi as ca
import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

from ..base.callbacks import IterationCallback
from ..base.errors import OptionsError

__all__ = ["LBFGS", "Outcome", "ReducedIpopt", "SteepestDescent"]

FunGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


@dataclass
class Outcome:
    """What an optimizer returns (scipy-style names)."""

    x: np.ndarray
    fun: float
    success: bool
    status: str
    message: str
    iterations: int
    nfev: int
    njev: int
    history: list[tuple[int, float, float]] = field(default_factory=list)  # (iteration, J, seconds)


class _History(list):
    """The (iteration, J, seconds) records, forwarded to an optional callback as they come."""

    def __init__(self, callback: Callable[[int, float, float], None] | None) -> None:
        super().__init__()
        self.callback = callback

    def append(self, item) -> None:
        super().append(item)
        if self.callback is not None:
            self.callback(*item)


class _Counter:
    def __init__(self, fun: FunGrad) -> None:
        self.fun, self.calls, self.start = fun, 0, time.perf_counter()

    def __call__(self, x):
        self.calls += 1
        return self.fun(x)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


@dataclass(frozen=True)
class SteepestDescent:
    """Projected steepest descent with Armijo backtracking (Barauskas & Krušinskienė 2007).

    Parameters
    ----------
    max_iter : int
    rtol : float
        Stop when the objective changes by less than this fraction (the paper: 0.05 %).
    step : float
        First trial step length (in scaled variables); later steps start from twice the
        last accepted one.
    armijo : float
        Sufficient-decrease constant.
    """

    max_iter: int = 1000
    rtol: float = 5e-4
    step: float = 1.0
    armijo: float = 1e-4
    name = "steepest-descent"

    def __post_init__(self) -> None:
        if self.max_iter < 1 or not (0 < self.rtol < 1) or self.step <= 0:
            raise OptionsError(f"SteepestDescent: invalid options {self}")

    def minimize(self, fun: FunGrad, x0: NDArray[np.float64], lb: NDArray[np.float64],
                 ub: NDArray[np.float64],
                 callback: Callable[[int, float, float], None] | None = None) -> Outcome:
        """Minimise ``fun`` from ``x0`` within the box; ``callback(iteration, J, seconds)``."""
        count = _Counter(fun)
        x = np.clip(np.asarray(x0, float), lb, ub)
        f, g = count(x)
        if not np.isfinite(f):
            return Outcome(x, f, False, "simulation_failed", "the initial guess cannot be simulated", 0, 1, 1)
        history = _History(callback)
        history.append((0, f, count.elapsed()))
        alpha = self.step / max(float(np.linalg.norm(g)), 1e-300)
        for it in range(1, self.max_iter + 1):
            accepted = False
            for _ in range(60):
                trial = np.clip(x - alpha * g, lb, ub)
                ft, gt = count(trial)
                if np.isfinite(ft) and ft <= f + self.armijo * g @ (trial - x):
                    accepted = True
                    break
                alpha *= 0.5
            if not accepted:
                return Outcome(x, f, False, "line_search_failed", "no descent step found along -∇J",
                               it - 1, count.calls, count.calls, history)
            change = abs(f - ft) / max(abs(f), 1e-300)
            x, f, g = trial, ft, gt
            history.append((it, f, count.elapsed()))
            if change < self.rtol:
                return Outcome(x, f, True, "converged",
                               f"objective changed by less than {self.rtol:.2%}", it, count.calls, count.calls, history)
            alpha *= 2.0
        return Outcome(x, f, False, "max_iter", f"{self.max_iter} iterations", self.max_iter, count.calls,
                       count.calls, history)


@dataclass(frozen=True)
class LBFGS:
    """scipy's L-BFGS-B (bounded limited-memory BFGS).

    Parameters
    ----------
    max_iter : int
    ftol, gtol : float
        scipy's stopping tolerances.
    memory : int
        Number of correction pairs.
    """

    max_iter: int = 1000
    ftol: float = 1e-12
    gtol: float = 1e-8
    memory: int = 20
    name = "l-bfgs-b"

    def minimize(self, fun: FunGrad, x0: NDArray[np.float64], lb: NDArray[np.float64],
                 ub: NDArray[np.float64],
                 callback: Callable[[int, float, float], None] | None = None) -> Outcome:
        """Minimise ``fun`` from ``x0`` within the box; ``callback(iteration, J, seconds)``."""
        count = _Counter(fun)
        history = _History(callback)
        f0, _ = count(np.clip(np.asarray(x0, float), lb, ub))
        if not np.isfinite(f0):
            return Outcome(np.asarray(x0, float), f0, False, "simulation_failed",
                           "the initial guess cannot be simulated", 0, 1, 1)
        history.append((0, f0, count.elapsed()))

        def safe(x):
            f, g = count(x)
            if not np.isfinite(f):  # tell the line search to step back
                return 1e300, np.zeros_like(x)
            return f, g

        def cb(xk):
            f, _ = fun(xk)
            history.append((len(history), f, count.elapsed()))

        bounds = [(lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None) for lo, hi in zip(lb, ub)]
        res = minimize(safe, x0, jac=True, method="L-BFGS-B", bounds=bounds, callback=cb,
                       options={"maxiter": self.max_iter, "ftol": self.ftol, "gtol": self.gtol,
                                "maxcor": self.memory})
        status = "converged" if res.success else ("max_iter" if res.nit >= self.max_iter else "stopped")
        return Outcome(res.x, float(res.fun), bool(res.success), status, str(res.message), int(res.nit),
                       count.calls, count.calls, history)


@dataclass(frozen=True)
class ReducedIpopt:
    """IPOPT on the reduced problem, L-BFGS Hessian, gradient from the chosen strategy.

    Parameters
    ----------
    max_iter : int
    tol : float
    """

    max_iter: int = 1000
    tol: float = 1e-8
    name = "ipopt"

    def minimize(self, fun: FunGrad, x0: NDArray[np.float64], lb: NDArray[np.float64],
                 ub: NDArray[np.float64],
                 callback: Callable[[int, float, float], None] | None = None) -> Outcome:
        """Minimise ``fun`` from ``x0`` within the box; ``callback(iteration, J, seconds)``."""
        count = _Counter(fun)
        history = _History(callback)
        n = len(x0)
        outer = self

        class _FG(ca.Callback):
            def __init__(self):
                ca.Callback.__init__(self)
                self.construct("fg", {"enable_fd": False})

            def get_n_in(self):
                return 1

            def get_n_out(self):
                return 2

            def get_sparsity_in(self, i):
                return ca.Sparsity.dense(n, 1)

            def get_sparsity_out(self, i):
                return ca.Sparsity.dense(1, 1) if i == 0 else ca.Sparsity.dense(n, 1)

            def eval(self, arg):
                f, g = count(np.array(arg[0]).ravel())
                if not np.isfinite(f):
                    raise RuntimeError("simulation failed")
                return [f, g]

        fg = _FG()
        x = ca.MX.sym("x", n)
        p = ca.MX.sym("p", 0)
        fx, gx = fg(x)
        grad_f = ca.Function("grad_f", [x, p], [fx, gx], ["x", "p"], ["f", "grad_f_x"])

        def on_iteration(iteration, arg):
            history.append((iteration, float(arg[1]), count.elapsed()))

        it = IterationCallback({"x": n, "f": 1, "g": 0, "lam_x": n, "lam_g": 0, "lam_p": 0}, on_iteration)
        solver = ca.nlpsol("reduced", "ipopt", {"x": x, "p": p, "f": fx}, {
            "print_time": False, "ipopt.print_level": 0, "ipopt.sb": "yes",
            "ipopt.hessian_approximation": "limited-memory", "ipopt.max_iter": outer.max_iter,
            "ipopt.tol": outer.tol, "grad_f": grad_f, "iteration_callback": it,
            "calc_lam_p": False, "no_nlp_grad": True,
        })
        f0, _ = count(np.clip(np.asarray(x0, float), lb, ub))
        if not np.isfinite(f0):
            return Outcome(np.asarray(x0, float), f0, False, "simulation_failed",
                           "the initial guess cannot be simulated", 0, 1, 1)
        sol = solver(x0=x0, lbx=lb, ubx=ub)
        stats = solver.stats()
        return Outcome(np.array(sol["x"]).ravel(), float(sol["f"]), bool(stats["success"]),
                       str(stats["return_status"]), str(stats["return_status"]), int(stats["iter_count"]),
                       count.calls, count.calls, history)
