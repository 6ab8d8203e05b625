"""``co.solve`` runs BLAS with one thread unless the environment chose (issue 18: only the
command line limited the threads; at load 5.8 the covariance of a 20 s heel-off fit took
46.1 s with OpenBLAS's two threads and 1.4 s with one)."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import colloc as co
from colloc.base.engine import THREAD_ENV, one_blas_thread


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


@pytest.fixture
def no_thread_env(monkeypatch):
    for name in THREAD_ENV:
        monkeypatch.delenv(name, raising=False)


def test_one_thread_inside_and_the_count_back_after(no_thread_env):
    with threadpool_limits(limits=2, user_api="blas"):  # whatever the process started with
        assert _blas_threads() == {2}
        with one_blas_thread():
            assert _blas_threads() == {1}
        assert _blas_threads() == {2}


def test_a_thread_count_set_in_the_environment_is_left_alone(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    with threadpool_limits(limits=2, user_api="blas"), one_blas_thread():
        assert _blas_threads() == {2}


def test_solve_runs_with_one_blas_thread(no_thread_env):
    seen = []
    t = np.linspace(0.0, 2.0, 41)
    model = co.Model("decay")
    x = model.state("x")
    k = model.parameter("k", guess=0.5, bounds=(0.01, 10.0))
    model.set_der(x, -k * x)
    trial = co.Trial(t, {"x": np.exp(-1.3 * t)}, name="decay")
    problem = co.Problem(model, trial, fit={"x": 1e4})
    with threadpool_limits(limits=2, user_api="blas"):
        result = co.solve(problem, co.Radau(degree=2), progress=lambda info: seen.append(_blas_threads()))
    assert result.success and abs(result.parameters["k"] - 1.3) < 1e-3
    assert seen and all(threads == {1} for threads in seen)
