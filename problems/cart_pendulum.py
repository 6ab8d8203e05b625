"""An n-link planar pendulum on a sliding cart (the larger benchmark system of Moore & van den
Bogert 2015, slides "Computational Speed": 10 links, 11 DoF, 22 states, 22 parameters).

Coordinates q = (x, θ₁ … θₙ): the cart's position along the horizontal rail (m) and the
absolute angle of each link from the upward vertical (rad, clockwise positive: joint point
Pₖ = Pₖ₋₁ + lₖ·(sin θₖ, cos θₖ), P₀ the cart). Speeds u = q̇. The cart (mass m₀) is pushed
by a known horizontal force F; gravity g acts downwards. Each link is either

* ``bodies="point"``: a massless rod with a point mass mₖ at its end (PyDy's n-link pendulum
  on a cart; the slides do not say, but SymPy's Kane equations of this system for n = 10
  have 12,784 operations, the slides' "12800 mathematical operations"), or
* ``bodies="rod"``: a uniform slender rod of mass mₖ (centre at half length, moment of
  inertia mₖlₖ²/12 about it).

The 2n + 2 parameters g, m₀ … mₙ, l₁ … lₙ (names ``g``, ``m_0 … m_n``, ``l_0 … l_{n-1}``;
``l_i`` is link i + 1) are 22 for n = 10.

Equations of motion (Lagrange, derived here). With aₖⱼ the distance along link j from its
joint to body k's mass point (lⱼ for j < k, c·lⱼ for j = k with c = 1 for point masses and
½ for rods, 0 for j > k), Tⱼ = Σ_{k≥j} mₖ the mass carried from link j outwards, and

    sᵢ = Σₖ mₖ aₖᵢ = lᵢ (Tᵢ₊₁ + c mᵢ),
    Sᵢⱼ = Σₖ mₖ aₖᵢ aₖⱼ + δᵢⱼ Iᵢ = lᵢ lⱼ (T_{max(i,j)+1} + c m_{max(i,j)})        (i ≠ j)
        Sᵢᵢ = lᵢ² (Tᵢ₊₁ + (c² + κ) mᵢ),  κ = 1/12 for rods, 0 for point masses,

the implicit form 0 = M(q) q̈ + h(q, q̇) − Q is

    x row:  (m₀ + T₁) ẍ + Σᵢ sᵢ (cos θᵢ θ̈ᵢ − sin θᵢ θ̇ᵢ²) − F
    θᵢ row: sᵢ cos θᵢ ẍ + Σⱼ Sᵢⱼ (cos(θᵢ − θⱼ) θ̈ⱼ + sin(θᵢ − θⱼ) θ̇ⱼ²) − g sᵢ sin θᵢ

(``form="lagrange"`` of :func:`equations`; the default ``form="recursive"`` computes the
same rows in O(n) operations, see :func:`_recursive`). tests/problems/test_cart_pendulum.py
checks both against SymPy's Kane's method and by energy conservation. The model is in the
implicit form the slides use for opty; the mass matrix is never inverted.
"""

from __future__ import annotations

from collections.abc import Sequence

import casadi as ca
import numpy as np

import colloc as co

__all__ = ["BODIES", "FORMS", "true_parameters", "model", "equations", "energy", "simulate_trial", "problem"]

#: Link models: ``"point"`` (massless rod, end mass) or ``"rod"`` (uniform slender rod).
BODIES = ("point", "rod")
#: Ways of computing the residual (the same equations): O(n) recursive sums or O(n²) Lagrange.
FORMS = ("recursive", "lagrange")


def _check(n: int, bodies: str) -> None:
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"cart_pendulum: the number of links must be an integer >= 1, got {n!r}")
    if bodies not in BODIES:
        raise ValueError(f"cart_pendulum: bodies must be one of {BODIES}, got {bodies!r}")


