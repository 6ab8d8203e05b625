"""Where a ``heel-off`` fit starts: kp, kd (and τ) from the measured records alone, no
collocation (:func:`equation_error_start`: the flat-foot equation of motion, integrated, fitted
by linear least squares), and the choice between it and the guesses (:func:`start_of`).
"""

from __future__ import annotations

from collections.abc import Sequence

import casadi as ca
import numpy as np

import colloc as co

from .heel_off_body import TAU_BOUNDS, mode_equations
from .heel_off_records import HeelOffTrial, detect_modes

__all__ = ["SCALE", "STARTS", "START_LEVEL", "equation_error_start", "start_of"]

#: The gains kp, kd are fitted as kp/1000, kd/100 (the columns of the least-squares problem).
SCALE = np.array([1000.0, 100.0])

#: Of the equation-error start (:func:`equation_error_start`): a guess of τ is kept when the record
#: does not reject it, its profile sum of squares within this quantile of the one-parameter F
#: test (a χ²₁ quantile over the residual variance at the minimum) of the least.
START_LEVEL = 0.01
#: Start options of a fit (``colloc identify heel-off --start``).
STARTS = ("equation-error", "guess")


_FLAT_RATES: dict = {}


def _flat_rates() -> ca.Function:
    """(x, a) → (α₀, b): the body's angular acceleration with the foot flat is α₀ + b·T (T the
    ankle torque on the body; the model's flat mode, :func:`colloc_problems.heel_off_body.mode_equations`)."""
    if "flat_rates" not in _FLAT_RATES:
        x, a, xd = ca.SX.sym("x", 4), ca.SX.sym("a"), ca.SX.sym("xd", 4)
        kp, kd = ca.SX.sym("kp"), ca.SX.sym("kd")
        alpha = mode_equations(x, a, kp, kd, xd)["flat"][0][2]  # T = −kp·xd[0] − kd·xd[2]
        zero = {kp: 0.0, kd: 0.0}
        a0 = ca.substitute(alpha, ca.vertcat(*zero), ca.DM.zeros(2))
        b = -ca.jacobian(alpha, kp) / xd[0]  # α is affine in T: dα/dT
        b = ca.substitute(ca.substitute(b, xd, ca.DM([1.0, 0.0, 0.0, 0.0])), ca.vertcat(kp, kd), ca.DM.zeros(2))
        _FLAT_RATES["flat_rates"] = ca.Function("heel_off_flat_rates", [x, a], [a0, b])
    return _FLAT_RATES["flat_rates"]


def _smooth_rate(theta: np.ndarray, dt: float) -> np.ndarray:
    """dθ/dt by a cubic Savitzky–Golay filter over eleven samples (0.1 s at 100 Hz; the gradient
    of a noisy θ at 100 Hz has a noise of σ_θ/(√2·dt), seven times the seed's σ_ω)."""
    from scipy.signal import savgol_filter

    n = len(theta)
    window = min(11, n - 1 + n % 2)
    if window < 5:
        return np.gradient(theta, dt)
    return savgol_filter(theta, window, 3, deriv=1, delta=dt)


def _integral_equation_error(trials, seqs, tau: float):
    """The least-squares fit of the integrated flat-foot equation of motion at the delay ``tau``:
    (sum of squares, kp, kd, degrees of freedom), or None without two flat stretches' worth of
    samples.  Per flat phase from its first sample s (a sample kept clear of each switching time):
    ω_b(t) = ω_s + ∫ₛᵗ α₀ − kp·∫ₛᵗ b·θ_b(u − τ) du − kd·∫ₛᵗ b·ω_b(u − τ) du, ω_s a nuisance unknown
    per phase; the measured ω_b enters undifferentiated (unmeasured: :func:`_smooth_rate` of θ_b)."""
    F = _flat_rates()
    ys, cols, stretch = [], [], []
    for tr, seq in zip(trials, seqs):
        t = np.asarray(tr.time, dtype=float)
        dt = float(t[1] - t[0])
        th = np.asarray(tr.signals["theta_body"], dtype=float)
        om = (np.asarray(tr.signals["omega_body"], dtype=float) if "omega_body" in tr.signals
              else _smooth_rate(th, dt))
        zero = np.zeros_like(th)
        a0, b = (np.asarray(v).ravel() for v in F(np.vstack([th, zero, om, zero]), tr.platform_acc[None, :]))
        # before the record: the initial state (as in the simulator and the collocation)
        thd, omd = np.interp(t - tau, t, th), np.interp(t - tau, t, om)

        def cum(f, t=t):
            return np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(t))])

        c_a, c_th, c_om = cum(a0), cum(b * thd), cum(b * omd)
        for mode, t0, t1 in seq:
            idx = np.flatnonzero((t >= t0 + dt - 1e-9) & (t <= t1 - dt + 1e-9)) if mode == "flat" else []
            if len(idx) < 5:
                continue
            i0 = idx[0]
            ys.append(om[idx] - (c_a[idx] - c_a[i0]))
            cols.append(np.column_stack([-(c_th[idx] - c_th[i0]) * SCALE[0], -(c_om[idx] - c_om[i0]) * SCALE[1]]))
            stretch.append(len(idx))
    n = sum(stretch)
    if n - 2 - len(stretch) < 3:
        return None
    A = np.zeros((n, 2 + len(stretch)))
    A[:, :2] = np.vstack(cols)
    A[np.arange(n), 2 + np.repeat(np.arange(len(stretch)), stretch)] = 1.0
    y = np.concatenate(ys)
    c, *_ = np.linalg.lstsq(A, y, rcond=None)
    r = y - A @ c
    return float(r @ r), float(c[0] * SCALE[0]), float(c[1] * SCALE[1]), n - A.shape[1]


