"""Identification from multi-rate trials, trials with gaps and known inputs that step.

Expected values come from closed forms or from ``scipy.integrate.solve_ivp`` on an
independent right-hand side, never from colloc.
"""

import subprocess
import sys

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import colloc as co
from colloc.transcription.collocation import transcribe
from colloc_problems import pendulum
from colloc_problems import two_link as tl



def _reference_rhs():
    """The independent two-link right-hand side typed from the contract (tests/problems)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("_two_link_reference",
                                                  Path(__file__).parent / "problems" / "test_two_link.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reference_rhs


def test_multi_rate_two_link_identifies_K():
    """Angles at 100 Hz, platform acceleration at 1 kHz, in one trial (empty cells between)."""
    duration, fast = 4.0, 1000
    t = np.arange(int(duration * fast) + 1) / fast
    acc, _ = tl.excitation(0)
    ref = solve_ivp(_reference_rhs(), (0.0, duration), [0.01, -0.01, 0.0, 0.0], t_eval=t, args=(tl.K_TRUE, acc),
                    method="DOP853", rtol=1e-12, atol=1e-12)
    slow = (np.arange(t.size) % 10) == 0  # 100 Hz
    signals = {"theta_a": np.where(slow, ref.y[0], np.nan), "theta_h": np.where(slow, ref.y[1], np.nan),
               "platform_acc": acc(t)}
    trial = co.Trial(t, signals, name="multi", missing="allow")
    problem = tl.problem([trial], errors_in_variables=False)
    assert problem.num_observations == 2 * int(slow.sum())
    result = co.solve(problem, co.Midpoint())
    assert result.success
    K = np.array([[result.parameters[f"k_{i}{j}"] for j in range(4)] for i in range(2)])
    np.testing.assert_allclose(K, tl.K_TRUE, rtol=2e-3)
    assert np.isnan(result.residuals["multi"]["theta_a"].to_numpy()[~slow]).all()
    assert result.simulation["multi"]["nrmse"]["theta_a"] < 1e-3


def _gappy(theta: np.ndarray) -> np.ndarray:
    """20 % of the samples blank, in blocks of 40."""
    out = theta.copy()
    for start in range(60, theta.size - 40, 200):
        out[start:start + 40] = np.nan
    return out


def test_pendulum_with_gaps_identifies_p_as_well_as_without():
    full = pendulum.simulate_trial(noise_std=pendulum.NOISE_STD, duration=8.0, seed=4, name="full")
    theta = _gappy(np.asarray(full["theta"]))
    missing = int(np.isnan(theta).sum())
    assert 0.18 <= missing / theta.size <= 0.22
    gaps = co.Trial(full.time, {"theta": theta}, name="gaps", missing="allow")
    problem = pendulum.problem([gaps])
    assert problem.num_observations == theta.size - missing
    r_full = co.solve(pendulum.problem([full]), co.Radau(degree=2))
    r_gaps = co.solve(problem, co.Radau(degree=2))
    assert r_full.success and r_gaps.success
    se_full, se_gaps = r_full.standard_errors["p"], r_gaps.standard_errors["p"]
    assert abs(r_gaps.parameters["p"] - pendulum.TRUE["p"]) < 4 * se_gaps
    # 80 % of the data: the standard error grows by about 1/√0.8 ≈ 1.12, not more
    assert 1.0 < se_gaps / se_full < 1.35
    assert r_gaps.info["dof"] == r_full.info["dof"] - missing  # the blanks are not observations
    res = r_gaps.residuals["gaps"]["theta"].to_numpy()
    assert np.array_equal(np.isnan(res), np.isnan(theta))
    assert np.array_equal(np.isnan(r_gaps.measurements["gaps"]["theta"].to_numpy()), np.isnan(theta))
    # the simulation check uses the measured values only: redo it with solve_ivp
    p = r_gaps.parameters["p"]
    x0 = r_gaps.trajectories["gaps"][["theta", "omega"]].to_numpy()[0]
    sim = solve_ivp(lambda t, x: [x[1], -p * np.sin(x[0])], (0.0, 8.0), x0, t_eval=full.time,
                    method="DOP853", rtol=1e-11, atol=1e-11)
    m = ~np.isnan(theta)
    expected = np.sqrt(np.mean((sim.y[0][m] - theta[m]) ** 2)) / np.ptp(theta[m])
    assert r_gaps.simulation["gaps"]["nrmse"]["theta"] == pytest.approx(expected, rel=1e-4)


A, B, X0, STEP = 1.5, 2.0, 1.0, 0.537


def _step_model(jumps=()):
    m = co.Model("step")
    x = m.state("x")
    u = m.known_input("u", jumps=jumps)
    a = m.parameter("a", bounds=(0.01, 100.0), guess=1.0)
    b = m.parameter("b", bounds=(-100.0, 100.0), guess=1.0)
    m.set_der(x, -a * x + b * u)
    return m


def _step_solution(t, ts):
    """ẋ = −a x + b u, u = 0 before ts and 1 after, x(0) = X0: the closed form."""
    t = np.asarray(t, dtype=float)
    xs = X0 * np.exp(-A * ts)
    return np.where(t < ts, X0 * np.exp(-A * t), xs * np.exp(-A * (t - ts)) + B / A * (1 - np.exp(-A * (t - ts))))


def _fit(trial, method, jumps=()):
    result = co.solve(co.Problem(_step_model(jumps), [trial], fit={"x": 1e4}), method)
    assert result.success
    return np.array([result.parameters["a"], result.parameters["b"]]), result


@pytest.mark.parametrize("method, tol", [(co.Radau(degree=2), 1e-6), (co.Midpoint(), 1e-4)])
def test_step_between_samples_declared_on_the_model(method, tol):
    t = np.arange(201) / 100.0  # 0.537 s is not a sample time
    trial = co.Trial(t, {"x": _step_solution(t, STEP), "u": (t >= STEP).astype(float)}, name="step")
    with_jump, result = _fit(trial, method, jumps=[STEP])
    np.testing.assert_allclose(with_jump, [A, B], rtol=tol)
    assert result.simulation["step"]["status"] == "ok"
    assert result.simulation["step"]["nrmse"]["x"] < 1e-4  # the simulation sees the step
    without, _ = _fit(trial, method)
    assert np.max(np.abs(without / [A, B] - 1)) > 20 * np.max(np.abs(with_jump / [A, B] - 1))
    assert np.max(np.abs(without / [A, B] - 1)) > 1e-3


def test_step_at_a_sample_time_written_as_two_rows(tmp_path):
    ts = 0.54
    t = np.arange(201) / 100.0
    path = tmp_path / "step.csv"
    lines = ["time,x,u"]
    for tk in t.tolist():
        x = float(_step_solution(tk, ts))
        if tk == ts:
            lines.append(f"{tk!r},{x!r},0.0")
        lines.append(f"{tk!r},{x!r},{float(tk >= ts)!r}")
    path.write_text("\n".join(lines) + "\n")
    trial = co.Trial.from_csv(path, jump_columns=["u"])
    for method, tol in ((co.Radau(degree=2), 1e-6), (co.Midpoint(), 1e-4)):
        est, result = _fit(trial, method)
        np.testing.assert_allclose(est, [A, B], rtol=tol)
        assert "2 pieces" in result.simulation["step.csv"]["message"]
        assert result.simulation["step.csv"]["nrmse"]["x"] < 1e-4
    # the same data with the repeated row dropped and no jump: visibly worse
    plain = co.Trial(trial.time, {"x": trial["x"], "u": trial["u"]}, name="plain")
    worse, _ = _fit(plain, co.Radau(degree=2))
    assert np.max(np.abs(worse / [A, B] - 1)) > 1e-3


def test_errors_in_variables_input_with_gaps_is_tied_by_interpolation():
    t = np.linspace(0.0, 4.0, 401)
    u_true = np.sin(2.0 * t)
    # ẋ = −a x + b u with u = sin 2t: the closed form with x(0) = X0
    w = 2.0
    c = B / (A**2 + w**2)
    x = c * (A * np.sin(w * t) - w * np.cos(w * t)) + (X0 + c * w) * np.exp(-A * t)
    u = u_true.copy()
    u[100:140] = np.nan
    trial = co.Trial(t, {"x": x, "u": u}, name="eiv", missing="allow")
    problem = co.Problem(_step_model(), [trial], fit={"x": 1e4}, input_noise={"u": 1e-3})
    assert problem.num_observations == 2 * 401 - 40
    method = co.Midpoint()
    _, blocks, *_ = transcribe(problem, method)
    tied = [b for b in blocks if b.name == "eiv-interpolation"]
    assert len(tied) == 1
    np.testing.assert_array_equal(tied[0].instance_times, t[100:140])
    est, result = _fit_eiv(problem, method)
    np.testing.assert_allclose(est, [A, B], rtol=1e-3)
    latent = result.trajectories["eiv"]["u"].to_numpy()
    np.testing.assert_allclose(latent[100:140], u_true[100:140], atol=5e-3)


def _fit_eiv(problem, method):
    result = co.solve(problem, method)
    assert result.success
    return np.array([result.parameters["a"], result.parameters["b"]]), result


def test_cli_missing_flag(tmp_path):
    trial = pendulum.simulate_trial(duration=3.0)
    theta = np.asarray(trial["theta"]).copy()
    theta[50:80] = np.nan
    co.Trial(trial.time, {"theta": theta}, missing="allow").to_csv(tmp_path / "gaps.csv")
    cmd = [sys.executable, "-m", "colloc.cli", "identify", "pendulum", "--data", str(tmp_path / "gaps.csv"), "--json"]
    refused = subprocess.run(cmd, capture_output=True, text=True)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "column 'theta', row 51 (line 52 of the file): empty cell" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    ok = subprocess.run(cmd + ["--missing", "allow"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    import json

    doc = json.loads(ok.stdout)
    assert abs(doc["parameters"]["p"] - pendulum.TRUE["p"]) < 1e-3 * pendulum.TRUE["p"]
    bad = subprocess.run(cmd + ["--missing", "maybe"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--missing" in bad.stderr and "Traceback" not in bad.stderr
