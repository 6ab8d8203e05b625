"""The `fes-muscle` problem: loader checks (contract §1), CLI exit codes, shipped data."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from colloc_problems import fes_muscle as fm
from colloc_problems._data import data_path

import colloc as co


def _write(tmp_path, pulse_value=1, alpha_value=0.5, row=3):
    lines = ["time,force,pulse,alpha"]
    for i in range(6):
        pulse = pulse_value if i == row else 0
        alpha = alpha_value if i == row else 0.5
        lines.append(f"{i / 1000:.3f},0.0,{pulse},{alpha}")
    path = tmp_path / "trial.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("pulse,alpha,column", [(2, 0.5, "pulse"), (0.5, 0.5, "pulse"), (1, 1.5, "alpha"),
                                                 (1, -0.1, "alpha")])
def test_bad_pulse_or_alpha_names_file_column_and_row(tmp_path, pulse, alpha, column):
    path = _write(tmp_path, pulse, alpha)
    with pytest.raises(co.DataError) as err:
        fm.load_trial(path)
    msg = str(err.value)
    assert str(path) in msg and repr(column) in msg and "row 4" in msg


def test_cli_bad_input_exits_2_with_one_line(tmp_path):
    path = _write(tmp_path, 3, 0.5)
    run = subprocess.run([sys.executable, "-m", "colloc.cli", "identify", "fes-muscle", "--data", str(path)],
                         check=False, capture_output=True, text=True)
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1 and "pulse" in run.stderr


def _colloc(*args):
    return subprocess.run([sys.executable, "-m", "colloc.cli", *map(str, args)], check=False, capture_output=True, text=True)


def test_cli_identifies_a_record_into_a_normal_result(tmp_path):
    # a clean 0.3 s twitch pair made by the event-driven simulator; the fit is multi-phase
    # collocation from the poor default guess
    data = tmp_path / "twitch.csv"
    fm.write_trial(fm.make_trial(10, duration=0.3, first=0.05, last=0.15), data)
    out, plot = tmp_path / "fit.json", tmp_path / "fit.png"
    # no --method: fes-muscle's own default, Radau degree 3 (not the radau2 of
    # the other problems)
    run = _colloc("identify", "fes-muscle", "--data", data, "--out", out, "--plot", plot)
    assert run.returncode == 0, run.stderr
    assert "tau1" in run.stdout and "forward simulation of 'twitch.csv': ok" in run.stdout
    res = co.Result.from_json(out)
    assert res.problem == "fes-muscle" and res.method == "hybrid-radau3" and res.info["degree"] == 3 and res.success
    assert list(res.parameters) == list(fm.NAMES) and res.versions and res.units["k0"] == "N/m"
    for name in fm.NAMES:
        assert abs(res.parameters[name] / fm.TRUE[name] - 1) < 0.005, name
        assert np.isfinite(res.standard_errors[name])
    assert res.simulation["twitch.csv"]["nrmse"]["force"] < 1e-4
    assert plot.stat().st_size > 0
    # the report every problem gives: signals with units, the fit at the samples, the verdict of
    # the residuals against the record's noise (a clean record: the floor), warnings, intervals
    assert res.units["force"] == "N" and res.units["k_c"] == "N/m"
    traj, meas, r = (frame["twitch.csv"] for frame in (res.trajectories, res.measurements, res.residuals))
    assert len(traj) == len(meas) == len(r) == 301 and {"force", "k_c"} <= set(traj.columns)
    np.testing.assert_allclose(r["force"], traj["force"] - meas["force"], atol=1e-12)
    assert res.info["noise"]["twitch.csv"] == {"force": fm.NOISE_FLOOR}
    verdict = res.fit_verdict
    assert verdict["verdict"] == "good" and set(verdict["signals"]) == {"force"}
    assert isinstance(res.warnings, list) and set(res.intervals) == set(fm.NAMES)


@pytest.mark.parametrize("args,fragment", [(["--nodes", "5"], "--nodes"), (["--method", "midpoint"], "radau"),
                                           (["--guess", "F1=3"], "F1"), (["--starts", "3"], "--starts")])
def test_cli_options_fes_muscle_cannot_honour_exit_2_with_one_line(tmp_path, args, fragment):
    data = _write(tmp_path)
    run = _colloc("identify", "fes-muscle", "--data", data, *args)
    assert run.returncode == 2, run.stdout + run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and fragment in run.stderr


def test_default_method_is_the_problems_own_everywhere(tmp_path):
    from colloc.studies.batch import read_manifest
    from colloc.studies.identify import DEFAULT_METHOD

    trial = fm.load_trial(data_path("fes_muscle", "clean_10hz.csv"))
    assert fm.default_method([trial], {}) == "radau3" and DEFAULT_METHOD == "radau2"
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(f"fit_id,problem,data,method\na,fes-muscle,{data_path('fes_muscle', 'clean_10hz.csv')},\n"
                        f"b,fes-muscle,{data_path('fes_muscle', 'clean_20hz.csv')},radau2\n")
    # a row without a method leaves the choice to the problem, as `colloc identify` without --method
    assert [spec.method for spec in read_manifest(manifest)] == [None, "radau2"]
    run = _colloc("identify", "--help")
    assert "fes-muscle's default is radau3" in " ".join(run.stdout.split())


def test_force_noise_is_read_from_the_record_not_from_the_fit():
    # seeded white noise of 2 N on a clean shipped train (the noisy records' σ): found within 5 %
    # (2001 samples: the MAD's standard error is ~3 %); a clean record gets the floor
    clean = fm.load_trial(data_path("fes_muscle", "clean_30hz.csv"))["force"]
    noisy = clean + np.random.default_rng(7).normal(0.0, 2.0, clean.size)
    assert abs(fm.force_noise(noisy) / 2.0 - 1) < 0.05
    assert fm.force_noise(clean) == fm.NOISE_FLOOR


@pytest.mark.slow
def test_a_record_the_model_cannot_follow_is_a_poor_fit():
    # a 25 Hz square wave of ±20 N added to a twitch pair with 0.5 N of noise: no muscle
    # parameters make it; the fit converges, the verdict fails it
    twitch = fm.make_trial(10, duration=0.3, first=0.05, last=0.15)
    wave = 20.0 * np.sign(np.sin(2 * np.pi * 25 * twitch.time))
    noise = np.random.default_rng(0).normal(0.0, 0.5, twitch.time.size)
    bad = co.Trial(twitch.time, {"force": twitch["force"] + wave + noise, "pulse": twitch["pulse"],
                                 "alpha": twitch["alpha"]}, name="bad")
    res = _solve([bad])
    assert not res.success and res.status == "poor_fit" and res.solver_status != "poor_fit"
    assert res.fit_verdict["signals"]["force"]["rms_over_sigma"] > 10


def test_shipped_records_load_and_follow_the_contract():
    for f in (10, 20, 30, 50):
        tr = fm.load_trial(data_path("fes_muscle", f"clean_{f}hz.csv"))
        assert tr.time.size == 2001 and np.allclose(np.diff(tr.time), 1e-3)
        assert set(np.unique(tr["pulse"])) == {0, 1}
        assert np.all(tr["force"][tr.time < 0.1 + fm.TRUE["tau"]] == 0)  # no force before the first cycle
        assert tr["force"].max() <= tr["alpha"][0] * fm.TRUE["F0"] + 1e-6  # F_c tends to α·F0 from below (eq. 9)


def test_fused_tetanus_reaches_alpha_F0():
    # 50 Hz with τ1 = 20 ms: every cycle is cut at the end of its plateau, u stays at U_p
    tr = fm.make_trial(50, alpha=0.6, duration=1.0, first=0.0, last=1.0)
    assert abs(tr["force"][-1] - 0.6 * fm.TRUE["F0"]) < 1e-3


def _solve(trials):
    """The library's timed hybrid fit of the records, as `colloc identify fes-muscle` runs it."""
    return co.solve(fm.problem(trials), co.Radau(degree=3), solver=co.Ipopt(**fm.IPOPT_OPTIONS), throw=False)


