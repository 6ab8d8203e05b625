"""The identification problem: a model, one or more trials, fit weights and extras.

Still grid-free: a :class:`Problem` says *what* is fitted and constrained; a transcription
(:mod:`colloc.transcription.methods`) or a baseline decides *how*.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import ProblemError
from .explicit import explicit_rhs
from .model import Model
from .trial import Trial

__all__ = ["Problem", "TrialPlan"]


@dataclass(frozen=True)
class Term:
    """An extra objective term or constraint expressed in the model's symbols."""

    kind: str  # "regularization" | "objective" | "path" | "point" | "trajectory"
    name: str
    expr: ca.SX
    weight: float = 1.0
    integral: bool = True
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    time: float | None = None
    trial: int | None = None
    function: Callable | None = None
    signals: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrialPlan:
    """What a method reads of one trial besides its samples, taken from the problem at once
    (:meth:`Problem.trial_plans`): the known inputs' jump times, the sample times of held
    inputs, and the fitted signals with their weights."""

    index: int
    trial: Trial
    input_jumps: dict[str, np.ndarray]  # known input -> its jump times (Problem.input_jumps)
    jump_times: np.ndarray  # every time at which some known input may jump (Problem.jump_times)
    hold_times: np.ndarray  # the samples of held inputs (Problem.hold_times)
    fitted: list[str]  # Problem.fitted_signals
    weights: dict[str, float]  # Problem.fit_weights


