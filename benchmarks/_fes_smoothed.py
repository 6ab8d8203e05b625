"""The smoothed (no events) formulation of `fes-muscle`, a baseline for benchmarks/fes_muscle.py.

The clock's jumps and the |·| of eqs. (8)–(10) are made smooth so that one uniform mesh and one
ODE (no phases, no events) serve; the price is the smoothing error, which the benchmark measures
beside the library's timed hybrid fit (``co.solve(fes_muscle.problem(trials), co.Radau(3))``).
Its NLP is assembled here from the library's building blocks (:class:`colloc.IntervalChain`,
:class:`colloc.ChainLayout`, :func:`colloc.constrained_covariance`): a comparison method of the
benchmark, not a way the problem is identified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np
from colloc_problems.fes_muscle import GUESS, KNOWN, NAMES

import colloc as co

_STATE_SCALE = np.array([1e4, 300.0])  # k_c (N/m), F_c (N)


def _nlp(trials, layouts, chain: co.IntervalChain):
    """The NLP of one round assembled from the mapped interval Functions, and the upper
    triangle of its Lagrangian's Hessian as a Function ``(x, p, lam_f, lam_g)``."""
    q = ca.MX.sym("q", len(NAMES))
    d, nx = chain.degree, chain.nx
    x0 = np.zeros(nx)
    c_force = np.array([0.0, _STATE_SCALE[1]])
    n_samples = sum(len(tr.time) for tr in trials)
    sizes = [2 * lay.size * d for lay in layouts]
    lam_f, lam_g = ca.MX.sym("lam_f"), ca.MX.sym("lam_g", sum(sizes) + sum(len(lay.keep[0]) for lay in layouts))
    ws, gs, keeps, resid, blocks, jac_blocks, reads = [], [], [], [], [], [], []
    offset, g_offset = len(NAMES), 0
    for tr, lay, size in zip(trials, layouts, sizes):
        n = lay.size
        xc = ca.MX.sym(f"x_{tr.name}", nx, n * d)
        gs.append(ca.vec(chain.defects(x0, xc, lay.t_rates, lay.h, lay.data, q)))
        states = chain.values(x0, xc, lay.interval, tr.time, lay.t, lay.h, q) * _STATE_SCALE
        reads.append(states)
        resid.append((states[1, :] - ca.DM(tr["force"]).T).T)
        if lay.keep[0].size:
            keeps.append(ca.DM(lay.keep[0]) + ca.mtimes(ca.DM(lay.keep[1]), q))
        ws.append(ca.vec(xc))
        # Hessian blocks: one per interval (defects), one per sample (fit)
        lam = ca.reshape(lam_g[g_offset:g_offset + size], nx, n * d)
        p_index = np.arange(len(NAMES))
        blocks.append(chain.defect_block(x0, xc, lay.t_rates, lay.h, lay.data, q, lam, offset, p_index))
        blocks.append(chain.fit_block(x0, xc, lay.interval, tr.time, lay.t, lay.h, q, c_force, tr["force"],
                                      lam_f / n_samples, offset, p_index))
        jac_blocks.append(chain.jacobian_block(x0, xc, lay.t_rates, lay.h, lay.data, q, offset, p_index, g_offset))
        offset += size
        g_offset += size
    V = ca.vertcat(q, *ws)
    g_keep = ca.vertcat(*keeps) if keeps else ca.MX(0, 1)
    n_var, n_con = V.shape[0], g_offset + g_keep.shape[0]
    keep_rows = ca.DM(n_con, n_var)  # the linear structure constraints: constant rows in q
    if keeps:
        keep_rows[g_offset:, : len(NAMES)] = np.vstack([lay.keep[1] for lay in layouts if lay.keep[0].size])
    G = ca.vertcat(*gs, g_keep)
    hess = ca.Function("hess_lag", [V, ca.MX(0, 1), lam_f, lam_g], [chain.hessian(n_var, blocks)],
                       ["x", "p", "lam_f", "lam_g"], ["triu_hess_gamma_x_x"])
    jac = ca.Function("jac_g", [V, ca.MX(0, 1)], [G, chain.jacobian(n_con, n_var, jac_blocks, keep_rows)],
                      ["x", "p"], ["g", "jac_g_x"])
    return q, ca.vertcat(*ws), ca.vertcat(*gs), g_keep, ca.vertcat(*resid), hess, jac, reads


