"""Ship-deck motion from a sea state: JONSWAP waves through motion RAOs, exact derivatives.

A long-crested irregular sea of significant wave height ``Hs``, peak period ``Tp`` and peak
enhancement ``gamma`` (JONSWAP) meets the ship at a relative wave direction ``heading``.  Its
elevation at the RAO reference point is the random-phase sum ζ(t) = Σ_i A_i cos(ω_i t + ε_i)
with A_i = √(2 S(ω_i) Δω) (Fossen 2021, Handbook of Marine Craft Hydrodynamics and Motion
Control, 2nd ed., Eq. 10.83), and each rigid-body motion (first-order, linear seakeeping
theory) is η_k(t) = Σ_i |H_k(ω_i, β)| A_i cos(ω_i t + ∠H_k(ω_i, β) + ε_i) (ibid., Eq. 10.105),
H_k the complex motion RAO.  The six motions are sums of harmonics, so their rates and
accelerations are the exact term-by-term derivatives, and the deck point's acceleration is
differentiated exactly too (CasADi AD of its position through the rotation).

Frames.  The RAO tables (MSS, Fossen's Marine Systems Simulator) use x forward, y to
starboard, z down.  The output follows the colloc ship convention (docs/contracts.md §2
``ship-stance``): ship frame S with x to the bow, y to port, z up; so sway, heave, pitch and
yaw change sign.  The linear RAO angles are used as the Bryant angles roll φ, pitch θ, yaw ψ
of R_NS = Rx(φ)·Ry(θ)·Rz(ψ) (to first order every angle sequence agrees).  The RAO point's
translation (surge, sway, heave) is an inertial displacement along the ship's mean axes; a
deck point r (S components, relative to the RAO point) moves as p_N = ξ(t) + R_NS(t)·r, and
``ship_acc_x/y/z`` = R_NSᵀ·p̈_N (the kinematic acceleration, gravity excluded).

Wave direction (the MSS convention, checked on the data below): ``heading`` β is the
direction the waves travel relative to the bow, 0° following seas, 180° head seas, 90° beam
seas travelling towards starboard (from port), 270° travelling towards port.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..base.errors import OptionsError
from ..multibody.chain import bryant

__all__ = ["SHIP_COLUMNS", "MotionRAO", "SeaState", "ShipMotion", "jonswap", "ship_motion"]

#: The ship columns of docs/contracts.md §1–2 (``ship-stance``), in order.
SHIP_COLUMNS = ("ship_roll", "ship_pitch", "ship_yaw", "ship_roll_rate", "ship_pitch_rate",
                "ship_yaw_rate", "ship_roll_acc", "ship_pitch_acc", "ship_yaw_acc",
                "ship_acc_x", "ship_acc_y", "ship_acc_z")
#: The six rigid-body motions in RAO order.
DOFS = ("surge", "sway", "heave", "roll", "pitch", "yaw")
#: MSS axes (x fwd, y starboard, z down) → colloc ship frame (x bow, y port, z up).
_MSS_TO_S = np.array([1.0, -1.0, -1.0, 1.0, -1.0, -1.0])
_SUPPLY = Path(__file__).resolve().parent / "data" / "supply_motion_rao.csv"
#: Samples evaluated at once (the harmonics of a chunk take 6·chunk·n floats).
_CHUNK = 4096


def _real(value, name: str, *, low: float | None = None, high: float | None = None,
          low_open: bool = False) -> float:
    """``value`` as a finite float within the limits, else an OptionsError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise OptionsError(f"{name} must be a finite number, got {value!r}")
    value = float(value)
    if low is not None and (value <= low if low_open else value < low):
        raise OptionsError(f"{name} must be {'>' if low_open else '≥'} {low:g}, got {value:g}")
    if high is not None and value > high:
        raise OptionsError(f"{name} must be ≤ {high:g}, got {value:g}")
    return value


def _heading(value) -> float:
    """A wave direction in degrees within [0, 360] (360 is 0); anything else is refused, not
    wrapped, so that a mistyped 400 is not taken as 40."""
    value = _real(value, "heading")
    if not 0.0 <= value <= 360.0:
        raise OptionsError(f"heading must be within 0-360 degrees (0 following, 90 towards starboard, "
                           f"180 head seas), got {value:g}")
    return value % 360.0


