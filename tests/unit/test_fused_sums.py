"""The objective, its gradient and the Lagrangian's Hessian as fused C functions
(colloc.transcription.fused: ``fused_gradient``, ``fused_hessian``), written in place.

The reference values come from CasADi's MX graphs of the same NLP (the local functions mapped
over the instances, gathered, and shared contributions summed by 0/1 matrices), a different
code path.  The two-link problem (not marked compiled) is fused because the threshold of
instances is set to 0; two trials share all eight gains, which appear in every interval (each
gain pair's Hessian nonzero sums one contribution from every interval of both trials), and a
regularization of a gain in every interval makes its gradient entry a sum too.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import colloc as co
from colloc.transcription import fused as fused_module
from colloc.transcription import nlp as nlp_module
from colloc.transcription.collocation import transcribe
from colloc.transcription.nlp import NLP
from colloc_problems import two_link as tl


METHODS = {"midpoint": co.Midpoint(), "hermite-simpson": co.HermiteSimpson(),
           "radau2": co.Radau(degree=2), "radau3": co.Radau(degree=3)}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLOC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _blocks(method):
    trials = [tl.simulate_trial(duration=0.2, seed=s, name=f"t{s}.csv") for s in (1, 2)]
    problem = tl.problem(trials)
    k = problem.model.variable("k").symbol
    problem.add_regularization(k[0, 1] * 1e-2, weight=3.0)  # a gain in every interval's objective
    layout, blocks, x0, _, _ = transcribe(problem, method)
    x = x0 * (1 + 0.1 * np.random.default_rng(0).standard_normal(x0.size))
    return layout, blocks, x


def _values(nlp: NLP, x: np.ndarray):
    rng = np.random.default_rng(1)
    lam = rng.standard_normal(nlp.num_rows)
    F = nlp.functions
    f, grad = F["grad_f"](x, nlp.data)
    hess = F["hess_lag"](x, nlp.data, 0.7, lam)
    return float(F["f"](x, nlp.data)), float(f), np.asarray(grad).ravel(), hess


def _both(method, monkeypatch):
    """``(MX graphs, fused)`` values of the same NLP at the same point."""
    layout, blocks, x = _blocks(method)
    out = []
    for above in (10**12, 0):
        monkeypatch.setenv("COLLOC_FUSE_ABOVE", str(above))
        nlp = NLP(layout.size, blocks, objective_scale=0.37)
        out.append((nlp, _values(nlp, x)))
    (ref, want), (nlp, got) = out
    assert not any(ref.fused.values())
    assert nlp.fused == {"jac_g": True, "grad_f": True, "hess_lag": True}  # the in-place path, not a fallback
    return want, got


def _assert_equal(want, got):
    (f0, fg0, g0, h0), (f1, fg1, g1, h1) = want, got
    np.testing.assert_allclose([f1, fg1], [f0, f0], rtol=1e-13)
    assert np.abs(g0).max() > 0
    np.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-13 * np.abs(g0).max())
    assert h1.sparsity() == h0.sparsity()  # the upper triangle, exactly the graph's pattern
    hv0, hv1 = np.asarray(h0.nonzeros()), np.asarray(h1.nonzeros())
    np.testing.assert_allclose(hv1, hv0, rtol=1e-12, atol=1e-13 * np.abs(hv0).max())


@pytest.mark.needs_compiler
@pytest.mark.parametrize("name", list(METHODS))
def test_fused_sums_match_the_graphs(cache, monkeypatch, name):
    """f, grad_f and hess_lag in place equal the MX NLP functions (two trials, all gains
    unknown, shared variables receiving several contributions)."""
    want, got = _both(METHODS[name], monkeypatch)
    _assert_equal(want, got)


def _mutated(monkeypatch, old: str, new: str):
    """Compile the fused functions with ``old`` replaced by ``new`` in their C source."""
    linked, applied = fused_module.linked, []

    def mutated(name, source, units, **kw):
        applied.append(old in source)
        return linked(name, source.replace(old, new), units, **kw)

    monkeypatch.setattr(fused_module, "linked", mutated)
    return applied


@pytest.mark.needs_compiler
@pytest.mark.parametrize("bug", ["assign instead of add", "lower triangle"])
def test_the_comparison_catches_a_deliberate_bug(cache, monkeypatch, bug):
    """The comparison above fails when the contributions are assigned (``=``), not summed,
    or when the Hessian's pattern is the lower triangle (its nonzeros then sit in CasADi's
    upper-triangle order: CasADi refuses the pattern when loading the library)."""
    if bug == "assign instead of add":
        applied = _mutated(monkeypatch, "] += loc[k]", "] = loc[k]")
        want, got = _both(co.Radau(degree=2), monkeypatch)
        with pytest.raises(AssertionError):
            _assert_equal(want, got)
    else:
        applied = _mutated(monkeypatch, " <= ", " >= ")
        with pytest.raises(RuntimeError, match="Compressed Column Storage is not sane"):
            _both(co.Radau(degree=2), monkeypatch)
    assert any(applied)


@pytest.mark.needs_compiler
def test_a_solve_through_the_fused_functions_gives_the_same_estimates(cache, monkeypatch):
    """A whole IPOPT solve through the fused functions (from the default poor start, 100 Hz,
    noisy record) reaches the estimates of the MX graphs."""
    trial = tl.simulate_trial(duration=2.0, seed=4)
    estimates = []
    for above in (10**12, 0):
        monkeypatch.setenv("COLLOC_FUSE_ABOVE", str(above))
        result = co.solve(tl.problem(trial), co.Radau(degree=2),
                          solver=co.Ipopt(standard_errors=False, simulate=False))
        assert result.success
        estimates.append(np.array(list(result.parameters.values())))
    np.testing.assert_allclose(estimates[1], estimates[0], rtol=1e-8)


def test_without_a_compiler_the_graphs_are_used_silently(monkeypatch):
    """Above the threshold but without a compiler: CasADi's graphs, no warning (the suite
    turns warnings into errors)."""
    monkeypatch.setenv("COLLOC_FUSE_ABOVE", "0")
    monkeypatch.setattr(nlp_module, "has_compiler", lambda: False)
    layout, blocks, x = _blocks(co.Midpoint())
    nlp = NLP(layout.size, blocks)
    assert not any(nlp.fused.values())
    assert nlp.functions["hess_lag"].name() == "nlp_hess_l"


def test_a_failing_compiler_falls_back_silently(cache, monkeypatch):
    """A compiler that fails (``CC=false``): the graphs, no warning, same values as ever."""
    monkeypatch.setenv("COLLOC_FUSE_ABOVE", "0")
    monkeypatch.setenv("CC", shutil.which("false") or "false")
    layout, blocks, x = _blocks(co.Midpoint())
    nlp = NLP(layout.size, blocks)
    assert not any(nlp.fused.values())
    f, fg, grad, hess = _values(nlp, x)
    assert np.isfinite(f) and f == fg and hess.nnz() > 0


def test_below_the_threshold_the_graphs_are_used(monkeypatch):
    monkeypatch.setattr(nlp_module, "FUSE_ABOVE", 10**9)
    monkeypatch.delenv("COLLOC_FUSE_ABOVE", raising=False)
    layout, blocks, x = _blocks(co.Midpoint())
    assert not any(NLP(layout.size, blocks).fused.values())
