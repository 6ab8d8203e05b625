"""The equation-error first estimate (the default start) and several starts on Dask.

Pendulum records here come from an independent generator (``scipy.integrate.solve_ivp``,
DOP853, tolerances 1e-11), not from colloc's simulation.
"""

from __future__ import annotations

import json

import casadi as ca
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import colloc as co
from colloc.base.engine import pack, unpack
from colloc.cli import main
from colloc.solving.start import equation_error
from colloc.solving.starts import _Tasks, cluster_minima, explore_method, start_box, start_points
from colloc_problems import pendulum, two_link, two_link_delay
from colloc_problems._data import data_path

QUIET = co.Ipopt(standard_errors=False, simulate=False)


def pendulum_record(p: float, theta0: float, omega0: float, sigma: float, seed: int,
                    duration: float = 10.0, rate: float = 100.0) -> co.Trial:
    """θ only, sampled at ``rate``; θ'' = −p sin θ integrated by solve_ivp."""
    t = np.arange(int(round(duration * rate)) + 1) / rate
    sol = solve_ivp(lambda _t, y: [y[1], -p * np.sin(y[0])], (0.0, duration), [theta0, omega0], t_eval=t,
                    method="DOP853", rtol=1e-11, atol=1e-11)
    assert sol.success
    theta = sol.y[0] + sigma * np.random.default_rng(seed).standard_normal(t.size)
    return co.Trial(t, {"theta": theta}, name="record")


