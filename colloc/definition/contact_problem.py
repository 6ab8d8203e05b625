"""A contact identification problem: a :class:`~colloc.ContactSystem`, measured trials, and
the parameters of its forces — fitted by :class:`colloc.Complementarity`, the sequence of
contact modes coming out of the fit (Signorini's law as a complementarity constraint).

Grid-free like :class:`~colloc.Problem`: it says what is measured (each signal a function of
the coordinates and velocities), which parameters are unknown, the noise of each signal and
what the contact modes are called; :func:`colloc.solve` with a :class:`colloc.Complementarity`
says how.  The system's functions must accept CasADi symbols as well as numbers: ``q`` and
``q̇`` come as CasADi columns (index them, ``q[0]``), the parameters ``p`` as a dict holding
the parameters and the inputs at that time (``p["platform_acc"]``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from ..base.errors import ProblemError
from .contact import ContactSystem
from .hybrid_problem import declared_noise
from .trial import Trial

__all__ = ["ContactProblem"]


class ContactProblem:
    """Identify the parameters of a :class:`~colloc.ContactSystem` from measured trials.

    Parameters
    ----------
    system : ContactSystem
        Mass, forces and contact points; ``forces(t, q, q̇, p)`` reads the parameters and the
        inputs from ``p``.  The contact points' Jacobians are taken from ``point`` by CasADi.
    trials : Trial or sequence of Trial
        Records sharing the parameters (each with its own initial state and modes).
    parameters : sequence of str
        The unknowns, names read from ``p`` by the system's functions.
    guess : mapping of str to float
        Start value of every parameter.
    outputs : mapping of str to callable, optional
        Each measured signal as a function ``(q, q̇) → value``; default: the trials' columns
        named like a coordinate measure it.
    noise : mapping of str to float or callable
        The noise σ of every fitted signal (the fit weight is ``1/σ²``), or a function of a
        record's samples returning it.
    inputs : sequence of str
        Measured inputs (trial columns) the forces read as ``p[name]`` (a cubic spline through
        the samples), taken as exact.
    bounds : mapping of str to (float, float), optional
        Search ranges of parameters (default ``(guess/1000, guess·1000)`` for a positive guess).
    scale : mapping of str to float, optional
        Typical size of each parameter (the NLP's unknown is the parameter over it; default
        ``|guess|``).
    modes : mapping of str to sequence of str, optional
        Mode name → the contacts in touch in it.  A set of contacts in touch that no mode
        names fails the fit (``mode_not_declared``).  Default: every subset, named by its
        contacts joined with ``+`` (``"free"`` for none).
    anchors : mapping of str to float, optional
        The x where a contact point stays while in touch (a foot's heel and toe at their
        places); the no-slip condition of that contact is on its position.  Contacts without
        one do not slide by their velocity.
    force_scale : float
        A typical contact force (N; the unit of the force unknowns; the thresholds of the
        modes are fractions of it).
    impulse_scale : float, optional
        The unit of the impulse unknowns (N·s; default ``force_scale/100``).
    start_states : callable, optional
        ``start_states(trial, times)`` → ``(len(times), 2n)`` states [q, q̇] to start the fit
        from; default: the coordinates measured by name, smoothed, and their derivatives.
    hybrid : callable, optional
        ``hybrid(phases, parameters)`` → a :class:`~colloc.HybridProblem` with the sequence of
        modes and the switching times found (``phases``: per trial ``[(mode, start, end),
        ...]``) and the parameters to start from: the polish of
        :class:`~colloc.Complementarity` (its result is the hybrid fit's).
    units, descriptions, limits, chi2_poor
        As :class:`~colloc.HybridProblem`'s.
    name : str, optional
        Default: the system's name.
    """

    def __init__(self, system: ContactSystem, trials: Trial | Sequence[Trial], *, parameters: Sequence[str],
                 guess: Mapping[str, float], noise: Mapping[str, float | Callable[[np.ndarray], float]],
                 outputs: Mapping[str, Callable[[Any, Any], Any]] | None = None, inputs: Sequence[str] = (),
                 bounds: Mapping[str, tuple[float, float]] | None = None, scale: Mapping[str, float] | None = None,
                 modes: Mapping[str, Sequence[str]] | None = None, anchors: Mapping[str, float] | None = None,
                 force_scale: float = 100.0, impulse_scale: float | None = None,
                 start_states: Callable[[Trial, np.ndarray], np.ndarray] | None = None,
                 hybrid: Callable[[list, dict], Any] | None = None, units: Mapping[str, str] | None = None,
                 descriptions: Mapping[str, str] | None = None, limits: Mapping[str, tuple[bool, bool]] | None = None,
                 chi2_poor: float | None = None, name: str | None = None) -> None:
        if not isinstance(system, ContactSystem):
            raise ProblemError(f"ContactProblem(system=...): expected a colloc.ContactSystem, got "
                               f"{type(system).__name__}")
        self.system, self.name = system, name or system.name
        self.trials = [trials] if isinstance(trials, Trial) else list(trials)
        if not self.trials or not all(isinstance(t, Trial) for t in self.trials):
            raise ProblemError("ContactProblem(trials=...): expected a colloc.Trial or a non-empty sequence of them")
        names = [t.name for t in self.trials]
        if len(set(names)) != len(names):
            raise ProblemError(f"ContactProblem: trial names must differ, got {names} (use Trial.renamed)")
        self.parameters = list(parameters)
        if not self.parameters:
            raise ProblemError("ContactProblem(parameters=...): no parameter to identify")
        missing = [p for p in self.parameters if p not in guess]
        if missing:
            raise ProblemError(f"ContactProblem(guess=...): no start value of {', '.join(missing)}")
        self.guess = {p: float(guess[p]) for p in self.parameters}
        self.check_names(guess, "guess")
        self.scale = {p: abs(v) if v else 1.0 for p, v in self.guess.items()}
        self.check_names(scale or {}, "scale")
        self.scale.update({p: float(v) for p, v in (scale or {}).items()})
        if not all(np.isfinite(v) and v > 0 for v in self.scale.values()):
            raise ProblemError(f"ContactProblem(scale=...): every scale must be finite and > 0, got {self.scale}")
        self.bounds = {p: ((v / 1000, v * 1000) if v > 0 else (-math.inf, math.inf)) for p, v in self.guess.items()}
        self.check_names(bounds or {}, "bounds")
        for p, (lo, hi) in (bounds or {}).items():
            if not float(lo) < float(hi):
                raise ProblemError(f"ContactProblem(bounds=...): {p}: lower {lo} must be below upper {hi}")
            self.bounds[p] = (float(lo), float(hi))
        for p, (lo, hi) in self.bounds.items():
            if not lo <= self.guess[p] <= hi:
                raise ProblemError(f"ContactProblem: the guess of {p} ({self.guess[p]}) is outside its bounds "
                                   f"({lo}, {hi})")
        coords = list(system.coordinates)
        if outputs is None:
            outputs = {c: _coordinate(i) for i, c in enumerate(coords) if any(c in t for t in self.trials)}
        self.outputs: dict[str, Callable[[Any, Any], Any]] = dict(outputs)
        if not self.outputs:
            raise ProblemError(f"ContactProblem: no measured signal (outputs=..., or trial columns named like a "
                               f"coordinate: {', '.join(coords)})")
        for s, sigma in noise.items():
            if s not in self.outputs:
                raise ProblemError(f"ContactProblem(noise=...): {s!r} is not a measured signal "
                                   f"({', '.join(self.outputs)})")
            if not callable(sigma) and not (np.isfinite(sigma) and sigma > 0):
                raise ProblemError(f"ContactProblem(noise=...): σ of {s!r} must be finite and > 0 or a function, "
                                   f"got {sigma}")
        unweighted = [s for s in self.outputs if s not in noise]
        if unweighted:
            raise ProblemError(f"ContactProblem(noise=...): no noise σ of {', '.join(unweighted)}")
        self.noise = dict(noise)
        self.inputs = list(inputs)
        for t in self.trials:
            if not any(s in t for s in self.outputs):
                raise ProblemError(f"ContactProblem: trial {t.name!r} holds none of the measured signals "
                                   f"({', '.join(self.outputs)})")
            for u in self.inputs:
                if u not in t or not np.all(np.isfinite(t[u])):
                    raise ProblemError(f"ContactProblem: trial {t.name!r} needs the input {u!r} at every sample")
        contacts = [c.name for c in system.contacts]
        if modes is None:
            modes = {("+".join(s) or "free"): s
                     for k in range(len(contacts), -1, -1) for s in combinations(contacts, k)}
        self.modes = {}
        for m, touching in modes.items():
            unknown = [c for c in touching if c not in contacts]
            if unknown:
                raise ProblemError(f"ContactProblem(modes=...): mode {m!r}: unknown contact(s) {', '.join(unknown)} "
                                   f"(contacts: {', '.join(contacts)})")
            self.modes[frozenset(touching)] = str(m)
        for c in anchors or {}:
            if c not in contacts:
                raise ProblemError(f"ContactProblem(anchors=...): unknown contact {c!r} (contacts: "
                                   f"{', '.join(contacts)})")
        self.anchors = {c: float(v) for c, v in (anchors or {}).items()}
        if not (np.isfinite(force_scale) and force_scale > 0):
            raise ProblemError(f"ContactProblem(force_scale={force_scale!r}): must be finite and > 0")
        self.force_scale = float(force_scale)
        self.impulse_scale = self.force_scale / 100 if impulse_scale is None else float(impulse_scale)
        for what, f in (("start_states", start_states), ("hybrid", hybrid)):
            if f is not None and not callable(f):
                raise ProblemError(f"ContactProblem({what}=...): expected a function")
        self.start_states, self.hybrid = start_states, hybrid
        self.units, self.descriptions = dict(units or {}), dict(descriptions or {})
        self.limits = {p: (False, False) for p in self.parameters}
        self.check_names(limits or {}, "limits")
        self.limits.update({p: (bool(a), bool(b)) for p, (a, b) in (limits or {}).items()})
        if chi2_poor is not None and not (np.isfinite(chi2_poor) and chi2_poor > 1):
            raise ProblemError(f"ContactProblem(chi2_poor={chi2_poor!r}): must be a finite reduced chi-square > 1")
        self.chi2_poor = None if chi2_poor is None else float(chi2_poor)

    def check_names(self, given: Mapping[str, Any], what: str) -> None:
        """Refuse keys of ``given`` that are not parameters (``what``: the argument it came in)."""
        unknown = [k for k in given if k not in self.parameters]
        if unknown:
            raise ProblemError(f"ContactProblem({what}=...): unknown parameter(s) {', '.join(unknown)}; parameters: "
                               f"{', '.join(self.parameters)}")

    def noise_of(self, trial: Trial) -> dict[str, float]:
        """The noise σ of each measured signal ``trial`` holds."""
        return declared_noise(self.noise, trial)

    def mode_of(self, touching: Sequence[str]) -> str | None:
        """The name of the mode with ``touching`` in touch (None: not a declared mode)."""
        return self.modes.get(frozenset(touching))


def _coordinate(i: int) -> Callable[[Any, Any], Any]:
    """``(q, q̇) → q[i]``: a coordinate measured as it is."""
    return lambda q, qd: q[i]
