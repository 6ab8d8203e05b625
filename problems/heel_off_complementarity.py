"""`heel-off` by a complementarity formulation: the mode sequence comes out of the fit.

The alternative of issue 13 to the multi-phase method of :mod:`colloc_problems.heel_off_multiphase`
(which reads the sequence of modes from the data and makes the switching times unknowns):
one Radau collocation on a FIXED grid over the whole record (no phases, no switching-time
unknowns), the foot free to rock.  Full coordinates q = (x_A, y_A, θ_foot, θ_body) of
:func:`heel_off.mechanics`; at every collocation point each contact c ∈ {heel, toe} has a
normal force λ_c ≥ 0 and a tangential force μ_c, with φ_c(q) ≥ 0 (Signorini's law, Wieber &
Billet 2006, §3, Eqs. 1–3) and no slip:

    λ_c·φ_c → 0,   |u_c(q)|·λ_c ≤ ε,   |μ_c| ≤ κ·λ_c,

u_c the horizontal displacement of the point from its place with the foot flat (a point in
touch does not slide; κ = :data:`KAPPA` stands for unlimited friction and is checked not to
bind).  λ_c·φ_c enters either penalised, ρ·Σ λ_c·φ_c in the objective with ρ = PENALTY/ε
(``formulation="penalty"``, the default), or relaxed, λ_c·φ_c ≤ ε (Scholtes,
``"relaxation"``).  Measured on a 1.3 s record with one heel-off, from kp 500, kd 100: the
relaxation's IPOPT solves hit their iteration limit at every ε on the noisy record (and the
clean one needed ~500 iterations per ε), the penalty converged at every ε after the first.
Impacts: a landing is a velocity jump at a mesh point, M(q)(v⁺ − v⁻) = Σ J_cᵀ Π_c with impulses
Π_c (normal ≥ 0) complementary to the gap and to the post-impact velocity of the point
(perfectly inelastic: the point stops; the impulse form of time-stepping schemes).  ε goes from
:data:`EPS_START` to :data:`EPS_END` by a homotopy, each solve warm-started from the last; the
fit weights start soft (:data:`SOFT_NOISE`) and tighten to the record's noise at ε_end.  The
modes and switching times are read from the fit: where the forces vanish and the gaps open (a
lift-off where the force, extrapolated, reaches zero; a landing at the mesh point of its
impulse, so to one mesh step).  Radau degree 2 by default: degree 1 (implicit Euler) biased kp,
kd by −2 %/−4 % on a clean record in which the foot stays flat, degree 2 by < 0.01 %.

An impulse is complementary to the gap one step ahead, ψ = φ + h·v_n⁺ ≥ 0 (the time-stepping
schemes' condition): with Π·φ alone, small impulses at the mesh points of a flat foot kicked its
velocities to fit the noise of ω_foot (0.001 N·s each, ω_foot ±0.02 rad/s at the mesh points;
kd −4.2 SE on a noisy 1.3 s record, +0.9 SE with ψ).  The fit starts from the record smoothed, the contact forces of the foot's inverse
dynamics and the equation-error gains (:class:`_InverseDynamics`); from the static weight split
and kp 500, kd 100 the first homotopy step of that record took 500 iterations, from here 275.

What the fixed grid cannot do: put a landing between mesh points.  On noisy 1.3 s records the
fixed grid's gains were off by +0.9 to +1.8 % (kp +1.4 to +2.9 SE, three seeds) with the lift-off
5 ms early and the landing 6 ms late.  So the modes found are polished (:func:`_polish`, on by
default): the multi-phase collocation of :func:`heel_off.identify` with that sequence and the
switching times free.  Records longer than :data:`WINDOW` + :data:`OVERLAP` are fitted in
overlapping windows whose modes are stitched (:func:`_windowed`).

Standard errors: Gauss–Newton with the collocation, continuity and jump equations and the
contact equations of the contacts *in touch* (a force clearly positive: φ_c = 0, u_c = 0; an
impulse clearly positive: the point stops) eliminated; forces of contacts out of touch fixed
at zero; weakly active inequalities (a force and a gap both about zero) are not equations.
"""

from __future__ import annotations

import time as _time
from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np

import colloc as co

from . import heel_off_multiphase as ho

__all__ = ["EPS_END", "EPS_START", "KAPPA", "METHOD", "STARTS", "equation_error", "identify", "identify_result"]

#: The name of this method (``colloc identify heel-off --method complementarity``).
METHOD = "complementarity"

#: Relaxation of the complementarity (m·(100 N) for gap × force): the homotopy's first and last ε.
EPS_START, EPS_END, EPS_FACTOR = 1e-4, 1e-6, 0.1
#: "Unlimited" friction: |μ| ≤ κ·λ (a fit where this binds is reported, ``friction_bound``).
KAPPA = 20.0
FORCE = ho.FORCE_SCALE  # N per unit of λ, μ
IMPULSE = 1.0  # N·s per unit of impulse
#: The modes: a contact is in touch where its gap is below GAP_TOL (m; a penalised or relaxed
#: fit may keep a force of a few N on a point just lifted).  The covariance: a contact is held
#: where its force exceeds FORCE_TOL (N), an impulse acts where it exceeds IMPULSE_TOL (N·s).
FORCE_TOL, GAP_TOL, IMPULSE_TOL = 1.0, 1e-4, 1e-3
#: ... or where its force exceeds MODE_FORCE (N, about 3.5 % of the weight): on a clean record,
#: weighted at the noise floor, the penalty gives way to the fit and a pivot may hold 470 N
#: with its gap at 0.3 mm (measured on the first 1.5 s of heel_off_clean.csv; its gains came
#: out within 0.01 %, its modes read by the gaps alone lost both contacts).
MODE_FORCE = 25.0
#: Bounds of the gains (scaled kp/1000, kd/100): a fit on them is ``parameter_on_bound``.
P_LOWER, P_UPPER = np.array([1e-3, 1e-3]), np.array([100.0, 100.0])
#: The flat places of the contact points (x, gap 0) with the ankle above the origin.
_REST = {c: ho.flat_configuration()[0] + ho.BODY[c][0] for c in ("heel", "toe")}


#: Weight of the mean square of the tangential forces and impulses in the objective: it picks
#: the split of the tangential force between heel and toe while both are in touch (only the sum
#: acts then), which the dynamics leave free.
SPLIT = 1e-6

#: How Signorini's law λ·φ = 0 enters: ``relaxation`` (λ·φ ≤ ε, Scholtes) or ``penalty``
#: (ρ·Σ λ·φ added to the objective, ρ = PENALTY/ε, per sample); the no-slip and inelastic
#: rows (sign-indefinite products) stay relaxed by ε in both.
FORMULATIONS = ("relaxation", "penalty")
PENALTY = 1.0

#: IPOPT outcomes of an intermediate homotopy step that still start the next one (only the
#: last step, at ε_end and the record's own noise, must converge).
STEPPING_STONES = ("Maximum_Iterations_Exceeded",)

#: Where the gains start: ``equation-error`` (:func:`equation_error`, the body's equation of
#: motion on the smoothed record) or ``guess`` (the guess given, else :data:`heel_off.GUESS`).
STARTS = ("equation-error", "guess")

#: IPOPT options of the homotopy's warm-started solves.
WARM_OPTIONS = {"ipopt.mu_init": 1e-4}


