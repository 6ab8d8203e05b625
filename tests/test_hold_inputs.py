"""Known inputs held over each sample (zero-order hold) and the declared interpolation of inputs.

The references are independent of colloc: the held value is found by a plain search over the
sample times, and the records are made by scipy's ``solve_ivp`` integrating each sample
interval on its own with the input constant there.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import colloc as co
from colloc.simulation.integrators import RungeKutta
from colloc.simulation.ode import simulate
from colloc.transcription.collocation import transcribe
from colloc.transcription.interpolation import known_inputs

K, C, X0 = 40.0, 0.8, (0.1, 0.0)  # ẍ = u − K x − C ẋ: about 1 Hz, lightly damped


def _oscillator() -> co.Model:
    m = co.Model("held_oscillator")
    pos, vel = m.state("pos"), m.state("vel")
    u = m.known_input("u")
    k = m.parameter("k", bounds=(1.0, 400.0), guess=10.0, scale=10.0)  # poor guesses: 1/4 and 2.5×
    c = m.parameter("c", bounds=(0.01, 10.0), guess=2.0)
    m.set_der(pos, vel)
    m.set_der(vel, u - k * pos - c * vel)
    return m


def _held_record(t: np.ndarray, u: np.ndarray, k: float = K, c: float = C, x0=X0) -> np.ndarray:
    """States at ``t``: solve_ivp on each sample interval with the input constant at u[j]."""
    x = np.zeros((t.size, 2))
    x[0] = x0
    for j in range(t.size - 1):
        sol = solve_ivp(lambda _, z, uj=u[j]: [z[1], uj - k * z[0] - c * z[1]], (t[j], t[j + 1]), x[j],
                        method="DOP853", rtol=1e-12, atol=1e-12)
        x[j + 1] = sol.y[:, -1]
    return x


def _record(n: int = 301, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.arange(n) / 100.0  # 100 Hz
    u = np.random.default_rng(seed).uniform(-1.0, 1.0, n)
    return t, u, _held_record(t, u)


def _held_value(t: np.ndarray, u: np.ndarray, times: np.ndarray) -> np.ndarray:
    """The value of the last sample at or before each time (a plain search, no numpy helper)."""
    out = []
    for s in times:
        j = max(i for i in range(t.size) if t[i] <= s)
        out.append(u[j])
    return np.array(out)


def test_held_input_is_read_back_exactly_constant_between_samples():
    t = np.cumsum(np.r_[0.0, np.random.default_rng(2).uniform(0.005, 0.015, 40)])  # non-uniform steps
    u = np.random.default_rng(3).normal(size=t.size)
    trial = co.Trial(t, {"u": u}, interpolation={"u": "hold"})
    assert trial.interpolation == {"u": "hold"}
    between = (t[:-1, None] + np.diff(t)[:, None] * np.array([0.0, 1e-9, 0.25, 0.5, 0.999999])[None, :]).ravel()
    for method_default in ("cubic", "linear"):  # a declaration wins over the method's default
        read = known_inputs(trial, ["u"], between, method_default)[0]
        np.testing.assert_array_equal(read, _held_value(t, u, between))
    np.testing.assert_array_equal(known_inputs(trial, ["u"], t, "cubic")[0], u)  # the samples themselves

    # collocation: every mesh interval inside one sample interval, its reads the sample's value
    m = co.Model("one")
    x = m.state("x")
    uu = m.known_input("u")
    a = m.parameter("a", bounds=(0.1, 10.0), guess=1.0)
    m.set_der(x, -a * x + uu)
    fitted = co.Trial(t, {"x": np.zeros(t.size), "u": u}, interpolation={"u": "hold"})
    for method in (co.Radau(degree=3), co.Radau(degree=2, num_nodes=17), co.HermiteSimpson(refine=2), co.Midpoint()):
        layout, blocks, *_ = transcribe(co.Problem(m, fitted), method)
        mesh = layout.nodes[0][:: layout.stride]
        assert np.all(np.isin(t, mesh)), method  # a mesh point at every sample
        dyn = next(b for b in blocks if b.name == "dynamics")
        reads = dyn.data[: len(method.read_fractions)]  # one row per read place (one known input)
        expected = _held_value(t, u, 0.5 * (mesh[:-1] + mesh[1:]))
        for row in reads:
            np.testing.assert_array_equal(row, expected)


def test_held_record_clean_recovers_parameters_within_half_a_percent_from_a_poor_guess():
    t, u, x = _record()
    trial = co.Trial(t, {"pos": x[:, 0], "u": u}, interpolation={"u": "hold"}, name="held")
    result = co.solve(co.Problem(_oscillator(), trial, fit={"pos": 1e4}), start="guess")
    assert result.success, result.message
    assert result.initial_parameters == {"k": 10.0, "c": 2.0}
    assert abs(result.parameters["k"] / K - 1) < 5e-3
    assert abs(result.parameters["c"] / C - 1) < 5e-3
    assert result.info["input_interpolation"] == {"held": {"u": "hold"}}
    doc = json.loads(result.to_json())
    assert doc["info"]["input_interpolation"] == {"held": {"u": "hold"}}
    # the same record read as if the input were linear between samples: visibly biased
    linear = co.Trial(t, {"pos": x[:, 0], "u": u}, interpolation={"u": "linear"}, name="held")
    biased = co.solve(co.Problem(_oscillator(), linear, fit={"pos": 1e4}), start="guess")
    assert biased.info["input_interpolation"] == {"held": {"u": "linear"}}
    err = max(abs(result.parameters["c"] / C - 1), abs(result.parameters["k"] / K - 1))
    err_linear = max(abs(biased.parameters["c"] / C - 1), abs(biased.parameters["k"] / K - 1))
    assert err_linear > 1e-3 and err_linear > 20 * err


def test_held_record_noisy_recovers_parameters_within_three_standard_errors():
    t, u, x = _record(n=401, seed=5)
    sigma = 2e-3
    pos = x[:, 0] + np.random.default_rng(6).normal(0.0, sigma, t.size)
    trial = co.Trial(t, {"pos": pos, "u": u}, interpolation={"u": "hold"})
    result = co.solve(co.Problem(_oscillator(), trial, fit={"pos": 1 / sigma**2}), start="guess")
    assert result.success, result.message
    for name, truth in (("k", K), ("c", C)):
        se = result.standard_errors[name]
        assert 0 < se < 0.2 * truth
        assert abs(result.parameters[name] - truth) < 3 * se, (name, result.parameters[name], se)


def test_simulation_of_a_held_record_agrees_with_solve_ivp_per_interval():
    t, u, x = _record(n=201, seed=7)
    model = _oscillator()
    sim = simulate(model, X0, {"k": K, "c": C}, t, known_inputs=u[:, None], held_known_inputs=[True])
    assert sim.success and "pieces" not in sim.message  # one integration per interval, no restarts
    np.testing.assert_allclose(sim.states, x, rtol=1e-7, atol=1e-9)
    linear = simulate(model, X0, {"k": K, "c": C}, t, known_inputs=u[:, None])
    assert np.abs(linear.states - x).max() > 1e3 * np.abs(sim.states - x).max()
    with pytest.raises(co.ModelError, match="held_known_inputs has 2 elements"):
        simulate(model, X0, {"k": K, "c": C}, t, known_inputs=u[:, None], held_known_inputs=[True, False])

    # the solve's own check, redone with solve_ivp from the estimated start and parameters
    trial = co.Trial(t, {"pos": x[:, 0], "u": u}, interpolation={"u": "hold"}, name="held")
    result = co.solve(co.Problem(model, trial, fit={"pos": 1e4}))
    assert result.success
    check = result.simulation["held"]
    assert check["status"] == "ok" and "pieces" not in check["message"]
    x0 = result.trajectories["held"][["pos", "vel"]].to_numpy()[0]
    redo = _held_record(t, u, result.parameters["k"], result.parameters["c"], x0)
    expected = np.sqrt(np.mean((redo[:, 0] - x[:, 0]) ** 2)) / np.ptp(x[:, 0])
    assert check["nrmse"]["pos"] == pytest.approx(expected, rel=1e-3, abs=1e-9)


def test_multiple_shooting_respects_a_held_input():
    t, u, x = _record(n=81, seed=8)
    trial = co.Trial(t, {"pos": x[:, 0], "u": u}, interpolation={"u": "hold"})
    result = co.solve(co.Problem(_oscillator(), trial, fit={"pos": 1e4}), co.MultipleShooting(integrator=RungeKutta(8)))
    assert result.success, result.message
    assert abs(result.parameters["k"] / K - 1) < 1e-4 and abs(result.parameters["c"] / C - 1) < 1e-4


def test_bad_interpolation_names_give_errors_naming_the_column(tmp_path):
    t = np.arange(5) / 10.0
    with pytest.raises(co.DataError,
                       match=r"interpolation of signal 'u' is 'zoh'; expected one of linear, hold, smooth"):
        co.Trial(t, {"u": np.ones(5)}, interpolation={"u": "zoh"})
    with pytest.raises(co.DataError,
                       match=r"interpolation names signal 'uu', which is not in the trial \(did you mean 'u'\?\)"):
        co.Trial(t, {"u": np.ones(5)}, interpolation={"uu": "hold"})
    with pytest.raises(co.DataError, match="'u' is declared both a jump column and interpolation 'hold'"):
        co.Trial(t, {"u": np.ones(5)}, jump_columns=["u"], interpolation={"u": "hold"})
    path = tmp_path / "held.csv"
    co.Trial(t, {"pos": np.zeros(5), "u": np.ones(5)}).to_csv(path)
    with pytest.raises(co.DataError, match=rf"{path}: interpolation of column 'u' is 'spline'"):
        co.Trial.from_csv(path, interpolation={"u": "spline"})
    with pytest.raises(co.DataError, match=rf"{path}: interpolation names column 'U'"):
        co.Trial.from_csv(path, interpolation={"U": "hold"})
    read = co.Trial.from_csv(path, interpolation={"u": "hold"})
    assert read.interpolation == {"u": "hold"}
    assert read.window(0.1, None).interpolation == {"u": "hold"}
    with pytest.warns(co.ExtraColumnsWarning, match="'pos'"):
        assert read.require(["u"]).interpolation == {"u": "hold"}  # pos is dropped
    # on a signal that is not a known input of the model, or a held input estimated with noise
    on_output = co.Trial(t, {"pos": np.zeros(5), "u": np.ones(5)}, interpolation={"pos": "hold"})
    with pytest.raises(co.ProblemError, match="signal 'pos' has interpolation 'hold' but is not a known input"):
        co.Problem(_oscillator(), on_output)
    with pytest.raises(co.ProblemError, match="column 'u' is held .* errors-in-variables"):
        co.Problem(_oscillator(), read, fit={"pos": 1.0}, input_noise={"u": 0.1})


def test_a_fast_oscillation_sampled_a_few_times_a_period_is_checked_by_compiled_rk4_beyond_the_ladder():
    # ẍ = u − w² x − 2ζw ẋ at w = 420 rad/s (67 Hz) sampled at 610 Hz: RK4 needs far more than
    # 8 steps a sample for rtol = atol = 1e-9; the h⁴ trend of the ladder says how many
    w, zeta = 420.0, 0.05
    m = co.Model("fast")
    pos, vel = m.state("pos"), m.state("vel")
    u = m.known_input("u")
    m.set_der(pos, vel)
    m.set_der(vel, u - w**2 * pos - 2 * zeta * w * vel)
    t = np.arange(3001) / 610.1
    uu = 1e3 * np.random.default_rng(9).random(t.size)
    x = np.zeros((t.size, 2))
    for j in range(t.size - 1):
        x[j + 1] = solve_ivp(lambda _, z, uj=uu[j]: [z[1], uj - w**2 * z[0] - 2 * zeta * w * z[1]], (t[j], t[j + 1]),
                             x[j], method="DOP853", rtol=1e-12, atol=1e-14).y[:, -1]
    sim = simulate(m, [0.0, 0.0], [], t, known_inputs=uu[:, None], held_known_inputs=[True])
    assert sim.success
    if "RK4" in sim.message:  # without a C compiler CVODES does it (the same tolerance)
        steps = int(sim.message.split("RK4, ")[1].split(" steps")[0])
        assert 8 < steps <= 512
    np.testing.assert_allclose(sim.states, x, rtol=0, atol=10 * (1e-9 * np.abs(x).max() + 1e-9))


def test_the_delay_simulator_holds_a_held_input_over_each_sample():
    # ẋ = −2 x(t − 0.05) + u, u held at 100 Hz, x = 0.1 before the start; reference: explicit
    # Euler on a 1e-5 s step written here (error ~1e-6), the input found by the sample index
    m = co.Model("delayed_hold")
    x = m.state("x")
    u = m.known_input("u")
    m.set_der(x, -2 * m.delayed(x, 0.05) + u)
    t = np.arange(101) / 100.0
    uu = np.random.default_rng(0).random(101)
    held = simulate(m, [0.1], [], t, known_inputs=uu[:, None], held_known_inputs=[True])
    linear = simulate(m, [0.1], [], t, known_inputs=uu[:, None])
    h, lag = 1e-5, 5000
    ref = np.empty(100_001)
    ref[0] = 0.1
    for i in range(100_000):
        past = ref[i - lag] if i >= lag else 0.1
        ref[i + 1] = ref[i] + h * (-2 * past + uu[i // 1000])
    assert held.success and linear.success
    np.testing.assert_allclose(held.states[:, 0], ref[::1000], atol=1e-5)
    assert np.abs(linear.states[:, 0] - ref[::1000]).max() > 1e-3