def jonswap(omega: ArrayLike, hs: float, tp: float, gamma: float = 3.3) -> np.ndarray:
    """JONSWAP wave spectrum S(ω) in m²·s/rad, normalised so that 4·√m0 = ``hs``.

    The shape is DNV-RP-C205 (2010) §3.5.5: S(ω) ∝ ω⁻⁵ exp(−5/4 (ω/ω_p)⁻⁴) γ^r,
    r = exp(−(ω − ω_p)² / (2 σ² ω_p²)), σ = 0.07 for ω ≤ ω_p, 0.09 above, ω_p = 2π/T_p.
    The level is fixed by integrating the shape (0 < ω < 40 ω_p, 20 000 points), not by the
    approximation A_γ = 1 − 0.287 ln γ, so that the spectrum has m0 = Hs²/16 exactly.
    ``gamma`` 1 is the Pierson–Moskowitz spectrum; DNV gives 1 ≤ γ ≤ 7.
    """
    hs = _real(hs, "hs", low=0.0, low_open=True)
    tp = _real(tp, "tp", low=0.0, low_open=True)
    gamma = _real(gamma, "gamma", low=1.0, high=7.0)
    wp = 2.0 * math.pi / tp
    grid = np.linspace(wp / 100.0, 40.0 * wp, 20001)
    m0 = np.trapezoid(_jonswap_shape(grid, wp, gamma), grid)
    return (hs**2 / 16.0 / m0) * _jonswap_shape(np.asarray(omega, dtype=float), wp, gamma)


def _jonswap_shape(omega: np.ndarray, wp: float, gamma: float) -> np.ndarray:
    out = np.zeros_like(omega, dtype=float)
    w = omega[omega > 0]
    sigma = np.where(w <= wp, 0.07, 0.09)
    r = np.exp(-((w - wp) ** 2) / (2.0 * sigma**2 * wp**2))
    out[omega > 0] = w**-5.0 * np.exp(-1.25 * (w / wp) ** -4.0) * gamma**r
    return out


@dataclass(frozen=True)
class SeaState:
    """A long-crested sea: ``hs`` (m), ``tp`` (s), ``gamma`` (1–7) and the relative wave
    direction ``heading`` in degrees (0 following, 90 towards starboard, 180 head seas)."""

    hs: float
    tp: float
    gamma: float = 3.3
    heading: float = 180.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "hs", _real(self.hs, "hs", low=0.0, low_open=True))
        object.__setattr__(self, "tp", _real(self.tp, "tp", low=0.0, low_open=True))
        object.__setattr__(self, "gamma", _real(self.gamma, "gamma", low=1.0, high=7.0))
        object.__setattr__(self, "heading", _heading(self.heading))

    @property
    def peak_frequency(self) -> float:
        """ω_p = 2π/T_p (rad/s)."""
        return 2.0 * math.pi / self.tp

    def spectrum(self, omega: ArrayLike) -> np.ndarray:
        """S(ω), see :func:`jonswap`."""
        return jonswap(omega, self.hs, self.tp, self.gamma)