def _functions(degree: int) -> dict:
    """The per-interval, per-mesh-point and initial-point CasADi Functions."""
    F = ho.mechanics()
    basis = co.radau_basis(degree)
    # 0, τ_1..τ_d, and D (d × (d+1)): ẋ(τ_j)·h = Σ_l D[j, l]·x_l at the collocation points
    tau, D = basis.points, basis.derivative[1:]
    nx = 8
    eps, p = ca.SX.sym("eps"), ca.SX.sym("p", 2)
    kp, kd = p[0] * ho.SCALE[0], p[1] * ho.SCALE[1]

    def contact_terms(q, v):
        _M, _f, Ph, Jh, _bh, Pt, Jt, _bt = F(q, v, 0, 0, 0)
        return {"heel": (Ph, Jh), "toe": (Pt, Jt)}

    def comp(x, lam_n, lam_t, terms, velocity: bool):
        """For one point: the products normal force × gap (≥ 0 by the bounds; ≤ ε relaxed, or
        penalised), the relaxed no-slip (and, after an impulse, inelastic) rows (≤ 0) and the
        cone rows (≥ 0)."""
        pen, le, ge = [], [], []
        v = x[4:]
        for i, c in enumerate(("heel", "toe")):
            P, J = terms[c]
            pen.append(lam_n[i] * P[1])
            if velocity:  # the point's velocity after an impulse (or at the start)
                vel = J @ v
                le += [lam_n[i] * vel[1] - eps, -lam_n[i] * vel[1] - eps, lam_n[i] * vel[0] - eps,
                       -lam_n[i] * vel[0] - eps]
            else:
                u = P[0] - _REST[c]
                le += [lam_n[i] * u - eps, -lam_n[i] * u - eps]
            ge += [KAPPA * lam_n[i] - lam_t[i], KAPPA * lam_n[i] + lam_t[i]]
        return pen, le, ge

    # one interval: start state xs, collocation states xc (8 × d), forces L (4 × d: λ_h, μ_h, λ_t, μ_t)
    xs, xc, L, a, h = ca.SX.sym("xs", nx), ca.SX.sym("xc", nx, degree), ca.SX.sym("L", 4, degree), \
        ca.SX.sym("a", degree), ca.SX.sym("h")
    dyn, gap, pen, le, ge = [], [], [], [], []
    allx = ca.horzcat(xs, xc)
    for j in range(degree):
        x = xc[:, j]
        q, v = x[:4], x[4:]
        xdot = (allx @ ca.DM(D[j])) / h
        M, f, Ph, Jh, _bh, Pt, Jt, _bt = F(q, v, a[j], kp, kd)
        force = FORCE * (Jh.T @ ca.vertcat(L[1, j], L[0, j]) + Jt.T @ ca.vertcat(L[3, j], L[2, j]))
        dyn += [xdot[:4] - v, (M @ xdot[4:] - f - force) / FORCE]
        gap += [Ph[1], Pt[1]]
        pj, lj, gj = comp(x, L[[0, 2], j], L[[1, 3], j], {"heel": (Ph, Jh), "toe": (Pt, Jt)}, False)
        pen += pj
        le += lj
        ge += gj
    interval = ca.Function("mpcc_interval", [xs, xc, L, a, h, p, eps],
                           [ca.vertcat(*dyn), ca.vertcat(*gap), ca.vertcat(*pen), ca.vertcat(*le), ca.vertcat(*ge)])
    # a mesh point: the end of the last interval xe, the state after it xk, impulses Pi (4)
    xe, xk, Pi, hk = ca.SX.sym("xe", nx), ca.SX.sym("xk", nx), ca.SX.sym("Pi", 4), ca.SX.sym("hk")
    terms = contact_terms(xk[:4], xk[4:])
    M = F(xk[:4], xk[4:], 0, 0, 0)[0]
    jump = M @ (xk[4:] - xe[4:]) - IMPULSE * (terms["heel"][1].T @ ca.vertcat(Pi[1], Pi[0])
                                               + terms["toe"][1].T @ ca.vertcat(Pi[3], Pi[2]))
    _pj, lj, gj = comp(xk, Pi[[0, 2]], Pi[[1, 3]], terms, True)
    # the impulse's complementarity is with the gap one step ahead, ψ = φ + h·v_n⁺ ≥ 0 (the
    # time-stepping schemes' condition): a point in touch may not be driven into the ground
    # (φ = 0: v_n⁺ ≥ 0), an impulse acts only where it stops a point (ψ = 0), never as a kick
    # that jumps the velocities of a foot at rest.  (ψ = φ + τ_1·h·v_n⁺, which lets a point land
    # at a collocation point inside the next interval, measured worse on a noisy 1.3 s record:
    # the foot bounced after landing, kp +5.9 SE, kd −7.2 SE, residual rms 1.34.)
    psi = [terms[c][0][1] + hk * (terms[c][1] @ xk[4:])[1] for c in ("heel", "toe")]
    pj = [Pi[0] * psi[0], Pi[2] * psi[1]]
    mesh = ca.Function("mpcc_mesh", [xe, xk, Pi, hk, eps],
                       [ca.vertcat(xk[:4] - xe[:4], jump), ca.vertcat(*pj), ca.vertcat(*lj),
                        ca.vertcat(*gj, *psi)])
    # the initial state: consistent with the contacts in touch at the first collocation point
    x0, l0 = ca.SX.sym("x0", nx), ca.SX.sym("l0", 4)
    terms0 = contact_terms(x0[:4], x0[4:])
    pj0, lj0, _ = comp(x0, l0[[0, 2]], l0[[1, 3]], terms0, True)
    _p, lj1, _ = comp(x0, l0[[0, 2]], l0[[1, 3]], terms0, False)
    init = ca.Function("mpcc_init", [x0, l0, eps],
                       [ca.vertcat(terms0["heel"][0][1], terms0["toe"][0][1]),
                        ca.vertcat(*[pp - eps for pp in pj0], *lj0, *lj1)])
    # the contact equations of the covariance (gap, slide; and velocities at a mesh point)
    xq = ca.SX.sym("xq", nx)
    tq = contact_terms(xq[:4], xq[4:])
    rows = []
    for c in ("heel", "toe"):
        P, J = tq[c]
        vel = J @ xq[4:]
        rows += [P[1], P[0] - _REST[c], vel[1], vel[0]]
    contact_eq = ca.Function("mpcc_contact_eq", [xq], [ca.vertcat(*rows)])
    return {"interval": interval, "mesh": mesh, "init": init, "contact_eq": contact_eq, "tau": tau, "D": D}


_FUNCS: dict = {}


def functions(degree: int) -> dict:
    if degree not in _FUNCS:
        _FUNCS[degree] = _functions(degree)
    return _FUNCS[degree]


class _Record:
    """Index bookkeeping of one record on its fixed grid: ``m`` intervals per sample step."""

    def __init__(self, trial: ho.HeelOffTrial, offset: int, degree: int, per_sample: int, tau):
        from scipy.interpolate import CubicSpline

        t = np.asarray(trial.time, dtype=float)
        self.trial, self.d, self.m = trial, degree, per_sample
        self.N = per_sample * (len(t) - 1)
        self.mesh = np.interp(np.arange(self.N + 1) / per_sample, np.arange(len(t)), t)
        self.h = np.diff(self.mesh)
        self.tc = (self.mesh[:-1, None] + tau[None, 1:] * self.h[:, None])  # N × d
        self.acc = CubicSpline(t, trial.platform_acc)(self.tc)
        N, d = self.N, degree
        self.ix_mesh = offset + np.arange(8 * (N + 1)).reshape(N + 1, 8)
        o = offset + 8 * (N + 1)
        self.ix_imp = o + np.arange(4 * (N + 1)).reshape(N + 1, 4)
        o += 4 * (N + 1)
        self.ix_coll = o + np.arange(8 * d * N).reshape(N, d, 8)
        o += 8 * d * N
        self.ix_force = o + np.arange(4 * d * N).reshape(N, d, 4)
        self.end = o + 4 * d * N


