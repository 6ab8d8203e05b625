"""A hybrid model with a delayed state (``HybridModel(delay=..., delayed=...)``): an oscillator
whose spring acts on its position τ ago, against a wall it bounces off (restitution e).  The
delayed stiffness feeds energy in (growth rate about k·τ/2), the wall takes it out, so the record
keeps bouncing.  The records come from a simulator written here (SciPy's ``solve_ivp`` with a
terminal event at the wall and the method of steps for the delay), not from the library."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import colloc as co
from colloc.base.errors import ModelError
from colloc.solving.hybrid import _delay_breaks, _layout

TRUE = {"k": 9.0, "c": 0.3, "tau": 0.2, "e": 0.6}
POOR = {"k": 6.0, "c": 0.6, "tau": 0.1, "e": 0.4}
WALL, X0, DURATION, SIGMA = -0.5, (0.3, 0.0), 8.0, 0.005


def model(delayed=("x",)) -> co.HybridModel:
    """ẍ = −k·x(t − τ) − c·v (or −c·v(t − τ) with ``delayed`` ("x", "v")); at x = WALL v ← −e·v."""

    def rhs(t, x, p, t0):
        v = p["v_delayed"] if "v" in delayed else x[1]
        return [x[1], -p["k"] * p["x_delayed"] - p["c"] * v]

    wall = co.Guard("wall", lambda t, x, p: x[0] - WALL, -1, reset=lambda t, x, p: [x[0], -p["e"] * x[1]])
    return co.HybridModel("delayed-wall", ["x", "v"], [co.Mode("free", rhs)], "free", guards=[wall],
                          parameters=["k", "c", "tau", "e"], delay="tau", delayed=delayed)


def simulate(p, rate=100.0):
    """Positions at ``rate`` Hz and the bounce times: solve_ivp piece by piece, each piece at most τ
    long and ending τ after a bounce, the delayed position read from the pieces done (x0 before 0)."""
    tau, pieces, breaks, bounces = p["tau"], [], [], []

    def past(s):
        if s <= 0:
            return X0[0]
        _a, b, f = next(piece for piece in reversed(pieces) if piece[0] <= s)
        return f(min(s, b))[0]

    def wall(t, y):
        return y[0] - WALL

    wall.terminal, wall.direction = True, -1
    t, x = 0.0, np.array(X0, dtype=float)
    while t < DURATION - 1e-12:
        end = min([t + tau, DURATION, *[b for b in breaks if b > t + 1e-12]])
        sol = solve_ivp(lambda s, y: [y[1], -p["k"] * past(s - tau) - p["c"] * y[1]], (t, end), x, method="DOP853",
                        rtol=1e-11, atol=1e-12, events=wall, dense_output=True)
        pieces.append((t, sol.t[-1], sol.sol))
        t, x = sol.t[-1], sol.y[:, -1].copy()
        if sol.status == 1:
            bounces.append(t)
            breaks.append(t + tau)
            x[1] *= -p["e"]
    time = np.arange(round(DURATION * rate) + 1) / rate
    xs = np.array([next(f for a, b, f in reversed(pieces) if a <= s)(s)[0] for s in time])
    return time, xs, np.array(bounces)


@pytest.fixture(scope="module")
def record():
    time, xs, bounces = simulate(TRUE)
    assert len(bounces) >= 4  # the record bounces all along
    return time, xs, bounces


def _problem(time, y, noise=None):
    """The bounces read from the record (the lowest sample of each stretch near the wall), the
    parameters from POOR."""
    low = np.flatnonzero(y < WALL + 0.05)
    stretches = np.split(low, np.flatnonzero(np.diff(low) > 5) + 1)
    switches = [float(time[s[np.argmin(y[s])]]) for s in stretches if len(s)]
    return co.HybridProblem(model(), co.Trial(time, {"x": y}, name="wall"), guess=POOR,
                            bounds={"tau": (0.0, 0.5), "e": (0.0, 1.0)}, sequence=["free"] * (len(switches) + 1),
                            switch_times=switches, noise=None if noise is None else {"x": noise})


def test_the_simulator_integrates_the_delay_by_the_method_of_steps(record):
    time, xs, bounces = record
    sim = co.simulate_hybrid(model(), X0, (0.0, DURATION), TRUE, t_eval=time)
    assert np.allclose(sim.event_times("guard"), bounces, atol=1e-8)
    assert np.max(np.abs(sim.x[:, 0] - xs)) < 1e-7


def test_clean_record_from_a_poor_guess_within_half_a_percent(record):
    time, xs, bounces = record
    res = co.solve(_problem(time, xs), co.Radau(degree=3))
    assert res.success, res.status
    for k, v in TRUE.items():
        assert abs(res.parameters[k] / v - 1) < 5e-3, (k, res.parameters[k])
    phases = res.info["phases"]["wall"]
    assert np.allclose(phases["switch_times"], bounces, atol=1e-3)
    assert res.simulation["wall"]["same_modes"]


def test_noisy_record_from_a_poor_guess_within_three_standard_errors(record):
    time, xs, _bounces = record
    y = xs + SIGMA * np.random.default_rng(7).standard_normal(len(xs))
    res = co.solve(_problem(time, y, SIGMA), co.Radau(degree=3))
    assert res.success, res.status
    for k, v in TRUE.items():
        assert abs(res.parameters[k] - v) < 3 * res.standard_errors[k], (k, res.parameters[k], res.standard_errors[k])
    assert res.info["rounds"] > 1  # τ walked from 0.1 s to 0.2 s over several solves


def test_a_break_follows_each_jump_of_a_delayed_state(record):
    time, xs, bounces = record
    both = model(("x", "v"))  # the bounce's jump of v is fed back τ later
    problem = co.HybridProblem(both, co.Trial(time, {"x": xs}, name="wall"), guess=TRUE,
                               sequence=["free"] * (len(bounces) + 1), switch_times=list(bounces))
    lay = _layout(problem, 0, TRUE, np.array(X0))[0]
    cut = _delay_breaks(problem, lay, time, TRUE["tau"])
    inside = [i for i, b in enumerate(bounces) if b + TRUE["tau"] < DURATION - 0.1]
    gaps = [cut.switches[brk] - cut.switches[jump] for brk, jump in cut.ties]
    assert gaps == pytest.approx([TRUE["tau"]] * len(inside))
    assert cut.merged() == lay.sequence and len(cut.sequence) == len(lay.sequence) + len(inside)
    # the position does not jump at the wall: no break when only it is delayed
    assert _delay_breaks(_problem(time, xs), lay, time, TRUE["tau"]).ties == []


def test_a_delay_is_declared_by_a_parameter_and_states():
    with pytest.raises(ModelError, match="not one of its parameters"):
        co.HybridModel("m", ["x"], [co.Mode("a", lambda t, x, p, t0: [0 * x[0]])], "a", parameters=["k"],
                       delay="tau", delayed=("x",))
    with pytest.raises(ModelError, match="not one of its states"):
        co.HybridModel("m", ["x"], [co.Mode("a", lambda t, x, p, t0: [0 * x[0]])], "a", parameters=["tau"],
                       delay="tau", delayed=("y",))
    with pytest.raises(ModelError, match="both delay="):
        co.HybridModel("m", ["x"], [co.Mode("a", lambda t, x, p, t0: [0 * x[0]])], "a", parameters=["tau"],
                       delay="tau")
    with pytest.raises(ModelError, match="must be finite and > 0"):
        co.simulate_hybrid(model(), X0, (0.0, 1.0), {**TRUE, "tau": 0.0})