class MotionRAO:
    """Complex motion RAOs of a vessel at zero speed, H_k(ω, β), in MSS axes and units
    (translations m/m, rotations rad/m; x forward, y starboard, z down).

    Values between the tabulated frequencies and headings are linear interpolations of the
    real and imaginary parts (the MSS approach, which needs no phase unwrapping).  Above the
    highest tabulated frequency the ship is taken not to respond (H = 0); below the lowest,
    H keeps its value there (the long-wave limit).

    Phase units: radians.  ``motionRAO.phase`` in MSS files is ``angle(Re + i·Im)`` of the
    ShipX output, unwrapped and, for surge, heave, roll and yaw, shifted by π to MSS axes
    (MSS ``read_veres_TF.m``), hence values such as −48.7.  The supply vessel's table agrees
    with radians and not with degrees: at the longest wave (ω = 0.105 rad/s), taken modulo
    2π, heave is ±π at every heading (the file's 9.425 at 0° is 3π: in z-down axes the hull
    rises with the crest, amplitude 1.00 m/m); at 0° (following) surge and pitch are −π/2
    (10.997 = 3.5π) and at 180° (head seas) +π/2, the phase of a water particle's displacement
    and of the wave slope, with pitch
    amplitude 0.0011 rad/m = ω²/g; at 90° sway is −π/2 and roll +π/2 (the −48.7 in the
    file is −15.5π); and no step between neighbouring frequencies exceeds π (unwrapped
    radians), while whole-2π offsets appear between headings.  In degrees none of these
    limits would hold.
    """

    def __init__(self, omega: ArrayLike, headings_deg: ArrayLike, values: ArrayLike, name: str = "") -> None:
        omega = np.asarray(omega, dtype=float)
        headings = np.asarray(headings_deg, dtype=float)
        values = np.asarray(values, dtype=complex)
        if omega.ndim != 1 or headings.ndim != 1 or values.shape != (6, omega.size, headings.size):
            raise OptionsError(f"MotionRAO: values must have shape (6, {omega.size}, {headings.size}), "
                               f"got {values.shape}")
        if np.any(np.diff(omega) <= 0) or np.any(np.diff(headings) <= 0) or not np.all(np.isfinite(values)):
            raise OptionsError("MotionRAO: frequencies and headings must increase, values be finite")
        self.omega, self.headings, self.values, self.name = omega, headings, values, name

    @classmethod
    def from_mss(cls, path: str | os.PathLike[str], speed_index: int = 0) -> MotionRAO:
        """Read ``vessel.motionRAO`` of an MSS vessel file (``.mat``, ShipX/VERES format)."""
        from scipy.io import loadmat

        vessel = loadmat(path, squeeze_me=True, struct_as_record=False)["vessel"]
        rao = vessel.motionRAO
        values = np.array([rao.amp[k][:, :, speed_index] * np.exp(1j * rao.phase[k][:, :, speed_index])
                           for k in range(6)])
        return cls(rao.w, np.rad2deg(vessel.headings), values, name=str(Path(path).name))

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str]) -> MotionRAO:
        """Read the table written by :meth:`to_csv`: ``heading_deg, omega_rad_s`` and per
        motion ``<dof>_amp, <dof>_phase_rad`` (MSS axes and units)."""
        import pandas as pd

        frame = pd.read_csv(path, comment="#")
        headings = np.unique(frame["heading_deg"].to_numpy(float))
        omega = np.unique(frame["omega_rad_s"].to_numpy(float))
        frame = frame.sort_values(["heading_deg", "omega_rad_s"])
        if len(frame) != headings.size * omega.size:
            raise OptionsError(f"{path}: expected one row per heading and frequency "
                               f"({headings.size}×{omega.size}), got {len(frame)}")
        values = np.empty((6, omega.size, headings.size), dtype=complex)
        for k, dof in enumerate(DOFS):
            amp = frame[f"{dof}_amp"].to_numpy(float).reshape(headings.size, omega.size).T
            phase = frame[f"{dof}_phase_rad"].to_numpy(float).reshape(headings.size, omega.size).T
            values[k] = amp * np.exp(1j * phase)
        return cls(omega, headings, values, name=Path(path).name)

    def to_csv(self, path: str | os.PathLike[str], header: str = "") -> None:
        """Write the table (amplitude and phase in radians, wrapped to (−π, π])."""
        rows = []
        for j, heading in enumerate(self.headings):
            for i, w in enumerate(self.omega):
                h = self.values[:, i, j]
                rows.append([heading, w, *np.ravel(np.column_stack([np.abs(h), np.angle(h)]))])
        names = ["heading_deg", "omega_rad_s"] + [f"{d}_{q}" for d in DOFS for q in ("amp", "phase_rad")]
        text = "".join(f"# {line}\n" for line in header.splitlines())
        text += ",".join(names) + "\n"
        text += "".join(",".join(f"{v:.8g}" for v in row) + "\n" for row in rows)
        Path(path).write_text(text, encoding="utf-8")

    @classmethod
    def supply_vessel(cls) -> MotionRAO:
        """The MSS supply vessel (Lpp 82.8 m, B 19.2 m, T 6 m; ShipX/VERES strip theory) at zero
        speed, shipped with colloc (MIT licence, T. I. Fossen, see ``data/README.md`` here)."""
        return cls.from_csv(_SUPPLY)

    def __call__(self, omega: ArrayLike, heading_deg: float) -> np.ndarray:
        """H_k(ω, β) in MSS axes, shape (6, len(omega))."""
        omega = np.atleast_1d(np.asarray(omega, dtype=float))
        h = np.concatenate([self.headings, [self.headings[0] + 360.0]])
        beta = _heading(heading_deg)
        j = int(np.clip(np.searchsorted(h, beta, side="right") - 1, 0, h.size - 2))
        f = (beta - h[j]) / (h[j + 1] - h[j])
        table = np.concatenate([self.values, self.values[:, :, :1]], axis=2)
        column = (1.0 - f) * table[:, :, j] + f * table[:, :, j + 1]          # (6, freqs)
        w = np.clip(omega, self.omega[0], None)
        out = np.array([np.interp(w, self.omega, c.real) + 1j * np.interp(w, self.omega, c.imag)
                        for c in column])
        out[:, omega > self.omega[-1]] = 0.0
        return out


