"""The `heel-off` contact simulator against hand derivations and a stiff-penalty reference.

The reference is written here independently of the library (a sympy Lagrangian of the contract's
geometry with stiff, critically damped penalty springs at heel and toe, fixed-step RK4); the
library integrates the rigid contact model event by event (colloc.simulate_contact)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from colloc_problems import heel_off

M_F, I_F, M_B, I_B, L, G = 2.0, 0.01, 70.0, 10.0, 0.90, 9.81
HEEL, TOE, FCOM = (-0.05, -0.08), (0.15, -0.08), (0.05, -0.04)


def pulse(t0, amplitude, duration):
    """One full sine of platform acceleration (the platform ends where it started moving)."""
    return lambda t: amplitude * np.sin(2 * np.pi * (t - t0) / duration) if t0 <= t <= t0 + duration else 0.0


def foot_point(q, r):
    """A foot-frame point in the ground frame (the foot turned clockwise by θ_f)."""
    c, s = np.cos(q[2]), np.sin(q[2])
    return np.array([q[0] + r[0] * c + r[1] * s, q[1] - r[0] * s + r[1] * c])


def energy(x):
    """Kinetic + potential energy of full states [x_A, y_A, θ_f, θ_b, velocities] (no platform motion)."""
    q, u = x[:4], x[4:]
    c, s = np.cos(q[2]), np.sin(q[2])
    r = FCOM
    v_f = u[:2] + u[2] * np.array([-r[0] * s + r[1] * c, -r[0] * c - r[1] * s])
    v_b = u[:2] + L * u[3] * np.array([np.cos(q[3]), -np.sin(q[3])])
    y_f, y_b = foot_point(q, r)[1], q[1] + L * np.cos(q[3])
    return (0.5 * M_F * v_f @ v_f + 0.5 * I_F * u[2] ** 2 + 0.5 * M_B * v_b @ v_b + 0.5 * I_B * u[3] ** 2
            + G * (M_F * y_f + M_B * y_b))


def body_momentum_about_ankle(x):
    """The body's angular momentum about the ankle point, clockwise positive."""
    q, u = x[:4], x[4:]
    rel = L * np.array([np.sin(q[3]), np.cos(q[3])])
    v_g = u[:2] + L * u[3] * np.array([np.cos(q[3]), -np.sin(q[3])])
    return I_B * u[3] - M_B * (rel[0] * v_g[1] - rel[1] * v_g[0])


