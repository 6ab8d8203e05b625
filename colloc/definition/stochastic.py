"""A stochastic identification problem: a linear-Gaussian state-space model and its records.

:class:`colloc.Problem` states *implicit dynamics* ``0 = f(ẋ, x, r, p, t)`` fitted by
collocation; a :class:`StochasticProblem` states a *linear stochastic* model (a
:class:`colloc.kalman.LinearGaussianModel`: ``s' = A(θ) s + G(θ) w``, ``y = C(θ) s + e``) whose
parameters are estimated from the likelihood of the measured signals, by
:class:`colloc.KalmanML` through the same :func:`colloc.solve`::

    problem = co.StochasticProblem(lambda dt: my_model(dt), trial, outputs=["cop"],
                                   start={"k": 1.0, "sigma": 1e-3}, bounds={"k": (0.1, 10)})
    result = co.solve(problem, co.KalmanML())

Everything a result reports about a parameter (search range or physical limit, unit,
description) is declared here, so that the report, the verdict and the intervals are the
library's, as for every other problem.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..base.errors import ModelError, OptionsError
from .trial import Trial

__all__ = ["StochasticProblem"]


def _pair(name: str, value) -> tuple[float, float]:
    try:
        lo, hi = value
        lo = -math.inf if lo is None else float(lo)
        hi = math.inf if hi is None else float(hi)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"StochasticProblem: bounds[{name!r}] must be (lower, upper), got {value!r}") from exc
    if not lo < hi:
        raise ModelError(f"StochasticProblem: bounds[{name!r}] = ({lo}, {hi}) is empty")
    return lo, hi


class StochasticProblem:
    """Records and a linear-Gaussian state-space model whose parameters are to be estimated.

    Parameters
    ----------
    model : callable or LinearGaussianModel
        ``model(dt)`` returning the :class:`colloc.kalman.LinearGaussianModel` at the sample
        step ``dt`` of a record (its continuous-time matrices may depend on ``dt``, e.g. a
        white-noise input held over a sample), or one such model (then every record must be
        sampled at its ``dt``).
    trials : Trial or sequence of Trial
        The records; each is fitted on its own sample grid (missing samples allowed).
    outputs : sequence of str
        The trial columns that are the model's outputs ``y``, in the model's output order.
    start : mapping
        Start value of every parameter that is not ``fixed``.
    bounds : mapping, optional
        ``name -> (lower, upper)``: where the fit looks (a *search range*: an estimate on it is
        a failure), unless declared ``physical``.  ``None`` on a side: unbounded.
    physical : mapping, optional
        ``name -> True`` (both bounds are physical limits, so an estimate there is an answer),
        or ``(lower_is_physical, upper_is_physical)``.
    starts : sequence of mapping, optional
        Further start points (each overrides some of ``start``), where the likelihood is known
        to have several optima: the estimate is the lowest NLL among the fits that succeed, and
        another optimum within the likelihood-ratio threshold is reported as ambiguous.
    fixed : mapping, optional
        ``name -> value`` held fixed.
    center : bool
        Subtract each output's record mean first (a sensor whose origin is not the model's);
        the means are reported as parameters ``<output>_offset`` without standard errors.
    units, descriptions : mapping, optional
        For the report (parameters and outputs).
    stable : bool
        The identified continuous-time state matrix must be stable (an eigenvalue at 0 within
        1e-9 of the spectrum's size, a pure integrator, is allowed); default True.
    notes : callable, optional
        ``notes(parameters) -> list of str``: derived quantities printed under the table.
    checks : callable, optional
        ``checks(parameters) -> list of dict``: the problem's own warnings (``code``, ``message``,
        ``parameters``), e.g. an estimate outside a physiological range.
    info : callable, optional
        ``info(parameters) -> dict``: extra entries of ``Result.info``.
    name : str
        The problem's name in results.
    label : str, optional
        What the model is, for the report (e.g. the controller).
    nested : callable, optional
        ``nested(trial) -> StochasticProblem``: a simpler model nested in this one (this model with
        some of its parameters at a limit, e.g. a gain at 0: a model without them, or this one with
        them ``fixed``), on the same record and outputs.  Unless
        a guess is given, :class:`colloc.KalmanML` fits it first (with its own starts) and starts this
        model once, from its estimate completed by ``nested_start``, in place of ``start`` and
        ``starts``: one more parameter from the nested optimum instead of a search of the larger
        model from afar.  When no nested fit succeeds, ``start`` and ``starts`` are used; when the
        fit from the nested estimate fails, they are fitted as well (``KalmanML``: their searches
        first, then finished from the lowest until one succeeds).  The
        nested fit's NLL is reported with the likelihood-ratio test of the added parameters
        (``info["nested"]``), and its other optima count as this model's (the ambiguity warning).
    nested_start : mapping, optional
        Start values of the parameters ``nested`` lacks (required with ``nested``), near the
        nesting limit (a small positive gain rather than 0, so that the search has a scale).
    """

    def __init__(self, model: Callable[[float], Any] | Any, trials: Trial | Sequence[Trial], *,
                 outputs: Sequence[str], start: Mapping[str, float],
                 bounds: Mapping[str, tuple] | None = None,
                 physical: Mapping[str, bool | tuple[bool, bool]] | None = None,
                 fixed: Mapping[str, float] | None = None, center: bool = False,
                 starts: Sequence[Mapping[str, float]] = (),
                 units: Mapping[str, str] | None = None, descriptions: Mapping[str, str] | None = None,
                 stable: bool = True, notes: Callable[[dict], list[str]] | None = None,
                 checks: Callable[[dict], list[dict]] | None = None,
                 info: Callable[[dict], dict] | None = None, name: str = "stochastic", label: str = "",
                 nested: Callable[[Trial], StochasticProblem] | None = None,
                 nested_start: Mapping[str, float] | None = None) -> None:
        trials = [trials] if isinstance(trials, Trial) else list(trials)
        if not trials or not all(isinstance(t, Trial) for t in trials):
            raise OptionsError("StochasticProblem: trials must be a colloc.Trial or a non-empty list of them")
        if isinstance(outputs, str):
            outputs = [outputs]
        outputs = list(outputs)
        if not outputs:
            raise ModelError("StochasticProblem: at least one output column is needed")
        for t in trials:
            absent = [c for c in outputs if c not in t.signals]
            if absent:
                raise OptionsError(f"StochasticProblem: trial '{t.name}' has no column {', '.join(absent)} "
                                   f"(it has {', '.join(t.signals) or 'none'})")
        if not callable(model) and not hasattr(model, "parameter_names"):
            raise ModelError("StochasticProblem: model must be a LinearGaussianModel or a callable dt -> model")
        self._model = model
        self.trials = trials
        self.outputs = outputs
        self.fixed = {k: float(v) for k, v in (fixed or {}).items()}
        self.start = {k: float(v) for k, v in start.items()}
        self.starts = [{k: float(v) for k, v in point.items()} for point in starts]
        self.bounds = {k: _pair(k, v) for k, v in (bounds or {}).items()}
        self.physical = dict(physical or {})
        self.center = bool(center)
        self.units = dict(units or {})
        self.descriptions = dict(descriptions or {})
        self.stable = bool(stable)
        self.notes = notes
        self.checks = checks
        self.extra_info = info
        self.name = str(name)
        self.label = str(label)
        if nested is not None and not callable(nested):
            raise ModelError("StochasticProblem: nested must be a callable trial -> StochasticProblem")
        if nested is not None and not nested_start:
            raise ModelError("StochasticProblem: nested needs nested_start, the start values of the parameters "
                             "the nested model lacks")
        self.nested = nested
        self.nested_start = {k: float(v) for k, v in (nested_start or {}).items()}
        names = self.model_at(self.sample_step(0)).parameter_names
        self.parameter_names = tuple(names)
        given = set(self.start) | set(self.bounds) | set(self.fixed) | set(self.physical) | set(self.nested_start)
        unknown = sorted((given | {k for point in self.starts for k in point}) - set(names))
        if unknown:
            raise ModelError(f"StochasticProblem: unknown parameter(s) {', '.join(unknown)}; the model's: "
                             f"{', '.join(names)}")
        lacking = [k for k in names if k not in self.start and k not in self.fixed]
        if lacking:
            raise ModelError(f"StochasticProblem: no start value for {', '.join(lacking)}")
        outside = sorted({k for point in [self.start, *self.starts, self.nested_start] for k, v in point.items()
                          if k in self.bounds and not self.bounds[k][0] <= v <= self.bounds[k][1]})
        if outside:
            raise OptionsError(f"StochasticProblem: the start of {', '.join(outside)} lies outside its bounds "
                               f"{[self.bounds[k] for k in outside]}")

    def sample_step(self, trial: int) -> float:
        """The median sample step of trial ``trial`` (s)."""
        return float(np.median(np.diff(self.trials[trial].time)))

    def model_at(self, dt: float) -> Any:  # the model as given (a LinearGaussianModel, duck-typed here)
        """The linear-Gaussian model at sample step ``dt``."""
        if hasattr(self._model, "parameter_names"):  # a model built for one step
            built = float(getattr(self._model, "dt", math.nan))
            if not math.isclose(built, dt, rel_tol=1e-6):
                raise OptionsError(f"StochasticProblem: the model is built for a step of {built:g} s, "
                                   f"a record is sampled every {dt:g} s; pass a callable dt -> model")
            return self._model
        return self._model(dt)

    def with_trials(self, trials: Trial | Sequence[Trial]) -> StochasticProblem:
        """The same problem on other records."""
        new = object.__new__(StochasticProblem)
        new.__dict__.update(self.__dict__)
        new.trials = [trials] if isinstance(trials, Trial) else list(trials)
        return new

    def __repr__(self) -> str:
        return (f"StochasticProblem({self.name!r}, parameters {list(self.parameter_names)}, "
                f"outputs {self.outputs}, {len(self.trials)} trial(s))")
