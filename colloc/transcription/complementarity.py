"""The complementarity transcription of a :class:`~colloc.ContactProblem`: one Radau collocation
on a fixed grid over each record (no phases, no switching-time unknowns), the contact forces
unknowns at every collocation point and the impulses at every mesh point.

State x = [q, q̇] (n coordinates).  At each collocation point every contact c has a normal
force λ_c ≥ 0 and a tangential force μ_c (0 for a point that slips), with the equations of
motion M(q)·q̈ = f + Σ J_cᵀ·(μ_c, λ_c) and Signorini's law (Wieber & Billet 2006, §3, Eqs. 1–3)

    φ_c(q) ≥ 0,   λ_c·φ_c → 0 (penalised, or ≤ ε),   |λ_c·u_c| ≤ ε,   |μ_c| ≤ κ·λ_c,

u_c the point's displacement from its anchor (or its tangential velocity: no slip).  A landing
is a velocity jump at a mesh point, M(v⁺ − v⁻) = Σ J_cᵀ·Π_c, its normal impulse complementary
to the gap one step ahead ψ = φ + h·v_n⁺ (the time-stepping schemes' condition) and to the
post-impact velocity of the point (perfectly inelastic).  The basis is the library's one
(:func:`colloc.transcription.grid.radau_basis`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np

from ..definition.contact_problem import ContactProblem
from ..definition.trial import Trial
from .grid import radau_basis

__all__ = ["ContactFunctions", "ContactNLP", "ContactRecord"]


def _column(value) -> ca.SX | ca.MX | ca.DM:
    """A function's value (a list, a NumPy object array or a CasADi matrix) as a CasADi column."""
    if isinstance(value, ca.SX | ca.MX | ca.DM):
        return ca.vec(value)
    return ca.vertcat(*[v for v in np.asarray(value, dtype=object).ravel()])


def _matrix(value, n: int) -> ca.SX | ca.MX | ca.DM:
    """An n×n matrix from a function's value."""
    if isinstance(value, ca.SX | ca.MX | ca.DM):
        return ca.reshape(value, n, n) if value.shape != (n, n) else value
    rows = np.asarray(value, dtype=object).reshape(n, n)
    return ca.vertcat(*[ca.horzcat(*row) for row in rows])


