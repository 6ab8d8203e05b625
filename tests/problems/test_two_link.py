"""Two-link standing balance (Moore & van den Bogert 2015): generator, recovery, trials."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import colloc as co
from colloc_problems import two_link as tl


def reference_rhs(t, x, K, acc):
    """docs/contracts.md §2 equations typed from the contract text, in numpy (independent of the model)."""
    b = tl.BODY
    lL, dL, dT, mL, mT, IL, IT, g = (b[k] for k in ("l_L", "d_L", "d_T", "m_L", "m_T", "I_L", "I_T", "g"))
    qa, qh, wa, wh = x
    a = acc(t)
    Ta, Th = -(K @ x)
    M = np.array([
        [IL + IT + dL**2 * mL + mT * (dT**2 + 2 * dT * lL * np.cos(qh) + lL**2), IT + dT * mT * (dT + lL * np.cos(qh))],
        [IT + dT * mT * (dT + lL * np.cos(qh)), IT + dT**2 * mT],
    ])
    F = np.array([
        Ta + a * dL * mL * np.cos(qa) + a * dT * mT * np.cos(qa + qh) + a * lL * mT * np.cos(qa)
        + dL * g * mL * np.sin(qa) + dT * g * mT * np.sin(qa + qh)
        + 2 * dT * lL * mT * wa * wh * np.sin(qh) + dT * lL * mT * wh**2 * np.sin(qh) + g * lL * mT * np.sin(qa),
        Th + a * dT * mT * np.cos(qa + qh) + dT * g * mT * np.sin(qa + qh) - dT * lL * mT * wa**2 * np.sin(qh),
    ])
    return np.concatenate([[wa, wh], np.linalg.solve(M, F)])


def test_generator_matches_an_independent_integration():
    noisy, clean = tl.simulate_trial(duration=8.0, seed=3, return_clean=True)
    acc, _ = tl.excitation(3)
    ref = solve_ivp(reference_rhs, (0, 8.0), np.zeros(4), t_eval=clean.time, args=(tl.K_TRUE, acc),
                    method="DOP853", rtol=1e-12, atol=1e-12)
    for i, name in enumerate(tl.STATE_NAMES):
        scale = np.ptp(ref.y[i])
        np.testing.assert_allclose(clean[name], ref.y[i], atol=1e-7 * scale, err_msg=name)
    np.testing.assert_allclose(clean["platform_acc"], acc(clean.time), rtol=0, atol=1e-12)


def test_excitation_is_the_contract_sum_of_sines():
    acc, _ = tl.excitation(0)
    t = np.linspace(0, 240, 24001)  # one full period of the lowest harmonic spacing
    spectrum = np.abs(np.fft.rfft(acc(t[:-1]))) / (t.size - 1) * 2
    freqs = np.fft.rfftfreq(t.size - 1, d=t[1] - t[0]) * 240  # harmonic numbers
    peaks = np.sort(freqs[np.argsort(spectrum)[-12:]].round().astype(int))
    assert tuple(peaks) == tl.HARMONICS
    omega = 2 * np.pi * np.array(tl.HARMONICS) / 240
    np.testing.assert_allclose(np.sort(spectrum)[-12:], np.sort(0.01 * omega**2), rtol=1e-6)


def test_noise_has_the_declared_standard_deviations():
    noisy, clean = tl.simulate_trial(seed=5, return_clean=True)
    sigma = {"theta_a": tl.SIGMA_THETA, "theta_h": tl.SIGMA_THETA, "omega_a": tl.SIGMA_OMEGA,
             "omega_h": tl.SIGMA_OMEGA, "platform_acc": tl.SIGMA_ACC}
    for name, s in sigma.items():
        e = noisy[name] - clean[name]
        # 6001 samples: the sample std is within 5 % (≈ 5.5 standard deviations of its estimate)
        assert abs(np.std(e) / s - 1) < 0.05, name
        assert abs(np.mean(e)) < 5 * s / np.sqrt(e.size), name
    other = tl.simulate_trial(seed=6)
    assert not np.allclose(other["theta_a"], noisy["theta_a"])
    np.testing.assert_array_equal(tl.simulate_trial(seed=5)["theta_a"], noisy["theta_a"])


def test_clean_data_recovers_K_to_1e_4():
    """Noise-free data sampled at 2 kHz (the midpoint error is O(h²)), input treated as exact."""
    trial = tl.simulate_trial(duration=10.0, rate=2000.0, noise=False, seed=1)
    result = co.solve(tl.problem(trial, errors_in_variables=False), co.Midpoint(),
                      solver=co.Ipopt(simulate=False, standard_errors=False))
    for name, true in tl.TRUE.items():
        assert result.parameters[name] == pytest.approx(true, rel=1e-4), name


def test_two_trials_share_K_and_keep_their_states():
    a = tl.simulate_trial(duration=20.0, seed=11, name="a.csv")
    b = tl.simulate_trial(duration=20.0, seed=12, name="b.csv")
    result = co.solve(tl.problem([a, b]), co.Midpoint(), solver=co.Ipopt(simulate=False))
    assert result.success and result.trials == ["a.csv", "b.csv"]
    assert set(result.parameters) == set(tl.TRUE)
    for name in ("a.csv", "b.csv"):
        traj = result.trajectories[name]
        assert list(traj.columns) == [*tl.STATE_NAMES, "platform_acc"]
    # different excitations give different identified motions
    assert np.max(np.abs(result.trajectories["a.csv"]["theta_a"].to_numpy()
                         - result.trajectories["b.csv"]["theta_a"].to_numpy())) > 0.01
    errors = [abs(result.parameters[k] / v - 1) for k, v in tl.TRUE.items()]
    assert np.mean(errors) < 0.10


def test_errors_in_variables_removes_the_input_noise_bias():
    trial = tl.simulate_trial(seed=0)
    solver = co.Ipopt(simulate=False, standard_errors=False)
    eiv = co.solve(tl.problem(trial), co.Midpoint(), solver=solver)
    exact = co.solve(tl.problem(trial, errors_in_variables=False), co.Midpoint(), solver=solver)

    def errs(r):
        return np.array([abs(r.parameters[k] / v - 1) for k, v in tl.TRUE.items()])

    assert errs(eiv).mean() < 0.10 and errs(eiv).max() < 0.25
    assert errs(exact).max() > 0.5  # the input noise biases the exact-input formulation badly
    assert eiv.iterations <= 11
    # the acceleration is an estimated trajectory, fitted to its measurement
    assert "platform_acc" in eiv.residuals[trial.name].columns
    assert eiv.info["input_noise"] == {"platform_acc": tl.SIGMA_ACC}


def test_body_overrides_are_checked():
    with pytest.raises(co.ModelError, match=r"unknown parameter\(s\) mass; known: l_L"):
        tl.model({"mass": 70.0})
    m = tl.model({"m_T": 60.0})
    assert m.element_names("parameter") == list(tl.TRUE)


def test_cli_identifies_two_link_from_several_files(tmp_path, capsys):
    import json

    from colloc.cli import main

    paths = []
    for seed in (41, 42):
        path = tmp_path / f"t{seed}.csv"
        tl.simulate_trial(duration=15.0, seed=seed, name=path.name).to_csv(path)
        paths += ["--data", str(path)]
    code = main(["identify", "two-link", *paths, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["success"]
    assert doc["problem"] == "two-link" and len(doc["trials"]) == 2
    assert set(doc["parameters"]) == set(tl.TRUE) == set(doc["standard_errors"])
    assert all(v > 0 for v in doc["standard_errors"].values())


@pytest.mark.slow
def test_noisy_seed_case_accuracy_over_realizations():
    """Errors-in-variables on 10 fresh realizations of the 60 s seed case.

    Tolerances from benchmarks/two_link_bias.py (20 realizations): the per-gain bias stays
    within ±5 % and the mean |error| over gains and seeds is about 7 %; the test allows 10 %.
    """
    solver = co.Ipopt(simulate=False, standard_errors=False)
    errors = []
    for seed in range(200, 210):
        r = co.solve(tl.problem(tl.simulate_trial(seed=seed)), co.Midpoint(), solver=solver)
        assert r.success and r.iterations <= 11
        errors.append([r.parameters[k] / v - 1 for k, v in tl.TRUE.items()])
    errors = np.array(errors)
    assert np.abs(errors).mean() < 0.10
    assert np.all(np.abs(errors.mean(axis=0)) < 0.08)


def test_errors_in_variables_on_a_grid_finer_than_the_samples():
    """The latent acceleration is measured only at the samples.  On nodes between them it is
    a fixed cubic interpolation of its values at the samples, never free: two nodes per
    sample (``refine=2``, or a uniform grid through the samples) identify K as well as one
    (free latent values there gave K errors of hundreds of percent before).  A finer grid
    that misses the samples is refused."""
    _, clean = tl.simulate_trial(duration=10.0, seed=0, return_clean=True)
    solver = co.Ipopt(simulate=False, standard_errors=False)
    for method in (co.Midpoint(refine=2), co.Midpoint(num_nodes=2001), co.Radau(refine=2)):
        fine = co.solve(tl.problem(clean), method, solver=solver)
        assert fine.num_nodes == {"midpoint": 2001, "radau3": 6001}[method.name]
        worst = max(abs(fine.parameters[k] / v - 1) for k, v in tl.TRUE.items())
        assert worst < (0.02 if method.name == "midpoint" else 1e-3), (method, worst)
        acc = fine.trajectories[clean.name]["platform_acc"].to_numpy()
        np.testing.assert_allclose(acc[:: fine.num_nodes // 1000], clean["platform_acc"], atol=0.02)
    trial = tl.simulate_trial(duration=1.0, seed=0)
    with pytest.raises(co.ProblemError, match=r"Midpoint\(num_nodes=150\) puts 150 nodes on 101 samples.*platform_acc"):
        co.solve(tl.problem(trial), co.Midpoint(num_nodes=150))
    coarse = co.solve(tl.problem(trial), co.Midpoint(num_nodes=51), solver=solver)  # coarser is fine
    assert coarse.success
    fine = co.solve(tl.problem(trial, errors_in_variables=False), co.Midpoint(num_nodes=150),
                    solver=solver)  # no latent input: fine too
    assert fine.success