def true_parameters(n: int = 10) -> dict[str, float]:
    """Parameters of the synthetic cases: g = 9.81 m/s², a 1 kg cart, links of 0.5 kg and
    1/n m (a 1 m chain whatever n is)."""
    _check(n, "point")
    values = {"g": 9.81, "m_0": 1.0}
    values.update({f"m_{k}": 0.5 for k in range(1, n + 1)})
    values.update({f"l_{i}": 1.0 / n for i in range(n)})
    return values


def equations(q, u, qdd, g, m, l, force, bodies: str = "point", form: str = "recursive"):
    """Residual M(q)·q̈ + h(q, q̇) − Q of the n-link cart pendulum (length n + 1).

    Works on CasADi symbols and on numbers: ``q``, ``u``, ``qdd`` and ``m`` have n + 1
    elements (cart first), ``l`` has n; ``g`` and ``force`` are scalars.  ``form`` chooses
    how the same residual is computed: ``"recursive"`` (O(n) operations: see
    :func:`_recursive`) or ``"lagrange"`` (O(n²): the mass-matrix sums of the module text).
    """
    n = len(l)
    _check(n, bodies)
    if form not in FORMS:
        raise ValueError(f"cart_pendulum: form must be one of {FORMS}, got {form!r}")
    c = 1.0 if bodies == "point" else 0.5
    kappa = 0.0 if bodies == "point" else 1.0 / 12.0
    theta, omega, alpha = [q[i + 1] for i in range(n)], [u[i + 1] for i in range(n)], [qdd[i + 1] for i in range(n)]
    st, ct = [ca.sin(t) for t in theta], [ca.cos(t) for t in theta]
    w2 = [w * w for w in omega]
    if form == "recursive":
        return _recursive(qdd[0], st, ct, w2, alpha, g, m, l, force, c, kappa)
    link_mass = [m[k + 1] for k in range(n)]
    tail = [0.0] * (n + 1)                       # tail[i] = Σ_{k≥i} m of links i … n−1
    for i in range(n - 1, -1, -1):
        tail[i] = tail[i + 1] + link_mass[i]
    s = [l[i] * (tail[i + 1] + c * link_mass[i]) for i in range(n)]
    rows = [(m[0] + tail[0]) * qdd[0] + sum(s[i] * (ct[i] * alpha[i] - st[i] * w2[i]) for i in range(n)) - force]
    # cos and sin of θᵢ − θⱼ from those of the angles (no new transcendental calls)
    for i in range(n):
        acc = s[i] * ct[i] * qdd[0] - g * s[i] * st[i]
        for j in range(n):
            if i == j:
                acc = acc + l[i] * l[i] * (tail[i + 1] + (c * c + kappa) * link_mass[i]) * alpha[i]
                continue
            k = max(i, j)
            S = l[i] * l[j] * (tail[k + 1] + c * link_mass[k])
            cij = ct[i] * ct[j] + st[i] * st[j]
            sij = st[i] * ct[j] - ct[i] * st[j]
            acc = acc + S * (cij * alpha[j] + sij * w2[j])
        rows.append(acc)
    return rows


def _recursive(xdd, st, ct, w2, alpha, g, m, l, force, c, kappa):
    """The residual in O(n): Kane's equations Σₖ mₖ (∂pₖ/∂qᵢ)·(p̈ₖ + g ŷ) + Iᵢ θ̈ᵢ δ − Qᵢ with
    the mass points' accelerations p̈ₖ accumulated from the cart outwards and the forces
    mₖ (p̈ₖ + g ŷ) summed from the tip inwards.

    With eⱼ = (sin θⱼ, cos θⱼ) along link j, ë = θ̈ (cos θ, −sin θ) − θ̇² (sin θ, cos θ); the
    joint accelerations are Aₖ = Aₖ₋₁ + lₖ ëₖ from A₀ = (ẍ, 0), a point mass sits at Aₖ and a
    rod's centre at (Aₖ₋₁ + Aₖ)/2; ∂pₖ/∂θᵢ = lᵢ (cos θᵢ, −sin θᵢ) for bodies beyond link i
    and c·lᵢ (cos θᵢ, −sin θᵢ) for link i's own.
    """
    n = len(l)
    ax, ay = xdd, 0.0
    fx, fy = [], []
    for k in range(n):
        ex = alpha[k] * ct[k] - w2[k] * st[k]
        ey = -alpha[k] * st[k] - w2[k] * ct[k]
        bx, by = ax + c * l[k] * ex, ay + c * l[k] * ey     # body k's mass point
        fx.append(m[k + 1] * bx)
        fy.append(m[k + 1] * (by + g))
        ax, ay = ax + l[k] * ex, ay + l[k] * ey
    rows = [None] * (n + 1)
    outer_x, outer_y = 0.0, 0.0                            # Σ of the bodies beyond link i
    for i in range(n - 1, -1, -1):
        row = l[i] * (ct[i] * (outer_x + c * fx[i]) - st[i] * (outer_y + c * fy[i]))
        if kappa:
            row = row + kappa * m[i + 1] * l[i] * l[i] * alpha[i]
        rows[i + 1] = row
        outer_x, outer_y = outer_x + fx[i], outer_y + fy[i]
    rows[0] = m[0] * xdd + outer_x - force
    return rows


