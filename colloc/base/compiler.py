"""Compile CasADi functions to machine code with the system C compiler, cached on disk.

CasADi evaluates an SX function in a virtual machine, one instruction at a time.  For a
large model (the 4-link ship-stance chain: a residual of ~2.5k operations whose per-interval
Jacobian and Lagrangian Hessian have ~90k and ~180k) the same function compiled to C runs
about 6–10× faster.  :func:`compiled` generates the C code of a function (and, on request,
of its Jacobian, so that CasADi can differentiate the loaded library), compiles it into a
shared library named by the SHA-256 of the source and the flags, and loads it with
``casadi.external``; the next build of the same model finds the library and skips the
compiler.  :func:`compiled_all` runs the compilers of several functions at once.  The cache
lives in ``$COLLOC_CACHE_DIR`` (default ``~/.cache/colloc/compiled``).  ``$COLLOC_NO_COMPILER=1``
behaves as a machine without a C compiler (everything evaluated by CasADi's virtual machine).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import casadi as ca

__all__ = ["CompilerWarning", "builds_ahead", "cache_dir", "cached_only", "compiled", "compiled_all", "compiler_runs",
           "has_compiler",
           "lane_config", "linked", "shared_library", "vector_math"]

#: Optimisation flags: -O1 gives most of the speed of -O2 at a fraction of its compile
#: time on these long straight-line functions (-O0 runs them 2× slower than -O1).
FLAGS = ("-O1", "-fPIC", "-shared")


class CompilerWarning(UserWarning):
    """No C compiler, or it failed: the function is evaluated by CasADi's virtual machine."""


