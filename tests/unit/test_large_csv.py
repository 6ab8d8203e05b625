"""The fast reader of large CSV files reads exactly what the exact reader reads, and hands
every defect back to it, so the messages do not depend on the file's size."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc.definition import trial as trial_module


@pytest.fixture
def fast_for_all(monkeypatch):
    monkeypatch.setattr(trial_module, "FAST_READ_BYTES", 0)


def _write(path, body: str):
    path.write_text(body, encoding="utf-8")
    return path


def _clean(path, n=200):
    t = np.arange(n) * 0.01
    lines = ["time,theta,omega"] + [f"{a:.2f},{np.sin(a):.9f},{np.cos(a):.6e}" for a in t]
    return _write(path, "\n".join(lines) + "\n")


def test_fast_and_exact_readers_agree(tmp_path, monkeypatch):
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
