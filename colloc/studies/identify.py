"""Identification by name: problems and methods named by strings, trials named by files.

The command line (``colloc identify``) and the batch engine (``colloc batch``,
:func:`colloc.studies.batch.batch`) both go through :func:`identify_files`, so that a fit in a
batch is exactly the fit ``colloc identify`` makes of the same files.  Problems are found
through the registry (:mod:`colloc.definition.registry`, the ``colloc.problems`` entry-point
group), which checks each module against the problem protocol; its hooks (an estimator of its
own, a body from height and mass, IPOPT defaults) come from the :class:`ProblemSpec`.  Method
names map to transcriptions and baselines in :data:`METHODS` and :data:`BASELINES`.  Nothing
heavy is imported until a fit runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import OptionsError
from ..definition.registry import ProblemSpec, problem_entry_points, problem_spec

if TYPE_CHECKING:
    from ..definition.hybrid_problem import HybridProblem

__all__ = ["BASELINES", "DEFAULT_METHOD", "METHODS", "identify_files", "load_trials",
           "make_method", "method_names", "problem_registry", "problem_spec", "signal_pairs", "subject_body",
           "trial_names", "window_trials"]


def _transcription(name: str, **fixed):
    def make(**kwargs):
        from ..transcription import methods

        return getattr(methods, name)(**fixed, **kwargs)

    make.__name__ = name
    return make


def _baseline(method: str, gradient: str | None = None, optimizer: str | None = None):
    def make():
        from ..shooting import methods, optimizers

        if gradient is None:
            return getattr(methods, method)()
        return getattr(methods, method)(getattr(methods, gradient)(), getattr(optimizers, optimizer)())

    return make


#: Transcription names (name → factory taking ``num_nodes`` and ``refine``).
METHODS = {
    "radau2": _transcription("Radau", degree=2),
    "radau3": _transcription("Radau", degree=3),
    "hermite-simpson": _transcription("HermiteSimpson"),
    "midpoint": _transcription("Midpoint"),
    "backward-euler": _transcription("BackwardEuler"),
    "trapezoidal": _transcription("Trapezoidal"),
}
#: The method used when none is named (that of :func:`colloc.solve`).
DEFAULT_METHOD = "radau2"
#: Shooting baselines (name → factory).
BASELINES = {
    "shooting-adjoint": _baseline("SingleShooting", "Adjoint", "LBFGS"),
    "shooting-forward": _baseline("SingleShooting", "Forward", "LBFGS"),
    "shooting-steepest": _baseline("SingleShooting", "Adjoint", "SteepestDescent"),
    "shooting-ipopt": _baseline("SingleShooting", "Adjoint", "ReducedIpopt"),
    "multiple-shooting": _baseline("MultipleShooting"),
}


def method_names() -> list[str]:
    """Every method name (collocation first, then baselines)."""
    return [*METHODS, *BASELINES]


def problem_registry() -> dict[str, metadata.EntryPoint]:
    """Problems installed under the ``colloc.problems`` entry-point group."""
    return problem_entry_points()


def signal_pairs(items, what: str = "COLUMN") -> dict[str, str]:
    """``SIGNAL=NAME`` items (``--column cop=COPx``, a manifest's ``cop=COPx;time=Time``) as a
    mapping; a malformed item raises ``ValueError`` naming it, for the caller to place."""
    pairs = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise ValueError(f"{item!r} is not SIGNAL={what}")
        pairs[name.strip()] = value.strip()
    return pairs


def subject_body(problem_name: str, height: float, mass: float) -> dict:
    """The problem's body for a subject of ``height`` (m) and ``mass`` (kg) (``--height/--mass``,
    a manifest's ``height, mass``); ``ValueError`` when the problem has no body model or the
    values are not a body's."""
    spec = problem_spec(problem_name)
    if spec.body is None:
        raise ValueError(f"problem '{problem_name}' has no body model")
    return spec.body(height=height, mass=mass)


def make_method(name: str, nodes: int | None = None, refine: int = 1):
    """The method object for a method name (collocation or baseline).

    ``nodes`` (collocation nodes per trial) and ``refine`` (mesh intervals per sample
    interval) apply to the collocation methods only.
    """
    if name not in METHODS and name not in BASELINES:
        raise OptionsError(f"unknown method '{name}'; available: {', '.join(method_names())}")
    if nodes is not None and nodes < 2:
        raise OptionsError(f"--nodes must be >= 2, got {nodes}")
    if refine < 1:
        raise OptionsError(f"--refine must be >= 1, got {refine}")
    if name in METHODS:
        return METHODS[name](num_nodes=nodes, refine=refine)
    for option, value, default in (("--nodes", nodes, None), ("--refine", refine, 1)):
        if value != default:
            raise OptionsError(f"{option} applies to the collocation methods ({', '.join(METHODS)}), not to {name}")
    return BASELINES[name]()


def trial_names(paths: Sequence[str]) -> list[str]:
    """Unique, short names for trial files: the file name, or as many trailing folders as
    it takes to tell files with the same name apart (``s1/trial.csv``, ``s2/trial.csv``)."""
    parts = [Path(p).resolve().parts for p in paths]
    depth = [1] * len(paths)
    while True:
        names = ["/".join(pt[-d:]) for pt, d in zip(parts, depth)]
        clash = {n for n in names if names.count(n) > 1}
        if not clash:
            return names
        grown = False
        for i, n in enumerate(names):
            if n in clash and depth[i] < len(parts[i]):
                depth[i] += 1
                grown = True
        if not grown:  # the same file given twice
            raise OptionsError(f"--data {paths[names.index(next(iter(clash)))]} is given more than once")


def load_trials(spec: ProblemSpec, paths: Sequence[str], missing: str = "error",
                columns: Mapping[str, str] | None = None, units: Mapping[str, str] | None = None) -> list:
    """Read the trials with the problem's ``load_trial``; ``missing="allow"`` and the lab-file
    mapping ``columns``/``units`` (:meth:`colloc.Trial.from_csv`) are passed on (a problem
    whose loader does not take them is told so)."""
    extra: dict = {}
    takes = spec.keywords["load_trial"]
    if missing != "error":
        if "missing" not in takes:
            raise OptionsError(f"--missing {missing}: the load_trial of problem '{spec.name}' has no missing= "
                               "argument, so it cannot read unmeasured samples")
        extra["missing"] = missing
    for option, key, given in (("--column", "columns", columns), ("--unit", "units", units)):
        if given:
            if key not in takes:
                raise OptionsError(f"{option}: the load_trial of problem '{spec.name}' cannot map lab "
                                   f"columns ({key}=)")
            extra[key] = dict(given)
    return [spec.load_trial(p, **extra) for p in paths]


def identify_files(problem_name: str, paths: Sequence[str], *, method: str | None = DEFAULT_METHOD,
                   nodes: int | None = None, refine: int = 1, max_iter: int = 500, start: str | None = None,
                   starts: int = 1, seed: int = 0, missing: str = "error", names: Sequence[str] | None = None,
                   fit_weights: Mapping[str, float] | None = None, guess: Mapping[str, float] | None = None,
                   bounds: Mapping[str, tuple] | None = None, absolute_sigma: bool = False,
                   print_level: int = 0, progress: Callable | None = None, client=None,
                   columns: Mapping[str, str] | None = None, units: Mapping[str, str] | None = None,
                   problem_options: Mapping | None = None, time_limit: float | None = None,
                   window: tuple[float | None, float | None] | None = None, cohort: bool = False):
    """Identify problem ``problem_name`` from the trial files ``paths``; the
    :class:`~colloc.Result` (``success`` False rather than an exception when the solver
    fails).  Options as in ``colloc identify``; bad options raise :class:`OptionsError`.
    ``columns``/``units`` map a lab's file (:meth:`colloc.Trial.from_csv`);
    ``problem_options`` are keyword arguments of the problem's ``problem()`` (e.g. ``body``).
    ``method=None``: the problem's choice for these trials (``default_method(trials, options)``,
    e.g. cip's Kalman ML for one COP-only trial of a real subject), else the default.
    ``time_limit`` (s, > 0): the wall-clock budget, IPOPT's ``max_wall_time`` of the solve, or
    the ``time_limit`` of a problem that runs its own fit (refused by a problem without one).
    ``window`` ``(start, end)`` (s, the records' own time; ``None`` an open side): only the
    samples with ``start <= time < end`` are fitted (``--window A:B``); the result's
    ``info["window_s"]`` keeps it.  ``cohort``: the fit is one of a batch's (``colloc batch``), so
    a method the problem runs itself gets the problem's ``cohort_options`` where
    ``problem_options`` do not set them (one model for every trial of a cohort)."""
    from ..solving.ipopt import Ipopt
    from ..solving.solve import solve

    spec = problem_spec(problem_name)
    chosen = method is None
    if chosen:  # resolved once the trials are read; the options are checked against the default now
        make_method(DEFAULT_METHOD, nodes, refine)
    own = method in spec.own_methods
    solver_method = None if own or method is None else make_method(method, nodes, refine)
    if max_iter < 0:
        raise OptionsError(f"--max-iter must be >= 0, got {max_iter}")
    if time_limit is not None and not time_limit > 0:
        raise OptionsError(f"--time-limit must be > 0 seconds, got {time_limit}")
    paths = [str(p) for p in paths]
    if names is not None and len(names) != len(paths):
        raise OptionsError(f"--name given {len(names)} time(s) for {len(paths)} --data file(s); give one per file")
    trials = load_trials(spec, paths, missing, columns, units)
    labels = list(names) if names is not None else trial_names(paths)
    if len(set(labels)) != len(labels):
        raise OptionsError(f"--name: names must be unique, got {', '.join(labels)}")
    trials = [t.renamed(n) for t, n in zip(trials, labels)]
    if window is not None:
        trials = window_trials(trials, problem_name, window)
    if chosen:
        picked = spec.default_method(trials, dict(problem_options or {})) if spec.default_method else None
        method = picked or DEFAULT_METHOD
        own = method in spec.own_methods
        solver_method = None if own else make_method(method, nodes, refine)
    assert method is not None  # named by the caller, or chosen above
    if own:  # an estimator the problem runs itself (cip: --method kalman-ml)
        if cohort and spec.cohort_options is not None:
            problem_options = {**spec.cohort_options(trials, dict(problem_options or {})), **(problem_options or {})}
        result = _own_method(spec, trials, method=method, nodes=nodes, refine=refine, max_iter=max_iter,
                             start=start, starts=starts, fit_weights=fit_weights, guess=guess, bounds=bounds,
                             absolute_sigma=absolute_sigma, print_level=print_level,
                             problem_options=_with_time_limit(spec, "identify_method", problem_options, time_limit),
                             client=client)
        result.trials = paths
        return _windowed(result, window)
    if "controller" in (problem_options or {}) and "controller" not in spec.keywords["identify_result"]:
        raise OptionsError(f"--controller applies to --method {' or '.join(spec.own_methods)} of problem "
                           f"'{problem_name}'" if spec.own_methods
                           else f"--controller: problem '{problem_name}' has no controller variants")
    if "errors" in (problem_options or {}):
        raise OptionsError(f"--errors applies to --method {' or '.join(spec.own_methods)} of problem '{problem_name}'"
                           if spec.own_methods else f"--errors: problem '{problem_name}' has no stochastic estimator "
                           "(--errors is for cip's --method kalman-ml)")
    if spec.identify_result is not None:  # a problem with its own transcription (hybrid: fes-muscle, heel-off)
        result = _own_identification(spec, trials, method=method, nodes=nodes, refine=refine, max_iter=max_iter,
                                     start=start, starts=starts, fit_weights=fit_weights, guess=guess,
                                     bounds=bounds, absolute_sigma=absolute_sigma, print_level=print_level,
                                     problem_options=_with_time_limit(spec, "identify_result", problem_options,
                                                                      time_limit),
                                     client=client)
        result.trials = paths
        return _windowed(result, window)
    for key in problem_options or {}:
        if key not in spec.keywords["problem"]:
            raise OptionsError(f"problem '{problem_name}' has no option {key}= (e.g. --height/--mass are for cip)")
    problem = spec.problem(trials, **dict(problem_options or {}))
    from ..definition.hybrid_problem import HybridProblem  # here: the command's start-up needs no NumPy

    if isinstance(problem, HybridProblem):
        result = _identify_hybrid(spec, problem, solver_method, nodes=nodes, refine=refine, max_iter=max_iter,
                                  start=start, starts=starts, fit_weights=fit_weights, guess=guess, bounds=bounds,
                                  absolute_sigma=absolute_sigma, print_level=print_level, progress=progress,
                                  client=client, time_limit=time_limit)
        result.problem = problem_name
        result.trials = paths
        return _windowed(result, window)
    model = problem.model
    pnames = model.element_names("parameter")
    declared = {v.name for v in model.variables("parameter")}
    for option, given in (("--guess", guess), ("--bounds", bounds)):
        unknown = [k for k in (given or {}) if k not in pnames and k not in declared]
        if unknown:
            raise OptionsError(f"{option}: unknown parameter(s) {', '.join(unknown)}; parameters: {', '.join(pnames)}")
    for name, (lo, hi) in (bounds or {}).items():
        model.set_bounds(name, lo, hi)
    if guess:
        guess = {e: v for k, v in guess.items() for e in (model.variable(k).element_names if k not in pnames else [k])}
    if fit_weights:
        signals = problem.signal_names()
        unknown = [k for k in fit_weights if k not in signals]
        if unknown:
            raise OptionsError(f"--fit-weight: unknown signal(s) {', '.join(unknown)}; signals: {', '.join(signals)}")
        problem = problem.with_fit(fit_weights)
    # a problem may set IPOPT defaults of its own (ship-stance: the Gauss–Newton Hessian)
    ipopt = {**spec.ipopt_options, "print_level": print_level, "max_iter": max_iter,
             "absolute_sigma": absolute_sigma}
    if time_limit is not None:
        ipopt["extra"] = {**(ipopt.get("extra") or {}), "max_wall_time": float(time_limit)}
    solver = Ipopt(**ipopt)
    result = solve(problem, solver_method, solver=solver, guess=guess or None, progress=progress, throw=False,
                   start=start, starts=starts, seed=seed, client=client)
    result.problem = problem_name
    result.trials = paths
    return _windowed(result, window)


def _identify_hybrid(spec: ProblemSpec, problem: HybridProblem, method, *, nodes, refine: int, max_iter: int, start,
                     starts: int, fit_weights, guess, bounds, absolute_sigma: bool, print_level: int, progress,
                     client, time_limit):
    """``colloc identify`` of a problem whose ``problem()`` is a :class:`~colloc.HybridProblem`:
    the options checked against it (those a hybrid fit cannot honour refused by name), then
    :func:`colloc.solve`."""
    from ..solving.ipopt import Ipopt
    from ..solving.solve import solve
    from ..transcription.methods import Radau

    refused = [("--nodes", nodes is not None), ("--refine", refine != 1), ("--start", start not in (None, "guess")),
               ("--starts", starts != 1), ("a cluster (client)", client is not None)]
    for option, given in refused:
        if given:
            raise OptionsError(f"{option} does not apply to problem '{spec.name}' (a hybrid problem: phases "
                               "collocated from its guess)")
    if not isinstance(method, Radau):
        raise OptionsError(f"--method {getattr(method, 'name', method)}: problem '{spec.name}' is hybrid, collocated "
                           "phase by phase on Radau points; use radau2, radau3, ...")
    for option, given in (("--guess", guess), ("--bounds", bounds)):
        unknown = [k for k in (given or {}) if k not in problem.parameters]
        if unknown:
            raise OptionsError(f"{option}: unknown parameter(s) {', '.join(unknown)}; parameters: "
                               f"{', '.join(problem.parameters)}")
    for name, (lo, hi) in (bounds or {}).items():  # a bound given narrows the problem's own
        old_lo, old_hi = problem.bounds[name]
        new = (old_lo if lo is None else max(old_lo, float(lo)), old_hi if hi is None else min(old_hi, float(hi)))
        if not new[0] < new[1]:
            raise OptionsError(f"--bounds {name}: the range ({new[0]}, {new[1]}) is empty")
        problem.bounds[name] = new
    if fit_weights:
        unknown = [k for k in fit_weights if k not in problem.fit]
        if unknown:
            raise OptionsError(f"--fit-weight: unknown signal(s) {', '.join(unknown)}; "
                               f"signals: {', '.join(problem.fit)}")
        problem = problem.with_fit(fit_weights)
    ipopt = {**spec.ipopt_options, "print_level": print_level, "max_iter": max_iter, "absolute_sigma": absolute_sigma}
    if time_limit is not None:
        ipopt["extra"] = {**(ipopt.get("extra") or {}), "max_wall_time": float(time_limit)}
    for name, value in (guess or {}).items():  # a guess given must be inside (the problem's own start is moved in)
        lo, hi = problem.bounds[name]
        if not lo <= value <= hi:
            raise OptionsError(f"--guess {name}={value} is outside its bounds ({lo}, {hi})")
    return solve(problem, method, solver=Ipopt(**ipopt), guess=dict(guess or {}) or None, progress=progress,
                 throw=False)


def window_trials(trials: Sequence, problem_name: str, window: tuple[float | None, float | None]) -> list:
    """Each trial cut to ``start <= time < end`` (:meth:`colloc.Trial.window`); a trial type
    that cannot be cut is refused by name."""
    start, end = window
    out = []
    for trial in trials:
        if not hasattr(trial, "window"):
            raise OptionsError(f"--window: the trials of problem '{problem_name}' ({type(trial).__name__}) "
                               "cannot be cut to a window")
        out.append(trial.window(start, end))
    return out


def _windowed(result, window):
    """``result`` with the fitted window in ``info["window_s"]`` (``None`` for an open side)."""
    if window is not None:
        result.info["window_s"] = [None if v is None else float(v) for v in window]
    return result


def _with_time_limit(spec: ProblemSpec, hook: str, problem_options: Mapping | None, time_limit) -> dict:
    """``problem_options`` with ``time_limit`` for a problem's own fit ``hook`` (refused by name
    when it has no time limit)."""
    options = dict(problem_options or {})
    if time_limit is None:
        return options
    if not spec.keywords[hook].accepts("time_limit"):
        raise OptionsError(f"--time-limit does not apply to problem '{spec.name}' (its own fit has no time limit)")
    return {**options, "time_limit": float(time_limit)}


def _own_method(spec: ProblemSpec, trials: list, *, method: str, nodes, refine: int, max_iter: int, start,
                starts: int, fit_weights, guess, bounds, absolute_sigma: bool, print_level: int, problem_options,
                client):
    """A method the problem runs itself (``OWN_METHODS``, ``identify_method(trials, method=,
    guess=, bounds=, max_iter=, print_level=, **problem_options)`` → :class:`~colloc.Result`):
    the options it cannot honour are refused, each by name."""
    refused = [("--nodes", nodes is not None), ("--refine", refine != 1), ("--start", start is not None),
               ("--starts", starts != 1), ("--fit-weight", bool(fit_weights)), ("--absolute-sigma", absolute_sigma),
               ("a cluster (client)", client is not None)]
    for option, given in refused:
        if given:
            raise OptionsError(f"{option} does not apply to --method {method} of problem '{spec.name}'")
    assert spec.identify_method is not None  # the method is one of the problem's own (spec.own_methods)
    return spec.identify_method(trials, method=method, guess=guess, bounds=bounds, max_iter=max_iter,
                                print_level=print_level, **dict(problem_options or {}))


def _own_identification(spec: ProblemSpec, trials: list, *, method: str, nodes, refine: int, max_iter: int,
                        start, starts: int, fit_weights, guess, bounds, absolute_sigma: bool, print_level: int,
                        problem_options, client):
    """A problem that transcribes itself (``identify_result(trials, method=, guess=, bounds=,
    max_iter=, print_level=)`` → :class:`~colloc.Result`; ``start=``, ``starts=``, ``client=`` and
    ``fit_weights=`` passed when it takes them):
    the options it cannot honour are refused, each by name."""
    takes = spec.keywords["identify_result"]
    refused = [("--nodes", nodes is not None), ("--refine", refine != 1),
               ("--start", start is not None and "start" not in takes),
               ("--starts", starts != 1 and "starts" not in takes),
               ("--fit-weight", bool(fit_weights) and "fit_weights" not in takes),
               ("--absolute-sigma", absolute_sigma),
               ("a cluster (client)", client is not None and "client" not in takes)]
    refused += [(f"problem option {k}=", True) for k in (problem_options or {}) if k not in takes]
    for option, given in refused:
        if given:
            raise OptionsError(f"{option} does not apply to problem '{spec.name}' (it has its own transcription)")
    assert spec.identify_result is not None  # called only for a problem that has it
    more = {k: v for k, v in (("start", start), ("client", client)) if v is not None}
    if starts != 1:
        more["starts"] = starts
    if fit_weights:
        more["fit_weights"] = dict(fit_weights)
    return spec.identify_result(trials, method=method, guess=guess, bounds=bounds, max_iter=max_iter,
                                print_level=print_level, **more, **dict(problem_options or {}))
