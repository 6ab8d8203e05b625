"""The fast reader of large CSV files reads exactly what the exact reader reads, and hands
every defect back to it, so the messages do not depend on the file's size."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc.definition import readers as trial_module  # the readers of Trial.from_csv


@pytest.fixture(params=["numpy", "pandas"])
def parser(request, monkeypatch):
    """Each test runs with either C parser behind the fast path (NumPy's below 16 MB unless
    pandas is already imported, pandas' above)."""
    monkeypatch.setattr(trial_module, "_pandas_imported", lambda: request.param == "pandas")
    return request.param


@pytest.fixture
def fast_for_all(monkeypatch, parser):
    monkeypatch.setattr(trial_module, "FAST_READ_BYTES", 0)


def _write(path, body: str):
    path.write_text(body, encoding="utf-8")
    return path


def _clean(path, n=200):
    t = np.arange(n) * 0.01
    lines = ["time,theta,omega"] + [f"{a:.2f},{np.sin(a):.9f},{np.cos(a):.6e}" for a in t]
    return _write(path, "\n".join(lines) + "\n")


def test_fast_and_exact_readers_agree(tmp_path, monkeypatch, parser):
    path = _clean(tmp_path / "t.csv")
    exact = co.Trial.from_csv(path)
    assert trial_module._read_csv_fast(str(path)) is None  # small: the exact reader only
    monkeypatch.setattr(trial_module, "FAST_READ_BYTES", 0)
    assert trial_module._read_csv_fast(str(path)) is not None
    fast = co.Trial.from_csv(path)
    np.testing.assert_array_equal(fast.time, exact.time)
    for s in ("theta", "omega"):
        np.testing.assert_array_equal(fast[s], exact[s])  # bit for bit (round-trip parsing)


@pytest.mark.parametrize("cell, fragment", [
    ("", "empty cell"), ("nan", "not finite"), ("1_0", "cannot read"), ("0x1A", "cannot read"),
    ("1e999", "overflows"), ("abc", "cannot read"),
])
def test_defects_get_the_exact_readers_message(tmp_path, fast_for_all, cell, fragment):
    path = _clean(tmp_path / "t.csv")
    lines = path.read_text().splitlines()
    parts = lines[57].split(",")
    parts[1] = cell
    lines[57] = ",".join(parts)
    _write(path, "\n".join(lines) + "\n")
    with pytest.raises(co.DataError) as err:
        co.Trial.from_csv(path)
    assert fragment in str(err.value) and "'theta'" in str(err.value) and "line 58" in str(err.value), err.value


def test_time_errors_name_the_file_line(tmp_path, fast_for_all):
    path = _clean(tmp_path / "t.csv")
    lines = path.read_text().splitlines()
    lines[100], lines[101] = lines[101], lines[100]  # time goes backwards at data row 100
    _write(path, "\n".join(lines) + "\n")
    assert trial_module._read_csv_fast(str(path)) is not None  # numbers are fine: the fast path reads it
    with pytest.raises(co.DataError) as err:
        co.Trial.from_csv(path)
    assert "line 102" in str(err.value), err.value


def test_ragged_or_blank_rows_fall_back(tmp_path, fast_for_all):
    path = _clean(tmp_path / "t.csv")
    lines = path.read_text().splitlines()
    lines[30] += ",7"
    _write(path, "\n".join(lines) + "\n")
    with pytest.raises(co.DataError, match="4 fields"):
        co.Trial.from_csv(path)
    path = _clean(tmp_path / "u.csv")
    lines = path.read_text().splitlines()
    lines.insert(40, "")
    _write(path, "\n".join(lines) + "\n")
    with pytest.raises(co.DataError, match="is empty"):
        co.Trial.from_csv(path)


def test_each_parser_is_the_one_used(tmp_path, monkeypatch):
    """Below PANDAS_READ_BYTES NumPy's parser reads (pandas need not be imported); above it, or
    with pandas imported already, pandas'."""
    path = _clean(tmp_path / "t.csv")
    monkeypatch.setattr(trial_module, "FAST_READ_BYTES", 0)
    used = []
    for name in ("_parse_with_numpy", "_parse_with_pandas"):
        real = getattr(trial_module, name)
        monkeypatch.setattr(trial_module, name, lambda *a, _r=real, _n=name: used.append(_n) or _r(*a))
    monkeypatch.setattr(trial_module, "_pandas_imported", lambda: False)
    co.Trial.from_csv(path)
    monkeypatch.setattr(trial_module, "PANDAS_READ_BYTES", 0)
    co.Trial.from_csv(path)
    assert used == ["_parse_with_numpy", "_parse_with_pandas"]


@pytest.mark.parametrize("defect", ["comment", "blank_last_but_one", "crlf", "gzip", "whitespace_line"])
def test_what_numpy_skips_goes_to_the_exact_reader(tmp_path, monkeypatch, defect):
    """NumPy's parser skips blank lines and would read comments or a gzip file in its own way;
    each such file is left to the exact reader (which reads it or names the defect)."""
    import gzip

    monkeypatch.setattr(trial_module, "FAST_READ_BYTES", 0)
    monkeypatch.setattr(trial_module, "_pandas_imported", lambda: False)
    path = _clean(tmp_path / "t.csv")
    text = path.read_text()
    lines = text.splitlines()
    if defect == "comment":
        lines.insert(20, "# a note")
    elif defect == "blank_last_but_one":
        lines.insert(len(lines) - 1, "")
    elif defect == "whitespace_line":
        lines.insert(10, "   ")
    if defect == "crlf":
        path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
        assert trial_module._read_csv_fast(str(path)) is not None  # Windows line ends are fine
        np.testing.assert_array_equal(co.Trial.from_csv(path)["theta"], co.Trial.from_csv(_clean(tmp_path / "u.csv"))["theta"])
        return
    if defect == "gzip":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        _write(path, "\n".join(lines) + "\n")
    assert trial_module._read_csv_fast(str(path)) is None
    if defect == "gzip":
        assert len(co.Trial.from_csv(path).time) == 200  # the exact reader reads it
    else:
        line = {"comment": 21, "blank_last_but_one": 201, "whitespace_line": 11}[defect]
        with pytest.raises(co.DataError, match=f"line {line}\\b"):
            co.Trial.from_csv(path)
