"""Acceptance of issue 18 for `heel-off`: held-out records made by the event-driven simulator of
``heel_off_reference`` (sympy and solve_ivp, apart from the library), 100 Hz, fitted by the
default method (``colloc identify heel-off``) from the default poor guesses (kp 600, kd 120).

* clean records: both gains within 0.5 %;
* 20 s with four heel-offs, noise θ σ 0.2°, ω σ 1°/s and on the measured platform acceleration
  σ 0.05 m/s²: both gains within 3 standard errors.  The default path (the library's hybrid
  collocation, the platform acceleration errors-in-variables at the σ read from the record, 0.049
  and 0.050 m/s² on seeds 0 and 1) measured 2026-11-29 at load 2.2–2.7: seed 0 kp 901.39 ± 4.24,
  kd 249.48 ± 0.90, 27 s; seed 1 kp 901.54 ± 4.31, kd 250.41 ± 0.91, 43 s.  (The multi-phase
  path it replaced took the input as exact: ``poor_fit``, kp 10–19 SE low, 749–820 s.)
"""

from __future__ import annotations

import heel_off_reference as reference  # tests/problems is on the path
import pytest
from colloc_problems import heel_off

TRUE = {"kp": 900.0, "kd": 250.0}


def heel_off_trial(duration: float, noisy: bool, seed: int = 0) -> heel_off.HeelOffTrial:
    sigmas = {} if noisy else {"sigma_theta_deg": 0.0, "sigma_omega_deg": 0.0, "sigma_acc": 0.0}
    time, signals, _events = reference.record(TRUE["kp"], TRUE["kd"], duration=duration, seed=seed, **sigmas)
    states = {k: v for k, v in signals.items() if k != "platform_acc"}
    return heel_off.HeelOffTrial("noisy.csv" if noisy else "clean.csv", time, states, signals["platform_acc"])


@pytest.mark.slow  # 9 s alone (2026-11-29): out of the default suite's 10 minutes
def test_the_reference_record_has_the_four_heel_offs_of_the_acceptance():
    _time, _signals, events = reference.record(duration=20.0, sigma_theta_deg=0.0, sigma_omega_deg=0.0,
                                               sigma_acc=0.0)
    assert [e[2] for e in events if e[1] == "flat"].count("toe") == 4


@pytest.mark.parametrize("duration", [4.0, pytest.param(20.0, marks=pytest.mark.slow)])
def test_clean_record_gives_the_gains_within_half_a_percent(duration):
    res = heel_off.identify_result([heel_off_trial(duration, noisy=False)])
    assert res.success, res.message
    for k, v in TRUE.items():
        assert abs(res.parameters[k] / v - 1) < 0.005, (k, res.parameters[k])


@pytest.mark.slow  # 21 s and 29 s at load 1.2-1.3, 30-45 s at load 2.2-2.7 (2026-11-29)
@pytest.mark.parametrize("seed", [0, 1])
def test_noisy_platform_record_gives_the_gains_within_three_standard_errors(seed):
    res = heel_off.identify_result([heel_off_trial(20.0, noisy=True, seed=seed)])
    assert res.success, res.message
    for k, v in TRUE.items():
        assert abs(res.parameters[k] - v) < 3 * res.standard_errors[k], (k, res.parameters[k],
                                                                         res.standard_errors[k])
    assert res.info["modes"][0].count("toe") == 4 and res.fit_verdict["verdict"] == "good"
