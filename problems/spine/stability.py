"""Franklin (2006) activation optimization of the 18-DoF spine: minimum metabolic power at a stable equilibrium.

Problem (thesis eq. 3.C.i.1; Ch. 4 B.iv; Ch. 5 B)::

    min_α  P(α) = Σ_i m_i (74/2 sin(πα_i/2) + 111/2 (1 − cos(πα_i/2)))      (eq. 3.C.i.2 / Ch. 4 eq. 17)
    s.t.   Σ Q(q̄, α) = 0                        (18 equilibrium equations in the lordotic posture)
           Re λ(J_i(α) + J_d(α)) < 0             (asymptotic stability at zero delay)
           0 ≤ α ≤ 1,

solved with IPOPT through CasADi (exact first and second derivatives).

Smooth stability constraint
---------------------------
At the equilibrium the zero-delay linearization is the mechanical system
``M ẍ + D ẋ + K x = 0`` with ``K(α) = −∂(Q − h)/∂q`` and ``D(α) = −∂(Q − h)/∂q̇`` (reflex
included with ``x(t − τ) = x(t)``), i.e. ``J_i + J_d = [[0, I], [−M⁻¹K, −M⁻¹D]]``.  In this
model ``K`` is symmetric (gravity, a dead load and the muscle terms
``f H_L + (q + G_p) f/L_o ∇L ∇Lᵀ`` are Hessians/rank-one forms, the disc term is
``K_disc J_relᵀ J_rel`` at the neutral posture; checked at run time) and ``D`` is positive
definite (disc damping on the six relative rotations, plus the positive semi-definite muscle
damping ``(b + G_d) f/L_o ∇L ∇Lᵀ``).  By the Kelvin–Tait–Chetaev theorem such a system is
asymptotically stable **iff** ``K`` is positive definite — which also explains the thesis'
observation that neither ``b`` nor ``G_d`` changes the optimized activations (Ch. 4 C).
``K(α)`` is affine in ``α``, so the constraint is the linear matrix inequality
``K(α) ⪰ σ I`` (convex in ``α``), written smoothly with a Cholesky factor as NLP variables::

    K(α)/k_ref − (σ/k_ref) I = L Lᵀ,   L lower triangular, diag(L) ≥ 0     (171 equations)

(``k_ref`` = 50 N·m/rad, the disc stiffness, only scales the rows; ``σ`` = ``stiffness_margin``,
default 0.1 N·m/rad = 0.2 % of one disc's stiffness).  This is 18 × 18 instead of the 36 × 36
Lyapunov equation and far better conditioned (the lumbar bodies make ``J`` stiff,
``‖J‖ ~ 5·10⁴``); the eigenvalues of ``J_i + J_d`` are checked afterwards.

Existence: before minimizing power the largest achievable stiffness reserve
``t* = max_α λ_min(K(α))`` subject to equilibrium and ``0 ≤ α ≤ 1`` is computed (same
Cholesky form, concave objective, so the maximum is global).  ``t* < σ`` means that no
stable equilibrium exists for these values: the result then has ``stable = False``.  An
equilibrium that is impossible with ``0 ≤ α ≤ 1`` (infeasible linear program) is reported
the same way.

Co-contraction (Ch. 4 B.iv, Ch. 5 B, after Granata et al. 2005): "the percentage of total
muscle force relative to that required for equilibrium … zero co-contraction corresponded to
the minimal total muscle force required to maintain equilibrium while ignoring stability",
``100 (F − F_eq)/F_eq`` % with ``F = Σ f_o,i α_i``.  Two readings of ``F_eq`` are computed:

* ``"equilibrium_power"`` (default, reported as ``co_contraction_pct``): ``F_eq`` is the total
  force of the *same* optimization with the stability constraint switched off (minimum
  metabolic power for equilibrium alone — optimizationscript.m/nlcon.m keep exactly this
  switch, ``c=-1; %Enable to evaluate equilibrium only``).  This is the only reading under
  which the thesis' 0 % at ``G_R = 100`` is attainable (Ch. 5 C: "the metabolic power required
  for stability decreased until it reached the minimum metabolic power … the power required
  to maintain equilibrium"), and it reproduces Table 5.1 (unloaded: 38 %, 9.8 %, 0 % here vs
  38 %, 9.4 %, 0 % printed).
* ``"minimum_force"`` (``co_contraction_min_force_pct``): ``F_eq`` = minimum of ``Σ f_o α``
  subject to equilibrium (linear program).  Because the power-optimal force distribution is
  not the force-minimal one, this never reaches 0 (≈ 44 % unloaded at ``G_R = 100``).

Delay margin: :func:`colloc.delay_margin.delay_margin` of ``J_i(α*)``, ``J_d(α*)``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from functools import lru_cache

import casadi as ca
import numpy as np
from scipy.optimize import linprog

from colloc import CollocInputError, OptionsError, delay_margin
from colloc_problems.spine import DEFAULT_DAMPING  # intrinsic damping gain b (s) when none is given
from colloc_problems.spine.model import (
    N_DOF,
    AffineJacobians,
    SpineModel,
    affine_jacobians,
    build_model,
    metabolic_power_expr,
)

__all__ = [
    "DEFAULT_DAMPING",
    "DEFAULT_STIFFNESS_MARGIN",
    "PHYSIOLOGICAL_DELAY_S",
    "StabilityProblem",
    "cli_stability",
    "stability",
]

#: Default stiffness margin σ (N·m/rad) of ``K(α) ⪰ σ I``.
DEFAULT_STIFFNESS_MARGIN = 0.1
#: Physiological reflex delay used as the stability threshold in Ch. 5 (Reeves et al. 2005).
PHYSIOLOGICAL_DELAY_S = 0.06
_K_REF = 50.0  # N·m/rad, row scale of the stiffness constraint
_TRI = np.tril_indices(N_DOF)


def _ipopt_options(max_iter: int, tol: float) -> dict:
    return {"print_time": False, "ipopt.print_level": 0, "ipopt.sb": "yes", "ipopt.max_iter": max_iter,
            "ipopt.tol": tol, "ipopt.constr_viol_tol": 1e-10, "ipopt.acceptable_iter": 0,
            "ipopt.mu_strategy": "adaptive"}


def _lower(l):
    """Lower-triangular 18 × 18 SX matrix from its 171 row-major entries (``np.tril_indices`` order)."""
    L = ca.SX.zeros(N_DOF, N_DOF)
    for k, (i, j) in enumerate(zip(*_TRI)):
        L[int(i), int(j)] = l[k]
    return L


def _diag_positions() -> np.ndarray:
    return np.array([k for k, (i, j) in enumerate(zip(*_TRI)) if i == j])


class StabilityProblem:
    """The NLPs of one parameter set (built once, solved from several starts).

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
        nm = model.n_muscles
        self.nm, self.nl = nm, len(_TRI[0])
        a = ca.SX.sym("alpha", nm)
        l = ca.SX.sym("l", self.nl)
        t = ca.SX.sym("t")
        L = _lower(l)
        Kflat = ca.DM(affine.K_alpha.reshape(N_DOF * N_DOF, nm, order="F"))
        K = (ca.DM(affine.K0) + ca.reshape(Kflat @ a, N_DOF, N_DOF)) / _K_REF
        R = K - L @ L.T
        rows = [R[int(i), int(j)] for i, j in zip(*_TRI)]
        eq = ca.DM(affine.A_eq) @ a - ca.DM(affine.b_eq)
        eye = ca.DM.eye(N_DOF)
        shift = np.eye(N_DOF)[_TRI] * (self.sigma / _K_REF)
        opts = _ipopt_options(max_iter, tol)
        power = metabolic_power_expr(model, a)
        self._power = ca.nlpsol("spine_power", "ipopt",
                                {"x": ca.vertcat(a, l), "f": power,
                                 "g": ca.vertcat(eq, ca.vertcat(*rows) - ca.DM(shift))},
                                opts)
        Rt = [(K - t * eye - L @ L.T)[int(i), int(j)] for i, j in zip(*_TRI)]
        self._reserve = ca.nlpsol("spine_reserve", "ipopt",
                                  {"x": ca.vertcat(a, l, t), "f": -t, "g": ca.vertcat(eq, ca.vertcat(*Rt))}, opts)
        self._equilibrium = ca.nlpsol("spine_equilibrium", "ipopt", {"x": a, "f": power, "g": eq}, opts)
        self.n_g = N_DOF + self.nl
        lbl = np.full(self.nl, -np.inf)
        lbl[_diag_positions()] = 0.0
        self._lbl = lbl

    # -- helpers -------------------------------------------------------------------------
    def stiffness(self, alpha) -> np.ndarray:
        """``K(α)`` (N·m/rad).

        Parameters
        ----------
        alpha : array_like, shape (M,)
        """
        return self.affine.K(alpha)

    def _chol_guess(self, alpha, shift: float) -> np.ndarray:
        K = self.stiffness(alpha) / _K_REF - shift * np.eye(N_DOF)
        K = 0.5 * (K + K.T)
        lam = np.linalg.eigvalsh(K)[0]
        if lam < 1e-3:
            K = K + (1e-3 - lam) * np.eye(N_DOF)
        return np.linalg.cholesky(K)[_TRI]

    @staticmethod
    def _status(solver) -> tuple[bool, str, int]:
        st = solver.stats()
        return bool(st.get("success", False)), str(st.get("return_status", "")), int(st.get("iter_count", -1))

    # -- the three problems ------------------------------------------------------------------
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
        a0 = np.full(self.nm, 0.1) if alpha0 is None else np.asarray(alpha0, dtype=float)
        K = self.stiffness(a0) / _K_REF
        t0 = float(np.linalg.eigvalsh(0.5 * (K + K.T))[0]) - 0.01
        x0 = np.concatenate([a0, self._chol_guess(a0, t0 * _K_REF), [t0]])
        lbx = np.concatenate([np.zeros(self.nm), self._lbl, [-np.inf]])
        ubx = np.concatenate([np.ones(self.nm), np.full(self.nl, np.inf), [np.inf]])
        sol = self._reserve(x0=x0, lbx=lbx, ubx=ubx, lbg=0.0, ubg=0.0)
        ok, status, it = self._status(self._reserve)
        w = np.asarray(sol["x"], dtype=float).ravel()
        alpha = np.clip(w[:self.nm], 0.0, 1.0)
        Ka = self.stiffness(alpha)
        return {"reserve": float(np.linalg.eigvalsh(0.5 * (Ka + Ka.T))[0]), "alpha": alpha, "success": ok,
                "status": status, "iterations": it}

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
        t0 = time.perf_counter()
        a0 = np.asarray(alpha0, dtype=float)
        x0 = np.concatenate([a0, self._chol_guess(a0, self.sigma)])
        lbx = np.concatenate([np.zeros(self.nm), self._lbl])
        ubx = np.concatenate([np.ones(self.nm), np.full(self.nl, np.inf)])
        sol = self._power(x0=x0, lbx=lbx, ubx=ubx, lbg=0.0, ubg=0.0)
        ok, status, it = self._status(self._power)
        alpha = np.clip(np.asarray(sol["x"], dtype=float).ravel()[:self.nm], 0.0, 1.0)
        return {"alpha": alpha, "power": self.model.metabolic_power(alpha), "success": ok, "status": status,
                "iterations": it, "time_s": time.perf_counter() - t0}

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
        a0 = np.full(self.nm, 0.05) if alpha0 is None else np.asarray(alpha0, dtype=float)
        sol = self._equilibrium(x0=a0, lbx=0.0, ubx=1.0, lbg=0.0, ubg=0.0)
        ok, status, _ = self._status(self._equilibrium)
        alpha = np.clip(np.asarray(sol["x"], dtype=float).ravel(), 0.0, 1.0)
        return {"alpha": alpha, "power": self.model.metabolic_power(alpha), "success": ok, "status": status}

    def minimum_force(self) -> dict:
        """Minimum total muscle force ``Σ f_o α`` for equilibrium alone (linear program, HiGHS).

        Parameters
        ----------
        None

        Returns
        -------
        dict
            ``alpha``, ``force`` (N), ``success``, ``status``.
        """
        f0 = self.model.max_force
        res = linprog(f0, A_eq=self.affine.A_eq, b_eq=self.affine.b_eq, bounds=[(0.0, 1.0)] * self.nm,
                      method="highs")
        if not res.success:
            return {"alpha": None, "force": None, "success": False, "status": res.message}
        alpha = np.clip(res.x, 0.0, 1.0)
        return {"alpha": alpha, "force": float(f0 @ alpha), "success": True, "status": res.message}


