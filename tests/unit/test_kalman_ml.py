"""``co.solve(co.StochasticProblem(...), co.KalmanML())``: a user's own linear stochastic model.

The records are made here with SciPy's matrix exponential (Van Loan's block form), independently
of colloc's own discretisation; the likelihood is checked against statsmodels' state-space
Kalman filter on the same discrete model.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg
from statsmodels.tsa.statespace.kalman_filter import KalmanFilter

import colloc as co
import colloc.solving.kalman_ml as KALMAN_ML
from colloc import kalman

TRUTH = {"k": 4.0, "c": 0.8, "q": 0.5, "sigma": 0.02}
DT = 0.01


def oscillator(dt: float, size: float = 1.0) -> kalman.LinearGaussianModel:
    """A unit mass on a spring k with damper c, pushed by white force noise of intensity q
    (held over each sample: q/√dt), position measured with noise sigma; the initial state's
    prior SDs 0.5 and 1 in units of ``size``."""

    import casadi as ca

    def mats(th):
        A = ca.SX.zeros(2, 2)
        A[0, 1] = 1
        A[1, 0] = -th[0]
        A[1, 1] = -th[1]
        G = ca.SX.zeros(2, 1)
        G[1, 0] = th[2] / np.sqrt(dt)
        return A, G, ca.DM([[1.0, 0.0]]), th[3] ** 2

    return kalman.LinearGaussianModel(["k", "c", "q", "sigma"], mats, dt=dt, name="oscillator",
                                      initial_covariance=np.diag([0.5**2, 1.0**2]) * size**2)


def discrete(theta: dict, dt: float):
    """Φ, Γ of the zero-order-hold model by SciPy's expm of [[A, G], [0, 0]]·dt."""
    A = np.array([[0.0, 1.0], [-theta["k"], -theta["c"]]])
    G = np.array([[0.0], [theta["q"] / np.sqrt(dt)]])
    M = np.zeros((3, 3))
    M[:2, :2], M[:2, 2:] = A, G
    E = scipy.linalg.expm(M * dt)
    return E[:2, :2], E[:2, 2:]