def grid_records(count: int, seed: int):
    """(p, θ0, ω0, σ) drawn log-uniformly in p over [0.1, 1000] s⁻²."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        p = float(np.exp(rng.uniform(np.log(0.1), np.log(1000.0))))
        theta0 = float(rng.choice([-1.0, 1.0]) * rng.uniform(0.3, 2.5))
        omega0 = float(rng.uniform(-0.5, 0.5) * np.sqrt(p))
        sigma = float(rng.choice([0.0, 0.01, 0.05]))
        yield i, p, theta0, omega0, sigma


def identify_record(p, theta0, omega0, sigma, seed):
    trial = pendulum_record(p, theta0, omega0, sigma, seed)
    problem = pendulum.problem([trial], noise_std=max(sigma, 0.01))
    # three nodes per sample: at h·√p ≈ 0.3 the midpoint rule's own bias is ~1 % (start-independent)
    return co.solve(problem, co.Midpoint(num_nodes=3001), throw=False)


def correct(result, p: float) -> bool:
    """Within 1 %, or (where the noise does not pin p to 1 %) within 4 standard errors."""
    err = abs(result.parameters["p"] - p)
    se = (result.standard_errors or {}).get("p", np.nan)
    return err <= 0.01 * p or (np.isfinite(se) and err <= 4 * se)


QUICK_RECORDS = [
    (23.0, 1.0, 0.0, 0.0),      # the reported case: clean, colloc said p = 1.58
    (150.0, 1.0, 0.0, 0.05),    # the reported case: noisy, colloc said p = 3.45
    (0.1, 2.0, 0.1, 0.01),
    (3.0, -0.4, 1.5, 0.05),
    (60.0, 2.8, -2.0, 0.0),
    (1000.0, 0.3, 5.0, 0.01),
]


@pytest.mark.parametrize("p, theta0, omega0, sigma", QUICK_RECORDS)
def test_default_start_finds_p_on_independent_records(p, theta0, omega0, sigma):
    result = identify_record(p, theta0, omega0, sigma, seed=3)
    assert result.success, result.summary()
    assert result.parameters["p"] == pytest.approx(p, rel=0.01)
    assert result.initial_estimate["source"] == "equation-error"
    assert result.initial_parameters["p"] != 1.0  # not the declared guess


@pytest.mark.slow
def test_default_start_grid_of_records():
    wrong, wrong_successes, rows = 0, 0, []
    records = list(grid_records(60, seed=11))
    for i, p, theta0, omega0, sigma in records:
        r = identify_record(p, theta0, omega0, sigma, seed=i)
        if not correct(r, p):
            wrong += 1
            wrong_successes += int(r.success)
            rows.append((p, theta0, omega0, sigma, r.parameters["p"], r.success))
    print(f"\n{len(records) - wrong}/{len(records)} correct, wrong successes {wrong_successes}: {rows}")
    assert len(records) - wrong >= 0.98 * len(records), rows
    assert wrong_successes == 0, rows


def test_standard_error_of_a_slow_pendulum_is_estimated():
    """Record 28 of the grid: p = 0.175 s⁻², σ = 0.05 rad.  The KKT solution is ~10⁵ times
    the right-hand side, so a residual relative to the right-hand side alone cannot fall
    below ~1e-8 and the standard error used to come back NaN (a 1.1 % error then counted as
    a wrong success); the normwise backward error is at round-off."""
    p = 0.17520512737430077
    r = identify_record(p, 1.6999951280988737, -0.14242091978224417, 0.05, seed=28)
    se = r.standard_errors["p"]
    assert r.success and np.isfinite(se) and 0 < se < 0.05 * p
    assert abs(r.parameters["p"] - p) <= 4 * se
    assert not r.info["covariance_message"]


def test_equation_error_is_exact_on_clean_fine_linear_data():
    """Two-link gains (residual linear in K): clean states at 1 kHz, weights ~ exact data."""
    _noisy, clean = two_link.simulate_trial(duration=10.0, rate=1000.0, seed=4, return_clean=True)
    fit = {s: 1e16 for s in two_link.STATE_NAMES}
    problem = co.Problem(two_link.model(), [clean], fit=fit, name="two-link")
    estimate = equation_error(problem)
    assert estimate.source == "equation-error" and estimate.linear is True
    got = np.array([estimate.parameters[k] for k in two_link.TRUE])
    want = np.array(list(two_link.TRUE.values()))
    np.testing.assert_allclose(got, want, rtol=2e-6)


def test_nonlinear_residual_goes_through_the_parameter_nlp():
    """τ makes the delayed two-link residual nonlinear in p: bounded NLP, inside the bounds."""
    trial = two_link_delay.load_trial(data_path("two_link", "two_link_delay.csv"))
    estimate = equation_error(two_link_delay.problem([trial]))
    assert estimate.linear is False and estimate.source == "equation-error"
    lo, hi = two_link_delay.TAU_BOUNDS
    assert lo <= estimate.parameters["tau"] <= hi
    assert "NLP" in estimate.message


def test_two_link_same_answer_from_zero_gains_and_from_equation_error():
    trial = two_link.load_trial(data_path(*two_link.DEFAULT_DATA))
    problem = two_link.problem([trial])
    from_zero = co.solve(problem, start="guess", solver=QUIET)
    from_ee = co.solve(problem, solver=QUIET)
    assert all(v == 0.0 for v in from_zero.initial_parameters.values())
    assert from_ee.initial_estimate["source"] == "equation-error"
    for k, v in from_zero.parameters.items():
        assert from_ee.parameters[k] == pytest.approx(v, rel=1e-5, abs=1e-4)
        # the estimate starts near the answer (within 10 % of the largest gain)
        assert abs(from_ee.initial_parameters[k] - v) < 0.1 * max(two_link.TRUE.values())
    assert from_zero.iterations > 0 and from_ee.iterations > 0
    print(f"\niterations from K0 = 0: {from_zero.iterations}, from the equation-error start: {from_ee.iterations}")


def test_user_guess_is_the_start_unless_equation_error_is_asked_for():
    trial = pendulum_record(10.0, 1.0, 0.0, 0.01, 0)
    problem = pendulum.problem([trial], noise_std=0.01)
    r = co.solve(problem, guess={"p": 7.0}, solver=QUIET)
    assert r.initial_parameters == {"p": 7.0} and r.initial_estimate["source"] == "guess"
    r = co.solve(problem, guess={"p": 7.0}, start="equation-error", solver=QUIET)
    assert r.initial_estimate["source"] == "equation-error"
    assert r.initial_parameters["p"] == pytest.approx(10.0, rel=0.02)


def test_rank_deficient_estimate_falls_back_to_the_guesses_and_says_so():
    m = co.Model("sum")
    theta = m.state("theta")
    omega = m.state("omega", scale=3.0)
    a = m.parameter("a", bounds=(0.0, 100.0), guess=2.0)
    b = m.parameter("b", bounds=(0.0, 100.0), guess=3.0)
    m.set_der(theta, omega)
    m.set_der(omega, -(a + b) * ca.sin(theta))
    trial = pendulum_record(10.0, 1.0, 0.0, 0.0, 0)
    estimate = equation_error(co.Problem(m, [trial], fit={"theta": 1e4}))
    assert estimate.source == "guess"
    assert estimate.parameters == {"a": 2.0, "b": 3.0}
    assert "rank deficient" in estimate.message and "a" in estimate.message and "b" in estimate.message


def test_unmeasured_position_comes_from_a_collocation_solve_at_the_guess():
    """Only ω measured: θ is no derivative of a measured state."""
    t = np.arange(1001) / 100
    sol = solve_ivp(lambda _t, y: [y[1], -10.0 * np.sin(y[0])], (0, 10), [1.0, 0.0], t_eval=t,
                    rtol=1e-11, atol=1e-11, method="DOP853")
    trial = co.Trial(t, {"omega": sol.y[1]}, name="omega-only")
    problem = co.Problem(pendulum.model(), [trial], fit={"omega": 1e4})
    r = co.solve(problem, solver=QUIET, throw=False)
    est = r.initial_estimate
    assert est["states"]["theta"] == "collocation at the guess"
    assert est["source"] == "equation-error"
    assert 0.01 <= r.initial_parameters["p"] <= 1e4


def test_estimate_outside_the_bounds_is_kept_inside():
    m = pendulum.model()
    m.variable("p").upper[:] = 5.0  # the data say 10
    trial = pendulum_record(10.0, 1.0, 0.0, 0.0, 0)
    estimate = equation_error(co.Problem(m, [trial], fit={"theta": 1e4}))
    assert estimate.parameters["p"] == pytest.approx(5.0)


def test_problem_survives_the_trip_to_a_worker():
    for module, path in ((pendulum, pendulum.DEFAULT_DATA), (two_link_delay, ("two_link", "two_link_delay.csv"))):
        full = module.load_trial(data_path(*path))
        head = co.Trial(full.time[:801], {k: v[:801] for k, v in full.signals.items()}, name="head")
        problem = module.problem([head])
        copy = unpack(pack(problem))
        a = co.solve(problem, start="guess", solver=QUIET)
        b = co.solve(copy, start="guess", solver=QUIET)
        assert b.objective == a.objective and b.parameters == a.parameters


def test_start_points_are_seeded_inside_the_bounds_and_log_spaced():
    problem = pendulum.problem([pendulum_record(10.0, 1.0, 0.0, 0.0, 0)])
    pts = start_points(problem, 64, seed=5)
    assert pts == start_points(problem, 64, seed=5) and pts != start_points(problem, 64, seed=6)
    p = np.array([d["p"] for d in pts])
    assert np.all((p >= 0.01) & (p <= 1e4))
    # log-uniform over six decades: about a sixth of the points in each decade
    counts = np.histogram(np.log10(p), bins=[-2, -1, 0, 1, 2, 3, 4])[0]
    assert np.all(counts >= 8) and np.all(counts <= 18), counts
    lo, hi, log = start_box(two_link.problem([two_link.simulate_trial(duration=1.0, noise=False)]))
    assert not log.any() and np.all(hi - lo == pytest.approx(2000.0))  # guess 0 ± 10 scales of 100


def test_cluster_minima_groups_by_objective_and_parameters():
    s = {"p": 1.0}
    runs = [{"start": 0, "objective": 5.0, "parameters": {"p": 2.0}, "scale": s},
            {"start": 1, "objective": 1.0, "parameters": {"p": 10.0}, "scale": s},
            {"start": 2, "objective": 1.0 + 1e-7, "parameters": {"p": 10.0 + 1e-6}, "scale": s},
            {"start": 3, "objective": 5.0, "parameters": {"p": 3.0}, "scale": s}]
    minima = cluster_minima(runs)
    assert [m["starts"] for m in minima] == [2, 1, 1]
    assert minima[0]["start_indices"] == [1, 2] and minima[0]["objective"] == 1.0
    assert {m["parameters"]["p"] for m in minima[1:]} == {2.0, 3.0}


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"}, silence_logs=40)
    with Client(cluster) as c:
        yield c
    cluster.close()


def test_several_starts_find_the_global_minimum_where_the_guess_fails(client):
    trial = pendulum_record(150.0, 1.0, 0.0, 0.05, seed=0)
    problem = pendulum.problem([trial], noise_std=0.05)
    single = co.solve(problem, start="guess", solver=QUIET, throw=False)
    assert abs(single.parameters["p"] / 150.0 - 1) > 0.1  # the wrong local minimum
    multi = co.solve(problem, start="guess", starts=4, client=client, solver=QUIET)
    assert multi.parameters["p"] == pytest.approx(150.0, rel=0.01)
    minima = multi.local_minima
    assert len(minima) >= 2
    assert minima[0]["objective"] == pytest.approx(multi.objective)
    assert minima[0]["objective"] < minima[1]["objective"]
    assert sum(m["starts"] for m in minima) == multi.starts["converged"]
    assert multi.starts["runs"][0]["initial_parameters"] == {"p": 1.0}
    assert any(abs(m["parameters"]["p"] - single.parameters["p"]) < 1e-3 * single.parameters["p"] for m in minima)
    assert "distinct local minima" in multi.summary()
    back = co.Result.from_json(multi.to_json())
    assert back.local_minima[0]["starts"] == minima[0]["starts"]
    assert back.initial_parameters == multi.initial_parameters


def test_starts_explore_with_the_midpoint_rule_and_polish_with_the_method():
    """No client: the local process pool.  The explored minima are re-solved with Radau, so
    every listed objective is Radau's (checked against a separate Radau solve)."""
    trial = pendulum_record(150.0, 1.0, 0.0, 0.05, seed=0)
    problem = pendulum.problem([trial], noise_std=0.05)
    multi = co.solve(problem, co.Radau(degree=2), start="guess", starts=4, solver=QUIET)
    info = multi.starts
    assert info["explored_with"] == "midpoint" and info["start0"]["method"] == "radau2"
    assert [r["method"] for r in info["runs"]] == ["midpoint"] * 4
    assert info["polish"] and all(r["method"] == "radau2" for r in info["polish"])
    assert multi.parameters["p"] == pytest.approx(150.0, rel=0.01)
    minima = multi.local_minima
    again = co.solve(problem, co.Radau(degree=2), guess=minima[0]["parameters"], solver=QUIET)
    assert again.objective == pytest.approx(minima[0]["objective"], rel=1e-6)
    radau = [info["start0"]["objective"]] + [r["objective"] for r in info["polish"]]
    for m in minima:  # a Radau objective, not an explored (midpoint) one
        assert any(m["objective"] == pytest.approx(v, rel=1e-9) for v in radau)
        assert all(m["objective"] != r["objective"] for r in info["runs"])
    # every start is accounted for: in a minimum or failed
    assert sum(m["starts"] for m in multi.local_minima) + info["failed"] == 4


