"""k-step-ahead prediction (docs/contracts.md §3 ``colloc predict``; ``Result.predict``)."""

from __future__ import annotations

import subprocess
import sys

import casadi as ca
import numpy as np
import pandas as pd
import pytest
from scipy.integrate import solve_ivp

import colloc as co
from colloc.inference.kalman import LinearGaussianModel, k_step_predictions, one_step_predictions, simulate


def _oscillator(theta):
    """A damped oscillator driven by white noise, with a direct noise term D (correlated noises)."""
    w, z, g, s = theta[0], theta[1], theta[2], theta[3]
    A = ca.vertcat(ca.horzcat(0, 1), ca.horzcat(-w**2, -2 * z * w))
    return {"A": A, "G": ca.vertcat(0, g), "C": ca.horzcat(1, 0), "R": s**2, "D": ca.DM([[0.3 * 0.01]])}


def _lgm(dt=0.05):
    return LinearGaussianModel(["w", "z", "g", "s"], _oscillator, dt=dt, initial_mean=[0.2, 0.0],
                               initial_covariance=np.diag([0.01, 0.04]))


def _joint_gaussian_prediction(model, theta, y, t, steps):
    """Mean and SD of y_t given y_0 … y_{t−steps} by conditioning the joint Gaussian of the whole
    record (built from the discretised model, no filter involved)."""
    d = model.discretize(theta)
    Phi, Gam, C, D, R, m0, P0 = (d[k] for k in ("Phi", "Gamma", "C", "D", "R", "m0", "P0"))
    q, N = Gam.shape[1], t + 1
    # y = M x0 + W w + e, with x_k = Φ^k x0 + Σ_{i<k} Φ^{k−1−i} Γ w_i
    M = np.vstack([C @ np.linalg.matrix_power(Phi, k) for k in range(N)])
    W = np.zeros((N, N * q))
    for k in range(N):
        for i in range(k):
            W[k, i * q:(i + 1) * q] = C @ np.linalg.matrix_power(Phi, k - 1 - i) @ Gam
        W[k, k * q:(k + 1) * q] = D
    mean = M @ m0
    cov = M @ P0 @ M.T + W @ W.T + np.kron(np.eye(N), R)
    past = np.arange(0, t - steps + 1)
    gain = np.linalg.solve(cov[np.ix_(past, past)], cov[past, t])
    mu = mean[t] + gain @ (y[past] - mean[past])
    var = cov[t, t] - cov[t, past] @ gain
    return mu, np.sqrt(var)


@pytest.mark.parametrize("steps", [1, 3, 10])
def test_k_step_predictions_equal_the_conditioned_joint_gaussian(steps):
    model = _lgm()
    theta = {"w": 2.0, "z": 0.2, "g": 0.5, "s": 0.02}
    y = simulate(model, theta, 40, rng=np.random.default_rng(1))
    pred, sd = k_step_predictions(model, y, theta, steps)
    assert np.isnan(pred[: steps - 1]).all() and np.isfinite(pred[steps - 1:]).all()
    for t in (steps + 4, 25, 39):
        mu, s = _joint_gaussian_prediction(model, theta, np.asarray(y).ravel(), t, steps)
        assert pred[t, 0] == pytest.approx(mu, rel=1e-8, abs=1e-12)
        assert sd[t, 0] == pytest.approx(s, rel=1e-8)
    p1, s1 = one_step_predictions(model, y, theta)
    if steps == 1:
        np.testing.assert_array_equal(p1, pred)
    with pytest.raises(ValueError, match="steps must be an integer"):
        k_step_predictions(model, y, theta, 0)


@pytest.mark.parametrize("steps", [1, 10])
def test_predictions_after_the_covariance_settles_and_after_a_gap_equal_the_conditioned_joint_gaussian(steps):
    """Over 400 samples the filter's covariance settles (from there the gain is held); a gap at
    sample 300 makes it move again.  Before, between and after, the predictions are those of the
    whole record's joint Gaussian."""
    model = _lgm(dt=0.1)
    theta = {"w": 2.0, "z": 0.3, "g": 0.5, "s": 0.02}
    y = np.asarray(simulate(model, theta, 400, rng=np.random.default_rng(7)), dtype=float).ravel()
    y[300] = np.nan
    pred, sd = k_step_predictions(model, y, theta, steps, missing=True)
    for t in (60, 250, 299, 312, 399):
        past = np.arange(0, t - steps + 1)
        past = past[np.isfinite(y[past])]
        mu, s = _joint_gaussian_prediction_at(model, theta, y, t, past)
        assert pred[t, 0] == pytest.approx(mu, rel=1e-8, abs=1e-10)
        assert sd[t, 0] == pytest.approx(s, rel=1e-8)


