"""Unilateral point contacts (colloc.ContactSystem, colloc.simulate_contact) on hand-solved cases."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc.simulation.contact import complementary_mode, constrained_dynamics, inelastic_impact

M_P, G = 3.0, 9.81


def particle(push, slip=False):
    """A point mass (x, y) on the ground y = 0 pushed up by ``push(t)`` (N)."""
    point = co.ContactPoint("p", lambda q: np.asarray(q), lambda q: np.eye(2), lambda q, qd: np.zeros(2), slip=slip)
    return co.ContactSystem("particle", ("x", "y"), lambda q, p: M_P * np.eye(2),
                            lambda t, q, qd, p: np.array([0.0, push(t) - M_P * G]), [point])


def test_particle_lifts_off_when_the_force_would_pull_and_the_lost_contact_is_a_status():
    rate = 40.0  # N/s: λ = m g − (m g / 2 + rate·t) reaches 0 at t* = m g / (2 rate)
    sim = co.simulate_contact(particle(lambda t: 0.5 * M_P * G + rate * t), np.zeros(4), (0.0, 2.0), {})
    t_star = M_P * G / (2 * rate)
    assert sim.status == "lost_contact"
    assert [e.kind for e in sim.events] == ["lift-off", "lost-contact"]
    assert sim.events[0].time == pytest.approx(t_star, abs=1e-9)
    assert "t = 0.367875" in sim.message


def test_resting_particle_stays_with_the_weight_as_contact_force():
    sim = co.simulate_contact(particle(lambda t: 0.0), np.zeros(4), (0.0, 1.0), {}, t_eval=[0.0, 0.5, 1.0])
    assert sim.status == "ok" and not sim.events
    np.testing.assert_allclose(sim.x, 0.0, atol=1e-12)
    _, forces = constrained_dynamics(particle(lambda t: 0.0), 0.0, np.zeros(2), np.zeros(2), {}, (0,))
    assert forces[0][0] == pytest.approx(M_P * G) and forces[0][1] == pytest.approx(0.0, abs=1e-12)


def test_a_system_that_starts_off_the_ground_is_reported_not_simulated():
    for active in ((), None):
        sim = co.simulate_contact(particle(lambda t: 0.0), np.array([0.0, 0.2, 1.0, 0.0]), (0.0, 1.0), {},
                                  active=active, t_eval=[0.0, 1.0])
        assert sim.status == "lost_contact" and sim.events[0].kind == "lost-contact"
        assert len(sim.t) == 1


def test_inelastic_impact_and_complementarity_on_a_sliding_free_particle():
    sys_ = particle(lambda t: 0.0, slip=True)
    v = inelastic_impact(sys_, np.zeros(2), np.array([1.0, -2.0]), {}, (0,))
    np.testing.assert_allclose(v, [1.0, 0.0], atol=1e-15)  # a slipping point keeps its tangential speed
    assert complementary_mode(sys_, 0.0, np.zeros(2), np.zeros(2), {}, (0,)) == (0,)
    lifting = particle(lambda t: 2 * M_P * G, slip=True)
    assert complementary_mode(lifting, 0.0, np.zeros(2), np.zeros(2), {}, (0,)) == ()


def test_bad_inputs_are_refused():
    with pytest.raises(co.ModelError, match="t_span"):
        co.simulate_contact(particle(lambda t: 0.0), np.zeros(4), (1.0, 0.0), {})
    with pytest.raises(co.ModelError, match="4 entries"):
        co.simulate_contact(particle(lambda t: 0.0), np.zeros(3), (0.0, 1.0), {})
    with pytest.raises(co.ModelError, match="no contact points"):
        co.ContactSystem("none", ("x",), lambda q, p: np.eye(1), lambda t, q, qd, p: np.zeros(1), [])
