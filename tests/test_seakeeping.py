"""Ship-deck motion from a sea state, and measured ship-motion files (colloc.seakeeping).

The expected values come from outside the code under test: the JONSWAP formula of
DNV-RP-C205 §3.5.5 written out here, the RAO table read straight from the MSS file (or the
shipped CSV parsed by numpy), rotation matrices and finite differences written here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.signal import csd, welch

import colloc as co

MAT = Path("/work/shared/data/real/ship_deck_rao_mss/supply.mat")
CSV = Path(co.__file__).parent / "seakeeping" / "data" / "supply_motion_rao.csv"
COLUMNS = ("ship_roll", "ship_pitch", "ship_yaw", "ship_roll_rate", "ship_pitch_rate", "ship_yaw_rate",
           "ship_roll_acc", "ship_pitch_acc", "ship_yaw_acc", "ship_acc_x", "ship_acc_y", "ship_acc_z")


def dnv_jonswap(w, hs, tp, gamma):
    """DNV-RP-C205 (2010) Eq. 3.5.5: S = A_γ S_PM γ^r, A_γ = 1 − 0.287 ln γ."""
    wp = 2 * np.pi / tp
    s_pm = 5 / 16 * hs**2 * wp**4 * w**-5 * np.exp(-5 / 4 * (w / wp) ** -4)
    sigma = np.where(w <= wp, 0.07, 0.09)
    return (1 - 0.287 * np.log(gamma)) * s_pm * gamma ** np.exp(-0.5 * ((w - wp) / (sigma * wp)) ** 2)


def table_rao(dof: int, heading_index: int):
    """(ω, complex RAO in MSS axes) of one motion and tabulated heading, not via MotionRAO."""
    if MAT.exists():
        from scipy.io import loadmat
        v = loadmat(MAT, squeeze_me=True, struct_as_record=False)["vessel"]
        r = v.motionRAO
        return r.w, r.amp[dof][:, heading_index, 0] * np.exp(1j * r.phase[dof][:, heading_index, 0])
    data = np.loadtxt(CSV, delimiter=",", comments="#", skiprows=4)
    rows = data[np.isclose(data[:, 0], 10.0 * heading_index)]
    return rows[:, 1], rows[:, 2 + 2 * dof] * np.exp(1j * rows[:, 3 + 2 * dof])


def test_wave_record_has_the_jonswap_spectrum_and_significant_height():
    sea = co.SeaState(hs=3.0, tp=9.0, gamma=3.3, heading=180.0)
    motion = co.ship_motion(sea, seed=3, harmonics=300)
    fs = 2.0
    t = np.arange(0, 4 * 3600, 1 / fs)
    zeta = motion.wave_elevation(t)
    assert 4 * np.sqrt(np.var(zeta)) == pytest.approx(3.0, rel=0.03)
    f, p = welch(zeta, fs=fs, nperseg=4096)
    w, s = 2 * np.pi * f, p / (2 * np.pi)                # one-sided, per rad/s
    wp = 2 * np.pi / 9.0
    for lo, hi in [(0.6, 0.9), (0.9, 1.1), (1.1, 1.5), (1.5, 2.5)]:
        band = (w >= lo * wp) & (w < hi * wp)
        fine = np.linspace(lo * wp, hi * wp, 2001)
        expect = np.trapezoid(dnv_jonswap(fine, 3.0, 9.0, 3.3), fine)
        assert np.sum(s[band]) * (w[1] - w[0]) == pytest.approx(expect, rel=0.12), (lo, hi)


@pytest.mark.parametrize("dof, heading, omega0, sign", [(2, 18, 0.5984, -1.0), (3, 9, 1.047, 1.0)])
def test_rao_recovered_from_a_record_by_cross_spectrum(dof, heading, omega0, sign):
    """Heave in head seas and roll in beam seas: |H| and ∠H at a tabulated frequency from
    the cross-spectrum of elevation and motion (heave changes sign: z up in the ship frame)."""
    motion = co.ship_motion(co.SeaState(hs=2.0, tp=2 * np.pi / omega0, heading=10.0 * heading), seed=1,
                            harmonics=200)
    fs = 2.0
    t = np.arange(0, 3600, 1 / fs)
    zeta = motion.wave_elevation(t)
    eta = motion.motions(t)[:, dof]
    f, pzz = welch(zeta, fs=fs, nperseg=2048)
    _, pze = csd(zeta, eta, fs=fs, nperseg=2048)
    i = np.argmin(np.abs(2 * np.pi * f - omega0))
    estimate = pze[i] / pzz[i]               # scipy's csd(x, y) averages conj(X)·Y: H = Y/X
    w, h = table_rao(dof, heading)
    expect = sign * h[np.argmin(np.abs(w - omega0))]
    assert abs(estimate) == pytest.approx(abs(expect), rel=0.05)
    assert np.angle(estimate / expect) == pytest.approx(0.0, abs=0.08)


def test_rao_phase_is_in_radians_long_wave_limits():
    """At the longest wave the hull follows the water: heave −1 in z-down axes (phase π),
    head-seas pitch the wave slope +i·ω²/g (phase +π/2), beam-seas roll in phase with the
    slope (+π/2; its amplitude is raised by the coupling with sway)."""
    rao = co.MotionRAO.supply_vessel()
    w = rao.omega[0]
    h = rao(w, 180.0)[:, 0]
    assert h[2] == pytest.approx(-1.0, abs=0.01)
    assert h[4] == pytest.approx(1j * w**2 / 9.81, abs=2e-4)
    assert np.angle(rao(w, 90.0)[3, 0]) == pytest.approx(np.pi / 2, abs=0.01)   # roll lags the slope by 0


def _rotation(a):
    out = []
    for phi, theta, psi in a:
        cx, sx, cy, sy, cz, sz = np.cos(phi), np.sin(phi), np.cos(theta), np.sin(theta), np.cos(psi), np.sin(psi)
        rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
        ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
        rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
        out.append(rx @ ry @ rz)
    return np.array(out)


def test_derivatives_are_exact_against_finite_differences():
    r = np.array([-20.0, 4.0, 2.5])
    motion = co.ship_motion(co.SeaState(hs=4.0, tp=8.0, heading=135.0), point=r, seed=5)
    t = np.linspace(1.0, 50.0, 37)
    h = 1e-3
    x = [motion(t + k * h) for k in (-1, 0, 1)]
    for j in range(3):
        rate = (x[2][:, j] - x[0][:, j]) / (2 * h)
        acc = (x[2][:, j] - 2 * x[1][:, j] + x[0][:, j]) / h**2
        assert np.allclose(x[1][:, 3 + j], rate, rtol=0, atol=1e-6 * np.abs(rate).max())
        assert np.allclose(x[1][:, 6 + j], acc, rtol=0, atol=1e-5 * np.abs(acc).max())

    def position(tt):  # p_N = ξ + R_NS r, R_NS from the Bryant angles written out here
        return motion.motions(tt)[:, :3] + _rotation(motion(tt)[:, :3]) @ r

    p = [position(t + k * h) for k in (-1, 0, 1)]
    a_n = (p[2] - 2 * p[1] + p[0]) / h**2
    a_s = np.einsum("kji,kj->ki", _rotation(x[1][:, :3]), a_n)
    assert np.allclose(x[1][:, 9:], a_s, rtol=0, atol=1e-5 * np.abs(a_s).max())
    # the CasADi expressions are the same functions of time
    import casadi as ca
    tau = ca.SX.sym("t")
    f = ca.Function("f", [tau], motion.symbolic(tau))
    assert np.allclose(np.array([float(v) for v in f(t[7])]), x[1][7], rtol=1e-12, atol=1e-12)


def test_seeded_reproducible_and_columns():
    sea = co.SeaState(hs=2.0, tp=7.0, gamma=2.0, heading=45.0)
    t = np.arange(0, 5, 0.01)
    a, b = co.ship_motion(sea, seed=11)(t), co.ship_motion(sea, seed=11)(t)
    assert np.array_equal(a, b)
    assert not np.allclose(a, co.ship_motion(sea, seed=12)(t))
    assert tuple(co.ship_motion(sea).columns(t)) == COLUMNS


@pytest.mark.parametrize("kwargs, name", [({"hs": -1.0, "tp": 8.0}, "hs"), ({"hs": 2.0, "tp": 0.0}, "tp"),
                                          ({"hs": 2.0, "tp": float("nan")}, "tp"),
                                          ({"hs": 2.0, "tp": 8.0, "heading": float("inf")}, "heading"),
                                          ({"hs": 2.0, "tp": 8.0, "heading": 400.0}, "heading"),
                                          ({"hs": 2.0, "tp": 8.0, "heading": -90.0}, "heading"),
                                          ({"hs": 2.0, "tp": 8.0, "gamma": 0.5}, "gamma")])
def test_bad_sea_state_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} must"):
        co.SeaState(**kwargs)


def test_a_heading_outside_0_360_is_refused_not_wrapped():
    from colloc.seakeeping.motion import MotionRAO

    assert co.SeaState(2.0, 8.0, heading=360.0).heading == 0.0  # the same direction as 0
    rao = MotionRAO.supply_vessel()
    assert np.array_equal(rao([0.5, 0.8], 360.0), rao([0.5, 0.8], 0.0))
    with pytest.raises(co.OptionsError, match="heading must be within 0-360 degrees.*got 400"):
        rao([0.5], 400.0)


@pytest.mark.parametrize("args, name", [(["--hs", "0", "--tp", "8"], "hs"), (["--hs", "2", "--tp", "-3"], "tp"),
                                        (["--hs", "2", "--tp", "8", "--heading", "nan"], "heading"),
                                        (["--hs", "2", "--tp", "8", "--heading", "400"], "heading must be within 0-360 degrees.*got 400")])
def test_cli_ship_motion(tmp_path, args, name):
    out = tmp_path / "deck.csv"
    bad = subprocess.run([sys.executable, "-m", "colloc.cli", "ship-motion", *args, "--out", str(out)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and re.search(name, bad.stderr)
    assert "Traceback" not in bad.stderr and not out.exists()


def test_cli_ship_motion_writes_the_contract_columns(tmp_path):
    out = tmp_path / "deck.csv"
    ok = subprocess.run([sys.executable, "-m", "colloc.cli", "ship-motion", "--hs", "2.5", "--tp", "8",
                         "--heading", "150", "--point=-20,4,2", "--duration", "5", "--seed", "4", "--out",
                         str(out)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    trial = co.read_ship_motion(out, derivatives="none")
    motion = co.ship_motion(co.SeaState(2.5, 8.0, 3.3, 150.0), point=(-20, 4, 2), seed=4)
    assert np.allclose(np.column_stack([trial[c] for c in COLUMNS]), motion(trial.time), rtol=1e-8, atol=1e-12)


# ---------------------------------------------------------------- measured ship-motion files

def _sines(t):
    """Angles (rad) with their exact rates and accelerations, and accelerations (m/s²)."""
    w = np.array([0.6, 0.9, 1.3])
    amp = np.array([[0.05, 0.02, 0.01], [0.02, 0.01, 0.005], [0.01, 0.01, 0.004]])
    arg = t[:, None] * w
    ang = np.sin(arg) @ amp.T
    rate = (np.cos(arg) * w) @ amp.T
    acc = -(np.sin(arg) * w**2) @ amp.T
    lin = np.column_stack([0.3 * np.cos(0.7 * t), 0.2 * np.sin(0.8 * t), 0.5 * np.cos(0.9 * t)])
    return ang, rate, acc, lin


def test_reader_converts_units_and_maps_columns(tmp_path):
    t = np.arange(0, 20, 0.01)
    ang, rate, acc, lin = _sines(t)
    path = tmp_path / "mru.tsv"
    header = ["Time[s]", "Roll[deg]", "Pitch[deg]", "Yaw[deg]", "RollRate[deg/s]", "PitchRate[deg/s]",
              "YawRate[deg/s]", "RollAcc[deg/s^2]", "PitchAcc[deg/s^2]", "YawAcc[deg/s^2]", "AccX[g]",
              "AccY[g]", "AccZ[m/s^2]"]
    data = np.column_stack([t, np.degrees(ang), np.degrees(rate), np.degrees(acc), lin[:, :2] / 9.80665,
                            lin[:, 2]])
    np.savetxt(path, data, delimiter="\t", header="\t".join(header), comments="")
    names = ["Roll", "Pitch", "Yaw", "RollRate", "PitchRate", "YawRate", "RollAcc", "PitchAcc", "YawAcc",
             "AccX", "AccY", "AccZ"]
    trial = co.read_ship_motion(path, columns=dict(zip(COLUMNS, names)))
    assert tuple(trial.signals) == COLUMNS
    expect = np.column_stack([ang, rate, acc, lin])
    assert np.allclose(np.column_stack([trial[c] for c in COLUMNS]), expect, rtol=1e-9, atol=1e-12)


def test_reader_differentiates_angles_only_by_smoothing_spline(tmp_path):
    t = np.arange(0, 30, 0.01)
    ang, rate, acc, lin = _sines(t)
    path = tmp_path / "angles.csv"
    header = "time,ship_roll[deg],ship_pitch[deg],ship_yaw[deg],ship_acc_x,ship_acc_y,ship_acc_z"
    np.savetxt(path, np.column_stack([t, np.degrees(ang), lin]), delimiter=",", header=header, comments="",
               fmt="%.12g")
    clean = co.read_ship_motion(path)
    inner = slice(50, -50)
    for j, name in enumerate(("roll", "pitch", "yaw")):
        assert np.abs(clean[f"ship_{name}_rate"] - rate[:, j])[inner].max() < 1e-6
        assert np.abs(clean[f"ship_{name}_acc"] - acc[:, j])[inner].max() < 1e-4
    # noisy angles, σ = 0.01°: rates within a few % of their range, accelerations within 15 %
    rng = np.random.default_rng(0)
    sigma = np.radians(0.01)
    noisy = np.degrees(ang + sigma * rng.standard_normal(ang.shape))
    np.savetxt(path, np.column_stack([t, noisy, lin]), delimiter=",", header=header, comments="", fmt="%.12g")
    for given in (sigma, None):
        trial = co.read_ship_motion(path, sigma=given)
        for j, name in enumerate(("roll", "pitch", "yaw")):
            span = np.ptp(rate[:, j])
            assert np.sqrt(np.mean((trial[f"ship_{name}_rate"] - rate[:, j]) ** 2)) < 0.02 * span
            err = np.sqrt(np.mean((trial[f"ship_{name}_acc"] - acc[:, j])[inner] ** 2))
            assert err < 0.15 * np.ptp(acc[:, j])


@pytest.mark.parametrize("case, message", [("degrees", "degrees"), ("missing", "ship_acc_z"),
                                           ("none", "ship_roll_rate")])
def test_reader_refuses_bad_files(tmp_path, case, message):
    t = np.arange(0, 5, 0.01)
    ang, rate, acc, lin = _sines(t)
    names = ["time", "ship_roll", "ship_pitch", "ship_yaw", "ship_acc_x", "ship_acc_y", "ship_acc_z"]
    data = np.column_stack([t, ang * (180 / np.pi if case == "degrees" else 1.0), lin])
    if case == "missing":
        names, data = names[:-1], data[:, :-1]
    path = tmp_path / "bad.csv"
    np.savetxt(path, data, delimiter=",", header=",".join(names), comments="")
    with pytest.raises(co.DataError, match=message):
        co.read_ship_motion(path, derivatives="none" if case == "none" else "auto")
