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

import numpy as np

import colloc as co

__all__ = ["COLUMNS", "DEFAULT_DATA", "GUESS", "KNOWN", "NAMES", "TRUE", "FesTrial", "clock_u", "hybrid_model",
           "identify", "load_trial", "make_trial", "problem", "simulate", "write_trial"]

#: Seed-case parameter values (contract §2 `fes-muscle`).
TRUE = {"F0": 600.0, "k0": 3.0e4, "U_p": 25.0, "U_m": -8.0, "tau": 0.005, "tau1": 0.020, "tau2": 0.040}
#: Unknowns in result order.
NAMES = ("F0", "k0", "U_p", "U_m", "tau", "tau1", "tau2")
#: Known constants: L_c0 (m), k_s (N/m).
KNOWN = {"L_c0": 0.10, "k_s": 2.0e5}
#: A poor default guess (every parameter off by 30–100 %).
GUESS = {"F0": 400.0, "k0": 5.0e4, "U_p": 15.0, "U_m": -4.0, "tau": 0.010, "tau1": 0.030, "tau2": 0.025}
COLUMNS = ("time", "force", "pulse", "alpha")
DEFAULT_DATA = ("fes_muscle",)
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
