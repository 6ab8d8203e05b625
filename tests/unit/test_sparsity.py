"""Sparse patterns and values passed between SciPy and CasADi without Python lists."""

from __future__ import annotations

import casadi as ca
import numpy as np
import scipy.sparse as sps

import colloc as co
from colloc.base.sparsity import sparsity_from_ccs
from colloc.transcription.nlp import NLP
from colloc_problems import pendulum


def test_chunked_pattern_equals_the_direct_one():
    M = sps.random(300, 200, density=0.1, random_state=1, format="csc")
    M.sort_indices()
    direct = ca.Sparsity(300, 200, M.indptr.tolist(), M.indices.tolist())
    for chunk in (1, 97, 10**9):  # one column a block, several columns, one piece
        assert sparsity_from_ccs(300, 200, M.indptr, M.indices, chunk=chunk) == direct
    # a column alone holding more than a chunk, and empty columns
    colind = np.array([0, 0, 250, 250, 251])
    rows = np.concatenate([np.arange(250), [3]])
    sp = sparsity_from_ccs(260, 4, colind, rows, chunk=10)
    assert sp == ca.Sparsity(260, 4, colind.tolist(), rows.tolist())


def test_jacobians_read_through_buffers_equal_casadi_values(clean_pendulum_trial, monkeypatch):
    built = []
    original = NLP.__init__

    def keep(self, *args, **kwargs):
        original(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(NLP, "__init__", keep)
    co.solve(pendulum.problem(clean_pendulum_trial), co.Radau(), solver=co.Ipopt(simulate=False))
    nlp = built[-1]
    x = np.random.default_rng(3).normal(size=nlp.num_variables)
    for name, k in (("jac_g", 1), ("jac_res", 0)):
        out = nlp.functions[name](x, nlp.data)
        want = out[k] if isinstance(out, tuple) else out
        got = nlp.sparse_value(name, x)
        assert got.shape == want.shape and got.nnz == want.nnz()
        np.testing.assert_array_equal(got.toarray(), np.array(want))
