"""The spatial chain against independent derivations (Bourgeois & Langlois 2015, §5).

* all joints locked: one rigid body on the moving deck, reactions by Newton–Euler written
  here with numpy and sympy time derivatives (the paper's GRM3D comparison, Figs 3–4);
* the chain's Kane equations against ``sympy.physics.mechanics.KanesMethod`` (the paper's
  SIM3D comparison, §5.5), pointwise at random states and ship motions;
* the ankle-only chain against a single spatial inverted pendulum with PD roll/pitch control
  integrated by scipy (PSM3D, Figs 5–6);
* the pitch-only chain under deck surge against the hand-linearised cart pendulum (CARTIP,
  Eq. 22, Fig. 7).
Agreement is reported as NRMSE, Eq. 21.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from colloc.multibody.chain import Body, Chain, bryant, nrmse

#: The contract's segment data (docs/contracts.md §2 ship-stance; Winter 2009 Table 4.1).
LINKS = [("ankle", 6.975, 0.4305, 0.2441, (0.174, 0.118, 0.065)),
         ("knee", 15.000, 0.4288, 0.2431, (0.409, 0.288, 0.159)),
         ("hip", 44.775, 0.5040, 0.2520, (1.405, 1.097, 0.606)),
         ("neck", 6.075, 0.0, 0.2065, (0.063, 0.063, 0.030))]


def human(n_links=4) -> Chain:
    bodies, parent, length = [], None, 0.0
    for name, m, ln, c, inertia in LINKS[:n_links]:
        bodies.append(Body(name, m, (0, 0, c), inertia, parent, (0, 0, length)))
        parent, length = name, ln
    return Chain(tuple(bodies))


# --- ship motion: closed-form sinusoids, derivatives exact ---------------------------------
t_s = sp.symbols("t")
SHIP_ANGLES = [0.08 * sp.sin(0.9 * t_s + 0.3), 0.05 * sp.sin(1.3 * t_s + 1.0), 0.03 * sp.sin(0.4 * t_s)]
#: the stance point's position in N (m), so that its acceleration is exact
SHIP_POS = [0.6 * sp.sin(0.7 * t_s), 0.4 * sp.sin(1.1 * t_s + 0.5), 0.9 * sp.sin(0.8 * t_s + 2.0)]


def _rx(a):
    return sp.Matrix([[1, 0, 0], [0, sp.cos(a), -sp.sin(a)], [0, sp.sin(a), sp.cos(a)]])


def _ry(a):
    return sp.Matrix([[sp.cos(a), 0, sp.sin(a)], [0, 1, 0], [-sp.sin(a), 0, sp.cos(a)]])


def _rz(a):
    return sp.Matrix([[sp.cos(a), -sp.sin(a), 0], [sp.sin(a), sp.cos(a), 0], [0, 0, 1]])


R_NS_sym = _rx(SHIP_ANGLES[0]) * _ry(SHIP_ANGLES[1]) * _rz(SHIP_ANGLES[2])
_ship_fn = sp.lambdify(t_s, [sp.Matrix(SHIP_ANGLES), sp.Matrix(SHIP_ANGLES).diff(t_s),
                             sp.Matrix(SHIP_ANGLES).diff(t_s, 2),
                             R_NS_sym.T * sp.Matrix(SHIP_POS).diff(t_s, 2)], "numpy")
# body-frame angular velocity and acceleration of the ship: Ω̃ = Rᵀ·Ṙ (independent of the chain)
_W = R_NS_sym.T * R_NS_sym.diff(t_s)
_omega_S = sp.Matrix([_W[2, 1], _W[0, 2], _W[1, 0]])
_rigid_fn = sp.lambdify(t_s, [_omega_S, _omega_S.diff(t_s)], "numpy")


def ship(t):
    return [np.asarray(v, float).ravel() for v in _ship_fn(t)]


def test_bryant_matches_the_contract_sequence():
    a = [0.3, -0.2, 0.5]
    R = np.asarray(bryant(a))
    Rx = np.array([[1, 0, 0], [0, np.cos(.3), -np.sin(.3)], [0, np.sin(.3), np.cos(.3)]])
    Ry = np.array([[np.cos(-.2), 0, np.sin(-.2)], [0, 1, 0], [-np.sin(-.2), 0, np.cos(-.2)]])
    Rz = np.array([[np.cos(.5), -np.sin(.5), 0], [np.sin(.5), np.cos(.5), 0], [0, 0, 1]])
    assert np.allclose(R, Rx @ Ry @ Rz, atol=1e-15)


def test_nrmse_is_eq21():
    assert nrmse([1.0, 2.0, 3.0], [1.0, 2.0, 4.0]) == pytest.approx(np.sqrt(1 / 3) / 3 * 100)


def test_locked_chain_is_one_rigid_body_on_the_deck():
    """GRM3D (paper Figs 3–4): every joint locked → deck force and moment of one rigid body."""
    chain = human().lock(["ankle", "knee", "hip", "neck"])
    assert chain.coordinates == ()
    # composite body by hand (upright, S frame): mass, CoM height, inertia about the CoM
    masses = np.array([m for _, m, _, _, _ in LINKS])
    heights = np.cumsum([0.0] + [ln for _, _, ln, _, _ in LINKS[:-1]]) + np.array([c for *_, c, _ in LINKS])
    m = masses.sum()
    r = np.array([0.0, 0.0, masses @ heights / m])
    inertia = sum(np.diag(I) + mi * np.diag([(h - r[2]) ** 2, (h - r[2]) ** 2, 0.0])
                  for (_, mi, _, _, I), h in zip(LINKS, heights))
    g_N = np.array([0.0, 0.0, -9.81])
    times = np.linspace(0.0, 20.0, 201)
    ours, ref = [], []
    for t in times:
        ang, rate, acc, a_S = ship(t)
        eq = chain.equations([], [], [], ang, rate, acc, a_S)
        ours.append(np.concatenate([np.asarray(eq.deck_force).ravel(), np.asarray(eq.deck_moment).ravel()]))
        w, al = (np.asarray(v, float).ravel() for v in _rigid_fn(t))
        R = np.asarray(R_NS_sym.subs(t_s, t).evalf(), float)
        a_G = a_S + np.cross(al, r) + np.cross(w, np.cross(w, r))      # S components
        F = m * (a_G - R.T @ g_N)
        Mo = np.cross(r, F) + inertia @ al + np.cross(w, inertia @ w)
        ref.append(np.concatenate([F, Mo]))
    ours, ref = np.array(ours), np.array(ref)
    errors = [nrmse(ours[:, i], ref[:, i]) for i in range(6)]
    assert max(errors) <= 0.01, errors


def sympy_kanes(n_links):
    """The chain's equations by sympy.physics.mechanics.KanesMethod, written independently
    (also the equations of ``benchmarks/ship_stance_vs_opty.py``).

    Returns a dict: ``q``, ``u`` (the Bryant angles and their rates, dynamicsymbols),
    ``ship`` (roll, pitch, yaw: dynamicsymbols whose time derivatives appear), ``vel`` (the
    stance point's velocity in N components), ``mass_matrix`` and ``forcing`` (Kane's
    M·u̇ = forcing, gravity included, no joint torques).
    """
    import sympy.physics.mechanics as me

    t = me.dynamicsymbols._t
    ship_q = me.dynamicsymbols("phi theta psi")
    vel = me.dynamicsymbols("vx vy vz")        # stance-point velocity in N components
    N = me.ReferenceFrame("N")
    S = N.orientnew("S", "Body", ship_q, "123")
    O = me.Point("O")
    O.set_vel(N, vel[0] * N.x + vel[1] * N.y + vel[2] * N.z)
    qs, us, bodies, loads = [], [], [], []
    parent_frame, joint, length = S, O, 0.0
    for k, (name, m, ln, c, inertia) in enumerate(LINKS[:n_links]):
        q = me.dynamicsymbols(f"{name}_x {name}_y {name}_z")
        u = me.dynamicsymbols(f"u{name}_x u{name}_y u{name}_z")
        qs += q
        us += u
        L = parent_frame.orientnew(f"L{k}", "Body", q, "123")
        L.set_ang_vel(parent_frame, (L.ang_vel_in(parent_frame)).subs(
            {qi.diff(t): ui for qi, ui in zip(q, u)}))
        J = joint.locatenew(f"J{k}", length * parent_frame.z)
        G = J.locatenew(f"G{k}", c * L.z)
        J.set_vel(N, joint.vel(N) + (length * parent_frame.z).dt(N))
        G.set_vel(N, J.vel(N) + (c * L.z).dt(N))
        body = me.RigidBody(name, G, L, m, (me.inertia(L, *inertia), G))
        bodies.append(body)
        loads.append((G, -m * 9.81 * N.z))
        parent_frame, joint, length = L, J, ln
    kd = [qi.diff(t) - ui for qi, ui in zip(qs, us)]
    km = me.KanesMethod(N, q_ind=qs, u_ind=us, kd_eqs=kd)
    km.kanes_equations(bodies, loads)
    return {"q": qs, "u": us, "ship": ship_q, "vel": vel, "mass_matrix": km.mass_matrix,
            "forcing": km.forcing}


def _sympy_chain(n_links):
    """:func:`sympy_kanes` as a numpy function of plain symbols."""
    import sympy.physics.mechanics as me

    t = me.dynamicsymbols._t
    kane = sympy_kanes(n_links)
    qs, us, ship_q, vel = kane["q"], kane["u"], kane["ship"], kane["vel"]
    ship_d = [s.diff(t) for s in ship_q]
    ship_dd = [s.diff(t, 2) for s in ship_q]
    acc = [v.diff(t) for v in vel]
    # replace derivatives by plain symbols before lambdify
    sym = {}
    for i, f in enumerate(ship_dd + ship_d + acc + [u.diff(t) for u in us] + us + qs + ship_q + vel):
        sym[f] = sp.Symbol(f"s{i}")
    Mm = kane["mass_matrix"].subs(sym)
    forcing = kane["forcing"].subs(sym)
    args = [sym[f] for f in qs + us + ship_q + ship_d + ship_dd + acc + vel]
    return sp.lambdify(args, [Mm, forcing], "numpy", cse=True)


@pytest.mark.parametrize("n_links", [1, pytest.param(2, marks=pytest.mark.slow),
                                     pytest.param(4, marks=pytest.mark.slow)])
def test_chain_against_sympy_kanes_method(n_links):
    """SIM3D-like check (§5.5): M(q) and h(q, q̇, ship) equal KanesMethod's to round-off."""
    chain = human(n_links)
    f = _sympy_chain(n_links)
    rng = np.random.default_rng(3)
    n = 3 * n_links
    for _ in range(5):
        q, u, ud = rng.normal(0, 0.3, n), rng.normal(0, 0.5, n), rng.normal(0, 1.0, n)
        ang, rate, acc = rng.normal(0, 0.1, 3), rng.normal(0, 0.2, 3), rng.normal(0, 0.5, 3)
        a_S = rng.normal(0, 1.0, 3)
        R = np.asarray(bryant(ang))
        a_N = R @ a_S
        M_ref, F_ref = (np.asarray(x, float) for x in f(*q, *u, *ang, *rate, *acc, *a_N, 0, 0, 0))
        eq = chain.equations(q, u, ud, ang, rate, acc, a_S)
        M = np.asarray(eq.mass_matrix)
        res = np.asarray(eq.residual).ravel()
        assert np.allclose(M, M_ref, rtol=1e-10, atol=1e-10)
        # Kane: M·u̇ = forcing  ⇔  our residual M·u̇ + h = M·u̇ − forcing
        assert np.allclose(res, M_ref @ ud - F_ref.ravel(), rtol=1e-9, atol=1e-9)


