"""Event-driven simulation of hybrid models (Wieber & Billet 2006, §5) against closed forms and
an independently written brute-force reference."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc.definition.hybrid import SQRT_EPS

G, E, H0 = 9.81, 0.9, 1.0


def ball():
    return co.HybridModel("ball", ["h", "v"], [co.Mode("fly", lambda t, x, p, t0: np.array([x[1], -G]))], "fly",
                          guards=[co.Guard("ground", lambda t, x, p: x[0], -1,
                                           reset=lambda t, x, p: np.array([0.0, -E * x[1]]))])


def test_bouncing_ball_event_times_match_closed_form_over_20_bounces():
    sim = co.simulate_hybrid(ball(), [H0, 0.0], (0.0, 11.0), {})
    times = sim.event_times("guard", "ground")
    v = np.sqrt(2 * G * H0)
    expected = [v / G]
    for _ in range(19):
        v *= E
        expected.append(expected[-1] + 2 * v / G)
    assert len(times) >= 20
    assert np.max(np.abs(times[:20] - np.array(expected))) < 1e-10
    assert np.all(np.diff(times) > 0)  # none reported twice
    assert all(e.kind == "guard" for e in sim.events)


@pytest.mark.parametrize("gap", [1e-14, 0.0, -1e-14])
def test_two_guards_closer_than_100_eps_are_each_handled_once_in_order(gap):
    # x' = 1; guard a at x = 0.5, guard b at x = 0.5 + gap; each counts its firings in a state
    def counter(i):
        def reset(t, x, p):
            y = np.array(x, dtype=float)
            y[i] += 1.0
            return y
        return reset
    model = co.HybridModel("two", ["x", "na", "nb"], [co.Mode("m", lambda t, x, p, t0: np.array([1.0, 0.0, 0.0]))],
                           "m", guards=[co.Guard("a", lambda t, x, p: x[0] - 0.5, +1, reset=counter(1)),
                                        co.Guard("b", lambda t, x, p: x[0] - (0.5 + gap), +1, reset=counter(2))])
    sim = co.simulate_hybrid(model, [0.0, 0.0, 0.0], (0.0, 1.0), {})
    names = [e.name for e in sim.events]
    assert sorted(names) == ["a", "b"]
    assert sim.x[-1, 1] == 1.0 and sim.x[-1, 2] == 1.0
    if gap > 0:
        assert names == ["a", "b"]
    elif gap < 0:
        assert names == ["b", "a"]
    for e in sim.events:
        assert abs(e.time - 0.5) < 1e-13


def test_time_events_1e14_apart_and_timed_mode_expiring_with_a_time_event():
    # mode A lasts 0.25 then B; time events at 0.25 and 0.25 + 1e-14 re-enter A: none lost
    modes = [co.Mode("A", lambda t, x, p, t0: np.array([1.0]), duration=0.25, then="B"),
             co.Mode("B", lambda t, x, p, t0: np.array([-1.0]))]
    model = co.HybridModel("clock", ["x"], modes, "A",
                           time_events=[co.TimeEvent("t1", [0.25], target="A"),
                                        co.TimeEvent("t2", [0.25 + 1e-14], target="B")])
    sim = co.simulate_hybrid(model, [0.0], (0.0, 1.0), {})
    kinds = [(e.kind, e.name, e.after) for e in sim.events]
    assert kinds == [("duration", "A", "B"), ("time", "t1", "A"), ("time", "t2", "B")]
    assert sim.x[-1, 0] == pytest.approx(0.25 - 0.75, abs=1e-12)


def test_switch_hysteresis_no_chattering():
    # g = 1 - t + 1e-10 sin(1e4 t) crosses 0 several times within ±1e-10 s of t = 1: the
    # hysteresis √ε of §5.2 lets only the first crossing through (one event, no chattering)
    def g(t, x, p):
        return 1.0 - t + 1e-10 * np.sin(1e4 * t)
    modes = [co.Mode("on", lambda t, x, p, t0: np.array([1.0])), co.Mode("off", lambda t, x, p, t0: np.array([0.0]))]
    model = co.HybridModel("sw", ["x"], modes, "on", switches=[co.Switch("s", g, ["on"], ["off"], "off", "on")])
    sim = co.simulate_hybrid(model, [0.0], (0.0, 2.0), {})
    assert [e.name for e in sim.events] == ["s:down"]
    assert abs(sim.events[0].time - 1.0) < 1e-9
    assert 1e-10 < SQRT_EPS


def test_fes_force_matches_brute_force_reference(fes_brute_force):
    # gaps of 30 and 20 ms: interrupted falls and plateaus; the reference (tests/conftest.py) is
    # RK4 with 1e-5 s steps written from the contract, apart from the library
    from colloc_problems import fes_muscle as fm

    time = np.arange(301) / 1000.0
    pulse = np.zeros_like(time)
    pulse[[10, 40, 60, 80, 100]] = 1  # gaps of 30 and 20 ms: interrupted falls and plateaus
    alpha = 0.7
    force = fm.simulate(fm.TRUE, time, pulse, np.full_like(time, alpha))
    ref = fes_brute_force(time, pulse, alpha, {**fm.TRUE, **fm.KNOWN})
    assert np.max(np.abs(force - ref)) / np.max(np.abs(ref)) < 1e-6