class ContactFunctions:
    """The CasADi Functions of one problem's transcription (Radau ``degree``, friction bound
    ``kappa``): per interval, per mesh point, at the start, and the contact rows."""

    def __init__(self, problem: ContactProblem, degree: int, kappa: float) -> None:
        sysm = problem.system
        n, nc = sysm.n, len(sysm.contacts)
        self.n, self.nc, self.nx = n, nc, 2 * n
        basis = radau_basis(degree)
        self.tau, D = basis.points, basis.derivative[1:]
        nx, npar, nu = 2 * n, len(problem.parameters), len(problem.inputs)
        self.np, self.nu = npar, nu
        F, Imp = problem.force_scale, problem.impulse_scale
        eps, p = ca.SX.sym("eps"), ca.SX.sym("p", npar)
        slip = [c.slip for c in sysm.contacts]
        anchor = [problem.anchors.get(c.name) for c in sysm.contacts]

        def values(uu):
            return {**{k: p[i] * problem.scale[k] for i, k in enumerate(problem.parameters)},
                    **{k: uu[i] for i, k in enumerate(problem.inputs)}}

        def pieces(x, uu, t=0.0):
            q, v = x[:n], x[n:]
            pv = values(uu)
            M = _matrix(sysm.mass(q, pv), n)
            f = _column(sysm.forces(t, q, v, pv))
            pts = [_column(c.point(q)) for c in sysm.contacts]
            J = [ca.jacobian(P, q) for P in pts]
            return q, v, M, f, pts, J

        def comp(x, lam, pts, J, velocity: bool):
            """For one point: normal force × gap (penalised), the relaxed no-slip (and after an
            impulse inelastic) rows (≤ 0), the cone rows (≥ 0)."""
            pen: list = []
            le: list = []
            ge: list = []
            v = x[n:]
            for c in range(nc):
                ln, lt = lam[2 * c], lam[2 * c + 1]
                pen.append(ln * pts[c][1])
                vel = J[c] @ v
                rows = [vel[1]] if velocity else []
                if not slip[c]:
                    rows.append(vel[0] if velocity or anchor[c] is None else pts[c][0] - anchor[c])
                    ge += [kappa * ln - lt, kappa * ln + lt]
                le += [e for r in rows for e in (ln * r - eps, -ln * r - eps)]
            return pen, le, ge

        xs, xc, L = ca.SX.sym("xs", nx), ca.SX.sym("xc", nx, degree), ca.SX.sym("L", 2 * nc, degree)
        uc, h, tc = ca.SX.sym("uc", nu, degree), ca.SX.sym("h"), ca.SX.sym("tc", degree)
        dyn: list = []
        gap: list = []
        pen: list = []
        le: list = []
        ge: list = []
        allx = ca.horzcat(xs, xc)
        for j in range(degree):
            x = xc[:, j]
            _q, v, M, f, pts, J = pieces(x, uc[:, j], tc[j])
            xdot = (allx @ ca.DM(D[j])) / h
            force = sum((J[c].T @ ca.vertcat(L[2 * c + 1, j], L[2 * c, j]) for c in range(nc)), ca.SX.zeros(n))
            dyn += [xdot[:n] - v, (M @ xdot[n:] - f - F * force) / F]
            gap += [P[1] for P in pts]
            pj, lj, gj = comp(x, L[:, j], pts, J, False)
            pen, le, ge = pen + pj, le + lj, ge + gj
        # common subexpressions merged: the system's functions are called once per piece (mass,
        # forces, each contact point), each call repeating the kinematics
        self.interval = ca.Function("comp_interval", [xs, xc, L, uc, h, tc, p, eps],
                                    ca.cse([ca.vertcat(*dyn), ca.vertcat(*gap), ca.vertcat(*pen), ca.vertcat(*le),
                                            ca.vertcat(*ge)]))
        xe, xk, Pi, hk = ca.SX.sym("xe", nx), ca.SX.sym("xk", nx), ca.SX.sym("Pi", 2 * nc), ca.SX.sym("hk")
        _q, v, M, _f, pts, J = pieces(xk, ca.SX.zeros(nu))
        imp = sum((J[c].T @ ca.vertcat(Pi[2 * c + 1], Pi[2 * c]) for c in range(nc)), ca.SX.zeros(n))
        _pj, lj, gj = comp(xk, Pi, pts, J, True)
        psi = [pts[c][1] + hk * (J[c] @ v)[1] for c in range(nc)]
        self.mesh = ca.Function("comp_mesh", [xe, xk, Pi, hk, eps],
                                ca.cse([ca.vertcat(xk[:n] - xe[:n], M @ (v - xe[n:]) - Imp * imp),
                                        ca.vertcat(*[Pi[2 * c] * psi[c] for c in range(nc)]), ca.vertcat(*lj),
                                        ca.vertcat(*gj, *psi)]))
        x0, l0 = ca.SX.sym("x0", nx), ca.SX.sym("l0", 2 * nc)
        _q, _v, _M, _f, pts, J = pieces(x0, ca.SX.zeros(nu))
        pj0, lj0, _ = comp(x0, l0, pts, J, True)
        _p, lj1, _ = comp(x0, l0, pts, J, False)
        self.init = ca.Function("comp_init", [x0, l0, eps], [ca.vertcat(*[P[1] for P in pts]),
                                                           ca.vertcat(*[a - eps for a in pj0], *lj0, *lj1)])
        # the contact rows of the covariance: per contact (gap, slide) at a collocation point,
        # (normal, tangential velocity) after an impulse, with their Jacobians in the state
        xq = ca.SX.sym("xq", nx)
        _q, vq, _M, _f, pts, J = pieces(xq, ca.SX.zeros(nu))
        rows = []
        for c in range(nc):
            vel = J[c] @ vq
            slide = vel[0] if anchor[c] is None else pts[c][0] - anchor[c]
            rows += [pts[c][1], slide, vel[1], vel[0]]
        R = ca.vertcat(*rows)
        self.contact_rows = ca.Function("comp_contact_rows", [xq], [R, ca.jacobian(R, xq)])
        self.slip = slip
        # the equations of motion without contact forces and the contact geometry, for the start
        xm, um = ca.SX.sym("xm", nx), ca.SX.sym("um", nu)
        _q, _v, M, f, pts, J = pieces(xm, um)
        self.dynamics = ca.Function("comp_dynamics", [xm, um, p], [M, f, ca.horzcat(*pts), ca.vertcat(*J)])
        measured: list = [_column(g(xm[:n], xm[n:])) for g in problem.outputs.values()]
        self.outputs = ca.Function("comp_outputs", [xm], [ca.vertcat(*measured)])


