"""``Trial.window`` and ``colloc identify --window A:B`` (docs/contracts.md §3): fit A <= time < B only."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import colloc as co


def _trial():
    t = np.round(np.arange(0.0, 10.0, 0.01), 10)
    return co.Trial(t, {"x": np.sin(t), "u": np.where(t < 5.0, 0.0, 1.0)}, name="rec")


def test_the_window_keeps_start_and_drops_end_and_shares_the_arrays():
    w = _trial().window(2.0, 3.0)
    assert w.name == "rec" and w.num_samples == 100
    assert w.time[0] == 2.0 and w.time[-1] == pytest.approx(2.99)
    np.testing.assert_array_equal(w["x"], np.sin(w.time))
    assert not w.time.flags.writeable
    assert _trial().window(None, 0.05).num_samples == 5 and _trial().window(9.5, None).num_samples == 50


def test_a_step_inside_the_window_is_kept_and_one_outside_or_at_its_start_is_not():
    t = np.array([0.0, 1.0, 2.0, 2.0, 3.0, 4.0])
    trial = co.Trial(t, {"u": np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])}, jump_columns=["u"], name="step")
    assert list(trial.jumps) == ["u"]
    assert trial.window(1.0, 5.0).jumps["u"][0].tolist() == [2.0]
    assert trial.window(2.0, 5.0).jumps == {} and trial.window(0.0, 2.0).jumps == {}


@pytest.mark.parametrize("start, end, match", [(20.0, 30.0, r"window 20:30 holds 0 sample\(s\); the record spans 0 "
                                                                r"to 9.99 s"),
                                               (3.0, 3.0, "is empty"), (3.0, 3.005, "holds 1 sample")])
def test_a_window_without_two_samples_is_refused_by_name(start, end, match):
    with pytest.raises(co.DataError, match=match):
        _trial().window(start, end)


def test_identify_fits_only_the_window(tmp_path):
    """The pendulum record (made by data/pendulum/make_pendulum.py) fitted on 2-6 s only."""
    from colloc_problems._data import data_path

    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "colloc.cli", "identify", "pendulum", "--data",
                           str(data_path("pendulum", "pendulum.csv")), "--window", "2:6", "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    times = np.array(doc["measurements"]["pendulum.csv"]["time"])
    assert times[0] == 2.0 and times[-1] < 6.0 and times[-1] == pytest.approx(5.99)
    assert doc["info"]["window_s"] == [2.0, 6.0]
    assert doc["parameters"]["p"] == pytest.approx(10.0, rel=0.01)  # the record's p (its README)


@pytest.mark.parametrize("window, message", [("5:2", "the start must be before the end"),
                                             ("abc", "expected A:B in seconds"),
                                             ("200:300", "window 200:300 holds 0 sample")])
def test_a_bad_window_is_one_line_and_exit_2(window, message, tmp_path):
    from colloc_problems._data import data_path

    proc = subprocess.run([sys.executable, "-m", "colloc.cli", "identify", "pendulum", "--data",
                           str(data_path("pendulum", "pendulum.csv")), "--window", window],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
