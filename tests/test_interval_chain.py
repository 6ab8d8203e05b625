"""colloc.IntervalChain: mapped Radau collocation of a chain of intervals whose times are
affine in the parameters, and its block-assembled exact Hessian."""

from __future__ import annotations

import casadi as ca
import numpy as np

import colloc as co


def _decay_chain():
    # ẋ = −a·x (+ data·b), p = (a, T): the chain covers [0, T] in 8 equal intervals
    x, t, data, p = ca.SX.sym("x"), ca.SX.sym("t"), ca.SX.sym("d"), ca.SX.sym("p", 2)
    return co.IntervalChain(ca.Function("f", [x, t, data, p], [-p[0] * x + data * t]), degree=3)


def test_chain_solves_decay_to_closed_form_with_a_parameter_dependent_end():
    chain = _decay_chain()
    n = 8
    k = np.arange(n)
    t = (np.zeros(n), np.column_stack([np.zeros(n), k / n]))  # t_k = (k/n)·T
    h = (np.zeros(n), np.column_stack([np.zeros(n), np.full(n, 1.0 / n)]))
    z = ca.SX.sym("z", n * 3)
    p = ca.DM([1.3, 0.7])
    g = chain.defects([2.0], z.T, t, h, np.zeros((1, n)), p)
    sol = ca.rootfinder("r", "newton", ca.Function("g", [z], [ca.vec(g)]))(np.ones(n * 3)).T
    x_end = float(sol[-1])
    assert abs(x_end - 2.0 * np.exp(-1.3 * 0.7)) < 1e-8  # closed form, Radau order 5
    # reading in the middle of interval 3 (at the absolute time 3.5/8·T)
    mid = chain.values([2.0], sol, [3], [3.5 / n * 0.7], t, h, p)
    assert abs(float(mid) - 2.0 * np.exp(-1.3 * 3.5 / n * 0.7)) < 1e-6  # the degree-3 polynomial inside


def test_block_hessian_equals_the_symbolic_hessian_of_the_lagrangian():
    chain = _decay_chain()
    n, m = 5, 7
    rng = np.random.default_rng(3)
    k = np.arange(n)
    t = (0.1 * k, np.column_stack([0.05 * k, k / n]))
    h = (np.full(n, 0.1), np.column_stack([np.full(n, 0.05), np.full(n, 1.0 / n)]))
    data = rng.uniform(size=(1, n))
    p = ca.MX.sym("p", 2)
    xc = ca.MX.sym("xc", 1, n * 3)
    lam, lam_f = ca.MX.sym("lam", 1, n * 3), ca.MX.sym("lam_f")
    interval = rng.integers(0, n, m)
    times = rng.uniform(0, 1, m)
    y = rng.normal(size=m)
    V = ca.vertcat(p, ca.vec(xc))
    fit = 0.5 * lam_f * ca.sumsqr(chain.values([0.4], xc, interval, times, t, h, p) - ca.DM(y).T)
    L = fit + ca.dot(lam, chain.defects([0.4], xc, t, h, data, p))
    blocks = [chain.defect_block([0.4], xc, t, h, data, p, lam, 2, [0, 1]),
              chain.fit_block([0.4], xc, interval, times, t, h, p, [1.0], y, lam_f, 2, [0, 1])]
    f = ca.Function("f", [V, lam, lam_f], [ca.triu(ca.hessian(L, V)[0]), chain.hessian(V.shape[0], blocks)])
    a, b = f(rng.normal(size=V.shape[0]), rng.normal(size=n * 3), 0.8)
    assert np.abs(np.asarray(a.full())).max() > 1
    assert np.allclose(np.asarray(a.full()), np.asarray(b.full()), rtol=1e-12, atol=1e-12)
