"""Measured trials: a strictly increasing time vector plus named signals.

A trial is read from a CSV file (see :meth:`Trial.from_csv`), a pandas DataFrame
(:meth:`Trial.from_dataframe`) or plain arrays (:class:`Trial`).  Every defect of the
data is reported as a one-line :class:`~colloc.DataError` that names the file (or
trial), the column and the row; nothing is repaired silently.

CSV contract
------------
* One trial per file, comma-separated, UTF-8, a header row, one row per sample.
* The first column is ``time`` (s), strictly increasing; non-uniform steps are allowed.
* The other columns are named signals (SI units).  Columns the problem does not use are
  ignored with an :class:`~colloc.ExtraColumnsWarning`.
* Empty, non-numeric, NaN or infinite cells, duplicate or decreasing times and too few
  rows are errors.  Blank lines at the very end of the file are allowed.

Two opt-ins relax this, and only where the caller asks:

* ``missing="allow"``: an *empty* signal cell means "not measured at this time" (multi-rate
  records, gaps).  It is stored as NaN; :meth:`Trial.present` tells which samples exist.
  ``nan``/``inf`` text, non-numeric cells and an empty ``time`` cell stay errors.
* ``jump_columns=[...]``: a time may appear on two consecutive rows when they differ in a
  jump column (a known input that steps at that time, such as a drug dose).  The earlier
  row holds the value just before the step, the later row the value just after; every
  other column must agree on the two rows (or be empty on one of them).  The trial keeps
  one sample at that time (the value after the step) and records the value before it in
  :attr:`Trial.jumps`.

How a known input is read between its samples may be declared per column with
``interpolation={column: kind}`` (:data:`INTERPOLATIONS`): ``"linear"`` (straight lines between
samples), ``"hold"`` (zero-order hold: the value of sample k on ``[t_k, t_{k+1})``, as a
digital controller or a data-acquisition card outputs it) or ``"smooth"`` (the not-a-knot cubic
spline through the samples).  A column not declared is read as the method says
(``input_interpolation``, the cubic spline by default).
"""

from __future__ import annotations

import csv
import difflib
import gzip
import io
import math
import os
import re
import secrets
import sys
import warnings
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import DataError, ExtraColumnsWarning
from .units import split_unit, to_si

if TYPE_CHECKING:  # pandas is imported where a DataFrame is made or read (0.15-0.2 s to import)
    import pandas as pd

__all__ = ["INTERPOLATIONS", "Trial"]

# A plain decimal number, optionally surrounded by blanks.  Stricter than float(), which
# also accepts "1_000", non-ASCII digits, "nan" and "inf".
_NUMBER = re.compile(r"[ \t]*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[ \t]*")


def _error(message: str) -> DataError:
    """Build a DataError whose message is guaranteed to fit on one line."""
    return DataError(message.replace("\r", "\\r").replace("\n", "\\n"))


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "(none)"


class _UnknownSignal(DataError, KeyError):
    """Unknown signal name: a DataError that ``except KeyError`` also catches."""

    __str__ = DataError.__str__  # KeyError would quote the message


class _Origin:
    """How messages refer to a trial and its rows (file lines or array indices)."""

    def __init__(self, label: str, lines: Sequence[int] | None = None) -> None:
        self.label = label
        self.lines = lines
        self.kind = "column" if lines is not None else "signal"

    def row(self, index: int) -> str:
        """Describe the 0-based sample ``index``."""
        if self.lines is None:
            return f"row {index + 1} (index {index})"
        return f"row {index + 1} (line {self.lines[index]} of the file)"


