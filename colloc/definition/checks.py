"""Checks and messages shared by :class:`colloc.Trial` and its file readers: errors that
name the file or trial, the column and the row."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..base.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MISSING_POLICIES"]

#: What an empty signal cell means: an error, or a sample not measured (``missing=``).
MISSING_POLICIES = ("error", "allow")


def _error(message: str) -> DataError:
    """Build a DataError whose message is guaranteed to fit on one line."""
    return DataError(message.replace("\r", "\\r").replace("\n", "\\n"))


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "(none)"


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


def _check_missing(missing: str) -> str:
    if not isinstance(missing, str) or missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be 'error' (every sample present) or 'allow' (an empty "
                         f"cell or NaN means not measured), got {missing!r}")
    return missing


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


# A plain decimal number, optionally surrounded by blanks.  Stricter than float(), which
# also accepts "1_000", non-ASCII digits, "nan" and "inf".
_NUMBER = re.compile(r"[ \t]*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[ \t]*")
