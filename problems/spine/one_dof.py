"""Franklin (2006) §3.D: a 1-DoF inverted pendulum held by two reflexive muscles.

Geometry (thesis §3.D, Fig. 3.D.1; coordinates reconstructed from the unit force vectors of
eq. 3.D.ii.1): a uniform pendulum of length ``L`` and mass ``m`` pivots about the origin,
``θ`` from vertical, positive to the left; its tip is ``I_n(θ) = (−L sin θ, L cos θ)``.
Muscles M1 and M2 run from the tip to their origins ``Or₁ = (−L_m1 sin a₁, L − L_m1 cos a₁)``
and ``Or₂ = (L_m2 sin a₂, L − L_m2 cos a₂)`` where ``a₁ = 90°``, ``a₂ = 10°`` are the
angles between pendulum and muscle and ``L_m1 = 0.5``, ``L_m2 = 2`` the muscle lengths
at the upright equilibrium (also their rest lengths ``L_mo``).

Dynamics (eqs. 3.D.i.3–5, 3.D.iii.3)::

    θ̈ = 3/(m L²) · ( Σ_k f_k · {R × F̂_k}_3 + g m L/2 · sin θ ),   R = I_n(θ).

Muscle force (eqs. 3.A.iii.2–3 with the reflex of 3.B.iv.2).  With ``ε = (L_m − L_mo)/L_mo``,
``ε̇ = L_m'/L_mo`` and the delayed ``ε_d = ε(t − τ)``, ``ε̇_d = ε̇(t − τ)``:

* ``"separated"`` (default; eq. 3.B.iv.3, the form printed in §3.D.ii and used for the
  thesis' simulations): ``f = f₀α₀(1 + qε + bε̇) + f₀α₀(G_p ε_d + G_d ε̇_d)``;
* ``"product"`` (eq. 3.B.iv.2 before the higher-order terms are dropped):
  ``f = f₀α₀(1 + G_p ε_d + G_d ε̇_d)(1 + qε + bε̇)``.

Both have the same linearisation.  ``α₀,₂ = alpha2`` is given, and ``α₀,₁`` follows from
equilibrium at ``θ = 0`` (eq. 3.D.iii.1: ``α₁ = 0.1736 α₂``; here computed from the exact
geometry, ``α₁ = α₂ sin a₂ / sin a₁``).  Muscle-length rates are ``∂L_m/∂θ · θ'`` by
automatic differentiation.

Linearisation: ``J_i = ∂(θ', θ̈)/∂(θ, θ')`` and ``J_d = ∂(θ', θ̈)/∂(θ(t−τ), θ'(t−τ))`` at
the equilibrium, by CasADi AD (no finite differences).  The thesis moves the moment arms of
the delayed force to the delayed state before differentiating (eq. 3.D.iii.5); since the
delayed force vanishes at equilibrium, that choice does not change ``J_d`` here.  With the
printed parameters (g = 10, f₀ = 1, q = 20, b = 2, α₂ = 0.5, G_p = 15, G_d = 3) this gives
eq. 3.D.iv.2: ``J_i = [[0, 1], [4.88, −1.09]]``, ``J_d = [[0, 0], [−8.15, −1.63]]``.

Stability of the nonlinear DDE is judged as in §3.D.v: the normalised state-space distance
``D_ss`` (eq. 3.D.v.1) and the slope of its least-squares line (Table 3.D.1).
"""


from __future__ import annotations

from colloc_problems.spine.one_dof_data import DATA, default_parameters, example_data
from colloc_problems.spine.one_dof_dde import SlopeRow, simulate, slope_table, state_space_distance, state_space_slope
from colloc_problems.spine.one_dof_model import FORCE_MODELS, OneDof, dynamics, one_dof

__all__ = [
    "DATA",
    "FORCE_MODELS",
    "OneDof",
    "SlopeRow",
    "default_parameters",
    "dynamics",
    "example_data",
    "one_dof",
    "simulate",
    "slope_table",
    "state_space_distance",
    "state_space_slope",
]