@pytest.mark.parametrize("method, explored", [
    (co.Radau(degree=3), "midpoint"), (co.HermiteSimpson(), "midpoint"), (co.Midpoint(), "midpoint"),
    (co.Trapezoidal(), "trapezoidal"), (co.BackwardEuler(), "backward-euler"),
])
def test_explore_method_is_cheaper_only_where_it_can_be(method, explored):
    m = explore_method(method)
    assert m.name == explored
    assert (m is method) == (len(method.node_fractions) == 2)


def test_a_worker_process_that_dies_is_a_failed_start():
    import os as _os

    from colloc.base.engine import process_pool

    problem = pendulum.problem([pendulum_record(10.0, 1.0, 0.0, 0.01, seed=0)])
    blob = pack((problem, co.Midpoint(), QUIET, lambda *a: _os._exit(3)))
    with process_pool(1, preload=("colloc.solving.solve",)) as pool:
        runs = _Tasks(pool=pool).run(blob, [(1, {"p": 1.0}), (2, {"p": 2.0})])
    assert [r["start"] for r in runs] == [1, 2]
    assert all(r["result"] is None and "BrokenProcessPool" in r["error"] for r in runs)


def test_process_pool_workers_are_single_threaded():
    from colloc.base.engine import THREAD_ENV, process_pool

    with process_pool(2) as pool:
        envs = list(pool.map(_environment_of_worker, list(THREAD_ENV)))
    assert envs == list(THREAD_ENV.values())


