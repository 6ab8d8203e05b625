"""Integrators for one grid interval, shared by the simulator and the shooting baselines.

An interval ``[t₀, t₀ + h]`` is integrated in normalised time τ ∈ [0, 1] with the inputs
linear between their end values, exactly as the collocation grid treats them.  The step
function is ``step(x, data) → x(t₀ + h)`` with ``data = [p, u₀, u₁, r₀, r₁, t₀, h]``; CasADi
differentiates through it (forward and adjoint sensitivities for CVODES).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import casadi as ca

from ..base.errors import OptionsError

__all__ = ["Cvodes", "RungeKutta", "interval_data_size"]


def interval_data_size(num_params: int, num_known: int, num_free: int) -> int:
    """Length of the ``data`` argument of a step function."""
    return num_params + 2 * num_known + 2 * num_free + 2


def _interval_ode(rhs: ca.Function, n: int, num_params: int, s: int, q: int):
    # an SX right-hand side is inlined; any other (a compiled model's) is called from MX
    sym: Any = ca.SX if rhs.is_a("SXFunction") else ca.MX  # either class: the expressions below are one kind
    x = sym.sym("x", n)
    tau = sym.sym("tau")
    data = sym.sym("data", interval_data_size(num_params, s, q))
    p = data[:num_params]
    o = num_params
    u0, u1 = data[o : o + s], data[o + s : o + 2 * s]
    o += 2 * s
    r0, r1 = data[o : o + q], data[o + q : o + 2 * q]
    t0, h = data[-2], data[-1]
    ode = h * rhs(x, r0 + tau * (r1 - r0), u0 + tau * (u1 - u0), p, t0 + tau * h)
    return x, tau, data, ode


@dataclass(frozen=True)
class Cvodes:
    """CVODES (SUNDIALS): adaptive order and step, forward and adjoint sensitivities.

    Parameters
    ----------
    rtol, atol : float
        Tolerances.
    max_num_steps : int
        Steps allowed per interval before CVODES gives up.
    """

    rtol: float = 1e-8
    atol: float = 1e-8
    max_num_steps: int = 100000
    name = "cvodes"

    def __post_init__(self) -> None:
        if not (self.rtol > 0 and self.atol > 0):
            raise OptionsError(f"Cvodes(rtol={self.rtol}, atol={self.atol}): tolerances must be > 0")

    def step(self, rhs: ca.Function, n: int, num_params: int, s: int, q: int) -> ca.Function:
        """``step(x, data) → x_next`` over one interval."""
        x, tau, data, ode = _interval_ode(rhs, n, num_params, s, q)
        F = ca.integrator(
            "interval", "cvodes", {"x": x, "p": data, "t": tau, "ode": ode}, 0.0, 1.0,
            {"abstol": self.atol, "reltol": self.rtol, "max_num_steps": self.max_num_steps},
        )
        xs, ds = ca.MX.sym("x", n), ca.MX.sym("data", data.numel())
        return ca.Function("step", [xs, ds], [F(x0=xs, p=ds)["xf"]], ["x", "data"], ["x_next"])


@dataclass(frozen=True)
class RungeKutta:
    """Classical fixed-step RK4 with ``substeps`` steps per interval (fast, not adaptive)."""

    substeps: int = 1
    name = "rk4"

    def __post_init__(self) -> None:
        if int(self.substeps) != self.substeps or self.substeps < 1:
            raise OptionsError(f"RungeKutta(substeps={self.substeps!r}): must be an integer >= 1")

    def step(self, rhs: ca.Function, n: int, num_params: int, s: int, q: int) -> ca.Function:
        """``step(x, data) → x_next`` over one interval."""
        x, tau, data, ode = _interval_ode(rhs, n, num_params, s, q)
        f = ca.Function("f", [x, tau, data], [ode])
        dt = 1.0 / self.substeps
        xk = x
        for i in range(self.substeps):
            t = i * dt
            k1 = f(xk, t, data)
            k2 = f(xk + dt / 2 * k1, t + dt / 2, data)
            k3 = f(xk + dt / 2 * k2, t + dt / 2, data)
            k4 = f(xk + dt * k3, t + dt, data)
            xk = xk + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return ca.Function("step", [x, data], [xk], ["x", "data"], ["x_next"])
