"""The hybrid fit's machine code: the NLP's derivative blocks compiled for a large problem
(:meth:`colloc.transcription.hybrid_fit.HybridNLP.compile`), and the model's functions compiled
for the event-driven simulations of long records (:func:`colloc.solving.hybrid.native_model`).
Both must give what the interpreted evaluation gives; the simulations are also held against the
pushed ball's reference simulator of ``test_hybrid_inputs`` (SciPy's ``solve_ivp`` with a
terminal event, restarted after each bounce, apart from the library)."""

from __future__ import annotations

import numpy as np
import pytest
import test_hybrid_inputs as pushed  # tests/ is on the path

import colloc as co
from colloc.solving import hybrid as solving
from colloc.transcription import hybrid_fit
from colloc.transcription.hybrid_fit import input_values


def test_without_a_compiler_the_model_and_the_fit_stay_interpreted(monkeypatch):
    """The fallback, run everywhere: no C compiler, so the model's functions and the NLP's
    derivative blocks are evaluated by CasADi as they are, with the same fit."""
    monkeypatch.setenv("COLLOC_NO_COMPILER", "1")
    model = pushed.model()
    assert solving.native_model(model, ["e", "c"]) is model
    monkeypatch.setattr(hybrid_fit, "COMPILE_WORK_ABOVE", 0)
    solver = co.Ipopt(simulate=False, standard_errors=False)
    res = co.solve(pushed.problem(pushed.trial(noisy=False), fit={"h": 1.0}), co.Radau(), solver=solver)
    assert res.success and "compiled" not in res.model_evaluation, res.model_evaluation
    for k, v in pushed.TRUTH.items():
        assert res.parameters[k] == pytest.approx(v, rel=5e-3)


@pytest.mark.needs_compiler
def test_the_compiled_model_simulates_as_the_interpreted_one_and_the_reference():
    t, h, bounces = pushed.record(**pushed.TRUTH)
    model = pushed.model()
    fast = solving.native_model(model, ["e", "c"])
    assert fast is not model and fast.modes[0].rhs is not model.modes[0].rhs
    assert fast.guards[0].reset is not model.guards[0].reset
    runs = {}
    for name, m in (("interpreted", model), ("compiled", fast)):
        runs[name] = co.simulate_hybrid(m, [1.2, 0.0], (t[0], t[-1]), pushed.TRUTH, t_eval=t, rtol=1e-11,
                                        atol=1e-11, inputs=input_values(t, {"push": pushed.push(t)}))
    assert np.max(np.abs(runs["compiled"].x - runs["interpreted"].x)) < 1e-12
    assert np.array_equal(runs["compiled"].event_times(), runs["interpreted"].event_times())
    assert np.max(np.abs(runs["compiled"].x[:, 0] - h)) < 2e-4
    assert np.allclose(runs["compiled"].event_times(), bounces, atol=2e-4)
    assert solving.native_model(model, ["e", "c"]) is fast  # built once


@pytest.mark.needs_compiler
def test_a_guard_of_the_mode_clock_is_left_to_python():
    clock = co.Guard("late", lambda t, x, p, mode, t0: t - t0 - 1.0, +1, with_mode=True)
    m = co.HybridModel("clocked", ["h", "v"], [co.Mode("flight", lambda t, x, p, t0: [x[1], -pushed.G])], "flight",
                       guards=[clock, co.Guard("floor", lambda t, x, p: x[0], -1,
                                               reset=lambda t, x, p: [x[0], -p["e"] * x[1]])],
                       parameters=("e",))
    fast = solving.native_model(m, ["e"])
    assert fast.guards[0] is clock and fast.guards[1] is not m.guards[1]


@pytest.mark.needs_compiler
def test_a_fit_with_its_derivative_blocks_compiled_gives_the_interpreted_estimates(monkeypatch):
    tr = pushed.trial(noisy=True)
    solver = co.Ipopt(simulate=False)
    plain = co.solve(pushed.problem(tr, input_noise={"push": pushed.SIGMA_U}), co.Radau(), solver=solver)
    assert plain.model_evaluation == "interpreted (small problem)"
    monkeypatch.setattr(hybrid_fit, "COMPILE_WORK_ABOVE", 0)
    fast = co.solve(pushed.problem(tr, input_noise={"push": pushed.SIGMA_U}), co.Radau(), solver=solver)
    assert fast.model_evaluation.startswith("compiled"), fast.model_evaluation
    assert plain.success and fast.success
    for k in pushed.TRUTH:
        assert fast.parameters[k] == pytest.approx(plain.parameters[k], rel=1e-7)
        assert fast.standard_errors[k] == pytest.approx(plain.standard_errors[k], rel=1e-5)


@pytest.mark.needs_compiler
def test_a_second_compiled_fit_in_one_process_reuses_what_the_first_compiled(monkeypatch):
    """The switching times' order constraint is one Function shared by every NLP: compiled by
    the first fit, it must not be compiled again (CasADi refuses to generate code of a loaded
    library's function)."""
    monkeypatch.setattr(hybrid_fit, "COMPILE_WORK_ABOVE", 0)
    solver = co.Ipopt(simulate=False, standard_errors=False)
    first = co.solve(pushed.problem(pushed.trial(noisy=False), fit={"h": 1.0}), co.Radau(), solver=solver)
    again = co.solve(pushed.problem(pushed.trial(noisy=False), fit={"h": 1.0}), co.Radau(), solver=solver)
    assert first.model_evaluation.startswith("compiled") and again.model_evaluation.startswith("compiled")
    assert again.parameters == pytest.approx(first.parameters, rel=1e-9)