def _environment_of_worker(name):
    import os as _os

    return _os.environ.get(name)


def test_a_failing_start_is_counted_not_fatal(client):
    trial = pendulum_record(10.0, 1.0, 0.0, 0.01, seed=0)
    problem = pendulum.problem([trial], noise_std=0.01)
    r = co.solve(problem, starts=3, client=client, solver=co.Ipopt(max_iter=1, standard_errors=False,
                                                                       simulate=False), throw=False)
    assert r.starts["count"] == 3
    assert r.starts["failed"] == 3 - r.starts["converged"]
    assert r.starts["failed"] >= 1


@pytest.mark.parametrize("kwargs, match", [
    ({"starts": 0}, r"starts=0.*integer >= 1"),
    ({"starts": 2.5}, r"starts=2.5"),
    ({"starts": True}, r"starts=True"),
    ({"start": "random"}, r"start='random'.*equation-error"),
    ({"client": "localhost:8786"}, r"client=.*dask.distributed.Client"),
    ({"seed": -1}, r"seed=-1"),
])
def test_bad_start_options_name_the_argument(kwargs, match):
    problem = pendulum.problem([pendulum_record(10.0, 1.0, 0.0, 0.0, 0)])
    with pytest.raises(co.OptionsError, match=match):
        co.solve(problem, **kwargs)


