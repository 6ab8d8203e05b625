"""Every public function, method and class of colloc carries type annotations (issue 19): each
parameter (``self``/``cls`` aside) and each return.  "Public" is what the API reference documents:
the names in ``colloc.__all__`` and in the ``__all__`` of the public sub-modules
(``colloc.signals``, ``colloc.kalman``); for a class, its ``__init__``, ``__call__`` and its
public methods and properties, including those inherited from colloc's own base classes.

``annotation_coverage()`` is the measurement quoted in the issue; run this file as a script to
print it::

    python tests/unit/test_annotations.py
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FunctionType, ModuleType

import colloc

#: The public modules and where their ``__all__`` lives (docs/api/*.md documents these).
PUBLIC_MODULES = ("colloc", "colloc.signals", "colloc.kalman")

#: Special methods that are part of a public class's interface (the rest, ``__repr__`` etc.,
#: are the data model's and are not documented).
PUBLIC_DUNDERS = ("__init__", "__call__")


def _module(name: str) -> ModuleType:
    obj: object = colloc
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    assert isinstance(obj, ModuleType), name
    return obj


def _functions_of_class(klass: type) -> Iterator[FunctionType]:
    for base in klass.__mro__:
        if not base.__module__.startswith("colloc."):
            continue  # object, Exception, ABC: not ours
        for attr, value in vars(base).items():
            if attr.startswith("_") and attr not in PUBLIC_DUNDERS:
                continue
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            elif isinstance(value, property):
                value = value.fget
            value = inspect.unwrap(value) if callable(value) else value
            if isinstance(value, FunctionType):
                yield value


def public_functions() -> dict[str, FunctionType]:
    """Qualified name -> function, for every function and method the public API exposes, each
    once (an inherited method under the class that defines it).  Functions written by the
    standard library for a class (a dataclass's ``__init__``, a NamedTuple's ``__new__``) take
    their annotations from the class's fields and are left out: they are not in colloc's source."""
    found: dict[str, FunctionType] = {}
    for module_name in PUBLIC_MODULES:
        module = _module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                candidates: Iterator[FunctionType] = _functions_of_class(obj)
            elif callable(obj):
                unwrapped = inspect.unwrap(obj)  # functools.lru_cache etc.
                assert isinstance(unwrapped, FunctionType), f"{module_name}.{name}: {type(obj)}"
                candidates = iter([unwrapped])
            else:
                continue  # __version__ and such
            for function in candidates:
                if function.__code__.co_filename.endswith(".py"):
                    found.setdefault(f"{function.__module__}.{function.__qualname__}", function)
    return found


@dataclass
class Coverage:
    """Annotated parameters and returns of the public API, and the names of those that are not."""

    parameters: int = 0
    annotated_parameters: int = 0
    returns: int = 0
    annotated_returns: int = 0
    missing: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        p = self.annotated_parameters / max(self.parameters, 1)
        r = self.annotated_returns / max(self.returns, 1)
        return (f"parameters {self.annotated_parameters}/{self.parameters} ({p:.0%}), "
                f"returns {self.annotated_returns}/{self.returns} ({r:.0%})")


def annotation_coverage(functions: dict[str, FunctionType] | None = None,
                        excused: Callable[[str], bool] = lambda name: False) -> Coverage:
    """Count the annotated parameters (``self`` and ``cls`` aside) and returns of ``functions``
    (default: :func:`public_functions`); ``excused(name)`` leaves a ``module.qualname:param``
    (``:return`` for the return) out of ``missing`` while still counting it."""
    coverage = Coverage()
    for qualname, function in (public_functions() if functions is None else functions).items():
        signature = inspect.signature(function)
        parameters = list(signature.parameters.values())
        if parameters and parameters[0].name in ("self", "cls"):
            parameters = parameters[1:]
        for parameter in parameters:
            coverage.parameters += 1
            if parameter.annotation is not inspect.Parameter.empty:
                coverage.annotated_parameters += 1
            elif not excused(f"{qualname}:{parameter.name}"):
                coverage.missing.append(f"{qualname}:{parameter.name}")
        coverage.returns += 1
        if signature.return_annotation is not inspect.Signature.empty:
            coverage.annotated_returns += 1
        elif not excused(f"{qualname}:return"):
            coverage.missing.append(f"{qualname}:return")
    return coverage


def test_the_walk_sees_the_public_api():
    """The walk is not vacuous: it reaches the documented entry points, inherited methods under
    their defining class, and the sub-modules' functions."""
    names = public_functions()
    for expected in ("colloc.solving.solve.solve", "colloc.definition.model.Model.__init__",
                     "colloc.signals.filters.lowpass", "colloc.results.result.Result.plot_fit",
                     "colloc.transcription.grid.radau_basis"):
        assert expected in names, expected
    assert len(names) > 200


def test_the_count_sees_a_missing_annotation():
    def typed(x: int, *, y: float = 1.0) -> int:
        return x

    def untyped(self, x, y: int = 0):
        return x

    def excused(z):
        return z

    found = annotation_coverage({"typed": typed, "untyped": untyped, "excused": excused},  # type: ignore[dict-item]
                                excused=lambda name: name.startswith("excused:"))
    assert (found.parameters, found.annotated_parameters, found.returns, found.annotated_returns) == (5, 3, 3, 1)
    assert found.missing == ["untyped:x", "untyped:return"]


def test_every_public_parameter_and_return_is_annotated():
    coverage = annotation_coverage()
    assert not coverage.missing, f"{coverage}; not annotated ({len(coverage.missing)}):\n" + "\n".join(
        coverage.missing)


if __name__ == "__main__":
    print(annotation_coverage())