def equation_error_start(trials: Sequence[HeelOffTrial], sequences=None, *, delay: bool = True,
                         tau_guess: float | None = None) -> dict:
    """A start of kp, kd (and τ with ``delay``) from the measured records alone, no collocation:
    while the foot is flat the body is a pendulum on a fixed ankle, θ̈_b = α₀(θ_b, a) + b·T with
    T = −kp·θ_b(t − τ) − kd·ω_b(t − τ) (:func:`_flat_rates`), linear in kp, kd for a given τ.
    Integrated from the start of each flat phase (:func:`_integral_equation_error`; no noise
    differentiated), kp and kd follow by linear least squares; τ by a scan of the sample grid over
    :data:`TAU_BOUNDS`, the least sum of squares refined by the parabola through its neighbours.
    ``sequences``: the mode sequences (default :func:`detect_modes`).

    ``tau_guess``: whether the record rejects that τ (``tau_rejected``): its profile sum of squares
    S(τ) (kp, kd refitted) against the least S₀ by the F test of one parameter,
    (S(τ) − S₀)/(S₀/dof) above the χ²₁ quantile at :data:`START_LEVEL`.

    Returns ``{"parameters", "usable", "message", "profile", "tau_rejected"}``; not usable (the
    message says why) when no flat stretch is long enough or kp or kd comes out ≤ 0."""
    from scipy.stats import chi2

    trials = list(trials)
    seqs = [detect_modes(tr) for tr in trials] if sequences is None else list(sequences)
    dt = float(trials[0].time[1] - trials[0].time[0])
    grid = np.arange(0, int(np.floor(TAU_BOUNDS[1] / dt + 1e-9)) + 1) * dt if delay else np.zeros(1)
    prof = [_integral_equation_error(trials, seqs, float(tau)) for tau in grid]
    out = {"usable": False, "parameters": {}, "profile": None, "tau_rejected": None}
    if prof[0] is None:
        return {**out, "message": "no flat stretch of five samples or more to fit the equation error on"}
    S = np.array([p[0] for p in prof])
    i = int(np.argmin(S))
    tau = float(grid[i])
    if 0 < i < len(grid) - 1 and S[i - 1] + S[i + 1] - 2 * S[i] > 0:
        tau += 0.5 * dt * (S[i - 1] - S[i + 1]) / (S[i - 1] + S[i + 1] - 2 * S[i])
    best = _integral_equation_error(trials, seqs, tau)
    if best[0] > S[i]:  # the parabola's vertex no better than the grid point
        tau, best = float(grid[i]), prof[i]
    s0, kp, kd, dof = best
    params = {"kp": kp, "kd": kd, **({"tau": float(tau)} if delay else {})}
    out.update(parameters=params, profile={"tau": grid.tolist(), "sum_of_squares": S.tolist(), "dof": dof})
    if delay and tau_guess is not None:
        g = _integral_equation_error(trials, seqs, float(tau_guess))
        out["tau_rejected"] = bool(g[0] - s0 > chi2.isf(START_LEVEL, 1) * max(s0, 1e-300) / dof)
    if not (kp > 0 and kd > 0):
        return {**out, "message": f"the equation-error estimate is not a stable feedback (kp {kp:.4g}, kd {kd:.4g})"}
    return {**out, "usable": True, "message": "equation error of the flat-foot phases, integrated"
            + (f"; tau scanned on the {dt:g} s grid over {list(TAU_BOUNDS)} s" if delay else "")}


def start_of(trials, seqs, guess, cur: dict, delay: bool, start: str | None):
    """Where kp, kd (and τ) start, and how that was decided (``start``: one of :data:`STARTS`,
    None the automatic choice): returns (parameters, {"source", "parameters", "message"}).  An
    equation-error estimate that cannot be used leaves the guesses, and says why."""
    if start is not None and start not in STARTS:
        raise co.OptionsError(f"heel-off: start must be one of {', '.join(STARTS)}, got {start!r}")
    given = dict(guess or {})
    if start == "guess" or (start is None and not delay):
        return cur, {"source": "guess", "parameters": dict(cur), "message": "the guesses"}
    auto = start is None
    est = equation_error_start(trials, seqs, delay=delay, tau_guess=given.get("tau") if auto else None)
    if not est["usable"]:
        return cur, {"source": "guess", "parameters": dict(cur),
                     "message": f"the guesses: the equation-error start is not usable ({est['message']})"}
    new, how, source = dict(est["parameters"]), "the equation-error estimate", "equation-error"
    if auto and "tau" in given and not est["tau_rejected"]:
        at = _integral_equation_error(trials, seqs or [detect_modes(tr) for tr in trials], float(given["tau"]))
        new = {"kp": at[1], "kd": at[2], **given} if at[1] > 0 and at[2] > 0 else {**new, **given}
        how = f"the guess of tau ({given['tau']:g} s, not rejected by the record's equation error)"
        source = "guess"
    elif auto and "tau" in given:
        how = (f"the equation-error estimate: the record rejects the guess of tau ({given['tau']:g} s; its "
               f"equation error exceeds the least by more than the {1 - START_LEVEL:.0%} F test of one parameter)")
    elif auto:
        new.update(given)
        if given:
            how += f", with the guess of {', '.join(given)}"
    new = {k: float(v) for k, v in new.items()}
    return new, {"source": source, "parameters": dict(new), "message": how + "; " + est["message"]}

