"""The problems colloc knows: what a problem module declares, and the registry that finds it.

A problem is a module registered under the ``colloc.problems`` entry-point group (a package's
``pyproject.toml``: ``[project.entry-points."colloc.problems"] my-problem = "mypkg.problem"``).
:class:`ProblemModule` states what every such module provides and :class:`ProblemHooks` the
optional hooks of problems that need more than the library's own path (a body from height and
mass, an estimator of their own, a stochastic prediction model).  :func:`problem_spec` loads a
registered module, checks it against both once and returns a :class:`ProblemSpec`, so that
the command line, the batch engine and ``colloc predict`` never probe a module themselves; a
module that does not follow the protocol is refused with a :class:`~colloc.ProblemError`
naming the module and every missing or ill-typed attribute.

Two more groups let a package extend colloc without colloc importing it:

* ``colloc.commands``: ``name = "mypkg.command:add_parser"``, a function that adds the
  sub-command ``colloc name`` to the command line's sub-parsers and returns its parser;
* ``colloc.data``: ``mypkg = "mypkg.data:data_path"``, the function that finds the files the
  package ships (``data_path(*parts) -> Path``), named after the package's top-level import
  name.  A problem's ``DEFAULT_DATA`` is found through its own ``data_path`` hook, else through
  the ``colloc.data`` entry point of its package.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from ..base.errors import OptionsError, ProblemError

__all__ = ["COMMANDS_GROUP", "DATA_GROUP", "PROBLEMS_GROUP", "Keywords", "ProblemHooks", "ProblemModule",
           "ProblemSpec", "check_problem_module", "command_entry_points", "data_locator",
           "load_command", "problem_entry_points", "problem_spec"]

PROBLEMS_GROUP = "colloc.problems"
COMMANDS_GROUP = "colloc.commands"
DATA_GROUP = "colloc.data"

#: ``DEFAULT_DATA``: the path parts of one shipped file or folder (``("pendulum", "pendulum.csv")``,
#: a folder standing for its ``.csv`` files), or a tuple of such.
DataSpec = tuple[str, ...] | tuple[tuple[str, ...], ...]


class ProblemModule(Protocol):
    """What every registered problem module provides.

    ``REQUIRED_COLUMNS`` may be spelt ``COLUMNS`` with the time column first (heel-off's
    spelling).  The functions are called as written here; a module's own functions may take
    more keyword arguments (``load_trial(path, missing=, columns=, units=)``, options of
    ``problem``), which :attr:`ProblemSpec.keywords` records for the options that reach them.
    """

    #: The known answer of the synthetic case its generator makes (parameter → value; may be empty).
    TRUE: Mapping[str, float]
    #: The shipped records of its demo (:data:`DataSpec`).
    DEFAULT_DATA: DataSpec
    #: The signal columns a record must have (the time column aside).
    REQUIRED_COLUMNS: Sequence[str]

    def load_trial(self, path: str, /) -> Any:
        """One measured record read from ``path`` (a :class:`colloc.Trial` or the problem's own)."""

    def problem(self, trials: Sequence[Any], /) -> Any:
        """The :class:`colloc.Problem` of ``trials`` (a problem with its own fit may refuse)."""


class ProblemHooks(Protocol):
    """The optional hooks of a problem module: each may be absent, and is checked when present."""

    #: Columns read when present.
    OPTIONAL_COLUMNS: Sequence[str]
    #: The states, in the order its figures show them.
    STATE_NAMES: Sequence[str]
    #: IPOPT defaults of its fits (:class:`colloc.Ipopt` keyword arguments).
    IPOPT_OPTIONS: Mapping[str, Any]
    #: Method names it runs itself, through :meth:`identify_method`.
    OWN_METHODS: Sequence[str]

    def model(self) -> Any:
        """Its default :class:`colloc.Model`."""

    def body(self, *, height: float, mass: float) -> Mapping[str, float]:
        """The body of a subject of ``height`` (m) and ``mass`` (kg) (``--height/--mass``)."""

    def default_method(self, trials: Sequence[Any], options: Mapping[str, Any], /) -> str | None:
        """The method for these trials when none is named (``None``: the library's default)."""

    def identify_method(self, trials: Sequence[Any], /, *, method: str, guess: Any, bounds: Any,
                        max_iter: int, print_level: int) -> Any:
        """A :class:`colloc.Result` of one of :attr:`OWN_METHODS`."""

    def identify_result(self, trials: Sequence[Any], /, *, method: str, guess: Any, bounds: Any,
                        max_iter: int, print_level: int) -> Any:
        """A :class:`colloc.Result` of its own transcription (instead of :func:`colloc.solve`)."""

    def prediction_model(self, result: Any, trial: Any, /) -> Any:
        """What ``result`` predicts ``trial`` with (``colloc predict``)."""

    def cohort_options(self, trials: Sequence[Any], options: Mapping[str, Any], /) -> Mapping[str, Any]:
        """Options of :attr:`OWN_METHODS` that every fit of a batch gets unless its manifest row
        sets them (``colloc batch``): the one model a cohort's trials are compared in, where the
        single fit's default chooses per trial (cip: ``--controller auto``)."""

    def data_path(self, *parts: str) -> Path:
        """Where its shipped file ``parts`` is (else its package's ``colloc.data`` entry point)."""


@dataclass(frozen=True)
class Keywords:
    """The keyword arguments a function takes: ``name in kw`` for one it names, and
    :meth:`accepts` for one it names or takes through ``**kwargs``."""

    names: frozenset[str]
    open: bool = False

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def accepts(self, name: str) -> bool:
        """Whether a call may pass ``name=`` (named, or taken by ``**kwargs``)."""
        return name in self.names or self.open

    @classmethod
    def of(cls, function: Callable | None) -> Keywords:
        """The keywords of ``function`` (none for ``None`` or a callable without a signature)."""
        if function is None:
            return cls(frozenset())
        try:
            params = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):
            return cls(frozenset())
        named = frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        return cls(named, any(p.kind is p.VAR_KEYWORD for p in params))


