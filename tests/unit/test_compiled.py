"""Models compiled to machine code (``Model(compiled=True)``, colloc.base.compiler).

The reference values come from CasADi's virtual machine evaluating the same symbolic
functions (a different code path from the generated C code and the system compiler).
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import colloc as co
from colloc.base import compiler
from colloc.transcription import nlp as nlp_module
from colloc.transcription.collocation import transcribe
from colloc.transcription.nlp import NLP
from colloc_problems import two_link as tl



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


@pytest.mark.needs_compiler
def test_compiled_nlp_matches_the_virtual_machine(cache):
    reference = _functions(False)
    assert not cache.exists()
    values = _functions(True)
    assert len(list(cache.glob("*.so"))) >= 3  # eval, jac and hess of the dynamics block
    for got, want in zip(values, reference):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(want).max()))


@pytest.mark.needs_compiler
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


def test_a_compiler_that_is_not_there_is_no_compiler(cache, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    import casadi as ca

    assert not compiler.has_compiler()  # the needs_compiler tests are skipped, not failed
    x = ca.SX.sym("x", 2)
    f = ca.Function("square_sum", [x], [ca.sumsqr(x)])
    with pytest.warns(compiler.CompilerWarning, match="compiling 'square_sum' with /nonexistent/cc failed"):
        (g,) = compiler.compiled_all([f])
    assert g is f and float(g([3.0, 4.0])) == 25.0 and not list(cache.glob("*.so"))


def test_no_compiler_runs_uncompiled_with_a_warning(cache, monkeypatch):
    import casadi as ca

    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(compiler.shutil, "which", lambda name: None)
    x = ca.SX.sym("x", 2)
    f = ca.Function("square_sum", [x], [ca.sumsqr(x)])
    with pytest.warns(compiler.CompilerWarning, match="no C compiler found"):
        g = compiler.compiled(f)
    assert g is f and float(g([3.0, 4.0])) == 25.0


def _fused_against_the_virtual_machine(problem_of, trials, method, hessian="exact", exact=True):
    """Constraints and Jacobian of the compiled problem's fused C function and of CasADi's
    virtual machine (the same model uncompiled): bit-identical if ``exact``, else to 1e-12
    of the largest value (libmvec's sin, cos, exp and log are within a few ulp)."""
    out = {}
    for compiled in (False, True):
        problem = problem_of(trials, compiled)
        layout, blocks, x0, _, _ = transcribe(problem, method)
        nlp = NLP(layout.size, blocks, hessian=hessian)
        x = x0 * (1 + 0.1 * np.random.default_rng(0).standard_normal(x0.size))
        g, jac = nlp.functions["jac_g"](x, nlp.data)
        out[compiled] = (nlp, np.asarray(g).ravel(), jac, np.asarray(nlp.functions["g"](x, nlp.data)).ravel(),
                         nlp.sparse_value("jac_g", x))
    (ref, g0, j0, _, s0), (nlp, g1, j1, g1b, s1) = out[False], out[True]
    assert "fused" in nlp.functions["jac_g"].name()  # the in-place path, not a fallback
    assert j1.sparsity() == j0.sparsity()
    pairs = [(g1, g0), (g1b, g0), (np.asarray(j1.nonzeros()), np.asarray(j0.nonzeros())), (s1.data, s0.data)]
    for got, want in pairs:
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    assert s1.nnz == j0.nnz() and (s1.indices == s0.indices).all() and (s1.indptr == s0.indptr).all()


def _cart(trials, compiled):
    from colloc_problems import cart_pendulum as cp

    return cp.problem(trials, 2, compiled=compiled)


def _cart_trials():
    from colloc_problems import cart_pendulum as cp

    return [cp.simulate_trial(2, num_samples=n, rate=100.0, seed=s, noise_std=0.01, name=f"t{s}")
            for n, s in ((30, 1), (41, 2))]


@pytest.mark.needs_compiler
@pytest.mark.parametrize("lanes", ["default", "exact", "single"])
@pytest.mark.parametrize("method", [co.Midpoint(), co.HermiteSimpson(), co.Radau(degree=3)])
def test_fused_constraints_match_the_virtual_machine(cache, monkeypatch, method, lanes):
    """The compiled blocks' constraints and Jacobian written in place by one C function
    (colloc.transcription.fused) against CasADi's mapped, gathered evaluation: two trials
    (two blocks of each kind; 28 and 39 intervals: groups of lanes, then single intervals),
    all six parameters unknown, end intervals off the affine pattern, the same pattern;
    with the instances evaluated several at a time (colloc.base.lanes, the machine's
    width; libmvec's sin and cos where available: to 1e-12), lanes without libmvec
    (``COLLOC_VECTOR_MATH=0``: bit-identical) and one at a time (``COLLOC_LANES=1``)."""
    if lanes == "exact":
        monkeypatch.setenv("COLLOC_VECTOR_MATH", "0")
    if lanes == "single":
        monkeypatch.setenv("COLLOC_LANES", "1")
    width, flags = compiler.lane_config()
    _fused_against_the_virtual_machine(_cart, _cart_trials(), method, hessian="limited-memory",
                                       exact=not compiler.vector_math(width, flags) or width == 1)
    lane_objects = list(cache.glob("colloc_lk*.o"))
    assert bool(lane_objects) == (width > 1)


@pytest.mark.needs_compiler
def test_fused_lanes_of_every_operation_match_the_virtual_machine(cache, monkeypatch):
    """A model whose residual uses the operations colloc.base.lanes writes lane by lane
    (sin and cos of one value, tan, exp, log, sqrt, pow, fabs, sign, fmin, fmax, atan2,
    tanh, comparisons, if_else) and constants (negative, fractions): bit-identical to the
    virtual machine without libmvec, Radau (three interior points) and midpoint; with
    libmvec (where available) to 1e-12."""
    import casadi as ca

    monkeypatch.setenv("COLLOC_VECTOR_MATH", "0")

    def problem_of(trials, compiled):
        mdl = co.Model("all_operations", compiled=compiled)
        x, v = mdl.state("x"), mdl.state("v")
        a, b = mdl.parameter("a", guess=1.3), mdl.parameter("b", guess=0.4)
        mdl.set_der(x, v)
        force = (-a * ca.sin(x) * ca.cos(x) + b * ca.tanh(v) + 0.1 * ca.fmin(x, v) - 0.05 * ca.fmax(x, -v)
                 + 0.01 * ca.exp(-x**2) * ca.sqrt(1 + v**2) + 0.02 * ca.atan2(x, 1 + v**2)
                 + 0.03 * ca.fabs(v) * ca.sign(x) + ca.if_else(x > 0.1, 0.01 * x, -0.02 * x)
                 + 0.01 * (1 + x**2) ** b + 0.004 * ca.log(2 + ca.cos(v)) + 0.001 * ca.tan(0.3 * x) + x**3 / 7)
        mdl.add_residual(mdl.der(v) - force, name="eom")
        return co.Problem(mdl, trials, fit={"x": 1e4, "v": 1e4}, name="all_operations")

    t = np.arange(37) / 100.0
    rng = np.random.default_rng(5)
    trials = [co.Trial(t, {"x": 0.5 * np.sin(12 * t) + 0.01 * rng.standard_normal(t.size),
                           "v": 6.0 * np.cos(12 * t) + 0.01 * rng.standard_normal(t.size)}, name=f"t{k}")
              for k in range(2)]
    for method in (co.Radau(degree=3), co.Midpoint()):
        _fused_against_the_virtual_machine(problem_of, trials, method)
    monkeypatch.delenv("COLLOC_VECTOR_MATH")  # libmvec where available (exp, log, sin, cos)
    _fused_against_the_virtual_machine(problem_of, trials, co.Midpoint(),
                                       exact=not compiler.vector_math(*compiler.lane_config()))
    if compiler.lane_config()[0] > 1:
        assert list(cache.glob("colloc_lk*.o"))


@pytest.mark.needs_compiler
@pytest.mark.parametrize("cause", ["flags", "size"])
def test_lanes_fall_back_silently(cache, monkeypatch, cause):
    """A compiler that refuses the lanes' flags, or local functions above the lanes' size
    limit: the fused function evaluates one instance at a time, without a warning
    (warnings are errors here), with the same values."""
    from colloc.transcription import fused

    if cause == "flags":
        monkeypatch.setattr(fused, "lane_config", lambda: (4, ("-fno-such-option-colloc",)))
    else:
        monkeypatch.setattr(fused, "lane_config", lambda: (4, ()))
        monkeypatch.setattr(fused, "MAX_LANE_INSTRUCTIONS", 100)
    _fused_against_the_virtual_machine(_cart, _cart_trials(), co.Midpoint(), hessian="limited-memory")
    assert not list(cache.glob("colloc_lk*.o")) and list(cache.glob("colloc_cf*.o"))


@pytest.mark.needs_compiler
@pytest.mark.parametrize("width, shuffle", [(2, "shufflevector"), (4, "shufflevector"), (8, "shuffle")])
def test_transposed_jacobian_stores_of_every_width_match_the_virtual_machine(cache, monkeypatch, width, shuffle):
    """The Jacobian's consecutive places written a lane at a time by vectors transposed in
    registers (colloc.base.lanes, ``chunks``), and the local variables read from ``x`` the
    same way (``lane_gather``; the parameters broadcast): groups of 1 to ``width`` values, at 2, 4 and
    8 lanes, with GCC's and Clang's ``__builtin_shufflevector`` and with the older
    ``__builtin_shuffle`` (forced by ``COLLOC_NO_SHUFFLEVECTOR``; partial groups stored
    element by element): bit-identical to the virtual machine (no libmvec), Radau-3 (long
    runs of rows in a column) and midpoint.  Run on any x86-64: plain C vectors of the
    width, without instruction-set flags."""
    from colloc.transcription import fused

    monkeypatch.setenv("COLLOC_VECTOR_MATH", "0")
    defines = ("-DCOLLOC_NO_SHUFFLEVECTOR",) if shuffle == "shuffle" else ()
    monkeypatch.setattr(fused, "lane_config", lambda: (width, ("-O1", "-ffp-contract=off", *defines)))
    sizes = []
    real = fused._chunks

    def chunks(a, b, w):
        out = real(a, b, w)
        sizes.extend(len(c) for c in out)
        return out

    monkeypatch.setattr(fused, "_chunks", chunks)
    built = []
    real_fused = fused._fused

    def fused_spy(*args, **kwargs):
        fn = real_fused(*args, **kwargs)
        built.append((args[8], fn is not None))  # (transposed, compiled)
        return fn

    monkeypatch.setattr(fused, "_fused", fused_spy)
    for method in (co.Radau(degree=3), co.Midpoint()):
        _fused_against_the_virtual_machine(_cart, _cart_trials(), method, hessian="limited-memory")
    assert built and all(b == (True, True) for b in built)  # the transposed form, no fallback
    assert max(sizes) == width and min(sizes) < width  # whole and partial groups
    # one lanes unit a method, shared by the two trials' blocks (28 and 39 intervals): the
    # groups depend on the pattern's structure, not on the record length
    assert len(list(cache.glob(f"colloc_lk*w{width}_*.o"))) == 2


# ---- Model(compiled=None), the default: decided by the compiler's presence and the size ----

def _pendulum_problem():
    from colloc_problems import pendulum

    return pendulum.problem(pendulum.simulate_trial(duration=1.0, seed=1))


def _nlp_values(problem):
    layout, blocks, x0, _, _ = transcribe(problem, co.Midpoint())
    nlp = NLP(layout.size, blocks)
    x = x0 * (1 + 0.1 * np.random.default_rng(0).standard_normal(x0.size))
    g, jac = nlp.functions["jac_g"](x, nlp.data)
    return nlp, np.asarray(g).ravel(), np.asarray(jac.nonzeros())


def test_the_default_leaves_the_choice_to_the_build():
    assert co.Model("m").compiled is None
    assert co.Model("m", compiled=True).compiled is True and co.Model("m", compiled=False).compiled is False
    with pytest.raises(co.ModelError, match="Model 'm': compiled must be True, False or None"):
        co.Model("m", compiled="yes")


def test_a_small_problem_stays_interpreted_and_says_so(cache):
    result = co.solve(_pendulum_problem(), co.Midpoint())
    assert result.model_evaluation == "interpreted (small problem)"
    assert result.timing_line().endswith("· model interpreted (small problem)")
    assert result.timings["compile_s"] == 0.0
    runs = compiler.compiler_runs()
    nlp, *_ = _nlp_values(_pendulum_problem())
    assert compiler.compiler_runs() == runs and nlp.compile_note == "interpreted (small problem)"


def test_without_a_compiler_the_default_is_interpreted_without_a_warning(cache, monkeypatch):
    monkeypatch.setenv("COLLOC_NO_COMPILER", "1")
    monkeypatch.setenv("COLLOC_COMPILE_WORK_ABOVE", "0")  # large enough to compile, were there a compiler
    assert not compiler.has_compiler()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = co.solve(_pendulum_problem(), co.Midpoint())
    assert result.success
    assert result.model_evaluation == "interpreted (no C compiler)" and result.timings["compile_s"] == 0.0


def test_the_decision_counts_instances_times_instructions(monkeypatch):
    monkeypatch.delenv("COLLOC_NO_COMPILER", raising=False)
    monkeypatch.setattr(compiler, "_compiler", lambda: "gcc")
    monkeypatch.setattr(nlp_module, "has_compiler", lambda: True)
    _, blocks, *_ = transcribe(_pendulum_problem(), co.Midpoint())
    work = sum(b.count * b.func.n_instructions() for b in blocks if b.compiled is None)  # the dynamics
    assert work > 0
    monkeypatch.setenv("COLLOC_COMPILE_WORK_ABOVE", str(work))
    assert nlp_module.compile_decision(blocks) == (True, "large problem")
    monkeypatch.setenv("COLLOC_COMPILE_WORK_ABOVE", str(work + 1))
    assert nlp_module.compile_decision(blocks) == (False, "small problem")
    monkeypatch.setattr(nlp_module, "has_compiler", lambda: False)
    monkeypatch.setenv("COLLOC_COMPILE_WORK_ABOVE", "0")
    assert nlp_module.compile_decision(blocks) == (False, "no C compiler")


@pytest.mark.needs_compiler
def test_a_large_problem_is_compiled_once_then_found_in_the_cache(cache, monkeypatch):
    problem = _pendulum_problem()
    _, g_ref, jac_ref = _nlp_values(problem)  # the virtual machine (small problem)
    monkeypatch.setenv("COLLOC_COMPILE_WORK_ABOVE", "0")  # as if the pendulum were large
    runs = compiler.compiler_runs()
    nlp, g, jac = _nlp_values(problem)
    assert compiler.compiler_runs() > runs and list(cache.glob("*.so"))
    assert nlp.compile_s > 0 and nlp.compile_note == f"compiled ({nlp.compile_s:.1f} s)"
    np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12 * np.abs(g_ref).max())
    np.testing.assert_allclose(jac, jac_ref, rtol=1e-12, atol=1e-12 * np.abs(jac_ref).max())
    first = co.solve(problem, co.Midpoint())  # the solver's NLP (its own Hessian): compiled if not yet
    assert first.model_evaluation.startswith("compiled (")
    again = co.solve(problem, co.Midpoint())  # the same build again: everything from the cache
    assert again.model_evaluation == "compiled (cache hit)" and again.timings["compile_s"] == 0.0
    assert again.success and again.parameters == pytest.approx(first.parameters, rel=1e-10)


def test_compiled_false_compiles_nothing_not_even_the_fused_functions(cache, monkeypatch):
    monkeypatch.setenv("COLLOC_FUSE_ABOVE", "0")  # a model left to decide would get the fused C functions
    problem = _pendulum_problem()
    problem.model.compiled = False
    runs = compiler.compiler_runs()
    nlp, *_ = _nlp_values(problem)
    assert compiler.compiler_runs() == runs and not any(nlp.fused.values())
    assert nlp.compile_note in ("interpreted (compiled=False)", "interpreted (no C compiler)")
    assert nlp.compile_s == 0.0
