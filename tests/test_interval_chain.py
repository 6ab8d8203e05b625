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


def test_path_entry_states_and_point_functions_assemble_the_exact_hessian_and_jacobian():
    # ẋ = −a·x with a = p[0]; per-interval time unknowns s (2 each), a reset at interval 3
    # (its start an NLP variable X, joined by X = x⁻² through a PointFunction), path c = x·a
    x, t, data, p = ca.SX.sym("x"), ca.SX.sym("t"), ca.SX.sym("d"), ca.SX.sym("p", 1)
    rates = ca.Function("f", [x, t, data, p], [-p[0] * x + data * t])
    chain = co.IntervalChain(rates, degree=2, path=ca.Function("c", [x, t, data, p], [x * p[0] + t]), n_times=2)
    n = 5
    rng = np.random.default_rng(5)
    # V = [a, T0, T1, X (entry), xc (n·2)]; interval k spans its phase [T0, T1] or [T1, 2] by k/n
    nv = 4 + n * 2
    V = ca.MX.sym("V", nv)
    a_t = rng.uniform(size=n)
    b_t = rng.uniform(size=(n, 2))
    a_h, b_h = rng.uniform(0.1, 0.2, n), 0.1 * rng.uniform(size=(n, 2))
    tix = np.array([[1, 2]] * 3 + [[2, -1]] * 2)
    S = ca.reshape(ca.vertcat(V, 0)[np.where(tix >= 0, tix, nv).ravel().tolist()], 2, n)
    xc = ca.reshape(V[4:], 1, n * 2)
    data = rng.uniform(size=(1, n))
    kw = dict(s=S, entry=([0, 3], ca.horzcat(0.3, V[3])))
    ix = dict(time_index=tix, entry_index=([0, 3], np.array([[-1], [3]])))
    tt, hh = (a_t, b_t), (a_h, b_h)
    jump = co.PointFunction(ca.Function("j", [x_ := ca.SX.sym("z", 2)], [x_[1] - x_[0] ** 2]))
    j_idx = np.array([[4 + 5, 3]])  # the last collocation state of interval 2, the entry of interval 3
    g = ca.vertcat(ca.vec(chain.defects(None, xc, tt, hh, data, V[0], **kw)),
                   ca.vec(chain.paths(None, xc, tt, hh, data, V[0], **kw)), jump(V, j_idx))
    nd, npth = n * 2, n * 2
    lam = ca.MX.sym("lam", g.shape[0])
    L = ca.dot(lam, g)
    args = (None, xc, tt, hh, data, V[0])
    blocks = [chain.defect_block(*args, ca.reshape(lam[:nd], 1, nd), 4, [0], **kw, **ix),
              chain.path_block(*args, ca.reshape(lam[nd:nd + npth], 1, npth), 4, [0], **kw, **ix),
              jump.hessian_block(V, j_idx, lam[nd + npth:])]
    jblocks = [chain.jacobian_block(*args, 4, [0], 0, **kw, **ix),
               chain.path_jacobian_block(*args, 4, [0], nd, **kw, **ix),
               jump.jacobian_block(V, j_idx, nd + npth)]
    f = ca.Function("f", [V, lam], [ca.triu(ca.hessian(L, V)[0]), chain.hessian(nv, blocks),
                                    ca.jacobian(g, V), chain.jacobian(g.shape[0], nv, jblocks)])
    h1, h2, j1, j2 = (np.asarray(m.full()) for m in f(rng.normal(size=nv), rng.normal(size=g.shape[0])))
    assert np.abs(h1).max() > 0.1 and np.abs(j1[:, 1:3]).max() > 0.01  # the time unknowns enter
    assert np.allclose(h1, h2, rtol=1e-12, atol=1e-12)
    assert np.allclose(j1, j2, rtol=1e-12, atol=1e-12)


def _delayed_chain(degree=3):
    # ẋ(t) = −x(t − τ), τ = p[1] (and p[0] unused by the rates but a parameter all the same);
    # times affine in two per-interval unknowns s (a phase's ends)
    x, t, data, p, xd = ca.SX.sym("x"), ca.SX.sym("t"), ca.SX.sym("d"), ca.SX.sym("p", 2), ca.SX.sym("xd")
    rates = ca.Function("f", [x, t, data, p, xd], [-xd + 0 * p[0] * data])
    path = ca.Function("c", [x, t, data, p, xd], [x * xd])
    return co.IntervalChain(rates, degree=degree, path=path, n_times=2, delay=1)


