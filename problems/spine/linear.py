"""Franklin (2006) 18-DoF spine: linearization at the equilibrium by CasADi AD.

``J_i = ∂F/∂x`` and ``J_d = ∂F/∂x_d`` of the right-hand side, and their coefficient tensors in
the activations (the thesis' 36 × 36 × M "partial Jacobians", §3.C.iii.a), with the
equilibrium equations, the generalized stiffness and damping at zero delay.  The functions
take a :class:`colloc_problems.spine.model.SpineModel`.

References
----------
T. C. Franklin (2006), *Linear system analyses of the role of reflex gain and delay in a
dynamic human spine model*, M.S. thesis, Virginia Tech (advisor K. P. Granata).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import casadi as ca
import numpy as np

from colloc_problems.spine.anatomy import N_DOF, N_STATES, PARAMETER_NAMES

__all__ = ["AffineJacobians", "affine_jacobians", "jacobian_functions", "linearization"]


@dataclass(frozen=True, eq=False)
class AffineJacobians:
    """``J_i(α) = J_i0 + Σ_k α_k J_ik``, ``J_d(α) = J_d0 + Σ_k α_k J_dk`` at the equilibrium.

    Also the equilibrium equations ``A_eq α = b_eq`` (18: generalized forces of gravity,
    load, discs and muscles at rest in the posture sum to zero) and the generalized stiffness
    ``K(α) = K0 + Σ α_k K_k = −∂(Q − h)/∂q`` with the reflex at zero delay
    (``x_d = x``), all from AD.

    Attributes
    ----------
    p : numpy.ndarray
        Parameter vector used.
    Ji0, Jd0 : numpy.ndarray, shape (36, 36)
    Ji_alpha, Jd_alpha : numpy.ndarray, shape (36, 36, M)
        ``∂J/∂α_k`` (constant).
    A_eq : numpy.ndarray, shape (18, M)
    b_eq : numpy.ndarray, shape (18,)
    K0 : numpy.ndarray, shape (18, 18)
    K_alpha : numpy.ndarray, shape (18, 18, M)
    D0 : numpy.ndarray, shape (18, 18)
    D_alpha : numpy.ndarray, shape (18, 18, M)
        Generalized damping ``−∂(Q − h)/∂q̇`` at zero delay.
    mass_matrix : numpy.ndarray, shape (18, 18)
    force_scale : numpy.ndarray, shape (18,)
        ``|gravity + load| + Σ_k |f_o,k ∂L_k/∂q|`` per row: scale of the relative
        equilibrium residual (with ``α = 1``; multiply muscle terms by α).
    muscle_moment : numpy.ndarray, shape (18, M)
        Generalized force per unit activation, ``−f_o,k ∂L_k/∂q``.
    passive_force : numpy.ndarray, shape (18,)
        Generalized force of gravity + load + discs at the posture.
    """

    p: np.ndarray
    Ji0: np.ndarray
    Jd0: np.ndarray
    Ji_alpha: np.ndarray
    Jd_alpha: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    K0: np.ndarray
    K_alpha: np.ndarray
    D0: np.ndarray
    D_alpha: np.ndarray
    mass_matrix: np.ndarray
    muscle_moment: np.ndarray
    passive_force: np.ndarray

    def Ji(self, alpha) -> np.ndarray:
        """``J_i(α)`` (36 × 36).

        Parameters
        ----------
        alpha : array_like, shape (M,)
        """
        return self.Ji0 + self.Ji_alpha @ np.asarray(alpha, dtype=float)

    def Jd(self, alpha) -> np.ndarray:
        """``J_d(α)`` (36 × 36).

        Parameters
        ----------
        alpha : array_like, shape (M,)
        """
        return self.Jd0 + self.Jd_alpha @ np.asarray(alpha, dtype=float)

    def K(self, alpha) -> np.ndarray:
        """Generalized stiffness at zero delay, ``K(α)`` (18 × 18, N·m/rad).

        Parameters
        ----------
        alpha : array_like, shape (M,)
        """
        return self.K0 + self.K_alpha @ np.asarray(alpha, dtype=float)

    def D(self, alpha) -> np.ndarray:
        """Generalized damping at zero delay, ``D(α)`` (18 × 18, N·m·s/rad).

        Parameters
        ----------
        alpha : array_like, shape (M,)
        """
        return self.D0 + self.D_alpha @ np.asarray(alpha, dtype=float)

    def equilibrium_residual(self, alpha) -> float:
        """Relative equilibrium residual ``‖Σ Q‖∞ / ‖Σ |Q_parts|‖∞`` at the posture.

        Parameters
        ----------
        alpha : array_like, shape (M,)
            The denominator adds, row by row, the magnitudes of the passive generalized force
            (gravity + load + discs) and of every muscle's ``α_k f_o,k ∂L_k/∂q``.
        """
        a = np.asarray(alpha, dtype=float)
        net = self.passive_force + self.muscle_moment @ a
        scale = np.abs(self.passive_force) + np.abs(self.muscle_moment) @ np.abs(a)
        return float(np.max(np.abs(net)) / max(np.max(scale), 1e-300))


@lru_cache(maxsize=4)
def _linearization_functions(model):
    f_rhs, f_Q = model.functions["rhs"], model.functions["generalized_force"]
    nm = model.n_muscles
    X = ca.MX.sym("x", N_STATES)
    XD = ca.MX.sym("x_d", N_STATES)
    A = ca.MX.sym("alpha", nm)
    P = ca.MX.sym("p", len(PARAMETER_NAMES))
    F = f_rhs(X, XD, A, P)
    jac = ca.Function("spine_jacobians", [X, XD, A, P], [ca.jacobian(F, X), ca.jacobian(F, XD)],
                      ["x", "x_d", "alpha", "p"], ["J_i", "J_d"])
    # generalized force at zero delay (x_d = x): equilibrium, stiffness and damping
    x = ca.SX.sym("x", N_STATES)
    a = ca.SX.sym("alpha", nm)
    p = ca.SX.sym("p", len(PARAMETER_NAMES))
    Q0 = f_Q(x, x, a, p)
    Kx = -ca.jacobian(Q0, x)
    static = ca.Function("spine_static", [x, a, p], [Q0, ca.jacobian(Q0, a), Kx[:, :N_DOF], Kx[:, N_DOF:]],
                         ["x", "alpha", "p"], ["Q", "dQ_dalpha", "K", "D"])
    return jac, static


def _affine_split(values: np.ndarray, nm: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns ``[F(0), F(e_1), …, F(e_M)]`` of an affine map → ``F(0)`` and ``∂F/∂α`` (n × n × M)."""
    n = values.shape[0]
    blocks = values.reshape(n, nm + 1, -1).transpose(0, 2, 1)  # (n, n, M + 1)
    return blocks[:, :, 0].copy(), blocks[:, :, 1:] - blocks[:, :, :1]


