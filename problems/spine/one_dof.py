"""Franklin (2006) §3.D: a 1-DoF inverted pendulum held by two reflexive muscles.

Geometry (thesis §3.D, Fig. 3.D.1; coordinates reconstructed from the unit force vectors of
eq. 3.D.ii.1): a uniform pendulum of length ``L`` and mass ``m`` pivots about the origin,
``θ`` from vertical, positive to the left; its tip is ``I_n(θ) = (−L sin θ, L cos θ)``.
Muscles M1 and M2 run from the tip to their origins ``Or₁ = (−L_m1 sin a₁, L − L_m1 cos a₁)``
and ``Or₂ = (L_m2 sin a₂, L − L_m2 cos a₂)`` where ``a₁ = 90°``, ``a₂ = 10°`` are the
angles between pendulum and muscle and ``L_m1 = 0.5``, ``L_m2 = 2`` the muscle lengths
at the upright equilibrium (also their rest lengths ``L_mo``).

Dynamics (eqs. 3.D.i.3–5, 3.D.iii.3)::

    θ̈ = 3/(m L²) · ( Σ_k f_k · {R × F̂_k}_3 + g m L/2 · sin θ ),   R = I_n(θ).

Muscle force (eqs. 3.A.iii.2–3 with the reflex of 3.B.iv.2).  With ``ε = (L_m − L_mo)/L_mo``,
``ε̇ = L_m'/L_mo`` and the delayed ``ε_d = ε(t − τ)``, ``ε̇_d = ε̇(t − τ)``:

* ``"separated"`` (default; eq. 3.B.iv.3, the form printed in §3.D.ii and used for the
  thesis' simulations): ``f = f₀α₀(1 + qε + bε̇) + f₀α₀(G_p ε_d + G_d ε̇_d)``;
* ``"product"`` (eq. 3.B.iv.2 before the higher-order terms are dropped):
  ``f = f₀α₀(1 + G_p ε_d + G_d ε̇_d)(1 + qε + bε̇)``.

Both have the same linearisation.  ``α₀,₂ = alpha2`` is given, and ``α₀,₁`` follows from
equilibrium at ``θ = 0`` (eq. 3.D.iii.1: ``α₁ = 0.1736 α₂``; here computed from the exact
geometry, ``α₁ = α₂ sin a₂ / sin a₁``).  Muscle-length rates are ``∂L_m/∂θ · θ'`` by
automatic differentiation.

Linearisation: ``J_i = ∂(θ', θ̈)/∂(θ, θ')`` and ``J_d = ∂(θ', θ̈)/∂(θ(t−τ), θ'(t−τ))`` at
the equilibrium, by CasADi AD (no finite differences).  The thesis moves the moment arms of
the delayed force to the delayed state before differentiating (eq. 3.D.iii.5); since the
delayed force vanishes at equilibrium, that choice does not change ``J_d`` here.  With the
printed parameters (g = 10, f₀ = 1, q = 20, b = 2, α₂ = 0.5, G_p = 15, G_d = 3) this gives
eq. 3.D.iv.2: ``J_i = [[0, 1], [4.88, −1.09]]``, ``J_d = [[0, 0], [−8.15, −1.63]]``.

Stability of the nonlinear DDE is judged as in §3.D.v: the normalised state-space distance
``D_ss`` (eq. 3.D.v.1) and the slope of its least-squares line (Table 3.D.1).
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache

import casadi as ca
import numpy as np

from colloc import CollocInputError, DDESimulation, DelayMargin, OptionsError, delay_margin, simulate_dde
from colloc_problems._data import data_path

__all__ = [
    "DATA",
    "FORCE_MODELS",
    "OneDof",
    "SlopeRow",
    "default_parameters",
    "dynamics",
    "example_data",
    "one_dof",
    "simulate",
    "slope_table",
    "state_space_distance",
    "state_space_slope",
]

#: Shipped data file (relative to the data folder).
DATA = ("spine", "one_dof_example.json")
#: Muscle-force variants accepted by ``force_model``.
FORCE_MODELS = ("separated", "product")

# JSON parameter name -> keyword of one_dof()
_JSON_NAMES = {
    "q": "q", "b": "b", "alpha2": "alpha2", "Gp": "gp", "Gd": "gd", "g": "g", "f0": "f0", "m": "m",
    "L_p": "length", "Lm1": "lm1", "Lm2": "lm2",
    "angle_pendulum_M1": "angle_m1_deg", "angle_pendulum_M2": "angle_m2_deg",
}


@lru_cache(maxsize=1)
def _load() -> dict:
    with open(data_path(*DATA), encoding="utf-8") as fh:
        return json.load(fh)


def example_data() -> dict:
    """The §3.D data set (``data/spine/one_dof_example.json``) as a fresh dictionary.

    Parameters
    ----------
    None

    Returns
    -------
    dict
        Parameters, equations, published results (J_i, J_d, crossing, margin, Table
        3.D.1) and the independent re-computation, each entry with ``value``/``source``.
    """
    return copy.deepcopy(_load())


def default_parameters() -> dict[str, float]:
    """The §3.D parameter values from the JSON, under the keyword names of :func:`one_dof`.

    Parameters
    ----------
    None

    Returns
    -------
    dict
        ``q, b, alpha2, gp, gd, g, f0, m, length, lm1, lm2, angle_m1_deg, angle_m2_deg``.
    """
    par = _load()["parameters"]
    return {kw: float(par[name]["value"]) for name, kw in _JSON_NAMES.items()}


def _check(p: dict[str, float]) -> None:
    for k, v in p.items():
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise CollocInputError(f"{k} must be a finite number, got {v!r}")
    if not 0.0 < p["alpha2"] <= 1.0:
        raise CollocInputError(f"alpha2 must be in (0, 1] (a muscle activation), got {p['alpha2']:g}")
    for k in ("q", "b", "gp", "gd", "g", "f0"):
        if p[k] < 0:
            raise CollocInputError(f"{k} must be >= 0, got {p[k]:g}")
    for k in ("m", "length", "lm1", "lm2", "f0"):
        if p[k] <= 0:
            raise CollocInputError(f"{k} must be > 0, got {p[k]:g}")
    for k in ("angle_m1_deg", "angle_m2_deg"):
        if not 0.0 < p[k] < 180.0:
            raise CollocInputError(f"{k} must be in (0, 180) degrees, got {p[k]:g}")


def _resolve(overrides: dict) -> dict[str, float]:
    p = default_parameters()
    unknown = sorted(set(overrides) - set(p))
    if unknown:
        raise CollocInputError(f"unknown parameter(s) {', '.join(unknown)}; known: {', '.join(p)}")
    p.update({k: float(v) if isinstance(v, (int, float, np.floating, np.integer)) else v
              for k, v in overrides.items() if v is not None})
    _check(p)
    return p


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


def simulate(
    system: OneDof,
    delay: float,
    *,
    t_end: float = 20.0,
    steps_per_delay: int = 20,
    theta0_deg: float = 10.0,
) -> DDESimulation:
    """Nonlinear DDE simulation of the 1-DoF model after a step perturbation (§3.D.v).

    Parameters
    ----------
    system : OneDof
        Result of :func:`one_dof` (its ``rhs`` is integrated).
    delay : float
        Reflex delay τ (s, > 0).
    t_end : float
        Simulated time (s).
    steps_per_delay : int
        RK4 steps per delay (step ``τ/steps_per_delay``).
    theta0_deg : float
        Initial angle (deg) held as the constant history for ``t ≤ 0`` with zero velocity
        (the thesis starts at 10°).

    Returns
    -------
    DDESimulation
        ``t``, ``x = [θ, θ']`` (rad, rad/s), ``status`` ``"ok"``/``"diverged"``.
    """
    if system.rhs is None:
        raise OptionsError("system has no rhs; build it with one_dof()")
    if not delay > 0:
        raise OptionsError(f"delay must be > 0, got {delay}")
    if steps_per_delay < 1:
        raise OptionsError(f"steps_per_delay must be >= 1, got {steps_per_delay}")
    F = system.rhs

    def rhs(t, x, x_delayed):
        return np.asarray(F(x, x_delayed)).ravel()

    x0 = np.array([math.radians(theta0_deg), 0.0])
    return simulate_dde(rhs, x0, float(delay), float(t_end), float(delay) / steps_per_delay)


def state_space_distance(x: np.ndarray) -> np.ndarray:
    """Normalised distance from equilibrium ``D_ss`` (Franklin 2006, eq. 3.D.v.1).

    Parameters
    ----------
    x : array_like, shape (m, 2)
        ``[θ, θ']`` samples (deviations from the equilibrium ``[0, 0]``).

    Returns
    -------
    numpy.ndarray, shape (m,)
        ``sqrt((θ/⟨|θ|⟩)² + (θ'/⟨|θ'|⟩)²)``.  Eq. 3.D.v.1 writes ``mean(θ)``; the text
        (§3.D.v, Ch. 4 B.v) says each signal is scaled by its mean *amplitude*, which is
        used here (the plain mean of an oscillation about 0 is ≈ 0).
    """
    x = np.asarray(x, dtype=float)
    scale = np.mean(np.abs(x), axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return np.sqrt(np.sum((x / scale) ** 2, axis=1))


def state_space_slope(t: np.ndarray, x: np.ndarray) -> float:
    """Slope of the least-squares line through ``D_ss(t)`` (Table 3.D.1's "state space slope").

    Parameters
    ----------
    t : array_like, shape (m,)
        Times (s).
    x : array_like, shape (m, 2)
        ``[θ, θ']`` samples.

    Returns
    -------
    float
        Negative: contracting toward equilibrium (stable); positive: expanding.
    """
    t = np.asarray(t, dtype=float)
    return float(np.polyfit(t, state_space_distance(x), 1)[0])


@dataclass(frozen=True)
class SlopeRow:
    """One row of Table 3.D.1: a simulation at a percentage of the delay margin.

    Attributes
    ----------
    pct_delay_margin : float
        Delay as a percentage of the delay margin.
    delay_s : float
        Simulated delay (s).
    state_space_slope : float
        Slope of ``D_ss`` (1/s); ``nan`` when the run diverged before two samples.
    status : str
        Status of the DDE simulation.
    final_time_s : float
        Last simulated time.
    """

    pct_delay_margin: float
    delay_s: float
    state_space_slope: float
    status: str
    final_time_s: float


def slope_table(
    system: OneDof | None = None,
    percentages=(50.0, 99.0, 101.0, 150.0),
    *,
    t_end: float = 20.0,
    steps_per_delay: int = 20,
    theta0_deg: float = 10.0,
) -> list[SlopeRow]:
    """Reproduce Table 3.D.1: the ``D_ss`` slope at percentages of the delay margin.

    Parameters
    ----------
    system : OneDof, optional
        Default: ``one_dof()`` (the thesis' parameters, exact geometry).
    percentages : sequence of float
        Delays as a percentage of ``system.delay_margin_s``.
    t_end, steps_per_delay, theta0_deg : float, int, float
        Passed to :func:`simulate`.

    Returns
    -------
    list of SlopeRow
    """
    system = system if system is not None else one_dof()
    if not system.delay_margin_s:
        raise OptionsError("the system has no finite positive delay margin")
    rows = []
    for pct in percentages:
        tau = system.delay_margin_s * pct / 100.0
        sim = simulate(system, tau, t_end=t_end, steps_per_delay=steps_per_delay, theta0_deg=theta0_deg)
        slope = state_space_slope(sim.t, sim.x) if sim.t.size > 2 else float("nan")
        rows.append(SlopeRow(float(pct), tau, slope, sim.status, float(sim.t[-1])))
    return rows