class Problem:
    """A parameter-identification problem.

    Parameters
    ----------
    model : Model
        The dynamics and declared quantities.
    trials : Trial or sequence of Trial
        Measured experiments.  Parameters are shared by all trials; each trial has its
        own state and free-input trajectories.
    fit : mapping of str to float, optional
        Weight of each fitted signal (state, free input or output name), typically
        ``1/σ²``.  Signals absent from a trial are not fitted for that trial.  Default:
        weight 1 on every model signal present in the trials.  An empty mapping means no
        least-squares fit at all (the objective is then made of the extra terms only, for
        example a :meth:`add_trajectory_objective`).
    name : str, optional
        Name used in results (default: the model's name).
    input_noise : mapping of str to float, optional
        Known inputs measured with noise of this standard deviation.  Each becomes an
        *errors-in-variables* unknown: its true trajectory is estimated at every node,
        fitted to its measurement with weight ``1/σ²``, and drives the dynamics.  Feeding a
        noisy input in as if exact biases the parameters; this does not.
    trial_weights : mapping of str to float, optional
        Factor on every fit weight of the named trials (by trial name; others keep 1).
        Weight 2 counts a trial as if it had been recorded twice.  The declared noise
        (``fit``) is unchanged, so the fit verdict still compares residuals with ``1/σ²``.

    Notes
    -----
    The objective is ``½ Σ_trials Σ_samples Σ_signals w (y − ŷ)²`` plus the extra terms
    added with :meth:`add_regularization` and :meth:`add_objective`.
    """

    def __init__(
        self,
        model: Model,
        trials: Trial | Sequence[Trial],
        *,
        fit: Mapping[str, float] | None = None,
        name: str | None = None,
        input_noise: Mapping[str, float] | None = None,
        trial_weights: Mapping[str, float] | None = None,
    ) -> None:
        if not isinstance(model, Model):
            raise ProblemError(f"Problem needs a colloc.Model, got {type(model).__name__}")
        model.check()
        if isinstance(trials, Trial):
            trials = [trials]
        trials = list(trials)
        if not trials:
            raise ProblemError("Problem needs at least one trial")
        for i, t in enumerate(trials):
            if not isinstance(t, Trial):
                raise ProblemError(f"trials[{i}] is a {type(t).__name__}, expected colloc.Trial")
        names = [t.name for t in trials]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ProblemError(
                f"trial names must be unique, '{dup[0]}' appears more than once; pass name= to Trial"
            )
        self.model = model
        self.trials: tuple[Trial, ...] = tuple(trials)
        self.name = name or model.name
        trial_weights = dict(trial_weights or {})
        unknown = [k for k in trial_weights if k not in names]
        if unknown:
            raise ProblemError(
                f"trial_weights for unknown trial(s) {', '.join(map(repr, unknown))}; trials: {', '.join(names)}"
            )
        for k, w in trial_weights.items():
            if not isinstance(w, (int, float, np.integer, np.floating)) or not np.isfinite(w) or w <= 0:
                raise ProblemError(f"trial_weights['{k}'] must be a finite number > 0, got {w!r}")
        #: Factor on the fit weights of each trial, by trial name (1 unless given).
        self.trial_weights: dict[str, float] = {n: float(trial_weights.get(n, 1.0)) for n in names}
        known = model.element_names("known_input")
        input_noise = dict(input_noise or {})
        for u, sigma in input_noise.items():
            if u not in known:
                raise ProblemError(
                    f"input_noise for '{u}', which is not a known input of model '{model.name}'; "
                    f"known inputs: {', '.join(known) or '(none)'}"
                )
            if not np.isfinite(sigma) or sigma <= 0:
                raise ProblemError(f"input_noise of '{u}' must be finite and > 0, got {sigma!r}")
        #: Known inputs estimated as errors-in-variables, in model order, with their σ.
        self.input_noise: dict[str, float] = {u: float(input_noise[u]) for u in known if u in input_noise}
        signals = model.signal_names() + list(self.input_noise)
        for t in self.trials:
            missing = [u for u in known if u not in t]
            if missing:
                raise ProblemError(
                    f"trial '{t.name}' is missing known input(s) {', '.join(missing)}; "
                    f"it has: {', '.join(t.signals) or '(no signals)'}"
                )
            if t.num_samples < 2:
                raise ProblemError(f"trial '{t.name}' has {t.num_samples} sample(s); need at least 2")
            self._check_jumps(t, known)
            self._check_interpolation(t, known)
        no_fit = fit is not None and len(fit) == 0  # explicitly no least-squares fit
        if fit is None:
            fit = {s: 1.0 for s in model.signal_names() if any(s in t for t in self.trials)}
        fit = dict(fit)
        for sig, w in fit.items():
            if sig not in signals:
                raise ProblemError(
                    f"fit weight for '{sig}', which is not a signal of model '{model.name}'; "
                    f"signals: {', '.join(signals)}"
                )
            if not np.isfinite(w) or w <= 0:
                raise ProblemError(f"fit weight of '{sig}' must be finite and > 0, got {w!r}")
        for t in self.trials:
            if not no_fit and not any(s in t for s in fit):
                raise ProblemError(
                    f"trial '{t.name}' contains none of the fitted signals "
                    f"({', '.join(fit) or 'none'}); it has: {', '.join(t.signals)}"
                )
        for u in self.input_noise:
            if u in fit:
                raise ProblemError(f"'{u}' has both a fit weight and input_noise; give only input_noise")
        fit.update({u: 1.0 / sigma**2 for u, sigma in self.input_noise.items()})
        for t in self.trials:  # every signal used needs two measured values to interpolate
            for s in [u for u in known] + [s for s in fit if s in t and s not in known]:
                count = int(t.present(s).sum())
                if count < 2:
                    where = f"trial '{t.name}'" + (f" ({t.source})" if t.source else "")
                    kind = "column" if t.source else "signal"
                    raise ProblemError(
                        f"{where}: {kind} '{s}' has {count} measured value(s) of {t.num_samples}; a fitted "
                        "signal or known input needs at least 2 (drop the column or measure it)"
                    )
        self.fit: dict[str, float] = {k: float(v) for k, v in fit.items()}
        self.terms: list[Term] = []
        self._guesses: dict = {}  # name or (name, trial index) -> constant or f(times)

    def _check_interpolation(self, t: Trial, known: list[str]) -> None:
        """A declared interpolation only on exact known inputs; a held one declares no jumps."""
        where = f"trial '{t.name}'" + (f" ({t.source})" if t.source else "")
        kind = "column" if t.source else "signal"
        for col, how in t.interpolation.items():
            if col not in known:
                raise ProblemError(
                    f"{where}: {kind} '{col}' has interpolation '{how}' but is not a known input of model "
                    f"'{self.model.name}'; interpolation applies to known inputs only (known inputs: "
                    f"{', '.join(known) or '(none)'})"
                )
            if how == "hold" and col in self.input_noise:
                raise ProblemError(
                    f"{where}: {kind} '{col}' is held (interpolation 'hold') and estimated as errors-in-variables "
                    "(input_noise), whose estimate is continuous: drop one of them"
                )
            if how == "hold" and col in self.model.input_jumps():
                raise ProblemError(
                    f"{where}: {kind} '{col}' is held (interpolation 'hold') and declares jumps "
                    "(known_input(..., jumps=)); a held input already steps at every sample: drop jumps="
                )

    def _check_jumps(self, t: Trial, known: list[str]) -> None:
        """Jumps only in exact known inputs, and only strictly inside the record."""
        where = f"trial '{t.name}'" + (f" ({t.source})" if t.source else "")
        for col, (times, _) in t.jumps.items():
            if col not in known or col in self.input_noise:
                what = ("an errors-in-variables input (its estimate is continuous)" if col in self.input_noise
                        else "not a known input of the model")
                raise ProblemError(
                    f"{where}: column '{col}' jumps at t = {float(times[0]):g} s but is {what}; only exact known "
                    f"inputs may jump (known inputs: {', '.join(known) or '(none)'})"
                )
        for name, declared in self.model.input_jumps().items():
            if name in self.input_noise:
                raise ProblemError(
                    f"known input '{name}' declares jumps but is estimated as errors-in-variables (input_noise); "
                    "its estimate is continuous: drop jumps= or input_noise for it"
                )
            for tj in declared:
                if not (t.time[0] < tj < t.time[-1]):
                    raise ProblemError(
                        f"known input '{name}': jump at t = {tj:g} s is outside {where}, which runs from "
                        f"{t.time[0]:g} to {t.time[-1]:g} s; a jump must lie strictly inside every trial's record"
                    )

    def input_jumps(self, trial: int) -> dict[str, np.ndarray]:
        """Known input -> sorted jump times in trial ``trial``: those declared with
        ``known_input(..., jumps=)`` and those written in the data (repeated time rows)."""
        t = self.trials[trial]
        out: dict[str, np.ndarray] = {}
        declared = self.model.input_jumps()
        for u in self.model.element_names("known_input"):
            times = set(declared.get(u, ()))
            if u in t.jumps:
                times |= set(t.jumps[u][0].tolist())
            if times:
                out[u] = np.array(sorted(times))
        return out

    def input_interpolation(self, trial: int, default: str = "cubic") -> dict[str, str]:
        """Known input -> how it is read between samples in trial ``trial``: its declared
        interpolation (``Trial(..., interpolation=)``: ``"linear"``, ``"hold"`` or ``"smooth"``),
        else ``default`` (a method's ``input_interpolation``, ``"cubic"`` being the same
        spline as ``"smooth"``)."""
        declared = self.trials[trial].interpolation
        names = {"cubic": "smooth"}
        return {u: declared.get(u, names.get(default, default)) for u in self.model.element_names("known_input")}

    def hold_times(self, trial: int) -> np.ndarray:
        """The measured sample times of the known inputs that trial ``trial`` holds (zero-order
        hold): where those inputs step, so where a collocation mesh needs points (sorted)."""
        t = self.trials[trial]
        held = [u for u in self.model.element_names("known_input") if t.interpolation.get(u) == "hold"]
        if not held:
            return np.zeros(0)
        return np.unique(np.concatenate([t.time[t.present(u)] for u in held]))

    def trial_plans(self) -> list[TrialPlan]:
        """A :class:`TrialPlan` of every trial, in order."""
        plans = []
        for i, t in enumerate(self.trials):
            jumps = self.input_jumps(i)
            times = np.unique(np.concatenate(list(jumps.values()))) if jumps else np.zeros(0)
            plans.append(TrialPlan(i, t, jumps, times, self.hold_times(i), self.fitted_signals(i), self.fit_weights(i)))
        return plans

    def jump_times(self, trial: int) -> np.ndarray:
        """All times at which some known input of trial ``trial`` may jump (sorted, unique)."""
        jumps = self.input_jumps(trial)
        return np.unique(np.concatenate(list(jumps.values()))) if jumps else np.zeros(0)

    # ---- extra objective terms and constraints ------------------------------------------
    def _expr(self, expr, where: str) -> ca.SX:
        expr = ca.SX(expr)
        self.model._check_symbols(expr, where, allow_der=False)
        return ca.vec(expr)

    def add_regularization(self, expr: ca.SX | float, weight: float = 1.0, *, integral: bool = True,
                           name: str = "regularization") -> None:
        """Add the least-squares term ``½·weight·∫ expr² dt`` (``integral=True``) or
        ``½·weight·Σ_nodes expr²`` (each element of ``expr``).

        Typical use: smoothness or magnitude prior on a free input trajectory; the sum form
        is the exact Gaussian prior of a sampled white-noise input held over each interval
        (``free_input(..., hold=True)``).
        """
        if not np.isfinite(weight) or weight <= 0:
            raise ProblemError(f"add_regularization('{name}'): weight must be > 0, got {weight!r}")
        self.terms.append(Term("regularization", name, self._expr(expr, name), weight=float(weight),
                               integral=bool(integral)))

    def add_onsager_machlup(self, *, name: str = "onsager_machlup") -> None:
        """Add ``½ ∫ ∇ₓ·f dt``, the divergence of the model's drift ``ẋ = f(x, r, u, p, t)``.

        With a white-noise free input and its Gaussian prior, minimising the prior plus the
        fit over trajectories *and* parameters (the joint MAP) ignores how the Jacobian of
        the map from noise to trajectory changes with the parameters.  When ``∇ₓ·f``
        depends on them (a damping gain, for instance) the joint MAP is biased, badly so on
        long records.  The Onsager–Machlup path density ``exp(−½∫|w|² − ½∫∇ₓ·f)`` (the
        midpoint/Stratonovich discretisation) adds this term and removes that bias.  For
        noise that drives only some states, check the result against an exact likelihood
        where one exists (:mod:`colloc.kalman` for linear-Gaussian models).

        Needs an explicit ODE (the residual affine in ẋ with a non-singular ∂f/∂ẋ).
        """
        model = self.model
        x = model._vec("state")
        rhs = explicit_rhs(model)
        f = rhs(x, model._vec("free_input"), model._vec("known_input"), model._vec("parameter"), model.time)
        div = ca.trace(ca.jacobian(f, x))
        self.terms.append(Term("objective", name, ca.vec(ca.SX(0.5 * div)), integral=True))

    def add_trajectory_objective(self, function: Callable, signals: Sequence[str], *,
                                 name: str = "trajectory") -> None:
        """Add a term that depends on whole trajectories at once (not node by node).

        ``function(values, time, trial)`` receives a dict mapping each name in ``signals``
        to a CasADi column of that signal at every node of a trial, the node times (numpy)
        and the :class:`~colloc.Trial` itself (for its measurements), and returns a scalar
        CasADi expression; it is added once per trial.  Use it for
        statistics of a trajectory such as the stabilogram diffusion function.  It must use
        only CasADi operations valid for both ``SX`` and ``MX`` (collocation and shooting
        call it with either).

        The term couples every node with every other one, so its Hessian is dense:
        collocation solves it with ``Ipopt(hessian="limited-memory")`` (other Hessian
        choices are refused with a clear error).
        """
        if not callable(function):
            raise ProblemError(f"add_trajectory_objective('{name}'): function must be callable")
        signals = tuple(signals)
        known = self.signal_names()
        bad = [s for s in signals if s not in known]
        if bad or not signals:
            raise ProblemError(
                f"add_trajectory_objective('{name}'): unknown signal(s) {', '.join(bad) or '(none given)'}; "
                f"signals: {', '.join(known)}"
            )
        self.terms.append(Term("trajectory", name, ca.SX(0, 1), function=function, signals=signals))

    def add_objective(self, expr: ca.SX | float, *, integral: bool = True, name: str = "objective") -> None:
        """Add ``∫ expr dt`` (``integral=True``) or ``Σ_nodes expr`` to the objective."""
        e = self._expr(expr, name)
        if e.numel() != 1:
            raise ProblemError(f"add_objective('{name}'): expression must be scalar, got {e.shape}")
        self.terms.append(Term("objective", name, e, integral=bool(integral)))

    def add_path_constraint(self, expr: ca.SX | float, lower: ArrayLike = -np.inf, upper: ArrayLike = np.inf,
                            *, name: str = "path") -> None:
        """Constrain ``lower ≤ expr ≤ upper`` at every node of every trial."""
        e = self._expr(expr, name)
        lo, hi = self._bounds(lower, upper, e.numel(), name)
        self.terms.append(Term("path", name, e, lower=lo, upper=hi))

    def add_point_constraint(
        self,
        expr: ca.SX | float,
        time: float,
        lower: ArrayLike = -np.inf,
        upper: ArrayLike = np.inf,
        *,
        trial: int | str | None = None,
        name: str = "point",
    ) -> None:
        """Constrain ``lower ≤ expr(t) ≤ upper`` at one time of one trial (or of every trial)."""
        e = self._expr(expr, name)
        lo, hi = self._bounds(lower, upper, e.numel(), name)
        index = None if trial is None else self.trial_index(trial)
        for i, t in enumerate(self.trials):
            if index is not None and i != index:
                continue
            if not (t.time[0] <= time <= t.time[-1]):
                raise ProblemError(
                    f"add_point_constraint('{name}'): time {time:g} s is outside trial '{t.name}' "
                    f"({t.time[0]:g} to {t.time[-1]:g} s)"
                )
        self.terms.append(Term("point", name, e, lower=lo, upper=hi, time=float(time), trial=index))

    @staticmethod
    def _bounds(lower, upper, size: int, name: str) -> tuple[np.ndarray, np.ndarray]:
        lo = np.broadcast_to(np.asarray(lower, dtype=float), (size,)).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=float), (size,)).copy()
        if np.any(lo > hi):
            raise ProblemError(f"constraint '{name}': lower bound > upper bound ({lo} > {hi})")
        return lo, hi

    def set_guess(self, name: str, value: float | Callable[[np.ndarray], np.ndarray], *,
                  trial: int | str | None = None) -> None:
        """Initial guess of a state or free input element: a constant or a function of time.

        Parameters
        ----------
        name : str
            State or free-input element name.
        value : float or callable
            Constant, or ``f(times) -> array`` evaluated at the nodes.
        trial : int or str, optional
            Only for this trial (by index or name); a trial-specific guess wins over a
            guess for every trial.
        """
        var = self.model.variable(name)
        if var.kind not in ("state", "free_input") or name not in var.element_names:
            raise ProblemError(
                f"set_guess('{name}'): expected a state or free-input element name "
                f"(one of {', '.join(self.model.element_names('state') + self.model.element_names('free_input'))})"
            )
        if trial is None:
            self._guesses[name] = value
        else:
            self._guesses[(name, self.trial_index(trial))] = value

    def with_trials(self, trials: Trial | Sequence[Trial]) -> Problem:
        """The same problem (model, weights, input noise, extra terms, guesses) on other trials.

        Point constraints that name a trial by index keep that index.  Trial weights carry
        over by trial name (a copy named ``'name#k'`` takes the weight of ``'name'``).
        """
        eiv = set(self.input_noise)
        new = [trials] if isinstance(trials, Trial) else list(trials)
        weights = {}
        for t in new:  # by name; a resampled copy 'name#k' keeps the weight of 'name'
            base = t.name if t.name in self.trial_weights else t.name.rsplit("#", 1)[0]
            if self.trial_weights.get(base, 1.0) != 1.0:
                weights[t.name] = self.trial_weights[base]
        copy = Problem(
            self.model,
            new,
            fit={k: v for k, v in self.fit.items() if k not in eiv},
            name=self.name,
            input_noise=self.input_noise or None,
            trial_weights=weights or None,
        )
        copy.terms = list(self.terms)
        # guesses for every trial carry over; trial-specific ones belong to the old trials
        copy._guesses = {k: v for k, v in self._guesses.items() if isinstance(k, str)}
        return copy

    def with_fit(self, weights: Mapping[str, float]) -> Problem:
        """The same problem with the fit weights of ``weights`` (signal → ``1/σ²``) set or
        replaced; a weight of 0 removes a signal from the fit."""
        fit = {k: v for k, v in self.fit.items() if k not in set(self.input_noise)}
        for signal, w in weights.items():
            w = float(w)
            if not np.isfinite(w) or w < 0:
                raise ProblemError(f"fit weight of '{signal}' must be finite and >= 0, got {w}")
            if w == 0:
                fit.pop(signal, None)
            else:
                fit[signal] = w
        copy = Problem(self.model, self.trials, fit=fit, name=self.name, input_noise=self.input_noise or None,
                       trial_weights={k: v for k, v in self.trial_weights.items() if v != 1.0} or None)
        copy.terms = list(self.terms)
        copy._guesses = dict(self._guesses)
        return copy

    def resampled(self, indices: Sequence[int]) -> Problem:
        """The same problem on ``trials[i] for i in indices`` (a trial may repeat).

        A repeated trial is renamed ``'name#2'``, ``'name#3'``…; constraints and guesses
        given for one trial follow it to every position it takes (the trial bootstrap).
        """
        indices = [int(i) for i in indices]
        bad = [i for i in indices if not 0 <= i < len(self.trials)]
        if bad or not indices:
            raise ProblemError(f"resampled(indices): expected indices in 0..{len(self.trials) - 1}, "
                               f"got {bad or 'none'}")
        seen: dict[int, int] = {}
        new = []
        for i in indices:
            seen[i] = seen.get(i, 0) + 1
            t = self.trials[i]
            name = t.name if seen[i] == 1 else f"{t.name}#{seen[i]}"
            new.append(Trial(t.time, t.signals, name=name))
        copy = self.with_trials(new)
        copy.terms = [term for term in self.terms if term.trial is None]
        for j, i in enumerate(indices):
            copy.terms += [replace(term, trial=j) for term in self.terms if term.trial == i]
        copy._guesses = {k: v for k, v in self._guesses.items() if isinstance(k, str)}
        for (key, v) in [(k, v) for k, v in self._guesses.items() if not isinstance(k, str)]:
            for j, i in enumerate(indices):
                if key[1] == i:
                    copy._guesses[(key[0], j)] = v
        return copy

    def copy(self) -> Problem:
        """An independent copy (same model and trials; terms and guesses copied)."""
        c = self.with_trials(self.trials)
        c._guesses = dict(self._guesses)
        return c

    # ---- queries ------------------------------------------------------------------------
    def trial_index(self, trial: int | str) -> int:
        """Position of a trial given by index or name."""
        if isinstance(trial, (int, np.integer)):
            if not 0 <= int(trial) < len(self.trials):
                raise ProblemError(f"trial index {trial} out of range (0..{len(self.trials) - 1})")
            return int(trial)
        names = [t.name for t in self.trials]
        if trial not in names:
            raise ProblemError(f"no trial named '{trial}'; trials: {', '.join(names)}")
        return names.index(trial)

    def signal_names(self) -> list[str]:
        """Model signals plus the errors-in-variables inputs (the names a fit may use)."""
        return self.model.signal_names() + list(self.input_noise)

    def fit_weights(self, trial: int) -> dict[str, float]:
        """Weights of the signals fitted in trial ``trial``: ``fit`` times its trial weight."""
        factor = self.trial_weights[self.trials[trial].name]
        return {s: self.fit[s] * factor for s in self.fitted_signals(trial)}

    def fitted_signals(self, trial: int) -> list[str]:
        """Signals fitted in trial ``trial``, in model order."""
        t = self.trials[trial]
        return [s for s in self.signal_names() if s in self.fit and s in t]

    @property
    def num_observations(self) -> int:
        """Number of fitted scalar samples over all trials (measured values only: a sample
        that was not measured, NaN in the trial, does not count)."""
        return sum(int(t.present(s).sum()) for i, t in enumerate(self.trials) for s in self.fitted_signals(i))

    def guess_trajectories(self, trial: int, times: np.ndarray) -> dict[str, np.ndarray]:
        """Initial guesses of every state and free-input element at ``times``.

        Measured signals are interpolated (linearly, through the measured values) from the
        trial; an unmeasured state that is the
        plain derivative of a measured one (``set_der(theta, omega)``) is initialised by
        differentiating the measurement; anything else takes the declared guess, unless
        :meth:`set_guess` gave one.
        """
        t = self.trials[trial]
        out: dict[str, np.ndarray] = {}
        model = self.model
        names = model.element_names("state") + model.element_names("free_input") + list(self.input_noise)
        declared = np.concatenate([model.guesses("state"), model.guesses("free_input"),
                                   np.zeros(len(self.input_noise))])
        for name, g in zip(names, declared):
            key = (name, trial) if (name, trial) in self._guesses else name
            if key in self._guesses:
                v = self._guesses[key]
                out[name] = np.broadcast_to(
                    np.asarray(v(times) if callable(v) else v, dtype=float), times.shape
                ).copy()
            elif name in t:
                m = t.present(name)  # through the measured values only
                out[name] = np.interp(times, t.time[m], t[name][m])
            else:
                out[name] = np.full(times.shape, g)
        for pos, vel in model.derivative_pairs():
            if pos in t and vel not in t and vel not in self._guesses and (vel, trial) not in self._guesses:
                m = t.present(pos)
                out[vel] = np.interp(times, t.time[m], np.gradient(t[pos][m], t.time[m]))
        for name in names[: len(names) - len(self.input_noise)]:
            var = model.variable(name)
            i = var.element_names.index(name)
            out[name] = np.clip(out[name], var.lower[i], var.upper[i])
        return out

    def __repr__(self) -> str:
        return (
            f"Problem('{self.name}', {self.model!r}, trials=[{', '.join(t.name for t in self.trials)}], "
            f"fit={self.fit}"
            + (f", trial_weights={ {k: v for k, v in self.trial_weights.items() if v != 1.0} }"
               if any(v != 1.0 for v in self.trial_weights.values()) else "")
            + ")"
        )
