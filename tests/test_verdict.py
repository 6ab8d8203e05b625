"""The fit verdict: residuals against the declared noise, on both sides of the threshold."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import solve_ivp

import colloc as co
from colloc.cli import main
from colloc.results.verdict import CHI2_POOR, fit_verdict
from colloc_problems import cip, pendulum, two_link

QUIET = co.Ipopt(print_level=0)


# ---- the statistics alone ----------------------------------------------------------------
def _frame(**columns):
    n = len(next(iter(columns.values())))
    return pd.DataFrame(columns, index=pd.Index(np.arange(n) * 0.01, name="time"))


def test_reduced_chi2_and_whiteness_of_known_residuals():
    rng = np.random.default_rng(7)
    sigma = 0.2
    white = sigma * rng.standard_normal(4000)
    big = 3.0 * sigma * rng.standard_normal(4000)
    v = fit_verdict({"t": _frame(a=white, b=big)}, {"a": sigma**-2, "b": sigma**-2}, num_parameters=2)
    # expected values straight from the definitions
    assert v["signals"]["a"]["chi2_red"] == pytest.approx(np.mean(white**2) / sigma**2, rel=1e-12)
    assert v["signals"]["b"]["chi2_red"] == pytest.approx(np.mean(big**2) / sigma**2, rel=1e-12)
    assert v["chi2_red"] == pytest.approx((np.sum(white**2) + np.sum(big**2)) / sigma**2 / (8000 - 2), rel=1e-12)
    d = white - white.mean()
    assert v["signals"]["a"]["lag1_autocorrelation"] == pytest.approx(d[1:] @ d[:-1] / (d @ d), rel=1e-10)
    assert v["signals"]["a"]["whiteness"] == "white" and v["signals"]["a"]["verdict"] == "good"
    assert v["signals"]["b"]["verdict"] == "poor_fit"  # 3σ: chi² ≈ 9
    assert v["verdict"] == "poor_fit" and "'b'" in v["reason"] and "white" in v["reason"]


def test_correlated_residuals_are_called_coloured():
    rng = np.random.default_rng(3)
    e = rng.standard_normal(3000)
    ar = np.zeros_like(e)
    for k in range(1, e.size):
        ar[k] = 0.9 * ar[k - 1] + e[k]
    ar *= 0.1 / ar.std()
    v = fit_verdict({"t": _frame(a=ar)}, {"a": 1 / 0.1**2})
    assert v["signals"]["a"]["whiteness"] == "coloured"
    assert v["signals"]["a"]["ljung_box_p"] < 1e-6
    assert v["verdict"] == "good" and "correlated" in v["reason"]  # within 2σ: reported, not failed


def test_threshold_sits_at_twice_sigma():
    n = 1000
    r_in = np.full(n, 1.95) * np.tile([1, -1], n // 2)  # RMS 1.95 σ
    r_out = np.full(n, 2.05) * np.tile([1, -1], n // 2)  # RMS 2.05 σ
    assert fit_verdict({"t": _frame(a=r_in)}, {"a": 1.0})["verdict"] == "good"
    assert fit_verdict({"t": _frame(a=r_out)}, {"a": 1.0})["verdict"] == "poor_fit"
    assert CHI2_POOR == 4.0


def test_bad_threshold_is_refused():
    with pytest.raises(co.OptionsError, match="chi2_poor"):
        fit_verdict({"t": _frame(a=np.zeros(5))}, {"a": 1.0}, chi2_poor=0.5)


def test_nothing_fitted_is_not_applicable():
    v = fit_verdict({"t": _frame(a=np.zeros(5))}, {})
    assert v["verdict"] == "not_applicable"


# ---- good fits of noisy data stay successful --------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_noisy_pendulum_with_declared_noise_is_a_good_fit(seed):
    trial = pendulum.simulate_trial(duration=5.0, noise_std=0.05, seed=seed, measure_omega=seed % 2 == 1)
    r = co.solve(pendulum.problem(trial, noise_std=0.05), co.Midpoint(), solver=QUIET)
    v = r.fit_verdict
    assert r.success and r.status == r.solver_status == "Solve_Succeeded"
    assert v["verdict"] == "good"
    assert 0.8 < v["signals"]["theta"]["chi2_red"] < 1.2
    assert "fit verdict: good" in r.summary()


@pytest.mark.parametrize("seed", [0, 5])
def test_noisy_two_link_with_declared_noise_is_a_good_fit(seed):
    trial = two_link.simulate_trial(duration=10.0, seed=seed)
    r = co.solve(two_link.problem(trial), co.Midpoint(), solver=QUIET)
    assert r.success and r.fit_verdict["verdict"] == "good"
    for s in two_link.STATE_NAMES:
        assert 0.8 < r.fit_verdict["signals"][s]["chi2_red"] < 1.2


@pytest.mark.parametrize("seed", [0, 4])
def test_noisy_cip_with_declared_noise_is_a_good_fit(seed):
    trial = cip.simulate_trial(duration=20.0, seed=seed)
    r = co.solve(cip.problem(trial), co.Midpoint(), solver=QUIET)
    assert r.success and r.fit_verdict["verdict"] == "good"
    assert 0.8 < r.fit_verdict["signals"]["cop"]["chi2_red"] < 1.2


def test_shooting_baseline_gets_a_verdict_too():
    trial = pendulum.simulate_trial(duration=3.0, noise_std=0.05, seed=2)
    method = co.MultipleShooting(segments=5)
    near = co.solve(pendulum.problem(trial), method, solver=QUIET, guess={"p": 9.0}, throw=False)
    assert near.fit_verdict["verdict"] == "good" and near.success
    # from p = 1 shooting converges to the local minimum at the lower bound: a poor fit
    far = co.solve(pendulum.problem(trial), method, solver=QUIET, throw=False)
    assert far.solver_status == "Solve_Succeeded" and far.parameters["p"] < 1.0
    assert far.status == "poor_fit" and not far.success


# ---- a model that misses the damping is a poor fit --------------------------------------
def damped_pendulum_csv(path, p=10.0, c=0.4, sigma=0.01, seed=0):
    """θ'' = −p sin θ − c θ', integrated by scipy (not by colloc), θ measured with noise σ."""
    t = np.arange(0, 8.0 + 1e-9, 0.01)
    sol = solve_ivp(lambda _, y: [y[1], -p * np.sin(y[0]) - c * y[1]], (0, t[-1]), [1.0, 0.0], t_eval=t,
                    rtol=1e-10, atol=1e-12)
    theta = sol.y[0] + sigma * np.random.default_rng(seed).standard_normal(t.size)
    pd.DataFrame({"time": t, "theta": theta}).to_csv(path, index=False)
    return path