def linearization(model, alpha, p, x=None) -> tuple[np.ndarray, np.ndarray]:
    """``J_i = ∂F/∂x`` and ``J_d = ∂F/∂x_d`` of the nonlinear right-hand side, by CasADi AD.

    Parameters
    ----------
    model : SpineModel
    alpha : array_like, shape (90,)
        Steady activations.
    p : array_like, shape (5,)
        See :meth:`SpineModel.parameter_vector`.
    x : array_like, shape (36,), optional
        Linearization state (also used as the delayed state); default the equilibrium
        ``[q0, 0]``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``J_i`` and ``J_d`` (36 × 36).
    """
    jac, _ = _linearization_functions(model)
    x = model.x0 if x is None else np.asarray(x, dtype=float)
    Ji, Jd = jac(x, x, np.asarray(alpha, dtype=float), np.asarray(p, dtype=float))
    return np.asarray(Ji, dtype=float), np.asarray(Jd, dtype=float)


def affine_jacobians(model, p, *, jacobians: bool = True) -> AffineJacobians:
    """Constant coefficient tensors of ``J_i(α)``, ``J_d(α)``, ``K(α)``, ``D(α)`` and the equilibrium.

    The thesis' 36 × 36 × M "partial Jacobians" (§3.C.iii.a).  ``J_i``, ``J_d``, ``K``, ``D``
    and the equilibrium generalized force are CasADi AD derivatives of the nonlinear model;
    they are affine in ``α`` (the generalized force is linear in the activations), so
    evaluating them at ``α = 0`` and at the unit vectors ``α = e_k`` (one batched call of the
    AD Jacobian functions) gives the exact coefficients.  (A second AD pass, ``∂ vec J/∂α``
    through the MX linear solve, gives the same numbers but needs far more memory.)

    Parameters
    ----------
    model : SpineModel
    p : array_like, shape (5,)
        See :meth:`SpineModel.parameter_vector`.
    jacobians : bool
        False: skip ``J_i``/``J_d`` (their fields are then ``None``); the equilibrium,
        ``K`` and ``D`` are enough for the stability constraint.

    Returns
    -------
    AffineJacobians
    """
    jac, static = _linearization_functions(model)
    nm = model.n_muscles
    x0 = model.x0
    p = np.asarray(p, dtype=float)
    alphas = np.hstack([np.zeros((nm, 1)), np.eye(nm)])
    X = np.repeat(x0[:, None], nm + 1, axis=1)
    Pm = np.repeat(p[:, None], nm + 1, axis=1)
    Ji0 = dJi = Jd0 = dJd = None
    if jacobians:
        Ji, Jd = (np.asarray(v, dtype=float) for v in jac.map(nm + 1)(X, X, alphas, Pm))
        Ji0, dJi = _affine_split(Ji, nm)
        Jd0, dJd = _affine_split(Jd, nm)
    Q, dQ, K, D = (np.asarray(v, dtype=float) for v in static.map(nm + 1)(X, alphas, Pm))
    K0, dK = _affine_split(K, nm)
    D0, dD = _affine_split(D, nm)
    Q0 = Q[:, 0]
    dQ = dQ[:, :nm]  # constant
    return AffineJacobians(
        p=p, Ji0=Ji0, Jd0=Jd0, Ji_alpha=dJi, Jd_alpha=dJd, A_eq=dQ, b_eq=-Q0,
        K0=K0, K_alpha=dK, D0=D0, D_alpha=dD,
        mass_matrix=np.asarray(model.functions["mass_matrix"](model.q0), dtype=float),
        muscle_moment=dQ, passive_force=Q0,
    )


def jacobian_functions(model, p) -> tuple[ca.Function, ca.Function]:
    """``J_i(α)`` and ``J_d(α)`` at the equilibrium as CasADi functions of the activations.

    Parameters
    ----------
    model : SpineModel
    p : array_like, shape (5,)
        See :meth:`SpineModel.parameter_vector`.

    Returns
    -------
    (casadi.Function, casadi.Function)
        ``Ji(alpha) -> 36×36`` and ``Jd(alpha) -> 36×36`` (affine, from :func:`affine_jacobians`).
    """
    aj = affine_jacobians(model, p)
    a = ca.SX.sym("alpha", model.n_muscles)
    out = []
    for name, J0, dJ in (("J_i", aj.Ji0, aj.Ji_alpha), ("J_d", aj.Jd0, aj.Jd_alpha)):
        G = ca.DM(dJ.reshape(N_STATES * N_STATES, -1, order="F"))
        out.append(ca.Function(name, [a], [ca.DM(J0) + ca.reshape(G @ a, N_STATES, N_STATES)], ["alpha"], [name]))
    return out[0], out[1]