def _as_vector(values: Any, what: str, origin: _Origin) -> np.ndarray:
    """Return ``values`` as a new 1-D float64 array or raise a DataError."""
    try:
        raw = np.asarray(values)
        if raw.dtype.kind not in "biufO":
            raise TypeError(f"dtype {raw.dtype}")
        array = np.array(raw, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise _error(f"{origin.label}: {what} must hold real numbers, got "
                     f"{type(values).__name__} ({exc})") from None
    if array.ndim != 1:
        raise _error(f"{origin.label}: {what} must be 1-D with shape (num_samples,), "
                     f"got shape {array.shape}")
    return array


MISSING_POLICIES = ("error", "allow")

#: How a known input may be read between its samples (``Trial(..., interpolation=...)``).
INTERPOLATIONS = ("linear", "hold", "smooth")


def _check_interpolation(interpolation: Mapping[str, str] | None, columns: Sequence[str],
                         origin: _Origin) -> dict[str, str]:
    """``{column: kind}`` checked against the signals and :data:`INTERPOLATIONS`."""
    if interpolation is None:
        return {}
    if not isinstance(interpolation, Mapping):
        raise _error(f"{origin.label}: interpolation must map {origin.kind} names to one of "
                     f"{_names(INTERPOLATIONS)}, got {type(interpolation).__name__}")
    out: dict[str, str] = {}
    for col, kind in interpolation.items():
        if not isinstance(col, str) or col not in columns:
            close = difflib.get_close_matches(col, list(columns), n=1) if isinstance(col, str) else []
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _error(f"{origin.label}: interpolation names {origin.kind} {col!r}, which is not in "
                         f"the trial{hint}; {origin.kind}s: {_names(list(columns))}")
        if not isinstance(kind, str) or kind not in INTERPOLATIONS:
            raise _error(f"{origin.label}: interpolation of {origin.kind} {col!r} is {kind!r}; expected "
                         f"one of {_names(INTERPOLATIONS)}")
        out[col] = kind
    return out


def _check_missing(missing: str) -> str:
    if not isinstance(missing, str) or missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be 'error' (every sample present) or 'allow' (an empty "
                         f"cell or NaN means not measured), got {missing!r}")
    return missing


def _first_bad_row(array: np.ndarray, what: str, origin: _Origin, allow_nan: bool = False) -> None:
    bad = np.flatnonzero(np.isinf(array) if allow_nan else ~np.isfinite(array))
    if bad.size:
        i = int(bad[0])
        hint = "" if allow_nan else (" or pass missing='allow' to mark NaN as not measured")
        raise _error(f"{origin.label}: {what}, {origin.row(i)}: value {float(array[i])!r} "
                     "is not finite; expected a finite number (missing samples are not allowed: "
                     f"remove the row or fill it explicitly{hint})")


def _time_what(origin: _Origin) -> str:
    return f"{origin.kind} 'time'" if origin.lines is not None else "time"


def _duplicate_error(time: np.ndarray, i: int, origin: _Origin, why: str = "") -> DataError:
    cur = float(time[i])
    return _error(f"{origin.label}: {_time_what(origin)}, {origin.row(i)}: duplicate time {cur!r} "
                  f"(same as {origin.row(i - 1)}); time must be strictly increasing: remove or fix "
                  f"the duplicate row{why}")


def _check_time(time: np.ndarray, origin: _Origin, pairs: frozenset[int] = frozenset()) -> None:
    """Finite and strictly increasing, except rows ``i ∈ pairs`` that repeat row ``i − 1``."""
    what = _time_what(origin)
    if time.size == 0:
        raise _error(f"{origin.label}: {what} is empty; expected at least 1 sample")
    _first_bad_row(time, what, origin)
    bad = [int(k) + 1 for k in np.flatnonzero(np.diff(time) <= 0.0)]
    bad = [i for i in bad if not (i in pairs and time[i] == time[i - 1])]
    if bad:
        i = bad[0]
        prev, cur = float(time[i - 1]), float(time[i])
        if cur == prev:
            raise _duplicate_error(time, i, origin)
        problem = (f"decreasing time {cur!r} (less than {prev!r} at {origin.row(i - 1)}); "
                   "time must be strictly increasing: sort the rows by time")
        raise _error(f"{origin.label}: {what}, {origin.row(i)}: {problem}")


def _seconds(value: float) -> str:
    """A window's end as the user wrote it (an open end is empty)."""
    return "" if not np.isfinite(value) else f"{value:g}"


def _merge_jumps(time: np.ndarray, arrays: dict[str, np.ndarray], jump_columns: Sequence[str],
                 origin: _Origin) -> tuple[np.ndarray, dict[str, np.ndarray],
                                           dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Merge the row pairs that share a time into one sample, recording the jumps.

    A pair is valid when at least one jump column differs between its rows and every
    other column agrees (or is NaN on one row).  Three rows at one time, or a pair that
    is not valid, raise the duplicate-time error.
    """
    equal = np.flatnonzero(np.diff(time) == 0.0) + 1  # the later row of each repeat
    pairs = frozenset(int(i) for i in equal if not (i - 1 in set(equal.tolist())))
    _check_time(time, origin, pairs)  # decreasing times and triples come first
    if not pairs:
        return time, arrays, {}
    names = ", ".join(repr(c) for c in jump_columns)
    merged = {k: v.copy() for k, v in arrays.items()}
    jumps: dict[str, tuple[list[float], list[float]]] = {}
    for i in sorted(pairs):
        stepped = []
        for col, v in arrays.items():
            a, b = v[i - 1], v[i]
            if np.isnan(a) or np.isnan(b) or a == b:
                merged[col][i] = b if not np.isnan(b) else a
                continue
            if col not in jump_columns:
                raise _duplicate_error(time, i, origin, (
                    f" ({origin.kind} {col!r} differs between the two rows: {float(a)!r} and "
                    f"{float(b)!r}; only the jump column(s) {names} may)"))
            stepped.append((col, float(a)))
        if not stepped:
            raise _duplicate_error(time, i, origin, (
                f" (a repeated time marks a jump only where the jump column(s) {names} differ "
                "between the two rows)"))
        for col, left in stepped:
            jumps.setdefault(col, ([], []))
            jumps[col][0].append(float(time[i]))
            jumps[col][1].append(left)
    keep = np.ones(time.size, dtype=bool)
    keep[[i - 1 for i in pairs]] = False
    out = {k: v[keep] for k, v in merged.items()}
    recorded = {c: (np.array(t), np.array(v)) for c, (t, v) in jumps.items()}
    for t, v in recorded.values():
        t.flags.writeable = v.flags.writeable = False
    return time[keep], out, recorded


class Trial:
    """One experiment: a strictly increasing time vector and named measured signals (SI units).

    Parameters
    ----------
    time : array_like, shape (num_samples,)
        Sample times in seconds: finite and strictly increasing (steps may vary).
    signals : Mapping[str, array_like]
        Signal name -> samples, each of shape (num_samples,) and finite.  Names are
        non-empty strings without surrounding blanks, and not ``"time"``.
    name : str, optional
        Name used in messages and results; defaults to ``"trial"``.
    missing : {"error", "allow"}, optional
        ``"error"`` (default): every sample of every signal must be finite.  ``"allow"``:
        NaN marks a sample that was not measured (multi-rate signals, gaps); fits use only
        the present samples.  Infinite values are errors either way; time is always complete.
    jump_columns : sequence of str, optional
        Signals that may step at a repeated time: two consecutive samples with the same
        time that differ in these signals (and agree, or are NaN on one of them, in every
        other) are one sample with a jump, the earlier holding the value before it.
        Every other repeated time is an error.
    interpolation : Mapping[str, str], optional
        Signal name -> how it is read between samples when it drives the model as a known
        input: ``"linear"``, ``"hold"`` (zero-order hold: sample k's value on
        ``[t_k, t_{k+1})``) or ``"smooth"`` (not-a-knot cubic spline); see
        :data:`INTERPOLATIONS`.  Signals not named follow the method's ``input_interpolation``.
        An unknown signal or kind is a :class:`~colloc.DataError` naming the signal.

    Attributes
    ----------
    time : numpy.ndarray, shape (num_samples,)
        Read-only float64 copy of the sample times.
    signals : dict[str, numpy.ndarray]
        Signal name -> read-only float64 array of shape (num_samples,), in insertion order.
    name : str
        The trial name; for CSV trials the file name.
    source : str or None
        The path of the CSV file the trial was read from, else None.
    missing : str
        The missing-sample policy the trial was built with (``"error"`` or ``"allow"``).
    jumps : dict[str, tuple[numpy.ndarray, numpy.ndarray]]
        Signal name -> (jump times, values just before them), for the signals that step at
        a repeated time; ``signals`` holds the value just after.  Empty when none.
    interpolation : dict[str, str]
        The declared interpolation of each signal that has one (see the parameter).

    Raises
    ------
    DataError
        If the time vector or a signal is malformed; the message names the signal and row.
    """

    time: np.ndarray
    signals: dict[str, np.ndarray]
    name: str
    source: str | None
    missing: str
    jumps: dict[str, tuple[np.ndarray, np.ndarray]]
    interpolation: dict[str, str]

    def __init__(self, time: ArrayLike, signals: Mapping[str, ArrayLike], *,
                 name: str | None = None, missing: str = "error",
                 jump_columns: Sequence[str] = (), interpolation: Mapping[str, str] | None = None) -> None:
        name = self._check_name(name)
        self._setup(time, signals, name, None, _Origin(f"trial {name!r}"), missing=missing,
                    jump_columns=jump_columns, interpolation=interpolation)

    # -- construction helpers -------------------------------------------------------------
    @staticmethod
    def _check_name(name: str | None) -> str:
        if name is None:
            return "trial"
        if not isinstance(name, str) or not name.strip():
            raise _error(f"trial name must be a non-empty string, got {name!r}")
        return name

    def _setup(self, time: Any, signals: Any, name: str, source: str | None,
               origin: _Origin, *, missing: str = "error", jump_columns: Sequence[str] = (),
               jumps: dict | None = None, interpolation: Mapping[str, str] | None = None) -> None:
        """Validate and store; ``origin`` decides how rows are named in messages."""
        _check_missing(missing)
        jump_columns = _name_list(jump_columns, "jump_columns")
        time_arr = _as_vector(time, "time", origin)
        if not jump_columns:
            _check_time(time_arr, origin)
        elif time_arr.size == 0 or not np.all(np.isfinite(time_arr)):
            _check_time(time_arr, origin)
        if not isinstance(signals, Mapping):
            raise _error(f"{origin.label}: signals must be a mapping name -> 1-D array, "
                         f"got {type(signals).__name__}")
        stored: dict[str, np.ndarray] = {}
        for key, values in signals.items():
            if not isinstance(key, str) or not key or key != key.strip():
                raise _error(f"{origin.label}: {origin.kind} names must be non-empty strings "
                             f"without surrounding blanks, got {key!r}")
            if key == "time":
                raise _error(f"{origin.label}: 'time' cannot be a signal name; pass the time "
                             "vector as the `time` argument")
            what = f"{origin.kind} {key!r}"
            array = _as_vector(values, what, origin)
            if array.shape != time_arr.shape:
                raise _error(f"{origin.label}: {what} has {array.size} samples, expected "
                             f"{time_arr.size} (the length of time)")
            _first_bad_row(array, what, origin, allow_nan=missing == "allow")
            stored[key] = array
        unknown = [c for c in jump_columns if c not in stored]
        if unknown:
            raise _error(f"{origin.label}: jump_columns names {', '.join(map(repr, unknown))}, which "
                         f"is not a {origin.kind}; {origin.kind}s: {_names(list(stored))}")
        declared = _check_interpolation(interpolation, list(stored), origin)
        held_jumps = [c for c in jump_columns if declared.get(c) == "hold"]
        if held_jumps:
            raise _error(f"{origin.label}: {origin.kind} {held_jumps[0]!r} is declared both a jump column and "
                         "interpolation 'hold'; a held input already steps at every sample: drop one of them")
        found = dict(jumps or {})
        if jump_columns:
            time_arr, stored, found = _merge_jumps(time_arr, stored, jump_columns, origin)
        for array in stored.values():
            array.flags.writeable = False
        time_arr.flags.writeable = False
        self.time, self.signals, self.name, self.source = time_arr, stored, name, source
        self.missing, self.jumps, self.interpolation = missing, found, declared

    @classmethod
    def _trusted(cls, time: np.ndarray, signals: dict[str, np.ndarray], name: str,
                 source: str | None, missing: str = "error", jumps: dict | None = None,
                 interpolation: Mapping[str, str] | None = None) -> Trial:
        """Build from already validated read-only arrays (no copy, no checks); the declared
        interpolation is kept for the signals that remain."""
        trial = cls.__new__(cls)
        trial.time, trial.signals, trial.name, trial.source = time, signals, name, source
        trial.missing, trial.jumps = missing, dict(jumps or {})
        trial.interpolation = {c: k for c, k in (interpolation or {}).items() if c in signals}
        return trial

    def __setstate__(self, state: dict) -> None:  # trials pickled before missing/jumps existed
        state.setdefault("missing", "error")
        state.setdefault("jumps", {})
        state.setdefault("interpolation", {})
        self.__dict__.update(state)

    @property
    def _label(self) -> str:
        return self.source if self.source is not None else f"trial {self.name!r}"

    @property
    def _kind(self) -> str:
        return "column" if self.source is not None else "signal"

    # -- basic accessors ------------------------------------------------------------------
    @property
    def num_samples(self) -> int:
        """Number of samples (rows)."""
        return int(self.time.size)

    @property
    def duration(self) -> float:
        """``time[-1] - time[0]`` in seconds."""
        return float(self.time[-1] - self.time[0])

    @property
    def steps(self) -> np.ndarray:
        """Time steps ``np.diff(time)``, shape (num_samples - 1,)."""
        return np.diff(self.time)

    def is_uniform(self, rtol: float = 1e-6) -> bool:
        """True if all time steps agree within ``rtol`` relative to the mean step."""
        if not rtol >= 0.0:
            raise ValueError(f"rtol must be >= 0, got {rtol!r}")
        steps = self.steps
        if steps.size < 2:
            return True
        return bool(steps.max() - steps.min() <= rtol * steps.mean())

    def __getitem__(self, signal: str) -> np.ndarray:
        """The read-only samples of ``signal``, shape (num_samples,)."""
        try:
            return self.signals[signal]
        except (KeyError, TypeError):
            hint = "; the time vector is trial.time" if signal == "time" else ""
            raise _UnknownSignal(f"{self._label}: no {self._kind} {signal!r}; available: "
                                 f"{_names(list(self.signals))}{hint}") from None

    def __contains__(self, signal: object) -> bool:
        return isinstance(signal, str) and signal in self.signals

    def present(self, signal: str) -> np.ndarray:
        """Boolean mask, shape (num_samples,): True where ``signal`` was measured (not NaN)."""
        return ~np.isnan(self[signal])

    @property
    def has_missing(self) -> bool:
        """True if some signal has a sample that was not measured (NaN)."""
        return any(bool(np.isnan(v).any()) for v in self.signals.values())

    def __repr__(self) -> str:
        return (f"Trial({self.name!r}, {self.num_samples} samples, {self.time[0]:g} to "
                f"{self.time[-1]:g} s, signals: {_names(list(self.signals))})")

    # -- selection and derivation ---------------------------------------------------------
    def require(self, required: Sequence[str], optional: Sequence[str] = (), *,
                min_rows: int = 2) -> Trial:
        """Check the trial against what a problem needs and keep only the used signals.

        Parameters
        ----------
        required : sequence of str
            Signals that must be present (``"time"`` is always present and may be listed).
        optional : sequence of str
            Signals that are used if present.
        min_rows : int
            Minimum number of samples.

        Returns
        -------
        Trial
            A new trial with the required and the present optional signals, in that order.

        Raises
        ------
        DataError
            If a required signal is missing (the message lists the expected ones) or
            there are fewer than ``min_rows`` samples.

        Warns
        -----
        ExtraColumnsWarning
            Naming the signals that are in neither list (they are dropped).
        """
        return self._require(required, optional, min_rows, stacklevel=3)

    def _require(self, required: Sequence[str], optional: Sequence[str], min_rows: int,
                 stacklevel: int) -> Trial:
        req = _name_list(required, "required")
        opt = [n for n in _name_list(optional, "optional") if n not in req]
        missing = [n for n in req if n not in self.signals]
        if missing:
            have = list(self.signals)
            hints = [f"{m!r} -> did you mean {c[0]!r}?" for m in missing
                     if (c := difflib.get_close_matches(m, have, n=1))]
            expect = f"required: {_names(req)}" + (f"; optional: {_names(opt)}" if opt else "")
            raise _error(
                f"{self._label}: missing required {self._kind}(s) "
                f"{', '.join(repr(m) for m in missing)}; the problem expects {expect}; "
                f"found: {_names(['time'] + have)}. Add or rename the {self._kind}(s)"
                + (f" ({'; '.join(hints)})" if hints else ""))
        _check_min_rows(min_rows)
        if self.num_samples < min_rows:
            raise _error(f"{self._label}: needs at least {min_rows} rows, got "
                         f"{self.num_samples}; record a longer trial")
        keep = set(req) | set(opt)
        extra = [n for n in self.signals if n not in keep]
        if extra:
            warnings.warn(ExtraColumnsWarning(
                f"{self._label}: ignoring {self._kind}(s) not used by the problem: "
                f"{', '.join(repr(n) for n in extra)} (expected required: {_names(req)}; "
                f"optional: {_names(opt)})"), stacklevel=stacklevel)
        kept = {n: self.signals[n] for n in req + opt if n in self.signals}
        jumps = {n: j for n, j in self.jumps.items() if n in kept}
        return self._trusted(self.time, kept, self.name, self.source, self.missing, jumps, self.interpolation)

    def renamed(self, name: str) -> Trial:
        """The same trial (shared read-only arrays) under another name."""
        return self._trusted(self.time, self.signals, self._check_name(name), self.source, self.missing,
                             self.jumps, self.interpolation)

    def window(self, start: float | None = None, end: float | None = None) -> Trial:
        """The samples with ``start <= time < end`` (seconds of the trial's own time; ``None``
        leaves a side open), as a trial of the same name sharing the read-only arrays.

        A step (:attr:`jumps`) inside the window is kept; one at ``start`` is not (the window
        begins after it).  Fewer than two samples in the window is an error that names the
        window and the record's span.
        """
        lo = -np.inf if start is None else float(start)
        hi = np.inf if end is None else float(end)
        if np.isnan(lo) or np.isnan(hi) or not lo < hi:
            raise _error(f"{self._label}: window {start}:{end} is empty (expected start < end, seconds)")
        keep = (self.time >= lo) & (self.time < hi)
        if keep.sum() < 2:
            raise _error(f"{self._label}: window {_seconds(lo)}:{_seconds(hi)} holds {int(keep.sum())} sample(s); "
                         f"the record spans {self.time[0]:g} to {self.time[-1]:g} s (the window's end is "
                         "exclusive)")
        first, last = np.flatnonzero(keep)[[0, -1]]
        part = slice(int(first), int(last) + 1)
        jumps = {}
        for name, (times, left) in self.jumps.items():
            inside = (times > self.time[first]) & (times <= self.time[last])
            if inside.any():
                jumps[name] = (times[inside], left[inside])
        return self._trusted(self.time[part], {k: v[part] for k, v in self.signals.items()}, self.name,
                             self.source, self.missing, jumps, self.interpolation)

    def with_signals(self, **signals: ArrayLike) -> Trial:
        """A copy with ``signals`` (name -> shape (num_samples,)) added or replaced.

        The missing-sample policy is kept; so are the jumps of the signals not replaced.
        """
        trial = type(self).__new__(type(self))
        jumps = {n: j for n, j in self.jumps.items() if n not in signals}
        kept = {c: k for c, k in self.interpolation.items() if c not in signals}
        trial._setup(self.time, {**self.signals, **signals}, self.name, self.source,
                     _Origin(self._label), missing=self.missing, jumps=jumps, interpolation=kept)
        return trial

    # -- conversion -----------------------------------------------------------------------
    def to_dataframe(self) -> pd.DataFrame:
        """Columns ``time`` then the signals in insertion order; shape (num_samples, 1 + n)."""
        import pandas as pd

        return pd.DataFrame({"time": self.time.copy(),
                             **{k: v.copy() for k, v in self.signals.items()}})

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write the trial in the CSV contract format, atomically and at full precision.

        Samples that were not measured are written as empty cells and each jump as two rows
        at its time, so :meth:`from_csv` with the same ``missing`` and ``jump_columns``
        reads the trial back unchanged.

        The file is written to a temporary file in the same directory and then moved over
        ``path`` with :func:`os.replace`, so readers never see a half-written file.
        """
        target = Path(path)
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        columns = [self.time.tolist()] + [["" if v != v else v for v in a.tolist()]  # NaN: empty
                                          for a in self.signals.values()]
        rows = list(zip(*columns, strict=True))
        before: dict[int, list] = {}  # jumps: the row just before the step, written first
        names = list(self.signals)
        for col, (times, left) in self.jumps.items():
            for t, v in zip(times.tolist(), left.tolist()):
                k = int(np.searchsorted(self.time, t))
                row = before.setdefault(k, list(rows[k]))
                row[1 + names.index(col)] = v
        rows = [r for k, row in enumerate(rows) for r in ([tuple(before[k])] if k in before else []) + [row]]
        try:
            with open(tmp, "x", encoding="utf-8", newline="") as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(["time", *self.signals])
                writer.writerows(rows)  # floats are written with repr: exact
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str], *, required: Sequence[str] = (),
                 optional: Sequence[str] = (), min_rows: int = 2,
                 name: str | None = None, missing: str = "error",
                 jump_columns: Sequence[str] = (), columns: Mapping[str, str] | None = None,
                 units: Mapping[str, str] | None = None,
                 interpolation: Mapping[str, str] | None = None) -> Trial:
        """Read a trial from a CSV file following the contract in the module docstring.

        Files as labs write them are read too: gzip-compressed (``.gz``, detected from the
        content), tab-separated, with units in the header (``Time[s]``, ``COPx[cm]``,
        ``Fz (N)``) and an OpenSim ``.sto``/``.mot`` header block ending in ``endheader``.
        Units are converted to SI with :data:`colloc.definition.units.SI_FACTORS`; a column
        without a unit is taken to be in SI already.

        Parameters
        ----------
        path : str or os.PathLike
            The CSV file.
        required, optional : sequence of str
            If either is given, :meth:`require` is applied (extra columns warn and are
            dropped, missing required columns raise).
        min_rows : int
            Minimum number of data rows.
        name : str, optional
            Trial name; defaults to the file name.
        missing : {"error", "allow"}
            ``"allow"`` reads an empty signal cell as "not measured" (NaN): signals sampled
            at different rates in one file, or with gaps.  ``"error"`` (default) refuses it.
        jump_columns : sequence of str
            Columns that may step at a time written on two consecutive rows (see the
            module docstring); columns not in the file are ignored here.
        columns : Mapping[str, str], optional
            Signal name -> the lab's column name (with or without its unit), e.g.
            ``{"cop": "COPx"}``; the key ``"time"`` names the time column when it is not
            ``time``/``Time[s]``.  When given, only the mapped columns are read.
        units : Mapping[str, str], optional
            Signal name -> unit of its column (e.g. ``{"cop": "cm"}``), for files whose header
            has no units; a unit that contradicts the header's is an error.
        interpolation : Mapping[str, str], optional
            Signal name -> ``"linear"``, ``"hold"`` or ``"smooth"``: how that column is read
            between its samples as a known input (see :class:`Trial`); e.g.
            ``{"u": "hold"}`` for an input held constant over each sample.  A name that is
            not a signal of the file is an error.

        Returns
        -------
        Trial
            With ``source`` set to the path string.

        Raises
        ------
        DataError
            On any defect of the file; the message names the file, column and row.
        """
        source = os.fspath(path)
        _check_min_rows(min_rows)
        _check_missing(missing)
        jump_columns = _name_list(jump_columns, "jump_columns")
        name = cls._check_name(name if name is not None else Path(source).name)
        columns = _check_mapping(columns, "columns")
        units = _check_mapping(units, "units")
        time_column = columns.get("time")
        meta: dict[str, str] = {}
        fast = _read_csv_fast(source) if time_column is None else None
        if fast is not None:
            header, data, lines = fast
            if len(data) < min_rows:
                raise _error(f"{source}: needs at least {min_rows} data rows, got {len(data)}; "
                             "record a longer trial")
        else:
            header, rows, lines = _read_csv(source, allow_empty=missing == "allow",
                                            time_column=time_column, meta=meta)
            if len(rows) < min_rows:
                raise _error(f"{source}: needs at least {min_rows} data rows, got {len(rows)}; "
                             "record a longer trial")
            data = np.array([[c if c.strip(" \t") else "nan" for c in r] for r in rows] if missing == "allow"
                            else rows, dtype=np.float64).reshape(len(rows), len(header))
            overflow = np.argwhere(np.isinf(data))  # e.g. '1e999'; row-major order
            if overflow.size:
                i, j = (int(k) for k in overflow[0])
                raise _error(f"{source}: column {header[j]!r}, row {i + 1} (line {lines[i]} of the "
                             f"file): value {rows[i][j].strip()!r} overflows float64 (not finite)")
        if header[0] != "time" or columns or units or any(split_unit(h)[1] for h in header):
            header, data = _lab_columns(source, header, data, columns, units, meta)
        trial = cls.__new__(cls)
        trial._setup(data[:, 0], {n: data[:, j] for j, n in enumerate(header) if j},
                     name, source, _Origin(source, lines), missing=missing,
                     jump_columns=[c for c in jump_columns if c in header], interpolation=interpolation)
        if required or optional:
            trial = trial._require(required, optional, min_rows, stacklevel=3)
        return trial

    @classmethod
    def from_c3d(cls, path: str | os.PathLike[str], *, columns: Mapping[str, str],
                 units: Mapping[str, str] | None = None, name: str | None = None,
                 missing: str = "error") -> Trial:
        """Read mapped channels of a C3D motion-capture file (needs ``pip install colloc[c3d]``).

        Column names are the analog channel labels (force plates, EMG; at the analog rate)
        and, for marker trajectories, ``<label>_x``, ``<label>_y``, ``<label>_z`` (at the
        point rate).  Units come from ``POINT:UNITS`` and ``ANALOG:UNITS`` and are converted
        to SI; ``units`` overrides a blank one.  All mapped columns must share one rate.
        Time starts at 0 s at the first frame of the file.

        Raises
        ------
        DataError
            If the file cannot be read, a column is not in it, the rates differ, or a
            sample is not finite (the message names the file, column and row).
        ImportError
            If ezc3d is not installed.
        """
        try:
            import ezc3d
        except ImportError:
            raise ImportError("reading C3D files needs ezc3d: pip install 'colloc[c3d]'") from None
        source = os.fspath(path)
        columns = _check_mapping(columns, "columns")
        if not columns:
            raise _error(f"{source}: pass columns={{signal: C3D label}}; a C3D file has no "
                         "columns named after the problem's signals")
        if not os.path.isfile(source):
            raise _error(f"{source}: no such file; expected a C3D file (check the path)")
        try:
            c3d = ezc3d.c3d(source)
        except Exception as exc:  # ezc3d raises plain RuntimeError/IOError on a bad file
            raise _error(f"{source}: cannot read as C3D ({exc})") from None
        par, dat = c3d["parameters"], c3d["data"]

        def unit_list(group: str, count: int) -> list[str]:
            found = list(par[group].get("UNITS", {}).get("value", []))
            found = [u.strip() for u in found]
            if group == "POINT":
                return [found[0] if found else ""] * count
            return (found + [""] * count)[:count]

        heads: list[tuple[str, float, np.ndarray]] = []
        labels = [str(x).strip() for x in par["POINT"]["LABELS"]["value"]]
        if labels:
            rate = float(par["POINT"]["RATE"]["value"][0])
            for i, (label, unit) in enumerate(zip(labels, unit_list("POINT", len(labels)))):
                for k, axis in enumerate("xyz"):
                    head = f"{label}_{axis}" + (f"[{unit}]" if unit else "")
                    heads.append((head, rate, dat["points"][k, i, :]))
        alabels = [str(x).strip() for x in par["ANALOG"]["LABELS"]["value"]]
        if alabels:
            arate = float(par["ANALOG"]["RATE"]["value"][0])
            for i, (label, unit) in enumerate(zip(alabels, unit_list("ANALOG", len(alabels)))):
                heads.append((label + (f"[{unit}]" if unit else ""), arate, dat["analogs"][0, i, :]))
        header = [h for h, _, _ in heads]
        wanted = {s: c for s, c in columns.items() if s != "time"}
        used = []
        for signal, col in wanted.items():
            hits = [i for i, h in enumerate(header) if h == col or split_unit(h)[0] == col]
            used.extend(hits[:1])
            if not hits:
                close = _closest(col, [split_unit(h)[0] for h in header])
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise _error(f"{source}: no C3D channel {col!r} for signal {signal!r}{hint}; "
                             f"channels: {_names([split_unit(h)[0] for h in header])}")
        rates = sorted({heads[i][1] for i in used})
        if len(rates) > 1:
            raise _error(f"{source}: the mapped channels have different rates "
                         f"({', '.join(f'{r:g} Hz' for r in rates)}); map channels of one rate")
        n = heads[used[0]][2].size
        time = np.arange(n) / rates[0]
        data = np.column_stack([time] + [np.asarray(heads[i][2], dtype=np.float64) for i in used])
        hdr, data = _lab_columns(source, ["time[s]"] + [heads[i][0] for i in used], data,
                                 {"time": "time", **{s: heads[i][0] for s, i in zip(wanted, used)}},
                                 _check_mapping(units, "units"), {})
        trial = cls.__new__(cls)
        trial._setup(data[:, 0], {h: data[:, j] for j, h in enumerate(hdr) if j},
                     cls._check_name(name if name is not None else Path(source).name), source,
                     _Origin(source), missing=missing)
        return trial

    @classmethod
    def from_dataframe(cls, frame: pd.DataFrame, *, time_column: str = "time",
                       name: str | None = None, missing: str = "error",
                       jump_columns: Sequence[str] = (),
                       interpolation: Mapping[str, str] | None = None) -> Trial:
        """Build a trial from a DataFrame: ``time_column`` plus one signal per other column.

        ``missing``, ``jump_columns`` and ``interpolation`` are as for :class:`Trial`.

        Rows are taken by position (the index is ignored); messages give 1-based rows and
        the 0-based position as ``index``.
        """
        import pandas as pd

        name = cls._check_name(name)
        origin = _Origin(f"trial {name!r}")
        if not isinstance(frame, pd.DataFrame):
            raise _error(f"{origin.label}: expected a pandas DataFrame, got "
                         f"{type(frame).__name__}")
        columns = list(frame.columns)
        for col in columns:
            if not isinstance(col, str):
                raise _error(f"{origin.label}: column names must be strings, got {col!r}; "
                             "rename the columns")
            if columns.count(col) > 1:
                raise _error(f"{origin.label}: column {col!r} appears more than once")
        if time_column not in columns:
            raise _error(f"{origin.label}: no time column {time_column!r}; columns are "
                         f"{_names(columns)}; pass time_column=...")
        arrays = {col: _numeric_column(frame[col], col, origin) for col in columns}
        time = arrays.pop(time_column)
        trial = cls.__new__(cls)
        trial._setup(time, arrays, name, None, origin, missing=missing, jump_columns=jump_columns,
                     interpolation=interpolation)
        return trial


