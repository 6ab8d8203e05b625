"""The ``colloc`` command (strings become objects here and only here).

Exit codes: 0 success; 1 the computation ran but did not succeed; 2 bad usage or input
(one-line message, no traceback).

One module per command, each with its ``add_parser(sub)`` and its handler: :mod:`.identify`
(``identify``, ``demo``), :mod:`.compare`, :mod:`.delay_margin`, :mod:`.batch` (``batch``,
``cohort``), :mod:`.predict`, :mod:`.problems`; what they share (exit codes, the usage error,
the options' argument types, the progress line) is :mod:`.common`.  The library itself
(CasADi, SciPy, pandas, matplotlib) is imported where a command needs it, so that ``colloc
--help`` and ``colloc problems`` answer at once.  Sub-commands of other packages (``colloc
spine``, ``colloc ship-motion``) come through the ``colloc.commands`` entry-point group
(:mod:`colloc.definition.registry`); what they may use of this package is :data:`PLUGIN_API`.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings

from ..base.errors import CollocInputError, ExtraColumnsWarning
from ..base.versions import __version__
from ..definition.registry import command_entry_points, load_command
from ..studies.identify import BASELINES, METHODS, make_method, method_names
from . import batch, compare, delay_margin, identify, predict, problems
from .common import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_OK,
    UsageError,
    _Parser,
    check_output_file,
    mark_start,
    number,
)
from .delay_margin import format_matrix, margin_lines
from .identify import _demo_data as _demo_data  # the demo's shipped files (tests read them)

__all__ = ["BASELINES", "EXIT_FAILED", "EXIT_INPUT", "EXIT_OK", "METHODS", "PLUGIN_API", "UsageError",
           "build_parser", "check_output_file", "format_matrix", "main", "make_method", "margin_lines",
           "method_names", "number", "run"]


#: The names of this package that a ``colloc.commands`` plugin uses: its one-line usage error,
#: the check of an output file, the number type of its options, the delay-margin printout.
PLUGIN_API = ("UsageError", "check_output_file", "format_matrix", "margin_lines", "number")


def build_parser() -> argparse.ArgumentParser:
    """The ``colloc`` argument parser: every command's, then the plugins'."""
    parser = _Parser(prog="colloc",
                     description="Identify model parameters from measured trajectories by direct collocation.")
    parser.add_argument("--version", action="version", version=f"colloc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in (identify, compare, delay_margin, batch, predict, problems):
        command.add_parser(sub)
    batch.add_cohort_commands(sub)
    _add_plugin_commands(sub)
    return parser


def _add_plugin_commands(sub) -> None:
    """The sub-commands of the ``colloc.commands`` entry points (``colloc spine``, ``colloc
    ship-motion``), each checked to add the command its entry point is named after.  One that
    cannot be loaded or added is left out with a one-line warning: the other commands still work."""
    from ..definition.registry import COMMANDS_GROUP

    for name, ep in sorted(command_entry_points().items()):
        try:
            added = load_command(ep)(sub)
            if not isinstance(added, argparse.ArgumentParser) or added.prog.split()[-1] != name:
                raise UsageError(f"{ep.value} did not add and return the parser of 'colloc {name}'")
        except (CollocInputError, argparse.ArgumentError) as exc:
            sys.stderr.write(f"colloc: warning: command '{name}' ({COMMANDS_GROUP}) left out: "
                             f"{' '.join(str(exc).split())}\n")


def _one_line_warnings(message, category, filename, lineno, file=None, line=None):
    sys.stderr.write(f"colloc: warning: {str(message).splitlines()[0]}\n")


def _one_thread_libraries() -> bool:
    """One BLAS/OpenMP thread (:data:`colloc.base.engine.THREAD_ENV`) for the command's own
    process, unless the user set any of those variables or the libraries are loaded already
    (``main`` called in a running program: its environment is left alone).  OpenBLAS's and
    OpenMP's idle threads spin on the second core: the two-link seed case (6,001 nodes) took
    the same wall time on a quiet machine and 3.7 → 2.5 s of CPU; at 60,001 nodes neither
    wall nor CPU time grew (benchmarks/README.md).  Returns whether it set them."""
    from ..base.engine import THREAD_ENV

    if "numpy" in sys.modules or "casadi" in sys.modules or any(k in os.environ for k in THREAD_ENV):
        return False
    os.environ.update(THREAD_ENV)
    return True


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``colloc`` command; returns the exit code."""
    mark_start()
    _one_thread_libraries()
    parser = build_parser()
    with warnings.catch_warnings():
        # data warnings (extra columns …) are shown as one line each, never raised
        warnings.simplefilter("always", ExtraColumnsWarning)
        warnings.showwarning = _one_line_warnings
        try:
            args = parser.parse_args(argv)
            return args.func(args)
        except CollocInputError as exc:
            msg = " ".join(str(exc).split("\n"))
            sys.stderr.write(f"colloc: error: {msg}\n")
            return EXIT_INPUT
        except KeyboardInterrupt:
            sys.stderr.write("colloc: interrupted\n")
            return 130
        except OSError as exc:  # a file that could not be read or written after the checks
            where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
            sys.stderr.write(f"colloc: error: cannot access{where}: {exc.strerror or exc}\n")
            return EXIT_INPUT
        except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
            if os.environ.get("COLLOC_TRACEBACK"):
                traceback.print_exc()
            first = (str(exc).splitlines() or [""])[0][:300]
            sys.stderr.write(f"colloc: internal error: {type(exc).__name__}: {first} "
                             "(please report it; COLLOC_TRACEBACK=1 shows the traceback)\n")
            return EXIT_FAILED


#: glibc's ``mallopt`` parameters (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def _keep_freed_memory() -> bool:
    """glibc's allocator keeps what the command frees for the command's next allocations.

    By default a block from 32 MB up is mapped from the kernel and unmapped when freed, and the
    heap's free top returned: each of IPOPT's factorisations then touches fresh pages, and
    zeroing them cost 0.1-0.15 s of system time in the two-link seed case's 0.5 s solve
    (benchmarks/README.md).  Here blocks up to 1 GiB come from the heap and freed memory stays
    with the process until it ends (a command: moments later).  Only for the console script,
    on glibc, and not when the user tuned the allocator (``GLIBC_TUNABLES``, ``MALLOC_*_``).
    Returns whether it changed them."""
    if not sys.platform.startswith("linux") or "malloc" in os.environ.get("GLIBC_TUNABLES", "") \
            or any(k.startswith("MALLOC_") and k.endswith("_") for k in os.environ):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only (musl's mallopt does nothing)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # older glibc refuses a mapping threshold above 32 MiB: then that, its largest
    mapped = mallopt(_M_MMAP_THRESHOLD, 1 << 30) or mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    return bool(mallopt(_M_TRIM_THRESHOLD, (1 << 31) - 1) and mapped)


def run() -> None:
    """The ``colloc`` console script: :func:`main`, then the process ends at once (unless a
    thread the interpreter would wait for is still running).  Exit handlers run (a Dask
    cluster is shut down, temporary folders are removed) and the output is flushed, but the
    interpreter's teardown (a thousand modules, the solve's NumPy arrays
    and CasADi objects freed one by one) is skipped: 0.15–0.4 s of the two-link seed case's
    whole command (benchmarks/README.md)."""
    import atexit
    import threading

    _keep_freed_memory()
    code = main()
    if any(t is not threading.main_thread() and t.is_alive() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)  # a thread the interpreter would wait for (a pool's worker): the usual exit
    atexit._run_exitfuncs()  # what Python runs at exit, before it tears the modules down
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be written anyway
            pass
    os._exit(code)