# ---- the checks: one row per attribute of the two protocols -------------------------------------------

def _names(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value)


def _parts(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) > 0 and all(isinstance(v, str) and v for v in value)


def _data_spec(value: Any) -> bool:
    return _parts(value) or (isinstance(value, tuple) and len(value) > 0 and all(_parts(v) for v in value))


def _truth(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, numbers.Real)
                                              for k, v in value.items())


def _options(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(k, str) for k in value)


def _calls(*args: Any, **kwargs: Any) -> Callable[[Any], bool]:
    """A check that the attribute is a function that can be called with ``args``/``kwargs``."""
    def check(value: Any) -> bool:
        if not callable(value):
            return False
        try:
            inspect.signature(value).bind(*args, **kwargs)
        except TypeError:
            return False
        except ValueError:  # no signature to read (a builtin): callable is all that can be told
            return True
        return True

    return check


_OWN_CALL = {"method": "m", "guess": None, "bounds": None, "max_iter": 1, "print_level": 0}


@dataclass(frozen=True)
class _Attribute:
    name: str
    required: bool
    expected: str
    check: Callable[[Any], bool]


_ATTRIBUTES = (
    _Attribute("TRUE", True, "a mapping parameter name → number", _truth),
    _Attribute("DEFAULT_DATA", True, "path parts (str) of a shipped file or folder, or a tuple of such", _data_spec),
    _Attribute("REQUIRED_COLUMNS", True, "a tuple of column names (or COLUMNS, the time column first)", _names),
    _Attribute("load_trial", True, "a function load_trial(path)", _calls("path")),
    _Attribute("problem", True, "a function problem(trials)", _calls([])),
    _Attribute("OPTIONAL_COLUMNS", False, "a tuple of column names", _names),
    _Attribute("STATE_NAMES", False, "a tuple of state names", _names),
    _Attribute("IPOPT_OPTIONS", False, "a mapping of colloc.Ipopt keyword arguments", _options),
    _Attribute("OWN_METHODS", False, "a tuple of method names", _names),
    _Attribute("model", False, "a function model() (its default model)", _calls()),
    _Attribute("body", False, "a function body(height=, mass=)", _calls(height=1.0, mass=1.0)),
    _Attribute("default_method", False, "a function default_method(trials, options)", _calls([], {})),
    _Attribute("identify_method", False, "a function identify_method(trials, method=, guess=, bounds=, "
               "max_iter=, print_level=)", _calls([], **_OWN_CALL)),
    _Attribute("identify_result", False, "a function identify_result(trials, method=, guess=, bounds=, "
               "max_iter=, print_level=)", _calls([], **_OWN_CALL)),
    _Attribute("prediction_model", False, "a function prediction_model(result, trial)", _calls(None, None)),
    _Attribute("cohort_options", False, "a function cohort_options(trials, options)", _calls([], {})),
    _Attribute("data_path", False, "a function data_path(*parts) -> Path", _calls("a", "b.csv")),
)
#: The functions whose keyword arguments options reach (``--missing`` → ``load_trial(missing=)``, …).
_KEYWORDS_OF = ("load_trial", "problem", "identify_method", "identify_result")