@lru_cache(maxsize=16)
def _affine_cached(model: SpineModel, p: tuple, jacobians: bool = True) -> AffineJacobians:
    return affine_jacobians(model, np.array(p), jacobians=jacobians)


def _max_real_eig(affine: AffineJacobians, alpha) -> float:
    return float(np.max(np.linalg.eigvals(affine.Ji(alpha) + affine.Jd(alpha)).real))


def stability(
    load: float = 0.0,
    reflex_gain: float = 10.0,
    damping: float = DEFAULT_DAMPING,
    stiffness_gain: float = 10.0,
    differential_gain: float = 0.0,
    starts: int = 3,
    seed: int = 0,
    *,
    stiffness_margin: float = DEFAULT_STIFFNESS_MARGIN,
    delay_method: str = "sweep",
    co_contraction_reference: str = "equilibrium_power",
    model: SpineModel | None = None,
    max_iter: int = 3000,
) -> dict:
    """Minimum-metabolic-power stable activations of the 18-DoF spine, co-contraction and delay margin.

    Parameters
    ----------
    load : float
        Downward external load at the T4 level, 20 cm anterior (N, ≥ 0; thesis: 0 or 200).
    reflex_gain : float
        Proportional reflex gain ``G_p`` (= ``G_R`` of Ch. 5; ≥ 0).
    damping : float
        Intrinsic muscle damping gain ``b`` (s, ≥ 0; thesis: 0.2, 2, 20).
    stiffness_gain : float
        Intrinsic muscle stiffness gain ``q`` (≥ 0; thesis: 10).
    differential_gain : float
        Derivative reflex gain ``G_d`` (s, ≥ 0; 0 in Ch. 5).
    starts : int
        Random initial activation vectors ``α₀ ~ U(0, 1)⁹⁰`` (≥ 1; the thesis used 3).
    seed : int
        Seed of the random starts.
    stiffness_margin : float
        ``σ`` of the stability constraint ``K(α) ⪰ σ I`` (N·m/rad).
    delay_method : {"sweep", "exact"}
        Method of :func:`colloc.delay_margin.delay_margin`.
    co_contraction_reference : {"equilibrium_power", "minimum_force"}
        Reference force of ``co_contraction_pct`` (see the module docstring); both values
        are always in the result.
    model : SpineModel, optional
        Default ``build_model()``.
    max_iter : int
        IPOPT iteration limit per solve.

    Returns
    -------
    dict
        docs/contracts.md §3 keys ``stable`` (False: no stable equilibrium exists for these values, or
        no start converged), ``metabolic_power_w``, ``co_contraction_pct``,
        ``max_real_eigenvalue`` (of ``J_i + J_d``, 1/s), ``equilibrium_residual`` (relative),
        ``delay_margin_s`` (``None``: stable for every delay; 0 when not stable),
        ``activations`` (muscle name → α); plus the inputs, ``crossing_frequency_rad_s``,
        ``stiffness_reserve_nm_per_rad`` (max achievable ``λ_min K``), ``min_stiffness_eigenvalue``,
        ``total_muscle_force_n``, ``min_equilibrium_force_n``, ``equilibrium_metabolic_power_w``,
        ``equilibrium_total_force_n``, ``co_contraction_min_force_pct``,
        ``stable_at_physiological_delay`` (margin > 60 ms),
        ``runs`` (one entry per start), ``objective_spread_rel``, ``message`` and ``timings``.
        When ``stable`` is False the power and co-contraction are ``None`` and the
        activations (and ``max_real_eigenvalue``) are those of the most stable equilibrium
        (maximum stiffness reserve).  "Stable" means ``K(α) ⪰ σI``: when the reserve is
        positive but below ``σ`` only marginally stable equilibria exist (``max_real_eigenvalue``
        slightly negative); they are reported as not stable, and the message says so.
    """
    t_start = time.perf_counter()
    if isinstance(starts, bool) or not isinstance(starts, (int, np.integer)) or starts < 1:
        raise CollocInputError(f"starts must be an integer >= 1, got {starts!r}")
    if delay_method not in ("sweep", "exact"):
        raise OptionsError(f"delay_method must be 'sweep' or 'exact', got {delay_method!r}")
    if co_contraction_reference not in ("equilibrium_power", "minimum_force"):
        raise OptionsError("co_contraction_reference must be 'equilibrium_power' or 'minimum_force', "
                           f"got {co_contraction_reference!r}")
    model = build_model() if model is None else model
    p = model.parameter_vector(stiffness_gain, damping, reflex_gain, differential_gain, load)
    affine = _affine_cached(model, tuple(float(v) for v in p))
    K0 = affine.K0
    asym = max(np.abs(K0 - K0.T).max(), np.abs(affine.K_alpha - affine.K_alpha.transpose(1, 0, 2)).max())
    if asym > 1e-8 * max(1.0, np.abs(affine.K_alpha).max()):  # pragma: no cover - model property
        raise RuntimeError(f"generalized stiffness is not symmetric ({asym:.3g}); the K ⪰ σI criterion does not apply")
    prob = StabilityProblem(model, affine, stiffness_margin, max_iter=max_iter)
    t_build = time.perf_counter() - t_start

    names = model.muscle_names
    base = {"load_N": float(load), "reflex_gain": float(reflex_gain), "damping": float(damping),
            "stiffness_gain": float(stiffness_gain), "differential_gain": float(differential_gain),
            "stiffness_margin_nm_per_rad": prob.sigma, "starts": int(starts), "seed": int(seed)}

    t1 = time.perf_counter()
    minforce = prob.minimum_force()
    if not minforce["success"]:
        return {**base, "stable": False, "metabolic_power_w": None, "co_contraction_pct": None,
                "max_real_eigenvalue": None, "equilibrium_residual": None, "delay_margin_s": 0.0,
                "crossing_frequency_rad_s": None, "activations": {},
                "message": f"no equilibrium with 0 <= alpha <= 1 ({minforce['status']})",
                "runs": [], "timings": {"build_s": t_build, "total_s": time.perf_counter() - t_start}}
    reserve = prob.stiffness_reserve(minforce["alpha"])
    eq_power = prob.equilibrium_power(minforce["alpha"])
    t_pre = time.perf_counter() - t1

    common = {"stiffness_reserve_nm_per_rad": reserve["reserve"], "min_equilibrium_force_n": minforce["force"],
              "equilibrium_metabolic_power_w": eq_power["power"] if eq_power["success"] else None}
    if reserve["reserve"] < prob.sigma:
        a = reserve["alpha"]
        return {**base, "stable": False, "metabolic_power_w": None, "co_contraction_pct": None,
                "max_real_eigenvalue": _max_real_eig(affine, a),
                "equilibrium_residual": affine.equilibrium_residual(a), "delay_margin_s": 0.0,
                "crossing_frequency_rad_s": None, "activations": dict(zip(names, map(float, a))), **common,
                "message": (("no stable equilibrium" if reserve["reserve"] <= 0 else
                             "only marginally stable equilibria (reported as not stable)")
                            + f": the largest achievable min eigenvalue of the stiffness is "
                            f"{reserve['reserve']:.4g} N·m/rad < margin {prob.sigma:g} N·m/rad ({reserve['status']})"),
                "runs": [], "timings": {"build_s": t_build, "preparation_s": t_pre,
                                        "total_s": time.perf_counter() - t_start}}

    rng = np.random.default_rng(seed)
    runs = []
    t2 = time.perf_counter()
    for k in range(starts):
        r = prob.minimum_power(rng.uniform(0.0, 1.0, model.n_muscles))
        r["start"] = k
        runs.append(r)
    t_opt = time.perf_counter() - t2
    good = [r for r in runs if r["success"]]
    run_summary = [{"start": r["start"], "success": r["success"], "status": r["status"],
                    "iterations": r["iterations"], "time_s": r["time_s"], "metabolic_power_w": r["power"]}
                   for r in runs]
    if not good:
        a = reserve["alpha"]
        return {**base, "stable": False, "metabolic_power_w": None, "co_contraction_pct": None,
                "max_real_eigenvalue": _max_real_eig(affine, a), "equilibrium_residual": affine.equilibrium_residual(a),
                "delay_margin_s": 0.0, "crossing_frequency_rad_s": None,
                "activations": dict(zip(names, map(float, a))), **common,
                "message": "IPOPT did not converge from any start: " + ", ".join(r["status"] for r in runs),
                "runs": run_summary, "timings": {"build_s": t_build, "preparation_s": t_pre, "optimization_s": t_opt,
                                                 "total_s": time.perf_counter() - t_start}}
    best = min(good, key=lambda r: r["power"])
    alpha = best["alpha"]
    powers = np.array([r["power"] for r in good])
    Ji, Jd = affine.Ji(alpha), affine.Jd(alpha)
    t3 = time.perf_counter()
    margin = delay_margin(Ji, Jd, method=delay_method)
    t_dm = time.perf_counter() - t3
    max_re = float(margin.max_real_eigenvalue_zero_delay)
    Kmin = float(np.linalg.eigvalsh(0.5 * (prob.stiffness(alpha) + prob.stiffness(alpha).T))[0])
    force = float(model.max_force @ alpha)
    eq_force = float(model.max_force @ eq_power["alpha"]) if eq_power["success"] else None
    stable = bool(max_re < 0.0)
    cocon = {"minimum_force": 100.0 * (force - minforce["force"]) / minforce["force"],
             "equilibrium_power": None if eq_force is None else 100.0 * (force - eq_force) / eq_force}
    return {
        **base,
        "stable": stable,
        "metabolic_power_w": best["power"],
        "co_contraction_pct": cocon[co_contraction_reference],
        "max_real_eigenvalue": max_re,
        "equilibrium_residual": affine.equilibrium_residual(alpha),
        "delay_margin_s": margin.delay_margin_s,
        "crossing_frequency_rad_s": margin.crossing_frequency_rad_s,
        "stable_at_physiological_delay": bool(stable and (margin.delay_margin_s is None
                                                          or margin.delay_margin_s > PHYSIOLOGICAL_DELAY_S)),
        "activations": dict(zip(names, map(float, alpha))),
        **common,
        "min_stiffness_eigenvalue": Kmin,
        "total_muscle_force_n": force,
        "co_contraction_min_force_pct": cocon["minimum_force"],
        "co_contraction_reference": co_contraction_reference,
        "equilibrium_total_force_n": eq_force,
        "objective_spread_rel": float((powers.max() - powers.min()) / powers.min()),
        "message": best["status"],
        "runs": run_summary,
        "timings": {"build_s": t_build, "preparation_s": t_pre, "optimization_s": t_opt,
                    "optimization_per_start_s": t_opt / starts, "delay_margin_s": t_dm,
                    "total_s": time.perf_counter() - t_start},
    }


