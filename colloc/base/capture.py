"""Keep what compiled libraries print (IPOPT, CasADi, CVODES) off the user's terminal.

Those libraries write straight to the process's file descriptors 1 and 2, below Python, so
redirecting ``sys.stdout`` does not catch them.  :func:`capture_native_output` points both
descriptors at a temporary file for the duration of a block and hands back what was written;
Python code that must still reach the terminal (a progress line) writes to
:attr:`NativeOutput.terminal`, a stream on the original standard error.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TextIO

__all__ = ["NativeOutput", "capture_native_output"]


@dataclass
class NativeOutput:
    """What a captured block wrote to descriptors 1 and 2.

    Attributes
    ----------
    text : str
        Everything written (filled when the block ends).
    terminal : text stream
        A stream on the terminal's standard error, usable inside the block.
    """

    text: str = ""
    terminal: TextIO = field(default_factory=lambda: sys.stderr)

    @property
    def lines(self) -> list[str]:
        """The non-empty lines written."""
        return [ln for ln in self.text.splitlines() if ln.strip()]


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()


@contextlib.contextmanager
def capture_native_output(enabled: bool = True) -> Iterator[NativeOutput]:
    """Redirect file descriptors 1 and 2 to a temporary file inside the block.

    With ``enabled=False`` (or when the descriptors cannot be duplicated, e.g. under a
    notebook kernel's replaced streams) nothing is redirected and ``text`` stays empty.
    """
    out = NativeOutput()
    if not enabled:
        yield out
        return
    try:
        streams = [s for s in (sys.__stdout__, sys.__stderr__) if s is not None]  # None: no console (pythonw)
        fds = [s.fileno() for s in streams]
        if len(fds) != 2:
            raise ValueError("no standard stream")
    except (AttributeError, OSError, ValueError):
        yield out
        return
    _flush()
    saved = [os.dup(fd) for fd in fds]
    terminal = os.fdopen(os.dup(saved[1]), "w", buffering=1, encoding="utf-8", errors="replace")
    out.terminal = terminal
    with tempfile.TemporaryFile(mode="w+b") as sink:
        try:
            for fd in fds:
                os.dup2(sink.fileno(), fd)
            yield out
        finally:
            _flush()
            for fd, keep in zip(fds, saved):
                os.dup2(keep, fd)
                os.close(keep)
            terminal.close()
            out.terminal = sys.stderr
            sink.seek(0)
            out.text = sink.read().decode("utf-8", errors="replace")
