"""Where one record's intervals lie on an :class:`~colloc.transcription.multiphase.IntervalChain`
at the current estimate: :class:`ChainLayout`, numbers only (the symbolic part is the chain's
mapped interval Functions, built once)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ChainLayout"]


@dataclass
class ChainLayout:
    """One record laid on a chain of collocation intervals: phases, their intervals, the
    interval times and the numbers each interval and sample needs, at one estimate of the
    unknowns that move the phase boundaries (switching times, clock times).  A hybrid fit
    re-lays its records when the estimate moves a sample into another interval, and solves
    again while the layout changes.

    Times are affine in the unknowns, as :meth:`IntervalChain.defects` takes them: a pair
    ``(a, b)`` with ``a`` (N) and ``b`` (N × K), the time ``a + b·s`` (``s`` the parameters or
    each interval's K time unknowns).

    Attributes
    ----------
    modes : sequence of str
        The mode of each phase.
    intervals : sequence of int
        Collocation intervals of each phase (N in all).
    t, h : tuple
        Interval starts on the record's clock and interval lengths (affine).
    data : ndarray, shape (k, N)
        Numbers per interval for the rates (mode flags, an input's spline piece, ...).
    interval : ndarray of int
        The interval that holds each sample.
    x_guess : ndarray, shape (nx, N·d)
        Initial values of the collocation states.
    t_rates : tuple, optional
        Interval starts on the clock the rates take, when it is not the record's (e.g. the time
        since the phase began); default ``t``.
    tindex : ndarray of int, shape (N, K), optional
        NLP indices of each interval's time unknowns (−1: a fixed time).
    entries : list of int
        Intervals that start from an entry state (a reset, or an unknown initial state).
    landings : list of tuple
        ``(mode, phase)`` of each phase that ends in a reset (impact) map.
    keep : tuple, optional
        Affine values ``c ≥ 0`` that keep the phase structure of the estimate (linear
        constraints on the unknowns).
    lb_path, ub_path : ndarray, optional
        Bounds of the chain's path rows (n_path × N·d).
    t_num, h_num : ndarray, optional
        Interval starts and lengths (s) at the estimate the layout was made at.
    time : ndarray, optional
        The record's sample times.
    delayed : tuple, optional
        ``(D, hist)`` of a chain with a delay: the interval of each collocation point's
        ``t − τ`` and whether it is before the record (N × d each).
    tau : float
        The delay those reads were placed at (s).
    """

    modes: tuple | list
    intervals: tuple | list
    t: tuple
    h: tuple
    data: np.ndarray
    interval: np.ndarray
    x_guess: np.ndarray
    t_rates: tuple | None = None
    tindex: np.ndarray | None = None
    entries: list | tuple = ()
    landings: list | tuple = ()
    keep: tuple | None = None
    lb_path: np.ndarray | None = None
    ub_path: np.ndarray | None = None
    t_num: np.ndarray | None = None
    h_num: np.ndarray | None = None
    time: np.ndarray | None = None
    delayed: tuple | None = None
    tau: float = 0.0

    def __post_init__(self) -> None:
        if len(self.modes) != len(self.intervals):
            raise ValueError(f"ChainLayout: {len(self.modes)} phase modes for {len(self.intervals)} interval counts")
        if self.t_rates is None:
            self.t_rates = self.t

    @property
    def size(self) -> int:
        """Number of intervals N."""
        return int(sum(self.intervals))

    @property
    def interval_modes(self) -> tuple:
        """The mode of each interval."""
        return tuple(m for m, n in zip(self.modes, self.intervals) for _ in range(int(n)))

    @property
    def phase_of_interval(self) -> np.ndarray:
        """The phase of each interval."""
        return np.repeat(np.arange(len(self.intervals)), np.asarray(self.intervals, dtype=int))
