"""Timed hybrid problems (time events, timed modes): phases between events whose times move
with the parameters, fitted by ``co.solve(HybridProblem(...), co.Radau())``.

The model is not fes-muscle: a first-order system (a heated body, a dosed compartment)
``ẋ = −a·x + b·on``, switched on for ``d`` seconds by doses given at known times ``t_k`` and
taking effect after a delay ``δ``; a dose while it is on starts a new ``d``.  The records are
made by SciPy's ``solve_ivp`` on the schedule written out by hand (not by the library's
simulator or its fit).
"""

from __future__ import annotations

import itertools

import casadi as ca
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import colloc as co

TRUE = {"a": 3.0, "b": 6.0, "d": 0.15, "delay": 0.04}
GUESS = {"a": 2.0, "b": 4.0, "d": 0.10, "delay": 0.06}
#: doses (s): the third comes while the second is still on (it cuts it short)
DOSES = (0.2, 0.8, 0.88, 1.5)


def _model(doses=DOSES, times=None, waiting: bool = False) -> co.HybridModel:
    """``waiting``: the record starts in a mode "wait" (off before any dose), so that "off" is
    entered only when a dose's d ends."""
    off = co.Mode("off", lambda t, x, p, t0: [-p["a"] * x[0]])
    on = co.Mode("on", lambda t, x, p, t0: [-p["a"] * x[0] + p["b"]], duration=lambda p: p["d"], then="off")
    wait = co.Mode("wait", lambda t, x, p, t0: [-p["a"] * x[0]])
    dose = co.TimeEvent("dose", times or (lambda p: [t + p["delay"] for t in doses]), target="on")
    return co.HybridModel("dosing", ["x"], [off, on, *([wait] if waiting else [])], "wait" if waiting else "off",
                          time_events=[dose], parameters=["a", "b", "d", "delay"])


def _schedule(p: dict, t_end: float) -> list[tuple[float, float]]:
    """The on-intervals by hand: each dose on at t_k + δ for d, cut by the next dose's start."""
    starts = [t + p["delay"] for t in DOSES]
    return [(s, min(s + p["d"], nxt)) for s, nxt in zip(starts, [*starts[1:], t_end])]


def _record(p: dict, time: np.ndarray) -> np.ndarray:
    """x at ``time`` from x(0) = 0 by solve_ivp, integrated piece by piece between the switches."""
    on = _schedule(p, time[-1])
    cuts = sorted({time[0], time[-1], *[t for ab in on for t in ab if time[0] < t < time[-1]]})
    out, x = np.empty(time.size), 0.0
    for lo, hi in itertools.pairwise(cuts):
        level = p["b"] if any(a <= lo < b for a, b in on) else 0.0

        def rhs(t, y, level=level):
            return [-p["a"] * y[0] + level]

        sel = (time >= lo) & (time <= hi)
        sol = solve_ivp(rhs, (lo, hi), [x], t_eval=time[sel], rtol=1e-12, atol=1e-14, method="DOP853")
        out[sel] = sol.y[0]
        x = solve_ivp(rhs, (lo, hi), [x], rtol=1e-12, atol=1e-14, method="DOP853").y[0, -1]
    return out


TIME = np.arange(0, 2001) / 1000.0


def _problem(x, **options) -> co.HybridProblem:
    trial = co.Trial(TIME, {"x": x}, name="doses")
    return co.HybridProblem(_model(), trial, guess=GUESS, bounds={"a": (0.1, 100), "b": (0.1, 100),
                                                                  "d": (0.01, 1.0), "delay": (0.0, 0.2)},
                            initial_state={"x": 0.0}, known_initial_state=True, max_step=0.004, **options)


def test_the_schedule_by_hand_is_the_library_simulators():
    # two independent codes of the same model agree (the generator is not the code under test)
    sim = co.simulate_hybrid(_model(), [0.0], (0.0, 2.0), TRUE, t_eval=TIME, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sim.x[:, 0], _record(TRUE, TIME), atol=1e-9)


