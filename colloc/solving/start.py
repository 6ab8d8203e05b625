"""A global first estimate of the parameters from the data alone (equation error).

Gradient matching: smooth every measured signal with a quintic smoothing spline whose
residual matches the declared noise (the fit weights are ``1/σ²``, so the spline may leave
``Σ (y − s)²/σ² = N``), differentiate the splines, and fit the parameters to the model's
residual ``f(ẋ, x, r, u, p, t)`` evaluated on that trajectory, each equation divided by its
declared scale.  No integration, no trajectory unknowns, hence no local minima from the
dynamics: where ``f`` is affine in ``p`` (detected with CasADi: ``∂f/∂p`` does not depend on
``p``) this is a bounded linear least-squares problem with one answer; otherwise a small
bounded NLP in ``p`` alone, solved by IPOPT with CasADi's derivatives.

Unmeasured states come from derivative pairs (``set_der(theta, omega)`` with θ measured:
ω is the derivative of θ's spline) or, failing that, from a collocation solve with the
parameters held at their declared guesses.  When the estimate cannot be trusted (rank
deficient, non-finite, the NLP failed) it falls back to the declared guesses and says why.
"""

from __future__ import annotations

import time as _time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import casadi as ca
import numpy as np

from ..definition.problem import Problem
from ..signals.splines import interpolating_spline, lsq_spline
from ..transcription.interpolation import InputReader
from .starts import start_points

__all__ = ["InitialEstimate", "equation_error", "residual_is_linear"]

#: Fraction of each record dropped at both ends (spline derivatives are poor there).
_MARGIN = 0.02
#: Relative singular value below which the linear problem counts as rank deficient.
_RANK_TOL = 1e-9
#: At most this many samples per trial enter the equation-error fit (evenly strided).
_MAX_POINTS = 2000
#: A residual nonlinear in the parameters (a frequency, a delay) makes the equation-error
#: objective multimodal: it is evaluated at this many space-filling points of the search box
#: (one vectorised evaluation) and the local NLP starts from the lowest of them and the guess,
#: then from the next lowest while the optimum found lies on a search bound, up to _LOCAL_RUNS.
_EXPLORE_POINTS = 32
_LOCAL_RUNS = 3


@dataclass
class InitialEstimate:
    """The first estimate of the parameters and how it was obtained.

    Attributes
    ----------
    parameters : dict of str to float
        Within the declared bounds.
    source : str
        ``"equation-error"`` or ``"guess"`` (the declared guesses, after a fallback).
    linear : bool or None
        Whether the residual is affine in the parameters (``None`` when not examined).
    message : str
        What was done, and why it fell back when it did.
    states : dict of str to str
        How each state's trajectory was obtained (``"measured"``, ``"d/dt theta"``,
        ``"collocation at the guess"``).
    clipped : list of str
        Parameters whose estimate lay outside their bounds and was clipped.
    time_s : float
    """

    parameters: dict[str, float]
    source: str
    linear: bool | None = None
    message: str = ""
    states: dict[str, str] = field(default_factory=dict)
    clipped: list[str] = field(default_factory=list)
    time_s: float = 0.0

    def to_info(self) -> dict:
        """JSON-safe summary for ``Result.initial_estimate``."""
        return {"source": self.source, "linear": self.linear, "message": self.message,
                "states": dict(self.states), "clipped": list(self.clipped), "time_s": self.time_s}


#: Knot spacings (samples) among which :func:`_one_spline` chooses: about ×1.5 apart.
_KNOT_SPACINGS = (4, 6, 9, 13, 19, 28, 42, 62, 92, 136)


class _Curve(Protocol):
    """A spline as the start uses it: evaluated, and differentiated into another spline."""

    def __call__(self, x: np.ndarray) -> np.ndarray: ...

    def derivative(self, n: int = 1) -> _Curve: ...


def _scipy_spline(t: np.ndarray, y: np.ndarray, k: int, **options: Any) -> _Curve:
    """FITPACK's spline, for the cases the NumPy splines do not cover (records of a few samples,
    or no spacing of knots that fits): SciPy's interpolate is imported here only, since it costs
    0.25-0.3 s (:mod:`colloc.signals.splines`)."""
    from scipy.interpolate import UnivariateSpline

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FITPACK's notes on s are not errors here
        return UnivariateSpline(t, y, k=k, **options)


