"""Compile CasADi functions to machine code with the system C compiler, cached on disk.

CasADi evaluates an SX function in a virtual machine, one instruction at a time.  For a
large model (the 4-link ship-stance chain: a residual of ~2.5k operations whose per-interval
Jacobian and Lagrangian Hessian have ~90k and ~180k) the same function compiled to C runs
about 6–10× faster.  :func:`compiled` generates the C code of a function (and, on request,
of its Jacobian, so that CasADi can differentiate the loaded library), compiles it into a
shared library named by the SHA-256 of the source and the flags, and loads it with
``casadi.external``; the next build of the same model finds the library and skips the
compiler.  The cache lives in ``$COLLOC_CACHE_DIR`` (default ``~/.cache/colloc/compiled``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import casadi as ca

__all__ = ["CompilerWarning", "cache_dir", "compiled"]

#: Optimisation flags: -O1 gives most of the speed of -O2 at a fraction of its compile
#: time on these long straight-line functions.
FLAGS = ("-O1", "-fPIC", "-shared")


class CompilerWarning(UserWarning):
    """No C compiler, or it failed: the function is evaluated by CasADi's virtual machine."""


def cache_dir() -> Path:
    """Where compiled libraries are kept (``$COLLOC_CACHE_DIR`` or ``~/.cache/colloc/compiled``)."""
    root = os.environ.get("COLLOC_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "colloc" / "compiled"


def _compiler() -> str | None:
    return os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")


def compiled(function: ca.Function, *, jacobian: ca.Function | bool = False) -> ca.Function:
    """``function`` as compiled machine code (same name, inputs and outputs).

    Parameters
    ----------
    function : casadi.Function
        Any function CasADi can generate C code for (SX or MX without external calls).
    jacobian : bool or casadi.Function
        Also compile a Jacobian, so that the loaded function can be differentiated (an
        integrator's Newton iterations need it): ``True`` for CasADi's, or a function named
        ``jac_<name>`` with CasADi's Jacobian signature (inputs, then outputs → one block
        per output and input) to use instead.

    Returns
    -------
    casadi.Function
        The loaded library's function; ``function`` itself, with a :class:`CompilerWarning`,
        when no compiler is found or compiling fails.
    """
    name = function.name()
    unit = "colloc_" + name
    with tempfile.TemporaryDirectory() as tmp:
        gen = ca.CodeGenerator(unit, {"with_header": False})
        gen.add(function)
        if jacobian is not False:
            gen.add(function.jacobian() if jacobian is True else jacobian)
        gen.generate(tmp + os.sep)
        source = Path(tmp, unit + ".c").read_bytes()
        compiler = _compiler()
        key = hashlib.sha256(source + " ".join((compiler or "", *FLAGS)).encode()).hexdigest()[:32]
        target = cache_dir() / f"{unit}_{key}.so"
        if not target.exists():
            if compiler is None:
                warnings.warn(f"no C compiler found (set CC): '{name}' runs uncompiled", CompilerWarning,
                              stacklevel=2)
                return function
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = Path(tmp, target.name)
            run = subprocess.run([compiler, *FLAGS, str(Path(tmp, unit + ".c")), "-o", str(partial), "-lm"],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                warnings.warn(f"compiling '{name}' with {compiler} failed ({run.stderr.strip()[:200]}); "
                              "it runs uncompiled", CompilerWarning, stacklevel=2)
                return function
            os.replace(shutil.copy(partial, target.with_suffix(f".{os.getpid()}.tmp")), target)
    return ca.external(name, str(target))