def penalty_reference(acc, kp, kd, t_end, k=1e8, dt=2.5e-5, tau=0.0):
    """Stiff penalty contacts (critically damped, sticking springs to the nominal points),
    fixed-step RK4; returns times and the heel and toe gaps.  ``tau`` > 0 (a multiple of
    ``dt``): the torque −kp·θ_b(t − τ) − kd·ω_b(t − τ) from the stored steps (their mean at a
    half step), the history before t = 0 the initial state."""
    q = sp.symbols("xa ya tf tb")
    u = sp.symbols("u0:4")
    a, torque = sp.symbols("a T")
    qv, uv = sp.Matrix(q), sp.Matrix(u)

    def point(r):
        return sp.Matrix([q[0] + r[0] * sp.cos(q[2]) + r[1] * sp.sin(q[2]),
                          q[1] - r[0] * sp.sin(q[2]) + r[1] * sp.cos(q[2])])

    g_f, g_b = point(FCOM), sp.Matrix([q[0] + L * sp.sin(q[3]), q[1] + L * sp.cos(q[3])])
    vel = [P.jacobian(qv) * uv for P in (g_f, g_b)]
    lag = (sp.Rational(1, 2) * (M_F * vel[0].dot(vel[0]) + M_B * vel[1].dot(vel[1]) + I_F * u[2] ** 2
                                + I_B * u[3] ** 2) - G * (M_F * g_f[1] + M_B * g_b[1]))
    p_u = sp.Matrix([sp.diff(lag, v) for v in u])
    mass = p_u.jacobian(uv)
    rest = p_u.jacobian(qv) * uv - sp.Matrix([sp.diff(lag, v) for v in q])
    gen = -a * (M_F * g_f.jacobian(qv)[0, :] + M_B * g_b.jacobian(qv)[0, :]).T + sp.Matrix([0, 0, -torque, torque])
    mass_f = sp.lambdify([q], mass, "numpy")
    rhs_f = sp.lambdify([q, u, a, torque], gen - rest, "numpy")
    points = [(sp.lambdify([q], point(r), "numpy"), sp.lambdify([q], point(r).jacobian(qv), "numpy"), r[0])
              for r in (HEEL, TOE)]
    c = 2 * np.sqrt(k * M_F)

    lag = int(round(tau / dt))
    past = []  # (θ_b, ω_b) at every step so far

    def fed(i2):
        """(θ_b, ω_b) at the time of half step i2 (t = i2·dt/2) minus τ."""
        j = i2 - 2 * lag
        if j <= 0:
            return past[0]
        if j % 2 == 0:
            return past[j // 2]
        return 0.5 * (past[j // 2] + past[j // 2 + 1])

    def rhs(t, y, i2=None):
        qq, uu = y[:4], y[4:]
        th, om = (qq[3], uu[3]) if not lag else fed(i2)
        F = np.array(rhs_f(qq, uu, acc(t), -kp * th - kd * om), dtype=float).ravel()
        for P, J, x_nominal in points:
            p = np.array(P(qq), dtype=float).ravel()
            if p[1] < 0:
                Jm = np.array(J(qq), dtype=float)
                v = Jm @ uu
                F += Jm.T @ np.array([-k * (p[0] - x_nominal) - c * v[0], max(0.0, -k * p[1] - c * v[1])])
        return np.concatenate([uu, np.linalg.solve(np.array(mass_f(qq), dtype=float), F)])

    n = int(round(t_end / dt))
    ts = np.arange(n + 1) * dt
    y = np.array([0.0, 0.08 - (M_F + M_B) * G / (2 * k), 0, 0, 0, 0, 0, 0])
    gaps = np.empty((n + 1, 2))
    for i in range(n + 1):
        gaps[i] = [np.array(P(y[:4]), dtype=float).ravel()[1] for P, _J, _x in points]
        if i == n:
            break
        t = ts[i]
        past.append(np.array([y[3], y[7]]))
        k1 = rhs(t, y, 2 * i)
        k2 = rhs(t + dt / 2, y + dt / 2 * k1, 2 * i + 1)
        k3 = rhs(t + dt / 2, y + dt / 2 * k2, 2 * i + 1)
        k4 = rhs(t + dt, y + dt * k3, 2 * i + 2)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return ts, gaps


def first_lift_and_landing(ts, gap, clear=1e-3):
    """The first time the gap opens, and the first time it closes after exceeding ``clear``."""
    up = int(np.argmax(gap > 0))
    high = up + int(np.argmax(gap[up:] > clear))
    down = high + int(np.argmax(gap[high:] <= 0))
    return ts[up], ts[down]


@pytest.mark.slow  # 8 s alone (2026-11-29): out of the default suite's 10 minutes
def test_heel_off_and_landing_times_match_a_stiff_penalty_reference():
    acc = pulse(0.1, -4.0, 0.4)  # the platform backwards: the body falls forwards onto the toes
    ts, gaps = penalty_reference(acc, 900.0, 250.0, 0.6)
    lift_ref, land_ref = first_lift_and_landing(ts, gaps[:, 0])
    assert np.all(gaps[ts < land_ref, 1] <= 0)  # the toe stays down meanwhile
    _, sim = heel_off.simulate(heel_off.TRUE, np.arange(0, 0.6001, 0.01), None, acc=acc)
    kinds = [(e.kind, e.name) for e in sim.events]
    assert kinds == [("lift-off", "heel"), ("landing", "heel")]
    lift, land = sim.event_times()
    assert abs(lift - lift_ref) < 1e-3 and abs(land - land_ref) < 1e-3
    assert land - lift > 0.1


@pytest.mark.slow  # 7 s alone (2026-11-29): out of the default suite's 10 minutes
def test_delayed_feedback_heel_off_and_landing_times_match_a_stiff_penalty_reference():
    # a pulse that the undelayed loop rides out with the foot flat lifts the heel with τ = 0.1 s
    # (at -3 m/s² the reference and the simulator both lose both contacts at 0.569 s)
    acc = pulse(0.1, -2.8, 0.4)
    ts, gaps = penalty_reference(acc, 900.0, 250.0, 0.75, dt=5e-5, tau=0.1)
    lift_ref, land_ref = first_lift_and_landing(ts, gaps[:, 0])
    assert np.all(gaps[ts < land_ref, 1] <= 0)
    _, sim = heel_off.simulate({**heel_off.TRUE, "tau": 0.1}, np.arange(0, 0.7501, 0.01), None, acc=acc)
    assert [(e.kind, e.name) for e in sim.events] == [("lift-off", "heel"), ("landing", "heel")]
    lift, land = sim.event_times()
    assert abs(lift - lift_ref) < 1e-3 and abs(land - land_ref) < 1e-3
    assert land - lift > 0.1
    _, undelayed = heel_off.simulate(heel_off.TRUE, np.arange(0, 0.7501, 0.01), None, acc=acc)
    assert not undelayed.events  # the delay does show


def test_delayed_feedback_with_the_foot_flat_matches_a_method_of_steps_pendulum():
    """Foot flat all along: the body is an inverted pendulum about the ankle on the moving
    platform, (I_b + m_b L²) θ̈ = m_b g L sin θ − m_b a L cos θ − kp θ(t − τ) − kd ω(t − τ),
    integrated here by RK4 on a 0.5 ms step (τ a multiple of it, half steps read as the mean)."""
    kp, kd, tau, dt = 900.0, 250.0, 0.07, 5e-4
    acc = pulse(0.2, -1.5, 0.6)
    inertia = I_B + M_B * L**2
    n, lag = int(round(2.0 / dt)), int(round(tau / dt))
    hist = np.zeros((n + 1, 2))
    y = np.zeros(2)

    def f(t, y, th, om):
        return np.array([y[1], (M_B * G * L * np.sin(y[0]) - M_B * acc(t) * L * np.cos(y[0]) - kp * th - kd * om)
                         / inertia])

    def past(i2):
        j = i2 - 2 * lag
        if j <= 0:
            return hist[0]
        return hist[j // 2] if j % 2 == 0 else 0.5 * (hist[j // 2] + hist[j // 2 + 1])

    for i in range(n):
        hist[i] = y
        t = i * dt
        k1 = f(t, y, *past(2 * i))
        k2 = f(t + dt / 2, y + dt / 2 * k1, *past(2 * i + 1))
        k3 = f(t + dt / 2, y + dt / 2 * k2, *past(2 * i + 1))
        k4 = f(t + dt, y + dt * k3, *past(2 * i + 2))
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    hist[n] = y
    time = np.arange(0, 2.0001, 0.01)
    states, sim = heel_off.simulate({"kp": kp, "kd": kd, "tau": tau}, time, None, acc=acc)
    assert not sim.events  # the foot stays flat
    ref = hist[np.round(time / dt).astype(int)]
    assert np.max(np.abs(ref[:, 0])) > 0.02
    np.testing.assert_allclose(states[:, 0], ref[:, 0], atol=1e-6 * np.max(np.abs(ref[:, 0])) + 1e-9)
    np.testing.assert_allclose(states[:, 2], ref[:, 1], atol=1e-6 * np.max(np.abs(ref[:, 1])) + 1e-9)
    undelayed, _ = heel_off.simulate({"kp": kp, "kd": kd}, time, None, acc=acc)
    assert np.max(np.abs(undelayed[:, 0] - ref[:, 0])) > 1e-3 * np.max(np.abs(ref[:, 0]))


def test_a_negative_delay_is_refused():
    with pytest.raises(heel_off.co.ModelError, match="tau"):
        heel_off.simulate({**heel_off.TRUE, "tau": -0.01}, np.arange(0, 0.1, 0.01), None, acc=lambda t: 0.0)


@pytest.fixture(scope="module")
def rocking():
    """6 s with heel lifts and a toe lift (the seed gains)."""
    acc = lambda t: pulse(0.3, -4.0, 0.4)(t) + pulse(2.0, 2.0, 0.5)(t) + pulse(4.0, -5.0, 0.3)(t)  # noqa: E731
    time = np.arange(0, 6.0001, 0.01)
    states, sim = heel_off.simulate(heel_off.TRUE, time, None, acc=acc)
    return time, states, sim


def test_no_penetration_and_contacts_stay_closed(rocking):
    _time, states, sim = rocking
    assert {e.name for e in sim.events if e.kind == "landing"} == {"heel", "toe"}
    fine = np.arange(0, 6.0, 2e-4)
    full = sim.state(fine)
    gaps = np.array([[foot_point(x, HEEL)[1], foot_point(x, TOE)[1]] for x in full])
    assert gaps.min() > -1e-9
    # the pivot stays on its spot (no slip, no drift)
    toe_phase = full[:, 2] > 1e-3
    heel_phase = full[:, 2] < -1e-3
    assert toe_phase.any() and heel_phase.any()
    toes = np.array([foot_point(x, TOE) for x in full[toe_phase]])
    heels = np.array([foot_point(x, HEEL) for x in full[heel_phase]])
    np.testing.assert_allclose(toes, np.tile([0.15, 0.0], (len(toes), 1)), atol=1e-9)
    np.testing.assert_allclose(heels, np.tile([-0.05, 0.0], (len(heels), 1)), atol=1e-9)


def test_landing_stops_the_foot_and_keeps_the_body_momentum_about_the_ankle(rocking):
    _time, _states, sim = rocking
    landings = [e.time for e in sim.events if e.kind == "landing"]
    for t_land in landings:
        i = next(k for k, s in enumerate(sim.segments) if s[3] is not None and abs(s[1] - t_land) < 1e-12)
        before = sim.segments[i][3](t_land)
        after = sim.state([t_land])[0]
        np.testing.assert_allclose(after[4:7], 0.0, atol=1e-12)  # the foot stops flat
        assert body_momentum_about_ankle(after) == pytest.approx(body_momentum_about_ankle(before), rel=1e-12)
        assert abs(body_momentum_about_ankle(before)) > 1.0


def test_energy_is_conserved_in_a_pivot_phase_without_control():
    # on the toe, heel 0.1 rad up, no ankle torque, platform at rest: only gravity works
    x0 = heel_off.full_state([0.05, 0.1, 0.2, 0.0])
    system = heel_off.contact_system(lambda t: 0.0, {"kp": 0.0, "kd": 0.0})
    from colloc.simulation.contact import simulate_contact

    sim = simulate_contact(system, x0, (0.0, 1.0), {}, active=("toe",))
    t_end = sim.events[0].time if sim.events else 1.0
    assert t_end > 0.05
    fine = np.linspace(0.0, t_end, 400)[:-1]  # before the event (the state at it is the one after)
    e = np.array([energy(x) for x in sim.state(fine)])
    swing = np.ptp([0.5 * I_B * x[7] ** 2 for x in sim.state(fine)])  # the energy did change form
    assert swing > 0.1
    assert np.max(np.abs(e - e[0])) / abs(e[0]) < 1e-9