def _check_mapping(mapping: Mapping[str, str] | None, what: str) -> dict[str, str]:
    if mapping is None:
        return {}
    if not isinstance(mapping, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and k and v for k, v in mapping.items()):
        raise TypeError(f"{what} must map signal names to non-empty strings, got {mapping!r}")
    return dict(mapping)


def _closest(name: str, names: list[str]) -> list[str]:
    """The column a misspelt ``name`` most likely meant (same letters in another case first)."""
    same = [n for n in names if n.lower() == name.lower()]
    return same[:1] or difflib.get_close_matches(name, names, n=1)


def _lab_columns(source: str, header: list[str], data: np.ndarray, columns: dict[str, str],
                 units: dict[str, str], meta: dict[str, str]) -> tuple[list[str], np.ndarray]:
    """Pick, rename and convert to SI the columns of a lab file (see :meth:`Trial.from_csv`).

    Returns the new header (``time`` first) and the data in SI units."""
    parsed = [split_unit(h) for h in header]
    if columns:
        picked = [0]
        names = ["time"]
        for signal, col in columns.items():
            if signal == "time":
                continue
            hits = [j for j, (base, _) in enumerate(parsed) if header[j] == col or base == col]
            if not hits:
                close = _closest(col, [b for b, _ in parsed])
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise _error(f"{source}: no column {col!r} for signal {signal!r}{hint}; columns: "
                             f"{_names(header)}")
            if len(hits) > 1:
                raise _error(f"{source}: column {col!r} for signal {signal!r} matches several "
                             f"columns: {_names([header[j] for j in hits])}; give the full name")
            picked.append(hits[0])
            names.append(signal)
    else:
        picked = list(range(len(header)))
        names = ["time"] + [base for base, _ in parsed[1:]]
        for j, n in enumerate(names):
            if names.index(n) != j:
                raise _error(f"{source}: columns {header[names.index(n)]!r} and {header[j]!r} "
                             f"are both signal {n!r}; pass columns={{...}} to choose one")
    unknown = [k for k in units if k not in names]
    if unknown:
        raise _error(f"{source}: units names {_names(unknown)}, which is not a signal read "
                     f"from the file; signals: {_names(names)}")
    degrees = meta.get("inDegrees", "").lower() == "yes"
    out = np.empty((data.shape[0], len(picked)), dtype=np.float64)
    for k, (j, signal) in enumerate(zip(picked, names)):
        written = parsed[j][1]
        unit = units.get(signal, written)
        where = f"{source}: column {header[j]!r} (signal {signal!r})"
        if unit is None:
            if degrees and k:
                raise _error(f"{where}: the file says inDegrees=yes but not which columns are "
                             f"angles; pass units={{{signal!r}: 'deg'}} (or 'm' for a translation)")
            factor = 1.0
        else:
            try:
                factor = to_si(unit)
                if written is not None and unit != written and to_si(written) != factor:
                    raise _error(f"{where}: unit {unit!r} given, but the header says "
                                 f"{written!r}; remove one of them")
            except KeyError as exc:
                raise _error(f"{where}: {exc.args[0]}") from None
        out[:, k] = data[:, j] * factor
    return names, out


