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
import math
import os
import secrets
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import DataError, ExtraColumnsWarning
from .checks import (
    _check_mapping,
    _check_min_rows,
    _check_missing,
    _error,
    _name_list,
    _names,
    _numeric_column,
    _Origin,
)
from .readers import read_c3d, read_csv

if TYPE_CHECKING:  # pandas is imported where a DataFrame is made or read (0.15-0.2 s to import)
    import pandas as pd

__all__ = ["INTERPOLATIONS", "Trial"]







class _UnknownSignal(DataError, KeyError):
    """Unknown signal name: a DataError that ``except KeyError`` also catches."""

    __str__ = DataError.__str__  # KeyError would quote the message




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
        if not jump_columns or time_arr.size == 0 or not np.all(np.isfinite(time_arr)):
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
        columns = [self.time.tolist()] + [["" if math.isnan(v) else v for v in a.tolist()]  # NaN: empty
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
        header, data, lines = read_csv(source, min_rows=min_rows, missing=missing, columns=columns, units=units)
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
        source = os.fspath(path)
        hdr, data = read_c3d(source, columns=columns, units=units)
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






