def _shipped(kind):
    return [fm.load_trial(data_path("fes_muscle", f"{kind}_{f}hz.csv")) for f in (10, 20, 30, 50)]


#: the acceptance's four 2 s trains at 1 kHz (10–50 Hz; the 50 Hz one a fused tetanus), α per train
TRAINS = ((10, 1.0), (20, 0.8), (30, 0.9), (50, 0.6))


@pytest.fixture(scope="module")
def reference_trains(fes_brute_force):
    """The four trains made by the independent brute-force generator (tests/conftest.py), not by
    the library's simulator: clean, and with seeded force noise σ = 2 N."""
    time = np.arange(2001) / 1000.0
    clean, noisy = [], []
    for seed, (freq, alpha) in enumerate(TRAINS, start=1):
        pulse = np.zeros(time.size, dtype=int)
        pulse[np.arange(100, 1401, round(1000 / freq))] = 1
        alphas = np.full(time.size, alpha)
        force = fes_brute_force(time, pulse, alphas, {**fm.TRUE, **fm.KNOWN})
        clean.append(co.Trial(time, {"force": force, "pulse": pulse, "alpha": alphas}, name=f"{freq}hz"))
        noise = np.random.default_rng(100 + seed).normal(0.0, 2.0, time.size)
        noisy.append(co.Trial(time, {"force": force + noise, "pulse": pulse, "alpha": alphas}, name=f"{freq}hz"))
    return clean, noisy


