"""Values between the nodes or samples: the cubic-convolution kernel that reads delayed states
at any time from the node values, and the spline, line or zero-order hold that reads measured
inputs between samples."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import casadi as ca
import numpy as np

from ..base.errors import ProblemError
from ..signals.splines import interpolating_spline

__all__ = ["InputReader", "held_inputs", "input_kinds", "keys_kernel", "keys_weights", "known_inputs"]

#: A trial's declared interpolation (``Trial(..., interpolation=)``) -> the reader's kind.
_KINDS = {"smooth": "cubic", "linear": "linear", "hold": "hold"}


def input_kinds(trial, names: list[str], default: str) -> list[str]:
    """How each known input of ``names`` is read in ``trial``: ``"cubic"``, ``"linear"`` or
    ``"hold"``; its declared interpolation (:attr:`Trial.interpolation`) or ``default``."""
    declared = getattr(trial, "interpolation", {})
    return [_KINDS[declared[u]] if u in declared else default for u in names]


def held_inputs(trial, names: list[str]) -> np.ndarray:
    """Boolean mask over ``names``: the inputs ``trial`` declares held (zero-order hold)."""
    return np.array([k == "hold" for k in input_kinds(trial, names, "cubic")], dtype=bool)


def keys_kernel(s):
    """Cubic-convolution interpolation kernel (Keys 1981, a = −½): C¹, interpolating,
    exact for quadratics, support |s| < 2; works on numbers and CasADi expressions."""
    a = ca.fabs(s)
    inner = 1.5 * a**3 - 2.5 * a**2 + 1
    outer = -0.5 * a**3 + 2.5 * a**2 - 4 * a + 2
    return ca.if_else(a <= 1, inner, ca.if_else(a < 2, outer, 0))


def keys_weights(s, offsets) -> ca.SX | ca.DM:
    """``[K(o + s) for o in offsets]`` (the kernel is even) for an expression ``s``, with
    the four non-zero weights computed once as cubics in the fractional part of ``s`` and
    placed by comparing integers: the same values and derivatives as evaluating
    :func:`keys_kernel` per offset, at a fraction of the operations."""
    n = ca.floor(s)
    f = s - n
    inner = lambda a: 1.5 * a**3 - 2.5 * a**2 + 1
    outer = lambda a: -0.5 * a**3 + 2.5 * a**2 - 4 * a + 2
    weight = {-2: outer(2 - f), -1: inner(1 - f), 0: inner(f), 1: outer(1 + f)}  # by o + n
    out = []
    for o in offsets:
        w = 0
        for m, c in weight.items():
            w = w + ca.if_else(n == m - float(o), c, 0)
        out.append(w)
    return ca.vertcat(*out)


class InputReader:
    """The measured inputs ``names`` of one trial, readable at any time within the record.

    Each input is interpolated through its *measured* samples only (NaN marks a sample not
    measured), exact at them, and between them by the not-a-knot cubic spline
    (``"cubic"``), linearly (``"linear"``) or held (``"hold"``: the value of sample k on
    ``[t_k, t_{k+1})``, right-continuous).  ``interpolation`` is the kind of every input the
    trial does not declare (:attr:`Trial.interpolation`, :func:`input_kinds`).  Where an input
    may jump (``jumps``: name -> times) it is interpolated separately on each piece between
    jumps, the spline of each side ending at the jump: the value on a side is the sample at the
    jump on that side (the row before or after the repeated time, :attr:`Trial.jumps`), or else
    the piece's spline extended to it.  A piece with fewer than four samples is linear, one with a
    single sample constant.  Before the first and after the last measured sample of the
    record an input is held constant.

    Raises
    ------
    ProblemError
        If a piece between two jumps holds no measured sample of the input.
    """

    def __init__(self, trial, names: list[str], interpolation: str,
                 jumps: Mapping[str, np.ndarray] | None = None) -> None:
        self.names = list(names)
        self.interpolation = interpolation
        self.kinds = input_kinds(trial, self.names, interpolation)
        jumps = dict(jumps or {})
        self._pieces: list[tuple[np.ndarray, list]] = []
        for u, kind in zip(self.names, self.kinds):
            J = np.sort(np.asarray(jumps.get(u, ()), dtype=float))
            data_jumps = trial.jumps.get(u, (np.zeros(0), np.zeros(0)))
            values = np.asarray(trial[u], dtype=float)
            present = ~np.isnan(values)
            t_all, v_all = trial.time[present], values[present]
            pieces = []
            for p in range(J.size + 1):
                lo = J[p - 1] if p > 0 else -np.inf
                hi = J[p] if p < J.size else np.inf
                keep = (t_all >= lo) & (t_all <= hi)
                ts, vs = t_all[keep].copy(), v_all[keep].copy()
                if p < J.size and ts.size and ts[-1] == hi:  # the row before the step, if written
                    k = np.flatnonzero(data_jumps[0] == hi)
                    if k.size:
                        vs[-1] = data_jumps[1][k[0]]
                if ts.size == 0:
                    raise ProblemError(
                        f"trial '{trial.name}': known input '{u}' has no measured value between "
                        f"{'the start' if p == 0 else f'its jump at {lo:g} s'} and "
                        f"{'the end' if p == J.size else f'its jump at {hi:g} s'}; it cannot be read there"
                    )
                a = lo if p > 0 else ts[0]
                b = hi if p < J.size else ts[-1]
                pieces.append((ts, vs, a, b, self._interpolant(ts, vs, kind)))
            self._pieces.append((J, pieces))

    @staticmethod
    def _interpolant(ts: np.ndarray, vs: np.ndarray, kind: str):
        if kind == "hold":
            return "hold"
        if kind == "linear" or ts.size < 4:
            return None
        return interpolating_spline(ts, vs, 3)  # the not-a-knot cubic (its knots: the inner samples)

    @staticmethod
    def _read(piece, t: np.ndarray) -> np.ndarray:
        ts, vs, a, b, spline = piece
        if ts.size == 1:
            return np.full(t.shape, vs[0])
        tc = np.clip(t, a, b)
        if isinstance(spline, str):  # zero-order hold: the last sample at or before t
            return vs[np.clip(np.searchsorted(ts, tc, side="right") - 1, 0, ts.size - 1)]
        if spline is None:  # linear; beyond the samples (only towards a jump) the end segment's line
            j = np.clip(np.searchsorted(ts, tc, side="right") - 1, 0, ts.size - 2)
            th = (tc - ts[j]) / (ts[j + 1] - ts[j])
            out = (1 - th) * vs[j] + th * vs[j + 1]
        else:
            out = np.asarray(spline(tc), dtype=float)
        k = np.clip(np.searchsorted(ts, tc), 0, ts.size - 1)
        at = ts[k] == tc  # the samples themselves, not their round-off image
        out[at] = vs[k[at]]
        return out

    def _piece_values(self, row: int, times: np.ndarray, piece_index: np.ndarray) -> np.ndarray:
        _, pieces = self._pieces[row]
        out = np.empty(times.shape)
        for p in np.unique(piece_index):
            sel = piece_index == p
            out[sel] = self._read(pieces[p], times[sel])
        return out

    def __call__(self, times: np.ndarray, side: Literal["left", "right"] = "right") -> np.ndarray:
        """Values at ``times``, shape ``(len(names), len(times))``; at a jump time the value
        after the jump (``side="right"``) or before it (``"left"``)."""
        times = np.asarray(times, dtype=float)
        rows = []
        for r, (J, _) in enumerate(self._pieces):
            rows.append(self._piece_values(r, times, np.searchsorted(J, times, side=side)))
        return np.stack(rows) if rows else np.zeros((0, times.size))

    def on_intervals(self, mesh: np.ndarray, fraction: float) -> np.ndarray:
        """Values at ``mesh[:-1] + fraction·diff(mesh)``, each read with the piece its mesh
        interval lies on (the mesh holds every jump), shape ``(len(names), len(mesh) − 1)``.

        A held input is read at the interval's centre whatever ``fraction``: its value is the
        constant of the sample interval that holds the mesh interval (the mesh has a point at
        each of its samples), the interval's end included."""
        mesh = np.asarray(mesh, dtype=float)
        times = mesh[:-1] + fraction * np.diff(mesh)
        centre = 0.5 * (mesh[:-1] + mesh[1:])
        rows = []
        for r, (J, _) in enumerate(self._pieces):
            at = centre if self.kinds[r] == "hold" else times
            rows.append(self._piece_values(r, at, np.searchsorted(J, centre, side="right")))
        return np.stack(rows) if rows else np.zeros((0, times.size))


def known_inputs(trial, names: list[str], times: np.ndarray, interpolation: str, *,
                 jumps: Mapping[str, np.ndarray] | None = None,
                 side: Literal["left", "right"] = "right") -> np.ndarray:
    """Measured inputs ``names`` of ``trial`` at ``times`` (within the record), shape
    ``(len(names), len(times))``: exact at the samples, between them by the not-a-knot
    cubic spline (``"cubic"``, needs four samples, else linear), linearly or held (an input
    the trial declares ``"hold"``), through the measured samples only and piecewise between
    ``jumps`` (see :class:`InputReader`)."""
    return InputReader(trial, names, interpolation, jumps)(np.asarray(times, dtype=float), side)
