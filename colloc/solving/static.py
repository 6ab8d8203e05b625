"""Static optimisation of activations: the least effort that holds a posture, optionally stiff enough.

Muscle (or actuator) activations ``a`` of ``m`` actuators hold ``n`` generalized coordinates in
equilibrium when ``A a = b`` (``A``: generalized force per unit activation, ``b``: what the
passive forces, gravity and loads leave to the actuators).  Many activations do; a static
optimisation picks the one of least effort::

    min_a  effort(a)   s.t.   A a = b,   lower ≤ a ≤ upper,   [K(a) ⪰ σ I]

The optional constraint asks the equilibrium to be *stable*.  At an equilibrium the
linearization is the mechanical system ``M ẍ + D ẋ + K x = 0``; with ``D`` positive definite
and ``K`` symmetric it is asymptotically stable if and only if ``K`` is positive definite
(Kelvin–Tait–Chetaev; Zajac & Gordon 1989 use the same criterion for posture).  When the
actuators add stiffness linearly, ``K(a) = K₀ + Σ_k a_k K_k`` and ``K(a) ⪰ σ I`` is a linear
matrix inequality, convex in ``a``.  It is written smoothly with a Cholesky factor ``L``
(lower triangular, ``n(n+1)/2`` extra unknowns, non-negative diagonal)::

    K(a)/s − (σ/s) I = L Lᵀ                      (s: a row scale, ``StiffnessConstraint.scale``)

so that IPOPT (exact derivatives from CasADi) solves it as an ordinary smooth NLP, far better
conditioned than a Lyapunov equation of the whole first-order system.

:meth:`StaticOptimization.stiffness_reserve` answers whether any stable equilibrium exists:
``max_a λ_min(K(a))`` subject to equilibrium and bounds (the same factor with ``σ`` free: a
concave objective over a convex set, so its maximum is global).  A reserve below the margin
means that no activation holds the posture stably.  :meth:`StaticOptimization.minimize_linear`
solves the linear-effort case (``min cᵀa``, e.g. the total force) as a linear program.

References
----------
F. E. Zajac and M. E. Gordon (1989), Determining muscle's force and action in multi-articular
movement, *Exercise and Sport Sciences Reviews* 17, 187–230.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import CollocInputError, OptionsError
from .ipopt import Ipopt

__all__ = ["StaticOptimization", "StaticSolution", "StiffnessConstraint"]

#: IPOPT settings of a static optimisation: tight tolerances (the problems are small) and the
#: adaptive barrier update, which copes with the many activations that end on a bound.
STATIC_IPOPT = Ipopt(tol=1e-10, max_iter=3000, standard_errors=False, simulate=False,
                     extra={"constr_viol_tol": 1e-10, "acceptable_iter": 0, "mu_strategy": "adaptive"})


def _matrix(name: str, value, shape: tuple[int, ...]) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise CollocInputError(f"{name} must be an array of numbers: {exc}") from None
    if arr.shape != shape:
        raise CollocInputError(f"{name} must have the shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise CollocInputError(f"{name} must be finite")
    return arr


@dataclass(frozen=True, eq=False)
class StiffnessConstraint:
    """``K(a) = K₀ + Σ_k a_k K_k ⪰ margin · I``: the stiffness an equilibrium needs to be stable.

    Parameters
    ----------
    K0 : array_like, shape (n, n)
        Stiffness without activation (gravity makes it negative for an inverted posture).
    K_a : array_like, shape (n, n, m)
        ``∂K/∂a_k`` (constant: the stiffness is affine in the activations).
    margin : float
        ``σ > 0``: the smallest eigenvalue ``K`` must keep (same units as ``K``).
    scale : float
        Row scale ``s > 0`` of the constraint (a typical stiffness, e.g. that of one joint);
        it changes the conditioning of the NLP, not its solution.

    Raises
    ------
    CollocInputError
        A shape or value is wrong, or ``K₀``/``K_k`` is not symmetric (the criterion needs a
        symmetric stiffness).
    """

    K0: np.ndarray
    K_a: np.ndarray
    margin: float
    scale: float = 1.0

    def __post_init__(self) -> None:
        K0 = np.asarray(self.K0, dtype=float)
        if K0.ndim != 2 or K0.shape[0] != K0.shape[1] or K0.shape[0] < 1:
            raise CollocInputError(f"StiffnessConstraint: K0 must be a square matrix, got the shape {K0.shape}")
        n = K0.shape[0]
        K_a = np.asarray(self.K_a, dtype=float)
        if K_a.ndim != 3 or K_a.shape[:2] != (n, n):
            raise CollocInputError(f"StiffnessConstraint: K_a must have the shape ({n}, {n}, m), got {K_a.shape}")
        K0, K_a = _matrix("StiffnessConstraint: K0", K0, K0.shape), _matrix("StiffnessConstraint: K_a", K_a, K_a.shape)
        for name, v in (("margin", self.margin), ("scale", self.scale)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not (
                    np.isfinite(v) and v > 0):
                raise CollocInputError(f"StiffnessConstraint: {name} must be a finite number > 0, got {v!r}")
        asym = max(np.abs(K0 - K0.T).max(), np.abs(K_a - K_a.transpose(1, 0, 2)).max())
        if asym > 1e-8 * max(1.0, np.abs(K_a).max(), np.abs(K0).max()):
            raise CollocInputError(f"StiffnessConstraint: K0 and K_a must be symmetric (largest asymmetry "
                                   f"{asym:.3g}); the criterion K ⪰ σI applies to a symmetric stiffness only")
        object.__setattr__(self, "K0", K0)
        object.__setattr__(self, "K_a", K_a)
        object.__setattr__(self, "margin", float(self.margin))
        object.__setattr__(self, "scale", float(self.scale))

    @property
    def size(self) -> int:
        """``n``, the number of generalized coordinates."""
        return int(self.K0.shape[0])

    def matrix(self, a: ArrayLike) -> np.ndarray:
        """``K(a)`` (n × n).

        Parameters
        ----------
        a : array_like, shape (m,)
            Activations.
        """
        return self.K0 + self.K_a @ np.asarray(a, dtype=float)

    def min_eigenvalue(self, a: ArrayLike) -> float:
        """``λ_min(K(a))`` of the symmetric part.

        Parameters
        ----------
        a : array_like, shape (m,)
            Activations.
        """
        K = self.matrix(a)
        return float(np.linalg.eigvalsh(0.5 * (K + K.T))[0])


@dataclass(frozen=True)
class StaticSolution:
    """One static optimisation (the result of a :class:`StaticOptimization` method).

    Attributes
    ----------
    activations : numpy.ndarray, shape (m,)
        The optimum, clipped to the bounds (IPOPT may leave them by its tolerance).
    objective : float
        The effort at ``activations`` (:meth:`~StaticOptimization.minimize`,
        :meth:`~StaticOptimization.minimize_linear`) or the reserve ``λ_min(K)``
        (:meth:`~StaticOptimization.stiffness_reserve`).
    success : bool
        Whether the solver reports an optimum.
    status : str
        The solver's status (IPOPT's ``return_status``, or the linear program's message).
    iterations : int
        Solver iterations (-1 when not reported).
    time_s : float
        Wall time of the solve.
    equilibrium_residual : float
        ``max |A a − b|`` at ``activations``.
    min_stiffness_eigenvalue : float or None
        ``λ_min(K(a))`` when there is a stiffness constraint.
    """

    activations: np.ndarray = field(repr=False)
    objective: float
    success: bool
    status: str
    iterations: int
    time_s: float
    equilibrium_residual: float
    min_stiffness_eigenvalue: float | None = None


@dataclass(frozen=True)
class _Run:
    """What one solve reports."""

    success: bool
    status: str
    iterations: int


class StaticOptimization:
    """Least-effort activations that hold an equilibrium, optionally with a stiffness margin.

    ``min effort(a)`` subject to ``A a = b``, ``lower ≤ a ≤ upper`` and, with ``stiffness``,
    ``K(a) ⪰ σ I`` (see the module docstring).  The NLPs are built on first use and reused,
    so several starts cost one build.

    Parameters
    ----------
    A : array_like, shape (n, m)
        Generalized force of each actuator per unit activation.
    b : array_like, shape (n,)
        Generalized force the actuators must supply (minus the passive, gravity and load forces).
    effort : callable, optional
        ``effort(a) -> scalar`` written with CasADi operations (it is called once on a
        symbolic ``a``), e.g. ``lambda a: casadi.sumsqr(a)``.  Needed by :meth:`minimize`.
    lower, upper : float or array_like, shape (m,)
        Bounds of the activations (default 0 and 1).
    stiffness : StiffnessConstraint, optional
        The stability requirement ``K(a) ⪰ σ I``.
    ipopt : Ipopt, optional
        IPOPT settings (default :attr:`DEFAULT_IPOPT`: tolerance 1e-10, 3000 iterations).

    Examples
    --------
    >>> import casadi, numpy as np, colloc as co
    >>> opt = co.StaticOptimization([[2.0, -1.0]], [1.0], effort=lambda a: casadi.sumsqr(a))
    >>> [round(float(v), 6) for v in opt.minimize().activations]
    [0.5, 0.0]
    """

    #: The IPOPT settings used when none are given: tolerance 1e-10 (also on the constraint
    #: violation), 3000 iterations, the adaptive barrier update; ``dataclasses.replace`` it to change one.
    DEFAULT_IPOPT = STATIC_IPOPT
    #: Repeated solves of :meth:`stiffness_reserve` from its own result (see its notes).
    RESERVE_RESTARTS = 3

    def __init__(self, A: ArrayLike, b: ArrayLike, effort: Callable[[Any], Any] | None = None, *,
                 lower: ArrayLike = 0.0, upper: ArrayLike = 1.0,
                 stiffness: StiffnessConstraint | None = None, ipopt: Ipopt | None = None) -> None:
        try:
            A = np.atleast_2d(np.asarray(A, dtype=float))
            bounds = [np.broadcast_to(np.asarray(v, dtype=float), (A.shape[-1],)).copy() for v in (lower, upper)]
        except (TypeError, ValueError) as exc:
            raise CollocInputError(f"StaticOptimization: A must be an n × m matrix of numbers and lower, upper "
                                   f"numbers or m of them: {exc}") from None
        if A.ndim != 2:
            raise CollocInputError(f"StaticOptimization: A must be an n × m matrix, got the shape {A.shape}")
        n, m = A.shape
        self.A = _matrix("StaticOptimization: A", A, (n, m))
        self.b = _matrix("StaticOptimization: b", np.ravel(np.asarray(b, dtype=float)), (n,))
        self.lower, self.upper = bounds
        if np.any(np.isnan(bounds)) or not np.all(self.lower <= self.upper):
            raise CollocInputError("StaticOptimization: lower must be <= upper for every activation")
        if stiffness is not None:
            if not isinstance(stiffness, StiffnessConstraint):
                raise OptionsError(f"StaticOptimization: stiffness must be a StiffnessConstraint, got "
                                   f"{type(stiffness).__name__}")
            if stiffness.size != n or stiffness.K_a.shape[2] != m:
                raise CollocInputError(f"StaticOptimization: the stiffness is {stiffness.size} × {stiffness.size} "
                                       f"× {stiffness.K_a.shape[2]}, expected {n} × {n} × {m} (A is {n} × {m})")
        if effort is not None and not callable(effort):
            raise OptionsError(f"StaticOptimization: effort must be callable, got {type(effort).__name__}")
        if ipopt is not None and not isinstance(ipopt, Ipopt):
            raise OptionsError(f"StaticOptimization: ipopt must be an Ipopt, got {type(ipopt).__name__}")
        self.n, self.m = n, m
        self.stiffness = stiffness
        self.ipopt = self.DEFAULT_IPOPT if ipopt is None else ipopt
        self._effort = effort
        self._effort_function: ca.Function | None = None
        self._solvers: dict[str, ca.Function] = {}
        self._tri = np.tril_indices(n)

    # -- building blocks -----------------------------------------------------------------
    def effort(self, a: ArrayLike) -> float:
        """The effort measure at ``a``.

        Parameters
        ----------
        a : array_like, shape (m,)
            Activations.
        """
        if self._effort is None:
            raise OptionsError("StaticOptimization: no effort was given")
        if self._effort_function is None:
            s = ca.SX.sym("a", self.m)
            self._effort_function = ca.Function("effort", [s], [self._effort(s)])
        return float(self._effort_function(np.asarray(a, dtype=float)))

    def _equilibrium(self, a):
        return ca.DM(self.A) @ a - ca.DM(self.b)

    def _factor(self, l):
        L = ca.SX.zeros(self.n, self.n)
        for k, (i, j) in enumerate(zip(*self._tri)):
            L[int(i), int(j)] = l[k]
        return L

    def _scaled_stiffness(self, a):
        st = self._require_stiffness()
        flat = ca.DM(st.K_a.reshape(self.n * self.n, self.m, order="F"))
        return (ca.DM(st.K0) + ca.reshape(flat @ a, self.n, self.n)) / st.scale

    def _require_stiffness(self) -> StiffnessConstraint:
        if self.stiffness is None:
            raise OptionsError("StaticOptimization: this needs a stiffness constraint "
                               "(stiffness=StiffnessConstraint(...))")
        return self.stiffness

    def _solver(self, kind: str) -> ca.Function:
        if kind in self._solvers:
            return self._solvers[kind]
        a = ca.SX.sym("a", self.m)
        if kind == "reserve":
            l, t = ca.SX.sym("l", len(self._tri[0])), ca.SX.sym("t")
            L = self._factor(l)
            R = self._scaled_stiffness(a) - t * ca.DM.eye(self.n) - L @ L.T
            nlp = {"x": ca.vertcat(a, l, t), "f": -t,
                   "g": ca.vertcat(self._equilibrium(a), *[R[int(i), int(j)] for i, j in zip(*self._tri)])}
        else:
            if self._effort is None:
                raise OptionsError("StaticOptimization: minimize needs an effort (effort=callable)")
            f = self._effort(a)
            if self.stiffness is None:
                nlp = {"x": a, "f": f, "g": self._equilibrium(a)}
            else:
                l = ca.SX.sym("l", len(self._tri[0]))
                shift = ca.DM(np.eye(self.n) * (self.stiffness.margin / self.stiffness.scale))
                L = self._factor(l)
                R = self._scaled_stiffness(a) - shift - L @ L.T
                nlp = {"x": ca.vertcat(a, l), "f": f,
                       "g": ca.vertcat(self._equilibrium(a), *[R[int(i), int(j)] for i, j in zip(*self._tri)])}
        self._solvers[kind] = ca.nlpsol(f"static_{kind}", "ipopt", nlp, self.ipopt.nlpsol_options())
        return self._solvers[kind]

    def _factor_guess(self, a, shift: float) -> np.ndarray:
        """Cholesky factor of ``K(a)/s − shift·I``, lifted to be positive definite (a start)."""
        st = self._require_stiffness()
        K = st.matrix(a) / st.scale - shift * np.eye(self.n)
        K = 0.5 * (K + K.T)
        lam = np.linalg.eigvalsh(K)[0]
        if lam < 1e-3:
            K = K + (1e-3 - lam) * np.eye(self.n)
        return np.linalg.cholesky(K)[self._tri]

    def _factor_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        nl = len(self._tri[0])
        lo = np.full(nl, -np.inf)
        lo[self._tri[0] == self._tri[1]] = 0.0
        return lo, np.full(nl, np.inf)

    def _start(self, start) -> np.ndarray:
        if start is None:  # the middle of the bounds, or the finite bound nearest to 0
            middle = 0.5 * (self.lower + self.upper)
            return np.where(np.isfinite(middle), middle, np.clip(0.0, self.lower, self.upper))
        a0 = np.asarray(start, dtype=float).ravel()
        if a0.shape != (self.m,) or not np.all(np.isfinite(a0)):
            raise CollocInputError(f"StaticOptimization: start must be {self.m} finite activations, got shape "
                                   f"{np.shape(start)}")
        return a0

    def _run(self, kind: str, x0, lbx, ubx) -> tuple[np.ndarray, _Run]:
        solver = self._solver(kind)
        sol = solver(x0=x0, lbx=lbx, ubx=ubx, lbg=0.0, ubg=0.0)
        stats = solver.stats()
        a = np.clip(np.asarray(sol["x"], dtype=float).ravel()[:self.m], self.lower, self.upper)
        return a, _Run(bool(stats.get("success", False)), str(stats.get("return_status", "")),
                       int(stats.get("iter_count", -1)))

    def _solution(self, a, objective: float, run: _Run, iterations: int, t0: float) -> StaticSolution:
        kmin = None if self.stiffness is None else self.stiffness.min_eigenvalue(a)
        return StaticSolution(activations=a, objective=float(objective), success=run.success, status=run.status,
                              iterations=iterations, time_s=time.perf_counter() - t0,
                              equilibrium_residual=float(np.max(np.abs(self.A @ a - self.b), initial=0.0)),
                              min_stiffness_eigenvalue=kmin)

    # -- the three problems ----------------------------------------------------------------
    def minimize(self, start: ArrayLike | None = None) -> StaticSolution:
        """Least effort subject to equilibrium, bounds and (if given) the stiffness margin.

        Parameters
        ----------
        start : array_like, shape (m,), optional
            Initial activations (default the middle of the bounds; 0, or the bound nearest
            to it, where a bound is infinite).

        Returns
        -------
        StaticSolution
            ``objective`` is the effort at the (clipped) optimum.
        """
        t0 = time.perf_counter()
        a0 = self._start(start)
        if self.stiffness is None:
            a, run = self._run("effort", a0, self.lower, self.upper)
        else:
            lo, hi = self._factor_bounds()
            x0 = np.concatenate([a0, self._factor_guess(a0, self.stiffness.margin / self.stiffness.scale)])
            a, run = self._run("effort", x0, np.concatenate([self.lower, lo]), np.concatenate([self.upper, hi]))
        return self._solution(a, self.effort(a), run, run.iterations, t0)

    def stiffness_reserve(self, start: ArrayLike | None = None) -> StaticSolution:
        """The largest ``λ_min(K(a))`` over the equilibrium activations within the bounds.

        Parameters
        ----------
        start : array_like, shape (m,), optional
            Initial activations (default the middle of the bounds).

        Returns
        -------
        StaticSolution
            ``objective`` (and ``min_stiffness_eigenvalue``) is the reserve at the clipped
            optimum; below ``stiffness.margin`` no stable equilibrium exists.

        Notes
        -----
        The maximum of ``λ_min`` is unique, but the Cholesky form has stationary points
        below it, where IPOPT may stop with success (on the 18-DoF spine: 97.8 instead of
        98.5 N·m/rad, depending on the rounding of the start).  The solve is therefore
        repeated from its own result with a fresh factor until the reserve stops growing
        (at most :attr:`RESERVE_RESTARTS` times); ``iterations`` counts every solve.
        """
        st = self._require_stiffness()
        t0 = time.perf_counter()
        a0 = self._start(start)
        lo, hi = self._factor_bounds()
        lbx, ubx = np.concatenate([self.lower, lo, [-np.inf]]), np.concatenate([self.upper, hi, [np.inf]])
        best: tuple[np.ndarray, float, _Run] | None = None
        iterations = 0
        for _ in range(1 + self.RESERVE_RESTARTS):
            lam0 = st.min_eigenvalue(a0) / st.scale - 0.01
            a, run = self._run("reserve", np.concatenate([a0, self._factor_guess(a0, lam0), [lam0]]), lbx, ubx)
            iterations += run.iterations
            value = st.min_eigenvalue(a)
            gain = np.inf if best is None else value - best[1]
            if best is None or (run.success and gain > 0):
                best = (a, value, run)
            if not run.success or gain <= 1e-9 * max(1.0, abs(value)):
                break
            a0 = a
        assert best is not None
        return self._solution(best[0], best[1], best[2], iterations, t0)

    def minimize_linear(self, cost: ArrayLike) -> StaticSolution:
        """``min costᵀa`` subject to equilibrium and bounds: a linear program (HiGHS).

        Parameters
        ----------
        cost : array_like, shape (m,)
            Cost per unit activation (e.g. the maximum forces: the total force).

        Returns
        -------
        StaticSolution
            ``success`` False (and the activations NaN) when no activation within the bounds
            holds the equilibrium.

        Raises
        ------
        OptionsError
            With a stiffness constraint (a linear matrix inequality is not a linear program).
        """
        from scipy.optimize import linprog

        if self.stiffness is not None:
            raise OptionsError("StaticOptimization.minimize_linear: the stiffness constraint makes it no linear "
                               "program; use minimize with effort=lambda a: casadi.dot(cost, a)")
        c = _matrix("StaticOptimization.minimize_linear: cost", np.ravel(np.asarray(cost, dtype=float)), (self.m,))
        t0 = time.perf_counter()
        res = linprog(c, A_eq=self.A, b_eq=self.b, bounds=list(zip(self.lower, self.upper)), method="highs")
        run = _Run(bool(res.success), str(res.message), int(getattr(res, "nit", -1)))
        if not res.success:
            return StaticSolution(activations=np.full(self.m, np.nan), objective=float("nan"), success=False,
                                  status=run.status, iterations=run.iterations, time_s=time.perf_counter() - t0,
                                  equilibrium_residual=float("nan"))
        a = np.clip(res.x, self.lower, self.upper)
        return self._solution(a, float(c @ a), run, run.iterations, t0)
