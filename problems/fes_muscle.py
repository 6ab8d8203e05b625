"""A muscle under functional electrical stimulation (Wieber & Billet 2006, §4; El Makssoud 2005).

Isometric contraction (ε̇ = 0) of a contractile element in series with a linear spring, eqs. (8)–(10):

    k̇_c = −(|u| + |ε̇_c|)·k_c + α·k0·|u|₊
    Ḟ_c = −(|u| + |ε̇_c|)·F_c + α·F0·|u|₊ + k_c·L_c0·ε̇_c
    Ḟ_c = k_s·(L0·ε̇ − L_c0·ε̇_c) = −k_s·L_c0·ε̇_c          (isometric)

The last two are intersected (§4.2, Fig. 3) in closed form.  With R = α·F0·|u|₊ − |u|·F_c and
K·L = (k_s + k_c)·L_c0: the element shortens (ε̇_c < 0) when R > 0, with
ε̇_c = −R / (K·L + F_c), and lengthens otherwise, with ε̇_c = −R / (K·L − F_c).  The measured
force is F_c (the state ``force``).

Calcium clock (§4.1, Fig. 2, contract `fes-muscle`): pulse k at t_k starts a cycle at t_k + τ;
u = U_p for τ1, then falls linearly to 0 over τ2, then U_m until the next cycle, which
interrupts the current one wherever it is.  u = U_m before the first cycle; k_c = F_c = 0 at t = 0.

As a :class:`colloc.HybridModel` (one per record: its pulse times and α): modes
``{rest, plateau, fall} × {short, long}`` (clock × contractile element); the clock's modes are
entered by the time events ``cycle`` (at t_k + τ) and by the timed modes ``plateau`` (τ1) and
``fall`` (τ2); the element's by one :class:`colloc.Switch` watching R / F0.  It is fitted by
``co.solve(problem(trials), co.Radau(degree=3))``: the library's timed hybrid fit, phases
between the clock's events (:mod:`colloc.transcription.hybrid_events`).

Unknowns (names in results): ``F0, k0, U_p, U_m, tau, tau1, tau2``; L_c0 and k_s known.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import casadi as ca
import numpy as np

import colloc as co

__all__ = ["BOUNDS", "COLUMNS", "DEFAULT_DATA", "DEFAULT_METHOD", "DESCRIPTIONS", "GUESS", "IPOPT_OPTIONS", "KNOWN",
           "MAX_STEP", "NAMES", "NOISE_FLOOR", "STATE_NAMES", "TRUE", "UNITS", "clock_u", "default_method",
           "element_rates", "force_noise", "hybrid_model", "load_trial", "make_trial", "problem", "simulate",
           "write_trial"]

#: Seed-case parameter values (contract §2 `fes-muscle`).
TRUE = {"F0": 600.0, "k0": 3.0e4, "U_p": 25.0, "U_m": -8.0, "tau": 0.005, "tau1": 0.020, "tau2": 0.040}
#: Unknowns in result order.
NAMES = ("F0", "k0", "U_p", "U_m", "tau", "tau1", "tau2")
#: Known constants: L_c0 (m), k_s (N/m).
KNOWN = {"L_c0": 0.10, "k_s": 2.0e5}
#: A poor default guess (every parameter off by 30–100 %).
GUESS = {"F0": 400.0, "k0": 5.0e4, "U_p": 15.0, "U_m": -4.0, "tau": 0.010, "tau1": 0.030, "tau2": 0.025}
#: Search ranges; τ ≥ 0 (no delay) is the only limit of the model.
BOUNDS = {"F0": (1.0, 1e5), "k0": (1.0, 1e7), "U_p": (0.1, 1e3), "U_m": (-1e3, -1e-3), "tau": (0.0, 0.05),
          "tau1": (1e-3, 0.5), "tau2": (1e-3, 0.5)}
COLUMNS = ("time", "force", "pulse", "alpha")
#: States: the contractile element's stiffness k_c (N/m) and its force F_c, measured (N).
STATE_NAMES = ("k_c", "force")
#: The demo's records (``colloc demo --problem fes-muscle``): the four noisy trains (σ = 2 N), as a
#: user's measured records are; their clean copies are the same trains, not more experiments.
DEFAULT_DATA = tuple(("fes_muscle", f"noisy_{f}hz.csv") for f in (10, 20, 30, 50))
CLOCK = ("rest", "plateau", "fall")
#: Units and meanings of :data:`NAMES` and the states (contract §2 `fes-muscle`; Wieber & Billet 2006 §4).
UNITS = {"F0": "N", "k0": "N/m", "U_p": "1/s", "U_m": "1/s", "tau": "s", "tau1": "s", "tau2": "s",
         "force": "N", "k_c": "N/m"}
DESCRIPTIONS = {"F0": "maximal isometric force", "k0": "maximal stiffness of the contractile element",
                "U_p": "calcium rate while the clock is up", "U_m": "calcium rate at rest (< 0)",
                "tau": "delay from pulse to cycle start", "tau1": "plateau of the calcium clock",
                "tau2": "linear fall of the calcium clock"}
#: The least force noise assumed (N): a clean record is judged as if this noisy (the fit of the
#: shipped clean records leaves residuals of ~1e-6 N rms, their rounding to nine digits).
NOISE_FLOOR = 1e-3
#: The longest collocation interval (s): two samples at 1 kHz.
MAX_STEP = 0.002
#: ``colloc identify fes-muscle`` without ``--method``: Radau degree 3.
DEFAULT_METHOD = "radau3"
#: The clock times are fitted to ~1e-11 s on clean records: IPOPT's tolerance tight.
IPOPT_OPTIONS = {"tol": 1e-12}
#: Scale of the collocation unknowns: k_c (N/m), F_c (N).
STATE_SCALE = {"k_c": 1e4, "force": 300.0}


def clock_u(clock: str, t, t0, p):
    """Calcium concentration u in clock mode ``clock`` entered at ``t0`` (§4.1, Fig. 2)."""
    if clock == "rest":
        return p["U_m"] + 0.0 * t
    if clock == "plateau":
        return p["U_p"] + 0.0 * t
    return p["U_p"] * (1.0 - (t - t0) / p["tau2"])


def element_rates(clock: str, u, k_c, F_c, alpha, p, shortening: bool):
    """(k̇_c, Ḟ_c) of eqs. (8)–(10) on one side of the contractile switch; u ≥ 0 in plateau and
    fall, u = U_m < 0 at rest (so |u|₊ and |u| follow the clock, for numbers and symbols)."""
    up, ua = (0.0 * u, -u) if clock == "rest" else (u, u)
    R = alpha * p["F0"] * up - ua * F_c
    KL = (p["k_s"] + k_c) * p["L_c0"]
    e = -R / (KL + F_c) if shortening else -R / (KL - F_c)
    abs_e = -e if shortening else e
    return [-(ua + abs_e) * k_c + alpha * p["k0"] * up, -p["k_s"] * p["L_c0"] * e]


def hybrid_model(pulse_times: Sequence[float], alpha=1.0, time: Sequence[float] | None = None) -> co.HybridModel:
    """The muscle as a hybrid model for one record: pulses at ``pulse_times``; ``alpha`` a
    constant, or its samples at ``time`` (linear between them).  Its parameters are
    :data:`NAMES`; :data:`KNOWN` is built in."""
    alpha_at: Callable[[Any], Any]
    if np.ndim(alpha) == 0:
        a = float(alpha)
        alpha_at = (lambda t: a)
    else:
        table = ca.interpolant("alpha", "linear", [np.asarray(time, dtype=float)], np.asarray(alpha, dtype=float))
        alpha_at = (lambda t: table(t) if isinstance(t, ca.SX | ca.MX) else float(table(t)))
    pulses = [float(t) for t in pulse_times]

    def rhs_for(clock: str, shortening: bool):
        def rhs(t, x, p, t0):
            P = {**KNOWN, **p}
            return element_rates(clock, clock_u(clock, t, t0, P), x[0], x[1], alpha_at(t), P, shortening)
        return rhs

    modes = []
    for c in CLOCK:
        for s in ("short", "long"):
            duration = {"plateau": (lambda p: p["tau1"]), "fall": (lambda p: p["tau2"])}.get(c)
            then = {"plateau": "fall", "fall": "rest"}.get(c)
            modes.append(co.Mode(f"{c}-{s}", rhs_for(c, s == "short"), duration=duration,
                                 then=None if then is None else f"{then}-{s}"))

    def contraction(t, x, p, mode, t0):  # R / F0 (1/s): > 0 shortening, < 0 lengthening (one watched function)
        u = float(clock_u(mode.split("-")[0], t, t0, p))
        return (alpha_at(t) * p["F0"] * max(u, 0.0) - abs(u) * x[1]) / p["F0"]

    switch = co.Switch("contraction", contraction, above=[f"{c}-short" for c in CLOCK],
                       below=[f"{c}-long" for c in CLOCK], to_below=lambda m: m.replace("-short", "-long"),
                       to_above=lambda m: m.replace("-long", "-short"), with_mode=True)
    cycle = co.TimeEvent("cycle", lambda p: [t + p["tau"] for t in pulses],
                         target=lambda m: "plateau-" + m.split("-")[1])
    return co.HybridModel("fes-muscle", list(STATE_NAMES), modes, "rest-long", switches=[switch],
                          time_events=[cycle], parameters=NAMES)


def _model_of(trial: co.Trial) -> co.HybridModel:
    time, alpha = trial.time, np.asarray(trial["alpha"], dtype=float)
    pulses = time[np.asarray(trial["pulse"]).astype(bool)]
    return hybrid_model(pulses, float(alpha[0]) if np.all(alpha == alpha[0]) else alpha, time)


def simulate(params: Mapping[str, float], time, pulse, alpha, *, rtol: float = 1e-12, atol: float = 1e-10,
             full: bool = False):
    """Force F_c (N) at the sample ``time`` by the event-driven simulator
    (:func:`colloc.simulate_hybrid`); pulses where ``pulse`` is 1; α linearly interpolated
    between samples.  ``full=True`` returns the :class:`colloc.HybridSimulation` too."""
    time = np.asarray(time, dtype=float)
    trial = co.Trial(time, {"pulse": np.asarray(pulse, dtype=float), "alpha": np.asarray(alpha, dtype=float)})
    p = {k: float(params[k]) for k in NAMES}
    sim = co.simulate_hybrid(_model_of(trial), [0.0, 0.0], (time[0], time[-1]), p, t_eval=time, rtol=rtol, atol=atol)
    force = sim.x[:, 1]
    return (force, sim) if full else force


def load_trial(path, missing: str = "error") -> co.Trial:
    """Read a `fes-muscle` CSV (columns ``time, force, pulse, alpha``).  A pulse other than
    0/1 or an α outside [0, 1] raises :class:`colloc.DataError` naming file, column and row."""
    if missing != "error":
        raise co.OptionsError("fes-muscle: --missing allow is not supported (every sample needs force, pulse and alpha)")
    trial = co.Trial.from_csv(path, required=COLUMNS[1:], min_rows=3)
    for col, ok, what in (("pulse", lambda v: (v == 0) | (v == 1), "0 or 1"),
                          ("alpha", lambda v: (v >= 0) & (v <= 1), "in [0, 1]")):
        values = np.asarray(trial[col], dtype=float)
        bad = np.flatnonzero(~ok(values))
        if bad.size:
            i = int(bad[0])
            raise co.DataError(f"{path}: column {col!r}, row {i + 1} (line {i + 2} of the file): "
                               f"{values[i]!r} is not {what}")
    return trial.renamed(Path(path).name)


def make_trial(frequency: float, *, alpha: float = 1.0, duration: float = 2.0, rate: float = 1000.0,
               first: float = 0.1, last: float = 1.4, noise_std: float = 0.0, seed: int = 0,
               params: Mapping[str, float] = TRUE, name: str | None = None) -> co.Trial:
    """A synthetic record: pulses every 1/``frequency`` s (at sample times) from ``first`` to
    ``last``, force by the event-driven simulator, seeded Gaussian noise of σ = ``noise_std`` N."""
    n = round(duration * rate)
    time = np.arange(n + 1) / rate
    pulse = np.zeros(n + 1)
    pulse[np.arange(round(first * rate), round(last * rate) + 1, round(rate / frequency))] = 1
    alphas = np.full(n + 1, float(alpha))
    force = simulate(params, time, pulse, alphas)
    force = force + np.random.default_rng(seed).normal(0.0, noise_std, force.shape) if noise_std else force
    return co.Trial(time, {"force": force, "pulse": pulse, "alpha": alphas}, name=name or f"{frequency:g}hz")


def write_trial(trial: co.Trial, path) -> None:
    """Write a record as a `fes-muscle` CSV, atomically."""
    rows = ["time,force,pulse,alpha"] + [f"{t:.3f},{f:.9g},{int(u)},{a:.6g}" for t, f, u, a in
                                         zip(trial.time, trial["force"], trial["pulse"], trial["alpha"])]
    co.write_atomic(path, "\n".join(rows) + "\n")


def force_noise(force: np.ndarray) -> float:
    """The noise σ (N) of a force record sampled finely, at least :data:`NOISE_FLOOR`: from its
    third differences, which leave the noise (their variance 20σ²) and remove a smooth signal,
    by the median absolute deviation (robust to the kinks at the clock's events)."""
    d3 = np.diff(np.asarray(force, dtype=float), 3)
    return max(1.4826 * float(np.median(np.abs(d3 - np.median(d3)))) / float(np.sqrt(20.0)), NOISE_FLOOR)


def default_method(trials: Sequence[co.Trial], options: Mapping) -> str:
    """``colloc identify fes-muscle`` (or a batch row) without ``--method``: :data:`DEFAULT_METHOD`."""
    return DEFAULT_METHOD


def problem(trials: co.Trial | Sequence[co.Trial], guess: Mapping[str, float] | None = None) -> co.HybridProblem:
    """The identification of :data:`NAMES` from isometric records sharing them: one
    :func:`hybrid_model` per record, the muscle at rest at t = 0, the force fitted by
    unweighted least squares and judged against each record's noise (:func:`force_noise`);
    ``guess`` (default :data:`GUESS`)."""
    trials = [trials] if isinstance(trials, co.Trial) else list(trials)
    return co.HybridProblem([_model_of(t) for t in trials], trials,
                            guess={**GUESS, **(guess or {})}, bounds=BOUNDS, fit={"force": 1.0},
                            initial_state={"k_c": 0.0, "force": 0.0}, known_initial_state=True, max_step=MAX_STEP,
                            state_scale=STATE_SCALE, noise={"force": force_noise}, units=UNITS,
                            descriptions=DESCRIPTIONS, limits={n: (n == "tau", False) for n in NAMES},
                            start_states=_start_states)


def _start_states(trial: co.Trial, t: np.ndarray) -> np.ndarray:
    """Start values at ``t``: the measured force, and k_c in proportion to it (k0 ≈ 3e4 N/m at α·F0)."""
    force = np.interp(t, trial.time, trial["force"])
    return np.vstack([force / max(float(np.max(trial["force"])), 1.0) * 3e4 * np.interp(t, trial.time, trial["alpha"]),
                      force])

