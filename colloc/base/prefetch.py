"""Modules imported on a worker thread while the calling thread waits in C code.

An IPOPT solve runs without Python's interpreter lock, so a module the steps after it need
(pandas for the result's tables, 0.15-0.2 s to import) can be imported beside it on the second
core instead of after it."""

from __future__ import annotations

import importlib
import sys
import threading

__all__ = ["LazyModule", "prefetch"]


def prefetch(*modules: str) -> threading.Thread | None:
    """Start importing those of ``modules`` not yet imported on a daemon thread; the thread
    (join it before the modules are needed), or ``None`` when there is nothing to import.

    An import that fails on the thread is dropped there: the caller's own ``import`` of the
    module then raises the error where it belongs."""
    missing = [m for m in modules if m not in sys.modules]
    if not missing:
        return None

    def run() -> None:
        for name in missing:
            try:
                importlib.import_module(name)
            except BaseException:  # noqa: BLE001, S110 - raised again by the caller's own import
                pass

    thread = threading.Thread(target=run, name="colloc-prefetch", daemon=True)
    thread.start()
    return thread


class LazyModule:
    """A module imported on its first attribute access, for a module-level name
    (``sps = LazyModule("scipy.sparse")``, with the real import under ``TYPE_CHECKING`` for type
    checkers), so that importing the module that holds it does not import SciPy (0.25 s before
    the solve) when the steps that need it come after the solve, where :func:`prefetch` has
    imported it beside IPOPT."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> object:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazily imported module {self._name!r}>"
