"""The ``"sway-lp"`` noise model's fixed recording low-pass and lagged torque noise (issue 17).

Expected values come from SciPy (an analog Butterworth design, a hand-written transfer function of
the loop, a record simulated with ``scipy.signal`` and filtered with ``sosfiltfilt``), never from
the Kalman model under test.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.signal
from colloc_problems import cip

import colloc as co

BODY = cip.body(1.575, 54.2)  # BDS subject 1
THETA = {"KP": 900.0, "KI": 5.0, "KD": 300.0, "q_d": 4.0, "B": 2.0, "tau_m": 0.06, "sigma": 1e-6}


def _loop_response(theta, f):
    """COP per unit of torque noise w, by hand: I s² U = m g h U + T_d − T_c, T_c = (K_P + K_D s +
    K_I/s) U, T_d = w/((1 + s B)(1 + s τ_m)), COP = (T_c − T_d)/(m g)."""
    s = 2j * np.pi * f
    mgh = BODY["m"] * BODY["g"] * BODY["h"]
    pid = theta["KP"] + theta["KD"] * s + theta["KI"] / s
    td = 1.0 / ((1 + s * theta["B"]) * (1 + s * theta["tau_m"]))
    u = td / (BODY["I"] * s**2 - mgh + pid)
    return (pid * u - td) / (BODY["m"] * BODY["g"])


def _model_response(model, theta, f):
    m = model.continuous(theta)
    A, G, C = (np.asarray(m[k], dtype=float) for k in ("A", "G", "C"))
    n = A.shape[0]
    return np.array([(C @ np.linalg.solve(2j * np.pi * x * np.eye(n) - A, G))[0, 0] for x in f])


def test_the_sway_lp_models_cop_spectrum_is_the_loops_through_the_documented_zero_lag_filter():
    """|H_model|² = |H_loop|² · |H_B4|⁴: the COP's power through a 4th-order Butterworth at 10 Hz run
    forwards and backwards (SciPy's analog design), up to the Nyquist frequency of 100 Hz."""
    model = cip.ml_model("PID", dt=0.01, body=BODY, noise="sway-lp")
    assert model.parameter_names == ("KP", "KI", "KD", "q_d", "B", "tau_m", "sigma")
    f = np.geomspace(0.05, 50.0, 60)
    b, a = scipy.signal.butter(4, 2 * np.pi * 10.0, analog=True)
    _, butter = scipy.signal.freqs(b, a, worN=2 * np.pi * f)
    expected = np.abs(_loop_response(THETA, f)) ** 2 * np.abs(butter) ** 4
    got = np.abs(_model_response(model, THETA, f)) ** 2  # G carries q_d (unit spectral density Q_c)
    np.testing.assert_allclose(got, expected * THETA["q_d"] ** 2, rtol=1e-8)
    # at 20 Hz the filter takes 48 dB off; a 2nd-order zero-lag filter (the earlier model) only 24
    _, at20 = scipy.signal.freqs(b, a, worN=[2 * np.pi * 20.0])
    assert 10 * np.log10(np.abs(at20[0]) ** 4) == pytest.approx(-20 * np.log10(1 + 2.0**8), abs=1e-9)


@pytest.mark.parametrize("dt", [0.01, 0.02])
def test_the_lagged_torque_has_the_continuous_processes_variance_at_any_rate(dt):
    """T_d = w/((1 + sB)(1 + sτ_m)) has variance q_d²/(2(B + τ_m)) (the integral of |H|² over the
    two-sided spectrum); the discretised model's stationary covariance of its (T_d, m) block must
    give it at 100 Hz and at 50 Hz alike."""
    model = cip.ml_model("PID", dt=dt, body=BODY, noise="sway-lp")
    d = model.discretize(THETA)
    td, md = 3, 4  # u, v, w, td, md, then the low-pass states
    block = [td, md]
    phi = np.asarray(d["Phi"])[np.ix_(block, block)]
    q = np.asarray(d["Q"])[np.ix_(block, block)]
    p = scipy.linalg.solve_discrete_lyapunov(phi, q)
    assert p[0, 0] == pytest.approx(THETA["q_d"] ** 2 / (2 * (THETA["B"] + THETA["tau_m"])), rel=1e-9)


def test_the_default_sway_model_keeps_its_fitted_cut_off():
    model = cip.ml_model("PID", dt=0.01, body=BODY, noise="sway")
    assert model.parameter_names == ("KP", "KI", "KD", "q_d", "B", "f_c", "sigma")
    assert model.num_states == 4 + 4 and cip.ml_model("PID", dt=0.01, body=BODY, noise="sway-lp").num_states == 5 + 8


def _scipy_record(theta, seconds, seed):
    """A 100 Hz COP record made without colloc: the loop's state-space written out here, driven by
    white noise held over 1 ms steps (``scipy.signal.lsim``, variance q_d²/h), its COP low-passed by
    ``sosfiltfilt`` of a 4th-order 10 Hz Butterworth at 1 kHz, every tenth sample kept and rounded
    to the files' 1e-8 m."""
    h = 1e-3
    mgh, I = BODY["m"] * BODY["g"] * BODY["h"], BODY["I"]
    KP, KI, KD, B, tm = (theta[k] for k in ("KP", "KI", "KD", "B", "tau_m"))
    # states u, u', ∫u, T_d, m
    A = np.array([[0, 1, 0, 0, 0],
                  [(mgh - KP) / I, -KD / I, -KI / I, 1 / I, 0],
                  [1, 0, 0, 0, 0],
                  [0, 0, 0, -1 / B, 1 / B],
                  [0, 0, 0, 0, -1 / tm]])
    G = np.array([[0], [0], [0], [0], [1 / tm]])
    C = np.array([[KP, KD, KI, -1.0, 0.0]]) / (BODY["m"] * BODY["g"])
    warm = 30.0  # seconds dropped: the record starts in the loop's stationary regime
    n = round((seconds + warm) / h)
    t = np.arange(n) * h
    w = np.random.default_rng(seed).standard_normal(n) * theta["q_d"] / np.sqrt(h)
    _, cop, _ = scipy.signal.lsim((A, G, C, np.zeros((1, 1))), w, t, interp=False)
    sos = scipy.signal.butter(4, 10.0, fs=1 / h, output="sos")
    filtered = scipy.signal.sosfiltfilt(sos, cop)[round(warm / h)::10]
    filtered = np.round(filtered, 8)
    time = np.arange(filtered.size) * 0.01
    return co.Trial(time, {"cop": filtered + 0.05}, name="scipy-sway")


@pytest.mark.slow
def test_a_record_filtered_by_scipy_gives_back_the_loop_and_the_disturbance():
    """The fixed low-pass is the records' (not a parameter): on a 60 s record simulated and filtered
    by SciPy the estimates of the gains, q_d, B and τ_m lie within 3 standard errors of the truth,
    from the problem's own starts (the paper's gains scaled to the body)."""
    truth = {"KP": 700.0, "KI": 2.0, "KD": 230.0, "q_d": 3.0, "B": 1.5, "tau_m": 0.06}
    trial = _scipy_record(truth, 60.0, seed=11)
    result = co.solve(cip.stochastic_problem(trial, controller="PID", body=BODY, noise="sway-lp"), co.KalmanML(),
                      throw=False)
    assert result.success, (result.status, result.warnings)
    for k in ("KP", "KD", "q_d", "B", "tau_m"):
        se = result.standard_errors[k]
        assert abs(result.parameters[k] - truth[k]) < 3 * se, (k, result.parameters[k], se, truth[k])
    assert result.parameters["KD"] / result.parameters["KP"] == pytest.approx(truth["KD"] / truth["KP"], rel=0.25)


def test_a_real_subjects_pid_is_nested_on_its_pd_and_nothing_else_is():
    """The real subject's PID in the sway models starts from its PD fit (``nested``): the PD on the
    same record with the same bounds, K_I started at ``NESTED_START_KI_PER_MGH``·m·g·h; a guess, the
    PD itself, the paper's noise model and the paper's subject keep their own starts."""
    from pathlib import Path

    trial = cip.load_trial(str(Path(__file__).resolve().parents[2] / "data" / "bds" / "BDS00001.txt.gz"),
                           columns={"cop": "COPx"}).window(0.0, 10.0)
    mgh = BODY["m"] * BODY["g"] * BODY["h"]
    pid = cip.stochastic_problem(trial, controller="PID", body=BODY, noise="sway-lp", bounds={"KP": (None, 2000.0)})
    assert pid.nested_start == {"KI": pytest.approx(cip.NESTED_START_KI_PER_MGH * mgh)}
    pd = pid.nested(trial)
    assert pd.label == "PD" and "KI" not in pd.parameter_names and pd.bounds["KP"][1] == 2000.0
    assert pd.bounds == {k: v for k, v in pid.bounds.items() if k != "KI"}
    for kw in ({"controller": "PID", "guess": {"KP": 900.0}}, {"controller": "PD"},
               {"controller": "PID", "noise": "paper"}):
        kw = {"body": BODY, "noise": "sway-lp", **kw}
        assert cip.stochastic_problem(trial, **kw).nested is None, kw
    assert cip.stochastic_problem(trial, controller="PID", noise="sway-lp").nested is None  # no body


@pytest.mark.slow
def test_the_pid_from_its_pd_reaches_the_optimum_of_its_own_starts():
    """BDS00009 (60 s), where a PID start ends in a family with a large K_I: the PID fitted once from
    the PD's estimate reaches the optimum that its three own starts reach (NLL within 0.01), with
    fewer gradients, and reports the PD's NLL and the likelihood-ratio test of K_I."""
    from pathlib import Path

    trial = cip.load_trial(str(Path(__file__).resolve().parents[2] / "data" / "bds" / "BDS00009.txt.gz"),
                           columns={"cop": "COPx"})
    nested = cip.stochastic_problem(trial, controller="PID", body=BODY, noise="sway-lp")
    own = cip.stochastic_problem(trial, controller="PID", body=BODY, noise="sway-lp")
    own.nested = None  # the three PID starts, as before the nested start
    method = co.KalmanML(free_draws=0)
    a, b = co.solve(nested, method, throw=False), co.solve(own, method, throw=False)
    assert a.success and b.success
    assert a.starts == {"count": 1} and b.starts == {"count": 3}
    assert abs(a.objective - b.objective) < 0.01
    for k in ("KP", "KD", "q_d", "B", "tau_m"):
        assert abs(a.parameters[k] - b.parameters[k]) < 0.1 * b.standard_errors[k], k
    info = a.info["nested"]
    assert info["label"] == "PD" and info["added"] == ["KI"]
    assert info["nll"] >= a.objective - 1e-3 and info["lr_statistic"] < 3.84  # K_I not needed on this trial


@pytest.mark.slow
def test_a_failed_fit_from_the_nested_estimate_falls_back_to_the_own_starts():
    """BDS00001's first 20 s: from the PD's estimate the PID's K_I stopped on a saddle of its flat
    ridge (``not_identifiable``, 2026-11-29); the PID's own starts then run too, and the fit ends
    with K_I on its bound 0, where the PD is, as the fit from the own starts alone does."""
    from pathlib import Path

    trial = cip.load_trial(str(Path(__file__).resolve().parents[2] / "data" / "bds" / "BDS00001.txt.gz"),
                           columns={"cop": "COPx"}).window(0.0, 20.0)
    result = co.solve(cip.stochastic_problem(trial, controller="PID", body=BODY, noise="sway-lp"),
                      co.KalmanML(free_draws=0), throw=False)
    assert result.success, (result.status, result.message)
    assert result.starts["count"] == 4 and result.info["nested"]["own_starts"]  # from the PD, then the own three
    assert result.parameters["KI"] < 1e-3 and result.info["nested"]["nll"] == pytest.approx(result.objective, abs=0.01)


def test_a_real_subjects_default_controller_is_the_held_out_choice_and_a_cohorts_is_one_model(monkeypatch):
    """``colloc identify cip --height --mass`` (a sway noise model): ``--controller auto``, the choice
    by held-out prediction; the paper's noise model or subject: the paper's PID.  ``colloc batch``:
    the one controller of :data:`cip.COHORT_CONTROLLER` for every trial, unless the manifest names one."""
    from colloc_problems.cip import methods

    trial = cip.simulate_trial(duration=12.0, seed=5, body=BODY)
    called = []

    class Stop(Exception):
        pass

    def chosen(tr, **kw):
        called.append(("auto", kw["noise"]))
        raise Stop

    def fixed(tr, **kw):
        called.append((kw["controller"], kw["noise"]))
        raise Stop

    monkeypatch.setattr(methods, "select_controller", chosen)
    monkeypatch.setattr(methods, "stochastic_problem", fixed)
    for kw in ({"body": BODY}, {"body": BODY, "noise": "sway"}, {"body": BODY, "noise": "paper"}, {},
               {"body": BODY, "controller": "PD-delay"}):
        with pytest.raises(Stop):
            cip.identify_method([trial], **kw)
    assert called == [("auto", "sway-lp"), ("auto", "sway"), ("PID", "paper"), ("PID", "paper"),
                      ("PD-delay", "sway-lp")]
    # colloc batch: the cohort's one controller where the manifest names none, for the fits that would choose
    assert cip.cohort_options([trial], {"body": BODY}) == {"controller": cip.COHORT_CONTROLLER}
    assert cip.cohort_options([trial], {"body": BODY, "noise": "sway"}) == {"controller": cip.COHORT_CONTROLLER}
    for options in ({"body": BODY, "controller": "PD-delay"}, {"body": BODY, "noise": "paper"}, {}):
        assert cip.cohort_options([trial], options) == {}, options


@pytest.mark.parametrize("outcomes, fitted, failures, solved", [
    # the chosen PD fits the whole record implausibly: the next plausible one on the half is fitted
    ({"PD": (True, True), "PD-delay": (True, False)}, "PD-delay", ["PD (implausible)"], ["PD", "PD-delay"]),
    # none plausible: the first success is shown; PID, implausible on the half, is not tried after it
    ({"PD": (True, True), "PD-delay": (False, False), "PID-delay": (True, True)}, "PD",
     ["PD (implausible)", "PD-delay (not_converged)", "PID-delay (implausible)"], ["PD", "PD-delay", "PID-delay"]),
    # a failure, then a plausible success: as before
    ({"PD": (False, False), "PD-delay": (True, False)}, "PD-delay", ["PD (not_converged)"], ["PD", "PD-delay"]),
])
def test_the_whole_records_fit_is_the_first_in_the_ranking_that_succeeds_plausibly(monkeypatch, outcomes, fitted,
                                                                                   failures, solved):
    """``--controller auto`` after the comparison: the chosen controller on the whole record; if that
    fit fails, the next in the ranking; if it succeeds but is flagged implausible, the next of those
    plausible on the first half; with none plausible, the first success."""
    from types import SimpleNamespace

    import pandas as pd
    from colloc_problems.cip import methods

    ranking = ("PD", "PD-delay", "PID", "PID-delay")
    table = pd.DataFrame({"kind": ["model"] * 4, "success": [True] * 4, "plausible": [True, True, False, True]},
                         index=list(ranking))
    trial = cip.simulate_trial(duration=12.0, seed=5, body=BODY)
    selection = SimpleNamespace(table=table, ranking=ranking, best="PD", split=6.0, text=lambda: "the table",
                                to_info=lambda: {"best": "PD", "ranking": list(ranking)})
    monkeypatch.setattr(co, "select_model", lambda *a, **kw: selection)
    seen = []

    def solve(problem, method=None, throw=False):
        seen.append(problem.label)
        ok, odd = outcomes[problem.label]
        return SimpleNamespace(success=ok, status="Solve_Succeeded" if ok else "not_converged", notes=[], info={},
                               warnings=[{"code": "implausible", "message": "K_D/K_P"}] if odd else [])

    monkeypatch.setattr(co, "solve", solve)
    result = methods.select_controller(trial, body=BODY)
    assert seen == solved
    info = result.info["model_selection"]
    assert info["fitted"] == fitted and info["whole_record_failures"] == failures
    assert result.notes[0] == "the table" and (fitted in result.notes[1])


def test_a_batch_fit_gets_the_problems_cohort_options_and_a_single_fit_does_not(monkeypatch, tmp_path):
    """identify_files(cohort=True), as colloc batch calls it: the problem's cohort_options reach its own
    method, under what the manifest sets; without cohort=True (colloc identify) they do not."""
    from colloc.studies import identify

    import pandas as pd

    trial = cip.simulate_trial(duration=12.0, seed=5, body=BODY)
    path = tmp_path / "t.csv"  # a COP-only record: the Kalman ML is the default method
    pd.DataFrame({"time": trial.time, "cop": trial["cop"]}).to_csv(path, index=False)
    seen = []

    class Stop(Exception):
        pass

    def own(spec, trials, **kw):
        seen.append(dict(kw["problem_options"]))
        raise Stop

    monkeypatch.setattr(identify, "_own_method", own)
    for cohort, options in ((True, {"body": BODY}), (False, {"body": BODY}),
                            (True, {"body": BODY, "controller": "PD-delay"})):
        with pytest.raises(Stop):
            identify.identify_files("cip", [str(path)], method=None, problem_options=options, cohort=cohort)
    assert [o.get("controller") for o in seen] == [cip.COHORT_CONTROLLER, None, "PD-delay"]
