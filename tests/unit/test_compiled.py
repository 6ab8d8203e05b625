"""Models compiled to machine code (``Model(compiled=True)``, colloc.base.compiler).

The reference values come from CasADi's virtual machine evaluating the same symbolic
functions (a different code path from the generated C code and the system compiler).
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import colloc as co
from colloc.base import compiler
from colloc.transcription import nlp as nlp_module
from colloc.transcription.collocation import transcribe
from colloc.transcription.nlp import NLP
from colloc_problems import two_link as tl

# the two tests of compiled code need a compiler; the fallbacks below are tested everywhere
needs_compiler = pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None,
                                    reason="needs a C compiler")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLOC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(nlp_module, "_COMPILE_ABOVE", 0)  # the two-link functions are small
    return tmp_path / "cache"


def _functions(compiled: bool):
    trial = tl.simulate_trial(duration=0.3, seed=3)
    problem = tl.problem(trial)
    problem.model.compiled = compiled
    layout, blocks, x0, _, _ = transcribe(problem, co.Radau(degree=2))
    nlp = NLP(layout.size, blocks)
    rng = np.random.default_rng(0)
    x = x0 * (1 + 0.1 * rng.standard_normal(x0.size))
    lam = rng.standard_normal(nlp.num_rows)
    f = nlp.functions
    return [np.asarray(f["grad_f"](x, nlp.data)[1]).ravel(),
            np.asarray(f["jac_g"](x, nlp.data)[0]).ravel(),
            np.asarray(f["jac_g"](x, nlp.data)[1].nonzeros()),
            np.asarray(f["hess_lag"](x, nlp.data, 0.7, lam).nonzeros())]


@needs_compiler
def test_compiled_nlp_matches_the_virtual_machine(cache):
    reference = _functions(False)
    assert not cache.exists()
    values = _functions(True)
    assert len(list(cache.glob("*.so"))) >= 3  # eval, jac and hess of the dynamics block
    for got, want in zip(values, reference):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(want).max()))


@needs_compiler
def test_the_cache_is_reused(cache, monkeypatch):
    _functions(True)
    libraries = sorted(cache.glob("*.so"))

    def no_compiler(*args, **kwargs):
        raise AssertionError(f"the compiler ran again: {args[0]}")

    monkeypatch.setattr(subprocess, "Popen", no_compiler)
    _functions(True)
    assert sorted(cache.glob("*.so")) == libraries


def test_a_failing_compiler_falls_back_with_a_warning(cache, monkeypatch):
    monkeypatch.setenv("CC", "false")  # exits 1 without output
    import casadi as ca

    x = ca.SX.sym("x", 2)
    f = ca.Function("square_sum", [x], [ca.sumsqr(x)])
    with pytest.warns(compiler.CompilerWarning, match="compiling 'square_sum' with false failed"):
        g = compiler.compiled(f)
    assert g is f


def test_no_compiler_runs_uncompiled_with_a_warning(cache, monkeypatch):
    import casadi as ca

    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(compiler.shutil, "which", lambda name: None)
    x = ca.SX.sym("x", 2)
    f = ca.Function("square_sum", [x], [ca.sumsqr(x)])
    with pytest.warns(compiler.CompilerWarning, match="no C compiler found"):
        g = compiler.compiled(f)
    assert g is f and float(g([3.0, 4.0])) == 25.0


@needs_compiler
@pytest.mark.parametrize("method", [co.Midpoint(), co.HermiteSimpson()])
def test_fused_constraints_match_the_virtual_machine(cache, method):
    """The compiled blocks' constraints and Jacobian written in place by one C function
    (colloc.transcription.fused) against CasADi's mapped, gathered evaluation: two trials
    (two blocks of each kind), end intervals off the affine pattern, the same pattern."""
    from colloc_problems import cart_pendulum as cp

    trials = [cp.simulate_trial(2, num_samples=n, rate=100.0, seed=s, noise_std=0.01, name=f"t{s}")
              for n, s in ((30, 1), (41, 2))]
    out = {}
    for compiled in (False, True):
        problem = cp.problem(trials, 2, compiled=compiled)
        layout, blocks, x0, _, _ = transcribe(problem, method)
        nlp = NLP(layout.size, blocks)
        x = x0 * (1 + 0.1 * np.random.default_rng(0).standard_normal(x0.size))
        g, jac = nlp.functions["jac_g"](x, nlp.data)
        out[compiled] = (nlp, np.asarray(g).ravel(), jac, np.asarray(nlp.functions["g"](x, nlp.data)).ravel(),
                         nlp.sparse_value("jac_g", x))
    (ref, g0, j0, _, s0), (nlp, g1, j1, g1b, s1) = out[False], out[True]
    assert "fused" in nlp.functions["jac_g"].name()  # the in-place path, not a fallback
    assert j1.sparsity() == j0.sparsity()
    np.testing.assert_array_equal(g1, g0)
    np.testing.assert_array_equal(g1b, g0)
    np.testing.assert_array_equal(np.asarray(j1.nonzeros()), np.asarray(j0.nonzeros()))
    assert (s1 != s0).nnz == 0 and s1.nnz == j0.nnz()
