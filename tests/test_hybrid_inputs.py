"""Measured inputs of a hybrid model (``HybridModel(inputs=...)``), exact or errors-in-variables
(``HybridProblem(input_noise=...)``): a bouncing ball pushed by a measured vertical acceleration
u(t), fitted from heights at 100 Hz made by an event-driven simulator that does not use the
library (SciPy's ``solve_ivp`` with a terminal event, restarted after each bounce, u(t) exact)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import colloc as co
from colloc.transcription.hybrid_fit import input_values

G = 9.81
TRUTH = {"e": 0.8, "c": 0.05}
GUESS = {"e": 0.6, "c": 0.1}
SIGMA_H, SIGMA_U = 0.002, 0.5


def push(t):
    """The measured input: a vertical acceleration (m/s²)."""
    return 1.5 * np.sin(2 * np.pi * 1.5 * t)


def record(e: float, c: float, h0: float = 1.2, duration: float = 2.5, rate: float = 100.0):
    """Sample times, heights and bounce times: ḣ = v, v̇ = −g − c·v|v| + u(t); at h = 0 (falling) v → −e·v."""
    t = np.arange(0.0, duration, 1.0 / rate)
    hits = lambda _t, y: y[0]
    hits.terminal, hits.direction = True, -1
    t0, y0, h, bounces = 0.0, np.array([h0, 0.0]), np.empty_like(t), []
    while t0 < t[-1]:
        sol = solve_ivp(lambda s, y: [y[1], -G - c * y[1] * abs(y[1]) + push(s)], (t0, t[-1]), y0, events=hits,
                        dense_output=True, rtol=1e-12, atol=1e-12, method="DOP853")
        m = (t >= t0) & (t <= sol.t[-1])
        h[m] = sol.sol(t[m])[0]
        if sol.status != 1:
            break
        t0 = float(sol.t_events[0][0])
        bounces.append(t0)
        y0 = np.array([0.0, -e * sol.y_events[0][0][1]])
    return t, h, np.array(bounces)


def model() -> co.HybridModel:
    flight = co.Mode("flight", lambda t, x, p, t0: [x[1], -G - p["c"] * x[1] * abs(x[1]) + p["push"]])
    bounce = co.Guard("bounce", lambda t, x, p: x[0], -1, reset=lambda t, x, p: [x[0], -p["e"] * x[1]])
    return co.HybridModel("pushed-ball", ["h", "v"], [flight], "flight", guards=[bounce], parameters=("e", "c"),
                          inputs=("push",))


def trial(noisy: bool, seed: int = 3) -> co.Trial:
    t, h, _ = record(**TRUTH)
    u = push(t)
    if noisy:
        rng = np.random.default_rng(seed)
        h, u = h + rng.normal(0.0, SIGMA_H, h.shape), u + rng.normal(0.0, SIGMA_U, u.shape)
    return co.Trial(t, {"h": h, "push": u}, name="noisy" if noisy else "clean")


def problem(tr: co.Trial, **options) -> co.HybridProblem:
    """The phases read from the record: a bounce at each sample whose height is a local minimum
    near the ground (the user's reading of the data, not the truth)."""
    h = tr["h"]
    low = [i for i in range(1, len(h) - 1) if h[i] < 0.05 and h[i] <= h[i - 1] and h[i] <= h[i + 1]]
    return co.HybridProblem(model(), tr, guess=GUESS, sequence=["flight"] * (len(low) + 1),
                            switch_times=[float(tr.time[i]) for i in low], **options)


def test_the_simulator_reads_the_input_and_agrees_with_the_reference():
    t, h, bounces = record(**TRUTH)
    sim = co.simulate_hybrid(model(), [1.2, 0.0], (t[0], t[-1]), TRUTH, t_eval=t, rtol=1e-11, atol=1e-11,
                             inputs=input_values(t, {"push": push(t)}))
    assert np.max(np.abs(sim.x[:, 0] - h)) < 2e-4  # the input read between samples by a cubic
    assert np.allclose(sim.event_times(), bounces, atol=2e-4)
    with pytest.raises(co.ModelError, match="inputs"):
        co.simulate_hybrid(model(), [1.2, 0.0], (0.0, 1.0), TRUTH)


def test_clean_record_with_an_exact_input_gives_the_parameters_within_half_a_percent():
    res = co.solve(problem(trial(False), fit={"h": 1.0}), co.Radau(degree=3))
    assert res.success, res.message
    for k, v in TRUTH.items():
        assert abs(res.parameters[k] / v - 1) < 0.005, (k, res.parameters[k])


def test_noisy_input_as_errors_in_variables_gives_the_parameters_within_three_standard_errors():
    tr = trial(True)
    res = co.solve(problem(tr, fit={"h": 1.0 / SIGMA_H ** 2}, input_noise={"push": SIGMA_U}), co.Radau(degree=3))
    assert res.success, res.message
    for k, v in TRUTH.items():
        assert abs(res.parameters[k] - v) < 3 * res.standard_errors[k], (k, res.parameters[k], res.standard_errors[k])
    # the input's estimate moves from its measurement (by less than its noise: the heights tell
    # little of the push at each sample), and the verdict judges it beside the heights
    spread = float(np.std(res.residuals["noisy"]["push"].to_numpy()))
    assert 0.0 < spread < SIGMA_U, spread
    assert "push" in res.fit_verdict["signals"]


def test_bad_inputs_are_refused_by_name():
    with pytest.raises(co.ProblemError, match="'drag' is not an input"):
        co.HybridProblem(model(), trial(False), guess=GUESS, input_noise={"drag": 1.0})
    with pytest.raises(co.ProblemError, match="needs the input 'push'"):
        t, h, _ = record(**TRUTH)
        co.HybridProblem(model(), co.Trial(t, {"h": h}), guess=GUESS)
    with pytest.raises(co.ProblemError, match="finite and > 0"):
        co.HybridProblem(model(), trial(False), guess=GUESS, input_noise={"push": 0.0})
