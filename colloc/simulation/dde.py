"""Fixed-step integration of delay differential equations with one constant delay.

    ẋ(t) = f(t, x(t), x(t − τ)),   x(t) = φ(t) for t ≤ 0.

Method of steps with the classical explicit Runge–Kutta scheme (RK4) on a fixed step
``h = τ/k``: the delayed arguments of the four stages fall at ``t_n − τ`` (a grid point) and
``t_n + h/2 − τ`` (the midpoint of an earlier step), or at ``t_n + h − τ ≤ t_n``, so they
are always in the already computed past.  The past is interpolated with the cubic Hermite
polynomial through the stored states and derivatives of the enclosing step (local error
O(h⁴), matching RK4), or taken from the history function for arguments ≤ 0.  Because
``τ`` is a whole number of steps, the derivative jumps of the solution at ``t = mτ``
(propagated from the jump at ``t = 0``) fall on grid points and do not spoil the order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import OptionsError

__all__ = ["DDESimulation", "simulate_dde"]


class DDESimulation(NamedTuple):
    """Result of :func:`simulate_dde` (unpacks as ``t, x, status, message``).

    Attributes
    ----------
    t : numpy.ndarray, shape (m,)
        Times from 0 (s); ends at ``t_end`` unless the run diverged.
    x : numpy.ndarray, shape (m, n)
        States at ``t``.
    status : str
        ``"ok"`` or ``"diverged"`` (non-finite state, ``‖x‖_∞ > max_norm``, or a
        floating-point overflow in ``rhs``).
    message : str
        Human-readable detail.
    """

    t: np.ndarray
    x: np.ndarray
    status: str
    message: str


def _hermite(theta: float, w: float, x0, f0, x1, f1):
    t2 = theta * theta
    t3 = t2 * theta
    return ((2 * t3 - 3 * t2 + 1) * x0 + (t3 - 2 * t2 + theta) * w * f0
            + (-2 * t3 + 3 * t2) * x1 + (t3 - t2) * w * f1)


def simulate_dde(
    rhs: Callable,
    history: Callable[[float], ArrayLike] | ArrayLike,
    tau: float,
    t_end: float,
    dt: float,
    *,
    max_norm: float = 1e8,
) -> DDESimulation:
    """Integrate ``ẋ = rhs(t, x(t), x(t − τ))`` from 0 to ``t_end`` (RK4, method of steps).

    Parameters
    ----------
    rhs : callable
        ``rhs(t, x, x_delayed) -> array_like`` of shape (n,); ``x`` and ``x_delayed`` are
        float arrays of shape (n,).
    history : callable or array_like
        ``history(t)`` gives the state for ``t ≤ 0`` (called with ``t ∈ [−τ, 0]``); a
        constant array is a constant history.  The initial state is ``history(0)``.
    tau : float
        Delay τ ≥ 0 (s).  With ``tau == 0`` the equation is an ODE, ``x_delayed = x``.
    t_end : float
        Final time (> 0).
    dt : float
        Requested step (> 0).  With ``tau > 0`` the step used is ``τ/k``,
        ``k = ceil(τ/dt)``, so that the delay is a whole number of steps; the last step
        is shortened to end at ``t_end``.
    max_norm : float
        The run stops with status ``"diverged"`` when ``max |x_i|`` exceeds this.

    Returns
    -------
    DDESimulation
        ``(t, x, status, message)``.

    Raises
    ------
    OptionsError
        For a negative or non-finite ``tau``, a non-positive ``t_end`` or ``dt``, or a
        history/rhs of inconsistent shape.
    """
    for name, v in (("tau", tau), ("t_end", t_end), ("dt", dt), ("max_norm", max_norm)):
        if not isinstance(v, (int, float, np.floating, np.integer)) or not math.isfinite(v):
            raise OptionsError(f"{name} must be a finite number, got {v!r}")
    if tau < 0:
        raise OptionsError(f"tau must be >= 0, got {tau}")
    if t_end <= 0 or dt <= 0 or max_norm <= 0:
        raise OptionsError(f"t_end, dt and max_norm must be > 0, got {t_end}, {dt}, {max_norm}")
    if callable(history):
        hist = history
    else:
        const = np.array(history, dtype=float).ravel()

        def hist(t):
            return const
    x0 = np.array(hist(0.0), dtype=float).ravel()
    n = x0.size
    if n == 0:
        raise OptionsError("history(0) is empty")
    delayed = tau > 0
    h = tau / math.ceil(tau / dt - 1e-12) if delayed else float(dt)
    nsteps = max(1, math.ceil(t_end / h - 1e-9))
    t = np.minimum(np.arange(nsteps + 1) * h, t_end)
    t[-1] = t_end
    X = np.empty((nsteps + 1, n))
    F = np.empty((nsteps + 1, n))
    X[0] = x0

    def past(s: float, k: int) -> np.ndarray:
        """x(s) for s ≤ t_k (k: index of the current step's start)."""
        if s <= 0.0 or k == 0:
            v = np.array(hist(min(s, 0.0)), dtype=float).ravel()
            if v.size != n:
                raise OptionsError(f"history({s:g}) has {v.size} values, history(0) has {n}")
            return v
        j = min(int(s / h), k - 1)
        w = t[j + 1] - t[j]
        return _hermite((s - t[j]) / w, w, X[j], F[j], X[j + 1], F[j + 1])

    def f(ti, xi, k):
        v = np.asarray(rhs(ti, xi, past(ti - tau, k) if delayed else xi), dtype=float).ravel()
        if v.size != n:
            raise OptionsError(f"rhs returned {v.size} values for a state of {n}")
        return v

    status, message, last = "ok", f"integrated to t = {t_end:g} with step {h:.6g}", nsteps
    try:
        for k in range(nsteps):
            hk = t[k + 1] - t[k]
            xk = X[k]
            k1 = f(t[k], xk, k)
            F[k] = k1
            k2 = f(t[k] + hk / 2, xk + hk / 2 * k1, k)
            k3 = f(t[k] + hk / 2, xk + hk / 2 * k2, k)
            k4 = f(t[k] + hk, xk + hk * k3, k)
            X[k + 1] = xk + hk / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            if not np.all(np.isfinite(X[k + 1])) or np.max(np.abs(X[k + 1])) > max_norm:
                status, last = "diverged", k
                message = f"|x| exceeded {max_norm:g} or became non-finite at t = {t[k + 1]:.6g}"
                break
    except (FloatingPointError, OverflowError) as exc:
        status, last = "diverged", k
        message = f"floating-point overflow at t = {t[k]:.6g} ({exc})"
    return DDESimulation(t[:last + 1].copy(), X[:last + 1].copy(), status, message)