def _pendulum_rhs(m, r, I_G, gains):
    """A single spatial inverted pendulum on the deck (PSM3D-like, paper §5.3), written by
    hand: Euler's equation about the ankle in body components, Bryant X-Y-Z joint angles,
    joint torque T with Eᵀ·T = Q (Q the PD / spring-damper generalized forces)."""
    I_A = I_G + m * (r @ r * np.eye(3) - np.outer(r, r))
    kp, kd = gains

    def E_and_dE(q, qd):
        cy, sy, cz, sz = np.cos(q[1]), np.sin(q[1]), np.cos(q[2]), np.sin(q[2])
        E = np.array([[cy * cz, sz, 0.0], [-cy * sz, cz, 0.0], [sy, 0.0, 1.0]])
        dE = np.array([[-sy * cz * qd[1] - cy * sz * qd[2], cz * qd[2], 0.0],
                       [sy * sz * qd[1] - cy * cz * qd[2], -sz * qd[2], 0.0],
                       [cy * qd[1], 0.0, 0.0]])
        return E, dE

    def parts(t, x):
        q, qd = x[:3], x[3:]
        ang, rate, acc, a_S = ship(t)
        w_S, al_S = (np.asarray(v, float).ravel() for v in _rigid_fn(t))
        R_NS = np.asarray(bryant(ang))
        R_SB = np.asarray(bryant(q))
        E, dE = E_and_dE(q, qd)
        w_rel = E @ qd
        w = R_SB.T @ w_S + w_rel
        al0 = R_SB.T @ al_S - np.cross(w_rel, R_SB.T @ w_S) + dE @ qd  # α without the q̈ term
        a_A = R_SB.T @ a_S
        g_B = R_SB.T @ R_NS.T @ np.array([0.0, 0.0, -9.81])
        rest = I_A @ al0 + np.cross(w, I_A @ w) + m * np.cross(r, a_A - g_B)
        Q = -kp * q - kd * qd
        return E, rest, Q, w, al0, R_SB, a_A, g_B

    def rhs(t, x):
        E, rest, Q, *_ = parts(t, x)
        qdd = np.linalg.solve(E.T @ I_A @ E, Q - E.T @ rest)
        return np.concatenate([x[3:], qdd])

    def deck_force(t, x):
        E, rest, Q, w, al0, R_SB, a_A, g_B = parts(t, x)
        al = al0 + E @ rhs(t, x)[3:]
        a_G = a_A + np.cross(al, r) + np.cross(w, np.cross(w, r))
        return R_SB @ (m * (a_G - g_B))

    return rhs, deck_force


