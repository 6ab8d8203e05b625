"""Unit tests for colloc.trial: the CSV contract, validation and conversions."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from colloc import DataError, ExtraColumnsWarning
from colloc.definition.trial import Trial


def write(tmp_path, text: str | bytes, name: str = "trial.csv"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


def one_line(err: pytest.ExceptionInfo | Warning) -> str:
    message = str(err.value if isinstance(err, pytest.ExceptionInfo) else err)
    assert "\n" not in message and "\r" not in message
    return message


# -- CSV errors -----------------------------------------------------------------------------
CSV_ERRORS = [
    ("empty file", "", r"file is empty; expected a header row 'time"),
    ("blank lines only", "\n \n", r"file is empty"),
    ("leading blank line", "\ntime,a\n0,1\n1,2\n", r"line 1 is empty; expected the header"),
    ("header missing", "0.0,1.0\n0.1,2.0\n", r"line 1 looks like data \(starts with '0.0'\)"),
    ("first column not time", "t,a\n0,1\n1,2\n",
     r"first column of the header is named 't', expected 'time'"),
    ("semicolon separated", "time;a\n0;1\n1;2\n", r"named 'time;a'.*';'-separated"),
    ("duplicate column", "time,a,b,a\n0,1,2,3\n1,2,3,4\n",
     r"column 'a' appears twice in the header \(columns 2 and 4\)"),
    ("empty column name", "time,a,\n0,1,2\n1,2,3\n", r"header column 3 has an empty name"),
    ("short row", "time,a,b\n0,1,2\n1,2\n2,3,4\n",
     r"row 2 \(line 3 of the file\) has 2 fields, expected 3 \(one per column: time, a, b\)"),
    ("long row", "time,a\n0,1\n1,2\n2,3,4\n", r"row 3 \(line 4 of the file\) has 3 fields"),
    ("blank interior line", "time,a\n0,1\n\n1,2\n", r"row 2 \(line 3 of the file\) is empty"),
    ("empty cell", "time,a,b\n0,1,2\n1,,3\n",
     r"column 'a', row 2 \(line 3 of the file\): empty cell"),
    ("blank cell", "time,a,b\n0,1,2\n1,2,  \n",
     r"column 'b', row 2 \(line 3 of the file\): empty cell"),
    ("empty time cell", "time,a\n0,1\n,2\n",
     r"column 'time', row 2 \(line 3 of the file\): empty cell"),
    ("non-numeric", "time,a\n0,1\n1,abc\n",
     r"column 'a', row 2 \(line 3 of the file\): cannot read 'abc' as a number"),
    ("underscore digits", "time,a\n0,1\n1,1_000\n",
     r"column 'a', row 2 \(line 3 of the file\): cannot read '1_000'"),
    ("decimal comma", 'time,a\n0,1\n1,"2,5"\n',
     r"column 'a', row 2 \(line 3 of the file\): cannot read '2,5'"),
    ("nan text", "time,a\n0,1\n1,nan\n2,3\n",
     r"column 'a', row 2 \(line 3 of the file\): value 'nan' is not finite"),
    ("NaN text", "time,a\n0,1\n1,2\n2,NaN\n",
     r"column 'a', row 3 \(line 4 of the file\): value 'NaN'"),
    ("inf text", "time,a\n0,1\n1,-inf\n",
     r"column 'a', row 2 \(line 3 of the file\): value '-inf'"),
    ("Infinity text", "time,a\n0,Infinity\n1,2\n",
     r"column 'a', row 1 \(line 2 of the file\): value 'Infinity' is not finite"),
    ("overflow", "time,a\n0,1\n1,1e999\n",
     r"column 'a', row 2 \(line 3 of the file\): value '1e999' overflows float64"),
    ("nan time", "time,a\n0,1\nnan,2\n",
     r"column 'time', row 2 \(line 3 of the file\): value 'nan'"),
    ("duplicate time", "time,a\n0,1\n0.5,2\n0.5,3\n",
     (r"column 'time', row 3 \(line 4 of the file\): duplicate time 0.5 "
      r"\(same as row 2 \(line 3 of the file\)\)")),
    ("decreasing time", "time,a\n0,1\n0.5,2\n0.25,3\n",
     r"column 'time', row 3 \(line 4 of the file\): decreasing time 0.25 \(less than 0.5"),
    ("one row", "time,a\n0,1\n", r"needs at least 2 data rows, got 1"),
    ("header only", "time,a\n", r"needs at least 2 data rows, got 0"),
    ("bad quoting", 'time,a\n0,1\n1,"2"x\n', r"line 3: malformed CSV"),
    ("not utf-8", b"time,a\n0,1\n1,\xff\n", r"line 3: not UTF-8 text \(byte b'\\xff'\)"),
    ("not utf-8 after bom", b"\xef\xbb\xbftime,a\n0,1\n1,2\n2,\xfe\n",
     r"line 4: not UTF-8 text \(byte b'\\xfe'\)"),
]


@pytest.mark.parametrize("content, pattern", [c[1:] for c in CSV_ERRORS],
                         ids=[c[0] for c in CSV_ERRORS])
def test_from_csv_rejects_bad_file(tmp_path, content, pattern):
    path = write(tmp_path, content)
    with pytest.raises(DataError, match=pattern) as info:
        Trial.from_csv(path)
    assert one_line(info).startswith(str(path) + ": ")


@pytest.mark.parametrize("content, pattern", [
    ('time,"a\nb"\n0,1\n1,x\n', r"column 'a\\nb', row 2 \(line 4 of the file\): cannot read 'x'"),
    ('time,a\n0,1\n1,"2\n"\n', r"column 'a', row 2 \(line 3 of the file\): cannot read '2\\n'"),
    ("time,a\n0,1\n1,\u00e9\n".encode("utf-8-sig"), r"row 2 \(line 3 .*cannot read '\u00e9'"),
], ids=["multiline header", "multiline cell", "bom"])
def test_from_csv_line_numbers(tmp_path, content, pattern):
    with pytest.raises(DataError, match=pattern) as info:
        Trial.from_csv(write(tmp_path, content))
    one_line(info)


@pytest.mark.parametrize("make, pattern", [
    (lambda p: p / "missing.csv", r"missing\.csv: no such file"),
    (lambda p: p, r": is a directory, expected a CSV trial file"),
], ids=["missing", "directory"])
def test_from_csv_bad_path(tmp_path, make, pattern):
    path = make(tmp_path)
    with pytest.raises(DataError, match=pattern) as info:
        Trial.from_csv(str(path))
    assert str(path) in one_line(info)


# -- good files -----------------------------------------------------------------------------
@pytest.mark.parametrize("content", [
    "time,theta,omega\n0,1,2\n0.1,1.5,2.5\n0.3,2,3\n",
    "\ufefftime,theta,omega\r\n0,1,2\r\n0.1,1.5,2.5\r\n0.3,2,3\r\n",  # BOM + CRLF (Excel)
    " time , theta ,omega\n 0 ,1, 2\n0.1,\t1.5,2.5\n0.3,2,3\n\n\n",  # blanks, trailing lines
    "time,theta,omega\n0e0,+1,2.\n1e-1,1.5E0,.25e1\n0.3,2,3",  # number forms, no final EOL
], ids=["plain", "bom-crlf", "whitespace", "number-forms"])
def test_from_csv_good_file(tmp_path, content):
    trial = Trial.from_csv(write(tmp_path, content))
    assert trial.name == "trial.csv" and trial.source == str(tmp_path / "trial.csv")
    assert list(trial.signals) == ["theta", "omega"]
    np.testing.assert_array_equal(trial.time, [0.0, 0.1, 0.3])
    np.testing.assert_array_equal(trial["omega"], [2.0, 2.5, 3.0])
    assert trial.time.dtype == np.float64
    assert not trial.is_uniform()
    np.testing.assert_allclose(trial.steps, [0.1, 0.2])
    assert repr(trial) == "Trial('trial.csv', 3 samples, 0 to 0.3 s, signals: theta, omega)"


def test_csv_round_trip_is_bit_exact(tmp_path):
    rng = np.random.default_rng(0)
    time = np.cumsum(rng.uniform(1e-3, 1e-1, 600))  # non-uniform steps
    values = rng.standard_normal(600) * 10.0 ** rng.integers(-300, 300, 600)
    values[:4] = [1 / 3, -0.0, 5e-324, 1.7976931348623157e308]
    trial = Trial(time, {"theta": values, "omega,dot": rng.standard_normal(600)}, name="x")
    path = tmp_path / "out.csv"
    path.write_text("old contents")
    trial.to_csv(path)
    back = Trial.from_csv(path)
    assert list(back.signals) == ["theta", "omega,dot"]
    assert back.time.tobytes() == trial.time.tobytes()
    for key, array in trial.signals.items():
        assert back[key].tobytes() == array.tobytes()
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]  # no temp file left
    assert not back.is_uniform()


def test_to_csv_failure_leaves_no_file(tmp_path):
    trial = Trial([0.0, 1.0], {"a": [1.0, 2.0]})
    with pytest.raises(OSError):
        trial.to_csv(tmp_path / "no-such-dir" / "out.csv")
    assert list(tmp_path.iterdir()) == []


# -- require / extra / missing columns ------------------------------------------------------
GOOD = "time,theta,omega,u,temp,note_id\n0,1,2,3,4,5\n0.1,1,2,3,4,5\n0.2,1,2,3,4,5\n"


def test_extra_columns_warn_and_are_dropped(tmp_path):
    path = write(tmp_path, GOOD)
    with pytest.warns(ExtraColumnsWarning, match=r"trial\.csv: ignoring column\(s\) not used "
                      r"by the problem: 'temp', 'note_id'") as record:
        trial = Trial.from_csv(path, required=["theta", "omega"], optional=["u", "v"])
    assert list(trial.signals) == ["theta", "omega", "u"]
    assert record[0].filename == __file__  # the warning points at the caller
    one_line(record[0].message)


def test_no_warning_without_extra_columns(tmp_path):
    trial = Trial.from_csv(write(tmp_path, GOOD))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = trial.require(["time", "theta", "omega", "u"], ["temp", "note_id"])
    assert list(kept.signals) == ["theta", "omega", "u", "temp", "note_id"]
    assert kept.source == trial.source and kept.name == trial.name


def test_missing_required_column_lists_expected(tmp_path):
    path = write(tmp_path, GOOD.replace("omega", "Omega"))
    pattern = (r"trial\.csv: missing required column\(s\) 'omega', 'alpha'; the problem "
               r"expects required: theta, omega, alpha; optional: u; found: time, theta, "
               r"Omega, u, temp, note_id\..*'omega' -> did you mean 'Omega'\?")
    with pytest.raises(DataError, match=pattern) as info:
        Trial.from_csv(path, required=["theta", "omega", "alpha"], optional=["u"])
    one_line(info)


@pytest.mark.parametrize("use_csv, pattern", [
    (True, r"trial\.csv: needs at least 5 data rows, got 3"),
    (False, r"trial\.csv: needs at least 5 rows, got 3"),
])
def test_min_rows(tmp_path, use_csv, pattern):
    path = write(tmp_path, GOOD)
    with pytest.raises(DataError, match=pattern) as info:
        if use_csv:
            Trial.from_csv(path, min_rows=5)
        else:
            Trial.from_csv(path).require(["theta"], ["omega", "u", "temp", "note_id"],
                                         min_rows=5)
    one_line(info)
    assert Trial.from_csv(path, min_rows=3).num_samples == 3


def test_require_rejects_a_bare_string():
    with pytest.raises(TypeError, match="sequence of signal names"):
        Trial([0.0, 1.0], {"a": [1.0, 2.0]}).require("a")


# -- constructor ----------------------------------------------------------------------------
CTOR_ERRORS = [
    ("length mismatch", [0, 1, 2], {"a": [1, 2]},
     r"trial 'run': signal 'a' has 2 samples, expected 3 \(the length of time\)"),
    ("nan signal", [0, 1, 2], {"a": [1, np.nan, 2]},
     r"trial 'run': signal 'a', row 2 \(index 1\): value nan is not finite"),
    ("inf time", [0, np.inf], {}, r"trial 'run': time, row 2 \(index 1\): value inf"),
    ("duplicate time", [0, 1, 1, 2], {},
     r"time, row 3 \(index 2\): duplicate time 1\.0 \(same as row 2 \(index 1\)\)"),
    ("decreasing time", [0, 2, 1], {},
     r"time, row 3 \(index 2\): decreasing time 1\.0 \(less than 2\.0 at row 2"),
    ("empty time", [], {}, r"time is empty"),
    ("2-D signal", [0, 1], {"a": [[1, 2]]}, r"signal 'a' must be 1-D .* got shape \(1, 2\)"),
    ("string time", ["0", "1"], {}, r"time must hold real numbers"),
    ("complex signal", [0, 1], {"a": [1j, 2]}, r"signal 'a' must hold real numbers"),
    ("time as signal", [0, 1], {"time": [0, 1]}, r"'time' cannot be a signal name"),
    ("empty name", [0, 1], {"": [0, 1]}, r"signal names must be non-empty strings"),
    ("padded name", [0, 1], {" a": [0, 1]}, r"without surrounding blanks, got ' a'"),
    ("not a mapping", [0, 1], [[0, 1]], r"signals must be a mapping"),
]


@pytest.mark.parametrize("time, signals, pattern", [c[1:] for c in CTOR_ERRORS],
                         ids=[c[0] for c in CTOR_ERRORS])
def test_constructor_validation(time, signals, pattern):
    with pytest.raises(DataError, match=pattern) as info:
        Trial(time, signals, name="run")
    one_line(info)


def test_arrays_are_read_only_copies():
    time, theta = np.array([0.0, 0.5, 2.0]), np.array([1, 2, 3])
    trial = Trial(time, {"theta": theta})
    time[0], theta[0] = -1.0, 9
    assert trial.time[0] == 0.0 and trial["theta"][0] == 1.0
    assert trial["theta"].dtype == np.float64
    for array in (trial.time, trial["theta"]):
        assert not array.flags.writeable
        with pytest.raises(ValueError):
            array[0] = 5.0


def test_accessors_and_defaults():
    trial = Trial(np.arange(600) * 0.01, {"theta": np.zeros(600), "omega": np.ones(600)})
    assert trial.name == "trial" and trial.source is None
    assert trial.num_samples == 600 and trial.duration == pytest.approx(5.99)
    assert trial.is_uniform() and trial.steps.shape == (599,)
    assert "theta" in trial and "time" not in trial and "x" not in trial
    assert repr(trial) == "Trial('trial', 600 samples, 0 to 5.99 s, signals: theta, omega)"
    assert Trial([1.0], {}).is_uniform()


@pytest.mark.parametrize("key, pattern", [
    ("x", r"trial 'trial': no signal 'x'; available: theta, omega$"),
    ("time", r"no signal 'time'; .*the time vector is trial\.time"),
])
def test_unknown_signal(key, pattern):
    trial = Trial([0, 1], {"theta": [0, 1], "omega": [1, 2]})
    with pytest.raises(DataError, match=pattern) as info:
        trial[key]
    assert isinstance(info.value, KeyError)
    one_line(info)


def test_with_signals():
    trial = Trial([0, 1, 2], {"a": [1, 2, 3]}, name="run")
    new = trial.with_signals(b=[4, 5, 6], a=[7, 8, 9])
    assert list(new.signals) == ["a", "b"] and new.name == "run"
    np.testing.assert_array_equal(new["a"], [7, 8, 9])
    np.testing.assert_array_equal(trial["a"], [1, 2, 3])
    assert not new["b"].flags.writeable
    with pytest.raises(DataError, match=r"signal 'b' has 2 samples, expected 3"):
        trial.with_signals(b=[1, 2])


# -- DataFrame ------------------------------------------------------------------------------
def test_dataframe_round_trip():
    frame = pd.DataFrame({"time": [0.0, 0.1, 0.25], "theta": [1, 2, 3], "u": [0.5, 0.5, 0.0]},
                         index=[10, 11, 12])
    trial = Trial.from_dataframe(frame, name="lab")
    assert list(trial.signals) == ["theta", "u"] and trial.name == "lab"
    out = trial.to_dataframe()
    assert list(out.columns) == ["time", "theta", "u"]
    pd.testing.assert_frame_equal(out, frame.reset_index(drop=True).astype(float))
    out.loc[0, "theta"] = 99.0  # the frame is a writable copy
    assert trial["theta"][0] == 1.0


def test_from_dataframe_custom_time_column():
    frame = pd.DataFrame({"a": [1.0, 2.0], "t": [0.0, 1.0]})
    trial = Trial.from_dataframe(frame, time_column="t")
    assert list(trial.signals) == ["a"] and trial.time.tolist() == [0.0, 1.0]


DF_ERRORS = [
    ("text column", {"time": [0, 1, 2], "a": ["1", "x", "2"]},
     r"trial 'df': column 'a' is not numeric \(dtype .*\): row 1 \(index 0\) holds '1'"),
    ("mixed column", {"time": [0, 1, 2], "a": [1.0, "x", 2.0]},
     r"column 'a' is not numeric .*row 2 \(index 1\) holds 'x'"),
    ("nan", {"time": [0, 1, 2], "a": [1.0, np.nan, 2.0]},
     r"signal 'a', row 2 \(index 1\): value nan is not finite"),
    ("nullable NA", {"time": [0, 1, 2], "a": pd.array([1, None, 2], dtype="Int64")},
     r"signal 'a', row 2 \(index 1\): value nan"),
    ("decreasing", {"time": [0, 2, 1], "a": [1, 2, 3]},
     r"time, row 3 \(index 2\): decreasing time"),
    ("datetime time", {"time": pd.to_datetime(["2024-01-01", "2024-01-02"]), "a": [1, 2]},
     r"column 'time' has dtype datetime64.*convert time to seconds"),
    ("no time column", {"t": [0, 1], "a": [1, 2]}, r"no time column 'time'; columns are t, a"),
    ("int column name", {"time": [0, 1], 3: [1, 2]}, r"column names must be strings, got 3"),
]


@pytest.mark.parametrize("data, pattern", [c[1:] for c in DF_ERRORS],
                         ids=[c[0] for c in DF_ERRORS])
def test_from_dataframe_errors(data, pattern):
    with pytest.raises(DataError, match=pattern) as info:
        Trial.from_dataframe(pd.DataFrame(data), name="df")
    one_line(info)


def test_from_dataframe_duplicate_columns():
    frame = pd.DataFrame([[0, 1, 2], [1, 2, 3]], columns=["time", "a", "a"])
    with pytest.raises(DataError, match=r"column 'a' appears more than once"):
        Trial.from_dataframe(frame)
