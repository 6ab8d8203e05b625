"""Franklin (2006) §3.D: the 1-DoF reflexive pendulum's dynamics, linearisation and delay margin.

The equations are those of :mod:`colloc_problems.spine.one_dof` (see its docstring).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from colloc import DelayMargin, OptionsError, delay_margin
from colloc_problems.spine.one_dof_data import _resolve

__all__ = ["FORCE_MODELS", "OneDof", "dynamics", "one_dof"]

#: Muscle-force variants accepted by ``force_model``.
FORCE_MODELS = ("separated", "product")


def dynamics(force_model: str = "separated", **params) -> tuple[ca.Function, float]:
    """CasADi right-hand side ``ẋ = F(x, x_d)`` of the 1-DoF model and the activation α₁.

    Parameters
    ----------
    force_model : {"separated", "product"}
        Muscle-force variant (see the module docstring).
    **params : float
        Overrides of :func:`default_parameters` (``q, b, alpha2, gp, gd, g, f0, m, length,
        lm1, lm2, angle_m1_deg, angle_m2_deg``).

    Returns
    -------
    F : casadi.Function
        ``F(x, x_d) -> xdot`` with ``x = [θ, θ']`` and ``x_d = x(t − τ)`` (rad, rad/s).
    alpha1 : float
        Steady activation of M1 that puts ``θ = 0`` in equilibrium.
    """
    if force_model not in FORCE_MODELS:
        raise OptionsError(f"force_model must be one of {', '.join(FORCE_MODELS)}, got {force_model!r}")
    p = _resolve(params)
    L, m, g, f0 = p["length"], p["m"], p["g"], p["f0"]
    a1, a2 = math.radians(p["angle_m1_deg"]), math.radians(p["angle_m2_deg"])
    origins = [ca.DM([-p["lm1"] * math.sin(a1), L - p["lm1"] * math.cos(a1)]),
               ca.DM([p["lm2"] * math.sin(a2), L - p["lm2"] * math.cos(a2)])]

    x = ca.SX.sym("x", 2)
    xd = ca.SX.sym("x_d", 2)

    def tip(angle):
        return ca.vertcat(-L * ca.sin(angle), L * ca.cos(angle))

    def muscle_length(origin, angle):
        d = origin - tip(angle)
        return ca.sqrt(ca.dot(d, d))

    def moment_arm(origin, angle):  # {R × F̂}_3 with R = I_n − Or, F̂ = (Or_k − I_n)/|Or_k − I_n|
        r = tip(angle)
        u = (origin - r) / muscle_length(origin, angle)
        return r[0] * u[1] - r[1] * u[0]

    theta0 = ca.SX.sym("theta0")
    at_rest = ca.Function("at_rest", [theta0],
                          [ca.vertcat(*[muscle_length(o, theta0) for o in origins],
                                      *[moment_arm(o, theta0) for o in origins])])
    rest = np.asarray(at_rest(0.0)).ravel()
    rest_len, arm0 = rest[:2], rest[2:]
    alpha = [-p["alpha2"] * arm0[1] / arm0[0], p["alpha2"]]  # Q_v(θ = 0) = 0 (gravity torque is 0)

    torque = 0
    for k, origin in enumerate(origins):
        lk, lkd = muscle_length(origin, x[0]), muscle_length(origin, xd[0])
        strain = (lk - rest_len[k]) / rest_len[k]
        rate = ca.jacobian(lk, x[0]) * x[1] / rest_len[k]
        strain_d = (lkd - rest_len[k]) / rest_len[k]
        rate_d = ca.jacobian(lkd, xd[0]) * xd[1] / rest_len[k]
        intrinsic = 1 + p["q"] * strain + p["b"] * rate
        reflex = p["gp"] * strain_d + p["gd"] * rate_d
        if force_model == "separated":
            force = f0 * alpha[k] * intrinsic + f0 * alpha[k] * reflex
        else:
            force = f0 * alpha[k] * (1 + reflex) * intrinsic
        torque = torque + force * moment_arm(origin, x[0])
    inertia = m * L**2 / 3  # M_m, eq. 3.D.i.5
    acc = (torque + g * m * L / 2 * ca.sin(x[0])) / inertia
    F = ca.Function("one_dof", [x, xd], [ca.vertcat(x[1], acc)], ["x", "x_d"], ["xdot"])
    return F, float(alpha[0])


@dataclass(frozen=True)
class OneDof:
    """Linearisation and delay margin of the §3.D system (result of :func:`one_dof`).

    Attributes
    ----------
    parameters : dict
        All parameter values used.
    alpha1 : float
        Equilibrium activation of M1.
    J_i, J_d : numpy.ndarray
        Instantaneous and delayed Jacobians (2 × 2).
    margin : DelayMargin
        Full delay-margin result (crossings, diagnostics).
    force_model : str
        Muscle-force variant of :attr:`rhs`.
    rhs : casadi.Function
        Nonlinear right-hand side ``F(x, x_d)``.
    """

    parameters: dict
    alpha1: float
    J_i: np.ndarray
    J_d: np.ndarray
    margin: DelayMargin
    force_model: str = "separated"
    rhs: ca.Function | None = field(default=None, repr=False, compare=False)

    @property
    def delay_margin_s(self) -> float | None:
        """Delay margin (s); ``None`` when stable for every delay, 0 when unstable at τ = 0."""
        return self.margin.delay_margin_s

    @property
    def crossing_frequency_rad_s(self) -> float | None:
        """Frequency of the crossing that sets the margin (rad/s)."""
        return self.margin.crossing_frequency_rad_s

    @property
    def stable_at_zero_delay(self) -> bool:
        """Whether ``J_i + J_d`` is Hurwitz."""
        return self.margin.stable_at_zero_delay

    def to_dict(self) -> dict:
        """JSON-ready dictionary (matrices as nested lists).

        Parameters
        ----------
        None
        """
        return {
            "J_i": self.J_i.tolist(),
            "J_d": self.J_d.tolist(),
            "delay_margin_s": self.delay_margin_s,
            "crossing_frequency_rad_s": self.crossing_frequency_rad_s,
            "stable_at_zero_delay": self.stable_at_zero_delay,
            "max_real_eigenvalue_zero_delay": self.margin.max_real_eigenvalue_zero_delay,
            "alpha1": self.alpha1,
            "parameters": dict(self.parameters),
            "force_model": self.force_model,
            "method": self.margin.method,
        }


def one_dof(
    q: float = 20.0,
    b: float = 2.0,
    alpha2: float = 0.5,
    gp: float = 15.0,
    gd: float = 3.0,
    *,
    g: float | None = None,
    f0: float | None = None,
    m: float | None = None,
    length: float | None = None,
    lm1: float | None = None,
    lm2: float | None = None,
    angle_m1_deg: float | None = None,
    angle_m2_deg: float | None = None,
    force_model: str = "separated",
    method: str = "sweep",
) -> OneDof:
    """J_i, J_d (CasADi AD) and the delay margin of the §3.D 1-DoF system.

    Parameters
    ----------
    q : float
        Intrinsic stiffness gain (eq. 3.A.iii.2, dimensionless).
    b : float
        Intrinsic damping gain (s).
    alpha2 : float
        Steady activation of M2, in (0, 1]; M1's follows from equilibrium.
    gp : float
        Proportional (length) reflex gain G_p (dimensionless).
    gd : float
        Derivative (velocity) reflex gain G_d (s).
    g, f0, m, length, lm1, lm2, angle_m1_deg, angle_m2_deg : float, optional
        Gravity (10), maximum muscle force (1), mass (1), pendulum length (1), muscle
        lengths at equilibrium (0.5, 2) and pendulum–muscle angles (90°, 10°); ``None``
        takes the value from ``data/spine/one_dof_example.json``.
    force_model : {"separated", "product"}
        Muscle-force variant of the nonlinear model (same linearisation).
    method : {"sweep", "exact"}
        Delay-margin method (see :func:`colloc.delay_margin.delay_margin`).

    Returns
    -------
    OneDof
        With ``J_i``, ``J_d``, ``delay_margin_s``, ``crossing_frequency_rad_s``.
    """
    params = {"q": q, "b": b, "alpha2": alpha2, "gp": gp, "gd": gd, "g": g, "f0": f0, "m": m,
              "length": length, "lm1": lm1, "lm2": lm2, "angle_m1_deg": angle_m1_deg,
              "angle_m2_deg": angle_m2_deg}
    F, alpha1 = dynamics(force_model, **params)
    resolved = _resolve(params)
    x, xd = ca.MX.sym("x", 2), ca.MX.sym("x_d", 2)
    f = F(x, xd)
    jac = ca.Function("one_dof_linearization", [x, xd], [f, ca.jacobian(f, x), ca.jacobian(f, xd)])
    f0_, Ji, Jd = (np.asarray(v, dtype=float) for v in jac(np.zeros(2), np.zeros(2)))
    if np.max(np.abs(f0_)) > 1e-9:  # pragma: no cover - guaranteed by the choice of alpha1
        raise RuntimeError(f"theta = 0 is not an equilibrium (xdot = {f0_.ravel()})")
    margin = delay_margin(Ji, Jd, method=method)
    return OneDof(resolved, alpha1, Ji, Jd, margin, force_model, F)