def record(theta: dict, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    Phi, Gam = discrete(theta, DT)
    s = rng.normal(0.0, [0.5, 1.0])
    y = np.empty(n)
    for i in range(n):
        y[i] = s[0] + theta["sigma"] * rng.normal()
        s = Phi @ s + Gam[:, 0] * rng.normal()
    return y


def trial(y: np.ndarray, name: str = "osc") -> co.Trial:
    return co.Trial(DT * np.arange(y.size), {"x": y}, name=name)


def problem(y, **kw) -> co.StochasticProblem:
    opts = {"outputs": ["x"], "start": {"k": 2.0, "c": 0.3, "q": 1.0, "sigma": 0.05},
            "bounds": {"k": (0.1, 100.0), "c": (0.01, 20.0), "q": (1e-3, 100.0), "sigma": (1e-5, 1.0)},
            "physical": {"sigma": (True, False)}, "units": {"k": "N/m", "x": "m"}, "name": "oscillator"}
    opts.update(kw)
    return co.StochasticProblem(oscillator, trial(y), **opts)


def test_likelihood_matches_statsmodels():
    theta = {"k": 3.0, "c": 0.5, "q": 0.7, "sigma": 0.03}
    y = record(TRUTH, 1500, seed=3)
    y[[100, 101, 700]] = np.nan  # missing samples: both filters skip them
    nll = kalman.negative_log_likelihood(oscillator(DT), y[:, None], theta, missing=True)
    Phi, Gam = discrete(theta, DT)
    kf = KalmanFilter(k_endog=1, k_states=2, k_posdef=1)
    kf.bind(y[:, None].copy())
    kf["design"] = np.array([[1.0, 0.0]])
    kf["obs_cov"] = np.array([[theta["sigma"] ** 2]])
    kf["transition"] = Phi
    kf["selection"] = Gam
    kf["state_cov"] = np.eye(1)
    kf.initialize_known(np.zeros(2), np.diag([0.5**2, 1.0**2]))
    assert nll == pytest.approx(-kf.loglike(), rel=1e-8)  # colloc's own expm against SciPy's


def test_recovers_parameters_within_three_standard_errors():
    y = record(TRUTH, 6000, seed=11)
    result = co.solve(problem(y), co.KalmanML())
    assert result.success, result.summary()
    assert result.method == "kalman-ml" and result.problem == "oscillator"
    for k, v in TRUTH.items():
        se = result.standard_errors[k]
        assert se is not None and se > 0
        assert abs(result.parameters[k] - v) < 3 * se, (k, result.parameters[k], se)
    lo, hi = result.interval("k")
    assert lo < result.parameters["k"] < hi
    assert result.interval_scales["k"] == "log"
    w = result.info["innovations_whiteness"]["x"]
    assert w["p"] > 0.001 and abs(w["std"] - 1) < 0.05
    assert any("Ljung–Box" in n for n in result.notes)
    assert w["predictable_gain"] < KALMAN_ML.PREDICTABLE_GAIN_MAX and w["predictable_order"] == 20
    assert w["predictable_folds"] == 5
    assert any("predictable share" in n and "nothing in them that the model could have used" in n
               for n in result.notes)
    assert result.units["k"] == "N/m"
    assert "one-step-ahead prediction" in result.trajectory_label


def test_estimate_on_a_search_bound_is_a_failure():
    y = record(TRUTH, 3000, seed=5)
    result = co.solve(problem(y, bounds={"k": (0.1, 2.5), "c": (0.01, 20.0), "q": (1e-3, 100.0),
                                         "sigma": (1e-5, 1.0)}), co.KalmanML(), throw=False)
    assert not result.success
    assert result.parameters["k"] == pytest.approx(2.5)
    assert any(w["code"] == "parameter_at_bound" for w in result.warnings)


def test_a_tiny_noise_far_above_its_tiny_bound_is_not_called_on_it():
    """The oscillator's record in units 1e7 times larger (a sway of ~0.1 µm, noise 2 nm, as a COP
    rounded to its file's resolution): σ is 20 times its 0.1 nm lower bound, inside a search range
    up to 1 cm, and must be reported as an estimate with a standard error and an interval, not as
    "at its lower bound" (a tolerance absolute in the parameter's unit called it so)."""
    size = 1e-7
    y = record(TRUTH, 6000, seed=11) * size
    truth = {**TRUTH, "q": TRUTH["q"] * size, "sigma": TRUTH["sigma"] * size}
    p = co.StochasticProblem(lambda dt: oscillator(dt, size), trial(y), outputs=["x"],
                             start={"k": 2.0, "c": 0.3, "q": 1e-7, "sigma": 5e-9},
                             bounds={"k": (0.1, 100.0), "c": (0.01, 20.0), "q": (1e-12, 1e-2),
                                     "sigma": (1e-10, 1e-2)}, physical={"sigma": (True, False)})
    result = co.solve(p, co.KalmanML(free_draws=0), throw=False)
    assert result.success, result.summary()
    assert not [w for w in result.warnings if w["code"] in ("parameter_at_bound", "parameter_near_bound")], \
        result.warnings
    for k in ("q", "sigma"):
        se = result.standard_errors[k]
        assert se is not None and abs(result.parameters[k] - truth[k]) < 3 * se, (k, result.parameters[k], se)
        lo, hi = result.interval(k)
        assert 0 < lo < truth[k] < hi, (k, lo, hi)


def test_wrong_model_innovations_not_white():
    """An oscillator fitted to a record with a slow sinusoidal drift it cannot produce: the
    report says the innovations are not white."""
    y = record(TRUTH, 6000, seed=2) + 0.3 * np.sin(2 * np.pi * 0.05 * DT * np.arange(6000))
    result = co.solve(problem(y), co.KalmanML(), throw=False)
    w = result.info["innovations_whiteness"]["x"]
    truth_fit = co.solve(problem(record(TRUTH, 6000, seed=2)), co.KalmanML(), throw=False)
    assert w["Q"] > truth_fit.info["innovations_whiteness"]["x"]["Q"]


def _coloured(n: int, rho, sd: float, seed: int) -> np.ndarray:
    """AR(1) noise of stationary SD ``sd``; ``rho`` per sample (an array: it may change)."""
    rng = np.random.default_rng(seed)
    rho = np.broadcast_to(np.asarray(rho, dtype=float), (n,))
    e = np.empty(n)
    e[0] = sd * rng.normal()
    for i in range(1, n):
        e[i] = rho[i] * e[i - 1] + sd * math.sqrt(1 - rho[i] ** 2) * rng.normal()
    return e


def test_the_predictable_share_flags_structure_the_model_could_have_used_and_only_that():
    """Coloured measurement noise the oscillator has no state for: Ljung–Box rejects and an AR of the
    innovations fitted to the rest of the record predicts each block of it (flagged).  Noise whose
    colour flips sign halfway (ρ = +0.6, then −0.6): Ljung–Box rejects as well, but what the rest of
    the record teaches does not predict a block (not flagged)."""
    n = 6000
    stable = record(TRUTH, n, seed=21) + _coloured(n, 0.6, 0.03, seed=22)
    flipped = record(TRUTH, n, seed=21) + _coloured(n, np.where(np.arange(n) < n // 2, 0.6, -0.6), 0.03, seed=22)
    for y, flagged in ((stable, True), (flipped, False)):
        result = co.solve(problem(y), co.KalmanML(free_draws=0), throw=False)
        w = result.info["innovations_whiteness"]["x"]
        assert w["p"] < 1e-6, w
        assert (w["predictable_gain"] > KALMAN_ML.PREDICTABLE_GAIN_MAX) is flagged, w
        note = next(n for n in result.notes if "predictable share" in n)
        assert ("structure the model could have used is left in them" in note) is flagged, note
        assert ("nothing in them that the model could have used" in note) is not flagged, note


def test_center_reports_offset_without_standard_error():
    y = record(TRUTH, 2000, seed=7) + 0.25
    result = co.solve(problem(y, center=True), co.KalmanML(), throw=False)
    assert result.parameters["x_offset"] == pytest.approx(np.mean(y))
    assert result.standard_errors["x_offset"] is None


def test_checks_and_notes_hooks_reach_the_report():
    y = record(TRUTH, 2000, seed=8)
    result = co.solve(problem(y, notes=lambda p: [f"natural frequency {np.sqrt(p['k']) / 2 / np.pi:.3g} Hz"],
                              checks=lambda p: [{"code": "mine", "message": "checked", "parameters": ["k"]}],
                              info=lambda p: {"omega": np.sqrt(p["k"])}),
                      co.KalmanML(), throw=False)
    assert result.notes[0].startswith("natural frequency")
    assert any(w["code"] == "mine" for w in result.warnings)
    assert result.info["omega"] == pytest.approx(np.sqrt(result.parameters["k"]))


def test_bad_input_errors():
    y = record(TRUTH, 300, seed=1)
    with pytest.raises(co.ModelError, match="unknown parameter.*zeta"):
        problem(y, start={"k": 1.0, "c": 0.3, "q": 1.0, "sigma": 0.05, "zeta": 1.0})
    with pytest.raises(co.ModelError, match="no start value for sigma"):
        problem(y, start={"k": 1.0, "c": 0.3, "q": 1.0})
    with pytest.raises(co.OptionsError, match="start of k lies outside"):
        problem(y, start={"k": 500.0, "c": 0.3, "q": 1.0, "sigma": 0.05})
    with pytest.raises(co.OptionsError, match="no column v"):
        problem(y, outputs=["v"])
    p = problem(y)
    with pytest.raises(co.OptionsError, match="estimated by colloc.KalmanML"):
        co.solve(p, co.Midpoint())
    with pytest.raises(co.OptionsError, match="one start"):
        co.solve(p, co.KalmanML(), starts=4)
    with pytest.raises(co.OptionsError, match="unknown parameter"):
        co.solve(p, co.KalmanML(), guess={"zeta": 1.0})
    with pytest.raises(co.OptionsError, match="one record at a time"):
        co.solve(p.with_trials([trial(y, "a"), trial(y, "b")]), co.KalmanML())
    m = co.Model("decay")
    x = m.state("x")
    m.set_der(x, -m.parameter("k", bounds=(0.1, 10.0), guess=1.0) * x)
    with pytest.raises(co.OptionsError, match="KalmanML estimates a colloc.StochasticProblem"):
        co.solve(co.Problem(m, trial(y)), co.KalmanML())
    uneven = co.Trial(np.r_[0.0, 0.01, 0.03, 0.04], {"x": np.ones(4)}, name="gappy")
    with pytest.raises(co.OptionsError, match="not evenly sampled"):
        co.solve(problem(y).with_trials(uneven), co.KalmanML())


def ou(dt: float) -> kalman.LinearGaussianModel:
    """A first-order (Ornstein–Uhlenbeck) position: the wrong model for an oscillator's record."""
    import casadi as ca

    def mats(th):
        return ca.reshape(-th[0], 1, 1), ca.reshape(th[1] / np.sqrt(dt), 1, 1), ca.DM([[1.0]]), th[2] ** 2

    return kalman.LinearGaussianModel(["a", "q", "sigma"], mats, dt=dt, name="ou", initial_covariance=[[1.0]])


def test_select_model_prefers_the_true_model_on_held_out_data():
    y = record(TRUTH, 4000, seed=21)
    tr = trial(y)
    wrong = lambda t: co.StochasticProblem(ou, t, outputs=["x"], start={"a": 1.0, "q": 0.5, "sigma": 0.05},
                                           bounds={"a": (1e-3, 50.0), "q": (1e-3, 100.0), "sigma": (1e-5, 1.0)},
                                           physical={"sigma": (True, False)})
    # the true structure with a search range that excludes the truth: it must fail, not be chosen
    boxed = lambda t: co.StochasticProblem(
        oscillator, t, outputs=["x"], start={"k": 2.0, "c": 0.3, "q": 1.0, "sigma": 0.05},
        bounds={"k": (0.1, 2.5), "c": (0.01, 20.0), "q": (1e-3, 100.0), "sigma": (1e-5, 1.0)})
    good = lambda t: co.StochasticProblem(
        oscillator, t, outputs=["x"], start={"k": 2.0, "c": 0.3, "q": 1.0, "sigma": 0.05},
        bounds={"k": (0.1, 100.0), "c": (0.01, 20.0), "q": (1e-3, 100.0), "sigma": (1e-5, 1.0)})
    sel = co.select_model({"ou": wrong, "boxed": boxed, "oscillator": good}, tr, horizons=(0.05, 0.2), ar_order=10)
    table = sel.table
    assert sel.best == "oscillator"
    assert not table.loc["boxed", "success"]
    assert sel.ranking == ("oscillator", "ou")  # the next if the chosen one's whole-record fit fails; no failed fit
    assert table.loc["oscillator", "score_0.2"] > table.loc["ou", "score_0.2"]
    assert {"persistence", "AR(10)"} <= set(table.index)
    assert table.loc["oscillator", "vs_persistence_0.05"] > 0
    assert 0.9 < table.loc["oscillator", "coverage_0.2"] < 0.99
    text = sel.text()
    assert "oscillator" in text and "←" in text and "chosen: oscillator" in text
    assert sel.to_info()["best"] == "oscillator"
    with pytest.raises(co.OptionsError, match="split 99 s lies outside"):
        co.select_model({"oscillator": good}, tr, split=99.0)


def test_a_nested_models_fit_that_was_a_candidate_is_not_fitted_again(monkeypatch):
    """select_model with the undamped oscillator as a candidate and as the damped one's nested model:
    its fit runs once; the second ask is a copy of the first's (the damped fit from it is the same as
    with the memory cleared), and the table gives each candidate's CPU."""
    from colloc.solving import kalman_ml

    tr = trial(record(TRUTH, 3000, seed=23))

    def undamped(t):
        return co.StochasticProblem(oscillator, t, outputs=["x"], start={"k": 2.0, "q": 1.0, "sigma": 0.05},
                                    fixed={"c": 0.01}, bounds={"k": (0.1, 100.0), "q": (1e-3, 100.0),
                                                               "sigma": (1e-5, 1.0)})

    def damped(t):
        return problem(np.asarray(t["x"]), nested=undamped, nested_start={"c": 0.05})

    runs = []
    searched = kalman_ml.KalmanML._searched_fits

    def counted(self, prob, lgm, *args, **kwargs):
        runs.append(sorted(prob.fixed))
        return searched(self, prob, lgm, *args, **kwargs)

    monkeypatch.setattr(kalman_ml.KalmanML, "_searched_fits", counted)
    kalman_ml._FITS_MEMO.clear()
    method = co.KalmanML(free_draws=0)
    sel = co.select_model({"undamped": undamped, "damped": damped}, tr, horizons=(0.05,), ar_order=10,
                          method=method)
    assert runs == [["c"], []]  # the undamped fit once, then the damped one from its estimate
    kalman_ml._FITS_MEMO.clear()
    alone = co.solve(damped(tr.window(None, sel.split)), method, throw=False)
    assert runs[2:] == [["c"], []]
    assert sel.results["damped"].parameters == alone.parameters
    assert sel.results["damped"].info["nested"]["nll"] == alone.info["nested"]["nll"]
    assert sel.table.loc["damped", "cpu_s"] > 0 and np.isnan(sel.table.loc["persistence", "cpu_s"])
    assert "CPU s" in sel.text()


def test_the_choice_is_the_simplest_plausible_fit_within_one_standard_error_of_the_best_score():
    """select_model's rule on held-out log densities made here: white differences of SD 0.5 over
    2,000 samples have a standard error of the mean of 0.5/√2000 ≈ 0.011; a simpler model 0.1 SE
    below the best is chosen, one 5 SE below is not; an implausible fit is not chosen while a
    plausible one succeeded, and is when none did; a failed fit never is; a deficit under 1 nat
    over all the samples is within, whatever its standard error."""
    from colloc.studies.select import _choose

    rng = np.random.default_rng(3)
    n, se = 2000, 0.5 / np.sqrt(2000)
    t = np.arange(n) * 0.01
    base = rng.normal(2.0, 1.0, n)

    def rows_and_densities(drop, plausible=(True, True), success=(True, True)):
        noise = rng.normal(0.0, 0.5, n)
        noise -= noise.mean()  # the mean difference is exactly drop
        dens = {"big": [np.column_stack([t, base])], "small": [np.column_stack([t, base - drop + noise])]}
        rows = {name: {"success": ok, "plausible": pl, "free": free,
                       "score_0.1": float(np.mean(dens[name][0][:, 1]))}
                for name, free, pl, ok in zip(("big", "small"), (8.0, 6.0), plausible, success)}
        return rows, dens

    rows, dens = rows_and_densities(0.1 * se)
    assert _choose(rows, dens, (0.1,))[0] == "small"
    assert rows["small"]["deficit"] == pytest.approx(0.1 * se, rel=1e-9)
    assert 0.7 * se < rows["small"]["deficit_se"] < 1.3 * se  # Bartlett over a short bandwidth of white noise
    rows, dens = rows_and_densities(5 * se)
    best, reason = _choose(rows, dens, (0.1,))
    assert best == "big" and reason == "the best held-out score among the fits that succeeded"
    rows, dens = rows_and_densities(-5 * se, plausible=(True, False))  # small scores better, but implausible
    assert _choose(rows, dens, (0.1,))[0] == "big"
    rows, dens = rows_and_densities(-5 * se, plausible=(False, False))
    assert _choose(rows, dens, (0.1,))[0] == "small"
    rows, dens = rows_and_densities(-5 * se, success=(True, False))
    assert _choose(rows, dens, (0.1,))[0] == "big"
    rows, dens = rows_and_densities(0.0, success=(False, False))
    assert _choose(rows, dens, (0.1,)) == (None, "")
    # nested models whose predictions nearly coincide: a steady deficit of 0.8 nat over the 2,000
    # samples is many of its tiny standard errors, but under 1 nat in all: the simpler one
    dens = {"big": [np.column_stack([t, base])], "small": [np.column_stack([t, base - 0.8 / n])]}
    rows = {"big": {"success": True, "plausible": True, "free": 8.0, "score_0.1": float(base.mean())},
            "small": {"success": True, "plausible": True, "free": 6.0, "score_0.1": float(base.mean() - 0.8 / n)}}
    best, reason = _choose(rows, dens, (0.1,))
    assert best == "small" and rows["small"]["deficit_se"] < 1e-6 and "1 nat" in reason
    dens["small"] = [np.column_stack([t, base - 1.5 / n])]
    rows["small"]["score_0.1"] = float(base.mean() - 1.5 / n)
    assert _choose(rows, dens, (0.1,))[0] == "big"


def test_further_starts_find_the_better_optimum_and_report_the_other():
    """A record with two clearly different likelihood optima is not constructed here; instead the
    start is put in a poor place (k far too stiff) and a second start near the truth: the
    estimate is the lower NLL, and the start count is recorded."""
    y = record(TRUTH, 3000, seed=13)
    p = problem(y, start={"k": 60.0, "c": 15.0, "q": 0.01, "sigma": 0.5}, starts=[{"k": 3.0, "c": 1.0, "q": 0.5}])
    result = co.solve(p, co.KalmanML(), throw=False)
    alone = co.solve(problem(y, start={"k": 60.0, "c": 15.0, "q": 0.01, "sigma": 0.5}), co.KalmanML(), throw=False)
    assert result.starts == {"count": 2} and alone.starts == {"count": 1}
    assert result.objective <= alone.objective + 1e-9
    assert abs(result.parameters["k"] - TRUTH["k"]) < 3 * result.standard_errors["k"]
    with pytest.raises(co.ModelError, match="unknown parameter.*zeta"):
        problem(y, starts=[{"zeta": 1.0}])
    with pytest.raises(co.OptionsError, match="start of k lies outside"):
        problem(y, starts=[{"k": 1000.0}])


def test_finish_all_false_finishes_from_the_lowest_search_until_one_succeeds(monkeypatch):
    """``KalmanML(finish_all=False)`` (the candidates of ``select_model``) asks its fits to finish the
    starts from the lowest search on until one succeeds, and the fits do so: searches that end apart
    (each start's own optimum, here from a stand-in optimizer) are finished all by default, one
    otherwise."""
    from types import SimpleNamespace

    from colloc.inference import kalman as kalman_module

    y = record(TRUTH, 3000, seed=13)
    p = problem(y, starts=[{"k": 3.0}, {"k": 5.0}])
    lgm = p.model_at(DT)
    names = list(lgm.parameter_names)
    finished = []

    def stand_in(model, data, theta0, *, search_only=False, searched=False, **kw):
        k = float(theta0[names.index("k")])
        point = {n: float(v) for n, v in zip(names, theta0)}
        if search_only:  # the search ends where it began, its NLL its k: far apart, the lowest k first
            return SimpleNamespace(nll=k, parameters=point, message="searched", success=False, standard_errors={})
        finished.append(k)
        return SimpleNamespace(nll=k - 0.1, parameters=point, message="finished", success=True,
                               standard_errors={n: 1e-3 for n in names})

    monkeypatch.setattr(kalman_module, "maximum_likelihood", stand_in)
    points = [{**p.start, "k": k} for k in (4.0, 3.0, 5.0)]
    yc = y[:, None] - y.mean()
    co.KalmanML()._searched_fits(p, lgm, yc, points, False)
    assert finished == [3.0, 4.0, 5.0]
    finished.clear()
    fits = co.KalmanML(finish_all=False)._searched_fits(p, lgm, yc, points, False, until_success=True)
    assert finished == [3.0] and "a start whose search ended lower succeeded" in fits[0].message
    # and solve asks for that
    asked = []
    monkeypatch.setattr(co.KalmanML, "_fits", lambda self, *a, until_success=False, **kw: asked.append(until_success)
                        or (_ for _ in ()).throw(RuntimeError("stop")))
    for finish_all in (True, False):
        with pytest.raises(RuntimeError, match="stop"):
            co.solve(problem(y, starts=[{"k": 3.0}]), co.KalmanML(finish_all=finish_all))
    assert asked == [False, True]


def test_the_guides_example_of_a_users_stochastic_model_runs_and_succeeds(capsys):
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "guide" / "stochastic.md"
    text = page.read_text(encoding="utf-8")
    at = text.index("The estimator is the library's")
    start = text.index("```python", at) + len("```python")
    scope: dict = {}
    exec(compile(text[start:text.index("```", start)], str(page), "exec"), scope)  # noqa: S102
    result = scope["result"]
    assert result.success and result.method == "kalman-ml"
    for k, v in scope["truth"].items():
        assert abs(result.parameters[k] - v) < 3 * result.standard_errors[k], k
    assert "Ljung–Box" in capsys.readouterr().out


def test_the_result_says_whether_the_filter_was_compiled_and_what_it_cost(tmp_path, monkeypatch):
    # a fresh disk cache: the fit builds the filter's C code (or says it could not); without
    # compiling, the same estimate, said to be interpreted
    monkeypatch.setenv("COLLOC_CACHE_DIR", str(tmp_path))
    from colloc.base import compiler

    stochastic = problem(record(TRUTH, 2000, seed=5))
    result = co.solve(stochastic, co.KalmanML(), throw=False)
    note = result.model_evaluation
    if compiler._compiler() is None:
        assert note.startswith("interpreted")
    else:
        assert note.startswith("compiled (") and note.endswith(" s)"), note
        assert result.timings["compile_s"] > 0
    interpreted = co.solve(stochastic, co.KalmanML(compiled=False), throw=False)
    assert interpreted.model_evaluation == "interpreted (KalmanML(compiled=False))"
    assert interpreted.parameters == pytest.approx(result.parameters, rel=1e-6)


def _stationary_record(theta: dict, n: int, seed: int) -> np.ndarray:
    """``record`` after a burn-in as long as itself (SciPy's discretisation, not colloc's)."""
    return record(theta, 2 * n, seed)[n:]


def test_the_free_simulation_check_covers_records_of_the_model_and_rejects_others():
    free_simulation_check = kalman.free_simulation_check

    model = oscillator(DT)
    inside = {"rms": 0, "mean_speed": 0, "mean_power_frequency": 0}
    records = 20
    for seed in range(records):
        y = _stationary_record(TRUTH, 3000, seed=100 + seed)
        check = free_simulation_check(model, TRUTH, y[:, None], DT, outputs=["x"], draws=200, seed=seed)
        for stat in inside:
            inside[stat] += check["outputs"]["x"][stat]["inside"]
    # 95 % intervals: about 19 of 20 records inside; 15 allows for the draws' own noise
    assert all(count >= 15 for count in inside.values()), inside
    # a record three times larger, and one of a stiffer, more damped body: outside
    y = _stationary_record(TRUTH, 3000, seed=7)
    big = free_simulation_check(model, TRUTH, 3 * y[:, None], DT, outputs=["x"], draws=200)["outputs"]["x"]
    assert not big["rms"]["inside"] and not big["mean_speed"]["inside"]
    other = _stationary_record({**TRUTH, "k": 40.0, "c": 8.0}, 3000, seed=8)
    stiff = free_simulation_check(model, TRUTH, other[:, None], DT, outputs=["x"], draws=200)["outputs"]["x"]
    assert not stiff["mean_power_frequency"]["inside"] and stiff["spectrum"]["bands_inside"] < stiff["spectrum"]["bands"]


def test_the_report_carries_the_free_simulation_check():
    result = co.solve(problem(_stationary_record(TRUTH, 3000, seed=3)), co.KalmanML(), throw=False)
    check = result.info["free_simulation"]
    assert check["draws"] == 200 and set(check["outputs"]) == {"x"}
    assert check["outputs"]["x"]["rms"]["unit"] == "m" and check["outputs"]["x"]["mean_speed"]["unit"] == "m/s"
    assert "free simulation of x (200 draws" in result.summary()
    off = co.solve(problem(_stationary_record(TRUTH, 3000, seed=3)), co.KalmanML(free_draws=0), throw=False)
    assert off.info["free_simulation"] == {"skipped": "KalmanML(free_draws=0)"}


def test_an_unstable_model_or_a_gappy_record_skips_the_check_and_says_why():
    free_simulation_check = kalman.free_simulation_check

    y = _stationary_record(TRUTH, 500, seed=1)
    unstable = free_simulation_check(oscillator(DT), {**TRUTH, "c": -1.0}, y[:, None], DT, outputs=["x"])
    assert "unstable" in unstable["skipped"]
    gappy = y.copy()
    gappy[10] = np.nan
    assert "missing" in free_simulation_check(oscillator(DT), TRUTH, gappy[:, None], DT, outputs=["x"])["skipped"]


def test_the_steady_state_likelihood_and_its_gradient_are_the_exact_ones_once_settled():
    """The covariance held after a transient: on the oscillator (settled after ~100 samples) the
    NLL equals the exact filter's to rounding; its gradient (a new adjoint sweep) equals central
    differences of its own NLL and the exact gradient; a KalmanML fit with it reaches the exact
    fit's estimate, and the report says which likelihood was used."""
    from colloc.inference.kalman.estimation import _gradient_function, settling_samples

    model = oscillator(DT)
    y = record(TRUTH, 4000, seed=17)
    Y, W = model.observed(model.data_matrix(y[:, None]))
    theta = model.parameter_vector({"k": 3.5, "c": 0.7, "q": 0.6, "sigma": 0.025})
    s = model.squarings(theta) + 1
    assert settling_samples(model, theta, 4000) == 250
    exact_f, exact_g = _gradient_function(model, 4000, s, False)(theta, Y, W)
    held_f, held_g = _gradient_function(model, 4000, s, False, 250)(theta, Y, W)
    exact_g, held_g = np.array(exact_g).ravel(), np.array(held_g).ravel()
    assert float(held_f) == pytest.approx(float(exact_f), rel=1e-11)
    np.testing.assert_allclose(held_g, exact_g, rtol=1e-6)
    nll = model.nll_function(4000, s)  # the exact NLL as a function: its differences check both gradients
    for i in range(4):
        h = 1e-5 * abs(theta[i])
        e = np.zeros(4)
        e[i] = h
        central = (float(nll(theta + e, Y, W)) - float(nll(theta - e, Y, W))) / (2 * h)
        assert held_g[i] == pytest.approx(central, rel=1e-5, abs=1e-3)
    steady = co.solve(problem(y), co.KalmanML(free_draws=0), throw=False)
    exact = co.solve(problem(y), co.KalmanML(free_draws=0, transient=None), throw=False)
    assert steady.success and exact.success
    assert steady.info["steady_state"]["transient_samples"] == 250 and not steady.info["steady_state"]["refit_exact"]
    assert exact.info["steady_state"]["transient_samples"] is None
    for k in TRUTH:
        assert abs(steady.parameters[k] - exact.parameters[k]) < 0.01 * exact.standard_errors[k], k
    assert any("held after (steady state)" in n for n in steady.notes)


def _held_nll_numpy(theta: np.ndarray, y: np.ndarray, transient: int) -> float:
    """The NLL of the oscillator's filter whose covariance is updated over the first ``transient``
    samples and held after (the gain then fixed), written in NumPy from SciPy's discretisation."""
    Phi, Gam = discrete(dict(zip(["k", "c", "q", "sigma"], theta)), DT)
    Q, R = Gam @ Gam.T, theta[3] ** 2
    m, P = np.zeros(2), np.diag([0.5**2, 1.0**2])
    total = 0.0
    for k, yk in enumerate(y):
        S = P[0, 0] + R
        e = yk - m[0]
        total += 0.5 * (np.log(2 * np.pi * S) + e * e / S)
        K = (Phi @ P[:, 0]) / S
        m = Phi @ m + K * e
        if k < transient:
            P = Phi @ P @ Phi.T + Q - np.outer(K, K) * S
    return total


def test_the_held_covariance_likelihood_and_its_gradient_before_the_filter_has_settled():
    """Held after 20 samples, long before the Riccati recursion settles (~100 samples here), the
    steady-state likelihood is not the exact one; it equals a NumPy filter that holds the covariance
    from sample 20, and its adjoint gradient (the gain computed once, the mean's adjoint sweep, the
    outer-product sums) equals central differences of that NumPy NLL."""
    from colloc.inference.kalman.estimation import _gradient_function

    model = oscillator(DT)
    y = record(TRUTH, 2000, seed=21)
    Y, W = model.observed(model.data_matrix(y[:, None]))
    theta = np.array([3.5, 0.7, 0.6, 0.025])
    s = model.squarings(theta) + 1
    held_f, held_g = _gradient_function(model, 2000, s, False, 20)(theta, Y, W)
    exact_f = float(_gradient_function(model, 2000, s, False)(theta, Y, W)[0])
    held_f, held_g = float(held_f), np.array(held_g).ravel()
    assert abs(held_f - exact_f) > 1.0  # not settled: a different likelihood
    assert held_f == pytest.approx(_held_nll_numpy(theta, y, 20), rel=1e-10)
    for i in range(4):
        h = 1e-5 * abs(theta[i])
        e = np.zeros(4)
        e[i] = h
        central = (_held_nll_numpy(theta + e, y, 20) - _held_nll_numpy(theta - e, y, 20)) / (2 * h)
        assert held_g[i] == pytest.approx(central, rel=1e-5, abs=1e-3), i


def _held_nll_by_ad(model, s: int, y: np.ndarray, transient: int):
    """``theta -> (NLL, gradient)`` of the filter whose covariance is updated over the first
    ``transient`` samples and held after, written here sample by sample as a CasADi graph (the
    model's discretisation at ``s`` squarings, then plain filter arithmetic) and differentiated by
    CasADi's own reverse mode: no blocks and no hand-written adjoint."""
    import casadi as ca

    th = ca.MX.sym("theta", model.num_parameters)
    Phi, Gam, C, D, R, m0, P0 = model._discrete(s)(th)
    m, P, total = m0, P0, 0
    for k, yk in enumerate(y):
        S = C @ P @ C.T + D @ D.T + R
        e = yk - C @ m
        total = total + 0.5 * (ca.log(2 * np.pi * S) + e * e / S)
        K = (Phi @ P @ C.T + Gam @ D.T) / S
        m = Phi @ m + K @ e
        if k < transient:
            P = Phi @ P @ Phi.T + Gam @ Gam.T - K @ S @ K.T
    return ca.Function("held_reference", [th], [total, ca.gradient(total, th)])


@pytest.mark.parametrize("transient", [20, 290])
def test_the_compiled_held_blocks_equal_automatic_differentiation_of_a_per_sample_held_filter(transient):
    """The held part of the filter runs in compiled blocks of ``STEADY_BLOCK`` samples with a
    hand-written adjoint (:meth:`LinearGaussianModel._steady_blocks`): on 330 samples held after 20
    (six whole blocks and 10 samples more) and after 290 (40 samples, less than one block) the
    compiled NLL and gradient equal CasADi's reverse-mode AD of a filter written sample by sample
    to 1e-9 (relative to the largest gradient entry)."""
    from colloc.inference.kalman.estimation import _gradient_function
    from colloc.inference.kalman.model import STEADY_BLOCK

    model = oscillator(DT)
    N = 330
    assert (N - 20) // STEADY_BLOCK == 6 and (N - 20) % STEADY_BLOCK == 10 and N - 290 < STEADY_BLOCK
    y = record(TRUTH, N, seed=23)
    Y, W = model.observed(model.data_matrix(y[:, None]))
    theta = np.array([3.5, 0.7, 0.6, 0.025])
    s = model.squarings(theta) + 1
    f, g = _gradient_function(model, N, s, True, transient)(theta, Y, W)
    ref_f, ref_g = _held_nll_by_ad(model, s, y, transient)(theta)
    f, g, ref_f, ref_g = float(f), np.array(g).ravel(), float(ref_f), np.array(ref_g).ravel()
    assert f == pytest.approx(ref_f, rel=1e-9)
    assert np.max(np.abs(g - ref_g)) <= 1e-9 * np.max(np.abs(ref_g))
    if transient == 20:  # held before the filter settles: another likelihood than the exact one
        exact_f = float(_gradient_function(model, N, s, False)(theta, Y, W)[0])
        assert abs(exact_f - ref_f) > 1e-6 * abs(ref_f)


def test_a_search_alone_ends_where_the_full_fit_starts_and_reaches_the_same_estimate():
    """``maximum_likelihood(search_only=True)``: L-BFGS-B without the Newton steps or standard
    errors (NaN, not a success); the full fit from where it ended reaches the full fit's estimate."""
    model = oscillator(DT)
    y = record(TRUTH, 3000, seed=5)
    start = [2.0, 0.3, 1.0, 0.05]
    bounds = {"k": (0.1, 100.0), "c": (0.01, 20.0), "q": (1e-3, 100.0), "sigma": (1e-5, 1.0)}
    search = kalman.maximum_likelihood(model, y, start, bounds=bounds, optimizer="lbfgsb", search_only=True)
    assert not search.success and all(np.isnan(v) for v in search.standard_errors.values())
    full = kalman.maximum_likelihood(model, y, start, bounds=bounds, optimizer="lbfgsb")
    again = kalman.maximum_likelihood(model, y, search.parameters, bounds=bounds, optimizer="lbfgsb")
    assert full.success and again.success
    assert search.nll >= full.nll - 1e-6
    for k in TRUTH:
        assert abs(again.parameters[k] - full.parameters[k]) < 0.01 * full.standard_errors[k], k


def test_a_finish_from_a_search_starts_with_newton_and_reaches_the_same_estimate_with_fewer_gradients(monkeypatch):
    """``maximum_likelihood(searched=True)`` from where a search ended: the Newton steps first (no
    L-BFGS-B run that would find the search's stall again), the full fit's estimate to 0.01 standard
    errors and NLL to 1e-6, and fewer filter passes than the same finish with ``searched=False``."""
    from colloc.inference.kalman import estimation

    model = oscillator(DT)
    y = record(TRUTH, 3000, seed=5)
    start = [2.0, 0.3, 1.0, 0.05]
    bounds = {"k": (0.1, 100.0), "c": (0.01, 20.0), "q": (1e-3, 100.0), "sigma": (1e-5, 1.0)}
    full = kalman.maximum_likelihood(model, y, start, bounds=bounds, optimizer="lbfgsb")
    search = kalman.maximum_likelihood(model, y, start, bounds=bounds, optimizer="lbfgsb", search_only=True)
    passes = []
    original = estimation._gradient_function

    def counted(*args, **kwargs):
        inner = original(*args, **kwargs)

        def run(*a):
            passes[-1] += 1
            return inner(*a)
        return run
    monkeypatch.setattr(estimation, "_gradient_function", counted)
    fits = {}
    for searched in (False, True):
        estimation._REMEMBERED.clear()  # each finish pays for its own filter passes
        passes.append(0)
        fits[searched] = kalman.maximum_likelihood(model, y, search.parameters, bounds=bounds, optimizer="lbfgsb",
                                                   searched=searched)
    assert fits[True].success and "Newton steps from the end of the search" in fits[True].message
    assert "Newton" not in fits[False].message.split(";")[0]  # an L-BFGS-B run first
    assert passes[1] < passes[0], passes
    assert fits[True].nll == pytest.approx(full.nll, abs=1e-6)
    for k in TRUTH:
        assert abs(fits[True].parameters[k] - full.parameters[k]) < 0.01 * full.standard_errors[k], k


def test_a_gradient_asked_again_at_the_same_point_is_not_computed_again(monkeypatch):
    """The fit's gradients are remembered per model by the exact point, record, squarings and
    transient (``estimation._remembered``): the same point again costs no filter pass and gives the
    same values; another record of the same length, or another transient, is computed."""
    from colloc.inference.kalman import estimation

    passes = [0]
    original = estimation._gradient_function

    def counted(*args, **kwargs):
        inner = original(*args, **kwargs)

        def run(*a):
            passes[0] += 1
            return inner(*a)
        return run
    monkeypatch.setattr(estimation, "_gradient_function", counted)
    model = oscillator(DT)
    theta = np.array([3.5, 0.7, 0.6, 0.025])
    s = model.squarings(theta) + 1
    Y, W = model.observed(model.data_matrix(record(TRUTH, 2000, seed=3)[:, None]))
    Y2, W2 = model.observed(model.data_matrix(record(TRUTH, 2000, seed=4)[:, None]))
    direct_f, direct_g = original(model, 2000, s, False)(theta, Y, W)
    f, g = estimation._remembered(model, 2000, s, False)(theta, Y, W)
    f2, g2 = estimation._remembered(model, 2000, s, False)(theta.copy(), Y.copy(), W.copy())  # equal, not the same
    assert passes[0] == 1
    assert f == f2 == float(direct_f) and np.array_equal(g, np.array(direct_g).ravel()) and np.array_equal(g, g2)
    g2[0] += 1.0  # a caller's change does not reach what is remembered
    assert np.array_equal(estimation._remembered(model, 2000, s, False)(theta, Y, W)[1], g)
    other = estimation._remembered(model, 2000, s, False)(theta, Y2, W2)
    # a transient of 5 samples: the filter has not settled (at 250 it has, to the last digit, and
    # the values could not tell the two functions apart)
    held = estimation._remembered(model, 2000, s, False, 5)(theta, Y, W)
    assert passes[0] == 3 and other[0] != f and held[0] != f


def test_a_nested_model_is_fitted_first_and_the_full_one_from_its_estimate():
    """``StochasticProblem(nested=...)``: the nested model (here the oscillator with its damping fixed
    at the undamped limit of its range) is fitted first with its own starts, the full model once from
    its estimate; it reaches the optimum that the full model's own start reaches, and the report
    carries the nested NLL and the likelihood-ratio test of the freed parameter (a damped record:
    the test rejects the undamped model by far)."""
    y = record(TRUTH, 3000, seed=17)

    def undamped(t):
        return co.StochasticProblem(oscillator, t, outputs=["x"], start={"k": 2.0, "q": 1.0, "sigma": 0.05},
                                    fixed={"c": 0.01}, bounds={"k": (0.1, 100.0), "q": (1e-3, 100.0),
                                                               "sigma": (1e-5, 1.0)})

    direct = co.solve(problem(y), co.KalmanML(free_draws=0), throw=False)
    nested = co.solve(problem(y, nested=undamped, nested_start={"c": 0.05}), co.KalmanML(free_draws=0), throw=False)
    assert direct.success and nested.success
    assert nested.starts == {"count": 1}
    assert nested.initial_parameters["c"] == pytest.approx(0.05)  # the freed parameter's start
    assert nested.initial_parameters["k"] != pytest.approx(2.0)  # the others from the nested estimate
    assert nested.objective == pytest.approx(direct.objective, abs=1e-3)
    for k in ("k", "c", "q"):
        assert abs(nested.parameters[k] - direct.parameters[k]) < 0.05 * direct.standard_errors[k]
    info = nested.info["nested"]
    assert info["added"] == ["c"] and info["parameters"]["c"] == pytest.approx(0.01)
    assert info["nll"] > nested.objective + 10  # a damped record: the undamped optimum is far worse
    assert info["lr_statistic"] == pytest.approx(2 * (info["nll"] - nested.objective))
    # χ² with one degree of freedom: P(X > s) = erfc(√(s/2))
    assert info["p_value"] == pytest.approx(math.erfc(math.sqrt(info["lr_statistic"] / 2)), rel=1e-9)
    assert info["p_value"] < 1e-3
    assert any("nested model" in n and "likelihood-ratio" in n for n in nested.notes)
    assert direct.info["nested"] is None
    # a guess overrides the nested start: the full model from the guess, nothing nested
    guessed = co.solve(problem(y, nested=undamped, nested_start={"c": 0.05}), co.KalmanML(free_draws=0),
                       guess={"k": 3.0}, throw=False)
    assert guessed.info["nested"] is None and guessed.initial_parameters["k"] == 3.0
    with pytest.raises(co.ModelError, match="nested needs nested_start"):
        problem(y, nested=undamped)
    with pytest.raises(co.ModelError, match="unknown parameter.*zeta"):
        problem(y, nested=undamped, nested_start={"zeta": 1.0})
    with pytest.raises(co.OptionsError, match="start of c lies outside"):
        problem(y, nested=undamped, nested_start={"c": 100.0})

    def other_output(t):
        return co.StochasticProblem(oscillator, co.Trial(t.time, {"z": t["x"]}, name="z"), outputs=["z"],
                                    start={"k": 2.0, "c": 0.3, "q": 1.0, "sigma": 0.05})

    with pytest.raises(co.OptionsError, match="same outputs"):
        co.solve(problem(y, nested=other_output, nested_start={"c": 0.05}), co.KalmanML(free_draws=0))