def test_clean_record_recovers_every_parameter_from_a_poor_guess():
    res = co.solve(_problem(_record(TRUE, TIME)), co.Radau(degree=3), solver=co.Ipopt(tol=1e-10))
    assert res.success and res.method == "hybrid-radau3"
    # how the model was evaluated is said, as by every method
    assert res.model_evaluation.startswith("interpreted (") and res.timings["compile_s"] == 0.0
    assert f"model {res.model_evaluation}" in res.summary()
    for name, value in TRUE.items():
        assert abs(res.parameters[name] / value - 1) < 1e-3, (name, res.parameters[name])
    # the phases at the estimate: off, then on/off per dose, the third dose cutting the second short
    modes = res.info["phases"]["doses"]["modes"]
    assert modes == ["off", "on", "off", "on", "on", "off", "on", "off"]
    starts = res.info["phases"]["doses"]["starts"]
    np.testing.assert_allclose(starts[1], DOSES[0] + TRUE["delay"], atol=1e-6)
    assert res.simulation["doses"]["same_modes"] and res.simulation["doses"]["nrmse"]["x"] < 1e-5


def test_noisy_record_truth_within_3_standard_errors_and_noise_judged_by_the_declared_sigma():
    sigma = 0.01
    x = _record(TRUE, TIME) + np.random.default_rng(3).normal(0.0, sigma, TIME.size)
    res = co.solve(_problem(x, noise={"x": sigma}, units={"a": "1/s", "x": "K"}), co.Radau(degree=3))
    assert res.success, res.message
    for name, value in TRUE.items():
        assert abs(res.parameters[name] - value) < 3 * res.standard_errors[name], name
    assert 0.8 < res.info["residual_std"] / sigma < 1.2
    assert res.fit_verdict["verdict"] == "good" and res.info["noise"]["doses"] == {"x": sigma}
    assert res.units["a"] == "1/s"


def test_the_standard_errors_match_a_finite_difference_gauss_newton_on_the_independent_generator():
    # cov = s² (JᵀJ)⁻¹ with J the sensitivities of the generator's samples (central differences):
    # an estimate independent of the collocation, its implicit differentiation and its covariance
    sigma = 0.01
    x = _record(TRUE, TIME) + np.random.default_rng(5).normal(0.0, sigma, TIME.size)
    res = co.solve(_problem(x), co.Radau(degree=3), solver=co.Ipopt(tol=1e-10))
    p = dict(res.parameters)
    J = []
    for name in TRUE:
        step = 1e-6 * abs(p[name])
        J.append((_record({**p, name: p[name] + step}, TIME) - _record({**p, name: p[name] - step}, TIME)) / (2 * step))
    J = np.array(J).T
    r = _record(p, TIME) - x
    s2 = r @ r / (TIME.size - len(TRUE))
    se = np.sqrt(np.diag(s2 * np.linalg.inv(J.T @ J)))
    np.testing.assert_allclose([res.standard_errors[n] for n in TRUE], se, rtol=0.02)


def test_event_times_that_are_not_affine_in_the_parameters_are_refused_by_name():
    model = _model(times=lambda p: [t + p["delay"] ** 2 for t in DOSES])
    trial = co.Trial(TIME, {"x": np.zeros(TIME.size)})
    problem = co.HybridProblem(model, trial, guess=GUESS, known_initial_state=True)
    with pytest.raises(co.ModelError, match="dose.*affine"):
        co.solve(problem, co.Radau())


def test_a_timed_problem_refuses_what_does_not_apply():
    trial = co.Trial(TIME, {"x": np.zeros(TIME.size)})
    with pytest.raises(co.ProblemError, match="sequence"):
        co.HybridProblem(_model(), trial, guess=GUESS, sequence=["off", "on"])
    with pytest.raises(co.ProblemError, match="known_initial_state"):
        co.solve(co.HybridProblem(_model(), trial, guess=GUESS), co.Radau())
    with pytest.raises(co.ProblemError, match="one model per trial"):
        co.HybridProblem([_model(), _model()], trial, guess=GUESS)
    with pytest.raises(co.ProblemError, match="noise"):
        co.HybridProblem(_model(), trial, guess=GUESS, noise={"x": -1.0})
    with pytest.raises(co.OptionsError, match="Radau"):
        co.solve(co.HybridProblem(_model(), trial, guess=GUESS, known_initial_state=True), co.Midpoint())