def test_ankle_only_chain_against_a_single_spatial_pendulum():
    """PSM3D (paper Figs 5–6): knee, hip and neck locked; PD roll/pitch control and a yaw
    spring-damper at the ankle; angles and deck force over 5 s, NRMSE ≤ 0.01 %."""
    chain = human().lock(["knee", "hip", "neck"])
    kp, kd = np.array([1400.0, 1500.0, 200.0]), np.array([300.0, 350.0, 20.0])
    masses = np.array([m for _, m, _, _, _ in LINKS])
    heights = np.cumsum([0.0] + [ln for _, _, ln, _, _ in LINKS[:-1]]) + np.array([c for *_, c, _ in LINKS])
    m = masses.sum()
    r = np.array([0.0, 0.0, masses @ heights / m])
    I_G = sum(np.diag(I) + mi * np.diag([(h - r[2]) ** 2, (h - r[2]) ** 2, 0.0])
              for (_, mi, _, _, I), h in zip(LINKS, heights))
    ref_rhs, ref_force = _pendulum_rhs(m, r, I_G, (kp, kd))
    f = chain.function()

    def chain_rhs(t, x):
        ang, rate, acc, a_S = ship(t)
        out = f(x[:3], x[3:], np.zeros(3), ang, rate, acc, a_S)
        M, h = np.asarray(out[1]), np.asarray(out[2]).ravel()
        return np.concatenate([x[3:], np.linalg.solve(M, -kp * x[:3] - kd * x[3:] - h)])

    times = np.linspace(0.0, 5.0, 501)
    x0 = np.array([0.02, -0.03, 0.01, 0.0, 0.0, 0.0])
    opts = dict(method="DOP853", rtol=1e-11, atol=1e-12, t_eval=times)
    ours = solve_ivp(chain_rhs, (0, 5), x0, **opts).y
    ref = solve_ivp(ref_rhs, (0, 5), x0, **opts).y
    errors = {name: nrmse(ours[i], ref[i]) for i, name in enumerate(("x", "y", "z"))}
    F_ours = np.array([np.asarray(chain.equations(ours[:3, 10 * k], ours[3:, 10 * k], chain_rhs(t, ours[:, 10 * k])[3:],
                                                  *ship(t)).deck_force).ravel()
                       for k, t in enumerate(times[::10])])
    F_ref = np.array([ref_force(t, ref[:, 10 * k]) for k, t in enumerate(times[::10])])
    errors.update({f"F{a}": nrmse(F_ours[:, i], F_ref[:, i]) for i, a in enumerate("xyz")})
    assert max(errors.values()) <= 0.01, errors
    assert np.ptp(ref[0]) > 1e-3 and np.ptp(ref[1]) > 1e-3     # the pendulum did sway


