"""A result is built once, already judged: only :func:`colloc.finalize` (and the JSON reader)
makes a :class:`colloc.Result`; every estimator hands it an :class:`colloc.Estimate`."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import colloc as co

ROOT = Path(__file__).resolve().parents[1]
#: The only places allowed to call ``Result(...)``: the judge and the document reader.
MAKERS = {("colloc/results/report.py", "finalize"), ("colloc/results/result.py", "from_json")}


def _result_calls(path: Path):
    """(function name, line) of every ``Result(...)`` / ``co.Result(...)`` call in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []

    def walk(node, where):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            if isinstance(child, ast.Call):
                f = child.func
                called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if called == "Result":
                    found.append((where, child.lineno))
            walk(child, name)

    walk(tree, "<module>")
    return found


def test_only_finalize_and_the_reader_make_a_result():
    offenders = []
    for folder in ("colloc", "problems"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            offenders += [f"{rel}:{line} in {fn}()" for fn, line in _result_calls(path) if (rel, fn) not in MAKERS]
    assert not offenders, "Result(...) assembled outside colloc.finalize: " + "; ".join(offenders)


def test_the_scan_sees_a_result_assembled_by_hand(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import colloc as co\n\ndef fit():\n    return co.Result(problem='x')\n")
    assert _result_calls(bad) == [("fit", 4)]


def _estimate(**kw):
    index = pd.Index(np.arange(40) * 0.01, name="time")
    base = {"problem": "p", "method": "m", "success": True, "status": "Solve_Succeeded", "message": "converged.",
            "iterations": 4, "objective": 1.0, "parameters": {"a": 2.0}, "standard_errors": {"a": 0.1},
            "covariance": None, "trajectories": {}, "measurements": {},
            "residuals": {"t": pd.DataFrame({"y": 5.0 * np.ones(40)}, index=index)}, "timings": {}, "num_nodes": 40,
            "trials": ["t"], "versions": {}, "simulation": {"t": {"status": "ok", "nrmse": {}}}}
    base.update(kw)
    return co.Estimate(**base)


def test_finalize_decides_the_status_before_the_result_exists_and_leaves_the_estimate_alone():
    estimate = _estimate()
    result = co.finalize(estimate, fit={"y": 1.0})  # residuals 5 σ: a poor fit
    assert isinstance(result, co.Result) and not isinstance(result, co.Estimate)
    assert (result.success, result.status, result.solver_status) == (False, "poor_fit", "Solve_Succeeded")
    assert result.fit_verdict["verdict"] == "poor_fit" and "poor" in result.message
    # the estimator's record is not rewritten
    assert (estimate.success, estimate.status, estimate.message) == (True, "Solve_Succeeded", "converged.")
    assert not estimate.fit_verdict


def test_an_estimators_own_verdict_is_kept_when_finalize_makes_none():
    own = {"verdict": "good", "reason": "at the estimator's threshold", "signals": {}, "trials": {}}
    result = co.finalize(_estimate(fit_verdict=own), verdict=False)
    assert result.fit_verdict == own and result.success


def test_finalize_refuses_a_result_that_is_already_judged():
    judged = co.finalize(_estimate(), verdict=False)
    with pytest.raises(TypeError, match="already judged"):
        co.finalize(judged)


def test_the_verdict_is_a_field_of_the_document_and_old_documents_still_read():
    result = co.finalize(_estimate(), fit={"y": 1.0})
    doc = result.to_dict()
    assert doc["fit_verdict"]["verdict"] == "poor_fit"
    back = co.Result.from_json(result.to_json())
    assert back.fit_verdict["verdict"] == "poor_fit"
    old = dict(doc)
    old.pop("fit_verdict")
    old["info"] = {**old["info"], "fit_verdict": {"verdict": "good", "reason": "old"}}
    import json

    assert co.Result.from_json(json.dumps(old)).fit_verdict["reason"] == "old"


def test_what_the_report_reads_are_fields_not_info_keys_and_old_documents_still_read():
    import json

    start = {"source": "equation-error", "message": "equation error (linear least squares)", "time_s": 0.1}
    minima = [{"objective": 1.0, "parameters": {"a": 2.0}, "starts": 3, "start_indices": [0, 1, 2]}]
    result = co.finalize(_estimate(initial_estimate=start, starts={"count": 4, "failed": 1}, local_minima=minima,
                                   model_evaluation="compiled (cache hit)", initial_parameters={"a": 1.5},
                                   simulation={}),
                         verdict=False)
    text = result.summary()
    assert "model compiled (cache hit)" in text and "started from (equation-error): a 1.5" in text
    assert "4 starts · 1 failed · 1 distinct local minimum" in text
    assert not {"initial_estimate", "starts", "local_minima", "compiled"} & set(result.info)
    back = co.Result.from_json(result.to_json())
    assert (back.initial_estimate, back.starts, back.local_minima, back.model_evaluation) == (
        start, {"count": 4, "failed": 1}, minima, "compiled (cache hit)")
    # a document written before these were fields kept them in info
    old = result.to_dict()
    for key in ("initial_estimate", "starts", "local_minima", "model_evaluation"):
        old.pop(key)
    old["info"] = {"initial_estimate": start, "starts": {"count": 4, "failed": 1}, "local_minima": minima,
                   "compiled": "interpreted (small problem)"}
    again = co.Result.from_json(json.dumps(old))
    assert (again.initial_estimate, again.local_minima, again.model_evaluation) == (
        start, minima, "interpreted (small problem)")
    assert again.starts["count"] == 4
