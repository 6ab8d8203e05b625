"""Delay margin of ẋ = J_i x(t) + J_d x(t − τ) (sweep and exact) and the fixed-step DDE integrator."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import colloc.simulation.dde as dde_module  # the modules, not the re-exported functions
import colloc.stability.delay_margin as dm_module
from colloc import CollocInputError, OptionsError
from colloc.simulation.dde import simulate_dde
from colloc.stability.delay_margin import characteristic_residual, delay_margin

METHODS = ("sweep", "exact")


# --------------------------------------------------------------------------- closed forms

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("a, b", [(-1.0, -3.0), (0.5, -2.0), (0.0, -1.0), (-0.2, -0.25), (3.0, -40.0)])
def test_scalar_closed_form(method, a, b):
    # jω = a + b e^{−jωτ}:  |jω − a| = |b|  →  ω = √(b² − a²);  cos ωτ = −a/b,  sin ωτ = −ω/b > 0 (b < 0)
    omega = math.sqrt(b * b - a * a)
    tau = math.acos(-a / b) / omega
    r = delay_margin([[a]], [[b]], method=method)
    assert r.stable_at_zero_delay
    assert r.delay_margin_s == pytest.approx(tau, rel=1e-10, abs=1e-12)
    assert r.crossing_frequency_rad_s == pytest.approx(omega, rel=1e-10)
    assert len(r.crossings) == 1
    # λ = e^{−jωτ} is the unit-modulus generalised eigenvalue of (jω − a, b)
    lam = r.crossings[0].multiplier
    assert abs(lam) == pytest.approx(1.0, abs=1e-10)
    assert (1j * omega - a) == pytest.approx(lam * b, abs=1e-9)


def test_scalar_zero_delay_margin_value():
    # a = 0, b = −1: ω = 1, τ = π/2 (the classical ẋ = −x(t − τ) bound)
    r = delay_margin([[0.0]], [[-1.0]])
    assert r.delay_margin_s == pytest.approx(math.pi / 2, rel=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_sign_convention_characteristic_matrix_is_singular(method):
    Ji = np.array([[0.0, 1.0], [4.88, -1.09]])
    Jd = np.array([[0.0, 0.0], [-8.15, -1.63]])
    r = delay_margin(Ji, Jd, method=method)
    w, tau = r.crossing_frequency_rad_s, r.delay_margin_s
    assert characteristic_residual(Ji, Jd, w, tau) < 1e-12
    assert r.crossings[0].residual < 1e-12
    # the opposite sign convention τ' = (arg λ mod 2π)/ω is not a root
    lam = r.crossings[0].multiplier
    wrong = (math.atan2(lam.imag, lam.real) % (2 * math.pi)) / w
    assert characteristic_residual(Ji, Jd, w, wrong) > 1e-3
    # thesis eq. 3.D.iv.8: λ₁ = 0.825 − 0.566j = e^{−j 0.6013}
    assert lam.real == pytest.approx(0.825, abs=6e-4) and lam.imag == pytest.approx(-0.566, abs=6e-4)
    assert -math.atan2(lam.imag, lam.real) == pytest.approx(0.6013, abs=1e-4)


# --------------------------------------------------------------------------- DDE simulation checks

def _oscillator():
    # ẍ + 0.4ẋ + x = −2 x(t − τ): stable at τ = 0, loses stability at a finite delay
    Ji = np.array([[0.0, 1.0], [-1.0, -0.4]])
    Jd = np.array([[0.0, 0.0], [-2.0, 0.0]])
    return Ji, Jd


def _envelope_ratio(Ji, Jd, tau, t_end=40.0):
    sim = simulate_dde(lambda t, x, xd: Ji @ x + Jd @ xd, [1.0, 0.0], tau, t_end, tau / 20)
    assert sim.status == "ok"
    amp = np.abs(sim.x[:, 0])
    q = sim.t.size // 4
    return amp[q:2 * q].max(), amp[3 * q:].max()


def test_oscillator_simulation_below_and_above_margin():
    Ji, Jd = _oscillator()
    r = delay_margin(Ji, Jd)
    assert r.delay_margin_s == pytest.approx(delay_margin(Ji, Jd, method="exact").delay_margin_s, abs=1e-9)
    early, late = _envelope_ratio(Ji, Jd, 0.97 * r.delay_margin_s)
    assert late < 0.95 * early  # decays just below the margin (ratio ≈ 0.89)
    early, late = _envelope_ratio(Ji, Jd, 1.03 * r.delay_margin_s)
    assert late > 1.05 * early  # grows just above it (ratio ≈ 1.12)


# --------------------------------------------------------------------------- random systems

def _random_system(rng, n):
    """Stable at zero delay, with a finite margin: strong delayed negative feedback."""
    while True:
        Ji = rng.normal(size=(n, n)) / math.sqrt(n)
        Ji -= (np.max(np.linalg.eigvals(Ji).real) - rng.uniform(-0.5, 0.5)) * np.eye(n)
        Jd = -rng.uniform(1.5, 3.0) * np.eye(n) + 0.3 * rng.normal(size=(n, n)) / math.sqrt(n)
        if rng.uniform() < 0.3:  # rank-deficient delayed part
            Jd[: n // 2] = 0.0
            Jd[n // 2:, : n // 2] -= 2.0 * np.eye(n - n // 2, n // 2)
        if np.max(np.linalg.eigvals(Ji + Jd).real) < -0.05:
            return Ji, Jd


@pytest.mark.parametrize("seed", range(12))
def test_random_systems_sweep_and_exact_agree(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    Ji, Jd = _random_system(rng, n)
    s = delay_margin(Ji, Jd, method="sweep")
    e = delay_margin(Ji, Jd, method="exact")
    assert s.stable_at_zero_delay and e.stable_at_zero_delay
    assert s.delay_margin_s is not None and e.delay_margin_s is not None
    assert s.delay_margin_s == pytest.approx(e.delay_margin_s, abs=1e-6)
    assert s.crossing_frequency_rad_s == pytest.approx(e.crossing_frequency_rad_s, abs=1e-6)
    # the full sets of crossings agree too
    assert len(s.crossings) == len(e.crossings)
    for cs, ce in zip(s.crossings, e.crossings):
        assert cs.delay_s == pytest.approx(ce.delay_s, abs=1e-6)
        assert max(cs.residual, ce.residual) < 1e-9
    assert not s.refinement_limited


def test_generic_random_systems_agree_including_infinite_margins():
    rng = np.random.default_rng(2024)
    finite = infinite = 0
    for _ in range(40):
        n = int(rng.integers(1, 6))
        Ji = rng.normal(size=(n, n))
        Jd = rng.normal(size=(n, n)) * rng.uniform(0.2, 3.0)
        Ji -= (np.max(np.linalg.eigvals(Ji + Jd).real) + rng.uniform(0.05, 1.0)) * np.eye(n)
        s, e = delay_margin(Ji, Jd), delay_margin(Ji, Jd, method="exact")
        if e.delay_margin_s is None:
            assert s.delay_margin_s is None
            infinite += 1
        else:
            assert s.delay_margin_s == pytest.approx(e.delay_margin_s, abs=1e-6)
            finite += 1
    assert finite >= 5 and infinite >= 5


def test_imaginary_axis_eigenvalues_of_ji_and_singular_jd():
    # undamped J_i (poles ±j on the sweep axis), J_d with a zero row (one infinite λ)
    Ji = np.array([[0.0, 1.0], [-1.0, 0.0]])
    Jd = np.array([[0.0, 0.0], [-0.5, -1.0]])
    s, e = delay_margin(Ji, Jd), delay_margin(Ji, Jd, method="exact")
    assert s.delayed_rank == 1
    assert s.delay_margin_s == pytest.approx(e.delay_margin_s, abs=1e-9)
    assert characteristic_residual(Ji, Jd, s.crossing_frequency_rad_s, s.delay_margin_s) < 1e-10
    # J_i singular at ω = 0 is handled as well
    Ji0 = np.array([[0.0, 1.0], [0.0, 0.0]])
    Jd0 = np.array([[0.0, 0.0], [-1.0, -1.5]])
    s0, e0 = delay_margin(Ji0, Jd0), delay_margin(Ji0, Jd0, method="exact")
    assert s0.delay_margin_s == pytest.approx(e0.delay_margin_s, abs=1e-9)


def test_mid_size_system_agrees_and_a_large_sweep_finds_the_crossing():
    # the time of a 36-state sweep (the spine's size) is reported by benchmarks/spine_stability.py
    rng = np.random.default_rng(11)
    Ji, Jd = _random_system(rng, 10)
    s, e = delay_margin(Ji, Jd), delay_margin(Ji, Jd, method="exact")
    assert s.delay_margin_s == pytest.approx(e.delay_margin_s, abs=1e-6)
    Ji, Jd = _random_system(np.random.default_rng(5), 36)
    s = delay_margin(Ji, Jd)
    assert s.delay_margin_s is not None and s.crossings[0].residual < 1e-10


@pytest.mark.slow
def test_n36_sweep_matches_exact():
    Ji, Jd = _random_system(np.random.default_rng(5), 36)
    s, e = delay_margin(Ji, Jd), delay_margin(Ji, Jd, method="exact")
    assert s.delay_margin_s == pytest.approx(e.delay_margin_s, abs=1e-6)
    assert len(s.crossings) == len(e.crossings)


# --------------------------------------------------------------------------- special cases

@pytest.mark.parametrize("method", METHODS)
def test_stable_for_every_delay_returns_none(method):
    rng = np.random.default_rng(3)
    n = 4
    S = rng.normal(size=(n, n))
    Ji = -5.0 * np.eye(n) + (S - S.T)          # normal, spectrum on Re = −5: σ_min(jωI − J_i) ≥ 5
    Jd = rng.normal(size=(n, n))
    Jd *= 4.0 / np.linalg.norm(Jd, 2)          # ‖J_d‖₂ = 4 < 5: |λ| > 1 at every ω
    r = delay_margin(Ji, Jd, method=method)
    assert r.stable_at_zero_delay and r.delay_margin_s is None and r.crossing_frequency_rad_s is None
    assert r.stable_for_all_delays and r.crossings == ()
    assert r.to_dict()["delay_margin_s"] is None


def test_no_delayed_term_is_delay_independent():
    r = delay_margin([[-1.0, 2.0], [0.0, -3.0]], np.zeros((2, 2)))
    assert r.delay_margin_s is None and r.delayed_rank == 0 and r.stable_at_zero_delay


@pytest.mark.parametrize("method", METHODS)
def test_unstable_at_zero_delay_returns_zero(method):
    r = delay_margin([[0.0, 1.0], [4.88, -1.09]], [[0.0, 0.0], [0.0, -1.63]], method=method)
    assert not r.stable_at_zero_delay
    assert r.max_real_eigenvalue_zero_delay > 0
    assert r.delay_margin_s == 0.0 and r.crossing_frequency_rad_s is None
    # marginal (eigenvalue exactly on the axis) counts as not stable
    assert delay_margin([[0.0]], [[0.0]]).delay_margin_s == 0.0


def test_to_dict_has_contract_keys_first():
    d = delay_margin([[-1.0]], [[-3.0]]).to_dict()
    assert list(d)[:3] == ["delay_margin_s", "crossing_frequency_rad_s", "stable_at_zero_delay"]


@pytest.mark.parametrize("Ji, Jd, match", [
    ([[1.0, 2.0]], [[1.0, 2.0]], "not square"),
    ([[1.0]], [[1.0, 0.0], [0.0, 1.0]], "J_i is 1×1 but J_d is 2×2"),
    ([[np.nan]], [[1.0]], "NaN"),
    ([["a"]], [[1.0]], "not a numeric"),
    ([1.0, 2.0], [1.0, 2.0], "2-D"),
])
def test_bad_matrices(Ji, Jd, match):
    with pytest.raises(CollocInputError, match=match):
        delay_margin(Ji, Jd)


def test_bad_method():
    with pytest.raises(OptionsError, match="method"):
        delay_margin([[-1.0]], [[-3.0]], method="newton")


# --------------------------------------------------------------------------- simulate_dde

def test_dde_piecewise_polynomial_solution_is_exact():
    # ẋ = −x(t − 1), x = 1 for t ≤ 0: x = 1 − t + (t−1)²/2 − (t−2)³/6 on [2, 3] (cubic: RK4 +
    # Hermite history reproduce it to rounding)
    sim = simulate_dde(lambda t, x, xd: -xd, [1.0], 1.0, 3.0, 0.25)
    assert sim.status == "ok" and sim.t[-1] == 3.0
    expected = 1 - 3.0 + 2.0**2 / 2 - 1.0 / 6
    assert sim.x[-1, 0] == pytest.approx(expected, abs=1e-13)
    t, x, status, message = sim  # unpacks
    assert status == "ok" and x.shape == (t.size, 1) and "step" in message


def test_dde_fourth_order_convergence():
    def rhs(t, x, xd):
        return np.array([-2.0 * xd[0] + np.sin(x[0])])

    def run(k):
        return simulate_dde(rhs, lambda t: np.array([np.cos(3 * t)]), 0.5, 4.0, 0.5 / k).x[-1, 0]

    ref = run(400)
    e1, e2 = abs(run(10) - ref), abs(run(20) - ref)
    assert 10.0 < e1 / e2 < 24.0  # ≈ 16 for a fourth-order method


def test_dde_step_is_a_whole_fraction_of_the_delay_and_last_step_is_shortened():
    sim = simulate_dde(lambda t, x, xd: -xd, [1.0], 0.3, 1.0, 0.07)
    h = sim.t[1] - sim.t[0]
    assert 0.3 / h == pytest.approx(round(0.3 / h)) and h <= 0.07
    assert sim.t[-1] == 1.0


def test_dde_zero_delay_is_an_ode():
    sim = simulate_dde(lambda t, x, xd: -x + 0 * xd, [1.0], 0.0, 1.0, 0.01)
    assert sim.x[-1, 0] == pytest.approx(math.exp(-1.0), abs=1e-9)


def test_dde_divergence_is_reported():
    sim = simulate_dde(lambda t, x, xd: 5.0 * xd, [1.0], 0.1, 100.0, 0.01, max_norm=1e6)
    assert sim.status == "diverged" and sim.t[-1] < 100.0
    assert np.all(np.isfinite(sim.x)) and "exceeded" in sim.message


def test_dde_bad_options():
    with pytest.raises(OptionsError):
        simulate_dde(lambda t, x, xd: -xd, [1.0], -1.0, 1.0, 0.1)
    with pytest.raises(OptionsError):
        simulate_dde(lambda t, x, xd: -xd, [1.0], 1.0, 1.0, 0.0)
    with pytest.raises(OptionsError, match="rhs returned"):
        simulate_dde(lambda t, x, xd: np.zeros(3), [1.0, 2.0], 1.0, 1.0, 0.1)


# --------------------------------------------------------------------------- documentation

@pytest.mark.parametrize("module", [dm_module, dde_module])
def test_public_functions_have_numpy_parameters_sections(module):
    for name in module.__all__:
        obj = getattr(module, name)
        assert (obj.__doc__ or "").strip(), f"{name} undocumented"
        if inspect.isfunction(obj):
            assert "Parameters\n    ----------" in obj.__doc__, name
            for p in inspect.signature(obj).parameters:
                assert p in obj.__doc__, f"{name}: {p} not documented"
