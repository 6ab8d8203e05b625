"""Reading files as labs write them: gzip, tabs, units in the header, lab column names,
OpenSim .sto/.mot and C3D.  Expected values are written by hand (cm -> m is /100)."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest

from colloc import DataError
from colloc.definition.trial import Trial
from colloc.definition.units import split_unit, to_si

LAB = ("Time[s]\tFz[N]\tMy[Nm]\tCOPx[cm]\tCOPy[cm]\n"
       "0.010\t539.0\t43.06\t-7.98\t0.99\n"
       "0.020\t538.5\t43.02\t-7.96\t1.01\n"
       "0.030\t538.1\t42.90\t-7.90\t1.02\n")


def test_gzip_tab_units_and_mapping(tmp_path):
    path = tmp_path / "BDS99999.txt.gz"
    path.write_bytes(gzip.compress(LAB.encode()))
    trial = Trial.from_csv(path, columns={"cop": "COPx"}, units={"cop": "cm"})
    assert list(trial.signals) == ["cop"]
    np.testing.assert_allclose(trial.time, [0.01, 0.02, 0.03])
    np.testing.assert_allclose(trial["cop"], [-0.0798, -0.0796, -0.0790], rtol=1e-12)
    everything = Trial.from_csv(path)
    assert list(everything.signals) == ["Fz", "My", "COPx", "COPy"]
    np.testing.assert_allclose(everything["COPy"], [0.0099, 0.0101, 0.0102], rtol=1e-12)
    np.testing.assert_allclose(everything["Fz"], [539.0, 538.5, 538.1])


def test_units_given_when_header_has_none(tmp_path):
    path = tmp_path / "lab.csv"
    path.write_text("time,ap\n0,12\n0.001,13\n0.002,15\n")
    trial = Trial.from_csv(path, columns={"cop": "ap"}, units={"cop": "mm", "time": "s"})
    np.testing.assert_allclose(trial["cop"], [0.012, 0.013, 0.015])
    ms = tmp_path / "ms.csv"
    ms.write_text("t (ms),angle (deg)\n0,90\n10,180\n")
    trial = Trial.from_csv(ms, columns={"time": "t", "theta": "angle"})
    np.testing.assert_allclose(trial.time, [0.0, 0.01])
    np.testing.assert_allclose(trial["theta"], [math.pi / 2, math.pi])


@pytest.mark.parametrize("text, kwargs, message", [
    (LAB, {"columns": {"cop": "COPX"}}, r"lab.txt: no column 'COPX' for signal 'cop' \(did you mean 'COPx'\?\)"),
    (LAB, {"columns": {"cop": "COPx"}, "units": {"cop": "mm"}},
     r"column 'COPx\[cm\]' \(signal 'cop'\): unit 'mm' given, but the header says 'cm'"),
    (LAB.replace("[cm]", "[furlong]", 1), {"columns": {"cop": "COPx"}},
     r"column 'COPx\[furlong\]' \(signal 'cop'\): unknown unit 'furlong'"),
    (LAB, {"columns": {"cop": "COPx"}, "units": {"force": "N"}}, r"units names force, which is not a signal"),
    (LAB.replace("-7.96", "abc"), {"columns": {"cop": "COPx"}},
     r"column 'COPx\[cm\]', row 2 \(line 3 of the file\): cannot read 'abc'"),
    (LAB.replace("0.030", "0.015"), {}, r"column 'time', row 3 .*decreasing time"),
])
def test_lab_file_errors_name_file_column_row(tmp_path, text, kwargs, message):
    path = tmp_path / "lab.txt"
    path.write_text(text)
    with pytest.raises(DataError, match=message) as err:
        Trial.from_csv(path, **kwargs)
    assert "\n" not in str(err.value)


def test_truncated_gzip_is_a_data_error(tmp_path):
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(gzip.compress(LAB.encode())[:30])
    with pytest.raises(DataError, match=r"cut.txt.gz: looks gzip-compressed but cannot be decompressed"):
        Trial.from_csv(path)


def test_opensim_mot(tmp_path):
    path = tmp_path / "ik.mot"
    path.write_text("Coordinates\nversion=1\nnRows=3\nnColumns=3\ninDegrees=yes\nendheader\n"
                    "time\tankle_angle_r\tpelvis_tx\n0.00\t10\t0.5\n0.01\t20\t0.6\n0.02\t30\t0.7\n")
    trial = Trial.from_csv(path, columns={"theta": "ankle_angle_r", "x": "pelvis_tx"},
                           units={"theta": "deg", "x": "m"})
    np.testing.assert_allclose(trial["theta"], np.radians([10, 20, 30]))
    np.testing.assert_allclose(trial["x"], [0.5, 0.6, 0.7])
    with pytest.raises(DataError, match=r"ik.mot: column 'pelvis_tx'.*inDegrees=yes"):
        Trial.from_csv(path, columns={"theta": "ankle_angle_r", "x": "pelvis_tx"}, units={"theta": "deg"})
    bad = tmp_path / "bad.sto"
    bad.write_text("x\ninDegrees=no\nendheader\ntime\ta\n0\t1\n0.1\toops\n")
    with pytest.raises(DataError, match=r"column 'a', row 2 \(line 6 of the file\): cannot read 'oops'"):
        Trial.from_csv(bad)


def test_unit_table():
    assert split_unit("COPx[cm]") == ("COPx", "cm")
    assert split_unit("Fz (N)") == ("Fz", "N")
    assert split_unit("plain") == ("plain", None)
    assert to_si("cm") == 0.01 and to_si("Nmm") == 0.001 and to_si("g") == 9.80665
    assert to_si("deg/s") == pytest.approx(math.pi / 180)
    with pytest.raises(KeyError, match="unknown unit 'CM'"):
        to_si("CM")


def _write_c3d(path, ezc3d):
    c3d = ezc3d.c3d()
    c3d["parameters"]["POINT"]["RATE"]["value"] = np.array([100.0])
    c3d["parameters"]["POINT"]["LABELS"]["value"] = ("HEEL", "TOE")
    c3d["parameters"]["POINT"]["UNITS"]["value"] = ["mm"]
    points = np.ones((4, 2, 5))
    points[0, 0, :] = [100, 110, 120, 130, 140]  # HEEL x in mm
    c3d["data"]["points"] = points
    c3d["parameters"]["ANALOG"]["RATE"]["value"] = np.array([1000.0])
    c3d["parameters"]["ANALOG"]["LABELS"]["value"] = ("Fz1", "EMG")
    c3d["parameters"]["ANALOG"]["UNITS"]["value"] = ["N", "mV"]
    analogs = np.zeros((1, 2, 50))
    analogs[0, 0, :] = 600.0
    analogs[0, 1, :] = np.arange(50) * 1.0
    c3d["data"]["analogs"] = analogs
    c3d.write(str(path))


def test_c3d(tmp_path):
    ezc3d = pytest.importorskip("ezc3d")
    path = tmp_path / "walk.c3d"
    _write_c3d(path, ezc3d)
    trial = Trial.from_c3d(path, columns={"heel": "HEEL_x"})
    np.testing.assert_allclose(trial.time, [0, 0.01, 0.02, 0.03, 0.04])
    np.testing.assert_allclose(trial["heel"], [0.10, 0.11, 0.12, 0.13, 0.14], rtol=1e-6)
    analog = Trial.from_c3d(path, columns={"force": "Fz1", "emg": "EMG"})
    assert analog.num_samples == 50 and analog.time[1] == pytest.approx(0.001)
    np.testing.assert_allclose(analog["emg"][:3], [0.0, 0.001, 0.002])
    np.testing.assert_allclose(analog["force"], 600.0)
    with pytest.raises(DataError, match=r"different rates \(100 Hz, 1000 Hz\)"):
        Trial.from_c3d(path, columns={"heel": "HEEL_x", "force": "Fz1"})
    with pytest.raises(DataError, match=r"walk.c3d: no C3D channel 'HEAL_x' .*did you mean 'HEEL_x'"):
        Trial.from_c3d(path, columns={"heel": "HEAL_x"})