def _gauss_newton(jac, Vv, V, r, reads, ng: int, scale: np.ndarray):
    """The Gauss–Newton covariance s²(JᵀJ)⁻¹ at the solution ``Vv``, J the sample sensitivities
    through the collocation equations (implicit function theorem), per physical unit (NaN where
    JᵀJ is singular: the records do not determine every unknown); also the states read at the
    samples, the residuals and s²."""
    jac_v = jac(Vv, [])[1][:ng, :]
    nq = len(NAMES)
    Rv = ca.Function("R", [V], [ca.jacobian(r, V), r, *reads])(Vv)
    states = [np.asarray(x.full()).T for x in Rv[2:]]  # per trial: samples × (k_c, F_c)
    rv = np.asarray(Rv[1].full()).ravel()
    # NaN where singular, measured: k0 on its bound in the fit of a record the model cannot follow
    cov = co.constrained_covariance(Rv[0], rv, jac_v, np.arange(nq), np.arange(nq, V.shape[0]), scale=scale)
    return cov.matrix, cov.standard_errors, states, rv, cov.residual_variance



def smoothed_rates(scale, width: float = 5e-4, delta: float = 1e-3) -> ca.Function:
    """Eqs. (8)–(10) with the clock's jumps and the |·| made smooth, as one CasADi Function
    ``(x, t, data, q) → ẋ`` (``x`` scaled by the state scale, ``t`` absolute time, ``data`` =
    (the last three pulse times up to the interval, the next one, α), ``q`` the unknowns over
    ``scale``): steps S(x) = ½(1 + tanh(x / ``width``)) at a cycle's start, end of plateau and
    end of fall, a cycle's window S(t − c_k)·(1 − S(t − c_k+1)); |x| ≈ √(x² + ``delta``²); the
    element's two sides joined by tanh(R / 10⁻² s⁻¹·F0).  No events, no phases: the price is the
    smoothing error (measured by ``benchmarks/fes_muscle.py``)."""
    scale = np.asarray(scale, dtype=float)
    x, t, data, q = ca.SX.sym("x", 2), ca.SX.sym("t"), ca.SX.sym("data", 5), ca.SX.sym("q", len(NAMES))
    P = {**KNOWN, **{n: q[i] * scale[i] for i, n in enumerate(NAMES)}}

    def S(v):
        return 0.5 * (1 + ca.tanh(v / width))

    def sabs(v):
        return ca.sqrt(v * v + delta * delta)

    c = [data[j] + P["tau"] for j in range(4)]
    u = P["U_m"]
    for j in range(3):
        s_ = t - c[j]
        shape = (P["U_p"] * (1 - S(s_ - P["tau1"]))
                 + S(s_ - P["tau1"]) * (1 - S(s_ - P["tau1"] - P["tau2"])) * P["U_p"] * (1 - (s_ - P["tau1"]) / P["tau2"])
                 + S(s_ - P["tau1"] - P["tau2"]) * P["U_m"])
        u = u + S(s_) * (1 - S(t - c[j + 1])) * (shape - P["U_m"])
    alpha = data[4]
    k, F = x[0] * _STATE_SCALE[0], x[1] * _STATE_SCALE[1]
    up, ua = 0.5 * (u + sabs(u)), sabs(u)
    R = alpha * P["F0"] * up - ua * F
    e = -R / ((P["k_s"] + k) * P["L_c0"] + F * ca.tanh(R / (1e-2 * P["F0"])))
    rates = ca.vertcat(-(ua + sabs(e)) * k + alpha * P["k0"] * up, -P["k_s"] * P["L_c0"] * e)
    return ca.Function("fes_smoothed_rates", [x, t, data, q], [rates / _STATE_SCALE])


def _pulse_data(trial: co.Trial, t: np.ndarray) -> np.ndarray:
    """(the last three pulse times at or before each ``t``, the next one, α at ``t``): 5 × N;
    a missing pulse is placed 1000 s away (its cycle has no effect)."""
    pulses = np.concatenate([[-1e3] * 3, trial.time[np.asarray(trial["pulse"]).astype(bool)], [1e3]])
    i = np.searchsorted(pulses, t, side="right") - 1
    return np.vstack([pulses[i - 2], pulses[i - 1], pulses[i], pulses[i + 1], np.interp(t, trial.time, trial["alpha"])])


