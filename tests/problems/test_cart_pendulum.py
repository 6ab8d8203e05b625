"""The n-link cart pendulum (colloc_problems.cart_pendulum): its hand-derived equations of
motion against SymPy's Kane's method (benchmarks/cart_pendulum_vs_opty.py builds that model
for opty) and against energy conservation without force."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import colloc as co
from colloc_problems import cart_pendulum as cp

ROOT = Path(__file__).resolve().parents[2]


def _kane(n: int, bodies: str):
    spec = importlib.util.spec_from_file_location("cart_bench", ROOT / "benchmarks" / "cart_pendulum_vs_opty.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench.kane_cart_pendulum(n, bodies)


@pytest.mark.parametrize("form", cp.FORMS)
@pytest.mark.parametrize("n, bodies", [(1, "point"), (2, "point"), (3, "point"), (2, "rod"), (3, "rod")])
def test_equations_match_kanes_method(n, bodies, form):
    import sympy as sm

    sym = _kane(n, bodies)
    names = list(sym["params"])
    qd = sm.symbols(f"qd_0:{n + 1}")
    ud = sm.symbols(f"ud_0:{n + 1}")
    M = sym["mass_matrix"]
    # Kane's dynamic rows M·u̇ − forcing and the kinematic rows q̇ − u, as plain symbols
    rows = sm.Matrix([qd[i] - sym["u"][i] for i in range(n + 1)] + list(M * sm.Matrix(ud) - sym["forcing"]))
    args = [*sym["q"], *sym["u"], *qd, *ud, sym["F"], *(sym["params"][k] for k in names)]
    kane = sm.lambdify(args, rows, modules="numpy")

    model = cp.model(n, bodies, form=form)
    assert model.element_names("parameter") == names  # g, m_0 … m_n, l_0 … l_{n-1}
    residual = model.functions()["residual"]
    rng = np.random.default_rng(n + 10 * len(bodies))
    for _ in range(5):
        x = rng.uniform(-3.0, 3.0, 2 * n + 2)
        xdot = rng.uniform(-5.0, 5.0, 2 * n + 2)
        force = rng.uniform(-20.0, 20.0)
        p = rng.uniform(0.2, 3.0, len(names))
        mine = np.array(residual(xdot, x, [], [force], p, 0.0)).ravel()
        ref = np.array(kane(*x, *xdot, force, *p), dtype=float).ravel()
        np.testing.assert_allclose(mine, ref, rtol=1e-11, atol=1e-10 * np.abs(ref).max())


@pytest.mark.parametrize("bodies", ["point", "rod"])
def test_energy_is_conserved_without_force(bodies):
    n = 4
    params = cp.true_parameters(n)
    params.update({"m_2": 0.8, "l_1": 0.4, "m_0": 2.0})  # unequal links
    rng = np.random.default_rng(3)
    x0 = np.concatenate([[0.2], rng.uniform(-1.5, 1.5, n), [0.5], rng.uniform(-2.0, 2.0, n)])
    time = np.linspace(0.0, 4.0, 401)
    sim = co.simulate(cp.model(n, bodies), x0, params, time, known_inputs=np.zeros((time.size, 1)),
                      rtol=1e-11, atol=1e-11)
    assert sim.success, sim.message
    assert np.ptp(sim.states[:, 1 : n + 1]) > 1.0  # large motion: the links swing through
    E = cp.energy(sim.states, params, n, bodies)
    kinetic_scale = np.abs(E - cp.energy(np.concatenate([sim.states[:, : n + 1], 0 * sim.states[:, n + 1 :]], axis=1),
                                         params, n, bodies)).max()
    assert kinetic_scale > 1.0
    assert np.abs(E - E[0]).max() < 1e-7 * kinetic_scale


def test_cart_force_does_work():
    """With a force the energy changes by the work ∫F·ẋ dt (trapezoidal on a fine grid)."""
    n = 2
    params = cp.true_parameters(n)
    time = np.linspace(0.0, 2.0, 4001)
    force = 3.0 * np.sin(2.0 * time)
    x0 = np.array([0.0, np.pi - 0.3, np.pi + 0.2, 0.0, 0.0, 0.0])
    sim = co.simulate(cp.model(n), x0, params, time, known_inputs=force[:, None], rtol=1e-11, atol=1e-11)
    assert sim.success, sim.message
    E = cp.energy(sim.states, params, n)
    power = force * sim.states[:, n + 1]
    work = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * np.diff(time))])
    assert np.abs(work).max() > 0.1
    np.testing.assert_allclose(E - E[0], work, atol=1e-5)


def test_trial_and_problem_have_every_state():
    n = 2
    trial = cp.simulate_trial(n, duration=1.0, noise_std=0.01, seed=4)
    problem = cp.problem([trial], n)
    assert set(problem.model.element_names("state")) <= set(trial.signals)
    assert len(problem.model.element_names("parameter")) == 2 * n + 2
    assert trial.signals["q_1"][0] == pytest.approx(np.pi, abs=0.12)


def test_identifies_every_parameter_from_noisy_100hz_data():
    """Two links, 10 s at 100 Hz, σ = 0.01 noise on every state, every parameter started 25 %
    off (alternately low and high): all six within 0.5 % (true values from the generator)."""
    n = 2
    true = cp.true_parameters(n)
    trial = cp.simulate_trial(n, duration=10.0, noise_std=0.01, seed=1)
    guess = {k: v * (1.25 if i % 2 else 0.8) for i, (k, v) in enumerate(true.items())}
    result = co.solve(cp.problem([trial], n, noise_std=0.01), co.Midpoint(), guess=guess,
                      solver=co.Ipopt(simulate=False, max_iter=100))
    assert result.success, result.status
    for name, value in true.items():
        assert abs(result.parameters[name] - value) < 5e-3 * value, (name, result.parameters[name])
        assert result.standard_errors[name] < 5e-3 * value


@pytest.mark.parametrize("n, bodies, form", [(0, "point", "lagrange"), (2, "ball", "recursive"),
                                             (1.5, "point", "recursive"), (2, "rod", "newton")])
def test_bad_arguments(n, bodies, form):
    with pytest.raises(ValueError, match="cart_pendulum"):
        cp.model(n, bodies, form=form)