def _one_spline(t: np.ndarray, y: np.ndarray, sigma: float | None, k: int) -> _Curve:
    """Interpolating spline without ``σ``; with it, the smoothest least-squares spline with
    knots at every ``m``-th sample (``m`` in :data:`_KNOT_SPACINGS`, tried from the widest)
    whose residual is consistent with the noise, ``Σ ((y − s)/σ)² ≤ n + 2·√(2n)`` (the upper
    edge of χ²(n): the discrepancy principle), found by bisection over the spacings.

    FITPACK's smoothing spline (``Σ ((y − s)/σ)² ≤ n``, adaptive knots) was used before: in
    a stretch whose noise happens to sum above ``n`` (about half of them) its knot search kept
    adding knots until it fitted the noise (81 knots on 600 samples of a smooth signal,
    derivatives 10–100× off), and the equation-error regressors inherited it; the two-link
    gains came out shrunk and the delay of two-link-delay 36–64 ms against 23.7 ms.  Evenly
    spaced knots cannot chase the noise, and a few banded least-squares solves cost less than
    the knot search did."""
    if sigma is None or not np.isfinite(sigma) or sigma <= 0:
        if k % 2:
            try:
                return interpolating_spline(t, y, k)
            except ValueError:
                pass
        return _scipy_spline(t, y, k, s=0)
    n = t.size
    target = n + 2.0 * np.sqrt(2.0 * n)
    spacings = [m for m in sorted(_KNOT_SPACINGS) if n >= 2 * m + k + 1]
    fits: dict[int, tuple[_Curve, float] | None] = {}

    def fit(m: int) -> tuple[_Curve, float] | None:
        if m not in fits:
            try:
                fits[m] = lsq_spline(t, y, t[m:n - m:m], k)
            except ValueError:  # the knots leave an interval without samples (a gap in the record)
                fits[m] = None
        return fits[m]

    def consistent(m: int) -> bool:
        f = fit(m)
        return f is not None and f[1] / sigma**2 <= target

    if not spacings:
        return _scipy_spline(t, y, k, w=np.full(n, 1.0 / sigma), s=float(n))
    # the residual grows with the spacing: bisect for the widest spacing still consistent
    # (about four fits instead of up to ten; the finest when none is)
    if consistent(spacings[-1]):
        chosen = spacings[-1]
    else:
        lo, hi = -1, len(spacings) - 1  # consistent at lo (the sentinel: finer than any), not at hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if consistent(spacings[mid]):
                lo = mid
            else:
                hi = mid
        chosen = spacings[max(lo, 0)]
    f = fit(chosen)
    if f is None:
        f = next((fit(m) for m in spacings if fit(m) is not None), None)
    return f[0] if f is not None else _scipy_spline(t, y, k, w=np.full(n, 1.0 / sigma), s=float(n))


def _spline(t: np.ndarray, y: np.ndarray, sigma: float | None) -> _Curve:
    """Quintic spline through (``σ`` unknown) or near (``σ`` known, :func:`_one_spline`) the
    samples."""
    k = 5 if t.size > 5 else max(1, t.size - 1)
    return _one_spline(t, y, sigma, k)


def _declared(problem: Problem) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    model = problem.model
    names = model.element_names("parameter")
    lb, ub = model.bounds("parameter")
    guess = np.clip(model.guesses("parameter"), lb, ub)
    return names, lb, ub, guess, model.scales("parameter")


def residual_is_linear(problem: Problem) -> bool:
    """``f`` affine in ``p``: its Jacobian w.r.t. ``p`` does not depend on ``p`` (nor on τ)."""
    model = problem.model
    if any(d.parameter is not None for d in model.delays):
        return False
    res = model.functions()["residual"]
    syms = [ca.SX.sym(n, *res.size_in(i)) for i, n in enumerate(res.name_in())]
    jac = ca.jacobian(res(*syms), syms[4])
    return not ca.depends_on(jac, syms[4])


