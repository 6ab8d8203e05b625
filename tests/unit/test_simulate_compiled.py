"""The simulation check's RK4 run as compiled C (colloc.simulation.rk4) against an
independent reference: SciPy's ``solve_ivp`` (DOP853 at 1e-12, restarted at every sample) on the two-link
equations of motion written here in NumPy, the platform acceleration linear between the
samples."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import colloc as co
from colloc.simulation import rk4
from colloc_problems import two_link as tl



@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLOC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _two_link_rhs(t, x, time, acc, K, b):
    """ẋ of the closed-loop two-link model (docs/contracts.md §2), T = −K x, written out by hand."""
    qa, qh, wa, wh = x
    a = np.interp(t, time, acc)
    Ta, Th = -K @ x
    lL, dL, dT, mL, mT, IL, IT, g = (b[k] for k in ("l_L", "d_L", "d_T", "m_L", "m_T", "I_L", "I_T", "g"))
    ch, sh = np.cos(qh), np.sin(qh)
    M = np.array([[IL + IT + dL**2 * mL + mT * (dT**2 + 2 * dT * lL * ch + lL**2), IT + dT * mT * (dT + lL * ch)],
                  [IT + dT * mT * (dT + lL * ch), IT + dT**2 * mT]])
    F = np.array([Ta + a * (dL * mL + lL * mT) * np.cos(qa) + a * dT * mT * np.cos(qa + qh)
                  + g * (dL * mL + lL * mT) * np.sin(qa) + dT * g * mT * np.sin(qa + qh)
                  + dT * lL * mT * (2 * wa * wh + wh**2) * sh,
                  Th + a * dT * mT * np.cos(qa + qh) + dT * g * mT * np.sin(qa + qh) - dT * lL * mT * wa**2 * sh])
    return np.concatenate([[wa, wh], np.linalg.solve(M, F)])


def _record(duration: float):
    time = np.arange(0.0, duration + 1e-9, 0.01)  # 100 Hz
    rng = np.random.default_rng(7)
    acc = sum(0.3 * np.sin(2 * np.pi * f * time + ph) for f, ph in zip((0.2, 0.45, 1.1, 2.3), rng.uniform(0, 6, 4)))
    return time, acc


@pytest.mark.needs_compiler
def test_compiled_rk4_matches_an_independent_reference(cache, monkeypatch):
    monkeypatch.setattr(rk4, "COMPILE_ABOVE", 0)  # a short record: compile anyway
    time, acc = _record(3.0)
    x0 = np.array([0.02, -0.01, 0.0, 0.05])
    sim = co.simulate(tl.model(), x0, tl.K_TRUE.ravel(), time, known_inputs=acc[:, None])
    assert sim.success and "RK4" in sim.message, sim.message
    assert list(cache.glob("colloc_colloc_rk4_*.so")), "the compiled loop was not built"
    # the input is linear between samples, with a kink at each: the reference restarts there
    ref = [x0]
    for k in range(time.size - 1):
        piece = solve_ivp(_two_link_rhs, (time[k], time[k + 1]), ref[-1], method="DOP853", rtol=1e-12, atol=1e-12,
                          args=(time, acc, tl.K_TRUE, tl.BODY))
        assert piece.success
        ref.append(piece.y[:, -1])
    ref = np.array(ref)
    # the step-doubling acceptance bounds the global error by rtol·|x| + atol = 1e-9·(|x| + 1)
    # (a factor 10 of slack for the estimate itself, as for the virtual machine's RK4)
    assert np.all(np.abs(sim.states - ref) <= 10 * 1e-9 * (np.abs(ref) + 1))


def _virtual_machine_then(monkeypatch, duration: float):
    """The virtual machine's simulation of a short record, then the arguments to simulate it
    again with compiling allowed however short the record."""
    time, acc = _record(duration)
    args = (tl.model(), np.array([0.03, 0.0, -0.02, 0.0]), tl.K_TRUE.ravel(), time)
    monkeypatch.setattr(rk4, "COMPILE_ABOVE", np.inf)
    vm = co.simulate(*args, known_inputs=acc[:, None])
    monkeypatch.setattr(rk4, "COMPILE_ABOVE", 0)
    return vm, args, {"known_inputs": acc[:, None]}


@pytest.mark.needs_compiler
def test_compiled_and_virtual_machine_agree_and_the_cache_is_reused(cache, monkeypatch):
    vm, args, inputs = _virtual_machine_then(monkeypatch, 2.0)
    first = co.simulate(*args, **inputs)
    assert first.message == vm.message
    np.testing.assert_allclose(first.states, vm.states, rtol=0, atol=1e-13)

    def no_compiler(*a, **k):
        raise AssertionError("compiled again instead of loading the cached library")

    monkeypatch.setattr(subprocess, "Popen", no_compiler)
    monkeypatch.setattr(subprocess, "run", no_compiler)
    again = co.simulate(*args, **inputs)
    np.testing.assert_array_equal(again.states, first.states)


@pytest.mark.parametrize("compiler", ["false", "/nonexistent/cc"])
def test_no_working_compiler_falls_back_silently(cache, monkeypatch, compiler):
    # filterwarnings = error: a CompilerWarning here would fail the test
    vm, args, inputs = _virtual_machine_then(monkeypatch, 1.0)
    monkeypatch.setenv("CC", compiler)
    sim = co.simulate(*args, **inputs)
    assert sim.success and sim.message == vm.message
    np.testing.assert_array_equal(sim.states, vm.states)
    assert not list(cache.glob("colloc_colloc_rk4_*.so"))
