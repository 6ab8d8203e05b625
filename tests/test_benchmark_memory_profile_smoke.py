"""Smoke tests of benchmarks/memory_profile.py (its --quick mode: 1,201 nodes; the --breakdown
log parser) and benchmarks/stage_solvers.py."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and calls glibc's malloc_trim")
def test_memory_profile_benchmark_runs(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its `_report` helper
    spec = importlib.util.spec_from_file_location("memory_profile", ROOT / "benchmarks" / "memory_profile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "m.json"
    assert module.main(["--quick", "--out", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["nodes"] == 1201 and doc["iterations"] > 0
    steps = [r["step"] for r in doc["steps"]]
    assert steps == ["start", "imports", "file read", "transcription", "NLP assembled", "nlpsol", "solved",
                     "solver freed", "residual functions"]
    peaks = [r["peak_mb"] for r in doc["steps"]]
    assert peaks == sorted(peaks) and all(r["held_mb"] <= r["rss_mb"] + 1 for r in doc["steps"])
    assert {"g", "jac_g", "hess_lag", "res", "jac_res"} <= set(doc["functions"])
    assert set(doc["calls"]) >= {"nlp_jac_g", "nlp_hess_l"} and len(doc["estimates"]) == 8
    assert all("held_mb" in v and v["work_mb"] >= 0 for v in doc["functions"].values())


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# an IPOPT (print level 5) + MUMPS (mumps_print_level 2) log, shortened, numbers invented
_LOG = """\
Number of nonzeros in equality constraint Jacobian...:     1234
Number of nonzeros in inequality constraint Jacobian.:        0
Number of nonzeros in Lagrangian Hessian.............:      567
Entering DMUMPS 5.8.2 from C interface with JOB, N, NNZ =   1         210           2011
 -- (20) Number of entries in factors (estim.)  =            4321
 --  (3) Real space for factors    (estimated)  =            5000
    Total space in MBytes, IC factorization      (INFOG(17)):              12
    Total space in MBytes,  OOC factorization    (INFOG(27)):               3
Total number of variables............................:      110
Total number of equality constraints.................:      100
Entering DMUMPS 5.8.2 from C interface with JOB, N, NNZ =   2         210           2011
  --- (35)                                     =           7
 ** Memory effectively used, total in Mbytes    (INFOG(22)):          9
 INFOG  (9) Real space for factors                  =            4999
 INFOG (10) Integer space for factors               =             800
 INFOG (29) Number of entries in factors            =            4400
Entering DMUMPS 5.8.2 from C interface with JOB, N, NNZ =   2         210           2011
 INFOG  (9) Real space for factors                  =            5100
Entering DMUMPS 5.8.2 from C interface with JOB =  -2
"""


def test_solver_log_parsed():
    log = _load("memory_profile").parse_solver_log(_LOG)
    assert log["ipopt"] == {"variables": 110, "equality_constraints": 100, "jacobian_nnz": 1234,
                            "inequality_jacobian_nnz": 0, "hessian_nnz": 567}
    assert (log["kkt_order"], log["kkt_nnz"], log["factorizations"]) == (210, 2011, 2)
    # the last value of each INFOG; "--- (35)" is not an INFOG line
    assert log["infog"] == {20: 4321, 3: 5000, 17: 12, 27: 3, 22: 9, 9: 5100, 10: 800, 29: 4400}


def test_kkt_breakdown_arithmetic():
    mb = 2**20
    log = {"kkt_nnz": mb, "infog": {9: mb, 10: mb, 22: 7, 19: 11, 17: 11, 27: 2, 29: 5, 11: 38}}
    b = _load("memory_profile").kkt_breakdown(log, 100.0, 350.0, 300.0)
    # one triplet copy: 4 + 4 + 8 bytes a nonzero; doubles and 32-bit integers in the factor
    assert (b["kkt_triplet_mb"], b["factor_real_mb"], b["factor_int_mb"]) == (16.0, 8.0, 4.0)
    assert (b["over_nlp_mb"], b["mumps_used_mb"], b["mumps_allocated_mb"], b["max_front"]) == (250.0, 7.0, 11.0, 38)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and calls glibc's malloc_trim")
def test_memory_profile_breakdown_quick(tmp_path):
    # a process of its own: MUMPS's statistics need gfortran's unit 6 unbuffered from the start
    out, log = tmp_path / "k.json", tmp_path / "k.log"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "memory_profile.py"), "--quick", "--breakdown",
                    "--log", str(log), "--out", str(out)], check=True, capture_output=True, cwd=tmp_path)
    doc = json.loads(out.read_text(encoding="utf-8"))
    kkt = doc["kkt"]
    n, m = doc["variables"], doc["constraints"]
    assert kkt["ipopt"]["variables"] == n and kkt["ipopt"]["equality_constraints"] == m
    # IPOPT's augmented system: Hessian, Jacobian and one diagonal entry a row (lower triangle)
    assert kkt["kkt_order"] == n + m
    assert kkt["kkt_nnz"] == kkt["ipopt"]["jacobian_nnz"] + kkt["ipopt"]["hessian_nnz"] + n + m
    assert kkt["factorizations"] >= doc["iterations"]
    g = kkt["infog"]
    assert int(g["29"]) >= kkt["kkt_nnz"] - kkt["ipopt"]["jacobian_nnz"]  # at least the KKT's own entries
    b = kkt["breakdown"]
    assert 0 < b["mumps_used_mb"] <= b["mumps_allocated_mb"] and b["solve_peak_mb"] >= b["nlp_held_mb"]
    assert kkt["rss"]["series"] and "INFOG" in log.read_text()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and calls glibc's malloc_trim")
def test_stage_solvers_agree(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # `_report`, `memory_profile`
    module = _load("stage_solvers")
    docs = {}
    for solver in ("ipopt", "fatrop"):  # fatrop ships in CasADi's wheels
        out = tmp_path / f"{solver}.json"
        assert module.main(["--stages", "40", "--solver", solver, "--out", str(out)]) == 0
        docs[solver] = json.loads(out.read_text(encoding="utf-8"))
    assert all(d["status"].startswith("success=True") for d in docs.values())
    assert docs["ipopt"]["gains"] == pytest.approx(docs["fatrop"]["gains"], rel=1e-6)
    # the solver's memory is an RSS difference: a few kB either way at this size, so only its presence
    assert np.isfinite(docs["fatrop"]["solver_mb"]) and docs["ipopt"]["variables"] == 41 * 12 + 40 * 6