def _check_min_rows(min_rows: int) -> None:
    if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 1:
        raise ValueError(f"min_rows must be a positive int, got {min_rows!r}")


def _name_list(names: Sequence[str], what: str) -> list[str]:
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{what} must be a sequence of signal names, got {names!r}")
    return [n for n in dict.fromkeys(names) if n != "time"]


def _numeric_column(series: pd.Series, col: str, origin: _Origin) -> np.ndarray:
    """Column as float64, or a DataError naming the column and first non-numeric row."""
    import pandas as pd

    dtype = series.dtype
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    if isinstance(dtype, pd.CategoricalDtype) or not (
            pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)):
        raise _error(f"{origin.label}: column {col!r} has dtype {dtype}, expected numbers"
                     + ("; convert time to seconds" if dtype.kind in "mM" else ""))
    for i, value in enumerate(series.tolist()):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
                or isinstance(value, complex | np.complexfloating):
            raise _error(f"{origin.label}: column {col!r} is not numeric (dtype {dtype}): "
                         f"{origin.row(i)} holds {value!r}; convert with pd.to_numeric")
    return series.to_numpy(dtype=np.float64)


#: Files at least this large (bytes) are first read in one pass by a C parser
#: (:func:`_read_csv_fast`): the two-link seed file (647 kB, 6,001 rows) in 0.011 s by NumPy's
#: against the exact reader's 0.065 s, the same numbers; smaller files, a few ms either way, stay
#: with the exact reader.
FAST_READ_BYTES = 100_000
#: From this size (bytes) pandas' parser reads the file, about 3× as fast as NumPy's but 0.15-0.2 s
#: to import; below it NumPy's, unless pandas is already imported.
PANDAS_READ_BYTES = 16_000_000


