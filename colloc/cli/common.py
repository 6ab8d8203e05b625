"""What every ``colloc`` sub-command shares: exit codes, the one-line usage error, the argument
types of the options (numbers, windows, bounds, output files), the live progress line and the
command's own clock."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import CollocInputError
from ..studies.identify import problem_registry

if TYPE_CHECKING:
    from ..solving.ipopt import IterationInfo


def Ipopt(**kwargs):
    """:class:`colloc.Ipopt` (imported on first use)."""
    from ..solving.ipopt import Ipopt as _Ipopt

    return _Ipopt(**kwargs)


EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2


class UsageError(CollocInputError):
    """Bad command-line usage."""


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error and exit code 2."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


class _Progress:
    """Compact live progress line on stderr (throttled; only for solves longer than 1 s)."""

    def __init__(self, stream=sys.stderr, every: float = 0.5) -> None:
        self.stream, self.every = stream, every
        self.last = 0.0
        self.shown = False
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def __call__(self, info: IterationInfo) -> None:
        if info.elapsed_s < 1.0 or info.elapsed_s - self.last < self.every:
            return
        self.last = info.elapsed_s
        line = (f"  iter {info.iteration:4d}  objective {info.objective:.6e}  "
                f"max defect {info.max_violation:.1e}  {info.elapsed_s:6.1f} s")
        self.stream.write(("\r" + line) if self.tty else (line + "\n"))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _known_problem(name: str) -> str:
    """argparse type: a registered problem name (checked before --help is honoured)."""
    registry = problem_registry()
    if name not in registry:
        raise argparse.ArgumentTypeError(
            f"unknown problem '{name}'; available: {', '.join(sorted(registry)) or '(none installed)'}"
        )
    return name


def _seconds(text: str) -> float:
    """argparse type of ``--time-limit``: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got '{text}'") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text}")
    return value


def _starts_count(text: str) -> int:
    """argparse type of ``--starts``: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


#: Figure formats ``--plot`` accepts (matplotlib's file types without a special backend).
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def check_output_file(option: str, path: str | None, suffixes: tuple[str, ...] | None = None) -> None:
    """Refuse, before any work, an output file that cannot be written (one-line error)."""
    if path is None:
        return
    p = Path(path)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise UsageError(f"{option} {path}: unknown file type '{p.suffix or '(none)'}'; "
                         f"use one of {', '.join(suffixes)}")
    if p.is_dir():
        raise UsageError(f"{option} {path}: is a folder; give a file name")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{option} {path}: folder {folder} does not exist")
    _probe(option, path, folder)
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"{option} {path}: file exists and is not writable")


def _probe(option: str, path: str, folder: Path) -> None:
    """Create and remove a file in ``folder`` (permissions alone do not tell: root, read-only
    mounts, full disks); results are written there atomically through a temporary file."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".colloc-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot write in folder {folder} ({exc.strerror or exc})") from None


def _check_output_dir(option: str, path: str) -> Path:
    """Make (if needed) and check a writable output folder before any work."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {path}: exists and is not a folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot create the folder ({exc.strerror or exc})") from None
    _probe(option, path, p)
    return p


def _data_files(option: str, paths: list[str]) -> list[str]:
    """The files behind ``--data``: a folder stands for the ``*.csv`` files in it."""
    files: list[str] = []
    for text in paths:
        p = Path(text)
        if p.is_dir():
            found = sorted(str(f) for f in p.iterdir() if f.is_file() and f.suffix.lower() == ".csv")
            if not found:
                raise UsageError(f"{option} {text}: folder holds no .csv file")
            files += found
        elif p.is_file():
            files.append(text)
        else:
            raise UsageError(f"{option} {text}: no such file or folder")
    return files


def _assignments(option: str, items: list[str] | None, parse) -> dict:
    """``NAME=VALUE`` pairs of a repeatable option, values parsed by ``parse``."""
    out: dict = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"{option} {item}: expected NAME=VALUE")
        if name in out:
            raise UsageError(f"{option}: {name} given twice")
        try:
            out[name] = parse(value.strip())
        except ValueError as exc:
            raise UsageError(f"{option} {item}: {exc}") from None
    return out


_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)


def number(text: str) -> float:
    """A decimal number as people write it (no ``1_0``, no hex); ``inf`` and ``nan`` are read
    (callers refuse what they cannot use)."""
    if not _NUMBER.fullmatch(text.strip()):
        raise ValueError(f"'{text}' is not a number")
    return float(text)


def _finite_number(text: str) -> float:
    value = number(text)
    if not math.isfinite(value):
        raise ValueError(f"'{text}' is not a finite number")
    return value


def _window(text: str) -> tuple[float | None, float | None]:
    """argparse type of ``--window A:B``: seconds of the record's own time, start inclusive,
    end exclusive; either side may be empty (open)."""
    start, sep, end = text.partition(":")
    try:
        if not sep:
            raise ValueError
        pair = (_finite_number(start) if start.strip() else None, _finite_number(end) if end.strip() else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A:B in seconds (start inclusive, end exclusive; either "
                                         f"side may be empty), got '{text}'") from None
    if pair[0] is not None and pair[1] is not None and not pair[0] < pair[1]:
        raise argparse.ArgumentTypeError(f"'{text}': the start must be before the end")
    return pair


def _bounds_pair(text: str) -> tuple[float | None, float | None]:
    lo, sep, hi = text.partition(":")
    if not sep:
        raise ValueError("expected LO:HI (either side may be empty)")
    pair = (number(lo) if lo.strip() else None, number(hi) if hi.strip() else None)
    if any(v is not None and math.isnan(v) for v in pair):
        raise ValueError("a bound may not be NaN")
    if pair[0] is not None and pair[1] is not None and pair[0] > pair[1]:
        raise ValueError(f"lower bound {pair[0]:g} > upper bound {pair[1]:g}")
    return pair


#: ``time.perf_counter()`` when :func:`colloc.cli.main` was entered (the command's own clock).
_STARTED: list[float] = []


def mark_start() -> None:
    """Start the command's own clock (:func:`colloc.cli.main` calls it first)."""
    _STARTED[:] = [time.perf_counter()]


def started() -> float | None:
    """When :func:`colloc.cli.main` was entered (``time.perf_counter()``), or None."""
    return _STARTED[0] if _STARTED else None
