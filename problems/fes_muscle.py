"""A muscle under functional electrical stimulation (Wieber & Billet 2006, §4; El Makssoud 2005).

Isometric contraction (ε̇ = 0) of a contractile element in series with a linear spring, eqs. (8)–(10):

    k̇_c = −(|u| + |ε̇_c|)·k_c + α·k0·|u|₊
    Ḟ_c = −(|u| + |ε̇_c|)·F_c + α·F0·|u|₊ + k_c·L_c0·ε̇_c
    Ḟ_c = k_s·(L0·ε̇ − L_c0·ε̇_c) = −k_s·L_c0·ε̇_c          (isometric)

The last two are intersected (§4.2, Fig. 3) in closed form.  With R = α·F0·|u|₊ − |u|·F_c and
K·L = (k_s + k_c)·L_c0: the element shortens (ε̇_c < 0) when R > 0, with
ε̇_c = −R / (K·L + F_c), and lengthens otherwise, with ε̇_c = −R / (K·L − F_c) (a unique
intersection needs K·L > F_c, checked).  The measured force is F_c.

Calcium clock (§4.1, Fig. 2, contract `fes-muscle`): pulse k at t_k starts a cycle at t_k + τ;
u = U_p for τ1, then falls linearly to 0 over τ2, then U_m until the next cycle, which
interrupts the current one wherever it is.  u = U_m before the first cycle; k_c = F_c = 0 at t = 0.

As a :class:`colloc.HybridModel` (names in :func:`hybrid_model`): modes
``{rest, plateau, fall} × {short, long}`` (clock × contractile element); the clock's modes
are entered by the time events ``cycle`` (at t_k + τ) and by the timed modes ``plateau``
(τ1) and ``fall`` (τ2); the element's modes by one :class:`colloc.Switch` watching R / F0.

Unknowns (names in results): ``F0, k0, U_p, U_m, tau, tau1, tau2``; L_c0 and k_s known.
Seed-case values (contract): τ = 0.005 s, τ1 = 0.020 s, τ2 = 0.040 s, U_p = 25 s⁻¹,
U_m = −8 s⁻¹, k0 = 3.0e4 N/m, F0 = 600 N, L_c0 = 0.10 m, k_s = 2.0e5 N/m.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import casadi as ca
import numpy as np

import colloc as co

__all__ = ["COLUMNS", "DEFAULT_DATA", "DEFAULT_METHOD", "DESCRIPTIONS", "default_method", "GUESS", "KNOWN", "NAMES", "TRUE", "UNITS", "SIGNAL_UNITS", "NOISE_FLOOR", "FesTrial",
           "clock_u", "force_noise", "hybrid_model", "identify", "identify_result", "identify_smoothed", "load_trial", "make_trial", "problem", "simulate", "simulate_smoothed", "smoothed_rates",
           "write_trial"]

#: Seed-case parameter values (contract §2 `fes-muscle`).
TRUE = {"F0": 600.0, "k0": 3.0e4, "U_p": 25.0, "U_m": -8.0, "tau": 0.005, "tau1": 0.020, "tau2": 0.040}
#: Unknowns in result order.
NAMES = ("F0", "k0", "U_p", "U_m", "tau", "tau1", "tau2")
#: Known constants: L_c0 (m), k_s (N/m).
KNOWN = {"L_c0": 0.10, "k_s": 2.0e5}
#: A poor default guess (every parameter off by 30–100 %).
GUESS = {"F0": 400.0, "k0": 5.0e4, "U_p": 15.0, "U_m": -4.0, "tau": 0.010, "tau1": 0.030, "tau2": 0.025}
COLUMNS = ("time", "force", "pulse", "alpha")
#: The demo's records (``colloc demo --problem fes-muscle``): the four noisy trains (σ = 2 N), as a
#: user's measured records are; their clean copies are the same trains, not more experiments.
DEFAULT_DATA = tuple(("fes_muscle", f"noisy_{f}hz.csv") for f in (10, 20, 30, 50))
CLOCK = ("rest", "plateau", "fall")


@dataclass(frozen=True)
class FesTrial:
    """One isometric record: sample ``time`` (s), ``force`` (N), pulse flags, α per sample."""

    name: str
    time: np.ndarray
    force: np.ndarray
    pulse: np.ndarray
    alpha: np.ndarray
    source: str = ""

    @property
    def pulse_times(self) -> np.ndarray:
        return self.time[self.pulse.astype(bool)]

    def renamed(self, name: str) -> FesTrial:
        return FesTrial(name, self.time, self.force, self.pulse, self.alpha, self.source)


def _p(params: Mapping[str, float]) -> dict:
    return {**KNOWN, **{k: float(params[k]) for k in NAMES}}


def clock_u(clock: str, t, t0, p):
    """Calcium concentration u in clock mode ``clock`` entered at ``t0`` (§4.1, Fig. 2)."""
    if clock == "rest":
        return p["U_m"] + 0.0 * t
    if clock == "plateau":
        return p["U_p"] + 0.0 * t
    return p["U_p"] * (1.0 - (t - t0) / p["tau2"])


def element_rates(u, k_c, F_c, alpha, p, shortening: bool):
    """(k̇_c, Ḟ_c) of eqs. (8)–(10) for a given side of the contractile switch."""
    up, ua = max(u, 0.0), abs(u)
    R = alpha * p["F0"] * up - ua * F_c
    KL = (p["k_s"] + k_c) * p["L_c0"]
    e = -R / (KL + F_c) if shortening else -R / (KL - F_c)
    abs_e = -e if shortening else e
    return -(ua + abs_e) * k_c + alpha * p["k0"] * up, -p["k_s"] * p["L_c0"] * e


def hybrid_model(pulse_times: Sequence[float], alpha=1.0) -> co.HybridModel:
    """The muscle as a hybrid model for one record: pulses at ``pulse_times``; ``alpha`` a
    constant or a function of time.  Parameters are a dict with :data:`NAMES` and :data:`KNOWN`."""
    alpha_at = alpha if callable(alpha) else (lambda t, a=float(alpha): a)
    pulses = np.asarray(pulse_times, dtype=float)

    def rhs_for(clock: str, shortening: bool):
        def rhs(t, x, p, t0):
            u = float(clock_u(clock, t, t0, p))
            return np.array(element_rates(u, x[0], x[1], alpha_at(t), p, shortening))
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
    cycle = co.TimeEvent("cycle", lambda p: pulses + p["tau"], target=lambda m: "plateau-" + m.split("-")[1])
    model = co.HybridModel("fes-muscle", ["k_c", "F_c"], modes, "rest-long", switches=[switch],
                           time_events=[cycle], parameters=NAMES)
    return model


def simulate(params: Mapping[str, float], time, pulse, alpha, *, rtol: float = 1e-12, atol: float = 1e-10,
             full: bool = False):
    """Force F_c (N) at the sample ``time`` by the event-driven simulator
    (:func:`colloc.simulate_hybrid`); pulses where ``pulse`` is 1; α linearly interpolated
    between samples.  ``full=True`` returns the :class:`colloc.HybridSimulation` too."""
    time = np.asarray(time, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    p = _p(params)
    pulses = time[np.asarray(pulse).astype(bool)]
    a = float(alpha[0]) if np.all(alpha == alpha[0]) else (lambda t: float(np.interp(t, time, alpha)))
    sim = co.simulate_hybrid(hybrid_model(pulses, a), [0.0, 0.0], (time[0], time[-1]), p, t_eval=time,
                             rtol=rtol, atol=atol)
    force = sim.x[:, 1]
    return (force, sim) if full else force


def load_trial(path, missing: str = "error") -> FesTrial:
    """Read a `fes-muscle` CSV (columns ``time, force, pulse, alpha``).  A pulse other than
    0/1 or an α outside [0, 1] raises :class:`colloc.DataError` naming file, column and row."""
    if missing != "error":
        raise co.OptionsError("fes-muscle: --missing allow is not supported (every sample needs force, pulse and alpha)")
    trial = co.Trial.from_csv(path, required=COLUMNS[1:], min_rows=3)
    time = np.asarray(trial.time, dtype=float)
    cols = {c: np.asarray(trial.signals[c], dtype=float) for c in COLUMNS[1:]}
    for col, ok, what in (("pulse", lambda v: (v == 0) | (v == 1), "0 or 1"),
                          ("alpha", lambda v: (v >= 0) & (v <= 1), "in [0, 1]")):
        bad = np.flatnonzero(~ok(cols[col]))
        if bad.size:
            i = int(bad[0])
            raise co.DataError(f"{path}: column {col!r}, row {i + 1} (line {i + 2} of the file): "
                               f"{cols[col][i]!r} is not {what}")
    return FesTrial(Path(path).name, time, cols["force"], cols["pulse"].astype(int), cols["alpha"], str(path))


def make_trial(frequency: float, *, alpha: float = 1.0, duration: float = 2.0, rate: float = 1000.0,
               first: float = 0.1, last: float = 1.4, noise_std: float = 0.0, seed: int = 0,
               params: Mapping[str, float] = TRUE, name: str | None = None) -> FesTrial:
    """A synthetic record: pulses every 1/``frequency`` s (at sample times) from ``first`` to
    ``last``, force by the event-driven simulator, seeded Gaussian noise of σ = ``noise_std`` N."""
    n = int(round(duration * rate))
    time = np.arange(n + 1) / rate
    pulse = np.zeros(n + 1, dtype=int)
    k = np.arange(int(round(first * rate)), int(round(last * rate)) + 1, int(round(rate / frequency)))
    pulse[k] = 1
    alphas = np.full(n + 1, float(alpha))
    force = simulate(params, time, pulse, alphas)
    force = force + np.random.default_rng(seed).normal(0.0, noise_std, force.shape) if noise_std else force
    return FesTrial(name or f"{frequency:g}hz", time, force, pulse, alphas)


def write_trial(trial: FesTrial, path) -> None:
    """Write a record as a `fes-muscle` CSV, atomically."""
    rows = ["time,force,pulse,alpha"] + [f"{t:.3f},{f:.9g},{int(u)},{a:.6g}" for t, f, u, a in
                                         zip(trial.time, trial.force, trial.pulse, trial.alpha)]
    co.write_atomic(path, "\n".join(rows) + "\n")


# ---------------------------------------------------------------------------------------------
# identification by multi-phase collocation


def _phases(trial: FesTrial, P: dict, guess: dict, h_max: float, counts: Sequence[int] | None = None):
    """Phases of one record for the clock structure at ``guess``: per cycle, plateau for
    min(τ1, T_k), fall for min(τ2, T_k − τ1)₊, rest for the remainder (T_k = time to the next
    cycle, parameter-free since every cycle is shifted by the same τ).  Also the linear
    constraints ``c ≥ 0`` that keep that structure.  ``counts``: the interval counts of the
    previous round's phases, kept wherever the step stays within 25 % of ``h_max``."""
    t_end = float(trial.time[-1])
    pulses = trial.pulse_times
    phases, keep = [], []
    starts = [p_ + P["tau"] for p_ in pulses]
    gstarts = [p_ + guess["tau"] for p_ in pulses]

    def add(mode, a, b, a_num, b_num):
        n = max(1, int(np.ceil((b_num - a_num) / h_max - 1e-3)))  # (up to 0.1 % over h_max: no flip-flop at a multiple)
        i = len(phases)
        if counts is not None and i < len(counts) and 0.5 * h_max < (b_num - a_num) / counts[i] <= 1.25 * h_max:
            n = counts[i]  # hysteresis: a phase whose length crosses a multiple of h_max keeps its count
        phases.append(co.Phase(mode, a, b, n))

    if not len(pulses):
        add("rest", 0.0, t_end, 0.0, t_end)
        return phases, keep
    add("rest", 0.0, starts[0], 0.0, gstarts[0])
    for k, (c, gc) in enumerate(zip(starts, gstarts)):
        nxt_known = pulses[k + 1] - pulses[k] if k + 1 < len(pulses) else None
        T = nxt_known if nxt_known is not None else None
        end = c + T if T is not None else t_end
        gend = gc + T if T is not None else t_end
        Tg = gend - gc
        if guess["tau1"] >= Tg:  # plateau only (a fused cycle)
            if T is not None:
                keep.append(P["tau1"] - T)
            add("plateau", c, end, gc, gend)
            continue
        if T is not None:
            keep.append(T - P["tau1"])
        else:
            keep.append((t_end - c) - P["tau1"])
        add("plateau", c, c + P["tau1"], gc, gc + guess["tau1"])
        if guess["tau1"] + guess["tau2"] >= Tg:
            keep.append(P["tau1"] + P["tau2"] - (end - c))
            add("fall", c + P["tau1"], end, gc + guess["tau1"], gend)
            continue
        keep.append((end - c) - P["tau1"] - P["tau2"])
        add("fall", c + P["tau1"], c + P["tau1"] + P["tau2"], gc + guess["tau1"], gc + guess["tau1"] + guess["tau2"])
        add("rest", c + P["tau1"] + P["tau2"], end, gc + guess["tau1"] + guess["tau2"], gend)
    return phases, keep