def _guess_states(trial: ho.HeelOffTrial, times: np.ndarray, sig: Mapping[str, float]) -> np.ndarray:
    """Full states at ``times`` from the record smoothed (a cubic Savitzky–Golay filter over nine
    samples, :func:`heel_off_multiphase._smoothed_trial` with the record as one stretch), the measured
    angles and rates placed by :func:`heel_off.full_state`, the foot flat where |θ_foot| is
    within 3σ of zero: a guess only; which contact holds is left to the fit."""
    t = trial.time
    trial = ho._smoothed_trial(trial, [("whole record", float(t[0]), float(t[-1]))])
    cols = []
    for i, name in enumerate(ho.STATE_NAMES):
        y = trial.signals[name] if name in trial.signals else np.gradient(trial.signals[ho.STATE_NAMES[i - 2]], t)
        cols.append(np.interp(times, t, y))
    th_b, th_f, w_b, w_f = cols
    lifted = np.abs(th_f) > 3 * sig["theta_foot"]
    return np.array([ho.full_state((b, f if up else 0.0, wb, wf if up else 0.0))
                     for b, f, wb, wf, up in zip(th_b, th_f, w_b, w_f, lifted)])


class _InverseDynamics:
    """The record smoothed (:func:`_guess_states` at the samples; accelerations by the
    derivative of the cubic spline through the smoothed velocities) put into the equations of
    motion at ``times``: :attr:`x` the full states; :attr:`A`, :attr:`b` the body's equation
    A·p = b, linear in p = (kp/1000, kd/100) with no contact force in it (the equation-error
    estimate of the gains); :meth:`forces` the contact forces (units of FORCE: λ_h, μ_h, λ_t,
    μ_t) that make the foot's three equations hold for gains p, by least squares with the
    contacts of the guessed mode, the normal forces clipped at 0."""

    def __init__(self, trial: ho.HeelOffTrial, sig: Mapping[str, float], times: np.ndarray):
        from scipy.interpolate import CubicSpline

        t = np.asarray(trial.time, dtype=float)
        vdot = CubicSpline(t, _guess_states(trial, t, sig)[:, 4:]).derivative()(times)
        x = self.x = _guess_states(trial, times, sig)
        n = len(times)
        F = ho.mechanics().map(n)
        args = (x[:, :4].T, x[:, 4:].T, np.interp(times, t, trial.platform_acc))
        M, f0, _Ph, Jh, _bh, _Pt, Jt, _bt = (np.asarray(o) for o in F(*args, 0.0, 0.0))
        self.gp = (np.asarray(F(*args, ho.SCALE[0], 0.0)[1]) - f0).T  # f's change per unit of p[0], p[1]
        self.gd = (np.asarray(F(*args, 0.0, ho.SCALE[1])[1]) - f0).T
        self.Jh, self.Jt = (J.reshape(2, n, 4).transpose(1, 0, 2) for J in (Jh, Jt))
        self.r0 = np.einsum("nij,nj->ni", M.reshape(4, n, 4).transpose(1, 0, 2), vdot) - f0.T  # M v̇ − f, p = 0
        self.A, self.b = np.column_stack([self.gp[:, 3], self.gd[:, 3]]), self.r0[:, 3]

    def forces(self, p) -> np.ndarray:
        r = self.r0 - p[0] * self.gp - p[1] * self.gd  # = Jᵀ·(contact forces) on the foot's rows
        out = np.zeros((len(r), 4))
        th = self.x[:, 2]
        for i in range(len(r)):
            cols = []  # (index in the forces, generalised force of a unit force)
            if th[i] <= 0:
                cols += [(0, self.Jh[i][1]), (1, self.Jh[i][0])]
            if th[i] >= 0:
                cols += [(2, self.Jt[i][1]), (3, self.Jt[i][0])]
            B = np.column_stack([c for _k, c in cols])[:3] * FORCE
            for (k, _c), v in zip(cols, np.linalg.lstsq(B, r[i, :3], rcond=None)[0]):
                out[i, k] = v
        out[:, [0, 2]] = np.maximum(out[:, [0, 2]], 0.0)
        return out


def equation_error(trials: Sequence[ho.HeelOffTrial], sigs=None) -> dict:
    """kp, kd by the equation-error method: the body's equation of motion on every sample of
    the smoothed records, least squares (:class:`_InverseDynamics`); within the bounds."""
    sigs = _noise(trials) if sigs is None else sigs
    parts = [_InverseDynamics(tr, sg, np.asarray(tr.time, dtype=float)) for tr, sg in zip(trials, sigs)]
    A, b = np.vstack([q.A for q in parts]), np.concatenate([q.b for q in parts])
    p = np.clip(np.linalg.lstsq(A, b, rcond=None)[0], P_LOWER, P_UPPER) * ho.SCALE
    return dict(zip(ho.NAMES, p.tolist()))


class _NLP:
    """The relaxed MPCC of all records (shared p = (kp/1000, kd/100)) with ε a parameter."""

    def __init__(self, trials, degree: int, per_sample: int, penalty: bool = False):
        fn = functions(degree)
        self.fn, self.degree = fn, degree
        recs, off = [], 2
        for tr in trials:
            rec = _Record(tr, off, degree, per_sample, fn["tau"])
            recs.append(rec)
            off = rec.end
        self.recs, self.n = recs, off
        self.weights = [(k, n) for k, tr in enumerate(trials) for n in ho.STATE_NAMES if n in tr.signals]
        V, P = ca.MX.sym("V", off), ca.MX.sym("P", 2 + len(self.weights))
        eps, p = P[0], V[:2]
        eq, ineq_le, ineq_ge, resid, pens = [], [], [], [], []
        self.parts = []
        for k, rec in enumerate(recs):
            N, d = rec.N, degree

            def take(ix):
                return V[ix.ravel().tolist()]
            Xm = ca.reshape(take(rec.ix_mesh), 8, N + 1)
            Pi = ca.reshape(take(rec.ix_imp), 4, N + 1)
            Xc = ca.reshape(take(rec.ix_coll), 8 * d, N)
            Lc = ca.reshape(take(rec.ix_force), 4 * d, N)
            fint = fn["interval"].map(N, "serial")
            dyn, gap, pen, le, ge = fint(Xm[:, :N], ca.reshape(Xc, 8, d * N), ca.reshape(Lc, 4, d * N),
                                    ca.DM(rec.acc.T), ca.DM(rec.h).T, p, eps)
            fmesh = fn["mesh"].map(N, "serial")
            last = Xc[8 * (d - 1):, :]  # the end of each interval (τ_d = 1)
            h_next = np.append(rec.h[1:], rec.h[-1])  # the step after each mesh point (the last: its own)
            cont, mpen, mle, mge = fmesh(last, Xm[:, 1:], Pi[:, 1:], ca.DM(h_next).T, eps)
            g0, l0 = fn["init"](Xm[:, 0], Lc[:4, 0], eps)
            eq += [ca.vec(dyn), ca.vec(cont)]
            ineq_ge += [ca.vec(gap), ca.vec(ge), ca.vec(mge), g0]
            ineq_le += [ca.vec(le), ca.vec(mle), l0]
            if penalty:
                pens += [ca.vec(pen), ca.vec(mpen)]
            else:
                ineq_le += [ca.vec(pen) - eps, ca.vec(mpen) - eps]
            idx = np.arange(0, N + 1, per_sample)
            for i, name in enumerate(ho.STATE_NAMES):
                if name in rec.trial.signals:
                    row = {"theta_body": 3, "theta_foot": 2, "omega_body": 7, "omega_foot": 6}[name]
                    w = P[2 + self.weights.index((k, name))]
                    resid.append((Xm[row, idx.tolist()].T - rec.trial.signals[name]) * w)
        G_eq, G_le, G_ge = ca.vertcat(*eq), ca.vertcat(*ineq_le), ca.vertcat(*ineq_ge)
        self.V, self.P, self.r = V, P, ca.vertcat(*resid)
        tang = np.concatenate([np.concatenate([rec.ix_force[:, :, [1, 3]].ravel(), rec.ix_imp[:, [1, 3]].ravel()])
                               for rec in recs])
        self.split = ca.sumsqr(V[tang.tolist()]) / len(tang)
        # the penalty ρ·Σ λ·φ (per sample of the fit), ρ = P[1] (:meth:`parameters`)
        self.penalty = P[1] * ca.sum1(ca.vertcat(*pens)) / self.r.shape[0] if pens else 0
        self.g = ca.vertcat(G_eq, G_le, G_ge)
        ne, nl, ng = G_eq.shape[0], G_le.shape[0], G_ge.shape[0]
        self.lbg = np.concatenate([np.zeros(ne), -np.inf * np.ones(nl), np.zeros(ng)])
        self.ubg = np.concatenate([np.zeros(ne), np.zeros(nl), np.inf * np.ones(ng)])
        self.samples = int(self.r.shape[0])
        self.n_eq = ne
        lbx, ubx = np.full(off, -np.inf), np.full(off, np.inf)
        lbx[:2], ubx[:2] = P_LOWER, P_UPPER
        for rec in recs:
            lbx[rec.ix_force[:, :, [0, 2]].ravel()] = 0.0
            lbx[rec.ix_imp[:, [0, 2]].ravel()] = 0.0
            lbx[rec.ix_imp[0]] = ubx[rec.ix_imp[0]] = 0.0  # no impulse at the start
        self.lbx, self.ubx = lbx, ubx

    def parameters(self, eps: float, sigs) -> np.ndarray:
        """The NLP's parameter vector: ε, the penalty weight ρ = PENALTY/ε, then 1/σ of each
        fitted signal of each record.  (ρ scaled up with the weights as they tighten to a clean
        record's noise floor sent a 0.8 s clean fit to a local minimum, kp −25 %.)"""
        return np.array([eps, PENALTY / eps if eps > 0 else 0.0, *[1.0 / sigs[k][n] for k, n in self.weights]])

    def guess(self, p0, sigs) -> np.ndarray:
        x = np.zeros(self.n)
        x[:2] = p0
        for rec, sig in zip(self.recs, sigs):
            x[rec.ix_mesh] = _guess_states(rec.trial, rec.mesh, sig)
            inv = _InverseDynamics(rec.trial, sig, rec.tc.ravel())
            x[rec.ix_coll] = inv.x.reshape(rec.N, self.degree, 8)
            x[rec.ix_force] = inv.forces(p0).reshape(rec.N, self.degree, 4)
        return x