def energy(states: np.ndarray, params: dict[str, float], n: int, bodies: str = "point") -> np.ndarray:
    """Kinetic plus potential energy (J) of rows of states (q, u), from the mass points'
    positions and velocities (numpy; no use of the mass matrix)."""
    _check(n, bodies)
    X = np.atleast_2d(np.asarray(states, float))
    x, theta, v, omega = X[:, 0], X[:, 1:n + 1], X[:, n + 1], X[:, n + 2:]
    g = params["g"]
    lengths = np.array([params[f"l_{i}"] for i in range(n)])
    masses = np.array([params[f"m_{k}"] for k in range(1, n + 1)])
    c = 1.0 if bodies == "point" else 0.5
    E = 0.5 * params["m_0"] * v**2
    joint_x, joint_y = x.copy(), np.zeros_like(x)
    joint_vx, joint_vy = v.copy(), np.zeros_like(x)
    for k in range(n):
        ex, ey = np.sin(theta[:, k]), np.cos(theta[:, k])
        dvx, dvy = omega[:, k] * ey, -omega[:, k] * ex
        px, py = joint_x + c * lengths[k] * ex, joint_y + c * lengths[k] * ey
        vx, vy = joint_vx + c * lengths[k] * dvx, joint_vy + c * lengths[k] * dvy
        E = E + 0.5 * masses[k] * (vx**2 + vy**2) + masses[k] * g * py
        if bodies == "rod":
            E = E + 0.5 * masses[k] * lengths[k] ** 2 / 12.0 * omega[:, k] ** 2
        joint_x, joint_y = joint_x + lengths[k] * ex, joint_y + lengths[k] * ey
        joint_vx, joint_vy = joint_vx + lengths[k] * dvx, joint_vy + lengths[k] * dvy
    return E


def model(n: int = 10, bodies: str = "point", *, form="recursive", compiled: bool | None = None) -> co.Model:
    """The n-link cart pendulum in implicit form, every parameter unknown (2n + 2 of them).

    States ``q_0`` (cart position, m), ``q_1 … q_n`` (link angles, rad) and ``u_0 … u_n``
    (their rates); known input ``F`` (N, on the cart); parameters ``g``, ``m_0 … m_n``,
    ``l_0 … l_{n-1}``, all bounded positive. ``form`` is :func:`equations`' (the same
    equations either way), or a function ``(q, u, qdd, g, m, l, force) → rows`` with the
    signature of :func:`equations` that computes the n + 1 residual rows otherwise (for
    example from another derivation); ``compiled`` is :class:`colloc.Model`'s option.
    """
    _check(n, bodies)
    mdl = co.Model(f"cart_pendulum_{n}_{bodies}", compiled=compiled)
    q = mdl.state("q", n + 1, unit=["m"] + ["rad"] * n)
    u = mdl.state("u", n + 1, unit=["m/s"] + ["rad/s"] * n, scale=2.0)
    force = mdl.known_input("F", unit="N", scale=10.0)
    g = mdl.parameter("g", unit="m/s^2", bounds=(0.1, 100.0), guess=9.81, scale=10.0)
    m = mdl.parameter("m", n + 1, unit="kg", bounds=(1e-3, 100.0), guess=1.0)
    # one scalar per link: the names are l_0 … l_{n-1} for every n (a vector of one would be "l")
    l = [mdl.parameter(f"l_{i}", unit="m", bounds=(1e-3, 10.0), guess=1.0 / n, scale=1.0 / n) for i in range(n)]
    mdl.set_der(q, u)
    qdd = mdl.der(u)
    args = ([q[i] for i in range(n + 1)], [u[i] for i in range(n + 1)], [qdd[i] for i in range(n + 1)], g,
            [m[i] for i in range(n + 1)], l, force)
    rows = form(*args) if callable(form) else equations(*args, bodies, form)
    if len(rows) != n + 1:
        raise ValueError(f"cart_pendulum: the residual has {len(rows)} rows, not n + 1 = {n + 1}")
    mdl.add_residual(ca.vertcat(*rows), name="eom")
    return mdl


