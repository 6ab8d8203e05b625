"""The CIP's identification problem in the formulations known, J_u, J_S, J_T, MAP and MAP-OM,
its start from the measured COP, and the paper's own J_T procedure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np
import scipy.optimize

import colloc as co
from colloc.signals import cumulative_integral, derivative, lowpass, sdf

from .constants import _SCALES, CENTRE_NORMAL, COP_NOISE, FORMULATIONS, GAINS, OFFSET_AUTO, _body, gain_bounds
from .generator import surrogate_disturbance
from .pendulum import model


# ---- initialisation from the data ---------------------------------------------------------
def com_from_cop(cop: np.ndarray, dt: float, body: Mapping[str, float] | None = None) -> np.ndarray:
    """Sway angle u (rad) from the COP by the exact inverse relation u_cop = h u − I u''/(m g).

    The bounded solution of u'' − ω₀² u = −ω₀² u_cop / h (ω₀² = m g h / I) is the COP
    convolved with the two-sided kernel (ω₀/2)·e^{−ω₀|t|}: a zero-phase low-pass with
    corner ω₀ (0.41 Hz for the paper's subject) that needs no tuning, unlike a Butterworth
    cut-off.  Solved as a tridiagonal system (second-order differences, reflecting ends,
    whose error decays as e^{−ω₀ t} away from the ends).
    """
    b, _ = _body(body)
    c = np.asarray(cop, dtype=float)
    N = c.size
    w2 = b["m"] * b["g"] * b["h"] / b["I"] * dt**2
    ab = np.zeros((3, N))
    ab[0, 1:] = 1.0
    ab[1, :] = -2.0 - w2
    ab[2, :-1] = 1.0
    ab[0, 1] = 2.0  # reflecting ends: u_{-1} = u_1, u_N = u_{N-2}
    ab[2, -2] = 2.0
    return scipy.linalg.solve_banded((1, 1), ab, -w2 * c / b["h"])


def initial_trajectories(trial: co.Trial, gains: Mapping[str, float] | None = None,
                         body: Mapping[str, float] | None = None,
                         filt: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """Trajectory guesses from the measured COP, never all-zero.

    COM from :func:`com_from_cop`, its rate and integral numerically, the disturbance from
    the COP relation T_d = T_c − m g u_cop with the guessed gains, its rate and the white
    noise that would produce it.  (A 60 s solve started from zero trajectories was seen to
    stop at a far-off stationary point, K_P ≈ −45 000.)
    """
    b, f = _body(body, filt)
    g = dict(CENTRE_NORMAL if gains is None else gains)
    t = trial.time
    dt = float(np.median(np.diff(t)))
    u = com_from_cop(trial["cop"], dt, body)
    v = derivative(u, dt)
    w = cumulative_integral(u, dt)
    td = g["KP"] * u + g["KI"] * w + g["KD"] * v - b["m"] * b["g"] * trial["cop"]
    rate = derivative(td, dt)
    noise = (td + f["B"] * rate) / f["A"]
    return {"sway": u, "sway_rate": v, "sway_integral": w, "disturbance": td,
            "disturbance_rate": rate, "noise": noise}


# ---- the formulations ---------------------------------------------------------------------
def sdf_objective(max_lag: float = 10.0, lag_step: float = 0.1, unit: float = 1e3):
    """The paper's J_S (eq. 6) as a trajectory objective for :meth:`Problem.add_trajectory_objective`.

    J_S = ∫₀^τ ½ (SDF_model(Δt) − SDF_data(Δt))² dΔt, τ = ``max_lag``, evaluated on a lag
    grid of spacing ``lag_step`` with the trapezoidal rule; COP in ``unit``-scaled metres
    (1e3: SDF in mm², as the paper reports it).  SDF_model is the discrete SDF of the
    model's COP at the nodes (the same estimator as :func:`colloc.signals.sdf` for the data).
    """
    def function(values, time, trial):
        c = values["cop"] * unit
        dt = float(np.median(np.diff(time)))
        if not np.allclose(np.diff(time), dt, rtol=1e-6, atol=0):
            raise co.ProblemError("J_S needs a uniform grid")
        N = len(time)
        step = max(1, round(lag_step / dt))
        kmax = int(np.floor(max_lag / dt + 1e-9))
        if kmax >= N:
            raise co.ProblemError(f"J_S: max_lag {max_lag} s is not shorter than trial '{trial.name}'")
        lags = np.arange(step, kmax + 1, step)
        _, ref = sdf(trial["cop"] * unit, float(np.median(np.diff(trial.time))), max_lag=max_lag)
        weights = np.full(lags.size, step * dt)
        weights[-1] /= 2  # trapezoid; SDF(0) = 0 for model and data alike
        total = 0
        for k, wgt in zip(lags, weights):
            d = c[int(k):] - c[: N - int(k)]
            total = total + wgt * 0.5 * (ca.sumsqr(d) / (N - int(k)) - float(ref[int(k)])) ** 2
        return total

    return function


def problem(trials: co.Trial | Sequence[co.Trial], formulation: str | None = None, *,
            cop_noise: float = COP_NOISE, surrogate_seed: int = 12345,
            body: Mapping[str, float] | None = None, filt: Mapping[str, float] | None = None,
            bounds: Mapping[str, tuple] | str | None = None, sdf_lag_step: float = 0.1,
            sdf_max_lag: float = 10.0, cop_offset: bool | str = "auto",
            fit_disturbance: bool = False) -> co.Problem:
    """The identification problem in one of :data:`FORMULATIONS`.

    Parameters
    ----------
    trials : Trial or sequence of Trial
        Columns ``cop`` and, for ``"known"``, ``disturbance``.
    formulation : str, optional
        Default: ``"known"`` when every trial has a ``disturbance`` column, else ``"MAP-OM"``.
    cop_noise : float
        COP noise standard deviation (m); the COP fit weight is 1/σ².
    surrogate_seed : int
        Seed of the surrogate disturbance of ``J_u`` and ``J_S`` (one per trial).
    body, filt, bounds : mapping, optional
        Overrides (see :func:`model`).
    sdf_lag_step, sdf_max_lag : float
        Lag spacing and upper limit τ (s) of the J_S integral (the paper: τ = 10 s).
    cop_offset : bool or "auto"
        Identify the mean COP position ``cop_offset`` (m) as a parameter.  ``"auto"``: when
        some trial's mean COP is more than :data:`OFFSET_AUTO` from 0 (a force plate's
        COP is about the plate's origin, the model's about the ankle), not for the
        formulations with a known disturbance.
    fit_disturbance : bool
        ``MAP``/``MAP-OM`` only: the disturbance filter's ``A`` and ``B`` are parameters.
        The path density of the disturbance then carries the Jacobian of the map from the
        white noise to T_d: x_k = (B·T_d' + T_d)/A, so each held sample adds
        log(A/B) (+ a constant) to the negative log-density.  Without it the noise prior
        alone would be minimised by A → ∞.  Use it (with ``bounds="wide"``) on real
        subjects, whose sway intensity is not the paper's subject's.
    """
    trials = [trials] if isinstance(trials, co.Trial) else list(trials)
    means = [float(np.nanmean(t["cop"])) for t in trials if "cop" in t]
    if cop_offset == "auto":
        cop_offset = bool(means) and max(abs(v) for v in means) > OFFSET_AUTO
    elif not isinstance(cop_offset, bool):
        raise co.ProblemError(f"cip: cop_offset must be True, False or 'auto', got {cop_offset!r}")
    have_td = all("disturbance" in t for t in trials)
    formulation = formulation or ("known" if have_td else "MAP-OM")
    if formulation not in FORMULATIONS:
        raise co.ProblemError(f"cip: formulation must be one of {', '.join(FORMULATIONS)}, got {formulation!r}")
    if not (np.isfinite(cop_noise) and cop_noise > 0):
        raise co.ProblemError(f"cip: cop_noise must be > 0 (it sets the fit weight 1/σ²), got {cop_noise!r}")
    if formulation == "known" and not have_td:
        missing = [t.name for t in trials if "disturbance" not in t]
        raise co.ProblemError(f"cip formulation 'known' needs a 'disturbance' column; missing in {', '.join(missing)}")
    fit = {"cop": 1.0 / cop_noise**2}
    if formulation in ("J_u", "J_S"):
        # the paper's §4.1: a disturbance of the right statistics, not the one that acted
        new = []
        for i, t in enumerate(trials):
            dt = float(np.median(np.diff(t.time)))
            td = surrogate_disturbance(t.num_samples, dt, surrogate_seed + i, filt)
            new.append(co.Trial(t.time, {"cop": t["cop"], "disturbance": td}, name=t.name))
        trials = new
    kind = {"known": "known", "J_u": "known", "J_S": "known", "J_T": "rate", "MAP": "filtered",
            "MAP-OM": "filtered"}[formulation]
    if fit_disturbance and formulation not in ("MAP", "MAP-OM"):
        raise co.ProblemError(f"cip: fit_disturbance needs formulation 'MAP' or 'MAP-OM', got {formulation!r}")
    offset = float(np.mean(means)) if cop_offset and kind == "filtered" else None
    mdl = model(kind, body=body, filt=filt, bounds=bounds, cop_offset=offset, fit_disturbance=fit_disturbance)
    prob = co.Problem(mdl, trials, fit={} if formulation == "J_S" else fit, name="cip")
    _b, _f = _body(body, filt)
    if formulation == "J_S":
        prob.add_trajectory_objective(sdf_objective(max_lag=sdf_max_lag, lag_step=sdf_lag_step), ["cop"], name="J_S")
    elif formulation == "J_T":
        dt = float(np.median(np.diff(trials[0].time)))
        r = mdl.variable("disturbance_rate").symbol
        prob.add_regularization(r, weight=dt, integral=False, name="J_T")
    elif formulation in ("MAP", "MAP-OM"):
        x = mdl.variable("noise").symbol
        prob.add_regularization(x, weight=1.0, integral=False, name="white_noise_prior")
        if formulation == "MAP-OM":
            prob.add_onsager_machlup()
        if fit_disturbance:
            amp, tau = mdl.variable("A").symbol, mdl.variable("B").symbol
            prob.add_objective(ca.log(amp) - ca.log(tau), integral=False, name="noise_jacobian")
    w = mdl.variable("sway_integral").symbol
    for i, t in enumerate(prob.trials):
        prob.add_point_constraint(w, t.time[0], 0.0, 0.0, trial=i, name="integral_starts_at_zero")
        if offset is not None:  # the start is built about the ankle
            t = co.Trial(t.time, {"cop": t["cop"] - offset}, name=t.name, missing=t.missing)
        guess = initial_trajectories(t, body=body, filt=filt)
        for name in mdl.element_names("state") + mdl.element_names("free_input"):
            prob.set_guess(name, (lambda times, tt=t.time, y=guess[name]: np.interp(times, tt, y)), trial=i)
    return prob


def jt_inverse_dynamics(trial: co.Trial, *, cutoff: float = 0.5, body: Mapping[str, float] | None = None,
                        bounds: Mapping[str, tuple] | str | None = None) -> dict:
    """The paper's J_T procedure (§2.3): COM from the Butterworth-filtered COP (Benda et al.
    1994), T_d by inverse dynamics (eq. 18), gains minimising ½∫T_d'² dt (eq. 19).

    T_d' = I u''' + K_D u'' + (K_P − m g h) u' + K_I u is linear in the gains, so the
    minimiser the paper approached by steepest descent is a bounded linear least-squares
    problem, solved here exactly.  ``cutoff`` (Hz) of the 4th-order zero-phase filter is
    not given in the paper; 0.5 Hz is our choice (the COP→COM corner is 0.41 Hz).

    Returns
    -------
    dict with ``parameters``, ``objective`` (J_T, N²·m²/s), ``disturbance`` (N·m) and
    ``sway`` (rad).
    """
    b, _ = _body(body)
    rng = gain_bounds(bounds, body)
    dt = float(np.median(np.diff(trial.time)))
    u = lowpass(trial["cop"], dt, cutoff) / b["h"]
    du = derivative(u, dt)
    d2u = derivative(u, dt, order=2)
    d3u = derivative(d2u, dt)
    mgh = b["m"] * b["g"] * b["h"]
    q = np.full(u.size, dt)  # rectangle rule, as J = ½ Σ Ṫ_d² dt
    sw = np.sqrt(q)
    Amat = np.column_stack([du, u, d2u]) * sw[:, None]  # columns KP, KI, KD
    rhs = -(b["I"] * d3u - mgh * du) * sw
    scale = np.array([_SCALES[k] for k in GAINS])
    lo = np.array([rng[k][0] for k in GAINS]) / scale
    hi = np.array([rng[k][1] for k in GAINS]) / scale
    sol = scipy.optimize.lsq_linear(Amat * scale, rhs, bounds=(lo, hi), method="bvls")
    gains = dict(zip(GAINS, (sol.x * scale).tolist()))
    w = cumulative_integral(u, dt)
    td = b["I"] * d2u + gains["KD"] * du + (gains["KP"] - mgh) * u + gains["KI"] * w
    objective = 0.5 * float(np.sum((Amat @ (sol.x * scale) - rhs) ** 2))
    return {"parameters": gains, "objective": objective, "disturbance": td, "sway": u}
