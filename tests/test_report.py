"""The one path that judges every result (colloc.results.report.finalize) and its intervals."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import colloc as co
from colloc.results.report import INTERVAL_Z, finalize, parameter_intervals


def _result(parameters, standard_errors, *, residuals=None, simulation=None, status="Solve_Succeeded"):
    index = pd.Index(np.arange(50) * 0.01, name="time")
    residuals = residuals if residuals is not None else {"t": pd.DataFrame({"y": np.zeros(50)}, index=index)}
    return co.Estimate(problem="fake", method="m", success=status == "Solve_Succeeded", status=status, message="",
                     iterations=3, objective=1.0, parameters=dict(parameters), standard_errors=dict(standard_errors),
                     covariance=None, trajectories={}, measurements={}, residuals=residuals,
                     timings={}, num_nodes=50, trials=["t"], versions={},
                     simulation=simulation if simulation is not None else {"t": {"status": "ok", "nrmse": {}}})


# ---- intervals ----------------------------------------------------------------------------------
def test_a_positive_parameter_gets_a_log_scale_interval_that_stays_above_zero():
    # v = 2, se = 0.2: the delta method on log v gives log v ± 1.96·0.1
    iv, scale = parameter_intervals({"k": 2.0}, {"k": 0.2}, {"k": (0.0, math.inf)})
    assert scale["k"] == "log"
    assert iv["k"] == pytest.approx((2.0 * math.exp(-0.1 * INTERVAL_Z), 2.0 * math.exp(0.1 * INTERVAL_Z)))
    # a standard error far above the estimate: the Wald interval would reach −196; it is cut at 0
    # (the log scale's would span 85 decades: see the next test)
    iv, scale = parameter_intervals({"k": 1.0}, {"k": 100.0}, {"k": (0.0, 10.0)})
    assert scale["k"] == "truncated" and iv["k"] == pytest.approx((0.0, 1.0 + 100.0 * INTERVAL_Z))
    # a huge ratio does not overflow
    iv, _ = parameter_intervals({"k": 1e-300}, {"k": 1.0}, {"k": (0.0, math.inf)})
    assert iv["k"] == pytest.approx((0.0, INTERVAL_Z))
    # just inside one standard error of zero the log scale still holds
    iv, scale = parameter_intervals({"k": 1.0}, {"k": 0.99}, {"k": (0.0, math.inf)})
    assert scale["k"] == "log" and iv["k"][0] > 0


def test_unbounded_negative_and_physical_box_parameters():
    iv, scale = parameter_intervals({"a": -1.0, "b": -3.0, "c": 0.25}, {"a": 0.5, "b": 0.3, "c": 0.05},
                                    {"b": (-math.inf, 0.0), "c": (0.0, 1.0)}, {"c": (True, True)})
    assert scale == {"a": "linear", "b": "-log", "c": "logit"}
    assert iv["a"] == pytest.approx((-1.0 - INTERVAL_Z * 0.5, -1.0 + INTERVAL_Z * 0.5))
    assert iv["b"][0] < -3.0 < iv["b"][1] < 0.0
    assert iv["b"] == pytest.approx((-3.0 * math.exp(0.1 * INTERVAL_Z), -3.0 * math.exp(-0.1 * INTERVAL_Z)))
    # logit: z = 0.25, se on the logit scale 0.05 / (0.25·0.75)
    half = INTERVAL_Z * 0.05 / (0.25 * 0.75)
    expit = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    assert iv["c"] == pytest.approx((expit(math.log(1 / 3) - half), expit(math.log(1 / 3) + half)))
    assert 0.0 < iv["c"][0] < iv["c"][1] < 1.0


def test_no_standard_error_means_no_interval():
    iv, scale = parameter_intervals({"a": 1.0, "b": 2.0}, {"a": float("nan")}, {})
    assert all(math.isnan(v) for v in iv["a"] + iv["b"]) and scale == {"a": "none", "b": "none"}


def test_a_one_signed_estimate_within_one_se_of_zero_gets_a_wald_interval_cut_at_zero():
    # K_I = 0.2 ± 7 of a real subject: the log scale's delta method gave 0.2·exp(±1.96·35), 30
    # decades wide; the Wald interval cut at zero is [0, 0.2 + 1.96·7]
    iv, scale = parameter_intervals({"KI": 0.2, "n": -0.2, "g": 5.0}, {"KI": 7.0, "n": 7.0, "g": 2.5},
                                    {"KI": (0.0, 100.0), "n": (-100.0, 0.0), "g": (0.0, 100.0)})
    assert scale == {"KI": "truncated", "n": "truncated", "g": "log"}
    assert iv["KI"] == pytest.approx((0.0, 0.2 + INTERVAL_Z * 7.0))
    assert iv["n"] == pytest.approx((-0.2 - INTERVAL_Z * 7.0, 0.0))
    assert iv["g"][0] == pytest.approx(5.0 * math.exp(-INTERVAL_Z * 0.5))  # se < v: the log scale


# ---- finalize -------------------------------------------------------------------------------------
@pytest.mark.parametrize("physical, success, status", [(False, False, "parameter_at_bound"),
                                                       ((True, False), True, "Solve_Succeeded")])
def test_an_estimate_on_a_bound_fails_unless_the_bound_is_physical(physical, success, status):
    r = finalize(_result({"k": 0.0, "g": 5.0}, {"k": 0.1, "g": 1.0}), bounds={"k": (0.0, 10.0), "g": (0.0, 10.0)}, physical={"k": physical}, fit={"y": 1.0})
    assert (r.success, r.status, r.solver_status) == (success, status, "Solve_Succeeded")
    assert [w["parameters"] for w in r.warnings if w["code"] == "parameter_at_bound"] == [["k"]]
    assert all(math.isnan(v) for v in r.intervals["k"])  # on a bound the standard error says nothing
    assert r.interval_scales["g"] == "log" and r.intervals["g"][0] > 0


def test_a_poor_fit_fails_and_every_result_gets_a_verdict_and_says_why_it_has_no_simulation():
    rng = np.random.default_rng(0)
    index = pd.Index(np.arange(400) * 0.01, name="time")
    big = {"t": pd.DataFrame({"y": 3.0 * rng.standard_normal(400)}, index=index)}  # 3σ residuals
    r = finalize(_result({"a": 1.0}, {"a": 0.1}, residuals=big, simulation={}), fit={"y": 1.0},
                 no_simulation="a stochastic model")
    assert r.status == "poor_fit" and not r.success and r.fit_verdict["verdict"] == "poor_fit"
    assert "poor_fit" in {w["code"] for w in r.warnings}
    assert r.simulation_note == "a stochastic model"
    assert "forward simulation: none (a stochastic model)" in r.summary()
    # nothing with a declared noise: the verdict says it does not apply (not silently absent)
    r = finalize(_result({"a": 1.0}, {"a": 0.1}), fit={})
    assert r.fit_verdict["verdict"] == "not_applicable" and r.success


def test_a_derived_parameter_without_standard_error_is_not_called_unidentifiable():
    r = finalize(_result({"a": 1.0, "offset": 0.2}, {"a": 0.1, "offset": None}), fit={"y": 1.0},
                 derived={"offset": "the record's mean"})
    assert "not_identifiable" not in {w["code"] for w in r.warnings}
    r = finalize(_result({"a": 1.0, "offset": 0.2}, {"a": None, "offset": None}), fit={"y": 1.0},
                 derived={"offset": "the record's mean"})
    assert [w["parameters"] for w in r.warnings if w["code"] == "not_identifiable"] == [["a"]]


def test_intervals_survive_the_result_document():
    r = finalize(_result({"k": 2.0, "c": -1.0}, {"k": 0.2, "c": None}), bounds={"k": (0.0, math.inf)}, fit={"y": 1.0})
    back = co.Result.from_json(r.to_json())
    assert back.intervals["k"] == pytest.approx(r.intervals["k"]) and back.interval_scales == r.interval_scales
    assert all(math.isnan(v) for v in back.intervals["c"])
    table = back.parameter_table()
    assert table.loc["k", "ci95_low"] == pytest.approx(r.intervals["k"][0])
    assert "95 % intervals of k on the log scale (parameters of one sign)" in back.format_table()


# ---- the model's declaration ---------------------------------------------------------------------------
def test_bounds_are_search_ranges_unless_declared_physical():
    m = co.Model("m")
    m.parameter("a", bounds=(0, 1))
    m.parameter("b", bounds=(0, 1), physical=True)
    m.parameter("c", bounds=(0, None), physical=(True, False))  # upper infinite: nothing to search
    m.parameter("d", bounds=(0, 5), physical=(True, False))
    m.parameter("e")
    assert m.search_ranges == ("a", "d")
    assert m.physical_bounds("d") == (True, False) and m.physical_bounds("a") == (False, False)
    with pytest.raises(co.ModelError, match="physical= or search_range="):
        m.parameter("f", bounds=(0, 1), physical=True, search_range=True)
    with pytest.raises(co.ModelError, match="pair"):
        m.parameter("g", bounds=(0, 1), physical=(True,))


# ---- through the command line: the semibatch demo's fit that hit a bound -----------------------------------
def test_one_semibatch_experiment_with_a_rate_on_its_search_bound_is_a_named_failure(tmp_path):
    """One experiment (41 samples) of the Pyomo semibatch reactor cannot place k2/E2 (their
    estimates correlate at 1.000): E2 ends on its lower bound. That fit once printed success."""
    from colloc_problems._data import data_path

    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "colloc.cli", "identify", "semibatch", "--data",
                           str(data_path("semibatch", "exp1.csv")), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = co.Result.from_json(out)
    assert doc.status == "parameter_at_bound" and doc.solver_status == "Solve_Succeeded"
    assert "E2" in next(w for w in doc.warnings if w["code"] == "parameter_at_bound")["parameters"]
