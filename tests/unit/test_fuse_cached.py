"""The fused C functions below FUSE_ABOVE: used when the compile cache holds them, never
compiled during the build, built in the background under ``builds_ahead`` (the ``colloc``
command); and the command's one-thread default for BLAS/OpenMP.

Reference values come from CasADi's MX graphs of the same NLP (a different code path from the
generated C, see test_fused_sums.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import colloc as co
from colloc.base.engine import THREAD_ENV
from colloc.base import compiler
from colloc.transcription import nlp as nlp_module
from colloc.transcription.collocation import transcribe
from colloc.transcription.nlp import NLP
from colloc_problems import two_link as tl


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty compile cache; every NLP here lies between the two thresholds."""
    monkeypatch.setenv("COLLOC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("COLLOC_FUSE_ABOVE", raising=False)
    monkeypatch.setattr(nlp_module, "FUSE_ABOVE", 10**9)
    monkeypatch.setattr(nlp_module, "FUSE_CACHED_ABOVE", 1)
    return tmp_path / "cache"


def _nlp_and_point():
    layout, blocks, x0, _, _ = transcribe(tl.problem(tl.simulate_trial(duration=0.2, seed=5)), co.Midpoint())
    x = x0 * (1 + 0.1 * np.random.default_rng(0).standard_normal(x0.size))
    return NLP(layout.size, blocks), x


def _values(nlp: NLP, x: np.ndarray) -> list[np.ndarray]:
    lam = np.random.default_rng(1).standard_normal(nlp.num_rows)
    F = nlp.functions
    g, jac = F["jac_g"](x, nlp.data)
    return [np.asarray(F["grad_f"](x, nlp.data)[1]).ravel(), np.asarray(g).ravel(), np.asarray(jac.nonzeros()),
            np.asarray(F["hess_lag"](x, nlp.data, 0.7, lam).nonzeros())]


def _wait_for_libraries(cache, count: int) -> None:
    """The detached build is nobody's child here: wait, however long the machine takes, until it
    has put ``count`` libraries in place and removed its folders, or has marked a build failed."""
    while not list(cache.glob("*.failed")):
        if len(list(cache.glob("*.so"))) >= count and not list(cache.glob("building_*")):
            return
        time.sleep(0.2)
    raise AssertionError(f"the background build left {sorted(p.name for p in cache.iterdir())}")


@pytest.mark.needs_compiler
def test_a_cache_miss_compiles_nothing_and_a_background_build_serves_the_next_build(cache):
    nlp, x = _nlp_and_point()
    assert nlp._fuse_decision() == "cached"
    assert not any(nlp.fused.values())  # a miss: the graphs, and no compiler ran
    assert not cache.exists() or not list(cache.iterdir())
    reference = _values(nlp, x)

    with compiler.builds_ahead():
        again, _ = _nlp_and_point()
        assert not any(again.fused.values())  # the build starts after the block, not during it
        assert not cache.exists() or not list(cache.glob("*.so"))
    _wait_for_libraries(cache, 3)

    fused, _ = _nlp_and_point()
    assert fused.fused == {"jac_g": True, "grad_f": True, "hess_lag": True}
    for got, want in zip(_values(fused, x), reference):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(want).max()))


@pytest.mark.needs_compiler
def test_a_failed_background_build_is_marked_and_not_queued_again(cache, monkeypatch):
    """With a "compiler" that always fails, each round queues the next untried variant of a
    fused function (libmvec lanes, plain lanes, one instance at a time), marks it failed, and
    the rounds end with nothing left to queue and nothing built."""
    monkeypatch.setenv("CC", "false")
    rounds, start = [], compiler._build_ahead

    def recorded(queue):
        rounds.append({target.name for target, _, _ in queue})
        start(queue)

    monkeypatch.setattr(compiler, "_build_ahead", recorded)
    for _ in range(6):
        before = len(rounds)
        with compiler.builds_ahead():
            nlp, _ = _nlp_and_point()
        assert not any(nlp.fused.values())
        if len(rounds) == before:  # nothing was queued
            break
        while list(cache.glob("building_*")):
            time.sleep(0.1)
        failed = {p.with_suffix(".so").name for p in cache.glob("*.failed")}
        assert rounds[-1] <= failed  # every queued build failed and says so
        assert not any(rounds[-1] & earlier for earlier in rounds[:-1])  # none tried twice
    assert len(rounds) == before >= 2 and not list(cache.glob("*.so"))


def test_small_models_do_not_look_in_the_cache(monkeypatch):
    monkeypatch.delenv("COLLOC_FUSE_ABOVE", raising=False)
    nlp, _ = _nlp_and_point()  # 21 intervals: far below FUSE_CACHED_ABOVE
    assert nlp._fuse_decision() is None


_PROBE = ("import os, sys; from colloc import cli; set_ = cli._one_thread_libraries(); import numpy; "
          "print(set_, os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('OMP_NUM_THREADS'))")


@pytest.mark.parametrize("given, expected", [
    ({}, "True 1 1"),                                 # nothing set: one thread each
    ({"OMP_NUM_THREADS": "2"}, "False None 2"),       # the user's choice stands, all of it
])
def test_the_command_runs_blas_and_openmp_on_one_thread_unless_told(given, expected):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_ENV} | given
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == expected.split()


def test_a_program_that_calls_main_keeps_its_environment(monkeypatch):
    from colloc import cli

    for k in THREAD_ENV:
        monkeypatch.delenv(k, raising=False)
    assert "numpy" in sys.modules
    assert cli._one_thread_libraries() is False
    assert not any(k in os.environ for k in THREAD_ENV)


def test_the_console_script_runs_exit_handlers_and_flushes_before_it_ends():
    """``colloc.cli.run`` ends the process without the interpreter's teardown: what was
    printed and what exit handlers do must still come out, and the exit code must be main's."""
    probe = ("import atexit, sys; atexit.register(lambda: print('handler ran')); "
             "sys.argv = ['colloc'] + sys.argv[1:]; from colloc.cli import run; run()")
    ok = subprocess.run([sys.executable, "-c", probe, "problems"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "two-link" in ok.stdout and ok.stdout.rstrip().endswith("handler ran")
    bad = subprocess.run([sys.executable, "-c", probe, "identify", "pendulum", "--data", "no-such.csv"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no-such.csv" in bad.stderr