#: The homotopy starts with every signal weighted as if at least this noisy (rad, rad/s), then
#: tightens the weights tenfold per step to the record's own noise: a clean record (weighted
#: by :data:`heel_off.NOISE_FLOOR`) from a poor start is otherwise a very stiff least-squares problem.
SOFT_NOISE = {"theta_body": 1e-3, "theta_foot": 1e-3, "omega_body": 1e-2, "omega_foot": 1e-2}


def _steps(sigs, eps_start: float, eps_end: float, eps_factor: float) -> list:
    """The homotopy: (ε, noise per record and signal) per solve."""
    out, eps = [], eps_start
    soft = [{n: max(v, SOFT_NOISE[n]) for n, v in sg.items()} for sg in sigs]
    while True:
        out.append((eps, soft))
        if eps <= eps_end * (1 + 1e-9):
            break
        eps = max(eps * eps_factor, eps_end)
    scale = 0.1
    while soft != sigs:
        soft = [{n: v if v >= SOFT_NOISE[n] * scale * (1 - 1e-9) else SOFT_NOISE[n] * scale for n, v in sg.items()}
                for sg in sigs]
        soft = sigs if all(a[n] == b[n] for a, b in zip(soft, sigs) for n in a) else soft
        out.append((eps_end, soft))
        scale *= 0.1
    return out


def _noise(trials):
    return [{n: max(ho._noise(tr.signals[n]), ho.NOISE_FLOOR[n]) for n in ho.STATE_NAMES if n in tr.signals}
            for tr in trials]


#: Records longer than WINDOW + OVERLAP (s) are fitted in windows of WINDOW s that overlap by
#: OVERLAP s (:func:`_windowed`).  Measured: one fit over a whole 8 s record ran each homotopy
#: step into IPOPT's 500-iteration limit (0.4–0.55 s per iteration, the two cores shared) and
#: ended in ``time_limit`` with the heel touching and lifting at every mesh point for 0.2 s after
#: each true landing; fits of 1.3 s records converge at every step.
WINDOW, OVERLAP = 1.5, 0.5