@pytest.mark.slow
def test_identify_clean_four_trains_every_parameter_within_half_percent_from_poor_guess(reference_trains):
    res = _solve(reference_trains[0])
    assert res.success
    for name in fm.NAMES:
        assert abs(res.parameters[name] / fm.TRUE[name] - 1) < 0.005, name


@pytest.mark.slow
def test_identify_noisy_truth_within_3_standard_errors_for_6_of_7(reference_trains):
    res = _solve(reference_trains[1])
    assert res.success
    z = [abs(res.parameters[n] - fm.TRUE[n]) / res.standard_errors[n] for n in fm.NAMES]
    assert sum(v < 3 for v in z) >= 6, z
    assert 1.5 < res.info["residual_std"] < 2.5  # the noise σ = 2 N is recovered


@pytest.mark.slow
def test_identify_shipped_noisy_records_truth_within_3_standard_errors():
    res = _solve(_shipped("noisy"))
    assert res.success
    z = [abs(res.parameters[n] - fm.TRUE[n]) / res.standard_errors[n] for n in fm.NAMES]
    assert sum(v < 3 for v in z) >= 6, z


@pytest.mark.slow
def test_identify_one_train_recovers_the_clock_times():
    res = _solve(_shipped("clean")[:1])
    for name in ("tau", "tau1", "tau2"):
        assert abs(res.parameters[name] / fm.TRUE[name] - 1) < 1e-4, name


def test_the_module_is_a_specification_on_the_library():
    # issue 18: physics, constants, columns, data generator and mode detection; no NLP, covariance
    # or result of its own (the fit is co.solve's timed hybrid path)
    import inspect

    source = inspect.getsource(fm)
    assert len(source.splitlines()) <= 300
    for private in ("nlpsol", "Result(", "Estimate(", "finalize(", "covariance", "IntervalChain", "ChainLayout"):
        assert private not in source, private
    problem = fm.problem([fm.make_trial(10, duration=0.3, first=0.05, last=0.15)])
    assert isinstance(problem, co.HybridProblem) and problem.timed and problem.known_initial_state
    assert problem.parameters == list(fm.NAMES) and problem.fit == {"force": 1.0}