class ContactRecord:
    """Index bookkeeping of one record on its fixed grid: ``per_sample`` intervals per sample
    step, the unknowns from ``offset`` on."""

    def __init__(self, problem: ContactProblem, fn: ContactFunctions, trial: Trial, offset: int, degree: int,
                 per_sample: int) -> None:
        from scipy.interpolate import CubicSpline

        t = np.asarray(trial.time, dtype=float)
        self.trial, self.d, self.m = trial, degree, per_sample
        self.N = N = per_sample * (len(t) - 1)
        self.mesh = np.interp(np.arange(N + 1) / per_sample, np.arange(len(t)), t)
        self.h = np.diff(self.mesh)
        self.tc = self.mesh[:-1, None] + fn.tau[None, 1:] * self.h[:, None]  # N × d
        self.inputs = np.stack([CubicSpline(t, np.asarray(trial[u], dtype=float))(self.tc)
                                for u in problem.inputs], axis=-1) if problem.inputs else np.zeros((N, degree, 0))
        nx, nl = fn.nx, 2 * fn.nc
        self.ix_mesh = offset + np.arange(nx * (N + 1)).reshape(N + 1, nx)
        o = offset + nx * (N + 1)
        self.ix_imp = o + np.arange(nl * (N + 1)).reshape(N + 1, nl)
        o += nl * (N + 1)
        self.ix_coll = o + np.arange(nx * degree * N).reshape(N, degree, nx)
        o += nx * degree * N
        self.ix_force = o + np.arange(nl * degree * N).reshape(N, degree, nl)
        self.end = o + nl * degree * N
        self.samples = np.arange(0, N + 1, per_sample)