def identify(trials: Sequence[ho.HeelOffTrial], guess: Mapping[str, float] | None = None, *, degree: int = 2,
             per_sample: int = 1, eps_start: float = EPS_START, eps_end: float = EPS_END,
             eps_factor: float = EPS_FACTOR, formulation: str = "penalty", max_iter: int = 500, print_level: int = 0,
             time_limit: float | None = None, ipopt_options: Mapping | None = None,
             start: str = "equation-error", polish: bool = True, window: float | None = WINDOW,
             overlap: float = OVERLAP) -> dict:
    """Identify kp, kd from records sharing them by the complementarity formulation (module
    docstring; ``formulation`` "penalty" or "relaxation"): Radau collocation of ``degree`` on
    a fixed grid of ``per_sample``
    intervals per sample step, ε from ``eps_start`` to ``eps_end`` (× ``eps_factor`` per step),
    each solve warm-started from the last.  Returns a dict like :func:`heel_off.identify`
    (``parameters``, ``standard_errors``, ``success``, ``status``, ``modes``, ``switches``, …)
    plus ``homotopy`` (one row per ε).  Failure statuses: ``homotopy_failed`` (a step did not
    converge), ``poor_fit`` (the library's verdict, :func:`colloc.fit_verdict`, of the residuals
    divided by the record's noise), ``parameter_on_bound``, ``friction_bound`` (the stand-in for
    unlimited friction binds), ``lost_contact`` (both contacts open), ``time_limit`` (``time_limit`` s, default
    :data:`heel_off.TIME_LIMIT`, checked after every IPOPT iteration), and with ``polish`` those
    of :func:`heel_off.identify` (``phases_not_settled``, ``poor_fit``, IPOPT's).  ``start``:
    the gains start at the equation-error estimate (:func:`equation_error`, default) or at
    ``guess``; the states start at the smoothed record and the contact forces at the inverse
    dynamics of the foot (:class:`_InverseDynamics`).  ``polish`` (default): the modes found
    are kept and their switching times freed (:func:`_polish`); ``complementarity`` then holds
    the fixed-grid fit's own figures."""
    clock0 = _time.perf_counter()
    trials = list(trials)
    if not trials:
        raise co.OptionsError("heel-off: no trial")
    if degree < 1 or per_sample < 1:
        raise co.OptionsError(f"heel-off complementarity: degree and per_sample must be >= 1 (got {degree}, "
                              f"{per_sample})")
    if not 0 < eps_end <= eps_start or not 0 < eps_factor < 1:
        raise co.OptionsError(f"heel-off complementarity: need 0 < eps_end <= eps_start and 0 < eps_factor < 1 "
                              f"(got {eps_end}, {eps_start}, {eps_factor})")
    cur = {**ho.GUESS, **(guess or {})}
    limit = ho.TIME_LIMIT if time_limit is None else float(time_limit)
    sigs = _noise(trials)
    if formulation not in FORMULATIONS:
        raise co.OptionsError(f"heel-off complementarity: formulation {formulation!r}; one of "
                              f"{', '.join(FORMULATIONS)}")
    if start not in STARTS:
        raise co.OptionsError(f"heel-off complementarity: start {start!r}; one of {', '.join(STARTS)}")
    if start == "equation-error":
        cur = equation_error(trials, sigs)
    if window is not None:
        if not 0 < 2 * overlap < window:
            raise co.OptionsError(f"heel-off complementarity: need 0 < 2·overlap < window (got {overlap}, {window})")
        if any(tr.time[-1] - tr.time[0] > window + overlap for tr in trials):
            kw = {"degree": degree, "per_sample": per_sample, "eps_start": eps_start, "eps_end": eps_end,
                  "eps_factor": eps_factor, "formulation": formulation, "max_iter": max_iter,
                  "print_level": print_level, "ipopt_options": ipopt_options, "start": start}
            out = _windowed(trials, guess, window, overlap, limit, clock0, polish, kw)
            return {**out, "start_parameters": dict(cur)}
    nlp = _NLP(trials, degree, per_sample, formulation == "penalty")
    noisy = any(sg[n] > 10 * ho.NOISE_FLOOR[n] for sg in sigs for n in sg)
    problem = {"x": nlp.V, "p": nlp.P, "f": 0.5 * ca.sumsqr(nlp.r) / nlp.samples + SPLIT * nlp.split + nlp.penalty,
               "g": nlp.g}
    opts = {"ipopt.print_level": print_level, "print_time": False, "ipopt.max_iter": max_iter,
            "ipopt.tol": 1e-9, "ipopt.acceptable_tol": 1e-7, "ipopt.acceptable_iter": 5, "ipopt.sb": "yes",
            "ipopt.mumps_pivot_order": 6, "ipopt.mumps_permuting_scaling": 0, "expand": True,
            "ipopt.obj_scaling_factor": float(nlp.samples) if noisy else 1.0,
            **{f"ipopt.{k}": v for k, v in (ipopt_options or {}).items()}}
    # the time limit inside every solve: IPOPT asks the clock after each iteration
    deadline = clock0 + limit
    sizes = {"x": nlp.n, "f": 1, "g": int(nlp.g.shape[0]), "lam_x": nlp.n, "lam_g": int(nlp.g.shape[0]),
             "lam_p": int(nlp.P.shape[0])}
    opts["iteration_callback"] = co.IterationCallback(sizes, lambda _i, _arg: _time.perf_counter() >= deadline)
    solver = ca.nlpsol("heel_off_mpcc", "ipopt", problem, opts)
    warm_opts = {**opts, **WARM_OPTIONS}
    warm_solver = ca.nlpsol("heel_off_mpcc_warm", "ipopt", problem, warm_opts)
    build_s = _time.perf_counter() - clock0
    x = nlp.guess(np.array([cur["kp"], cur["kd"]]) / ho.SCALE, sigs)
    lam_x = lam_g = None
    history, ok, status = [], True, "Solve_Succeeded"
    steps = _steps(sigs, eps_start, eps_end, eps_factor)
    solve_s = 0.0
    for eps, weights in steps:
        left = limit - (_time.perf_counter() - clock0)
        if left <= 0:
            ok, status = False, "time_limit"
            break
        t0 = _time.perf_counter()
        s = solver if lam_x is None else warm_solver
        kw = {} if lam_x is None or "ipopt.warm_start_init_point" not in WARM_OPTIONS else {
            "lam_x0": lam_x, "lam_g0": lam_g}
        sol = s(x0=x, p=nlp.parameters(eps, weights), lbx=nlp.lbx, ubx=nlp.ubx, lbg=nlp.lbg, ubg=nlp.ubg, **kw)
        solve_s += _time.perf_counter() - t0
        st = s.stats()
        conv = st["return_status"] in ("Solve_Succeeded", "Solved_To_Acceptable_Level")
        x = np.array(sol["x"]).ravel()
        lam_x, lam_g = sol["lam_x"], sol["lam_g"]
        history.append({"eps": eps, "noise_floor": weights != sigs, "iterations": int(st["iter_count"]),
                        "status": st["return_status"], "objective": float(sol["f"]), "kp": float(x[0] * ho.SCALE[0]),
                        "kd": float(x[1] * ho.SCALE[1]), "time_s": _time.perf_counter() - clock0})
        final = (eps, weights) == steps[-1]
        if st["return_status"] == "User_Requested_Stop":  # the deadline, inside the solve
            ok, status = False, "time_limit"
            break
        if not conv and (final or st["return_status"] not in STEPPING_STONES):
            ok, status = False, "homotopy_failed"
            break
    params = {"kp": float(x[0] * ho.SCALE[0]), "kd": float(x[1] * ho.SCALE[1])}
    modes, switches, touch = _read_modes(nlp, x)
    standardized = _standardized(nlp, x, trials, sigs)
    verdict = ho._verdict(ho._named(trials, standardized), len(ho.NAMES))
    rms = ho._rms(standardized)
    cov, s2 = _covariance(nlp, x, touch, sigs)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0)) * ho.SCALE
    success = ok
    if ok:
        if any(m is None for seq in modes for m, _a, _b in seq):
            status = "lost_contact"
        elif np.any(np.isclose(x[:2], P_LOWER, rtol=1e-3)) or np.any(np.isclose(x[:2], P_UPPER, rtol=1e-3)):
            status = "parameter_on_bound"
        elif _friction_binds(nlp, x):
            status = "friction_bound"
        success = status in ("Solve_Succeeded", "Solved_To_Acceptable_Level")
    if not success and _time.perf_counter() - clock0 >= limit:
        status = "time_limit"
    converged, solver_status = success, status
    if success and verdict["verdict"] == "poor_fit":
        success, status = False, "poor_fit"
    out = {"problem": "heel-off", "method": "complementarity", "parameters": params,
           "standard_errors": dict(zip(ho.NAMES, se.tolist())),
           "covariance": (cov * np.outer(ho.SCALE, ho.SCALE)).tolist(), "success": bool(success),
           "status": status, "solver_status": solver_status, "converged": bool(converged),
           "fit_verdict": verdict, "iterations": int(sum(h["iterations"] for h in history)),
           "homotopy": history,
           "objective": float(history[-1]["objective"]) if history else float("nan"), "residual_rms": rms,
           "residual_scale": float(np.sqrt(s2)), "noise": sigs, "modes": [[m for m, _a, _b in seq] for seq in modes],
           "phases": modes, "switches": switches, "eps": history[-1]["eps"] if history else None,
           "degree": degree, "per_sample": per_sample, "polished": False,
           "time_s": _time.perf_counter() - clock0, "build_s": build_s, "solve_s": solve_s,
           "samples": nlp.samples, "variables": int(nlp.n), "start_parameters": dict(cur),
           "records": _records(nlp, x, trials, sigs, standardized)}
    if polish and status in POLISHED:
        out = _polish(trials, out, max_iter, print_level, limit - (_time.perf_counter() - clock0), ipopt_options)
        out["time_s"] = _time.perf_counter() - clock0
    return out




def _standardized(nlp: _NLP, x: np.ndarray, trials, sigs) -> list[dict]:
    """Per record, each fitted signal's residuals at its samples (the mesh points on them)
    divided by the signal's noise σ: the NLP's residual vector at the record's own weights, cut
    into its pieces."""
    r = np.asarray(ca.Function("r", [nlp.V, nlp.P], [nlp.r])(x, nlp.parameters(0.0, sigs))).ravel()
    out, i = [{} for _ in trials], 0
    for k, name in nlp.weights:
        n = len(trials[k].time)
        out[k][name], i = r[i:i + n], i + n
    return out


def _records(nlp: _NLP, x: np.ndarray, trials, sigs, standardized) -> list[dict]:
    """What the fit says of each record, as :func:`heel_off.identify` gives it (``records``):
    the states at the nodes (each interval's start, the mesh state after any impulse, then its
    collocation points, the last at its end before the next impulse), the initial state, the
    residuals at the samples (unweighted) and the noise σ they were weighted by."""
    out = []
    for k, rec in enumerate(nlp.recs):
        xm = ho.contract_state(x[rec.ix_mesh])
        xc = ho.contract_state(x[rec.ix_coll].reshape(-1, 8)).reshape(rec.N, rec.d, 4)
        times = np.append(np.column_stack([rec.mesh[:-1], rec.tc]).ravel(), rec.mesh[-1])
        states = np.vstack([np.concatenate([xm[:-1, None, :], xc], axis=1).reshape(-1, 4), xm[-1:]])
        out.append({"name": trials[k].name, "node_time": times, "node_states": states, "initial_state": xm[0],
                    "noise": dict(sigs[k]), "samples": np.arange(len(trials[k].time)),
                    "residuals": {n: r * sigs[k][n] for n, r in standardized[k].items()}})
    return out