def test_phases_change_structure_across_solves():
    # at the guess the first two doses stay on until the next one (d = 0.33 s > the gaps of
    # 0.3 s): the structure constraints hold each solve to its phases, and the record is laid
    # again until the truth's phases (on for 0.2 s, then off) are reached
    doses = (0.2, 0.5, 0.8)
    time = np.arange(0, 1201) / 1000.0
    model = _model(doses)
    truth = {**TRUE, "d": 0.2, "delay": 0.02}
    x = co.simulate_hybrid(model, [0.0], (0.0, time[-1]), truth, t_eval=time, rtol=1e-12, atol=1e-14).x[:, 0]
    guess = {"a": 2.5, "b": 5.0, "d": 0.33, "delay": 0.03}
    at_guess = co.simulate_hybrid(model, [0.0], (0.0, time[-1]), guess)
    assert [seg[2] for seg in at_guess.segments if seg[1] > seg[0]] == ["off", "on", "on", "on", "off"]
    problem = co.HybridProblem(model, co.Trial(time, {"x": x}, name="r"), guess=guess,
                               bounds={"d": (0.01, 1.0), "delay": (0.0, 0.1)}, known_initial_state=True,
                               max_step=0.004)
    res = co.solve(problem, co.Radau(degree=3), solver=co.Ipopt(tol=1e-10))
    assert res.success, res.message
    assert res.info["phases"]["r"]["modes"] == ["off", "on", "off", "on", "off", "on", "off"]
    assert res.info["rounds"] >= 3
    for name, value in truth.items():
        assert abs(res.parameters[name] / value - 1) < 1e-4, (name, res.parameters[name])


def test_a_phase_in_a_mode_the_rates_were_not_built_for_is_named():
    from colloc.transcription.hybrid_events import TimedClock, UnlaidMode, timed_layout

    model = _model(waiting=True)
    scale = np.ones(4)
    clock = TimedClock(model, ["a", "b", "d", "delay"], scale)
    q = np.array([GUESS[n] for n in ("a", "b", "d", "delay")])
    chain = co.IntervalChain(ca.Function("f", [ca.SX.sym("x"), ca.SX.sym("t"), ca.SX.sym("data", 6),
                                               ca.SX.sym("p", 4)], [0]), 3)
    with pytest.raises(UnlaidMode) as err:
        timed_layout(clock, TIME, q, 0.004, chain, ["wait", "on"], lambda t: None, lambda t: np.zeros((1, len(t))),
                     np.ones(1))
    assert err.value.mode == "off"


def test_a_timed_mode_that_does_not_last_is_refused_by_name():
    trial = co.Trial(TIME, {"x": np.zeros(TIME.size)}, name="r")
    problem = co.HybridProblem(_model(), trial, guess={**GUESS, "d": -0.1}, known_initial_state=True)
    with pytest.raises(co.ModelError, match="'on' lasts"):
        co.solve(problem, co.Radau())


def test_the_dosing_example_runs_in_few_lines_and_recovers_the_truth():
    import ast
    import io
    import runpy
    from contextlib import redirect_stdout
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "dosing.py"
    source = path.read_text(encoding="utf-8")
    doc = ast.get_docstring(ast.parse(source), clean=False) or ""
    code = [ln for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    assert len(code) - len([ln for ln in doc.splitlines() if ln.strip()]) <= 30
    out = io.StringIO()
    with redirect_stdout(out):
        ns = runpy.run_path(str(path), run_name="__main__")
    res = ns["result"]
    assert res.success and "phases: off on off on on off on off" in out.getvalue()
    for name, value in ns["truth"].items():
        assert abs(res.parameters[name] - value) < 3 * res.standard_errors[name], name