def test_delayed_state_read_in_the_interval_holding_t_minus_tau_solves_the_method_of_steps():
    # x = 1 before 0, ẋ = −x(t − 1): x = 1 − t on [0, 1], 1 − t + (t − 1)²/2 on [1, 2] (by hand,
    # the method of steps); the chain covers [0, 2] in 20 intervals of a phase [s0, s1] = [0, 2]
    chain = _delayed_chain()
    n, d = 20, 3
    k = np.arange(n)
    t = (np.zeros(n), np.column_stack([1 - k / n, k / n]))
    h = (np.zeros(n), np.column_stack([np.full(n, -1.0 / n), np.full(n, 1.0 / n)]))
    s = ca.DM(np.tile([[0.0], [2.0]], (1, n)))
    tau = 1.0
    tn, hn = 2.0 * k / n, np.full(n, 2.0 / n)
    td = tn[:, None] + chain.tau[None, :] * hn[:, None] - tau
    D = np.clip(np.searchsorted(tn - 1e-9, td, side="right") - 1, 0, n - 1)
    hist = (td < 0).astype(float)
    D = np.where(hist > 0, 0, D)
    tc = (tn[:, None] + chain.tau[None, :] * hn[:, None]).ravel()
    exact = np.where(tc <= 1, 1 - tc, 1 - tc + (tc - 1) ** 2 / 2)
    g = chain.defects([1.0], ca.DM(exact).T, t, h, np.zeros((1, n)), ca.DM([0.3, tau]), s=s, delayed=(D, hist))
    assert np.abs(np.asarray(g)).max() < 1e-12  # the quadratic is exact in every interval
    wrong = chain.defects([1.0], ca.DM(exact).T, t, h, np.zeros((1, n)), ca.DM([0.3, 0.9]), s=s, delayed=(D, hist))
    assert np.abs(np.asarray(wrong)).max() > 1e-3  # and τ does enter


def test_delayed_chain_blocks_equal_the_symbolic_hessian_and_jacobian():
    # the delayed reads share the time unknowns of their own interval: variables held twice in a block
    chain = _delayed_chain(degree=2)
    n, d = 6, 2
    rng = np.random.default_rng(7)
    nv = 2 + 2 + n * d  # p (2), s0, s1, xc
    V = ca.MX.sym("V", nv)
    k = np.arange(n)
    t = (np.zeros(n), np.column_stack([1 - k / n, k / n]))
    h = (np.zeros(n), np.column_stack([np.full(n, -1.0 / n), np.full(n, 1.0 / n)]))
    tix = np.tile([2, 3], (n, 1))
    S = ca.reshape(V[tix.ravel().tolist()], 2, n)
    xc = ca.reshape(V[4:], 1, n * d)
    D = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 2], [2, 3]])
    hist = np.array([[1, 1], [1, 0], [0, 0], [0, 0], [0, 0], [0, 0]], dtype=float)
    kw = dict(s=S, delayed=(D, hist))

    data = rng.uniform(size=(1, n))
    p = V[:2]
    lam, mu = ca.MX.sym("lam", 1, n * d), ca.MX.sym("mu", 1, n * d)
    g = ca.vertcat(ca.vec(chain.defects([0.5], xc, t, h, data, p, **kw)), ca.vec(chain.paths([0.5], xc, t, h, data, p, **kw)))
    L = ca.dot(lam, chain.defects([0.5], xc, t, h, data, p, **kw)) + ca.dot(mu, chain.paths([0.5], xc, t, h, data, p, **kw))
    off = 4
    hb = [chain.defect_block([0.5], xc, t, h, data, p, lam, off, [0, 1], **kw, **{"time_index": tix}),
          chain.path_block([0.5], xc, t, h, data, p, mu, off, [0, 1], **kw, **{"time_index": tix})]
    jb = [chain.jacobian_block([0.5], xc, t, h, data, p, off, [0, 1], 0, **kw, **{"time_index": tix}),
          chain.path_jacobian_block([0.5], xc, t, h, data, p, off, [0, 1], n * d, **kw, **{"time_index": tix})]
    f = ca.Function("f", [V, lam, mu], [ca.triu(ca.hessian(L, V)[0]), chain.hessian(nv, hb),
                                       ca.jacobian(g, V), chain.jacobian(2 * n * d, nv, jb)])
    v = np.concatenate([[0.7, 0.25], [0.0, 1.0], rng.normal(size=n * d)])
    a, b, c, e = f(v, rng.normal(size=n * d), rng.normal(size=n * d))
    assert np.abs(np.asarray(a.full())).max() > 0.1
    np.testing.assert_allclose(np.asarray(a.full()), np.asarray(b.full()), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(c.full()), np.asarray(e.full()), rtol=1e-10, atol=1e-12)