def _deck_acceleration_function() -> ca.Function:
    """(angles, rates, accs, ξ̈, r) → R_NSᵀ·(ξ̈ + d²(R_NS r)/dt²), exact by AD."""
    a, ad, add = ca.SX.sym("a", 3), ca.SX.sym("ad", 3), ca.SX.sym("add", 3)
    xidd, r = ca.SX.sym("xidd", 3), ca.SX.sym("r", 3)
    R = bryant(a)
    J = ca.jacobian(R @ r, a)
    point = J @ add + ca.jacobian(J @ ad, a) @ ad
    return ca.Function("deck_acc", [a, ad, add, xidd, r], [R.T @ (xidd + point)])


class ShipMotion:
    """Deck motion of one realisation of a sea state (see :func:`ship_motion`).

    Attributes
    ----------
    omega, amplitude, phase : arrays (n,)
        The wave harmonics: frequency (rad/s), elevation amplitude A_i (m), random phase ε_i.
    response : array (6, n) complex
        H_k(ω_i, β) in the ship frame S (surge, sway, heave in m/m; roll, pitch, yaw in rad/m).
    point : array (3,)
        The deck point (m, S components, from the RAO reference point).
    """

    def __init__(self, sea: SeaState, omega: NDArray[np.float64], amplitude: NDArray[np.float64],
                 phase: NDArray[np.float64], response: NDArray[np.complex128], point: ArrayLike) -> None:
        self.sea, self.omega, self.amplitude, self.phase = sea, omega, amplitude, phase
        self.response, self.point = response, np.asarray(point, dtype=float)
        self._gain = np.abs(response) * amplitude                     # (6, n)
        self._lag = np.angle(response) + phase
        self._acc = _deck_acceleration_function()

    def wave_elevation(self, t: ArrayLike) -> np.ndarray:
        """ζ(t) at the RAO reference point (m)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return np.concatenate([np.cos(t[a:a + _CHUNK, None] * self.omega + self.phase) @ self.amplitude
                               for a in range(0, t.size, _CHUNK)]) if t.size else np.zeros(0)

    def motions(self, t: ArrayLike, derivative: int = 0) -> np.ndarray:
        """The six motions (surge, sway, heave m; roll, pitch, yaw rad; ship frame S) or their
        ``derivative``-th exact time derivative (0–2), shape (len(t), 6)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        gain = self._gain * self.omega**derivative
        waves: list[Callable[[np.ndarray], np.ndarray]] = [np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x)]
        wave = waves[derivative]
        out = np.empty((t.size, 6))
        for a in range(0, t.size, _CHUNK):                               # bounded memory
            arg = t[a:a + _CHUNK, None] * self.omega + self._lag[:, None, :]   # (6, time, n)
            out[a:a + _CHUNK] = np.einsum("ktn,kn->tk", wave(arg), gain)
        return out

    def __call__(self, t: ArrayLike) -> np.ndarray:
        """The 12 :data:`SHIP_COLUMNS` at times ``t``, shape (len(t), 12)."""
        x = [self.motions(t, d) for d in range(3)]
        if not x[0].shape[0]:
            return np.zeros((0, len(SHIP_COLUMNS)))
        acc = self._acc.map(x[0].shape[0])(x[0][:, 3:].T, x[1][:, 3:].T, x[2][:, 3:].T, x[2][:, :3].T,
                                          np.tile(self.point[:, None], (1, x[0].shape[0])))
        return np.hstack([x[0][:, 3:], x[1][:, 3:], x[2][:, 3:], np.asarray(acc).T])

    def columns(self, t: ArrayLike) -> dict[str, np.ndarray]:
        """``{column: values}`` for the 12 :data:`SHIP_COLUMNS` (rad, rad/s, rad/s², m/s²)."""
        values = self(t)
        return {c: values[:, i] for i, c in enumerate(SHIP_COLUMNS)}

    def symbolic(self, t: ca.SX | ca.MX) -> list:
        """The 12 columns as CasADi expressions of the time symbol ``t`` (for ``Model`` use)."""
        out: list[list] = [[], [], []]
        for k in range(6):
            arg = t * ca.DM(self.omega) + ca.DM(self._lag[k])
            g = self._gain[k]
            out[0].append(ca.dot(ca.DM(g), ca.cos(arg)))
            out[1].append(-ca.dot(ca.DM(g * self.omega), ca.sin(arg)))
            out[2].append(-ca.dot(ca.DM(g * self.omega**2), ca.cos(arg)))
        rot = [ca.vertcat(*d[3:]) for d in out]
        acc = self._acc(rot[0], rot[1], rot[2], ca.vertcat(*out[2][:3]), ca.DM(self.point))
        return out[0][3:] + out[1][3:] + out[2][3:] + [acc[0], acc[1], acc[2]]