@dataclass(frozen=True)
class ProblemSpec:
    """A registered problem module, checked against :class:`ProblemModule` and
    :class:`ProblemHooks`: its required attributes, its optional hooks (``None``, or empty, when
    absent) and the keyword arguments of the functions options are passed to."""

    name: str
    module: ModuleType
    true: Mapping[str, float]
    default_data: tuple[tuple[str, ...], ...]
    required_columns: tuple[str, ...]
    optional_columns: tuple[str, ...]
    load_trial: Callable[..., Any]
    problem: Callable[..., Any]
    state_names: tuple[str, ...] | None = None
    ipopt_options: Mapping[str, Any] = field(default_factory=dict)
    own_methods: tuple[str, ...] = ()
    model: Callable[..., Any] | None = None
    body: Callable[..., Any] | None = None
    default_method: Callable[..., Any] | None = None
    identify_method: Callable[..., Any] | None = None
    identify_result: Callable[..., Any] | None = None
    prediction_model: Callable[..., Any] | None = None
    cohort_options: Callable[..., Any] | None = None
    data_path_hook: Callable[..., Path] | None = None
    keywords: Mapping[str, Keywords] = field(default_factory=dict)

    @property
    def module_name(self) -> str:
        """The import name of the module (``colloc_problems.pendulum``)."""
        return self.module.__name__

    def data_path(self, *parts: str) -> Path:
        """Path of the shipped file or folder ``parts``: the module's ``data_path`` hook, else the
        ``colloc.data`` entry point named after its top-level package.  The locator is looked up
        at each call (not kept), so a replaced one is the one used."""
        if self.data_path_hook is not None:
            return Path(self.data_path_hook(*parts))
        return Path(data_locator(self.module_name.partition(".")[0], self.name)(*parts))


def _refuse(name: str, module_name: str, problems: list[str]) -> ProblemError:
    return ProblemError(f"problem '{name}' ({module_name}) does not follow the problem protocol "
                        f"(colloc.definition.registry.ProblemModule): {'; '.join(problems)}")


def check_problem_module(module: ModuleType, name: str | None = None) -> ProblemSpec:
    """Check ``module`` against :class:`ProblemModule` and :class:`ProblemHooks`; the
    :class:`ProblemSpec`, or a :class:`~colloc.ProblemError` naming the module and every
    attribute that is missing or not of its kind.  ``name``: the problem's registered name
    (default the module's)."""
    module_name = getattr(module, "__name__", type(module).__name__)
    name = name or module_name
    found: dict[str, Any] = {}
    problems: list[str] = []
    for attr in _ATTRIBUTES:
        key = attr.name
        if key == "REQUIRED_COLUMNS" and not hasattr(module, key) and hasattr(module, "COLUMNS"):
            key = "COLUMNS"  # the older spelling, with the time column
        if not hasattr(module, key):
            if attr.required:
                problems.append(f"{attr.name} is missing (expected {attr.expected})")
            continue
        value = getattr(module, key)
        if not attr.check(value):
            shown = repr(value) if not callable(value) else f"{getattr(value, '__name__', value)}{_signature(value)}"
            problems.append(f"{key} is {shown[:80]}, not {attr.expected}")
            continue
        found[attr.name] = value
    own = tuple(found.get("OWN_METHODS", ()))
    if own and "identify_method" not in found and not hasattr(module, "identify_method"):
        problems.append(f"OWN_METHODS is {own!r} but identify_method is missing (it runs them)")
    if "identify_method" in found and not own:
        problems.append("identify_method is defined but OWN_METHODS (the methods it runs) is missing or empty")
    if problems:
        raise _refuse(name, module_name, problems)
    data = found["DEFAULT_DATA"]
    return ProblemSpec(
        name=name, module=module, true=found["TRUE"],
        default_data=(data,) if all(isinstance(p, str) for p in data) else tuple(data),
        required_columns=tuple(c for c in found["REQUIRED_COLUMNS"] if c != "time"),
        optional_columns=tuple(found.get("OPTIONAL_COLUMNS", ())),
        load_trial=found["load_trial"], problem=found["problem"],
        state_names=tuple(found["STATE_NAMES"]) if "STATE_NAMES" in found else None,
        ipopt_options=dict(found.get("IPOPT_OPTIONS", {})), own_methods=own,
        model=found.get("model"), body=found.get("body"), default_method=found.get("default_method"),
        identify_method=found.get("identify_method"), identify_result=found.get("identify_result"),
        prediction_model=found.get("prediction_model"), cohort_options=found.get("cohort_options"),
        data_path_hook=found.get("data_path"),
        keywords={k: Keywords.of(found.get(k)) for k in _KEYWORDS_OF},
    )