def cache_dir() -> Path:
    """Where compiled libraries are kept (``$COLLOC_CACHE_DIR`` or ``~/.cache/colloc/compiled``)."""
    root = os.environ.get("COLLOC_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "colloc" / "compiled"


#: Flags of code evaluating several instances per vector instruction (colloc.base.lanes):
#: no fused multiply–adds (a lane then computes exactly what the scalar code computes).
LANE_FLAGS = ("-O2", "-ffp-contract=off")


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return frozenset(line.partition(":")[2].split())


def lane_config() -> tuple[int, tuple[str, ...]]:
    """``(width, flags)`` for code over several instances at once: 8 doubles a vector with
    AVX-512 (``-mavx512f``), 4 with AVX2 (``-mavx2``), else 2 (SSE2 / NEON, the baseline
    of x86-64 and AArch64; the widest was the fastest, benchmarks/README.md).
    ``$COLLOC_LANES`` sets the width (1: no lanes)."""
    cpu = _cpu_flags()
    wanted = os.environ.get("COLLOC_LANES")
    width = int(wanted) if wanted else 8 if "avx512f" in cpu else 4 if "avx2" in cpu else 2
    arch = ("-mavx512f",) if width >= 8 and "avx512f" in cpu else ("-mavx2",) if width >= 4 and "avx2" in cpu else ()
    return width, (*LANE_FLAGS, *arch)


def vector_math(width: int, flags: Sequence[str]) -> bool:
    """Whether lanes of ``width`` compiled with ``flags`` may call glibc's vector maths
    library (libmvec: sin, cos, exp and log of a whole vector, at most 4 ulp from the
    correctly rounded value, the glibc manual's bound, where the scalar functions are within
    1 ulp): on x86-64 Linux with the instruction set of the library's variant for that
    width (SSE2 for 2, ``-mavx2`` for 4, ``-mavx512f`` for 8), unless
    ``$COLLOC_VECTOR_MATH`` is ``0``.  Linking fails where the library is missing; the
    caller then evaluates lane by lane."""
    if os.environ.get("COLLOC_VECTOR_MATH", "1") == "0":
        return False
    isa = {2: None, 4: "-mavx2", 8: "-mavx512f"}
    if width not in isa or (isa[width] is not None and isa[width] not in flags):
        return False
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


#: Compiler processes started by this process (:func:`compiler_runs`).
_RUNS = [0]


def compiler_runs() -> int:
    """How many compiler processes this process has started so far: a build that started
    none took everything from the cache (``result.timings["compile_s"]`` is then 0)."""
    return _RUNS[0]


def _compiler() -> str | None:
    if os.environ.get("COLLOC_NO_COMPILER") == "1":  # as on a machine without one (tests, users)
        return None
    return os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")


def has_compiler() -> bool:
    """Whether a C compiler is there to try (``$CC``, ``gcc`` or ``cc``): ``False`` also when
    ``$CC`` names a program that cannot be found."""
    compiler = _compiler()
    return compiler is not None and shutil.which(compiler) is not None


def _cached(target: Path, partial: Path) -> None:
    """Move a freshly built file into the cache atomically (a concurrent build sees all or nothing)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = target.with_suffix(f".{os.getpid()}.tmp")
    shutil.copy(partial, staged)
    os.replace(staged, target)


#: Inside :func:`cached_only`: ``[queued]`` (whether this scope has queued its one build for
#: :func:`builds_ahead`); ``None`` outside.
_CACHED_ONLY: contextvars.ContextVar[list | None] = contextvars.ContextVar("colloc_cached_only", default=None)
#: Inside :func:`builds_ahead`: the builds queued by :func:`cached_only` misses; else ``None``.
_AHEAD: contextvars.ContextVar[list | None] = contextvars.ContextVar("colloc_builds_ahead", default=None)


@contextlib.contextmanager
def builds_ahead() -> Iterator[None]:
    """Within the block, what :func:`cached_only` scopes miss is queued and, when the block
    ends, built by one detached, low-priority shell (compilers and linker into the cache as
    :func:`linked` would; one build after another, nothing waited for), so that the next
    run finds it.  The ``colloc`` command's choice: it does not wait for a compiler, and a
    user who runs it again on a record of the same length gets the compiled functions."""
    queue: list = []
    token = _AHEAD.set(queue)
    try:
        yield
    finally:
        _AHEAD.reset(token)
        if queue:
            _build_ahead(queue)


@contextlib.contextmanager
def cached_only() -> Iterator[None]:
    """Within the block, :func:`linked` loads what the cache holds and compiles nothing: a
    library not yet built (or one of its units) gives ``None`` at once, silently, and the
    caller evaluates another way.  Inside :func:`builds_ahead`, the first miss of the block
    is queued for a build in the background (of the variants a caller tries in turn, the
    first); a build that failed leaves a ``.failed`` file beside its target and is not
    queued again."""
    token = _CACHED_ONLY.set([False])
    try:
        yield
    finally:
        _CACHED_ONLY.reset(token)


def _build_ahead(queue: list[tuple[Path, list[list[str]], dict[str, str]]]) -> None:
    """Start the detached build of :func:`builds_ahead`: each queued library's sources written
    to a folder of its own in the cache (none if that folder exists: being built), its
    commands (each moving its output into place) run there by ``sh`` at nice 10, the
    libraries one after another, each folder removed when done.  The shell that starts it
    exits at once (the build is the init process's child, no zombie is left)."""
    if os.name != "posix" or shutil.which("sh") is None:
        return
    scripts = []
    for target, commands, sources in queue:
        folder = cache_dir() / f"building_{target.stem}"
        try:
            folder.mkdir(parents=True)
        except FileExistsError:  # being built by another process (a stale folder: after a day)
            if time.time() - folder.stat().st_mtime < 86400:
                continue
        except OSError:
            continue
        for file, text in sources.items():
            (folder / file).write_text(text)
        failed = shlex.quote(str(target.with_suffix(".failed")))
        lines = "".join(f"{shlex.join(cmd)} || {{ touch {failed}; exit 1; }}\n" for cmd in commands)
        (folder / "build.sh").write_text(f"cd {shlex.quote(str(folder))} || exit 1\n"
                                         f"trap 'cd / && rm -rf {shlex.quote(str(folder))}' EXIT\n{lines}")
        scripts.append(f"sh {shlex.quote(str(folder / 'build.sh'))}")
    if scripts:
        job = f"( {'; '.join(scripts)}; ) >/dev/null 2>&1 </dev/null &"
        subprocess.run(["nice", "-n", "10", "sh", "-c", job] if shutil.which("nice") else ["sh", "-c", job],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       start_new_session=True, check=False)


def _missing(name: str, compiler: str, flags: tuple[str, ...], units, objects: list[Path], libs: list[str],
             source: str, target: Path) -> None:
    """:func:`linked` under :func:`cached_only`: queue the build if asked (once a scope)."""
    scope, queue = _CACHED_ONLY.get(), _AHEAD.get()
    if scope is None or queue is None or scope[0] or target.with_suffix(".failed").exists():
        return
    scope[0] = True
    commands, sources = [], {f"{name}.c": source}
    for (unit, text, *extra), obj in zip(units, objects):
        if not obj.exists():
            sources[f"{unit}.c"] = text
            unit_flags = (*flags, *(extra[0] if extra else ()))
            commands.append([compiler, *unit_flags, "-c", f"{unit}.c", "-o", f"{obj.name}.part"])
            commands.append(["mv", "-f", f"{obj.name}.part", str(obj)])
    commands.append([compiler, *FLAGS, f"{name}.c", *map(str, objects), "-o", f"{target.name}.part", *libs])
    commands.append(["mv", "-f", f"{target.name}.part", str(target)])
    queue.append((target, commands, sources))


def linked(name: str, source: str, units: Sequence[tuple[str, str] | tuple[str, str, tuple[str, ...]]],
           *, libraries: Sequence[str] = (), quiet: bool = False) -> ca.Function | None:
    """The function ``name`` of the C ``source`` (CasADi's external-function interface),
    linked with the C ``units`` (``(unit name, C source)`` pairs, e.g. CasADi-generated
    functions it calls, or ``(unit name, C source, extra flags)``), and with the system
    ``libraries`` (``-l`` names) besides the maths library.

    Each unit is compiled once to an object file cached by the SHA-256 of its source, and the
    library by that of ``source`` and the objects': a ``source`` that changes with the size
    of the problem (and compiles in a fraction of a second) reuses the compiled units.
    Returns ``None``, with a :class:`CompilerWarning` (none if ``quiet``), when no compiler
    is found or compiling fails (the caller then evaluates another way)."""
    compiler = _compiler()
    if compiler is None:
        if not quiet:
            warnings.warn(f"no C compiler found (set CC): '{name}' is not compiled", CompilerWarning, stacklevel=2)
        return None
    flags = FLAGS[:-1]  # objects: no -shared
    libs = [*(f"-l{lib}" for lib in libraries), "-lm"]
    if _CACHED_ONLY.get() is not None:
        objects = [cache_dir() / f"colloc_{unit}_{_object_key(compiler, flags, text, extra)}.o"
                   for unit, text, *extra in units]
        target = _library_target(name, source, objects, compiler, libs)
        if target.exists():
            return ca.external(name, str(target))
        _missing(name, compiler, flags, units, objects, libs, source, target)
        return None
    with tempfile.TemporaryDirectory() as tmp:
        jobs, objects = [], []
        for unit, text, *extra in units:
            unit_flags = (*flags, *(extra[0] if extra else ()))
            target = cache_dir() / f"colloc_{unit}_{_object_key(compiler, flags, text, extra)}.o"
            objects.append(target)
            if not target.exists():
                src = Path(tmp, f"{unit}.c")
                src.write_text(text)
                partial = Path(tmp, target.name)
                _RUNS[0] += 1
                try:
                    command = [compiler, *unit_flags, "-c", str(src), "-o", str(partial)]
                    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    jobs.append((process, partial, target))
                except OSError as exc:  # CC names no program
                    _not_linked(name, compiler, str(exc), quiet)
                    return None
        failed = None
        for process, partial, target in jobs:
            _, err = process.communicate()
            if process.returncode != 0:
                failed = failed or err
            else:
                _cached(target, partial)
        if failed is not None:
            _not_linked(name, compiler, failed, quiet)
            return None
        library = _link(name, source, objects, libs, compiler, tmp, quiet)
    return None if library is None else ca.external(name, str(library))


def shared_library(name: str, source: str, *, quiet: bool = False) -> Path | None:
    """The path of the shared library compiled from the C ``source`` (plain C functions, to
    be loaded with :mod:`ctypes`), cached by the SHA-256 of the source and the flags: the
    compiler runs once per machine.  ``None``, with a :class:`CompilerWarning` (none if
    ``quiet``), when no compiler is found or compiling fails."""
    compiler = _compiler()
    if compiler is None:
        if not quiet:
            warnings.warn(f"no C compiler found (set CC): '{name}' is not compiled", CompilerWarning, stacklevel=2)
        return None
    with tempfile.TemporaryDirectory() as tmp:
        return _link(name, source, [], ["-lm"], compiler, tmp, quiet)


def _link(name: str, source: str, objects: list[Path], libs: list[str], compiler: str, tmp: str,
          quiet: bool) -> Path | None:
    """``source`` compiled and linked with ``objects`` into the cached library (its path), or
    ``None`` when that fails."""
    target = _library_target(name, source, objects, compiler, libs)
    if not target.exists():
        src = Path(tmp, f"{name}.c")
        src.write_text(source)
        partial = Path(tmp, target.name)
        _RUNS[0] += 1
        try:
            process = subprocess.run([compiler, *FLAGS, str(src), *map(str, objects), "-o", str(partial), *libs],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
        except OSError as exc:
            _not_linked(name, compiler, str(exc), quiet)
            return None
        if process.returncode != 0:
            _not_linked(name, compiler, process.stderr, quiet)
            return None
        _cached(target, partial)
    return target


def _object_key(compiler: str, flags: tuple[str, ...], text: str, extra: list) -> str:
    unit_flags = (*flags, *(extra[0] if extra else ()))
    return hashlib.sha256(text.encode() + " ".join((compiler, *unit_flags, "-c")).encode()).hexdigest()[:32]


def _library_target(name: str, source: str, objects: list[Path], compiler: str, libs: list[str]) -> Path:
    key = hashlib.sha256("\n".join([source, *(o.name for o in objects), compiler, *FLAGS, *libs]).encode())
    return cache_dir() / f"colloc_{name}_{key.hexdigest()[:32]}.so"


def _not_linked(name: str, compiler: str, why: str, quiet: bool) -> None:
    if not quiet:
        warnings.warn(f"compiling '{name}' with {compiler} failed ({why.strip()[:200]})", CompilerWarning, stacklevel=3)


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
    return compiled_all([function], jacobians=[jacobian])[0]


def compiled_all(functions: Sequence[ca.Function], *,
                 jacobians: Sequence[ca.Function | bool] | None = None) -> list[ca.Function]:
    """:func:`compiled` for several functions, their compilers running at the same time."""
    jacobians = list(jacobians) if jacobians is not None else [False] * len(functions)
    compiler = _compiler()
    out: list[ca.Function] = list(functions)
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for i, (function, jacobian) in enumerate(zip(functions, jacobians)):
            unit = f"colloc_{function.name()}"
            gen = ca.CodeGenerator(unit, {"with_header": False})
            gen.add(function)
            if jacobian is not False:
                gen.add(function.jacobian() if jacobian is True else jacobian)
            gen.generate(tmp + os.sep)
            source = Path(tmp, unit + ".c")
            key = hashlib.sha256(source.read_bytes() + " ".join((compiler or "", *FLAGS)).encode())
            target = cache_dir() / f"{unit}_{key.hexdigest()[:32]}.so"
            if target.exists():
                out[i] = ca.external(function.name(), str(target))
                continue
            if compiler is None:
                warnings.warn(f"no C compiler found (set CC): '{function.name()}' runs uncompiled",
                              CompilerWarning, stacklevel=3)
                continue
            partial = Path(tmp, target.name)
            _RUNS[0] += 1
            try:
                process = subprocess.Popen([compiler, *FLAGS, str(source), "-o", str(partial), "-lm"],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            except OSError as exc:  # CC names a program that is not there
                warnings.warn(f"compiling '{function.name()}' with {compiler} failed ({exc}); it runs uncompiled",
                              CompilerWarning, stacklevel=3)
                continue
            jobs.append((i, process, partial, target))
        for i, process, partial, target in jobs:
            _, err = process.communicate()
            name = functions[i].name()
            if process.returncode != 0:
                warnings.warn(f"compiling '{name}' with {compiler} failed ({err.strip()[:200]}); "
                              "it runs uncompiled", CompilerWarning, stacklevel=3)
                continue
            _cached(target, partial)
            out[i] = ca.external(name, str(target))
    return out


class NativeFunction:
    """A CasADi Function of numbers as compiled C called through :mod:`ctypes`
    (:func:`native`): ``f(*inputs)`` → the list of its outputs (dense 1-D arrays).  The
    call costs a few microseconds, against tens for a CasADi Function called from Python,
    which matters to code calling it hundreds of thousands of times (an event-driven
    simulation's right-hand sides).  The buffers are the object's own: not thread-safe."""

    def __init__(self, library: Path, function: ca.Function):
        import ctypes

        import numpy as np

        self.name = function.name()
        self._lib = ctypes.CDLL(str(library))
        self._fn = getattr(self._lib, self.name)
        self._fn.restype = ctypes.c_int
        self._in = [np.zeros(function.nnz_in(i)) for i in range(function.n_in())]
        self._out = [np.zeros(function.nnz_out(i)) for i in range(function.n_out())]
        self._iw = np.zeros(max(int(function.sz_iw()), 1), dtype=np.int64)
        self._w = np.zeros(max(int(function.sz_w()), 1))
        ptr = ctypes.c_void_p
        self._arg = (ptr * max(int(function.sz_arg()), len(self._in), 1))(*[a.ctypes.data for a in self._in])
        self._res = (ptr * max(int(function.sz_res()), len(self._out), 1))(*[r.ctypes.data for r in self._out])
        self._args = (self._arg, self._res, ptr(self._iw.ctypes.data), ptr(self._w.ctypes.data), ctypes.c_int(0))

    def __call__(self, *inputs):
        for buf, value in zip(self._in, inputs):
            buf[:] = value
        if self._fn(*self._args):
            raise ArithmeticError(f"{self.name}: the compiled function failed")
        return [out.copy() for out in self._out]


def native(function: ca.Function) -> NativeFunction | None:
    """``function`` (an SX Function without free symbols; its inputs and outputs made dense)
    compiled to C and loaded for :mod:`ctypes` calls (:class:`NativeFunction`), the library
    cached by the SHA-256 of its source (:func:`shared_library`); ``None`` without a working
    C compiler (the caller then calls ``function`` itself)."""
    if not has_compiler():
        return None
    ins = [ca.SX.sym(function.name_in(i), function.size_in(i)) for i in range(function.n_in())]
    dense = ca.Function(function.name(), ins, [ca.densify(o) for o in function.call(ins)])
    gen = ca.CodeGenerator(f"colloc_native_{function.name()}", {"with_header": False, "casadi_int": "int64_t"})
    gen.add(dense)
    library = shared_library(f"native_{function.name()}", "#include <stdint.h>\n" + gen.dump(), quiet=True)
    return None if library is None else NativeFunction(library, dense)