def ship_motion(sea: SeaState, *, rao: MotionRAO | None = None, point: Sequence[float] = (0.0, 0.0, 0.0),
                seed: int = 0, harmonics: int = 200, band: tuple[float, float] = (0.5, 5.0)) -> ShipMotion:
    """One seeded realisation of the deck motion in a sea state.

    Parameters
    ----------
    sea : SeaState
        ``SeaState(hs, tp, gamma, heading)``.
    rao : MotionRAO, optional
        The vessel's motion RAOs; default :meth:`MotionRAO.supply_vessel`.
    point : 3 floats
        The deck point where the person stands (m; ship frame S: x to the bow, y to port,
        z up; from the RAO reference point, the vessel's CG for the MSS tables).
    seed : int
        Seed of the random phases and frequencies (``numpy.random.default_rng(seed)``).
    harmonics : int
        Number of wave components n (≥ 10).
    band : (low, high)
        Frequency band in multiples of the peak frequency; it holds all but ~0.3 % of the
        JONSWAP variance at the default.

    The band is cut into n equal bins of width Δω; each harmonic sits at a random frequency
    in its bin (so the record does not repeat after 2π/Δω) with amplitude √(2 S(ω_i) Δω)
    and a uniform random phase.
    """
    if not isinstance(sea, SeaState):
        raise OptionsError(f"sea must be a SeaState(hs, tp, gamma, heading), got {sea!r}")
    rao = MotionRAO.supply_vessel() if rao is None else rao
    if isinstance(harmonics, bool) or not isinstance(harmonics, numbers.Integral) or harmonics < 10:
        raise OptionsError(f"harmonics must be an int ≥ 10, got {harmonics!r}")
    low = _real(band[0], "band[0]", low=0.0, low_open=True)
    high = _real(band[1], "band[1]", low=low, low_open=True)
    point = np.asarray(point, dtype=float)
    if point.shape != (3,) or not np.all(np.isfinite(point)):
        raise OptionsError(f"point must be three finite numbers (m), got {point.tolist()!r}")
    rng = np.random.default_rng(seed)
    edges = np.linspace(low, high, harmonics + 1) * sea.peak_frequency
    dw = edges[1] - edges[0]
    omega = edges[:-1] + dw * rng.uniform(0.0, 1.0, harmonics)
    phase = rng.uniform(0.0, 2.0 * math.pi, harmonics)
    amplitude = np.sqrt(2.0 * sea.spectrum(omega) * dw)
    response = _MSS_TO_S[:, None] * rao(omega, sea.heading)
    return ShipMotion(sea, omega, amplitude, phase, response, point)