def equation_error(
    problem: Problem,
    *,
    guess: Mapping[str, float] | None = None,
    collocation_states=None,
) -> InitialEstimate:
    """Estimate the parameters of ``problem`` from its trials by equation error.

    Parameters
    ----------
    problem : Problem
    guess : mapping of str to float, optional
        Parameter values to fall back on (and to start the NLP from) instead of the
        declared guesses.
    collocation_states : callable, optional
        ``collocation_states(problem) -> list of dict`` giving, per trial, node times
        (``"time"``) and every state's trajectory, from a solve with the parameters held
        fixed; used for states the data do not determine.  Without it such states make the
        estimate fall back to the guesses.

    Returns
    -------
    InitialEstimate
    """
    t_start = _time.perf_counter()
    names, lb, ub, p_guess, scale = _declared(problem)
    if guess:
        p_guess = np.clip([float(guess.get(n, g)) for n, g in zip(names, p_guess)], lb, ub)

    def fallback(why: str, linear=None, states=None) -> InitialEstimate:
        return InitialEstimate(dict(zip(names, p_guess.tolist())), "guess", linear,
                               f"equation error not used: {why}; starting from the declared guesses",
                               states or {}, [], _time.perf_counter() - t_start)

    if not names:
        return InitialEstimate({}, "guess", None, "no parameters", {}, [], _time.perf_counter() - t_start)
    if any(t.kind == "trajectory" for t in problem.terms) and not problem.fit:
        return fallback("the objective is a trajectory statistic, not a fit to samples")
    try:
        columns, states_how = _trajectories(problem, collocation_states)
    except _Unrecoverable as exc:
        return fallback(str(exc))
    linear = residual_is_linear(problem)
    try:
        if linear:
            p, note = _linear_fit(problem, columns, lb, ub, scale)
        else:
            p, note = _nonlinear_fit(problem, columns, lb, ub, scale, p_guess)
    except _Unusable as exc:
        return fallback(str(exc), linear, states_how)
    if not np.all(np.isfinite(p)):
        return fallback("the estimate is not finite", linear, states_how)
    clipped = [n for n, v, lo, hi in zip(names, p, lb, ub) if v < lo or v > hi]
    p = np.clip(p, lb, ub)
    kind = "linear least squares" if linear else "bounded NLP in the parameters"
    how = ", ".join(f"{k} {v}" for k, v in states_how.items() if v != "measured")
    message = f"equation error ({kind}{'; ' + note if note else ''})"
    if how:
        message += f"; unmeasured states: {how}"
    if clipped:
        message += f"; clipped to bounds: {', '.join(clipped)}"
    return InitialEstimate(dict(zip(names, p.tolist())), "equation-error", linear, message, states_how,
                           clipped, _time.perf_counter() - t_start)


class _Unrecoverable(Exception):
    pass


class _Unusable(Exception):
    pass


@dataclass
class _Columns:
    """Per trial: the residual's arguments at the interior sample times (columns = samples)."""

    xdot: list[np.ndarray]
    x: list[np.ndarray]
    r: list[np.ndarray]
    u: list[np.ndarray]  # known inputs then delayed states (constant delays)
    t: list[np.ndarray]
    delayed: list[list]  # per trial: (row in u, spline, order, t0) for delays with a τ parameter