#: mode flags (rest, plateau, fall) of the single interval Function
_FLAGS = {"rest": (1.0, 0.0, 0.0), "plateau": (0.0, 1.0, 0.0), "fall": (0.0, 0.0, 1.0)}
_STATE_SCALE = np.array([1e4, 300.0])  # k_c (N/m), F_c (N)


def _rates_function(scale: np.ndarray) -> ca.Function:
    """Eqs. (8)–(10) in every clock mode as one CasADi Function ``(x, s, data, q) → ẋ``:
    ``x`` the scaled state, ``s`` the time since the mode's phase began, ``data`` =
    (rest, plateau, fall flags, α), ``q`` the :data:`NAMES` divided by ``scale``.  The
    contractile element shortens while u > 0 (plateau, fall) and lengthens in rest (checked on
    the result by the event-driven simulator)."""
    x, s, data, q = ca.SX.sym("x", 2), ca.SX.sym("s"), ca.SX.sym("data", 4), ca.SX.sym("q", len(NAMES))
    P = {**KNOWN, **{n: q[i] * scale[i] for i, n in enumerate(NAMES)}}
    w_rest, w_plateau, w_fall, alpha = data[0], data[1], data[2], data[3]
    u = w_rest * P["U_m"] + w_plateau * P["U_p"] + w_fall * P["U_p"] * (1 - s / P["tau2"])
    sign = 1 - 2 * w_rest  # +1 shortening (u > 0), -1 lengthening (rest, u = U_m < 0)
    up, ua = (1 - w_rest) * u, sign * u
    k, F = x[0] * _STATE_SCALE[0], x[1] * _STATE_SCALE[1]
    R = alpha * P["F0"] * up - ua * F
    e = -R / ((P["k_s"] + k) * P["L_c0"] + sign * F)
    rates = ca.vertcat(-(ua - sign * e) * k + alpha * P["k0"] * up, -P["k_s"] * P["L_c0"] * e)
    return ca.Function("fes_rates", [x, s, data, q], [rates / _STATE_SCALE])