# ---------------------------------------------------------------------------------------
# command line: colloc spine stability
# ---------------------------------------------------------------------------------------

def _fmt(v, spec: str, unit: str = "") -> str:
    return "n/a" if v is None else f"{v:{spec}}{unit}"


def cli_stability(args) -> int:
    """Handler of ``colloc spine stability``; returns the exit code (0 stable, 1 not).

    Parameters
    ----------
    args : argparse.Namespace
        ``load, reflex_gain, damping, stiffness_gain, differential_gain, starts, seed, method, json``.
    """
    if args.starts < 1:
        raise CollocInputError(f"--starts must be >= 1, got {args.starts}")
    for option in ("load", "reflex_gain", "damping", "stiffness_gain", "differential_gain"):
        value = getattr(args, option, 0.0)
        if not math.isfinite(value) or value < 0:
            raise CollocInputError(f"--{option.replace('_', '-')} must be a finite number >= 0, got {value:g}")
    res = stability(load=args.load, reflex_gain=args.reflex_gain, damping=args.damping,
                    stiffness_gain=args.stiffness_gain, differential_gain=getattr(args, "differential_gain", 0.0),
                    starts=args.starts, seed=args.seed, delay_method=getattr(args, "method", "sweep"))
    if args.json:
        sys.stdout.write(json.dumps(res) + "\n")
    else:
        print(f"Franklin (2006) 18-DoF spine: load {res['load_N']:g} N, G_p = {res['reflex_gain']:g}, "
              f"G_d = {res['differential_gain']:g} s, b = {res['damping']:g} s, q = {res['stiffness_gain']:g}")
        print(f"stable                  {res['stable']}  ({res['message']})")
        print(f"stiffness reserve       {_fmt(res.get('stiffness_reserve_nm_per_rad'), '.4g', ' N·m/rad')}")
        if res["stable"]:
            dm = res["delay_margin_s"]
            print(f"metabolic power         {res['metabolic_power_w']:.6g} W "
                  f"(equilibrium only {_fmt(res['equilibrium_metabolic_power_w'], '.6g', ' W')})")
            print(f"co-contraction          {_fmt(res['co_contraction_pct'], '.4g', ' %')} "
                  f"(total force {res['total_muscle_force_n']:.5g} N; equilibrium alone "
                  f"{_fmt(res['equilibrium_total_force_n'], '.5g', ' N')} at minimum power, "
                  f"{res['min_equilibrium_force_n']:.5g} N at minimum force: "
                  f"{res['co_contraction_min_force_pct']:.4g} %)")
            print(f"max Re eig(J_i + J_d)   {res['max_real_eigenvalue']:.6g} 1/s")
            print(f"equilibrium residual    {res['equilibrium_residual']:.3g} (relative)")
            print("delay margin            " + ("infinite (no reflex delay path)" if dm is None else
                                                f"{dm * 1e3:.4g} ms at {res['crossing_frequency_rad_s']:.4g} rad/s"))
            print(f"starts                  {len(res['runs'])}, power spread {res['objective_spread_rel']:.2g} "
                  f"(relative), {res['timings']['optimization_s']:.2f} s")
    return 0 if res["stable"] else 1
