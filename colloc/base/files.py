"""Files written so that readers never see half of one: a temporary file and a rename.

Also the JSON-safe copy every result document goes through (NaN and inf become null).
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["atomic_path", "dumps_compact_arrays", "json_safe", "write_atomic"]


def _publish(tmp: str) -> None:
    """Give a temporary file the permissions a normal ``open()`` would (mkstemp uses 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """Yield a temporary file name next to ``path``; on success it replaces ``path`` at once.

    Readers never see a half-written file, and on failure nothing is left behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix or ".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield tmp
        _publish(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def json_safe(value: Any) -> Any:
    """JSON-safe copy: NaN/inf become None, numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":  # the bulk of a result document: no call per element
            out = value.tolist()
            finite = np.isfinite(value)
            if not finite.all():
                return json_safe(out)
            return out
        return json_safe(value.tolist())
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


#: Lists of numbers longer than this are written on one line by :func:`dumps_compact_arrays`.
COMPACT_ABOVE = 16


_MARK = "\x00"  # around a placeholder's number (a JSON string escapes it as \u0000)


def _number(v: Any) -> bool:
    return v is None or type(v) in (float, int)


def dumps_compact_arrays(doc: Any, indent: int | None = 1) -> str:
    """``json.dumps(doc, indent=indent, allow_nan=False)``, except that with an ``indent``
    every list of more than :data:`COMPACT_ABOVE` elements that starts and ends with a number
    (or null) is written on one line.

    The same JSON value, in a fraction of the time: the standard library's indenting encoder
    is pure Python, one call per element (most of writing a result document of 6,000 samples),
    while a list without indentation goes through its C encoder.  ``doc`` must be JSON-safe
    (:func:`json_safe`)."""
    if indent is None:
        return json.dumps(doc, allow_nan=False)
    pieces: list[str] = []
    clash = False  # a string of the document that looks like a placeholder: no shortcut

    def walk(value: Any) -> Any:
        nonlocal clash
        if isinstance(value, dict):
            clash = clash or any(_MARK in str(k) for k in value)
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            if len(value) > COMPACT_ABOVE and _number(value[0]) and _number(value[-1]):
                pieces.append(json.dumps(value, allow_nan=False))
                return f"{_MARK}{len(pieces) - 1}{_MARK}"
            return [walk(v) for v in value]
        if isinstance(value, str):
            clash = clash or _MARK in value
        return value

    text = json.dumps(walk(doc), indent=indent, allow_nan=False)
    if clash:
        return json.dumps(doc, indent=indent, allow_nan=False)
    return re.sub(r'"\\u0000(\d+)\\u0000"', lambda m: pieces[int(m.group(1))], text)