def _signature(function: Any) -> str:
    try:
        return str(inspect.signature(function))
    except (TypeError, ValueError):
        return "(…)"


# ---- the registry -----------------------------------------------------------------------------------

#: The usual cause of an entry point declared in pyproject.toml but not found.
_STALE = ("a package's entry points are read from its installed metadata: reinstall it after changing them, "
          "and remove a stale <name>.egg-info left in the working folder, which is read first")


def problem_entry_points() -> dict[str, metadata.EntryPoint]:
    """The problems installed under the ``colloc.problems`` entry-point group, by name."""
    return {ep.name: ep for ep in metadata.entry_points(group=PROBLEMS_GROUP)}


def problem_spec(name: str) -> ProblemSpec:
    """The registered problem ``name``, loaded and checked (:func:`check_problem_module`).

    An unknown name is an :class:`~colloc.OptionsError` listing the installed problems; a
    module that cannot be imported or does not follow the protocol a
    :class:`~colloc.ProblemError` naming it."""
    registry = problem_entry_points()
    if name not in registry:
        raise OptionsError(f"unknown problem '{name}'; available: {', '.join(sorted(registry)) or '(none installed)'}")
    return check_problem_module(_load(registry[name], f"problem '{name}'"), name)


def _load(ep: metadata.EntryPoint, what: str) -> Any:
    try:
        return ep.load()
    except (ImportError, AttributeError) as exc:
        raise ProblemError(f"{what}: its entry point {ep.group} {ep.name} = {ep.value} cannot be loaded "
                           f"({type(exc).__name__}: {exc})") from exc


def data_locator(package: str, problem: str | None = None) -> Callable[..., Path]:
    """The ``colloc.data`` entry point ``package`` (the function that finds the files the
    package ships), checked to be a ``data_path(*parts)`` function."""
    eps = {ep.name: ep for ep in metadata.entry_points(group=DATA_GROUP)}
    what = f"problem '{problem}'" if problem else f"package '{package}'"
    if package not in eps:
        raise ProblemError(f"{what} ships no data: it has no data_path hook and no {DATA_GROUP} entry point "
                           f"named '{package}' (installed: {', '.join(sorted(eps)) or 'none'}; {_STALE})")
    locator = _load(eps[package], what)
    if not _calls("a", "b.csv")(locator):
        raise ProblemError(f"{what}: the {DATA_GROUP} entry point {eps[package].value} is not a function "
                           "data_path(*parts)")
    return locator


def command_entry_points() -> dict[str, metadata.EntryPoint]:
    """The sub-commands installed under the ``colloc.commands`` entry-point group, by name."""
    return {ep.name: ep for ep in metadata.entry_points(group=COMMANDS_GROUP)}


def load_command(ep: metadata.EntryPoint) -> Callable[[Any], Any]:
    """The ``add_parser(subparsers)`` function of a ``colloc.commands`` entry point, checked to
    be callable with the sub-parsers alone."""
    function = _load(ep, f"command '{ep.name}'")
    if not _calls(None)(function):
        raise ProblemError(f"command '{ep.name}': its entry point {ep.value} is not a function add_parser(subparsers)")
    return function
