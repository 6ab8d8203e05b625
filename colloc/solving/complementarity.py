"""``co.solve(problem, co.Complementarity())``: a :class:`~colloc.ContactProblem` fitted with its
contact modes out of the fit (the transcription :mod:`colloc.transcription.complementarity`).

ε goes from ``eps_start`` to ``eps_end`` by a homotopy, each solve warm-started from the last;
the fit weights may start soft (``soft_noise``) and tighten tenfold per step to the records'
noise.  Signorini's product λ·φ is penalised, ρ·Σλ·φ with ρ = ``penalty``/ε (measured on a
1.3 s heel-off record: the Scholtes relaxation λ·φ ≤ ε hit IPOPT's iteration limit at every ε
on the noisy record, the penalty converged), or relaxed (``formulation="relaxation"``).  The
modes and switching times are read from the fit (a contact is in touch where its gap is below
``gap_tol`` or its force above ``mode_force``·force scale; a lift-off where the force of the
lifting contact, extrapolated, reaches zero; a landing at the mesh point of its impulse).
Long records are fitted in overlapping windows (``window``, ``overlap``) whose modes are
stitched.  A fixed grid cannot put a landing between mesh points (heel-off: gains +1 to +2 %
on noisy 1.3 s records, kp +1.4 to +2.9 SE), so the modes found are polished: the problem's
``hybrid(phases, parameters)`` fitted by the library's hybrid path with that sequence and the
switching times free, its result the answer (``info["complementarity"]`` the fixed grid's).

Standard errors of the fixed grid's fit: Gauss–Newton (:func:`colloc.constrained_covariance`)
with the collocation, continuity and jump equations and the contact rows of the contacts in
touch (a force clearly positive) and the post-impact rows of the impulses acting eliminating
the states, forces and impulses; forces of contacts out of touch held at zero; the first
point's contact rows constraints.  A landing's gap is not held at zero: the grid puts it at a
mesh point, and held there it would remove one direction of the unknowns per landing (on a
4 s record of a mass landing twice, the two landings and the initial contact fixed all four of
its unknowns, k, c and the initial state).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time as _time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import casadi as ca
import numpy as np

from ..base.callbacks import IterationCallback
from ..base.errors import OptionsError, SolveFailed
from ..base.versions import versions
from ..definition.contact import ContactSystem
from ..definition.contact_problem import ContactProblem
from ..definition.trial import Trial
from ..inference.covariance import constrained_covariance
from ..results.report import finalize
from ..results.result import Estimate, Result
from ..transcription.complementarity import ContactFunctions, ContactNLP, ContactRecord
from ..transcription.methods import AbstractMethod, Radau
from .ipopt import Ipopt

__all__ = ["Complementarity", "solve_complementarity"]

#: IPOPT outcomes of an intermediate homotopy step that still start the next one.
STEPPING_STONES = ("Maximum_Iterations_Exceeded",)
CONVERGED = ("Solve_Succeeded", "Solved_To_Acceptable_Level")


@dataclass(frozen=True)
class Complementarity(AbstractMethod):
    """Contact as Signorini complementarity on a fixed Radau grid; the modes out of the fit.

    Parameters
    ----------
    degree, per_sample : int
        Radau degree (2: degree 1 biased heel-off's gains by −2 %/−4 %, 2 by < 0.01 %) and
        intervals per sample step.
    eps_start, eps_end, eps_factor : float
        The relaxation homotopy (force × gap in units of the force scale × m).
    formulation : {"penalty", "relaxation"}
    penalty : float
        ρ·ε of the penalty.
    kappa : float
        The tangential force μ bounded by κ·λ in magnitude: a stand-in for unlimited friction
        (``friction_bound`` where it binds).
    split : float
        Weight of the mean square of the tangential forces (the split between contacts in
        touch at once, which the dynamics leave free).
    soft_noise : mapping of str to float, optional
        Start the homotopy with each signal weighted as if at least this noisy.
    noise_floor : mapping of str to float, optional
        The least σ of each signal: a record at most 10× above it is clean (the objective is
        not scaled up by the samples then).
    gap_tol, mode_force, force_tol, lift_force, impulse_tol : float
        Reading the modes: a contact touches where its gap is below ``gap_tol`` or its force
        above ``mode_force`` force scales; holds (covariance) above ``force_tol``; a lift-off
        is where the line through the last two forces above ``lift_force`` reaches zero; an
        impulse acts above ``impulse_tol`` impulse scales.
    window, overlap : float, optional
        Records longer than ``window + overlap`` (s) are fitted in windows of ``window`` s
        overlapping by ``overlap`` s (None: whole records).
    min_phase : float
        Phases shorter than this (s) are the grid's chatter (a point touching and lifting at
        successive points after a landing), merged into their neighbours.
    polish : bool
        Fit the problem's ``hybrid`` with the modes found (default, when it has one).
    polish_method : Radau
        The hybrid path's method.
    time_limit : float, optional
        Seconds for the whole fit (IPOPT asks the clock after every iteration).
    warm_mu : float
        IPOPT's ``mu_init`` of the warm-started steps.
    """

    degree: int = 2
    per_sample: int = 1
    eps_start: float = 1e-4
    eps_end: float = 1e-6
    eps_factor: float = 0.1
    formulation: str = "penalty"
    penalty: float = 1.0
    kappa: float = 20.0
    split: float = 1e-6
    soft_noise: Mapping[str, float] | None = None
    noise_floor: Mapping[str, float] | None = None
    gap_tol: float = 1e-4
    mode_force: float = 0.25
    force_tol: float = 0.01
    lift_force: float = 0.2
    impulse_tol: float = 1e-3
    window: float | None = None
    overlap: float = 0.5
    min_phase: float = 0.03
    polish: bool = True
    polish_method: Radau = field(default_factory=lambda: Radau(degree=3))
    time_limit: float | None = None
    warm_mu: float = 1e-4
    name: str = "complementarity"

    def __post_init__(self) -> None:
        if self.degree < 1 or self.per_sample < 1:
            raise OptionsError(f"Complementarity: degree and per_sample must be >= 1 (got {self.degree}, "
                               f"{self.per_sample})")
        if not 0 < self.eps_end <= self.eps_start or not 0 < self.eps_factor < 1:
            raise OptionsError(f"Complementarity: need 0 < eps_end <= eps_start and 0 < eps_factor < 1 (got eps_end "
                               f"{self.eps_end}, eps_start {self.eps_start}, eps_factor {self.eps_factor})")
        if self.formulation not in ("penalty", "relaxation"):
            raise OptionsError(f"Complementarity: formulation {self.formulation!r}; one of penalty, relaxation")
        if self.window is not None and not 0 < 2 * self.overlap < self.window:
            raise OptionsError(f"Complementarity: need 0 < 2·overlap < window (got {self.overlap}, {self.window})")
        if self.time_limit is not None and not self.time_limit > 0:
            raise OptionsError(f"Complementarity(time_limit={self.time_limit!r}): must be > 0 s")


def _steps(method: Complementarity, sigmas: list[dict]) -> list[tuple[float, list[dict]]]:
    """The homotopy: (ε, σ per record and signal) per solve."""
    soft_floor = dict(method.soft_noise or {})
    out, eps = [], method.eps_start
    soft = [{s: max(v, soft_floor.get(s, 0.0)) for s, v in sg.items()} for sg in sigmas]
    while True:
        out.append((eps, soft))
        if eps <= method.eps_end * (1 + 1e-9):
            break
        eps = max(eps * method.eps_factor, method.eps_end)
    scale = 0.1
    while soft != sigmas:
        soft = [{s: v if v >= soft_floor[s] * scale * (1 - 1e-9) else soft_floor[s] * scale for s, v in sg.items()}
                for sg in sigmas]
        soft = sigmas if all(a[s] == b[s] for a, b in zip(soft, sigmas) for s in a) else soft
        out.append((method.eps_end, soft))
        scale *= 0.1
    return out


_FUNCTIONS: dict = {}


def _functions(problem: ContactProblem, method: Complementarity) -> ContactFunctions:
    key = (id(problem.system), method.degree, method.kappa, tuple(problem.anchors.items()),
           tuple(problem.parameters), tuple(problem.inputs), tuple(problem.outputs))
    if key not in _FUNCTIONS:
        _FUNCTIONS.clear()
        _FUNCTIONS[key] = ContactFunctions(problem, method.degree, method.kappa)
    return _FUNCTIONS[key]


def _fit(problem: ContactProblem, trials: list[Trial], method: Complementarity, p0: Mapping[str, float],
         solver: Ipopt, deadline: float) -> dict:
    """One complementarity fit of ``trials``: the homotopy, the modes, the covariance."""
    t_build = _time.perf_counter()
    fn = _functions(problem, method)
    nlp = ContactNLP(problem, trials, fn, method.degree, method.per_sample, method.formulation == "penalty",
                     method.split)
    sigmas = [problem.noise_of(t) for t in trials]
    floor = dict(method.noise_floor or {})
    noisy = not floor or any(sg[s] > 10 * floor.get(s, 0.0) for sg in sigmas for s in sg)
    opts = {"ipopt.print_level": solver.print_level, "print_time": False, "ipopt.max_iter": solver.max_iter,
            "ipopt.tol": 1e-9, "ipopt.acceptable_tol": 1e-7, "ipopt.acceptable_iter": 5, "ipopt.sb": "yes",
            "ipopt.mumps_pivot_order": 6, "ipopt.mumps_permuting_scaling": 0, "expand": True,
            "ipopt.obj_scaling_factor": float(nlp.samples) if noisy else 1.0,
            **{f"ipopt.{k}": v for k, v in (solver.extra or {}).items() if k != "max_wall_time"}}
    sizes = {"x": nlp.n, "f": 1, "g": int(nlp.g.shape[0]), "lam_x": nlp.n, "lam_g": int(nlp.g.shape[0]),
             "lam_p": int(nlp.P.shape[0])}
    def stop(_i: int, _arg: list) -> Any:  # IPOPT stops when this is true
        return _time.perf_counter() >= deadline
    opts["iteration_callback"] = IterationCallback(sizes, stop)
    nlp_def = {"x": nlp.V, "p": nlp.P, "f": nlp.objective(), "g": nlp.g}
    cold = ca.nlpsol("complementarity", "ipopt", nlp_def, opts)
    warm = ca.nlpsol("complementarity_warm", "ipopt", nlp_def, {**opts, "ipopt.mu_init": method.warm_mu})
    build_s = _time.perf_counter() - t_build
    scale = np.array([problem.scale[k] for k in problem.parameters])
    start = np.array([p0[k] for k in problem.parameters]) / scale
    x = nlp.start(start, method.gap_tol)
    history, ok, status, solve_s = [], True, "Solve_Succeeded", 0.0
    steps = _steps(method, sigmas)
    for i, (eps, weights) in enumerate(steps):
        if _time.perf_counter() >= deadline:
            ok, status = False, "time_limit"
            break
        t0 = _time.perf_counter()
        s = cold if i == 0 else warm
        sol = s(x0=x, p=nlp.parameters(eps, weights, method.penalty), lbx=nlp.lbx, ubx=nlp.ubx, lbg=nlp.lbg,
                ubg=nlp.ubg)
        solve_s += _time.perf_counter() - t0
        st = s.stats()
        x = np.array(sol["x"]).ravel()
        history.append({"eps": eps, "soft": weights != sigmas, "iterations": int(st["iter_count"]),
                        "status": st["return_status"], "objective": float(sol["f"]),
                        **{k: float(x[j] * scale[j]) for j, k in enumerate(problem.parameters)}})
        if st["return_status"] == "User_Requested_Stop":
            ok, status = False, "time_limit"
            break
        if st["return_status"] not in CONVERGED and (i == len(steps) - 1 or st["return_status"] not in STEPPING_STONES):
            ok, status = False, "homotopy_failed"
            break
    params = {k: float(x[j] * scale[j]) for j, k in enumerate(problem.parameters)}
    phases, touch = _read_modes(problem, method, nlp, x)
    phases = [_without_chatter(s, method.min_phase) for s in phases]
    t_cov = _time.perf_counter()
    cov, s2 = _covariance(nlp, x, touch, sigmas, method.penalty)
    cov = cov * np.outer(scale, scale)
    if ok:
        npar = len(scale)
        lo, hi = nlp.lbx[:npar], nlp.ubx[:npar]
        if any(m is None for seq in phases for m, _a, _b in seq):
            status = "mode_not_declared"
        elif np.any(np.isclose(x[:npar], lo, rtol=1e-3)) or np.any(np.isclose(x[:npar], hi, rtol=1e-3)):
            status = "parameter_on_bound"
        elif _friction_binds(nlp, x, method):
            status = "friction_bound"
    return {"nlp": nlp, "x": x, "parameters": params, "covariance": cov, "residual_variance": s2,
            "success": ok and status in CONVERGED, "status": status, "phases": phases, "homotopy": history,
            "sigmas": sigmas, "iterations": int(sum(h["iterations"] for h in history)),
            "objective": float(history[-1]["objective"]) if history else math.nan,
            "timings": {"build_s": build_s, "solve_s": solve_s, "covariance_s": _time.perf_counter() - t_cov}}


def _points(nlp: ContactNLP, x: np.ndarray, rec: ContactRecord):
    """Per collocation point of a record (time order): times, forces (2 per contact), contact
    rows and their Jacobians; per mesh point the impulses, rows and Jacobians."""
    rows = nlp.fn.contact_rows
    xc = x[rec.ix_coll].reshape(-1, nlp.fn.nx)
    xm = x[rec.ix_mesh]
    Rc, Jc = (np.asarray(a) for a in rows.map(len(xc))(xc.T))
    Rm, Jm = (np.asarray(a) for a in rows.map(len(xm))(xm.T))
    L = x[rec.ix_force].reshape(-1, 2 * nlp.fn.nc)
    return rec.tc.ravel(), L, Rc.T, Jc, x[rec.ix_imp], Rm.T, Jm


def _read_modes(problem: ContactProblem, method: Complementarity, nlp: ContactNLP, x: np.ndarray):
    """The phases ``[(mode, start, end), ...]`` per record read from the fit, and the touch
    pattern of the covariance (forces clearly positive; impulses acting)."""
    F, Imp, nc = problem.force_scale, problem.impulse_scale, nlp.fn.nc
    names = [c.name for c in problem.system.contacts]
    phases, touch = [], []
    for rec in nlp.recs:
        tc, L, rc, _Jc, Pi, _rm, _Jm = _points(nlp, x, rec)
        gaps, normal = rc[:, 0::4], L[:, 0::2] * F
        on = (gaps < method.gap_tol) | (normal > method.mode_force * F)
        hit = Pi[:, 0::2] * Imp > method.impulse_tol * Imp
        touch.append((normal > method.force_tol * F, hit))
        sets = [tuple(o) for o in on]
        cuts = [i for i in range(1, len(sets)) if sets[i] != sets[i - 1]]
        seq, t_start = [], float(rec.mesh[0])

        def mode(s):
            return problem.mode_of([names[c] for c in range(nc) if s[c]])
        for i in cuts:
            before, after = sets[i - 1], sets[i]
            lifting = [c for c in range(nc) if before[c] and not after[c]]
            if lifting and not any(after[c] and not before[c] for c in range(nc)):
                first = int(np.searchsorted(tc, t_start, side="right"))
                t_sw = _force_zero(tc[first:i], normal[first:i, lifting[0]], float(tc[i]), method.lift_force * F)
            else:
                k = [j for j in np.flatnonzero((rec.mesh > tc[i - 1] + 1e-12) & (rec.mesh < tc[i] - 1e-12))
                     if hit[j].any()]
                t_sw = float(rec.mesh[k[0]]) if k else float(tc[i])
            seq.append((mode(before), t_start, t_sw))
            t_start = t_sw
        seq.append((mode(sets[-1]), t_start, float(rec.mesh[-1])))
        phases.append(seq)
    return phases, touch


def _force_zero(t: np.ndarray, force: np.ndarray, t_next: float, big_force: float) -> float:
    """Where ``force`` (falling to a lift-off before ``t_next``) reaches zero by the line through
    its last two values above ``big_force`` (not the relaxation's tail)."""
    big = np.flatnonzero(force > big_force)
    if len(big) < 2 or force[big[-2]] <= force[big[-1]]:
        return float(t[-1]) if len(t) else t_next
    j0, j1 = big[-2], big[-1]
    t_zero = t[j1] + force[j1] * (t[j1] - t[j0]) / (force[j0] - force[j1])
    return float(np.clip(t_zero, t[j1], t_next))


def _friction_binds(nlp: ContactNLP, x: np.ndarray, method: Complementarity) -> bool:
    """Whether |μ| ≥ 0.99·κ·λ where a contact holds alone."""
    F = nlp.problem.force_scale
    for rec in nlp.recs:
        L = x[rec.ix_force].reshape(-1, 2 * nlp.fn.nc)
        on = L[:, 0::2] * F > method.force_tol * F
        for c in range(nlp.fn.nc):
            alone = on[:, c] & (on.sum(axis=1) == 1)
            if np.any(np.abs(L[alone, 2 * c + 1]) >= 0.99 * method.kappa * L[alone, 2 * c]):
                return True
    return False


def _independent(J: np.ndarray, candidates: list[int], velocity: Sequence[bool], n: int,
                 tol: float = 1e-6) -> list[int]:
    """The contact rows among ``candidates`` (in order) independent of those kept before them:
    position rows by their Jacobian in q, velocity rows (``velocity[r]``) in q̇ (a flat foot's
    two tangential rows are one)."""
    kept: list[int] = []
    for kind in (False, True):
        cols = slice(n, 2 * n) if kind else slice(0, n)
        group: list[int] = []
        for r in (c for c in candidates if velocity[c] == kind):
            block = J[group + [r], cols]
            if np.linalg.matrix_rank(block, tol=tol * max(1.0, float(np.abs(block).max()))) == len(group) + 1:
                group.append(r)
        kept += group
    return sorted(kept)


def _covariance(nlp: ContactNLP, x: np.ndarray, touch, sigmas, penalty: float):
    """Gauss–Newton covariance of the scaled parameters (module docstring): z = (parameters,
    each record's initial state), w = the other free unknowns.  Returns (cov, s²)."""
    V, fn = nlp.V, nlp.fn
    nc, nx = fn.nc, fn.nx
    fixed = set(np.flatnonzero(nlp.lbx == nlp.ubx).tolist())
    eq_rows, con_rows = [], []
    anchored = [c.name in nlp.problem.anchors for c in nlp.problem.system.contacts]
    velocity = [k >= 2 or (k == 1 and not anchored[c]) for c in range(nc) for k in range(4)]
    z = list(range(fn.np))
    for rec, (on, hit) in zip(nlp.recs, touch):
        z += rec.ix_mesh[0].tolist()
        _tc, _L, _rc, Jc, _Pi, _rm, Jm = _points(nlp, x, rec)
        Xc = ca.reshape(V[rec.ix_coll.ravel().tolist()], nx, -1)
        Xm = ca.reshape(V[rec.ix_mesh.ravel().tolist()], nx, -1)
        Fc, Fm = fn.contact_rows.map(Xc.shape[1])(Xc)[0], fn.contact_rows.map(Xm.shape[1])(Xm)[0]
        Lix, Pix = rec.ix_force.reshape(-1, 2 * nc), rec.ix_imp
        for i in range(len(on)):
            J = Jc[:, i * nx:(i + 1) * nx]
            cand = [4 * c + k for c in range(nc) if on[i, c] for k in ((0,) if fn.slip[c] else (0, 1))]
            kept = _independent(J, cand, velocity, fn.n)
            for c in range(nc):
                for k in (0, 1):
                    if 4 * c + k not in kept:
                        fixed.add(int(Lix[i, 2 * c + k]))
            eq_rows += [Fc[r, i] for r in kept]
        for k in range(1, rec.N + 1):
            J = Jm[:, k * nx:(k + 1) * nx]
            cand = [4 * c + 2 + j for c in range(nc) if hit[k, c] for j in ((0,) if fn.slip[c] else (0, 1))]
            kept = _independent(J, cand, velocity, fn.n)
            for c in range(nc):
                for j in (0, 1):
                    if 4 * c + 2 + j not in kept:
                        fixed.add(int(Pix[k, 2 * c + j]))
            eq_rows += [Fm[r, k] for r in kept]
        J0 = Jm[:, :nx]
        cand = [4 * c + k for c in range(nc) if on[0, c] for k in ((0, 2) if fn.slip[c] else (0, 1, 2, 3))]
        con_rows += [Fm[r, 0] for r in _independent(J0, cand, velocity, fn.n)]
    E = ca.vertcat(nlp.g[:nlp.n_eq], *eq_rows)
    C = ca.vertcat(*con_rows) if con_rows else ca.MX(0, 1)
    f = ca.Function("comp_cov", [V, nlp.P], [ca.jacobian(E, V), ca.jacobian(C, V), ca.jacobian(nlp.r, V), nlp.r])
    GE, GC, R, rv = f(x, nlp.parameters(0.0, sigmas, penalty))
    zi = np.array(z)
    w = np.setdiff1d(np.arange(nlp.n), np.concatenate([zi, np.array(sorted(fixed), dtype=int)]))
    if GE.shape[0] != len(w):
        npar = fn.np
        return np.full((npar, npar), np.nan), math.nan
    try:
        cov = constrained_covariance(R, np.asarray(rv).ravel(), GE, zi, w, jac_con=GC if con_rows else None)
    except RuntimeError:  # the equations do not determine the eliminated unknowns there
        return np.full((fn.np, fn.np), np.nan), math.nan
    return cov.matrix[:fn.np, :fn.np], cov.residual_variance


def _without_chatter(seq: list, min_len: float) -> list:
    """The phases with every run of consecutive phases shorter than ``min_len`` (the fixed
    grid's chatter after a landing) merged: the switch between the phases on either side is put
    at the run's start, a run between phases of one mode joins them, a run at either end of the
    record is taken into its neighbour.  Without a phase of ``min_len``: as it is.  (heel-off,
    heel_off_clean.csv 3.0–4.5 s: 40 ms of chatter after a toe landing; merging the shortest
    phase first left a 37 ms toe phase the polish found infeasible.)"""
    long = [p for p in seq if p[2] - p[1] >= min_len]
    if not long:
        return [tuple(p) for p in seq]
    out: list[list] = []
    for m, _a, b in long:
        if not out:
            out.append([m, seq[0][1], b])
        elif out[-1][0] == m:
            out[-1][2] = b
        else:
            out.append([m, out[-1][2], b])
    out[-1][2] = seq[-1][2]
    return [tuple(p) for p in out]


def _stitch(first_mode, switches: list, t_start: float, t_end: float):
    """The phases from the first mode and the switches ``(time, from, to)`` of the windows, or
    the time of the first switch that does not leave the mode the phases are in."""
    seq, mode, t0 = [], first_mode, t_start
    for t, m0, m1 in sorted(switches):
        if m0 != mode:
            return float(t)
        seq.append((mode, t0, float(t)))
        mode, t0 = m1, float(t)
    return seq + [(mode, t0, t_end)]


def _windowed(problem: ContactProblem, method: Complementarity, p0: Mapping[str, float], solver: Ipopt,
              deadline: float) -> dict:
    """The modes of long records by fits of overlapping windows, each alone (its own
    parameters and initial state); the switches in each window's core (without overlap/2 at
    its inner ends) stitched into one sequence per record.  The windows' parameters pooled by
    their standard errors are the fixed grid's figures."""
    rows, phases = [], []
    fail = None
    for trial in problem.trials:
        t = np.asarray(trial.time, dtype=float)
        n, dt = len(t), float(np.median(np.diff(t)))
        assert method.window is not None  # windows only when one is set
        width, step = round(method.window / dt), round((method.window - method.overlap) / dt)
        firsts = list(range(0, max(n - 1 - width, 0) + 1, step))
        if firsts[-1] + width < n - 1:
            firsts.append(n - 1 - width)
        found, first_mode = [], None
        for j, a in enumerate(firsts):
            b = min(a + width, n - 1)
            sub = _cut(trial, a, b)
            fit = _fit(problem, [sub], method, p0, solver, deadline)
            seq = fit["phases"][0]
            se = np.sqrt(np.maximum(np.diag(fit["covariance"]), 0.0))
            rows.append({"window": sub.name, "status": fit["status"], "success": fit["success"],
                         "parameters": fit["parameters"], "standard_errors": dict(zip(problem.parameters, se.tolist())),
                         "iterations": fit["iterations"], "phases": seq, "fit": fit})
            if fit["status"] == "time_limit":
                fail = fail or ("time_limit", sub.name)
                break
            lo = t[a] + method.overlap / 2 if j > 0 else -np.inf
            hi = t[b] - method.overlap / 2 if j < len(firsts) - 1 else np.inf
            found += [(p1[1], p0_[0], p1[0]) for p0_, p1 in itertools.pairwise(seq) if lo <= p1[1] < hi]
            if j == 0:
                first_mode = seq[0][0]
        if fail:
            break
        stitched = _stitch(first_mode, found, float(t[0]), float(t[-1]))
        if isinstance(stitched, float):
            fail = ("windows_disagree", f"{trial.name} at {stitched:.3f} s")
            break
        if any(m is None for m, _a, _b in stitched):
            fail = ("mode_not_declared", trial.name)
            break
        phases.append(stitched)
    p = np.array([[r["parameters"][k] for k in problem.parameters] for r in rows])
    se = np.array([[r["standard_errors"][k] for k in problem.parameters] for r in rows])
    w = np.where(np.isfinite(se) & (se > 0), 1.0 / np.where(se > 0, se, 1.0) ** 2, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):  # without standard errors: the plain mean
        pooled = np.where(w.sum(0) > 0, (w * p).sum(0) / w.sum(0), p.mean(0))
        pooled_se = 1.0 / np.sqrt(w.sum(0))
    ok = fail is None and all(r["success"] for r in rows)
    last = rows[-1]["fit"]
    failed = [r for r in rows if not r["success"]]
    status = fail[0] if fail else "Solve_Succeeded" if ok else failed[0]["status"]
    # a window whose fit failed still offers its modes: the polish judges them (a wrong sequence
    # does not fit the record there); only modes that do not stitch end the fit
    return {"parameters": dict(zip(problem.parameters, pooled.tolist())), "covariance": np.diag(pooled_se ** 2),
            "success": ok, "status": status, "phases": phases, "windows": rows, "polishable": fail is None,
            "window": fail[1] if fail else (failed[0]["window"] if failed else None),
            "iterations": int(sum(r["iterations"] for r in rows)), "homotopy": [], "last": last,
            "objective": math.nan, "sigmas": [problem.noise_of(t) for t in problem.trials],
            "timings": {k: float(sum(r["fit"]["timings"][k] for r in rows)) for k in last["timings"]}}


def _cut(trial: Trial, a: int, b: int) -> Trial:
    """Samples ``a``..``b`` of ``trial`` as a trial of their own."""
    t = np.asarray(trial.time, dtype=float)
    return Trial(t[a:b + 1], {s: np.asarray(trial[s], dtype=float)[a:b + 1] for s in trial.signals},
                 name=f"{trial.name}[{t[a]:.2f} s, {t[b]:.2f} s]")


def solve_complementarity(problem: ContactProblem, method: Complementarity, *, solver: Ipopt,
                          guess: Mapping[str, float] | None = None, verdict: bool = True,
                          solve: Callable[..., Result] | None = None) -> Result:
    """``co.solve(ContactProblem, Complementarity())`` (module docstring); ``solve`` fits the
    polish's hybrid problem (:func:`colloc.solve`, passed in by it)."""
    t_call = _time.perf_counter()
    problem.check_names(guess or {}, "guess")
    p0 = {**problem.guess, **{k: float(v) for k, v in (guess or {}).items()}}
    for k, v in p0.items():
        lo, hi = problem.bounds[k]
        if not lo <= v <= hi:
            raise OptionsError(f"guess {k}={v} is outside its search range ({lo}, {hi})")
    limit = (method.time_limit if method.time_limit is not None
             else float((solver.extra or {}).get("max_wall_time", math.inf)))
    deadline = t_call + limit
    long = method.window is not None and any(t.time[-1] - t.time[0] > method.window + method.overlap
                                             for t in problem.trials)
    if long:
        comp = _windowed(problem, method, p0, solver, deadline)
    else:
        comp = _fit(problem, problem.trials, method, p0, solver, deadline)
    stage = _stage(problem, comp)
    polish = (method.polish and problem.hybrid is not None
              and comp.get("polishable", comp["status"] in (*CONVERGED, "friction_bound"))
              and not any(m is None for seq in comp["phases"] for m, _a, _b in seq))
    if polish and problem.hybrid is not None and solve is not None and _time.perf_counter() < deadline:
        hybrid = problem.hybrid(comp["phases"], dict(comp["parameters"]))
        left = deadline - _time.perf_counter()
        polished = solver if not math.isfinite(left) else dataclasses.replace(
            solver, extra={**(solver.extra or {}), "max_wall_time": left})
        res = solve(hybrid, method.polish_method, solver=polished, throw=False, verdict=verdict)
        found = [res.info["phases"][t.name] for t in hybrid.trials]
        info = {**res.info, "complementarity": stage, "polished": True, "polish_method": res.method,
                "modes": [list(f["modes"]) for f in found],
                "switches": [_switches(problem, f["modes"], f["switch_times"], f.get("switch_standard_errors"))
                             for f in found],
                "method_note": (f"complementarity on a fixed Radau grid of degree {method.degree}, modes read from "
                                f"the fit{f' in windows of {method.window:g} s' if long else ''}; polished by the "
                                f"hybrid path ({res.method}) with those modes, switching times free")}
        timings = {**res.timings, "total_s": _time.perf_counter() - t_call, "complementarity_s": stage["time_s"]}
        return dataclasses.replace(res, method=method.name, info=info, timings=timings,
                                   iterations=res.iterations + comp["iterations"])
    fit = comp if not long else comp["last"]
    return _result(problem, method, comp, fit, stage, verdict, t_call)


def _switches(problem: ContactProblem, modes: Sequence[str], times: Sequence[float],
              standard_errors: Sequence[float] | None = None) -> list[dict]:
    """The switches between successive ``modes`` at ``times``: ``time``, ``std_error``, ``from``,
    ``to`` and ``kind`` (``lift-off`` where a contact lets go, ``landing`` where one touches)."""
    touching = {m: set(c) for c, m in problem.modes.items()}
    se = list(standard_errors or []) + [None] * len(times)
    out = []
    for i, t in enumerate(times):
        a, b = touching.get(modes[i], set()), touching.get(modes[i + 1], set())
        e = se[i]
        out.append({"time": float(t), "std_error": float(e) if e is not None and np.isfinite(e) else None,
                    "from": modes[i], "to": modes[i + 1], "kind": "landing" if b - a else "lift-off"})
    return out


def _stage(problem: ContactProblem, comp: dict) -> dict:
    """The fixed grid's figures, kept beside a polished result."""
    se = np.sqrt(np.maximum(np.diag(comp["covariance"]), 0.0))
    return {"parameters": comp["parameters"], "standard_errors": dict(zip(problem.parameters, se.tolist())),
            "status": comp["status"], "success": comp["success"], "iterations": comp["iterations"],
            "phases": [[(m, float(a), float(b)) for m, a, b in seq] for seq in comp["phases"]],
            "switches": [_switches(problem, [m for m, _a, _b in seq], [b for _m, _a, b in seq[:-1]])
                         for seq in comp["phases"]],
            "homotopy": comp["homotopy"], "windows": [{k: v for k, v in r.items() if k != "fit"}
                                                      for r in comp.get("windows", [])],
            "window": comp.get("window"), "time_s": float(sum(comp["timings"].values()))}


_MESSAGES = {"homotopy_failed": "a step of the relaxation homotopy did not converge ({ipopt})",
             "parameter_on_bound": "a parameter ended on its search bound",
             "friction_bound": "the stand-in for unlimited friction (|tangential| <= kappa·normal force) binds",
             "mode_not_declared": "a set of contacts in touch that no mode of the problem names ({window})",
             "time_limit": "the time limit ran out",
             "windows_disagree": "the modes found in overlapping windows disagree ({window})"}


def _result(problem: ContactProblem, method: Complementarity, comp: dict, fit: dict, stage: dict, verdict: bool,
            t_call: float) -> Result:
    """The fixed grid's fit as a :class:`Result` (no polish): trajectories at the nodes,
    residuals at the samples, the event-driven simulation check, judged by :func:`finalize`."""
    import pandas as pd

    nlp, x = fit["nlp"], fit["x"]
    fn = nlp.fn
    names = list(problem.outputs)
    coords = list(problem.system.coordinates)
    trajectories, measurements, residuals, scaled, simulation = {}, {}, {}, {}, {}
    for k, rec in enumerate(nlp.recs):
        tr = rec.trial
        times = np.append(np.column_stack([rec.mesh[:-1], rec.tc]).ravel(), rec.mesh[-1])
        xm, xc = x[rec.ix_mesh], x[rec.ix_coll]
        states = np.vstack([np.concatenate([xm[:-1, None, :], xc], axis=1).reshape(-1, fn.nx), xm[-1:]])
        y = np.asarray(fn.outputs.map(len(states))(states.T)).T
        frame = pd.DataFrame(np.hstack([states[:, :fn.n], y]), columns=coords + names,
                             index=pd.Index(times, name="time"))
        trajectories[tr.name] = frame.loc[:, ~frame.columns.duplicated()]
        ym = np.asarray(fn.outputs.map(len(rec.samples))(xm[rec.samples].T)).T
        held = [s for s in names if s in tr]
        t = pd.Index(np.asarray(tr.time, dtype=float), name="time")
        measurements[tr.name] = pd.DataFrame({s: np.asarray(tr[s], dtype=float) for s in held}, index=t)
        residuals[tr.name] = pd.DataFrame({s: ym[:, names.index(s)] - tr[s] for s in held}, index=t)
        sig = fit["sigmas"][k]
        scaled[tr.name] = pd.DataFrame({s: residuals[tr.name][s] / sig[s] for s in held}, index=t)
        simulation[tr.name] = _simulation_check(problem, tr, xm[0], fit["parameters"], held)
    se = dict(zip(problem.parameters, np.sqrt(np.maximum(np.diag(comp["covariance"]), 0.0)).tolist()))
    cov = pd.DataFrame(comp["covariance"], index=problem.parameters, columns=problem.parameters)
    status = comp["status"]
    ipopt = comp["homotopy"][-1]["status"] if comp["homotopy"] else ""
    message = (f"IPOPT: {ipopt or status}" if comp["success"] else
               _MESSAGES.get(status, "IPOPT: {ipopt}").format(ipopt=ipopt, window=comp.get("window") or ""))
    info: dict[str, Any] = {"complementarity": stage, "polished": False, "phases": stage["phases"],
                            "modes": [[m for m, _a, _b in seq] for seq in stage["phases"]],
                            "switches": stage["switches"],
                            "noise": {t.name: s for t, s in zip(problem.trials, comp["sigmas"])},
                            "method_note": f"complementarity on a fixed Radau grid of degree {method.degree}, "
                                           f"{method.per_sample} interval(s) per sample, impulses at mesh points; "
                                           "modes read from the fit"}
    estimate = Estimate(
        problem=problem.name, method=method.name, success=comp["success"], status=status, message=message,
        iterations=comp["iterations"], objective=comp["objective"], parameters=dict(comp["parameters"]),
        standard_errors=se, covariance=cov, trajectories=trajectories, measurements=measurements,
        residuals=residuals, timings=dict(comp["timings"]), num_nodes=int(sum(r.N * r.d + 1 for r in nlp.recs)),
        trials=[t.name for t in problem.trials], versions=versions(), simulation=simulation, info=info,
        initial_parameters={**problem.guess}, solver_status=status, units=dict(problem.units),
        descriptions=dict(problem.descriptions))
    result = finalize(estimate, bounds=problem.bounds, physical=problem.limits, scales=problem.scale,
                      verdict=verdict, fit={s: 1.0 for s in names}, verdict_residuals=scaled,
                      verdict_note="model − measurement divided by the noise σ of each record "
                                   "(ContactProblem(noise=...))", chi2_poor=problem.chi2_poor)
    result.timings["total_s"] = _time.perf_counter() - t_call
    return result


def _simulation_check(problem: ContactProblem, trial: Trial, x0: np.ndarray, params: Mapping[str, float],
                      signals: Sequence[str]) -> dict:
    """The event-driven simulation (:func:`colloc.simulate_contact`) from the fitted initial
    state at the estimate, the inputs a cubic spline through their samples: NRMSE per signal."""
    from scipy.interpolate import CubicSpline

    from ..simulation.contact import simulate_contact

    t = np.asarray(trial.time, dtype=float)
    splines = {u: CubicSpline(t, np.asarray(trial[u], dtype=float)) for u in problem.inputs}
    base = problem.system

    def forces(tt, q, qd, p):
        return np.asarray(base.forces(tt, q, qd, {**p, **{u: float(s(tt)) for u, s in splines.items()}}),
                          dtype=float).ravel()
    system = ContactSystem(base.name, base.coordinates, lambda q, p: np.asarray(base.mass(q, p), dtype=float),
                           forces, base.contacts)
    try:
        sim = simulate_contact(system, x0, (t[0], t[-1]), dict(params), t_eval=t, rtol=1e-9, atol=1e-10)
    except (SolveFailed, ValueError, np.linalg.LinAlgError) as e:
        return {"status": "failed", "message": str(e), "nrmse": {}}
    if sim.status != "ok":
        return {"status": "failed", "message": sim.message, "nrmse": {}}
    xs = sim.state(t)
    n = base.n
    y = np.asarray(_outputs(problem)(xs[:, :n], xs[:, n:]))
    nrmse = {}
    for i, s in enumerate(problem.outputs):
        if s in signals:
            span = float(np.ptp(trial[s]))
            nrmse[s] = float(np.sqrt(np.mean((y[:, i] - trial[s]) ** 2))) / span if span > 0 else math.nan
    return {"status": "ok", "message": "event-driven contact simulation (colloc.simulate_contact)", "nrmse": nrmse}


def _outputs(problem: ContactProblem):
    """``(Q, Qd)`` (rows of samples) → the measured signals, column per signal."""
    def f(Q, Qd):
        return np.column_stack([[float(np.asarray(g(q, qd), dtype=float).ravel()[0]) for q, qd in zip(Q, Qd)]
                                for g in problem.outputs.values()])
    return f