class _Lines:
    """Line numbers of data rows in a file with one line per row after a one-line header."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [k + 2 for k in range(*i.indices(self.count))]
        if not -self.count <= i < self.count:
            raise IndexError(i)
        return (i % self.count) + 2


def _read_csv_fast(source: str) -> tuple[list[str], np.ndarray, _Lines] | None:
    """A large, clean file read in one pass by a C parser: ``(header, data, lines)``.

    NumPy's ``loadtxt`` below :data:`PANDAS_READ_BYTES`, pandas' parser above it (or when pandas
    is already imported); both parse numbers exactly (round trip).  ``None`` whenever anything
    is unusual (a small file, a header other than ``time,...`` with unique names, any cell that
    is not a finite number, blank or ragged rows, comments, another encoding, compression): the
    exact reader :func:`_read_csv` then finds and names the defect, so the messages are the same
    whichever path reads a file.  The fast path keeps a 200 MB file to seconds and about the
    size of its numbers in memory.
    """
    try:
        size = os.path.getsize(source)
        if size < FAST_READ_BYTES:
            return None
        with open(source, encoding="utf-8-sig", newline="") as handle:
            first = handle.readline()
    except (OSError, UnicodeDecodeError):
        return None
    header = [h.strip() for h in first.rstrip("\r\n").split(",")]
    if (not header or header[0] != "time" or any(not h or '"' in h for h in header)
            or len(set(header)) != len(header)):
        return None
    if size >= PANDAS_READ_BYTES or _pandas_imported():
        data = _parse_with_pandas(source, header)
    else:
        data = _parse_with_numpy(source)
    if data is None or data.ndim != 2 or data.shape[1] != len(header) or not np.isfinite(data).all():
        return None
    return header, data, _Lines(len(data))


def _pandas_imported() -> bool:
    return "pandas" in sys.modules


def _parse_with_numpy(source: str) -> np.ndarray | None:
    """The data rows of a plain UTF-8 file by NumPy's C parser; ``None`` if a line is blank,
    a comment or anything else it cannot parse as numbers."""
    try:
        with open(source, "rb") as handle:
            raw = handle.read()
        if raw[:2] == b"\x1f\x8b":
            return None
        text = raw.decode("utf-8-sig")
        del raw
        data = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, comments=None, ndmin=2,
                          dtype=np.float64)
    except (ValueError, UnicodeDecodeError, OSError, OverflowError):
        return None
    # loadtxt skips blank lines; the exact reader names them, so any skipped line sends it there
    rows = text.count("\n") - (1 if text.endswith("\n") else 0)
    return data if len(data) == rows else None


def _parse_with_pandas(source: str, header: list[str]) -> np.ndarray | None:
    """The data rows by pandas' C parser (round-trip numbers); ``None`` if it cannot parse them."""
    import pandas as pd

    # pandas 3 parses round-trip by default (and deprecates the option); pandas 2 needs asking
    exact = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    try:
        frame = pd.read_csv(source, header=0, names=header, dtype=np.float64, engine="c", encoding="utf-8-sig",
                            skip_blank_lines=False, keep_default_na=False, na_values=[""], **exact)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError, OverflowError):
        return None
    return frame.to_numpy(dtype=np.float64, copy=False)


