"""A hybrid identification problem: a :class:`~colloc.HybridModel`, measured trials, and what
is known of the sequence of modes.

Still grid-free (like :class:`~colloc.Problem`): it says *what* is fitted — the parameters,
the free initial state of every trial, the switching times between its phases — and the
collocation path (:func:`colloc.solving.hybrid.solve_hybrid`, reached through
``co.solve(problem, co.Radau())``) says *how*.

A record of a hybrid model is an ordered sequence of phases, one mode each; between two
phases one guard of the model fires: its function is zero at the switching time, and its
reset (jump) map takes the state across.  The sequence is given (``sequence``) or detected
from an event-driven simulation (:func:`colloc.simulate_hybrid`) at the start guess; the
switching times are unknowns bounded by the record (or fixed at ``switch_times``).

A model with **time events** (:class:`~colloc.TimeEvent`, e.g. stimulation pulses) or **timed
modes** (a ``duration``, e.g. a calcium clock's plateau) is fitted on phases whose boundaries
are those events' times and the timed modes' ends: known, or affine functions of the
parameters (``t_k + τ``), never free unknowns
(:mod:`colloc.transcription.hybrid_events`).  Each phase's mode is the one an event-driven
simulation at the current estimate is in (so a :class:`~colloc.Switch` of the model picks the
side); the events' order at the estimate is kept by linear constraints, and the phases are
laid again at each solution until they settle.  The stimulation of each record differs, so
such a problem often takes one model per trial (``model=[...]``).
"""

from __future__ import annotations

import copy as _copy
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..base.errors import ModelError, ProblemError
from .hybrid import Guard, HybridModel
from .trial import Trial

__all__ = ["HybridProblem"]