def _stitched(time: np.ndarray, parts: list) -> dict:
    """One record's fit from the fits of its windows (a failed windowed fit: the windows so
    far): ``time`` the record's sample times, ``parts`` ``(first sample, lo, hi, record)`` of each
    window, whose core lo ≤ t < hi is kept."""
    rec0, end = parts[0][3], -np.inf
    times, states, samples, residuals = [], [], [], {n: [] for n in rec0["residuals"]}
    for a, lo, hi, rec in parts:
        lo, end = max(lo, end), hi  # the last window may overlap the one before by more than the others
        keep = (rec["node_time"] >= lo) & (rec["node_time"] < hi)
        times.append(rec["node_time"][keep]), states.append(rec["node_states"][keep])
        core = (time[a + rec["samples"]] >= lo) & (time[a + rec["samples"]] < hi)
        samples.append(a + rec["samples"][core])
        for n in residuals:
            residuals[n].append(rec["residuals"][n][core])
    return {"name": rec0["name"], "node_time": np.concatenate(times), "node_states": np.vstack(states),
            "initial_state": rec0["initial_state"], "noise": rec0["noise"],
            "samples": np.concatenate(samples),
            "residuals": {n: np.concatenate(v) for n, v in residuals.items()}}


def _windowed(trials, guess, window: float, overlap: float, limit: float, clock0: float, polish: bool,
              kw: dict) -> dict:
    """The modes of long records by complementarity fits of overlapping windows: each window
    fitted alone (its own gains and initial state), the switches it finds kept in its core
    (the window without OVERLAP/2 at either inner end), the cores stitched into one sequence
    of phases per record (a switch must leave the mode the last one entered, else
    ``windows_disagree``), then polished on the whole records (:func:`_polish`).  A window whose
    fit fails ends the fit with that window's status, named in ``window``."""
    rows, phases, records = [], [], []
    noise = _noise(trials)
    for k, tr in enumerate(trials):
        t = np.asarray(tr.time, dtype=float)
        n, dt = len(t), float(np.median(np.diff(t)))
        width, step = int(round(window / dt)), int(round((window - overlap) / dt))
        firsts = list(range(0, max(n - 1 - width, 0) + 1, step))
        if firsts[-1] + width < n - 1:
            firsts.append(n - 1 - width)
        found, first_mode, parts = [], None, []

        def stitched():
            return records + [{**_stitched(t, parts), "noise": noise[k]}]
        for j, a in enumerate(firsts):
            b = min(a + width, n - 1)
            sub = ho.HeelOffTrial(f"{tr.name}[{t[a]:.2f} s, {t[b]:.2f} s]", t[a:b + 1],
                                  {k: np.asarray(v)[a:b + 1] for k, v in tr.signals.items()},
                                  np.asarray(tr.platform_acc)[a:b + 1], tr.source)
            left = limit - (_time.perf_counter() - clock0)
            out = identify([sub], guess, polish=False, window=None, time_limit=max(left, 1e-3), **kw)
            rows.append({"window": sub.name, "status": out["status"], "success": out["success"],
                         "parameters": out["parameters"], "standard_errors": out["standard_errors"],
                         "iterations": out["iterations"], "switches": out["switches"][0],
                         "solver_status": out["solver_status"], "converged": out["converged"],
                         "residual_rms": out["residual_rms"], "time_s": out["time_s"]})
            lo = t[a] + overlap / 2 if j > 0 else -np.inf
            hi = t[b] - overlap / 2 if j < len(firsts) - 1 else np.inf
            parts.append((a, lo, hi, out["records"][0]))
            if out["status"] == "time_limit":
                return _window_failure(trials, rows, out, sub.name, clock0, stitched())
            # a window whose fit failed still offers its modes: the polish judges them (a wrong
            # sequence does not fit the record there)
            seq = _without_chatter(out["phases"][0])
            rows[-1]["phases"] = seq
            found += [sw for sw in _switches_of(seq) if lo <= sw["time"] < hi]
            if j == 0:
                first_mode = seq[0][0]
        seq = _stitch(first_mode, found, float(t[0]), float(t[-1]))
        if isinstance(seq, float):
            out = {**out, "status": "windows_disagree", "success": False}
            return _window_failure(trials, rows, out, f"{tr.name} at {seq:.3f} s", clock0, stitched())
        lost = [a for m, a, _b in seq if m is None]
        if lost:
            out = {**out, "status": "lost_contact", "success": False}
            return _window_failure(trials, rows, out, f"{tr.name} at {lost[0]:.3f} s", clock0, stitched())
        phases.append(seq)
        records = stitched()
    # the windows' gains pooled by their standard errors: the figures of the fixed grid
    p = np.array([[r["parameters"][k] for k in ho.NAMES] for r in rows])
    se = np.array([[r["standard_errors"][k] for k in ho.NAMES] for r in rows])
    w = np.where(np.isfinite(se) & (se > 0), 1.0 / np.where(se > 0, se, 1.0) ** 2, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled, pooled_se = (w * p).sum(0) / w.sum(0), 1.0 / np.sqrt(w.sum(0))
    switches = [_switches_of(seq) for seq in phases]
    ok = all(r["success"] for r in rows)
    status = "Solve_Succeeded" if ok else rows[-1]["status"]
    solver_status = "Solve_Succeeded" if ok else rows[-1]["solver_status"]
    comp = {"parameters": dict(zip(ho.NAMES, pooled.tolist())), "standard_errors": dict(zip(ho.NAMES, pooled_se.tolist())),
            "covariance": np.diag(pooled_se ** 2).tolist(), "success": all(r["success"] for r in rows),
            "status": status, "solver_status": solver_status, "converged": all(r["converged"] for r in rows),
            "records": records,
            "iterations": int(sum(r["iterations"] for r in rows)), "residual_rms": float(np.sqrt(np.mean(
                [r["residual_rms"] ** 2 for r in rows]))), "residual_scale": float("nan"),
            "modes": [[m for m, _a, _b in seq] for seq in phases], "phases": phases, "switches": switches,
            "homotopy": [], "windows": rows, "problem": "heel-off", "method": "complementarity",
            "objective": float("nan"), "noise": noise, "eps": kw["eps_end"], "degree": kw["degree"],
            "per_sample": kw["per_sample"], "polished": False, "build_s": float("nan"),
            "solve_s": float(sum(r["time_s"] for r in rows)), "samples": int(sum(len(tr.time) for tr in trials)),
            "variables": 0, "time_s": _time.perf_counter() - clock0}
    if not polish:
        return comp
    out = _polish(trials, comp, kw["max_iter"], kw["print_level"], limit - (_time.perf_counter() - clock0),
                  kw["ipopt_options"])
    out["time_s"] = _time.perf_counter() - clock0
    return out


#: Phases shorter than this (s) are chatter of the fixed grid, not modes: the foot touching and
#: lifting at successive mesh and collocation points after a landing (measured on the clean 8 s
#: record, 3.65–3.70 s after the toe landing at 3.650 s).  The shortest pivot phase of the
#: shipped records lasts 84 ms.
MIN_PHASE = 0.03


def _without_chatter(seq: list, min_len: float = MIN_PHASE) -> list:
    """The phases with every run of consecutive phases shorter than ``min_len`` (the fixed
    grid's chatter) removed: the switch between the phases on either side of the run is put at
    the run's start (a landing at the first touch), a run between phases of one mode joins them,
    a run at either end of the record is taken into its neighbour.  A sequence without a phase
    of ``min_len`` is returned as it is (the stitch and the polish judge it).

    Measured on heel_off_clean.csv [3.0 s, 4.5 s] (toe landing at 3.650 s after a heel pivot):
    the fit chattered 3.650–3.690 s (both open, toe, flat, toe, both open); merging the
    shortest phase first into the one before it left a 37 ms toe phase (heel → toe → flat), a
    sequence the polish found infeasible; the run read as one switch gives heel → flat at
    3.650 s."""
    long = [p for p in seq if p[2] - p[1] >= min_len]
    if not long:
        return [tuple(p) for p in seq]
    out = []
    for m, a, b in long:
        if not out:
            out.append([m, seq[0][1], b])
        elif out[-1][0] == m:
            out[-1][2] = b
        else:
            out.append([m, out[-1][2], b])
    out[-1][2] = seq[-1][2]
    return [tuple(p) for p in out]


def _switches_of(seq: list) -> list:
    return [{"time": float(b), "from": m0, "to": m1, "kind": "lift-off" if m0 == "flat" else "landing"}
            for (m0, _a, b), (m1, _c, _d) in zip(seq[:-1], seq[1:])]


def _stitch(first_mode: str, switches: list, t_start: float, t_end: float):
    """The phases [(mode, start, end), ...] from the first mode and the switches (time order;
    ``from``, ``to``, ``time``), or the time of the first switch that does not leave the mode
    the phases are in (the windows disagree there)."""
    seq, mode, t0 = [], first_mode, t_start
    for sw in sorted(switches, key=lambda s: s["time"]):
        if sw["from"] != mode:
            return float(sw["time"])
        seq.append((mode, t0, float(sw["time"])))
        mode, t0 = sw["to"], float(sw["time"])
    return seq + [(mode, t0, t_end)]


def _window_failure(trials, rows, out, where: str, clock0: float, records: list) -> dict:
    """A windowed fit ended by one window: its status and figures, the windows so far (their
    fits stitched in ``records``)."""
    fail = {**out, "success": False, "converged": False, "solver_status": out["status"], "windows": rows,
            "window": where, "polished": False, "modes": [[]] * len(trials), "phases": [[]] * len(trials),
            "switches": [[]] * len(trials), "records": records, "time_s": _time.perf_counter() - clock0}
    fail.pop("fit_verdict", None)  # the window's, not the records'
    return fail


#: The complementarity fits that are polished (``identify(polish=True)``): converged, every point
#: in touch with the ground, gains off their bounds (a poor fit may be the fixed grid's error).
POLISHED = ("Solve_Succeeded", "Solved_To_Acceptable_Level", "poor_fit", "friction_bound")


def _polish(trials, comp: dict, max_iter: int, print_level: int, left: float, ipopt_options) -> dict:
    """The fixed grid puts a landing at a mesh point and a lift-off near one: on a noisy 1.3 s
    record this biased kp by about +1.3 % (+1.4 to +2.9 SE over three seeds), more than its
    standard errors allow for.  The polish keeps the modes the complementarity fit found
    (their sequence and switching times, never :func:`heel_off.detect_modes`) and frees the
    switching times: the multi-phase collocation of :func:`heel_off.identify` with that
    sequence, started from the fit's gains.  Its parameters, standard errors (switching times
    among the unknowns) and status are the result; the complementarity fit's own are kept in
    ``complementarity``."""
    keep = ("parameters", "standard_errors", "covariance", "success", "status", "iterations", "residual_rms",
            "residual_scale", "modes", "switches", "phases", "homotopy", "time_s")
    stage = {k: comp[k] for k in keep}
    if left <= 0:
        return {**comp, "success": False, "status": "time_limit", "solver_status": "time_limit",
                "converged": False, "complementarity": stage}
    pol = ho.identify(trials, comp["parameters"], sequences=comp["phases"], max_iter=max_iter,
                      print_level=print_level, time_limit=left, ipopt_options=ipopt_options)
    out = {**comp, **{k: pol[k] for k in ("parameters", "standard_errors", "covariance", "success", "status",
                                          "solver_status", "converged", "fit_verdict", "records",
                                          "residual_rms", "residual_scale", "switches")}}
    out.update(polished=True, complementarity=stage, iterations=comp["iterations"] + pol["iterations"],
               rounds=pol["rounds"], solve_s=comp["solve_s"] + pol["solve_s"])
    return out


def _points(nlp: _NLP, x: np.ndarray, rec: _Record):
    """Per collocation point (rows in time order) of one record: times, forces (4), contact
    rows (gap, slide, v_n, v_t per contact); per mesh point the impulses and contact rows."""
    ceq = nlp.fn["contact_eq"]
    xc = x[rec.ix_coll].reshape(-1, 8)
    xm = x[rec.ix_mesh]
    rows_c = np.asarray(ceq.map(len(xc))(xc.T)).T
    rows_m = np.asarray(ceq.map(len(xm))(xm.T)).T
    return rec.tc.ravel(), x[rec.ix_force].reshape(-1, 4), rows_c, x[rec.ix_imp], rows_m


def _read_modes(nlp: _NLP, x: np.ndarray):
    """The phases ``[(mode, start, end), ...]`` per record read from the fit (a contact is in
    touch at a collocation point where its gap is below GAP_TOL or its force above MODE_FORCE;
    mode None: both open), the
    switching times, and the touch pattern of the covariance (points × 2, mesh points × 2;
    there a contact counts only where its force is clearly positive: a force and a gap both
    about zero are weakly active, not an equation)."""
    phases, switches, touch = [], [], []
    for rec in nlp.recs:
        tc, L, rc, Pi, _rm = _points(nlp, x, rec)
        on = (rc[:, [0, 4]] < GAP_TOL) | (L[:, [0, 2]] * FORCE > MODE_FORCE)
        hit = Pi[:, [0, 2]] * IMPULSE > IMPULSE_TOL
        touch.append((L[:, [0, 2]] * FORCE > FORCE_TOL, hit))
        mode = [{(True, True): "flat", (False, True): "toe", (True, False): "heel"}.get(tuple(o)) for o in on]
        cuts = [i for i in range(1, len(mode)) if mode[i] != mode[i - 1]]
        seq, sw, t_start = [], [], float(rec.mesh[0])
        for i in cuts:
            before, after = mode[i - 1], mode[i]
            if before == "flat" and after in ("toe", "heel"):  # lift-off: the force of the lifting contact reaches 0
                c = 0 if after == "toe" else 2
                first = int(np.searchsorted(tc, t_start, side="right"))
                t_sw = _force_zero(tc[first:i], L[first:i, c], float(tc[i]))
                kind = "lift-off"
            else:  # a landing: at the first point with the gap closed, or at the mesh point
                # of an impulse before it (after the last point with the gap open)
                k = [j for j in np.flatnonzero((rec.mesh > tc[i - 1] + 1e-12) & (rec.mesh < tc[i] - 1e-12))
                     if hit[j].any()]
                t_sw = float(rec.mesh[k[0]]) if k else float(tc[i])
                kind = "landing" if after == "flat" else "switch"
            seq.append((before, t_start, t_sw))
            sw.append({"time": t_sw, "from": before, "to": after, "kind": kind})
            t_start = t_sw
        seq.append((mode[-1], t_start, float(rec.mesh[-1])))
        phases.append(seq)
        switches.append(sw)
    return phases, switches, touch


#: A lift-off is where the lifting contact's force, extrapolated linearly from its last two
#: values above this (N, clearly positive: not the relaxation's tail), reaches zero.
LIFT_FIT_N = 20.0


def _force_zero(t: np.ndarray, force: np.ndarray, t_next: float) -> float:
    """Where ``force`` (units of FORCE, at times ``t``, decreasing to a lift-off before
    ``t_next``) reaches zero by the line through its last two points above LIFT_FIT_N."""
    big = np.flatnonzero(force * FORCE > LIFT_FIT_N)
    if len(big) < 2 or force[big[-2]] <= force[big[-1]]:
        return float(t[-1]) if len(t) else t_next
    j0, j1 = big[-2], big[-1]
    t_zero = t[j1] + force[j1] * (t[j1] - t[j0]) / (force[j0] - force[j1])
    return float(np.clip(t_zero, t[j1], t_next))


def _friction_binds(nlp: _NLP, x: np.ndarray) -> bool:
    """Whether |μ| ≥ 0.99·κ·λ anywhere a contact holds the foot alone (the stand-in for
    unlimited friction is then a real limit of the fit)."""
    for rec in nlp.recs:
        L = x[rec.ix_force].reshape(-1, 4)
        on = L[:, [0, 2]] * FORCE > FORCE_TOL
        for c, (n, t) in enumerate(((0, 1), (2, 3))):
            # binding matters where this contact holds alone (with both in touch only the sum acts)
            alone = on[:, c] & ~on[:, 1 - c]
            if np.any(np.abs(L[alone, t]) >= 0.99 * KAPPA * L[alone, n]):
                return True
    return False


def _covariance(nlp: _NLP, x: np.ndarray, touch, sigs):
    """Gauss–Newton covariance of p = (kp/1000, kd/100) (module docstring): z = (p, each
    record's initial state); w = the other free unknowns, solved from the collocation,
    continuity and jump equations and the contact equations of the contacts in touch
    (implicit function theorem); the landing conditions (gap 0 at an impulse) and the initial
    state's consistency with the first contacts are constraints on z (null-space projection).
    Returns (cov of p, s²)."""
    V = nlp.V
    ceq = nlp.fn["contact_eq"]
    fixed = set(np.flatnonzero(nlp.lbx == nlp.ubx).tolist())
    eq_rows, con_rows = [], []  # (expression) lists
    z = [0, 1]
    for rec, (on, hit) in zip(nlp.recs, touch):
        z += rec.ix_mesh[0].tolist()
        Xc = ca.reshape(V[rec.ix_coll.ravel().tolist()], 8, -1)
        Xm = ca.reshape(V[rec.ix_mesh.ravel().tolist()], 8, -1)
        Fc, Fm = ceq.map(Xc.shape[1])(Xc), ceq.map(Xm.shape[1])(Xm)
        Lix, Pix = rec.ix_force.reshape(-1, 4), rec.ix_imp
        for i in range(len(on)):
            for c in (0, 1):
                if not on[i, c]:
                    fixed.update(Lix[i, [2 * c, 2 * c + 1]].tolist())
                elif c == 1 and on[i, 0]:  # flat: one tangential force (the other's place is the same line)
                    fixed.add(int(Lix[i, 3]))
                    eq_rows.append(Fc[4, i])
                else:
                    eq_rows += [Fc[4 * c, i], Fc[4 * c + 1, i]]
        for k in range(1, rec.N + 1):
            for c in (0, 1):
                if not hit[k, c]:
                    fixed.update(Pix[k, [2 * c, 2 * c + 1]].tolist())
                else:
                    con_rows.append(Fm[4 * c, k])  # the landing: the gap is 0 at the impulse
                    if c == 1 and hit[k, 0]:
                        fixed.add(int(Pix[k, 3]))
                        eq_rows.append(Fm[4 * c + 2, k])
                    else:
                        eq_rows += [Fm[4 * c + 2, k], Fm[4 * c + 3, k]]
        for c in (0, 1):  # the initial state: consistent with the contacts in touch at the first point
            if on[0, c]:
                rows = [0, 2] if (c == 1 and on[0, 0]) else [0, 1, 2, 3]
                con_rows += [Fm[4 * c + r, 0] for r in rows]
    E = ca.vertcat(nlp.g[:nlp.n_eq], *eq_rows)
    C = ca.vertcat(*con_rows) if con_rows else ca.MX(0, 1)
    f = ca.Function("cov", [V, nlp.P], [ca.jacobian(E, V), ca.jacobian(C, V), ca.jacobian(nlp.r, V), nlp.r])
    GE, GC, R, rv = f(x, nlp.parameters(0.0, sigs))
    z = np.array(z)
    w = np.setdiff1d(np.arange(nlp.n), np.concatenate([z, np.array(sorted(fixed), dtype=int)]))
    if GE.shape[0] != len(w):
        raise co.SolveFailed(f"heel-off complementarity: covariance: {GE.shape[0]} equations for {len(w)} unknowns")
    cov = co.constrained_covariance(R, np.asarray(rv).ravel(), GE, z, w, jac_con=GC)
    return cov.matrix[:2, :2], cov.residual_variance


#: Messages of the failure statuses (the Result's ``message``).
_FAILURES = {
    "homotopy_failed": "a step of the relaxation homotopy did not converge (IPOPT: {ipopt})",
    "parameter_on_bound": "kp or kd ended on its bound",
    "friction_bound": "the stand-in for unlimited friction (|tangential force| <= {kappa}·normal force) binds",
    "lost_contact": "both contacts open at some point of the fit (an error of the contract, not a mode)",
    "time_limit": "the time limit ran out",
    "windows_disagree": "the modes found in overlapping windows disagree ({window})",
    "phases_not_settled": "the polish (the modes found, switching times free) did not settle its samples"}


def identify_result(trials: Sequence[ho.HeelOffTrial], *, method: str = METHOD,
                    guess: Mapping[str, float] | None = None, bounds: Mapping[str, tuple] | None = None,
                    max_iter: int = 500, print_level: int = 0, **options) -> co.Result:
    """:func:`identify` as a :class:`colloc.Result` (``colloc identify heel-off --method
    complementarity``), judged as the multi-phase method's (:func:`heel_off.finish`); ``info``
    holds the modes and switching times found, the homotopy and the noise assumed per signal.
    ``options`` are keyword arguments of :func:`identify`."""
    if method != METHOD:
        raise co.OptionsError(f"--method {method}: heel-off runs {METHOD} itself")
    if bounds:
        raise co.OptionsError("--bounds does not apply to --method complementarity of problem 'heel-off'")
    unknown = [k for k in (guess or {}) if k not in ho.NAMES]
    if unknown:
        raise co.OptionsError(f"--guess: unknown parameter(s) {', '.join(unknown)}; parameters: {', '.join(ho.NAMES)}")
    out = identify(trials, guess, max_iter=max_iter, print_level=print_level, **options)
    last = out["homotopy"][-1]["status"] if out["homotopy"] else ""
    where = out.get("window")
    failed = not out["success"] and out["status"] != "poor_fit"
    message = (_FAILURES.get(out["status"], "IPOPT: {ipopt}").format(ipopt=last, kappa=KAPPA, window=where)
               + (f" (window {where})" if where and out["status"] != "windows_disagree" else "")
               if failed else f"IPOPT: {out['solver_status']}")
    info = {k: out[k] for k in ("modes", "phases", "switches", "homotopy", "noise", "residual_rms", "residual_scale",
                                "eps", "degree", "per_sample", "samples", "variables", "polished")}
    info.update({k: out[k] for k in ("complementarity", "windows", "window") if k in out})
    info["method_note"] = (f"penalised complementarity on a fixed Radau grid of degree {out['degree']}, "
                           f"{out['per_sample']} interval(s) per sample, impulses at mesh points"
                           + (f", in windows of {WINDOW} s overlapping by {OVERLAP} s, each started from its "
                              "own equation-error estimate" if "windows" in out else "")
                           + "; modes and switching times read from the fit"
                           + ("; polished: the modes found kept, their switching times freed (multi-phase "
                              "collocation with that sequence)" if out.get("polished") else ""))
    bounds = {k: (float(lo), float(hi))
              for k, lo, hi in zip(ho.NAMES, P_LOWER * ho.SCALE, P_UPPER * ho.SCALE)}
    return ho.finish(out, trials, method="complementarity", message=message, info=info, bounds=bounds,
                     initial_parameters=out["start_parameters"], descriptions=dict(ho.DESCRIPTIONS))