def _trajectories(problem: Problem, collocation_states) -> tuple[_Columns, dict[str, str]]:
    model = problem.model
    states = model.element_names("state")
    free = model.element_names("free_input")
    known = model.element_names("known_input")
    pairs = model.derivative_pairs()
    cols = _Columns([], [], [], [], [], [])
    how: dict[str, str] = {}
    colloc = None
    for i, trial in enumerate(problem.trials):
        t = trial.time
        # source of each state: (spline, derivative order)
        src: dict[str, tuple[_Curve, int]] = {}
        for s in states:
            if s in trial:
                sigma = 1.0 / np.sqrt(problem.fit[s]) if s in problem.fit else None
                m = trial.present(s)  # measured values only
                src[s] = (_spline(t[m], trial[s][m], sigma), 0)
                how.setdefault(s, "measured")
        changed = True
        while changed:
            changed = False
            for pos, vel in pairs:
                if pos in src and vel not in src and src[pos][1] < 3:
                    spl, order = src[pos]
                    src[vel] = (spl, order + 1)
                    how.setdefault(vel, f"d/dt {pos}")
                    changed = True
        missing = [s for s in states if s not in src]
        if missing:
            if collocation_states is None:
                raise _Unrecoverable(f"state(s) {', '.join(missing)} are neither measured nor derivatives "
                                     "of measured states")
            if len(missing) == len(states) and not any(u in problem.input_noise for u in known):
                # every state would come from a solve with the parameters held at the guesses,
                # on which the model's residual vanishes at exactly those guesses
                raise _Unrecoverable("no state is measured (nor a derivative of a measured one): states "
                                     "collocated at the guesses would only give the guesses back")
            if colloc is None:
                colloc = collocation_states(problem)
                if colloc is None:
                    raise _Unrecoverable(f"state(s) {', '.join(missing)} are unmeasured and the collocation "
                                         "solve at the guesses failed")
            tn = colloc[i]["time"]
            for s in missing:
                src[s] = (_spline(tn, colloc[i][s], None), 0)
                how.setdefault(s, "collocation at the guess")
        span = t[-1] - t[0]
        keep = (t >= t[0] + _MARGIN * span) & (t <= t[-1] - _MARGIN * span)
        if keep.sum() < 2:
            keep = np.ones(t.size, dtype=bool)
        tk = t[keep]
        if tk.size > _MAX_POINTS:  # every k-th sample: a start needs no more equations than this
            tk = tk[:: int(np.ceil(tk.size / _MAX_POINTS))]
        X = np.array([src[s][0].derivative(src[s][1])(tk) if src[s][1] else src[s][0](tk) for s in states])
        XD = np.array([src[s][0].derivative(src[s][1] + 1)(tk) for s in states])
        guesses = problem.guess_trajectories(i, tk)
        R = np.array([guesses[r] for r in free]).reshape(len(free), tk.size)
        U = []
        exact = InputReader(trial, known, "cubic", problem.input_jumps(i))(tk)  # measured, else interpolated
        for k, u in enumerate(known):
            if u in problem.input_noise:
                m = trial.present(u)
                U.append(_spline(t[m], trial[u][m], problem.input_noise[u])(tk))
            else:
                U.append(exact[k])
        delayed = []
        row = len(known)
        for d in model.delays:
            for e in d.state_elements:
                spl, order = src[e]
                if d.parameter is None:
                    ts = np.maximum(tk - d.value, t[0])
                    U.append(spl.derivative(order)(ts) if order else spl(ts))
                else:
                    U.append(np.zeros(tk.size))
                    delayed.append((row, spl, order, float(t[0]), float(t[-1]), d.parameter))
                row += 1
        cols.xdot.append(XD)
        cols.x.append(X)
        cols.r.append(R)
        cols.u.append(np.array(U).reshape(len(U), tk.size))
        cols.t.append(tk[None, :])
        cols.delayed.append(delayed)
    return cols, how


def _linear_fit(problem: Problem, cols: _Columns, lb, ub, scale) -> tuple[np.ndarray, str]:
    """``min ‖W (f(p=0) + ∂f/∂p · p)‖²`` within the bounds, in scaled parameters."""
    model = problem.model
    res = model.functions()["residual"]
    npar = res.size1_in(4)
    syms = [ca.SX.sym(n, *res.size_in(i)) for i, n in enumerate(res.name_in())]
    out = res(*syms)
    jac = ca.Function("eqerr_jac", syms[:4] + syms[5:], [ca.jacobian(out, syms[4])])
    w = 1.0 / model.equation_scales
    A_parts, b_parts = [], []
    for XD, X, R, U, T in zip(cols.xdot, cols.x, cols.r, cols.u, cols.t):
        N = X.shape[1]
        e0 = np.array(res.map(N)(XD, X, R, U, np.zeros(npar), T))  # (m, N)
        J = np.array(jac.map(N)(XD, X, R, U, T))  # (m, N·npar)
        J = J.reshape(J.shape[0], N, npar)
        b_parts.append(-(w[:, None] * e0).T.ravel())
        A_parts.append((w[:, None, None] * J).transpose(1, 0, 2).reshape(-1, npar))
    A = np.vstack(A_parts) * scale[None, :]
    b = np.concatenate(b_parts)
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(b))):
        raise _Unusable("the residual is not finite on the smoothed data")
    # one thin QR (A = QR): R has A's singular values, and the least-squares answer is R⁻¹Qᵀb
    q, r = np.linalg.qr(A)
    _, sv, vt = np.linalg.svd(r)
    if sv.size == 0 or sv[0] == 0 or sv[-1] < _RANK_TOL * sv[0]:
        null = vt[-1]
        names = model.element_names("parameter")
        involved = [names[j] for j in np.argsort(-np.abs(null)) if abs(null[j]) > 0.1]
        raise _Unusable(f"rank deficient: the data do not separate {', '.join(involved)}")
    lo, hi = lb / scale, ub / scale
    x = np.linalg.solve(r, q.T @ b)
    if not (np.all(x >= lo) and np.all(x <= hi)):  # a bound is active (SciPy only then: 0.25 s to import)
        from scipy.optimize import lsq_linear

        x = lsq_linear(A, b, bounds=(lo, hi), method="bvls" if A.shape[1] <= 50 else "trf").x
    return x * scale, f"condition {sv[0] / sv[-1]:.3g}"