def _joint_gaussian_prediction_at(model, theta, y, t, past):
    """:func:`_joint_gaussian_prediction` given the samples ``past`` only."""
    d = model.discretize(theta)
    Phi, Gam, C, D, R, m0, P0 = (d[k] for k in ("Phi", "Gamma", "C", "D", "R", "m0", "P0"))
    q, N = Gam.shape[1], t + 1
    powers = [np.eye(Phi.shape[0])]
    for _ in range(N):
        powers.append(Phi @ powers[-1])
    M = np.vstack([C @ powers[k] for k in range(N)])
    W = np.zeros((N, N * q))
    for k in range(N):
        for i in range(k):
            W[k, i * q:(i + 1) * q] = C @ powers[k - 1 - i] @ Gam
        W[k, k * q:(k + 1) * q] = D
    mean = M @ m0
    cov = M @ P0 @ M.T + W @ W.T + np.kron(np.eye(N), R)
    gain = np.linalg.solve(cov[np.ix_(past, past)], cov[past, t])
    return mean[t] + gain @ (y[past] - mean[past]), np.sqrt(cov[t, t] - cov[t, past] @ gain)


def _pendulum_record(path, sigma=0.02, seed=0):
    """θ of the pendulum p = 10 from θ(0) = 1 rad, by SciPy's DOP853 (not colloc's integrator)."""
    t = np.round(np.arange(0.0, 6.0, 0.01), 10)
    sol = solve_ivp(lambda _t, s: [s[1], -10.0 * np.sin(s[0])], (0, t[-1]), [1.0, 0.0], t_eval=t, rtol=1e-11,
                    atol=1e-12, method="DOP853")
    theta = sol.y[0] + sigma * np.random.default_rng(seed).standard_normal(t.size)
    pd.DataFrame({"time": t, "theta": theta}).to_csv(path, index=False)
    return t, sol.y[0]


def test_a_deterministic_model_predicts_the_held_out_half_within_its_noise(tmp_path):
    from colloc_problems import pendulum

    path = tmp_path / "rec.csv"
    t, clean = _pendulum_record(path)
    trial = pendulum.load_trial(path)
    result = co.solve(pendulum.problem([trial.window(0.0, 3.0)], noise_std=0.02), throw=False)
    assert result.success
    table = result.predict(trial, horizon=0.1, window=(3.0, 6.0))
    assert list(table.columns) == ["time", "observed", "mean", "sd"]
    assert table["time"].iloc[0] == pytest.approx(3.1) and table["time"].iloc[-1] == pytest.approx(5.99)
    assert len(table) == 290
    truth = np.interp(table["time"], t, clean)
    assert np.max(np.abs(table["mean"] - truth)) < 0.02  # the model ahead of a filtered state: near the truth
    inside = np.abs(table["observed"] - table["mean"]) <= 1.96 * table["sd"]
    assert 0.9 <= inside.mean() <= 0.99


def test_predict_command_writes_the_contract_columns_and_refuses_bad_horizons(tmp_path):
    rec, res, out = tmp_path / "rec.csv", tmp_path / "r.json", tmp_path / "p.csv"
    _pendulum_record(rec)
    run = [sys.executable, "-m", "colloc.cli"]
    proc = subprocess.run(run + ["identify", "pendulum", "--data", str(rec), "--window", "0:2", "--out", str(res)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(run + ["predict", str(res), "--data", str(rec), "--window", "2:4", "--horizon", "0.1",
                                 "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out)
    assert list(table.columns) == ["time", "observed", "mean", "sd"] and len(table) == 190
    assert "95 % interval coverage" in proc.stdout
    for args, message in ((["--horizon", "0.015"], "not a whole number"), (["--horizon", "-1"], "--horizon"),
                          (["--horizon", "0.1", "--window", "9:10"], "no sample"),
                          (["--horizon", "0.1", "--window", "2:4", "--out", str(tmp_path / "p.txt")], "unknown file type")):
        argv = run + ["predict", str(res), "--data", str(rec)] + args
        if "--out" not in args:
            argv += ["--out", str(out)]
        if "--window" not in args:
            argv += ["--window", "2:4"]
        proc = subprocess.run(argv, capture_output=True, text=True)
        assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, \
            proc.stderr


def test_a_model_with_a_free_input_is_refused_by_name():
    m = co.Model("leaky")
    x = m.state("x")
    r = m.free_input("r")
    k = m.parameter("k", bounds=(0, 10))
    m.set_der(x, -k * x + r)
    t = np.arange(0.0, 1.0, 0.01)
    trial = co.Trial(t, {"x": np.exp(-t)}, name="t")
    problem = co.Problem(m, trial, fit={"x": 1e4})
    fake = co.Result(problem="leaky", method="m", success=True, status="ok", message="", iterations=1, objective=0.0,
                     parameters={"k": 1.0}, standard_errors={"k": 0.1}, covariance=None, trajectories={},
                     measurements={}, residuals={}, timings={}, num_nodes=100, trials=["t"], versions={})
    with pytest.raises(co.OptionsError, match="free input"):
        fake.predict(trial, horizon=0.05, model=problem)