def simulate_smoothed(params: Mapping[str, float], trial: co.Trial, width: float = 5e-4) -> np.ndarray:
    """Force (N) at the samples of ``trial`` by the smoothed model (:func:`smoothed_rates`),
    integrated without events by SciPy's LSODA (rtol = atol = 1e-8 on the scaled states, steps
    ≤ 2 ms)."""
    from scipy.integrate import solve_ivp

    f = smoothed_rates(np.ones(len(NAMES)), width)
    q = np.array([float(params[n]) for n in NAMES])

    def rhs(t, y):
        return np.asarray(f(y, t, _pulse_data(trial, np.array([t]))[:, 0], q)).ravel()

    sol = solve_ivp(rhs, (trial.time[0], trial.time[-1]), [0.0, 0.0], t_eval=trial.time, method="LSODA",
                    rtol=1e-8, atol=1e-8, max_step=2e-3)
    return sol.y[1] * _STATE_SCALE[1]


def identify_smoothed(trials: Sequence[co.Trial], guess: Mapping[str, float] | None = None, *, h: float = 5e-4,
                      width: float = 5e-4, degree: int = 3, max_iter: int = 500, print_level: int = 0) -> dict:
    """The identification of :func:`identify` with the smoothed model of :func:`smoothed_rates`
    instead of phases: one uniform mesh of step ``h`` (no rounds, nothing moves with the clock
    times), the same Radau collocation, exact Hessian, least squares and standard errors.  A
    baseline: its error comes from the smoothing of width ``width``."""
    import time as _time

    trials = list(trials)
    t_start = _time.perf_counter()
    cur = {**GUESS, **(guess or {})}
    scale = np.array([abs(GUESS[n]) for n in NAMES])
    lo = np.array([1.0, 1.0, 0.1, -1e3, 0.0, 1e-3, 1e-3]) / scale
    hi = np.array([1e5, 1e7, 1e3, -1e-3, 0.05, 0.5, 0.5]) / scale
    chain = co.IntervalChain(smoothed_rates(scale, width), degree)
    layouts = []
    for tr in trials:
        n = int(np.ceil((tr.time[-1] - tr.time[0]) / h - 1e-9))
        t_num = tr.time[0] + h * np.arange(n)
        zero = np.zeros((n, len(NAMES)))
        interval = np.clip(np.searchsorted(t_num - 1e-9, tr.time, side="right") - 1, 0, n - 1)
        tc = (t_num[:, None] + chain.tau[None, :] * h).ravel()
        F = np.interp(tc, tr.time, tr["force"])
        x_guess = np.vstack([F / max(tr["force"].max(), 1.0) * 3e4 * np.interp(tc, tr.time, tr["alpha"]), F])
        layouts.append(co.ChainLayout(("smooth",), (n,), (t_num, zero), (np.full(n, h), zero),
                                      _pulse_data(tr, t_num + 0.5 * h), interval, x_guess / _STATE_SCALE[:, None],
                                      keep=(np.zeros(0), np.zeros((0, len(NAMES))))))
    t0 = _time.perf_counter()
    q, w, g_eq, _, r, hess, jac, reads = _nlp(trials, layouts, chain)
    V = ca.vertcat(q, w)
    opts = co.Ipopt(tol=1e-10, max_iter=max_iter, print_level=print_level,
                    extra={"acceptable_iter": 5, "acceptable_tol": 1e-6}).nlpsol_options()
    solver = ca.nlpsol("fes_smoothed", "ipopt", {"x": V, "f": 0.5 * ca.sumsqr(r) / r.shape[0], "g": g_eq},
                       {**opts, "hess_lag": hess, "jac_g": jac})
    build_s = _time.perf_counter() - t0
    t0 = _time.perf_counter()
    x0 = np.concatenate([np.array([cur[n] for n in NAMES]) / scale] + [lay.x_guess.ravel(order="F") for lay in layouts])
    sol = solver(x0=x0, lbx=np.concatenate([lo, -np.inf * np.ones(w.shape[0])]),
                 ubx=np.concatenate([hi, np.inf * np.ones(w.shape[0])]), lbg=0, ubg=0)
    solve_s = _time.perf_counter() - t0
    stats = solver.stats()
    Vv = np.array(sol["x"]).ravel()
    params = {n: float(Vv[i] * scale[i]) for i, n in enumerate(NAMES)}
    _cov, se, states, rv, s2 = _gauss_newton(jac, Vv, V, r, reads, g_eq.shape[0], scale)
    return {"problem": "fes-muscle", "formulation": "smoothed", "parameters": params,
            "standard_errors": dict(zip(NAMES, se.tolist())), "success": bool(stats["success"]),
            "status": stats["return_status"], "iterations": int(stats["iter_count"]), "build_s": build_s,
            "solve_s": solve_s, "time_s": _time.perf_counter() - t_start, "residual_std": float(np.sqrt(s2)),
            "variables": int(V.shape[0]), "samples": len(rv), "states": states, "width_s": width, "h_s": h}
