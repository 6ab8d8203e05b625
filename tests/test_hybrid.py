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


def _fes_reference(time, pulse, alpha, p, substeps=100):
    """Brute force, written apart from the library: u(t) straight from the clock's definition
    and classical RK4 with 1e-5 s steps (the clock's switching times are on this grid)."""
    starts = time[pulse == 1] + p["tau"]

    def u_of(t):
        before = starts[starts <= t + 1e-12]
        if len(before) == 0:
            return p["U_m"]
        s = t - before[-1]
        if s < p["tau1"] - 1e-12:
            return p["U_p"]
        if s < p["tau1"] + p["tau2"] - 1e-12:
            return p["U_p"] * (1 - (s - p["tau1"]) / p["tau2"])
        return p["U_m"]

    def f(t, y, u):
        k, F = y
        up, ua = max(u, 0.0), abs(u)
        # solve eqs. (9)-(10) for eps_c' by trying both signs
        for sgn in (-1.0, 1.0):
            d = -(alpha * p["F0"] * up - ua * F) / ((p["k_s"] + k) * p["L_c0"] - sgn * F)
            if d * sgn >= 0:
                break
        return np.array([-(ua + abs(d)) * k + alpha * p["k0"] * up, -p["k_s"] * p["L_c0"] * d])

    y = np.zeros(2)
    out = [0.0]
    h = (time[1] - time[0]) / substeps
    for i in range(len(time) - 1):
        for j in range(substeps):
            t = time[i] + j * h
            u = u_of(t + 0.5 * h)  # piecewise smooth on the step: u at the step's middle sets its branch
            t0 = t
            k1 = f(t0, y, u_fn(u_of, t0, h, 0.0))
            k2 = f(t0, y + 0.5 * h * k1, u_fn(u_of, t0, h, 0.5))
            k3 = f(t0, y + 0.5 * h * k2, u_fn(u_of, t0, h, 0.5))
            k4 = f(t0, y + h * k3, u_fn(u_of, t0, h, 1.0))
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            del u
        out.append(y[1])
    return np.array(out)


def u_fn(u_of, t0, h, c):
    """u at t0 + c·h, taken on the step's own branch (one-sided at the step's ends)."""
    mid = t0 + 0.5 * h
    if c == 0.5:
        return u_of(mid)
    # extrapolate the branch in force at the middle of the step (linear pieces)
    um, ul = u_of(mid), u_of(mid - 0.25 * h)
    return um + (ul - um) * (-(c - 0.5) / 0.25)


def test_fes_force_matches_brute_force_reference():
    from colloc_problems import fes_muscle as fm

    time = np.arange(301) / 1000.0
    pulse = np.zeros_like(time)
    pulse[[10, 40, 60, 80, 100]] = 1  # gaps of 30 and 20 ms: interrupted falls and plateaus
    alpha = 0.7
    force = fm.simulate(fm.TRUE, time, pulse, np.full_like(time, alpha))
    ref = _fes_reference(time, pulse, alpha, {**fm.TRUE, **fm.KNOWN})
    assert np.max(np.abs(force - ref)) / np.max(np.abs(ref)) < 1e-6
