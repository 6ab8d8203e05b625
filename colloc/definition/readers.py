"""The trial file readers: CSV as labs write it (gzip, tabs, units in the header, OpenSim
``.sto``/``.mot`` headers, a fast path for large numeric files) and C3D motion capture.
They return arrays and line numbers; :class:`colloc.Trial` checks and holds them."""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
import sys
import zlib
from collections.abc import Mapping, Sequence
from typing import overload

import numpy as np

from .checks import _NUMBER, _check_mapping, _closest, _error, _names
from .units import split_unit, to_si

__all__ = ["FAST_READ_BYTES", "PANDAS_READ_BYTES", "read_c3d", "read_csv"]

#: Files at least this large (bytes) are first read in one pass by a C parser
#: (:func:`_read_csv_fast`): the two-link seed file (647 kB, 6,001 rows) in 0.011 s by NumPy's
#: against the exact reader's 0.065 s, the same numbers; smaller files, a few ms either way, stay
#: with the exact reader.
FAST_READ_BYTES = 100_000
#: From this size (bytes) pandas' parser reads the file, about 3× as fast as NumPy's but 0.15-0.2 s
#: to import; below it NumPy's, unless pandas is already imported.
PANDAS_READ_BYTES = 16_000_000


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


class _Lines(Sequence[int]):
    """Line numbers of data rows in a file with one line per row after a one-line header."""

    def __init__(self, count: int) -> None:
        self._n = count

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> list[int]: ...

    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            return [k + 2 for k in range(*i.indices(self._n))]
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return (i % self._n) + 2


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
        for entry in head[:end]:
            key, eq, value = entry.partition("=")
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
    width = len(header)
    rows: list[list[str]] = []
    lines: list[int] = []
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


def read_csv(source: str, *, min_rows: int, missing: str, columns: dict[str, str],
             units: dict[str, str]) -> tuple[list[str], np.ndarray, Sequence[int]]:
    """Read a trial's CSV file: ``(header, data, lines)``, the signal names (``time`` first),
    the samples (one row each, SI units, NaN where ``missing="allow"`` left a cell empty) and
    each row's line in the file.  ``columns`` and ``units`` are
    :meth:`colloc.Trial.from_csv`'s, checked."""
    time_column = columns.get("time")
    meta: dict[str, str] = {}
    fast = _read_csv_fast(source) if time_column is None else None
    lines: Sequence[int]
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
    return header, data, lines


def read_c3d(source: str, *, columns: Mapping[str, str] | None,
             units: Mapping[str, str] | None) -> tuple[list[str], np.ndarray]:
    """Read the mapped channels of a C3D file: ``(header, data)``, ``time`` first, SI units
    (see :meth:`colloc.Trial.from_c3d`)."""
    try:
        import ezc3d
    except ImportError:
        raise ImportError("reading C3D files needs ezc3d: pip install 'colloc[c3d]'") from None
    columns = _check_mapping(columns, "columns")
    if not columns:
        raise _error(f"{source}: pass columns={{signal: C3D label}}; a C3D file has no "
                     "columns named after the problem's signals")
    if not os.path.isfile(source):
        raise _error(f"{source}: no such file; expected a C3D file (check the path)")
    try:
        c3d = ezc3d.c3d(source)
    except Exception as exc:  # noqa: BLE001 - ezc3d raises plain RuntimeError/IOError on a bad file
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
    return hdr, data
