"""Multi-phase collocation of hybrid trajectories: one phase per mode interval.

A record of a hybrid model (:mod:`colloc.definition.hybrid`) is a sequence of phases, each
integrating one mode between two boundaries.  Boundaries are CasADi expressions of the
unknown parameters — known times (pulses) or parameter-dependent ones (a clock's τ, τ1, τ2,
Wieber & Billet 2006 §4.1) — so the phase durations, and hence the collocation mesh, move with
the parameters.  Each phase is cut into ``intervals`` equal intervals of Radau collocation;
phases are joined by continuity (or a reset map); a sample is read in the phase that holds it
by the phase's collocation polynomial at its time, which is differentiable in the boundaries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import casadi as ca
import numpy as np

__all__ = ["Phase", "PhaseTranscription", "transcribe_phases"]


@dataclass
class Phase:
    """A phase: ``mode`` (a name passed to the dynamics), boundaries ``start``/``end``
    (CasADi expressions or numbers), number of collocation ``intervals``, and an optional
    ``reset(x) → x`` applied to the state entering it."""

    mode: str
    start: object
    end: object
    intervals: int = 1
    reset: Callable | None = None


@dataclass
class PhaseTranscription:
    """The collocation of one record: decision variables ``w`` (with ``w_guess``), equality
    constraints ``g`` (= 0) and :meth:`state_at` for the samples."""

    w: ca.SX
    g: ca.SX
    w_guess: np.ndarray
    phases: list
    blocks: list  # per phase: list of (h, [X_0 .. X_d]) per interval
    tau: np.ndarray
    #: numerical phase starts and interval lengths at the guess (pick a sample's interval)
    num_start: list = field(default_factory=list)
    num_h: list = field(default_factory=list)

    def state_at(self, phase: int, times: np.ndarray) -> list:
        """The state (one CasADi column per time) at ``times`` in phase ``phase``, by the
        collocation polynomial of the interval holding each time (extrapolated at the ends)."""
        ph = self.phases[phase]
        h, nodes = self.blocks[phase]
        n = len(nodes)
        out = []
        for t in times:
            # the interval holding the sample is chosen at the guess and fixed for the solve;
            # its position in it is a CasADi expression of the boundaries
            s = (t - ph.start) / h
            k = int(np.clip(np.floor((t - self.num_start[phase]) / self.num_h[phase]), 0, n - 1))
            r = s - k
            X = nodes[k]
            out.append(sum(X[j] * self._lagrange(j, r) for j in range(len(X))))
        return out

    def _lagrange(self, j: int, r):
        pts = np.concatenate([[0.0], self.tau])
        v = 1.0
        for m, pm in enumerate(pts):
            if m != j:
                v = v * (r - pm) / (pts[j] - pm)
        return v


def transcribe_phases(phases: Sequence[Phase], dynamics: Callable, x0, params: ca.SX, p_guess: np.ndarray,
                      x_guess: Callable, degree: int = 3) -> PhaseTranscription:
    """Collocate ``dynamics(mode, t, x, t0) → ẋ`` (CasADi, in the symbols ``params``) over the
    phases, from the known initial state ``x0``.  ``x_guess(t)`` gives the initial values of
    the state variables; ``p_guess`` evaluates the boundaries for the guess."""
    tau = np.array(ca.collocation_points(degree, "radau"))
    pts = np.concatenate([[0.0], tau])
    C = np.zeros((degree + 1, degree + 1))  # C[j, k]: derivative of basis j at point k
    for j in range(degree + 1):
        coeffs = np.poly1d([1.0])
        for m in range(degree + 1):
            if m != j:
                coeffs *= np.poly1d([1.0, -pts[m]]) / (pts[j] - pts[m])
        d = np.polyder(coeffs)
        C[j] = [d(pk) for pk in pts]
    nx = len(x0)
    bound_f = ca.Function("b", [params], [ca.vertcat(*[ca.vertcat(ph.start, ph.end) for ph in phases])])
    bvals = np.array(bound_f(p_guess)).ravel().reshape(-1, 2)
    w, w0, g, blocks = [], [], [], []
    num_start, num_h = [], []
    x_prev = ca.DM(x0)
    for ip, ph in enumerate(phases):
        a, b = ph.start, ph.end
        n = ph.intervals
        h = (b - a) / n
        a_num, b_num = bvals[ip]
        num_start.append(a_num)
        num_h.append((b_num - a_num) / n)
        x_start = ph.reset(x_prev) if ph.reset is not None else x_prev
        nodes = []
        for k in range(n):
            t_k = a + k * h
            X = [x_start] if k == 0 else [nodes[-1][-1]]
            for j in range(degree):
                v = ca.SX.sym(f"x{ip}_{k}_{j}", nx)
                w.append(v)
                w0.append(x_guess(a_num + (k + tau[j]) * (b_num - a_num) / n))
                X.append(v)
            for j in range(1, degree + 1):
                xp = sum(C[m, j] * X[m] for m in range(degree + 1))
                g.append(xp - h * dynamics(ph.mode, t_k + tau[j - 1] * h, X[j], a))
            nodes.append(X)
        blocks.append((h, nodes))
        x_prev = nodes[-1][-1]
    return PhaseTranscription(ca.vertcat(*w), ca.vertcat(*g), np.concatenate(w0), list(phases), blocks, tau,
                              num_start, num_h)
