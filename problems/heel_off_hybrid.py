"""``heel-off`` written as a :class:`colloc.HybridProblem`, fitted by the library's hybrid path
(``co.solve(problem, co.Radau(degree=3))``): the body and foot of
:mod:`colloc_problems.heel_off_multiphase` in three modes, with the platform acceleration a
measured input of the model (exact, or errors-in-variables with its noise σ).

* Modes (states θ_body, θ_foot, ω_body, ω_foot): ``flat`` (the foot held, θ_foot and ω_foot
  constant), ``toe`` (the heel lifted, the foot turning on the toe), ``heel`` (the toe lifted).
* Guards: a lift-off when the normal force of the contact that lets go falls through zero
  (Signorini's law; the forces of ``_mode_pieces``), the foot leaving flat and at rest; a
  landing when θ_foot returns to zero, then the inelastic impact (the foot stops, the body's
  angular momentum about the ankle is kept).  Inside each phase the library keeps every
  watched guard on its side: the held contacts pushing while flat, the lifted point above the
  platform while pivoting.
* The sequence of modes and the start values of the switching times are read from the record
  (:func:`colloc_problems.heel_off_multiphase.detect_modes`); the switching times are unknowns
  bounded by the record.  kp and kd start from the flat-foot equation error (:func:`start_guess`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np

import colloc as co

from .heel_off_multiphase import (
    DESCRIPTIONS,
    GUESS,
    MODES,
    NAMES,
    NOISE_FLOOR,
    STATE_NAMES,
    UNITS,
    HeelOffTrial,
    _impacts,
    _mode_pieces,
    _noise,
    detect_modes,
    equation_error_start,
)

__all__ = ["INPUT", "STARTS", "hybrid_model", "hybrid_problem", "input_noise", "start_guess", "trial_of"]

#: The model's input: the platform's horizontal acceleration (m/s²).
INPUT = "platform_acc"
#: The least noise σ assumed on the platform acceleration (m/s²) when it is read from a record.
ACC_NOISE_FLOOR = 1e-3

_FUNCTIONS: dict = {}


def _functions() -> dict:
    """Per mode ``(x, a, kp, kd) → (ẋ, [force or gap rows])`` and per pivot mode the landing's
    impact ``x⁻ → x⁺`` (CasADi Functions, built once)."""
    if not _FUNCTIONS:
        x, a, kp, kd = ca.SX.sym("x", 4), ca.SX.sym("a"), ca.SX.sym("kp"), ca.SX.sym("kd")
        for mode, (xdot, rows) in _mode_pieces(x, a, kp, kd).items():
            _FUNCTIONS[mode] = ca.Function(f"heel_off_{mode}", [x, a, kp, kd], [xdot, rows])
        _FUNCTIONS.update({f"impact_{m}": f for m, f in _impacts().items()})
    return _FUNCTIONS


def _call(fn: ca.Function, x, *args, out: int = 0):
    """``fn`` at the state ``x`` (numbers or CasADi symbols, as the model's functions receive
    it): numbers as a NumPy array, symbols as a CasADi column."""
    value = fn(ca.vertcat(*[x[i] for i in range(4)]), *args)
    value = value[out] if isinstance(value, tuple | list) else value
    return np.asarray(value, dtype=float).ravel() if isinstance(value, ca.DM) else value


def hybrid_model() -> co.HybridModel:
    """The foot and body as a :class:`colloc.HybridModel` with the input :data:`INPUT`."""
    fns = _functions()

    def rhs(mode):
        return lambda t, x, p, t0: _call(fns[mode], x, p[INPUT], p["kp"], p["kd"])

    def force(row):
        return lambda t, x, p: _call(fns["flat"], x, p[INPUT], p["kp"], p["kd"], out=1)[row]

    def impact(mode):
        return lambda t, x, p: _call(fns[f"impact_{mode}"], x)

    def lift(t, x, p):  # the foot leaves the platform flat and at rest
        return [x[0], 0.0 * x[1], x[2], 0.0 * x[3]]

    def foot(t, x, p):
        return x[1]

    guards = [co.Guard("heel_off", force(0), -1, ("flat",), "toe", reset=lift),
              co.Guard("toe_off", force(1), -1, ("flat",), "heel", reset=lift),
              co.Guard("toe_landing", foot, -1, ("toe",), "flat", reset=impact("toe")),
              co.Guard("heel_landing", foot, +1, ("heel",), "flat", reset=impact("heel"))]
    return co.HybridModel("heel-off", list(STATE_NAMES), [co.Mode(m, rhs(m)) for m in MODES], "flat",
                          guards=guards, parameters=NAMES, inputs=(INPUT,))


def trial_of(trial: HeelOffTrial) -> co.Trial:
    """A :class:`colloc.Trial` of a record: its states and :data:`INPUT`."""
    return co.Trial(trial.time, {**trial.signals, INPUT: trial.platform_acc}, name=trial.name)


def input_noise(trials: Sequence[HeelOffTrial]) -> float:
    """The noise σ of the platform acceleration read from the records (second differences, at
    least :data:`ACC_NOISE_FLOOR`)."""
    return max(max(_noise(np.asarray(t.platform_acc, dtype=float)) for t in trials), ACC_NOISE_FLOOR)


#: Where kp and kd start (:func:`start_guess`).
STARTS = ("equation-error", "guess")


def start_guess(trials: Sequence[HeelOffTrial], sequences, start: str = "equation-error") -> tuple[dict, str]:
    """kp, kd to start from, and how they were chosen: ``"equation-error"`` the least-squares
    fit of the flat-foot equation of motion integrated over the records
    (:func:`colloc_problems.heel_off_multiphase.equation_error_start`, no collocation), or
    :data:`GUESS` when that is not usable (no flat stretch, an unstable feedback);
    ``"guess"`` :data:`GUESS`.  On the noisy 20 s record of seed 1 the fit from GUESS took
    44 + 12 iterations, from the equation-error start (kp 914, kd 246) 24 + 12."""
    if start not in STARTS:
        raise co.OptionsError(f"heel-off: start must be one of {', '.join(STARTS)}, got {start!r}")
    if start == "guess":
        return dict(GUESS), "the guesses"
    est = equation_error_start(trials, sequences, delay=False)
    if not est["usable"]:
        return dict(GUESS), f"the guesses: the equation-error start is not usable ({est['message']})"
    return {k: float(est["parameters"][k]) for k in NAMES}, est["message"]


def hybrid_problem(trials: Sequence[HeelOffTrial], guess: Mapping[str, float] | None = None, *,
                   acc_noise: float | None = None, exact_input: bool = False,
                   samples_per_interval: float = 1.0, start: str = "equation-error") -> co.HybridProblem:
    """kp, kd from records sharing them: one :func:`hybrid_model` for all, the modes and the
    start of the switching times from :func:`detect_modes`, each signal weighted by its noise σ
    (second differences, at least :data:`NOISE_FLOOR`), the platform acceleration an
    errors-in-variables input of noise ``acc_noise`` (default :func:`input_noise`) unless
    ``exact_input``.  kp, kd start from :func:`start_guess` (``start``), overridden by ``guess``."""
    trials = list(trials)
    sigma = {n: max(max(_noise(t.signals[n]) for t in trials if n in t.signals), NOISE_FLOOR[n])
             for n in STATE_NAMES if any(n in t.signals for t in trials)}
    seqs = [detect_modes(t) for t in trials]
    first, _how = start_guess(trials, seqs, start)
    noise = None if exact_input else {INPUT: float(acc_noise) if acc_noise is not None else input_noise(trials)}
    return co.HybridProblem(hybrid_model(), [trial_of(t) for t in trials], input_noise=noise,
                            guess={**first, **(guess or {})}, bounds={"kp": (1.0, 1e5), "kd": (0.1, 1e4)},
                            fit={n: 1.0 / s ** 2 for n, s in sigma.items()},
                            initial_state={"theta_foot": 0.0, "omega_foot": 0.0},
                            sequence=[[m for m, _a, _b in s] for s in seqs],
                            switch_times=[[b for _m, _a, b in s[:-1]] for s in seqs],
                            samples_per_interval=samples_per_interval, noise=sigma,
                            units={k: UNITS[k] for k in NAMES}, descriptions={k: DESCRIPTIONS[k] for k in NAMES})