def _is_time(header: str, time_column: str | None) -> bool:
    """The time column: ``time_column`` if given, else ``time`` (any case) with or without a unit."""
    if time_column is not None:
        return header == time_column or split_unit(header)[0] == time_column
    return header == "time" or split_unit(header)[0].lower() == "time" and header.lower() != "time"


def _read_csv(source: str, allow_empty: bool = False, time_column: str | None = None,
              meta: dict | None = None) -> tuple[list[str], list[list[str]], list[int]]:
    """Parse ``source`` into (header, rows of validated number strings, line of each row).

    ``allow_empty`` lets signal cells (not ``time``) be blank: a sample not measured.
    The file may be gzip-compressed, comma- or tab-separated, and start with an OpenSim
    header block ending in ``endheader`` (its ``key=value`` lines go to ``meta``)."""
    try:
        with open(source, "rb") as handle:
            data = handle.read()
        if data[:2] == b"\x1f\x8b":
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError, zlib.error) as exc:
                raise _error(f"{source}: looks gzip-compressed but cannot be decompressed "
                             f"({exc}); the file may be truncated") from None
        text = data.decode("utf-8-sig")
    except FileNotFoundError:
        raise _error(f"{source}: no such file; expected a CSV trial file (check the path)") \
            from None
    except IsADirectoryError:
        raise _error(f"{source}: is a directory, expected a CSV trial file") from None
    except UnicodeDecodeError as exc:
        bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        line = data[:exc.start + bom].count(b"\n") + 1
        raise _error(f"{source}: line {line}: not UTF-8 text (byte "
                     f"{data[exc.start + bom:exc.start + bom + 1]!r}); save the file as UTF-8 "
                     "CSV") from None
    except OSError as exc:
        raise _error(f"{source}: cannot read the file ({exc.strerror or exc})") from None
    if not text.strip():
        raise _error(f"{source}: the file is empty; expected a header row 'time,<signals>' "
                     "followed by one row per sample")
    skipped = 0
    head = text[:20000].splitlines()
    if any(line.strip().lower() == "endheader" for line in head):  # OpenSim .sto / .mot
        end = next(i for i, line in enumerate(head) if line.strip().lower() == "endheader")
        for line in head[:end]:
            key, eq, value = line.partition("=")
            if eq and meta is not None:
                meta[key.strip()] = value.strip()
        skipped = end + 1
        text = "".join(text.splitlines(keepends=True)[skipped:])
    first = next((line for line in text.splitlines() if line.strip()), "")
    delimiter = "\t" if "\t" in first and "," not in first else ","
    reader = csv.reader(io.StringIO(text), strict=True, delimiter=delimiter)
    records: list[tuple[int, list[str]]] = []
    try:
        start = 1
        for record in reader:
            records.append((start + skipped, record))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise _error(f"{source}: line {reader.line_num}: malformed CSV ({exc})") from None
    while records and not "".join(records[-1][1]).strip():
        records.pop()  # blank lines at the end of the file are harmless
    first_line, header = records[0]
    header = [h.strip() for h in header]
    if not "".join(header):
        raise _error(f"{source}: line {first_line} is empty; expected the header row "
                     "'time,<signal names>' on the first line")
    if _NUMBER.fullmatch(header[0]):
        raise _error(f"{source}: line {first_line} looks like data (starts with "
                     f"{header[0]!r}), not a header; add a header line 'time,<signal names>'")
    if not _is_time(header[0], time_column):
        sep = next((s for s in ";|" if s in header[0]), None)
        hint = (f"; the file looks {sep!r}-separated, colloc reads comma- or tab-separated files"
                if sep else "; rename the first column to 'time' (seconds)")
        raise _error(f"{source}: the first column of the header is named {header[0]!r}, "
                     f"expected {time_column or 'time'!r}{hint}")
    for j, col in enumerate(header):
        if not col:
            raise _error(f"{source}: header column {j + 1} has an empty name; every column "
                         "needs a name (trailing comma in the header?)")
        if header.index(col) != j:
            raise _error(f"{source}: column {col!r} appears twice in the header (columns "
                         f"{header.index(col) + 1} and {j + 1}); column names must be unique")
    width, rows, lines = len(header), [], []
    for line, record in records[1:]:
        where = f"row {len(rows) + 1} (line {line} of the file)"
        if len(record) != width:
            found = "is empty" if not "".join(record).strip() else f"has {len(record)} fields"
            raise _error(f"{source}: {where} {found}, expected {width} "
                         f"(one per column: {_names(header)})")
        if not all(map(_NUMBER.fullmatch, record)):
            for j, (col, cell) in enumerate(zip(header, record, strict=True)):
                if not _NUMBER.fullmatch(cell) and not (allow_empty and j and not cell.strip(" \t")):
                    raise _error(f"{source}: column {col!r}, {where}: {_cell_problem(cell, allow_empty)}")
        rows.append(record)
        lines.append(line)
    return header, rows, lines


def _cell_problem(cell: str, allow_empty: bool = False) -> str:
    text = cell.strip(" \t")
    if not text.strip():
        if allow_empty:  # only the time column gets here
            return "empty time cell; every row needs its time (an empty signal cell is a missing sample)"
        return ("empty cell; expected a number (no silent fill: fix or remove the row, or read "
                "with missing='allow' (CLI --missing allow) if it was not measured)")
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not math.isfinite(value):
        if allow_empty:
            return (f"value {text!r} is not finite; expected a finite number (leave the cell "
                    "empty for a sample that was not measured)")
        return (f"value {text!r} is not finite; expected a finite number (missing samples "
                "are not allowed: remove the row or fill it explicitly)")
    return f"cannot read {text!r} as a number; expected a decimal number such as 1.25 or -3e-4"