class ContactNLP:
    """The relaxed MPCC of a problem's ``trials`` (shared parameters, scaled by the problem's
    scales), ε and the weights 1/σ of each record's signals NLP parameters."""

    def __init__(self, problem: ContactProblem, trials: Sequence[Trial], fn: ContactFunctions, degree: int,
                 per_sample: int, penalty: bool, split: float) -> None:
        self.problem, self.fn, self.degree, self.trials = problem, fn, degree, list(trials)
        nx, nl, npar = fn.nx, 2 * fn.nc, fn.np
        recs, off = [], npar
        for tr in self.trials:
            rec = ContactRecord(problem, fn, tr, off, degree, per_sample)
            recs.append(rec)
            off = rec.end
        self.recs, self.n = recs, off
        names = list(problem.outputs)
        self.weights = [(k, s) for k, tr in enumerate(self.trials) for s in names if s in tr]
        V, P = ca.MX.sym("V", off), ca.MX.sym("P", 2 + len(self.weights))
        eps, p = P[0], V[:npar]
        eq, le_all, ge_all, resid, pens = [], [], [], [], []
        for k, rec in enumerate(recs):
            N, d = rec.N, degree
            Xm = ca.reshape(V[rec.ix_mesh.ravel().tolist()], nx, N + 1)
            Pi = ca.reshape(V[rec.ix_imp.ravel().tolist()], nl, N + 1)
            Xc = ca.reshape(V[rec.ix_coll.ravel().tolist()], nx * d, N)
            Lc = ca.reshape(V[rec.ix_force.ravel().tolist()], nl * d, N)
            U = ca.DM(rec.inputs.reshape(N * d, -1).T) if fn.nu else ca.DM(0, N * d)
            dyn, gap, pen, le, ge = fn.interval.map(N, "serial")(
                Xm[:, :N], ca.reshape(Xc, nx, d * N), ca.reshape(Lc, nl, d * N),
                U, ca.DM(rec.h).T, ca.DM(rec.tc.T), p, eps)
            last = Xc[nx * (d - 1):, :]  # the end of each interval (τ_d = 1)
            h_next = np.append(rec.h[1:], rec.h[-1])  # the step after each mesh point (the last: its own)
            cont, mpen, mle, mge = fn.mesh.map(N, "serial")(last, Xm[:, 1:], Pi[:, 1:], ca.DM(h_next).T, eps)
            g0, l0 = fn.init(Xm[:, 0], Lc[:nl, 0], eps)
            eq += [ca.vec(dyn), ca.vec(cont)]
            ge_all += [ca.vec(gap), ca.vec(ge), ca.vec(mge), g0]
            le_all += [ca.vec(le), ca.vec(mle), l0]
            if penalty:
                pens += [ca.vec(pen), ca.vec(mpen)]
            else:
                le_all += [ca.vec(pen) - eps, ca.vec(mpen) - eps]
            Y = fn.outputs.map(len(rec.samples), "serial")(Xm[:, rec.samples.tolist()])
            for i, s in enumerate(names):
                if s in rec.trial:
                    w = P[2 + self.weights.index((k, s))]
                    resid.append((Y[i, :].T - np.asarray(rec.trial[s], dtype=float)) * w)
        G_eq, G_le, G_ge = ca.vertcat(*eq), ca.vertcat(*le_all), ca.vertcat(*ge_all)
        self.V, self.P, self.r = V, P, ca.vertcat(*resid)
        tang = np.concatenate([np.concatenate([rec.ix_force[:, :, 1::2].ravel(), rec.ix_imp[:, 1::2].ravel()])
                               for rec in recs])
        self.split = split * ca.sumsqr(V[tang.tolist()]) / len(tang)
        self.samples = int(self.r.shape[0])
        self.penalty = P[1] * ca.sum1(ca.vertcat(*pens)) / self.samples if pens else 0
        self.g = ca.vertcat(G_eq, G_le, G_ge)
        ne, nle, nge = G_eq.shape[0], G_le.shape[0], G_ge.shape[0]
        self.lbg = np.concatenate([np.zeros(ne), -np.inf * np.ones(nle), np.zeros(nge)])
        self.ubg = np.concatenate([np.zeros(ne), np.zeros(nle), np.inf * np.ones(nge)])
        self.n_eq = ne
        lbx, ubx = np.full(off, -np.inf), np.full(off, np.inf)
        for i, name in enumerate(problem.parameters):
            lo, hi = problem.bounds[name]
            lbx[i], ubx[i] = lo / problem.scale[name], hi / problem.scale[name]
        for rec in recs:
            lbx[rec.ix_force[:, :, 0::2].ravel()] = 0.0
            lbx[rec.ix_imp[:, 0::2].ravel()] = 0.0
            lbx[rec.ix_imp[0]] = ubx[rec.ix_imp[0]] = 0.0  # no impulse at the start
            for c, slips in enumerate(fn.slip):
                if slips:  # a point that slips carries no tangential force
                    lbx[rec.ix_force[:, :, 2 * c + 1].ravel()] = ubx[rec.ix_force[:, :, 2 * c + 1].ravel()] = 0.0
                    lbx[rec.ix_imp[:, 2 * c + 1]] = ubx[rec.ix_imp[:, 2 * c + 1]] = 0.0
        self.lbx, self.ubx = lbx, ubx

    def objective(self) -> ca.MX:
        """½·mean of the squared weighted residuals, the split term and the penalty."""
        return 0.5 * ca.sumsqr(self.r) / self.samples + self.split + self.penalty

    def parameters(self, eps: float, sigmas: Sequence[Mapping[str, float]], penalty: float) -> np.ndarray:
        """ε, the penalty weight ρ = ``penalty``/ε, then 1/σ of each record's signals."""
        return np.array([eps, penalty / eps if eps > 0 else 0.0, *[1.0 / sigmas[k][s] for k, s in self.weights]])

    def start(self, p0: np.ndarray, gap_tol: float) -> np.ndarray:
        """The unknowns to start from: the parameters ``p0`` (scaled), the states of the
        problem's ``start_states``, the contact forces of the inverse dynamics at ``p0`` (least
        squares with the contacts whose gap is below ``gap_tol``; normal forces clipped at 0)."""
        from scipy.interpolate import CubicSpline

        fn, n, nc = self.fn, self.fn.n, self.fn.nc
        x = np.zeros(self.n)
        x[:fn.np] = p0
        F = self.problem.force_scale
        for rec in self.recs:
            t = np.asarray(rec.trial.time, dtype=float)
            states = _start_states(self.problem, rec.trial)
            x[rec.ix_mesh] = states(rec.mesh)
            tc = rec.tc.ravel()
            xc = states(tc)
            x[rec.ix_coll] = xc.reshape(rec.N, self.degree, fn.nx)
            vdot = CubicSpline(t, states(t)[:, n:]).derivative()(tc)
            u = rec.inputs.reshape(len(tc), -1)
            M, f, P, J = fn.dynamics.map(len(tc))(xc.T, u.T if fn.nu else ca.DM(0, len(tc)), ca.repmat(p0, 1, len(tc)))
            M, f, P, J = (np.asarray(a) for a in (M, f, P, J))
            L = np.zeros((len(tc), 2 * nc))
            for i in range(len(tc)):
                r = M[:, i * n:(i + 1) * n] @ vdot[i] - f[:, i]
                Pi, Ji = P[:, i * nc:(i + 1) * nc], J[:, i * n:(i + 1) * n].reshape(nc, 2, n)
                cols = [(2 * c + k, Ji[c, 1 - k]) for c in range(nc) if Pi[1, c] <= gap_tol
                        for k in ((0,) if fn.slip[c] else (0, 1))]
                if cols:
                    B = np.column_stack([col for _k, col in cols]) * F
                    for (k, _col), val in zip(cols, np.linalg.lstsq(B, r, rcond=None)[0]):
                        L[i, k] = val
            L[:, 0::2] = np.maximum(L[:, 0::2], 0.0)
            x[rec.ix_force] = L.reshape(rec.N, self.degree, 2 * nc)
        return x


def _start_states(problem: ContactProblem, trial: Trial):
    """``times → (len, 2n)`` states to start from: the problem's ``start_states``, else the
    coordinates measured by name smoothed (a cubic smoothing spline) with their derivatives."""
    if problem.start_states is not None:
        return lambda times: np.asarray(problem.start_states(trial, np.asarray(times, dtype=float)), dtype=float)
    from scipy.interpolate import make_smoothing_spline

    t = np.asarray(trial.time, dtype=float)
    coords = list(problem.system.coordinates)
    missing = [c for c in coords if c not in trial]
    if missing:
        raise ValueError(f"ContactProblem: trial {trial.name!r} does not measure {', '.join(missing)}; give "
                         "start_states=... to start the fit")
    splines = [make_smoothing_spline(t, np.asarray(trial[c], dtype=float),
                                     lam=None) for c in coords]

    def states(times):
        q = np.column_stack([s(times) for s in splines])
        v = np.column_stack([s.derivative()(times) for s in splines])
        return np.hstack([q, v])
    return states