_CHAINS: dict = {}
#: the structure constraints' relaxation and the rounds' settling tolerance, in units of h_max
SLACK = 1e-3


def _chain(degree: int, scale: np.ndarray) -> co.IntervalChain:
    """The collocation Functions (built once per process and scale, reused by every round)."""
    key = (degree, tuple(scale))
    if key not in _CHAINS:
        _CHAINS[key] = co.IntervalChain(_rates_function(scale), degree)
    return _CHAINS[key]


class _Aff:
    """A time affine in the clock times: ``v = [constant, ∂/∂τ, ∂/∂τ1, ∂/∂τ2]`` (the phases'
    boundaries are); numbers mix in as constants."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = np.asarray(v, dtype=float)

    @staticmethod
    def of(x) -> np.ndarray:
        return x.v if isinstance(x, _Aff) else np.array([float(x), 0.0, 0.0, 0.0])

    def __add__(self, o):
        return _Aff(self.v + _Aff.of(o))

    __radd__ = __add__

    def __sub__(self, o):
        return _Aff(self.v - _Aff.of(o))

    def __rsub__(self, o):
        return _Aff(_Aff.of(o) - self.v)

    def __neg__(self):
        return _Aff(-self.v)


_CLOCK = {"tau": _Aff([0.0, 1.0, 0.0, 0.0]), "tau1": _Aff([0.0, 0.0, 1.0, 0.0]), "tau2": _Aff([0.0, 0.0, 0.0, 1.0])}


def _affine(exprs: np.ndarray, scale: np.ndarray):
    """``(a, b)`` with ``exprs = a + b·q`` for rows [constant, ∂/∂τ, ∂/∂τ1, ∂/∂τ2] of values
    affine in the clock times, ``q`` the scaled unknowns."""
    e = np.asarray(exprs, dtype=float).reshape(-1, 4)
    B = np.zeros((e.shape[0], len(NAMES)))
    B[:, 4:7] = e[:, 1:] * scale[4:7]
    return e[:, 0].copy(), B


def _value(aff, q: np.ndarray) -> np.ndarray:
    return aff[0] + aff[1] @ q


def _layout(trial: FesTrial, cur: dict, h_max: float, chain: co.IntervalChain, scale: np.ndarray,
            previous: co.ChainLayout | None = None) -> co.ChainLayout:
    """The intervals of one record at the estimate ``cur``; with the ``previous`` round's
    layout, a phase keeps its interval count while the phase structure is the same.  Times are
    affine ``(a, b)``: ``a + b·q``; the rates take the time since the phase began
    (``t_rates``); ``keep`` (c ≥ 0) keeps the structure."""
    phases, keep = _phases(trial, _CLOCK, cur, h_max)
    if previous is not None and tuple(ph.mode for ph in phases) == tuple(previous.modes):
        phases, keep = _phases(trial, _CLOCK, cur, h_max, previous.intervals)
    t_abs, h, t_rel, modes = [], [], [], []
    for ph in phases:  # affine rows [constant, ∂/∂τ, ∂/∂τ1, ∂/∂τ2]
        start, end = _Aff.of(ph.start), _Aff.of(ph.end)
        step = (end - start) / ph.intervals
        k = np.arange(ph.intervals)[:, None]
        t_abs.append(start + k * step), t_rel.append(k * step), h.append(np.broadcast_to(step, (ph.intervals, 4)))
        modes += [ph.mode] * ph.intervals
    T, H, Rl = (_affine(np.vstack(v), scale) for v in (t_abs, h, t_rel))
    K = _affine(np.array([_Aff.of(v) for v in keep]), scale)
    if K[0].size:  # every cycle of a regular train repeats the same constraint: keep one of each
        _, first = np.unique(np.round(np.column_stack([K[0], K[1]]), 12), axis=0, return_index=True)
        first = np.sort(first)
        K = (K[0][first], K[1][first])
    # relaxed by SLACK·h_max: a clock time exactly on a structure boundary (τ1 = T at 50 Hz,
    # cycles cut at the end of their plateau) would make the constraint active with a zero
    # multiplier, which IPOPT approaches only linearly; a violation this small changes a phase
    # by at most SLACK·h_max and is within the rounds' own settling tolerance
    K = (K[0] + SLACK * h_max, K[1])
    qv = np.array([cur[n] for n in NAMES]) / scale
    t_num, h_num = _value(T, qv), _value(H, qv)
    # a sample on a boundary (to 1 ns) is read at the start of the later interval, whichever side
    # of it the estimate lies: either is exact, and the choice does not flip from round to round
    interval = np.clip(np.searchsorted(t_num - 1e-9, trial.time, side="right") - 1, 0, len(t_num) - 1)
    alpha = np.interp(t_num + 0.5 * h_num, trial.time, trial.alpha)
    data = np.vstack([np.array([_FLAGS[m] for m in modes]).T, alpha])
    # initial states from the measured force (k_c in proportion to F_c)
    tc = (t_num[:, None] + chain.tau[None, :] * h_num[:, None]).ravel()
    F = np.interp(tc, trial.time, trial.force)
    x_guess = np.vstack([F / max(trial.force.max(), 1.0) * 3e4 * np.interp(tc, trial.time, trial.alpha), F])
    return co.ChainLayout(tuple(ph.mode for ph in phases), tuple(ph.intervals for ph in phases), T, H, data, interval,
                          x_guess / _STATE_SCALE[:, None], t_rates=Rl, keep=K)


def _same_layout(a: co.ChainLayout, b: co.ChainLayout) -> bool:
    """Whether two layouts make the same NLP (the initial guess aside)."""
    arrays = ("t", "h", "t_rates", "keep")
    return (a.interval_modes == b.interval_modes and np.array_equal(a.interval, b.interval) and np.array_equal(a.data, b.data)
            and all(np.array_equal(x, y) for f in arrays for x, y in zip(getattr(a, f), getattr(b, f))))


def _carry(chain: co.IntervalChain, old: co.ChainLayout, xc: np.ndarray, new: co.ChainLayout, qv: np.ndarray,
           scale: np.ndarray) -> np.ndarray:
    """The collocation states (scaled, ``vec`` order) of layout ``new`` read from the solution
    ``xc`` (nx × N·d) on layout ``old``, both at the scaled unknowns ``qv``: the next round
    starts where the last one ended, whatever the intervals became."""
    t_old, t_new, h_new = _value(old.t, qv), _value(new.t, qv), _value(new.h, qv)
    tc = (t_new[:, None] + chain.tau[None, :] * h_new[:, None]).ravel()
    interval = np.clip(np.searchsorted(t_old, tc, side="right") - 1, 0, len(t_old) - 1)
    x = chain.values(np.zeros(chain.nx), ca.DM(xc), interval, tc, old.t, old.h, ca.DM(qv))
    return np.asarray(ca.DM(x).full()).ravel(order="F")


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
        resid.append((states[1, :] - ca.DM(tr.force).T).T)
        if lay.keep[0].size:
            keeps.append(ca.DM(lay.keep[0]) + ca.mtimes(ca.DM(lay.keep[1]), q))
        ws.append(ca.vec(xc))
        # Hessian blocks: one per interval (defects), one per sample (fit)
        lam = ca.reshape(lam_g[g_offset:g_offset + size], nx, n * d)
        p_index = np.arange(len(NAMES))
        blocks.append(chain.defect_block(x0, xc, lay.t_rates, lay.h, lay.data, q, lam, offset, p_index))
        blocks.append(chain.fit_block(x0, xc, lay.interval, tr.time, lay.t, lay.h, q, c_force, tr.force,
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


def identify(trials: Sequence[FesTrial], guess: Mapping[str, float] | None = None, *, h_max: float = 0.002,
             degree: int = 3, max_rounds: int = 8, print_level: int = 0, max_iter: int = 500,
             bounds: Mapping[str, tuple] | None = None) -> dict:
    """Identify :data:`NAMES` from isometric records sharing the parameters, by multi-phase
    Radau collocation: a phase per clock-mode interval, the boundaries t_k + τ, + τ1, + τ2
    moving with the unknowns; the structure (which cycles are cut short by the next pulse) is
    that of the current estimate, kept by linear constraints, and the samples' intervals are
    those of the current estimate: solved again until the clock times settle.  The first
    round (the guess's layout) is solved loosely, so at least two are solved; each later one starts from the last
    solution read onto its own intervals, and from the last primal-dual point as it is when
    only samples changed interval (a phase keeps its interval count while its step stays
    within 25 % of ``h_max``, so the layout stops changing).  The structure constraints are
    relaxed by :data:`SLACK`·``h_max`` (a clock time exactly on a structure boundary, τ1 = T
    for a 50 Hz train, would otherwise be a degenerate active constraint).  The NLP is
    assembled from one CasADi Function per interval (:class:`colloc.IntervalChain`, mapped over
    every interval of every record; built once and reused by every round); exact Hessians.
    Standard errors by the Gauss–Newton covariance s²(JᵀJ)⁻¹, J the sample sensitivities
    (implicit function theorem on the collocation equations).  Returns a dict (parameters,
    standard_errors, success, ..., ``bounds``: those of the unknowns in their units)."""
    import time as _time

    trials = list(trials)
    cur = {**GUESS, **(guess or {})}
    scale = np.array([abs(GUESS[n]) for n in NAMES])
    lo = np.array([1.0, 1.0, 0.1, -1e3, 0.0, 1e-3, 1e-3]) / scale
    hi = np.array([1e5, 1e7, 1e3, -1e-3, 0.05, 0.5, 0.5]) / scale
    for name, (b_lo, b_hi) in (bounds or {}).items():
        k = NAMES.index(name)
        lo[k] = lo[k] if b_lo is None else max(lo[k], b_lo / scale[k])
        hi[k] = hi[k] if b_hi is None else min(hi[k], b_hi / scale[k])
    t_start = _time.perf_counter()
    chain = _chain(degree, scale)
    timing = {"build_s": 0.0, "solve_s": 0.0, "round_iterations": [], "round_clock_moved_s": []}
    rounds = 0
    w_prev, sol, solved = None, None, None
    layouts = [_layout(tr, cur, h_max, chain, scale) for tr in trials]
    for _ in range(max_rounds):
        rounds += 1
        t0 = _time.perf_counter()
        q, w, g_eq, c_keep, r, hess, jac, reads = _nlp(trials, layouts, chain)
        V = ca.vertcat(q, w)
        nlp = {"x": V, "f": 0.5 * ca.sumsqr(r) / r.shape[0], "g": ca.vertcat(g_eq, c_keep)}
        # the first round's layout is that of the guess and is laid again anyway: a loose
        # tolerance; later rounds start from the last solution carried onto their layout
        tol = 1e-12 if w_prev is not None else 1e-6
        extra = {"acceptable_iter": 5, "acceptable_tol": 1e-5 if w_prev is not None else 1e-4, "mu_strategy": "adaptive"}
        # the same phases and intervals as the last round (only samples changed interval):
        # its primal-dual solution is a start for this one as it is
        same = w_prev is not None and all(a.interval_modes == b.interval_modes and len(a.keep[0]) == len(b.keep[0])
                                          for a, b in zip(solved, layouts))
        if same:
            extra.update({"warm_start_init_point": "yes", "mu_init": 1e-9, "warm_start_bound_push": 1e-9,
                          "warm_start_bound_frac": 1e-9, "warm_start_slack_bound_push": 1e-9,
                          "warm_start_slack_bound_frac": 1e-9, "warm_start_mult_bound_push": 1e-9})
        elif w_prev is not None:
            extra.update({"mu_init": 1e-6, "bound_push": 1e-8, "bound_frac": 1e-8})
        opts = co.Ipopt(tol=tol, max_iter=max_iter, print_level=print_level, extra=extra).nlpsol_options()
        solver = ca.nlpsol("fes", "ipopt", nlp, {**opts, "hess_lag": hess, "jac_g": jac})
        timing["build_s"] += _time.perf_counter() - t0
        t0 = _time.perf_counter()
        ng, nk = g_eq.shape[0], c_keep.shape[0]
        if w_prev is None:
            w0 = np.concatenate([lay.x_guess.ravel(order="F") for lay in layouts])
        else:
            w0 = np.concatenate([_carry(chain, old, x, new, qv, scale) for old, x, new in zip(solved, w_prev, layouts)])
        x0 = np.concatenate([np.array([cur[n] for n in NAMES]) / scale, w0])
        lbx = np.concatenate([lo, -np.inf * np.ones(w.shape[0])])
        ubx = np.concatenate([hi, np.inf * np.ones(w.shape[0])])
        duals = {"lam_x0": sol["lam_x"], "lam_g0": sol["lam_g"]} if same else {}
        sol = solver(x0=x0, lbx=lbx, ubx=ubx, lbg=np.zeros(ng + nk),
                     ubg=np.concatenate([np.zeros(ng), np.inf * np.ones(nk)]), **duals)
        timing["solve_s"] += _time.perf_counter() - t0
        stats = solver.stats()
        timing["round_iterations"].append(int(stats["iter_count"]))
        Vv = np.array(sol["x"]).ravel()
        qv = Vv[: len(NAMES)]
        sizes = np.cumsum([0] + [2 * lay.size * chain.degree for lay in layouts]) + len(NAMES)
        w_prev = [Vv[a:b].reshape(2, -1, order="F") for a, b in zip(sizes[:-1], sizes[1:])]
        previous, cur = cur, {n: float(qv[i] * scale[i]) for i, n in enumerate(NAMES)}
        # the samples' phases and intervals were those of the previous estimate: solve again
        # until they no longer change (the NLP would be the same) or the clock times stop
        # moving (well inside one collocation interval)
        solved, layouts = layouts, [_layout(tr, cur, h_max, chain, scale, lay) for tr, lay in zip(trials, layouts)]
        moved = max(abs(cur[n] - previous[n]) for n in ("tau", "tau1", "tau2"))
        timing["round_clock_moved_s"].append(moved)
        settled = rounds > 1 and (moved < SLACK * h_max or all(map(_same_layout, solved, layouts)))
        if stats["success"] and settled:
            break
    t0 = _time.perf_counter()
    cov, se, states, rv, s2 = _gauss_newton(jac, Vv, V, r, reads, ng, scale)
    timing["covariance_s"] = _time.perf_counter() - t0
    return {"problem": "fes-muscle", "parameters": cur, "standard_errors": dict(zip(NAMES, se.tolist())),
            "covariance": cov.tolist(), "success": bool(stats["success"] and settled), "settled": bool(settled), "iterations": int(sum(timing["round_iterations"])),
            "rounds": rounds, "residual_std": float(np.sqrt(s2)), "time_s": _time.perf_counter() - t_start,
            **timing, "samples": len(rv), "variables": int(V.shape[0]), "states": states,
            "objective": float(0.5 * rv @ rv), "status": stats["return_status"],
            "bounds": {n: (float(lo[i] * scale[i]), float(hi[i] * scale[i])) for i, n in enumerate(NAMES)}}


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


# ---------------------------------------------------------------------------------------------
# the same identification without events: a smoothed clock on one uniform mesh (a baseline)


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


def _pulse_data(trial: FesTrial, t: np.ndarray) -> np.ndarray:
    """(the last three pulse times at or before each ``t``, the next one, α at ``t``): 5 × N;
    a missing pulse is placed 1000 s away (its cycle has no effect)."""
    pulses = np.concatenate([[-1e3] * 3, trial.pulse_times, [1e3]])
    i = np.searchsorted(pulses, t, side="right") - 1
    return np.vstack([pulses[i - 2], pulses[i - 1], pulses[i], pulses[i + 1], np.interp(t, trial.time, trial.alpha)])


def simulate_smoothed(params: Mapping[str, float], trial: FesTrial, width: float = 5e-4) -> np.ndarray:
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


def identify_smoothed(trials: Sequence[FesTrial], guess: Mapping[str, float] | None = None, *, h: float = 5e-4,
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
        F = np.interp(tc, tr.time, tr.force)
        x_guess = np.vstack([F / max(tr.force.max(), 1.0) * 3e4 * np.interp(tc, tr.time, tr.alpha), F])
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
    cov, se, states, rv, s2 = _gauss_newton(jac, Vv, V, r, reads, g_eq.shape[0], scale)
    return {"problem": "fes-muscle", "formulation": "smoothed", "parameters": params,
            "standard_errors": dict(zip(NAMES, se.tolist())), "success": bool(stats["success"]),
            "status": stats["return_status"], "iterations": int(stats["iter_count"]), "build_s": build_s,
            "solve_s": solve_s, "time_s": _time.perf_counter() - t_start, "residual_std": float(np.sqrt(s2)),
            "variables": int(V.shape[0]), "samples": len(rv), "states": states, "width_s": width, "h_s": h}


#: Units and meanings of :data:`NAMES` (contract §2 `fes-muscle`; Wieber & Billet 2006 §4).
UNITS = {"F0": "N", "k0": "N/m", "U_p": "1/s", "U_m": "1/s", "tau": "s", "tau1": "s", "tau2": "s"}
DESCRIPTIONS = {"F0": "maximal isometric force", "k0": "maximal stiffness of the contractile element",
                "U_p": "calcium rate while the clock is up", "U_m": "calcium rate at rest (< 0)",
                "tau": "delay from pulse to cycle start", "tau1": "plateau of the calcium clock",
                "tau2": "linear fall of the calcium clock"}
#: Units of the signals: the measured force F_c and the contractile element's stiffness k_c.
SIGNAL_UNITS = {"force": "N", "k_c": "N/m"}
#: The least force noise assumed (N): a clean record is judged as if this noisy (the fit of the
#: shipped clean records leaves residuals of ~1e-6 N rms, their rounding to nine digits).
NOISE_FLOOR = 1e-3
#: ``colloc identify`` methods → Radau degree of the multi-phase collocation.
DEGREES = {"radau2": 2, "radau3": 3}
#: The method when none is named (``colloc identify fes-muscle`` without ``--method``, a batch
#: row without one, :func:`identify_result`): degree 3, that of :func:`identify`.
DEFAULT_METHOD = "radau3"


def force_noise(force: np.ndarray) -> float:
    """The noise σ (N) of a force record sampled finely, at least :data:`NOISE_FLOOR`: from its
    third differences, which leave the noise (their variance 20σ²) and remove a smooth signal,
    by the median absolute deviation (robust to the kinks at the clock's events)."""
    d3 = np.diff(np.asarray(force, dtype=float), 3)
    return max(1.4826 * float(np.median(np.abs(d3 - np.median(d3)))) / float(np.sqrt(20.0)), NOISE_FLOOR)


def default_method(trials: Sequence[FesTrial], options: Mapping) -> str:
    """``colloc identify fes-muscle`` (or a batch row) without ``--method``: :data:`DEFAULT_METHOD`,
    the degree of :func:`identify`, not the other problems' ``radau2``."""
    return DEFAULT_METHOD


def identify_result(trials: Sequence[FesTrial], *, method: str = DEFAULT_METHOD, guess: Mapping[str, float] | None = None,
                    bounds: Mapping[str, tuple] | None = None, max_iter: int = 500, print_level: int = 0,
                    h_max: float = 0.002) -> co.Result:
    """:func:`identify` as a :class:`colloc.Result` (the table, JSON document and plot of
    ``colloc identify``), with the event-driven simulation check of every trial, judged by
    :func:`colloc.finalize`: the fit verdict of each record's residuals against its noise
    (:func:`force_noise`, ``info["noise"]``; the fit itself is unweighted least squares), the
    warnings and the intervals.  ``method``: ``radau3`` (default, :data:`DEFAULT_METHOD`) or
    ``radau2`` (the Radau degree); ``bounds`` narrow the unknowns' bounds, all of them search
    ranges except τ ≥ 0 (no delay), a limit of the model."""
    import time as _time

    import pandas as pd

    if method not in DEGREES:
        raise co.OptionsError(f"--method {method}: fes-muscle is identified by multi-phase Radau collocation; "
                              f"use {' or '.join(DEGREES)}")
    for option, given in (("--guess", guess), ("--bounds", bounds)):
        unknown = [k for k in (given or {}) if k not in NAMES]
        if unknown:
            raise co.OptionsError(f"{option}: unknown parameter(s) {', '.join(unknown)}; parameters: {', '.join(NAMES)}")
    t0 = _time.perf_counter()
    res = identify(trials, guess, degree=DEGREES[method], max_iter=max_iter, print_level=print_level, h_max=h_max,
                   bounds=bounds)
    t_sim = _time.perf_counter()
    trajectories, measurements, residuals, standardized, simulation, noise = {}, {}, {}, {}, {}, {}
    for tr, states in zip(trials, res["states"]):
        index = pd.Index(tr.time, name="time")
        trajectories[tr.name] = pd.DataFrame({"force": states[:, 1], "k_c": states[:, 0]}, index=index)
        measurements[tr.name] = pd.DataFrame({"force": tr.force}, index=index)
        residuals[tr.name] = pd.DataFrame({"force": states[:, 1] - tr.force}, index=index)
        noise[tr.name] = force_noise(tr.force)
        standardized[tr.name] = residuals[tr.name] / noise[tr.name]
        try:
            sim = simulate(res["parameters"], tr.time, tr.pulse, tr.alpha, rtol=1e-10, atol=1e-8)
            span = float(np.ptp(tr.force))
            nrmse = float(np.sqrt(np.mean((sim - tr.force) ** 2)) / span) if span > 0 else float("nan")
            simulation[tr.name] = {"status": "ok", "message": "event-driven simulation (colloc.simulate_hybrid)",
                                   "nrmse": {"force": nrmse}}
        except Exception as exc:  # noqa: BLE001 - reported in the result, not raised
            simulation[tr.name] = {"status": "failed", "message": f"{type(exc).__name__}: {exc}", "nrmse": {}}
    timings = {"build_s": res["build_s"], "solve_s": res["solve_s"], "covariance_s": res["covariance_s"],
               "simulation_s": _time.perf_counter() - t_sim, "total_s": _time.perf_counter() - t0}
    status = res["status"] if res["settled"] else "phases_not_settled"
    message = (f"{res['rounds']} round(s) of phase re-assignment"
               + ("" if res["settled"] else f"; the clock times still moved after {res['rounds']} rounds"))
    cov = pd.DataFrame(res["covariance"], index=list(NAMES), columns=list(NAMES))
    estimate = co.Estimate(problem="fes-muscle", method=method, success=res["success"], status=status,
                       message=message, iterations=res["iterations"], objective=res["objective"],
                       parameters=dict(res["parameters"]), standard_errors=dict(res["standard_errors"]),
                       covariance=cov, trajectories=trajectories, measurements=measurements,
                       residuals=residuals, timings=timings,
                       num_nodes=(res["variables"] - len(NAMES)) // 2, trials=[tr.name for tr in trials],
                       versions=co.versions(), simulation=simulation, units={**UNITS, **SIGNAL_UNITS},
                       info={"rounds": res["rounds"], "round_iterations": res["round_iterations"],
                             "residual_std": res["residual_std"], "noise": noise, "samples": res["samples"],
                             "h_max_s": h_max, "degree": DEGREES[method],
                             "formulation": "multi-phase Radau collocation"},
                       initial_parameters={**GUESS, **(guess or {})}, descriptions=dict(DESCRIPTIONS))
    return co.finalize(estimate, bounds=res["bounds"], physical={n: (n == "tau", False) for n in NAMES},
                       fit={"force": 1.0}, verdict_residuals=standardized,
                       verdict_note="model − measurement divided by the record's force noise σ estimated "
                                    "from its third differences (info['noise']); the fit is unweighted")


def problem(trials):
    """`fes-muscle` is hybrid: it is identified by :func:`identify` (multi-phase collocation),
    not through :class:`colloc.Problem`."""
    raise co.ProblemError("fes-muscle is a hybrid problem: use colloc_problems.fes_muscle.identify_result(trials) "
                          "(what `colloc identify fes-muscle` runs)")