def _cart_linear_model(kp, kd):
    """The planar 4-link cart pendulum linearised by hand (CARTIP, paper Eq. 22):
    M·q̈ + C·q̇ + K·q = −b·a for relative pitch angles q under a base acceleration a along x.
    Absolute angles φ = L·q; link k's CoM moves by Σ_{j<k} l_j φ_j + c_k φ_k along x."""
    masses = np.array([m for _, m, _, _, _ in LINKS])
    lengths = [ln for _, _, ln, _, _ in LINKS]
    A = np.zeros((4, 4))
    for k, (_, _, _, c, _) in enumerate(LINKS):
        A[k, :k] = lengths[:k]
        A[k, k] = c
    M_phi = (A.T * masses) @ A + np.diag([I[1] for *_, I in LINKS])
    K_phi = -9.81 * np.diag(masses @ A)
    b_phi = masses @ A
    L = np.tril(np.ones((4, 4)))
    return L.T @ M_phi @ L, np.diag(kd), L.T @ K_phi @ L + np.diag(kp), L.T @ b_phi


@pytest.mark.parametrize("amplitude, bound", [(0.5, 0.5), (0.005, 0.01)])
def test_planar_chain_against_the_linear_cart_pendulum(amplitude, bound):
    """CARTIP (paper Fig. 7, NRMSE 0.17–0.29 % there): only pitch free, 1-DoF deck surge;
    the nonlinear chain approaches the linear model as the amplitude shrinks."""
    chain = human().lock({j: "xz" for j in ("ankle", "knee", "hip", "neck")})
    assert chain.coordinates == ("ankle_y", "knee_y", "hip_y", "neck_y")
    kp, kd = np.array([1500.0, 1200.0, 800.0, 60.0]), np.array([350.0, 250.0, 150.0, 8.0])
    M, C, K, b = _cart_linear_model(kp, kd)
    f = chain.function()

    def acc(t):
        return amplitude * (np.sin(2.1 * t) + 0.6 * np.sin(5.3 * t + 1.0))

    def chain_rhs(t, x):
        out = f(x[:4], x[4:], np.zeros(4), np.zeros(3), np.zeros(3), np.zeros(3), [acc(t), 0.0, 0.0])
        Mc, h = np.asarray(out[1]), np.asarray(out[2]).ravel()
        return np.concatenate([x[4:], np.linalg.solve(Mc, -kp * x[:4] - kd * x[4:] - h)])

    def linear_rhs(t, x):
        return np.concatenate([x[4:], np.linalg.solve(M, -C @ x[4:] - K @ x[:4] - b * acc(t))])

    opts = dict(method="LSODA", rtol=1e-11, atol=1e-14, t_eval=np.linspace(0, 8, 801))
    ours = solve_ivp(chain_rhs, (0, 8), np.zeros(8), **opts).y
    ref = solve_ivp(linear_rhs, (0, 8), np.zeros(8), **opts).y
    errors = [nrmse(ours[i], ref[i]) for i in range(4)]
    print(f"cart pendulum, surge amplitude {amplitude}: NRMSE % {np.round(errors, 6)}")
    assert max(errors) <= bound, errors