def _nonlinear_fit(problem: Problem, cols: _Columns, lb, ub, scale, p0) -> tuple[np.ndarray, str]:
    """Bounded NLP ``min ½‖W f(p)‖²/N`` in the scaled parameters (IPOPT, exact Hessian)."""
    model = problem.model
    res = model.functions()["residual"]
    names = model.element_names("parameter")
    ps = ca.MX.sym("p_scaled", len(names))
    p = ps * ca.DM(scale)
    w = ca.DM(1.0 / model.equation_scales)
    terms, count = [], 0
    for XD, X, R, U, T, delayed in zip(cols.xdot, cols.x, cols.r, cols.u, cols.t, cols.delayed):
        N = X.shape[1]
        Umx = ca.MX(ca.DM(U))
        if delayed:
            rows = []
            for k in range(U.shape[0]):
                entry = next((d for d in delayed if d[0] == k), None)
                if entry is None:
                    rows.append(ca.MX(ca.DM(U[k][None, :])))
                    continue
                _, spl, order, t0, t1, tau_name = entry
                grid = np.linspace(t0, t1, max(2, int(np.rint((t1 - t0) / np.min(np.diff(T[0])) * 2)) + 1))
                vals = spl.derivative(order)(grid) if order else spl(grid)
                interp = ca.interpolant(f"delayed_{k}", "bspline", [grid], vals)
                tau = p[names.index(tau_name)]
                ts = ca.fmin(ca.fmax(ca.DM(T) - tau, t0), t1)
                rows.append(interp.map(N)(ts))
            Umx = ca.vertcat(*rows)
        E = res.map(N)(ca.DM(XD), ca.DM(X), ca.DM(R), Umx, ca.repmat(p, 1, N), ca.DM(T))
        terms.append(ca.sumsqr(E * ca.repmat(w, 1, N)))
        count += N
    f = 0.5 * sum(terms[1:], terms[0]) / count
    solver = ca.nlpsol("equation_error", "ipopt", {"x": ps, "f": f},
                       {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes",
                        "ipopt.tol": 1e-10, "ipopt.max_iter": 200})
    first = np.clip(p0, lb, ub)
    points = [first] + [np.array([pt[n] for n in names]) for pt in start_points(problem, _EXPLORE_POINTS)]
    values = np.array(ca.Function("objective", [ps], [f]).map(len(points))(
        np.column_stack([q / scale for q in points]))).ravel()
    order = np.argsort(np.where(np.isfinite(values), values, np.inf), kind="stable")
    width = np.where(np.isfinite(ub - lb), ub - lb, 1.0)
    finite_lo, finite_hi = np.isfinite(lb), np.isfinite(ub)
    runs: list[tuple[float, np.ndarray, int, bool]] = []
    for idx in order[:_LOCAL_RUNS]:
        sol = solver(x0=points[idx] / scale, lbx=lb / scale, ubx=ub / scale)
        stats = solver.stats()
        if not stats.get("success", False):
            continue
        p = np.array(sol["x"]).ravel() * scale
        on_bound = bool(np.any((finite_lo & (np.abs(p - lb) <= 1e-6 * width))
                               | (finite_hi & (np.abs(ub - p) <= 1e-6 * width))))
        runs.append((float(sol["f"]), p, int(stats.get("iter_count", 0)), on_bound))
        if not on_bound:
            break
    if not runs:
        raise _Unusable(f"the equation-error NLP stopped with {solver.stats().get('return_status', 'unknown')}")
    inside = [r for r in runs if not r[3]]
    if not inside:  # an optimum of the box, not of the equations: not a start to trust
        p_at = runs[0][1]
        at = (finite_lo & (np.abs(p_at - lb) <= 1e-6 * width)) | (finite_hi & (np.abs(ub - p_at) <= 1e-6 * width))
        names_at = [n for n, hit in zip(names, at) if hit]
        raise _Unusable(f"its optima from {len(runs)} starting points lie on the search bounds "
                        f"({', '.join(names_at) or 'some parameter'})")
    best = min(inside, key=lambda r: r[0])
    where = ("the guess, the lowest" if order[0] == 0 else "the lowest") + \
        f" of the guess and {len(points) - 1} points of the search box"
    note = f"{best[2]} IPOPT iterations from {where}" if len(runs) == 1 else \
        f"{len(runs)} local NLPs from the lowest of the guess and {len(points) - 1} points of the search box " \
        "(the first optima lay on a search bound)"
    return best[1], note
