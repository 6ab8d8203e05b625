"""Franklin (2006) 18-DoF spine: the static optimisations of the activations, on the library.

The physics of the activation problems of :mod:`colloc_problems.spine.stability`, stated for
:class:`colloc.StaticOptimization`: the 18 equilibrium equations ``A_eq α = b_eq`` in the
lordotic posture, the generalized stiffness ``K(α)`` at zero delay and the metabolic power
(thesis eq. 3.C.i.2 / Ch. 4 eq. 17).  The library solves them (IPOPT, exact derivatives).

Stability at zero delay
-----------------------
At the equilibrium the zero-delay linearization is the mechanical system
``M ẍ + D ẋ + K x = 0`` with ``K(α) = −∂(Q − h)/∂q`` and ``D(α) = −∂(Q − h)/∂q̇`` (reflex
included with ``x(t − τ) = x(t)``).  In this model ``K`` is symmetric (gravity, a dead load
and the muscle terms ``f H_L + (q + G_p) f/L_o ∇L ∇Lᵀ`` are Hessians/rank-one forms, the disc
term is ``K_disc J_relᵀ J_rel`` at the neutral posture; :class:`colloc.StiffnessConstraint`
checks it) and ``D`` is positive definite (disc damping on the six relative rotations, plus
the positive semi-definite muscle damping ``(b + G_d) f/L_o ∇L ∇Lᵀ``).  By the
Kelvin–Tait–Chetaev theorem such a system is asymptotically stable **iff** ``K`` is positive
definite — which also explains the thesis' observation that neither ``b`` nor ``G_d``
changes the optimized activations (Ch. 4 C).  ``K(α)`` is affine in ``α``, so the constraint
is the linear matrix inequality ``K(α) ⪰ σ I`` (``σ`` = ``stiffness_margin``, default
0.1 N·m/rad = 0.2 % of one disc's stiffness; rows scaled by ``k_ref`` = 50 N·m/rad, the disc
stiffness).  The eigenvalues of ``J_i + J_d`` are checked afterwards (the lumbar bodies make
``J`` stiff, ``‖J‖ ~ 5·10⁴``).

Existence: before minimizing power the largest achievable stiffness reserve
``t* = max_α λ_min(K(α))`` subject to equilibrium and ``0 ≤ α ≤ 1`` is computed
(:meth:`colloc.StaticOptimization.stiffness_reserve`; the maximum is global).  ``t* < σ``
means that no stable equilibrium exists for these values: the result then has
``stable = False``.  An equilibrium that is impossible with ``0 ≤ α ≤ 1`` (infeasible linear
program) is reported the same way.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache, partial

import numpy as np

from colloc import OptionsError, StaticOptimization, StiffnessConstraint
from colloc_problems.spine.model import AffineJacobians, SpineModel, affine_jacobians, metabolic_power_expr

__all__ = ["DEFAULT_STIFFNESS_MARGIN", "StabilityProblem"]

#: Default stiffness margin σ (N·m/rad) of ``K(α) ⪰ σ I``.
DEFAULT_STIFFNESS_MARGIN = 0.1
_K_REF = 50.0  # N·m/rad (one disc's stiffness), row scale of the stiffness constraint


class StabilityProblem:
    """The static optimisations of one parameter set (built once, solved from several starts).

    Parameters
    ----------
    model : SpineModel
        From :func:`colloc_problems.spine.model.build_model`.
    affine : AffineJacobians
        From :func:`colloc_problems.spine.model.affine_jacobians` for the parameter set.
    stiffness_margin : float
        ``σ`` of ``K(α) ⪰ σ I`` (N·m/rad, > 0).
    max_iter : int
        IPOPT iteration limit.
    tol : float
        IPOPT tolerance.
    """

    def __init__(self, model: SpineModel, affine: AffineJacobians, stiffness_margin: float = DEFAULT_STIFFNESS_MARGIN,
                 max_iter: int = 3000, tol: float = 1e-10) -> None:
        if not stiffness_margin > 0:
            raise OptionsError(f"stiffness_margin must be > 0, got {stiffness_margin}")
        self.model, self.affine = model, affine
        self.sigma = float(stiffness_margin)
        self.nm = model.n_muscles
        ipopt = replace(StaticOptimization.DEFAULT_IPOPT, max_iter=max_iter, tol=tol)
        power = partial(metabolic_power_expr, model)
        stiffness = StiffnessConstraint(affine.K0, affine.K_alpha, self.sigma, scale=_K_REF)
        self.stable = StaticOptimization(affine.A_eq, affine.b_eq, power, stiffness=stiffness, ipopt=ipopt)
        self.equilibrium = StaticOptimization(affine.A_eq, affine.b_eq, power, ipopt=ipopt)

    def stiffness(self, alpha) -> np.ndarray:
        """``K(α)`` (N·m/rad).

        Parameters
        ----------
        alpha : array_like, shape (M,)
        """
        return self.affine.K(alpha)

    def stiffness_reserve(self, alpha0=None) -> dict:
        """Largest ``λ_min(K(α))`` over equilibrium activations ``0 ≤ α ≤ 1`` (N·m/rad).

        Parameters
        ----------
        alpha0 : array_like, optional
            Initial activations (default 0.1 for every muscle).

        Returns
        -------
        dict
            ``reserve`` (N·m/rad), ``alpha``, ``success``, ``status``, ``iterations``.
        """
        sol = self.stable.stiffness_reserve(np.full(self.nm, 0.1) if alpha0 is None else alpha0)
        return {"reserve": sol.objective, "alpha": sol.activations, "success": sol.success, "status": sol.status,
                "iterations": sol.iterations}

    def minimum_power(self, alpha0) -> dict:
        """Minimize metabolic power subject to equilibrium and ``K(α) ⪰ σ I`` from ``alpha0``.

        Parameters
        ----------
        alpha0 : array_like, shape (M,)
            Initial activations.

        Returns
        -------
        dict
            ``alpha``, ``power``, ``success``, ``status``, ``iterations``, ``time_s``.
        """
        sol = self.stable.minimize(alpha0)
        return {"alpha": sol.activations, "power": self.model.metabolic_power(sol.activations), "success": sol.success,
                "status": sol.status, "iterations": sol.iterations, "time_s": sol.time_s}

    def equilibrium_power(self, alpha0=None) -> dict:
        """Minimum metabolic power for equilibrium alone (no stability constraint).

        Parameters
        ----------
        alpha0 : array_like, optional
            Initial activations (default 0.05).

        Returns
        -------
        dict
            ``alpha``, ``power``, ``success``, ``status``.
        """
        sol = self.equilibrium.minimize(np.full(self.nm, 0.05) if alpha0 is None else alpha0)
        return {"alpha": sol.activations, "power": self.model.metabolic_power(sol.activations), "success": sol.success,
                "status": sol.status}

    def minimum_force(self) -> dict:
        """Minimum total muscle force ``Σ f_o α`` for equilibrium alone (a linear program).

        Parameters
        ----------
        None

        Returns
        -------
        dict
            ``alpha``, ``force`` (N), ``success``, ``status`` (``alpha`` and ``force`` None when
            no activation holds the equilibrium).
        """
        sol = self.equilibrium.minimize_linear(self.model.max_force)
        ok = sol.success
        return {"alpha": sol.activations if ok else None, "force": sol.objective if ok else None, "success": ok,
                "status": sol.status}


@lru_cache(maxsize=16)
def _affine_cached(model: SpineModel, p: tuple, jacobians: bool = True) -> AffineJacobians:
    return affine_jacobians(model, np.array(p), jacobians=jacobians)