def test_undamped_model_on_damped_data_is_a_poor_fit(tmp_path):
    path = damped_pendulum_csv(tmp_path / "damped.csv")
    trial = pendulum.load_trial(path)
    r = co.solve(pendulum.problem(trial, noise_std=0.01), co.Midpoint(), solver=QUIET, throw=False)
    assert r.solver_status == "Solve_Succeeded"  # IPOPT converged ...
    assert not r.success and r.status == "poor_fit"  # ... to a fit far above the noise
    v = r.fit_verdict
    assert v["verdict"] == "poor_fit" and v["signals"]["theta"]["chi2_red"] > 100
    assert v["signals"]["theta"]["whiteness"] == "coloured"
    assert "poor" in r.message and "declared noise" in r.message
    assert "fit verdict: poor_fit" in r.summary()
    with pytest.raises(co.SolveFailed, match="poor_fit"):
        co.solve(pendulum.problem(trial, noise_std=0.01), co.Midpoint(), solver=QUIET)
    doc = json.loads(r.to_json())
    assert doc["status"] == "poor_fit" and doc["solver_status"] == "Solve_Succeeded" and doc["success"] is False
    back = co.Result.from_json(r.to_json())
    assert back.solver_status == "Solve_Succeeded" and back.status == "poor_fit"


def test_verdict_can_be_switched_off(tmp_path):
    trial = pendulum.load_trial(damped_pendulum_csv(tmp_path / "damped.csv"))
    r = co.solve(pendulum.problem(trial, noise_std=0.01), co.Midpoint(), solver=QUIET, verdict=False)
    assert r.success and r.status == r.solver_status == "Solve_Succeeded"
    assert not r.fit_verdict


def test_cli_exits_1_with_a_one_line_reason_on_a_poor_fit(capsys, tmp_path):
    path = damped_pendulum_csv(tmp_path / "damped.csv", sigma=0.05, c=1.0)
    out = tmp_path / "r.json"
    code = main(["identify", "pendulum", "--data", str(path), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 1
    lines = [line for line in captured.err.splitlines() if line.startswith("colloc: poor fit")]
    assert len(lines) == 1 and "--starts N" in lines[0] and "declared noise" in lines[0]
    doc = json.loads(out.read_text())
    assert doc["status"] == "poor_fit" and doc["solver_status"] == "Solve_Succeeded"