class HybridProblem:
    """Identify the parameters of a hybrid model from measured trials.

    Parameters
    ----------
    model : HybridModel or sequence of HybridModel
        Modes, guards (with their reset maps), switches, time events and timed modes; its
        ``parameters`` are identified.  A sequence gives one model per trial (the same states,
        parameters and mode names; e.g. each record's own pulse times or input).
        Its functions must accept CasADi symbols as well as numbers: the state ``x`` comes as
        a NumPy object array (index it, ``x[0]``, or unpack it), the parameters ``p`` as a
        dict; use ``abs``, ``+``, ``*``, ``**`` and NumPy's ufuncs (``np.sin``), not ``math``.
    trials : Trial or sequence of Trial
        Measured records sharing the parameters; each has its own initial state, phases and
        switching times.
    guess : mapping of str to float
        The start value of every parameter of the model.
    bounds : mapping of str to (float, float), optional
        Bounds of parameters (default unbounded), taken as limits of the model (an estimate
        on one is reported, not failed).
    fit : mapping of str to float, optional
        Fit weight ``1/σ²`` of each fitted state (default 1 on every state a trial holds).
    node_trajectories : bool
        Report the fitted states (``result.trajectories``) at the collocation nodes, each
        switching time whose guard has a reset twice (the state before and after the jump),
        instead of at the samples.
    chi2_poor : float, optional
        The reduced χ² of a signal's residuals over its noise above which the fit is
        ``poor_fit`` (default the library's :data:`colloc.results.verdict.CHI2_POOR`); stricter
        for noise σ read from the records themselves.
    input_noise : mapping of str to float, optional
        The noise σ of inputs of the model (``HybridModel(inputs=...)``, columns of every trial)
        that are measured with noise: each becomes *errors-in-variables*, its true value at every
        sample an unknown fitted to the measured one with weight ``1/σ²``, between samples a
        cubic (Catmull–Rom) through them.  Inputs not given here are taken as exact (the same
        cubic through the measured samples).
    initial_state : mapping of str to float, optional
        Start values of the initial state (free unknowns of every trial); a state measured in
        a trial starts at its first sample, others at 0 unless given here.
    sequence : sequence of str, or a sequence of them (one per trial), optional
        The modes of the phases in order.  Default: the modes an event-driven simulation
        at the start guess goes through.
    switch_times : sequence of float, or a sequence of them (one per trial), optional
        Start values of the switching times (``len(sequence) − 1`` per trial).  Default:
        the simulation's event times.
    fixed_switches : bool
        Hold the switching times at ``switch_times`` (known events) instead of fitting them.
    samples_per_interval : float
        Collocation intervals per phase: the samples in it divided by this (at least 2).
    name : str, optional
        Name used in results (default: the model's name).
    known_initial_state : bool
        The initial state is known (``initial_state``, 0 for a state not given there), not an
        unknown of every trial (e.g. a muscle at rest).  Timed models only.
    max_step : float, optional
        Timed models: the longest collocation interval (s); default ``samples_per_interval``
        sampling steps.  Each phase gets ``ceil(length / max_step)`` intervals.
    state_scale : mapping of str to float, optional
        Timed models: the typical size of each state; the collocation unknowns are the states
        divided by it (default 1).
    noise : mapping of str to float or callable, optional
        The measurement noise σ of fitted states, in their units, or a function of a record's
        samples of that state returning it (e.g. from high-order differences): the fit
        verdict judges the residuals divided by it (the fit itself stays weighted by ``fit``).
        Default: the verdict reads σ from the fit weights.
    units, descriptions : mapping of str to str, optional
        Units and meanings of parameters and states, for the report.
    start_states : callable, optional
        Timed models: ``start_states(trial, t)`` → the states' start values (nx × len(t),
        physical units) at the times ``t`` of a trial; default: the measured states
        interpolated, the others from an event-driven simulation at the guess.
    limits : mapping of str to (bool, bool), optional
        Whether each side of a parameter's bounds is a limit of the model (an estimate on it
        is reported, not failed) or only narrows the search; default both.
    trial_weights : mapping of str to float, optional
        Factor on every fit weight of the named trials (by trial name; others keep 1), the
        errors-in-variables inputs' included: weight 2 counts a trial as if it had been
        recorded twice.  The declared noise (``fit``, ``noise``) is unchanged, so the fit
        verdict still compares each trial's residuals with its σ.
    """

    def __init__(self, model: HybridModel | Sequence[HybridModel], trials: Trial | Sequence[Trial], *,
                 guess: Mapping[str, float],
                 bounds: Mapping[str, tuple[float, float]] | None = None, fit: Mapping[str, float] | None = None,
                 initial_state: Mapping[str, float] | None = None,
                 sequence: Sequence[str] | Sequence[Sequence[str]] | None = None,
                 switch_times: Sequence[float] | Sequence[Sequence[float]] | None = None,
                 fixed_switches: bool = False, samples_per_interval: float = 5.0, name: str | None = None,
                 known_initial_state: bool = False, max_step: float | None = None,
                 state_scale: Mapping[str, float] | None = None,
                 noise: Mapping[str, float | Callable[[np.ndarray], float]] | None = None,
                 units: Mapping[str, str] | None = None, descriptions: Mapping[str, str] | None = None,
                 limits: Mapping[str, tuple[bool, bool]] | None = None,
                 start_states: Callable[[Trial, np.ndarray], np.ndarray] | None = None,
                 input_noise: Mapping[str, float] | None = None, node_trajectories: bool = False,
                 chi2_poor: float | None = None, trial_weights: Mapping[str, float] | None = None) -> None:
        self.trials = [trials] if isinstance(trials, Trial) else list(trials)
        if not self.trials or not all(isinstance(t, Trial) for t in self.trials):
            raise ProblemError("HybridProblem(trials=...): expected a colloc.Trial or a non-empty sequence of them")
        models = [model] * len(self.trials) if isinstance(model, HybridModel) else list(model)
        if not models or not all(isinstance(m, HybridModel) for m in models):
            raise ProblemError(f"HybridProblem(model=...): expected a colloc.HybridModel (or one per trial), got "
                               f"{type(model).__name__}")
        if len(models) != len(self.trials):
            raise ProblemError(f"HybridProblem(model=[...]): one model per trial expected ({len(self.trials)}), "
                               f"got {len(models)}")
        model = models[0]
        for m in models[1:]:
            if (list(m.states), list(m.parameters), [x.name for x in m.modes]) != \
                    (list(model.states), list(model.parameters), [x.name for x in model.modes]):
                raise ProblemError(f"HybridProblem(model=[...]): the trials' models must have the same states, "
                                   f"parameters and modes ({m.name!r} differs from {model.name!r})")
        #: the model of each trial (the same object for all unless given one per trial)
        self.models = models
        self.model = model
        self.name = name or model.name
        names = [t.name for t in self.trials]
        if len(set(names)) != len(names):
            raise ProblemError(f"HybridProblem: trial names must differ, got {names} (use Trial.renamed)")
        unknown = [k for k in (trial_weights or {}) if k not in names]
        if unknown:
            raise ProblemError(f"HybridProblem(trial_weights=...): no trial named {', '.join(map(repr, unknown))}; "
                               f"trials: {', '.join(names)}")
        for trial_name, w in (trial_weights or {}).items():
            if isinstance(w, bool) or not isinstance(w, int | float | np.integer | np.floating) \
                    or not (np.isfinite(w) and w > 0):
                raise ProblemError(f"HybridProblem(trial_weights=...): the weight of trial {trial_name!r} must be a "
                                   f"finite number > 0, got {w!r}")
        #: factor on the fit weights of each trial, by trial name (1 unless given)
        self.trial_weights = {n: float((trial_weights or {}).get(n, 1.0)) for n in names}
        self.states = list(model.states)
        self.parameters = list(model.parameters)
        if not self.parameters:
            raise ProblemError(f"HybridProblem: model {model.name!r} declares no parameters to identify")
        #: whether the phases are laid by time events and timed modes (not by free switching times)
        self.timed = any(bool(m.time_events) or any(x.duration is not None for x in m.modes) for m in models)
        if self.timed and any(m.guards for m in models):
            raise ModelError(f"HybridProblem: model {model.name!r} has time events or timed modes and guards; a "
                             "timed model may have switches (which pick a mode's side), not guards with resets")
        if self.timed and (sequence is not None or switch_times is not None or fixed_switches):
            raise ProblemError(f"HybridProblem: model {model.name!r} is timed (time events, timed modes): its phases "
                               "come from the events; sequence, switch_times and fixed_switches do not apply")
        if known_initial_state and not self.timed:
            raise ProblemError("HybridProblem(known_initial_state=True) applies to timed models (time events, "
                               "timed modes)")
        self.known_initial_state = bool(known_initial_state)
        self.guess = self._parameter_map(guess, "guess", required=True)
        self.bounds = {p: (-math.inf, math.inf) for p in self.parameters}
        for p, b in (bounds or {}).items():
            self.check_parameter(p, "bounds")
            lo, hi = map(float, b)
            if not lo < hi:
                raise ProblemError(f"HybridProblem(bounds=...): {p}: lower {lo} must be below upper {hi}")
            if not lo <= self.guess[p] <= hi:
                raise ProblemError(f"HybridProblem: the guess of {p} ({self.guess[p]}) is outside its bounds "
                                   f"({lo}, {hi})")
            self.bounds[p] = (lo, hi)
        if fit is None:
            fit = {s: 1.0 for s in self.states if any(s in t for t in self.trials)}
        for s, w in fit.items():
            if s not in self.states:
                raise ProblemError(f"HybridProblem(fit=...): {s!r} is not a state of {model.name!r} "
                                   f"(states: {', '.join(self.states)})")
            if not (np.isfinite(w) and w > 0):
                raise ProblemError(f"HybridProblem(fit=...): the weight of {s!r} must be finite and > 0, got {w}")
        self.fit = {s: float(w) for s, w in fit.items()}
        for t in self.trials:
            if not any(s in t for s in self.fit):
                raise ProblemError(f"HybridProblem: trial {t.name!r} holds none of the fitted states "
                                   f"({', '.join(self.fit)}); it has {', '.join(t.signals)}")
        for s in initial_state or {}:
            if s not in self.states:
                raise ProblemError(f"HybridProblem(initial_state=...): {s!r} is not a state of {model.name!r}")
        self.initial_state = {s: float(v) for s, v in (initial_state or {}).items()}
        self.sequences = self._per_trial(sequence, "sequence")
        for seq in self.sequences:
            if seq is not None:
                if not seq:
                    raise ProblemError("HybridProblem(sequence=...): a sequence needs at least one mode")
                for m in seq:
                    model.mode(m)
        self.switch_guesses = self._per_trial(switch_times, "switch_times")
        for k, (seq, sw) in enumerate(zip(self.sequences, self.switch_guesses)):
            if sw is None:
                continue
            if seq is None:
                raise ProblemError("HybridProblem(switch_times=...): give the sequence of modes with them")
            if len(sw) != len(seq) - 1:
                raise ProblemError(f"HybridProblem: trial {self.trials[k].name!r} has {len(seq)} phases, so "
                                   f"{len(seq) - 1} switching times, got {len(sw)}")
            times = self.trials[k].time
            if np.any(np.diff(sw) <= 0) or (len(sw) and not times[0] < sw[0] <= sw[-1] < times[-1]):
                raise ProblemError(f"HybridProblem(switch_times=...): trial {self.trials[k].name!r}: the times must "
                                   f"increase strictly inside the record ({times[0]}, {times[-1]})")
        if fixed_switches and any(sw is None for sw in self.switch_guesses):
            raise ProblemError("HybridProblem(fixed_switches=True) needs the sequence and switch_times of every trial")
        self.fixed_switches = bool(fixed_switches)
        if not samples_per_interval > 0:
            raise ProblemError(f"HybridProblem(samples_per_interval={samples_per_interval!r}): must be > 0")
        self.samples_per_interval = float(samples_per_interval)
        if max_step is not None and not (np.isfinite(max_step) and max_step > 0):
            raise ProblemError(f"HybridProblem(max_step={max_step!r}): must be a finite time > 0 (s)")
        self.max_step = None if max_step is None else float(max_step)
        timed_only = (("max_step", max_step), ("state_scale", state_scale), ("start_states", start_states))
        for option, option_value in timed_only:
            if option_value is not None and not self.timed:
                raise ProblemError(f"HybridProblem({option}=...) applies to timed models (time events, timed modes); "
                                   f"{model.name!r} has none")
        self.state_scale = np.ones(len(self.states))
        for s, v in (state_scale or {}).items():
            if s not in self.states:
                raise ProblemError(f"HybridProblem(state_scale=...): {s!r} is not a state of {model.name!r}")
            if not (np.isfinite(v) and v > 0):
                raise ProblemError(f"HybridProblem(state_scale=...): the scale of {s!r} must be finite and > 0, "
                                   f"got {v}")
            self.state_scale[self.states.index(s)] = float(v)
        for s, sigma in (noise or {}).items():
            if s not in self.fit:
                raise ProblemError(f"HybridProblem(noise=...): {s!r} is not a fitted state ({', '.join(self.fit)})")
            if not callable(sigma) and not (np.isfinite(sigma) and sigma > 0):
                raise ProblemError(f"HybridProblem(noise=...): σ of {s!r} must be finite and > 0 or a function, "
                                   f"got {sigma}")
        self.noise = dict(noise or {})
        for what, given in (("units", units), ("descriptions", descriptions)):
            unknown = [k for k in (given or {}) if k not in self.parameters and k not in self.states]
            if unknown:
                raise ProblemError(f"HybridProblem({what}=...): {', '.join(unknown)} are neither parameters nor states")
        self.units = dict(units or {})
        self.descriptions = dict(descriptions or {})
        if start_states is not None and not callable(start_states):
            raise ProblemError("HybridProblem(start_states=...): expected a function (trial, times) -> states")
        self.start_states = start_states
        #: the guards whose reset changes a delayed state (its jump is fed back a delay later)
        self.delayed_jumps = frozenset(g.name for g in model.all_guards() if model.resets_delayed(g))
        self.inputs = list(model.inputs)
        if self.inputs and self.timed:
            raise ProblemError(f"HybridProblem: model {model.name!r} is timed (time events, timed modes); inputs "
                               "(HybridModel(inputs=...)) are fitted on models with guards only")
        for t in self.trials:
            for u in self.inputs:
                if u not in t or not np.all(np.isfinite(t[u])):
                    raise ProblemError(f"HybridProblem: trial {t.name!r} needs the input {u!r} of model "
                                       f"{model.name!r} at every sample")
        for u, sigma in (input_noise or {}).items():
            if u not in self.inputs:
                raise ProblemError(f"HybridProblem(input_noise=...): {u!r} is not an input of {model.name!r} "
                                   f"(inputs: {', '.join(self.inputs) or 'none'})")
            if not (np.isfinite(sigma) and sigma > 0):
                raise ProblemError(f"HybridProblem(input_noise=...): σ of {u!r} must be finite and > 0, got {sigma}")
        if chi2_poor is not None and not (np.isfinite(chi2_poor) and chi2_poor > 1):
            raise ProblemError(f"HybridProblem(chi2_poor={chi2_poor!r}): must be a finite reduced chi-square > 1")
        #: the verdict's threshold of a signal's reduced χ² (None: the library's)
        self.chi2_poor = None if chi2_poor is None else float(chi2_poor)
        #: the result's trajectories at the collocation nodes (a jump's time twice) instead of the samples
        self.node_trajectories = bool(node_trajectories)
        #: inputs estimated as errors-in-variables, with their σ
        self.input_noise = {u: float(v) for u, v in (input_noise or {}).items()}
        self.limits = {p: (True, True) for p in self.parameters}
        for p, sides in (limits or {}).items():
            self.check_parameter(p, "limits")
            lo_side, hi_side = sides
            self.limits[p] = (bool(lo_side), bool(hi_side))

    def with_fit(self, weights: Mapping[str, float]) -> HybridProblem:
        """The same problem with the fit weights of ``weights`` (state → ``1/σ²``) set or
        replaced; a weight of 0 removes a state from the fit (and its declared noise)."""
        fit = dict(self.fit)
        for s, w in weights.items():
            if s not in self.states:
                raise ProblemError(f"fit weight of {s!r}, which is not a state of {self.model.name!r} "
                                   f"(states: {', '.join(self.states)})")
            w = float(w)
            if not (np.isfinite(w) and w >= 0):
                raise ProblemError(f"fit weight of {s!r} must be finite and >= 0 (0 leaves it out), got {w}")
            if w == 0:
                fit.pop(s, None)
            else:
                fit[s] = w
        for t in self.trials:
            if not any(s in t for s in fit):
                raise ProblemError(f"fit weights: trial {t.name!r} would hold none of the fitted states "
                                   f"({', '.join(fit) or 'none'})")
        copy = _copy.copy(self)
        for name, value in vars(copy).items():  # its own dictionaries (bounds, guesses, ...)
            if isinstance(value, dict):
                setattr(copy, name, dict(value))
        copy.fit = fit
        copy.noise = {s: v for s, v in self.noise.items() if s in fit}
        return copy

    def fit_weights(self, trial: Trial) -> dict[str, float]:
        """The fit weight ``1/σ²`` of each state fitted in ``trial`` and of each
        errors-in-variables input, times the trial's weight (:attr:`trial_weights`)."""
        factor = self.trial_weights.get(trial.name, 1.0)
        weights = {s: w * factor for s, w in self.fit.items() if s in trial}
        weights.update({u: factor / sigma ** 2 for u, sigma in self.input_noise.items()})
        return weights

    def noise_of(self, trial: Trial) -> dict[str, float]:
        """The noise σ of each fitted state of ``trial`` that :attr:`noise` declares (a function
        called on its finite samples)."""
        return declared_noise(self.noise, trial)

    def initial_state_of(self, trial: Trial) -> np.ndarray:
        """A known initial state (:attr:`known_initial_state`): ``initial_state``, else 0."""
        return np.array([self.initial_state.get(s, 0.0) for s in self.states])

    def check_parameter(self, name: str, what: str) -> None:
        """Refuse a name that is not a parameter of the model (``what``: the argument it came in)."""
        if name not in self.parameters:
            raise ProblemError(f"HybridProblem({what}=...): {name!r} is not a parameter of {self.model.name!r} "
                               f"(parameters: {', '.join(self.parameters)})")

    def _parameter_map(self, values, what: str, required: bool) -> dict[str, float]:
        values = dict(values or {})
        for k in values:
            self.check_parameter(k, what)
        missing = [p for p in self.parameters if p not in values]
        if required and missing:
            raise ProblemError(f"HybridProblem({what}=...): missing {', '.join(missing)}")
        return {k: float(v) for k, v in values.items()}

    def _per_trial(self, value, what: str) -> list:
        n = len(self.trials)
        if value is None:
            return [None] * n
        value = list(value)
        nested = bool(value) and all(isinstance(v, list | tuple | np.ndarray) for v in value)
        if not nested:
            return [list(value) for _ in range(n)]
        if len(value) != n:
            raise ProblemError(f"HybridProblem({what}=...): one per trial expected ({n}), got {len(value)}")
        return [list(v) for v in value]

    def transition(self, before: str, after: str) -> Guard:
        """The guard that takes mode ``before`` to mode ``after`` (a guard watched in ``before``
        whose target is ``after``; a guard without a target keeps the mode)."""
        found = []
        for g in self.model.all_guards():
            if not g.watches(before):
                continue
            target = before if g.target is None else (g.target(before) if callable(g.target) else g.target)
            if target == after:
                found.append(g)
        if len(found) != 1:
            what = "no guard" if not found else f"{len(found)} guards ({', '.join(g.name for g in found)})"
            raise ModelError(f"hybrid model {self.model.name!r}: {what} from mode {before!r} to mode {after!r}; "
                             "the sequence needs exactly one")
        return found[0]

    def state_guess(self, trial: Trial) -> np.ndarray:
        """Start values of a trial's initial state."""
        out = []
        for s in self.states:
            if s in self.initial_state:
                out.append(self.initial_state[s])
            elif s in trial and np.isfinite(trial[s][0]):
                out.append(float(trial[s][0]))
            else:
                out.append(0.0)
        return np.array(out)


def declared_noise(noise: Mapping[str, float | Callable[[np.ndarray], float]], trial: Trial) -> dict[str, float]:
    """The noise σ of each signal of ``trial`` that ``noise`` declares: a number, or a function
    called on the signal's finite samples."""
    out = {}
    for s, v in noise.items():
        if s in trial:
            y = np.asarray(trial[s], dtype=float)
            out[s] = float(v(y[np.isfinite(y)])) if callable(v) else float(v)
    return out
