"""The ``heel-off`` records: the trial type, its CSV files, the synthetic records of the seed
case (:func:`make_trial`, by the simulator of :mod:`colloc_problems.heel_off_simulator`), the
noise read from a record and the mode sequence read from θ_foot and ω_foot
(:func:`detect_modes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import colloc as co

from .heel_off_body import STATE_NAMES, TRUE
from .heel_off_simulator import simulate

__all__ = ["COLUMNS", "DEFAULT_DATA", "DELAY_PULSES", "NOISE_FLOOR", "OPTIONAL_COLUMNS", "PULSES", "SIGMA_OMEGA",
           "SIGMA_THETA", "HeelOffTrial", "detect_modes", "excitation", "load_trial", "make_trial", "noise_sigma",
           "smoothed_trial", "write_trial"]

COLUMNS = ("time", "theta_body", "theta_foot", "platform_acc")
OPTIONAL_COLUMNS = ("omega_body", "omega_foot")
DEFAULT_DATA = ("heel_off", "heel_off.csv")


@dataclass(frozen=True)
class HeelOffTrial:
    """One record: sample ``time`` (s), the states measured (``signals``: name → array; θ's
    always, ω's when given) and ``platform_acc`` (m/s²)."""

    name: str
    time: np.ndarray
    signals: dict
    platform_acc: np.ndarray
    source: str = ""

    def renamed(self, name: str) -> HeelOffTrial:
        return HeelOffTrial(name, self.time, self.signals, self.platform_acc, self.source)


#: Platform pulses of the seed records: (start s, amplitude m/s², duration s), one every 2.5 s;
#: backwards (negative) pulses tip the body onto the toes, forwards ones onto the heels.
PULSES = ((0.5, -6.0, 0.5), (3.0, 3.0, 0.6), (5.5, -7.0, 0.4), (8.0, 2.5, 0.5), (10.5, -5.0, 0.6),
          (13.0, 3.5, 0.5), (15.5, -6.5, 0.45), (18.0, 2.0, 0.6))
#: Platform pulses of the delayed record (τ = :data:`TAU_TRUE`): the seed pulses, backwards ones at
#: 0.8 and forwards ones at 0.3 of their amplitude.  With τ = 0.1 s the pivot phases are far less
#: stable than without delay: the full seed pulses make the foot lose both contacts (at 0.99 s), and
#: so does a forwards pulse of more than ~1 m/s² (the foot tips back onto the heel and falls over).
DELAY_PULSES = tuple((t0, amp * (0.8 if amp < 0 else 0.3), dur) for t0, amp, dur in PULSES)
#: Measurement noise of the seed's noisy records (rad, rad/s); platform_acc is exact.
SIGMA_THETA = float(np.deg2rad(0.1))
SIGMA_OMEGA = float(np.deg2rad(1.0))


def excitation(pulses=PULSES):
    """a(t) (m/s²): a sum of smooth pulses A·sin(2πs)·(1 − cos 2πs)/2, s = (t − t0)/D in [0, 1]
    (each starts and ends with zero acceleration, jerk and snap; the platform ends at rest)."""
    pulses = [tuple(map(float, p)) for p in pulses]

    def acc(t):
        a = 0.0
        for t0, amp, dur in pulses:
            s = (t - t0) / dur
            if 0.0 <= s <= 1.0:
                a += amp * np.sin(2 * np.pi * s) * (1 - np.cos(2 * np.pi * s)) / 2
        return a
    return acc


def make_trial(duration: float = 8.0, *, pulses=PULSES, rate: float = 100.0, noise: bool = True, seed: int = 0,
               params: Mapping[str, float] = TRUE, name: str = "heel_off.csv", omegas: bool = True,
               tau: float | None = None):
    """A synthetic record from rest (foot flat, body upright) by :func:`simulate` with the
    smooth :func:`excitation`; seeded Gaussian noise σ_θ = 0.1°, σ_ω = 1°/s when ``noise``;
    ``tau`` (s) a feedback delay (default: ``params``' ``tau``, else none).
    Returns ``(trial, sim)`` (the simulation holds the true events)."""
    n = int(round(duration * rate))
    time = np.arange(n + 1) / rate
    acc = excitation([p for p in pulses if p[0] < duration])
    params = dict(params) if tau is None else {**params, "tau": float(tau)}
    states, sim = simulate(params, time, None, acc=acc)
    signals = dict(zip(STATE_NAMES, states.T.copy()))
    if noise:
        rng = np.random.default_rng(seed)
        for k in STATE_NAMES:
            signals[k] = signals[k] + rng.normal(0.0, SIGMA_THETA if k.startswith("theta") else SIGMA_OMEGA, n + 1)
    if not omegas:
        signals = {k: v for k, v in signals.items() if k.startswith("theta")}
    return HeelOffTrial(name, time, signals, np.array([acc(t) for t in time])), sim


def load_trial(path, missing: str = "error") -> HeelOffTrial:
    """Read a `heel-off` CSV (``time, theta_body, theta_foot, platform_acc``, optionally
    ``omega_body, omega_foot``); bad files raise :class:`colloc.DataError` naming the problem."""
    if missing != "error":
        raise co.OptionsError("heel-off: --missing allow is not supported (every sample is needed)")
    trial = co.Trial.from_csv(path, required=COLUMNS[1:], optional=OPTIONAL_COLUMNS, min_rows=3)
    time = np.asarray(trial.time, dtype=float)
    signals = {c: np.asarray(trial.signals[c], dtype=float) for c in (*STATE_NAMES,) if c in trial.signals}
    dt = np.diff(time)
    if np.ptp(dt) > 1e-6 * np.mean(dt):
        i = int(np.argmax(np.abs(dt - np.median(dt))))
        raise co.DataError(f"{path}: column 'time', row {i + 2} (line {i + 3} of the file): the samples must be "
                           f"evenly spaced (step {dt[i]:.6g} s, median {np.median(dt):.6g} s)")
    return HeelOffTrial(Path(path).name, time, signals, np.asarray(trial.signals["platform_acc"], dtype=float),
                        str(path))


def write_trial(trial: HeelOffTrial, path) -> None:
    """Write a record as a `heel-off` CSV, atomically."""
    names = [c for c in (*STATE_NAMES,) if c in trial.signals]
    cols = ["time", *names, "platform_acc"]
    data = np.column_stack([trial.time, *[trial.signals[c] for c in names], trial.platform_acc])
    rows = [",".join(cols)] + [f"{r[0]:.4f}," + ",".join(f"{v:.12g}" for v in r[1:]) for r in data]
    co.write_atomic(path, "\n".join(rows) + "\n")


#: The least noise assumed (rad, rad/s): clean records are weighted as if this noisy.
NOISE_FLOOR = {"theta_body": 1e-5, "theta_foot": 1e-5, "omega_body": 1e-4, "omega_foot": 1e-4}


def noise_sigma(y: np.ndarray) -> float:
    """Noise σ of a smooth signal sampled finely, from its second differences (robust)."""
    d2 = np.diff(y, 2)
    return 1.4826 * float(np.median(np.abs(d2 - np.median(d2)))) / np.sqrt(6.0)



def detect_modes(trial: HeelOffTrial, false_alarm: float = 1e-7) -> list[tuple[str, float, float]]:
    """The mode sequence read from θ_foot (and ω_foot when measured): ``[(mode, start, end), ...]``
    with estimated switching times.

    While the foot is flat θ_foot = ω_foot = 0 exactly, so a lift shows as samples inconsistent
    with zero at the noise σ of each signal (estimated from its second differences, at least
    :data:`NOISE_FLOOR`): the sum of (θ_f/σ_θ)² (+ (ω_f/σ_ω)²) over five consecutive samples
    exceeds its χ² quantile at ``false_alarm``, and at least two samples of the stretch are 3σ
    away from zero in one signal (a single outlier is not a lift).  Each stretch is then fitted,
    by weighted least squares on θ_f and ω_f, with a hump that leaves zero with zero speed at the
    lift-off t₀ (the lifted point starts from rest) and returns to zero with a finite speed at
    the landing t₁: θ_f = (t − t₀)²·(t₁ − t)·P(s), s = (t − t₀)/(t₁ − t₀), P a polynomial (degree
    growing with the lift's length); t₀, t₁ by a grid of half samples refined by Nelder–Mead.
    The sign of the hump gives the mode: ``toe`` (heel lifted, θ_f > 0) or ``heel``.  A stretch
    whose hump does not lower the χ² by 25 (5σ) is dropped.  A foot that never lifts is one
    ``flat`` phase."""
    from scipy.optimize import minimize
    from scipy.stats import chi2

    t = np.asarray(trial.time, dtype=float)
    dt = float(t[1] - t[0])
    sig = trial.signals
    th = np.asarray(sig["theta_foot"], dtype=float)
    s_th = max(noise_sigma(th), NOISE_FLOOR["theta_foot"])
    om = np.asarray(sig["omega_foot"], dtype=float) if "omega_foot" in sig else None
    s_om = max(noise_sigma(om), NOISE_FLOOR["omega_foot"]) if om is not None else None
    z2 = (th / s_th) ** 2 + ((om / s_om) ** 2 if om is not None else 0.0)
    zmax = np.maximum(np.abs(th) / s_th, np.abs(om) / s_om if om is not None else 0.0)
    width, dof = 5, 5 * (2 if om is not None else 1)
    stat = np.convolve(z2, np.ones(width), mode="same")
    hot = stat > chi2.isf(false_alarm, dof)
    runs, i = [], 0
    while i < len(t):
        if hot[i]:
            j = i
            while j + 1 < len(t) and (hot[j + 1] or (j + 3 < len(t) and hot[j + 2:j + 4].any())):
                j += 1
            runs.append((i, j))
            i = j + 1
        else:
            i += 1
    lifts = []
    for i0, i1 in runs:
        if np.count_nonzero(zmax[i0:i1 + 1] > 3.0) < 2:
            continue
        lo = max(0, i0 - 8) if not lifts else max(i0 - 8, int(np.searchsorted(t, lifts[-1][2])) + 1)
        hi = min(len(t) - 1, i1 + 8)
        fit = _hump_fit(t[lo:hi + 1], th[lo:hi + 1], s_th, None if om is None else om[lo:hi + 1], s_om,
                        (t[i0], t[i1]), dt, minimize)
        if fit is None:
            continue
        sign, t0, t1, gain = fit
        if gain < 25.0:
            continue
        lo_t = float(t[0]) if not lifts else lifts[-1][2] + 0.5 * dt
        lifts.append(("toe" if sign > 0 else "heel", max(t0, lo_t), min(max(t1, t0 + dt), float(t[-1]) - 0.5 * dt)))
    out, start = [], float(t[0])
    for mode, t0, t1 in lifts:
        if t0 - start < 0.5 * dt or t1 - t0 < 0.5 * dt:
            continue
        out.append(("flat", start, t0))
        out.append((mode, t0, t1))
        start = t1
    out.append(("flat", start, float(t[-1])))
    return out


def _hump_fit(t, th, s_th, om, s_om, span, dt, minimize):
    """Fit θ_f (and ω_f) on the samples ``t`` with the hump of :func:`detect_modes` around the
    stretch ``span``: returns (sign, t₀, t₁, χ² gain over θ_f = 0) or None."""
    n_in = max(2, int(round((span[1] - span[0]) / dt)))
    deg = int(np.clip(n_in // 6, 0, 4))
    y = np.concatenate([th / s_th, om / s_om]) if om is not None else th / s_th
    base = float(y @ y)

    def design(t0, t1):
        L = t1 - t0
        u = np.clip(t - t0, 0.0, None)
        inside = (t > t0) & (t < t1)
        s = u / L
        cols = []
        for k in range(deg + 1):
            f = u ** 2 * (t1 - t) * s ** k
            df = (2 * u * (t1 - t) * s ** k - u ** 2 * s ** k + (k * u ** 2 * (t1 - t) * s ** (k - 1) / L if k else 0.0))
            f, df = np.where(inside, f, 0.0), np.where(inside, df, 0.0)
            cols.append(np.concatenate([f / s_th, df / s_om]) if om is not None else f / s_th)
        return np.column_stack(cols)

    def cost(v):
        t0, t1 = v
        if t1 - t0 < dt:
            return base + 1e6 * (dt - (t1 - t0))
        A = design(t0, t1)
        c, *_ = np.linalg.lstsq(A, y, rcond=None)
        r = y - A @ c
        return float(r @ r)

    g0 = np.arange(span[0] - 3 * dt, span[0] + 3 * dt + 1e-9, dt / 2)
    g1 = np.arange(span[1] - 3 * dt, span[1] + 3 * dt + 1e-9, dt / 2)
    best = min(((cost((a, b)), a, b) for a in g0 for b in g1), key=lambda z: z[0])
    res = minimize(cost, [best[1], best[2]], method="Nelder-Mead",
                   options={"xatol": 1e-4 * dt, "fatol": 1e-9, "initial_simplex": [[best[1], best[2]],
                                                                                    [best[1] + dt / 4, best[2]],
                                                                                    [best[1], best[2] + dt / 4]]})
    t0, t1 = (res.x if res.fun <= best[0] else np.array(best[1:]))
    A = design(t0, t1)
    c, *_ = np.linalg.lstsq(A, y, rcond=None)
    mid = A[: len(t)] @ c
    sign = float(np.sum(mid))
    if sign == 0.0:
        return None
    return np.sign(sign), float(t0), float(t1), base - min(res.fun, best[0])


def smoothed_trial(trial: HeelOffTrial, sequence) -> HeelOffTrial:
    """The record with each signal smoothed inside each phase of ``sequence`` (a cubic
    Savitzky–Golay filter over nine samples, never across a switching time, where ω jumps at
    a landing), θ_f and ω_f set to 0 in the flat phases: nearly a trajectory of the model, whose
    fit converges as a clean record's does (a start for the fit of the record itself)."""
    from scipy.signal import savgol_filter

    t = trial.time
    edges = [s for (_m, s, _e) in sequence[1:]]
    phase = np.searchsorted(np.asarray(edges, float), t, side="right")
    signals = {}
    for name, y in trial.signals.items():
        y = np.asarray(y, dtype=float).copy()
        for k, (mode, _a, _b) in enumerate(sequence):
            idx = np.flatnonzero(phase == k)
            if mode == "flat" and name.endswith("_foot"):
                y[idx] = 0.0
            elif len(idx) >= 5:
                y[idx] = savgol_filter(y[idx], min(9, len(idx) - 1 + len(idx) % 2), 3)
        signals[name] = y
    return HeelOffTrial(trial.name, t, signals, trial.platform_acc, trial.source)
