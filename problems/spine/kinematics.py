"""Franklin (2006) 18-DoF spine: rotation matrices and the smooth disc angle (CasADi).

The thesis' elementary rotations ``R1, R2, R3`` and the body-to-inertial rotation of the 1-2-3
body-fixed Euler angles (Appendix A.i), and the planar disc angle over its sine, smooth at
zero (§3.A.ii).  Used by :mod:`colloc_problems.spine.equations`.
"""

from __future__ import annotations

import casadi as ca

__all__: list[str] = []


def _R1(t):
    c, s = ca.cos(t), ca.sin(t)
    return ca.blockcat([[1, 0, 0], [0, c, s], [0, -s, c]])


def _R2(t):
    c, s = ca.cos(t), ca.sin(t)
    return ca.blockcat([[c, 0, -s], [0, 1, 0], [s, 0, c]])


def _R3(t):
    c, s = ca.cos(t), ca.sin(t)
    return ca.blockcat([[c, s, 0], [-s, c, 0], [0, 0, 1]])


def _body_to_inertial(theta, beta, alpha):
    """``C`` with columns ``c_k = (R3 R2 R1)ᵀ n_k`` (Appendix A.i): ``p_N = C p_body``."""
    return (_R3(alpha) @ _R2(beta) @ _R1(theta)).T


def _skew(v):
    return ca.blockcat([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def _vee(W):
    return ca.vertcat(W[2, 1], W[0, 2], W[1, 0])


def _phi_over_sin(w, c):
    """``atan2(√w, c)/√w`` (planar angle over its sine), smooth at ``w = 0``."""
    small = w < 1e-4
    series = 1 + w / 6 + 3 * w**2 / 40 + 5 * w**3 / 112 + 35 * w**4 / 1152  # asin(s)/s, c > 0
    ws = ca.if_else(small, 1.0, w)
    exact = ca.atan2(ca.sqrt(ws), c) / ca.sqrt(ws)
    return ca.if_else(small, series, exact)
