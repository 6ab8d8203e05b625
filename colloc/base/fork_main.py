"""Imported first by the fork server of :func:`colloc.base.engine.process_pool`: gives the
fork server's ``__main__`` the name or file of the parent's main module (passed in the
environment), so that the workers forked from it do not import the parent's main module again.

multiprocessing prepares every worker it starts from a fork server or by spawning by
importing the parent's main script (as ``__mp_main__``) unless the worker's own ``__main__``
already has that file or module name.  colloc's worker tasks need nothing from it: they are
colloc functions, and what they are given is pickled by value (cloudpickle).  Importing it
costs each worker the script's own imports, and a script without an
``if __name__ == "__main__":`` guard would run its solve again in every worker, which
multiprocessing then stops with an error, losing every start but the first.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys

#: The environment variables that carry the parent's main module name and file.
MAIN_NAME, MAIN_FILE = "COLLOC_PARENT_MAIN_NAME", "COLLOC_PARENT_MAIN_FILE"


def parent_main() -> dict[str, str]:
    """The environment for a fork server started by this process: its main module's name (run
    as ``python -m NAME``) or file, in the form multiprocessing's preparation data uses."""
    from multiprocessing import process

    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name:
        return {MAIN_NAME: name}
    path = getattr(main, "__file__", None)
    if path is None:
        return {}
    origin = getattr(process, "ORIGINAL_DIR", None)  # where this process started (typeshed does not declare it)
    if not os.path.isabs(path) and origin is not None:
        path = os.path.join(origin, path)
    return {MAIN_FILE: os.path.normpath(path)}


def _adopt() -> None:
    main = sys.modules.get("__main__")
    if main is None:
        return
    if os.environ.get(MAIN_NAME):
        main.__spec__ = importlib.machinery.ModuleSpec(os.environ[MAIN_NAME], None)
    elif os.environ.get(MAIN_FILE):
        main.__file__ = os.environ[MAIN_FILE]


if __name__ != "__main__" and os.environ.get("COLLOC_FORK_SERVER") == "1":
    _adopt()