def test_result_document_has_initial_parameters(tmp_path):
    problem = pendulum.problem([pendulum_record(10.0, 1.0, 0.0, 0.01, 0)], noise_std=0.01)
    r = co.solve(problem, solver=QUIET)
    doc = json.loads(r.to_json(tmp_path / "r.json") or (tmp_path / "r.json").read_text())
    assert doc["initial_parameters"] == r.initial_parameters
    for key in ("problem", "method", "success", "status", "iterations", "objective", "parameters",
                "timings", "num_nodes", "trials", "versions"):
        assert key in doc
    assert "started from (equation-error)" in r.summary()


def test_cli_starts(tmp_path, capsys):
    csv = tmp_path / "rec.csv"
    trial = pendulum_record(150.0, 1.0, 0.0, 0.05, seed=0)
    np.savetxt(csv, np.column_stack([trial.time, trial["theta"]]), delimiter=",", header="time,theta",
               comments="")
    out = tmp_path / "r.json"
    code = main(["identify", "pendulum", "--data", str(csv), "--starts", "2", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    doc = json.loads(out.read_text())
    assert doc["parameters"]["p"] == pytest.approx(150.0, rel=0.01)
    assert doc["starts"]["count"] == 2 and len(doc["local_minima"]) >= 1
    assert "initial_parameters" in doc and "2 starts" in text


@pytest.mark.parametrize("value", ["0", "two", "1.5", "-3"])
def test_cli_rejects_bad_starts(value, tmp_path, capsys):
    code = main(["identify", "pendulum", "--data", str(data_path(*pendulum.DEFAULT_DATA)), "--starts", value])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "--starts" in err and "Traceback" not in err


def test_nonlinear_residual_starts_from_the_equation_error_nlp_by_default():
    # Before, a residual nonlinear in the parameters started from the declared guesses: the
    # equation-error τ was 36–64 ms against 23.7 ms, because the smoothing spline fitted the
    # noise in some stretches (tests/test_default_start_nonlinear.py).  Now the default is the
    # equation-error NLP, and the solve from it reaches the same optimum as from the guesses.
    full = two_link_delay.load_trial(data_path("two_link", "two_link_delay.csv"))
    head = co.Trial(full.time[:401], {k: v[:401] for k, v in full.signals.items()}, name="head")
    problem = two_link_delay.problem([head])
    r = co.solve(problem, solver=QUIET, throw=False)
    est = r.initial_estimate
    assert est["source"] == "equation-error" and est["linear"] is False and "NLP" in est["message"]
    assert r.initial_parameters["tau"] != pytest.approx(0.01)  # not the declared guess
    from_guess = co.solve(problem, solver=QUIET, start="guess", throw=False)
    assert r.success == from_guess.success
    assert r.objective == pytest.approx(from_guess.objective, rel=1e-6)
    assert r.parameters["tau"] == pytest.approx(from_guess.parameters["tau"], abs=1e-5)


def test_a_worker_reuses_its_nlp_across_starts_and_gets_the_same_answers():
    """Several starts' workers keep the NLP they built (``reuse_builds``): the second start on
    the same problem object is solved by the same IPOPT instance, and both starts give what a
    fresh build from each start gives."""
    from colloc.solving import collocation

    problem = pendulum.problem([pendulum_record(9.0, 0.6, 0.0, 0.01, seed=3)])
    method = co.Midpoint()
    starts = [{"p": 2.0}, {"p": 40.0}]
    fresh = [co.solve(problem, method, solver=QUIET, guess=g) for g in starts]
    collocation.reuse_builds()
    try:
        first = collocation.solve_collocation(problem, method, solver=QUIET, guess=starts[0], progress=None)
        kept = collocation._KEPT["nlpsol"]
        second = collocation.solve_collocation(problem, method, solver=QUIET, guess=starts[1], progress=None)
        assert collocation._KEPT["nlpsol"] is kept  # reused, not rebuilt
        other = pendulum.problem([pendulum_record(9.0, 0.6, 0.0, 0.01, seed=3)])  # another object: rebuilt
        collocation.solve_collocation(other, method, solver=QUIET, guess=starts[0], progress=None)
        assert collocation._KEPT["nlpsol"] is not kept
    finally:
        collocation.reuse_builds(False)
    assert collocation._KEPT is None
    for reused, new, start in zip([first, second], fresh, starts):
        assert reused.success and new.success
        assert reused.iterations == new.iterations, start
        assert reused.parameters["p"] == pytest.approx(new.parameters["p"], rel=1e-10), start


NO_GUARD_SCRIPT = """
import sys, pathlib
pathlib.Path(sys.argv[1]).open("a").write("ran\\n")
import numpy as np
import colloc as co
from colloc_problems import pendulum
t = np.arange(0, 5.001, 0.01)
theta = 0.5 * np.cos(3 * t) + 0.01 * np.random.default_rng(0).standard_normal(t.size)
r = co.solve(pendulum.problem([co.Trial(t, {"theta": theta}, name="r")]),
             solver=co.Ipopt(standard_errors=False, simulate=False), starts=3)
print("FAILED", r.starts["failed"])
"""


@pytest.mark.parametrize("how", ["path", pytest.param("module", marks=pytest.mark.slow)])
def test_a_script_without_a_main_guard_runs_once_and_every_start_runs(tmp_path, how):
    """multiprocessing prepares each worker by importing the parent's main script again; a
    user's script without ``if __name__ == "__main__":`` then solved again in every worker,
    which multiprocessing stops, and every start but the first was lost (BrokenProcessPool).
    The workers of several starts must not import it (colloc.base.fork_main)."""
    import os
    import subprocess
    import sys

    (tmp_path / "fit_script.py").write_text(NO_GUARD_SCRIPT)
    marks = tmp_path / "marks.txt"
    command = [sys.executable, "fit_script.py"] if how == "path" else [sys.executable, "-m", "fit_script"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([*command, str(marks)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "FAILED 0" in out.stdout, out.stdout + out.stderr[-2000:]
    assert marks.read_text().splitlines() == ["ran"]  # the script's top level ran in this process only


def test_a_start_compiles_its_nlp_on_a_cache_miss_and_leaves_a_users_setting(monkeypatch):
    """Every start of a call solves the same NLP: inside a start's task an NLP of
    FUSE_CACHED_ABOVE instances or more compiles on a cache miss (the default leaves it on
    CasADi's graphs below FUSE_ABOVE); the process's setting is restored after, and a user's
    own ``$COLLOC_FUSE_ABOVE`` is not touched."""
    import os

    from colloc.solving.starts import _compiled_on_a_miss
    from colloc.transcription.nlp import FUSE_ABOVE, FUSE_CACHED_ABOVE

    monkeypatch.delenv("COLLOC_FUSE_ABOVE", raising=False)
    assert FUSE_CACHED_ABOVE < FUSE_ABOVE
    with _compiled_on_a_miss():
        assert os.environ["COLLOC_FUSE_ABOVE"] == str(FUSE_CACHED_ABOVE)
    assert "COLLOC_FUSE_ABOVE" not in os.environ
    monkeypatch.setenv("COLLOC_FUSE_ABOVE", "123")
    with _compiled_on_a_miss():
        assert os.environ["COLLOC_FUSE_ABOVE"] == "123"
    assert os.environ["COLLOC_FUSE_ABOVE"] == "123"