def simulate_trial(
    n: int = 10,
    bodies: str = "point",
    *,
    duration: float = 100.0,
    rate: float = 100.0,
    num_samples: int | None = None,
    amplitude: float = 2.0,
    noise_std: float = 0.0,
    seed: int = 0,
    parameters: dict[str, float] | None = None,
    compiled: bool | None = None,
    name: str = "cart_pendulum",
) -> co.Trial:
    """A synthetic trial: the chain hanging down (θ = π plus seeded offsets of ±0.1 rad),
    the cart pushed by F(t) = amplitude·Σ sin(2π fᵢ t + φᵢ) (three seeded frequencies in
    0.1–1 Hz), simulated by :func:`colloc.simulate` (rtol = atol = 1e-10); every state and F
    are columns, the states with seeded Gaussian noise ``noise_std``.

    ``num_samples`` overrides ``duration`` (samples at ``rate``, the first at t = 0).
    ``compiled`` simulates the compiled model (100 s of 10 links: ~20 s instead of ~80 s).
    """
    _check(n, bodies)
    params = dict(true_parameters(n) if parameters is None else parameters)
    count = int(round(duration * rate)) + 1 if num_samples is None else int(num_samples)
    time = np.arange(count) / rate
    rng = np.random.default_rng(seed)
    freqs, phases = rng.uniform(0.1, 1.0, 3), rng.uniform(0.0, 2 * np.pi, 3)
    force = amplitude * np.sin(2 * np.pi * freqs[None, :] * time[:, None] + phases[None, :]).sum(axis=1)
    x0 = np.zeros(2 * (n + 1))
    x0[1 : n + 1] = np.pi + rng.uniform(-0.1, 0.1, n)
    mdl = model(n, bodies, compiled=compiled)
    sim = co.simulate(mdl, x0, params, time, known_inputs=force[:, None], rtol=1e-10, atol=1e-10)
    if not sim.success:
        raise RuntimeError(f"cart_pendulum simulation failed: {sim.message}")
    names = mdl.element_names("state")
    signals = {s: sim.states[:, j] + noise_std * rng.standard_normal(count) for j, s in enumerate(names)}
    signals["F"] = force
    return co.Trial(time, signals, name=name)


def problem(trials: co.Trial | Sequence[co.Trial], n: int = 10, bodies: str = "point", *,
            noise_std: float = 0.01, form="recursive", compiled: bool | None = None) -> co.Problem:
    """Every state fitted with weight 1/σ², F a known (exact) input, all 2n + 2 parameters
    unknown; ``form`` and ``compiled`` as in :func:`model`.

    Tested (two links, 10 s at 100 Hz, σ = 0.01): every parameter within 0.5 % from guesses
    25 % off.  From guesses 2× off IPOPT had not converged after 30 iterations.
    """
    w = 1.0 / noise_std**2
    mdl = model(n, bodies, form=form, compiled=compiled)
    return co.Problem(mdl, trials, fit={s: w for s in mdl.element_names("state")}, name=mdl.name)
