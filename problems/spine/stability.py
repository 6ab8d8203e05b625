"""Franklin (2006) activation optimization of the 18-DoF spine: minimum metabolic power at a stable equilibrium.

Problem (thesis eq. 3.C.i.1; Ch. 4 B.iv; Ch. 5 B)::

    min_α  P(α) = Σ_i m_i (74/2 sin(πα_i/2) + 111/2 (1 − cos(πα_i/2)))      (eq. 3.C.i.2 / Ch. 4 eq. 17)
    s.t.   Σ Q(q̄, α) = 0                        (18 equilibrium equations in the lordotic posture)
           Re λ(J_i(α) + J_d(α)) < 0             (asymptotic stability at zero delay)
           0 ≤ α ≤ 1,

solved by the library's static optimisation (:class:`colloc.StaticOptimization`, IPOPT with
exact derivatives).  The problem supplies the physics: the equilibrium equations, the
generalized stiffness ``K(α)`` and the metabolic power.

The stability constraint and the existence check (the stiffness reserve) are stated in
:mod:`colloc_problems.spine.activations`.

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

import numpy as np

from colloc import CollocInputError, OptionsError, delay_margin
from colloc_problems.spine import DEFAULT_DAMPING  # intrinsic damping gain b (s) when none is given
from colloc_problems.spine.activations import DEFAULT_STIFFNESS_MARGIN, StabilityProblem, _affine_cached
from colloc_problems.spine.model import AffineJacobians, SpineModel, build_model

__all__ = [
    "DEFAULT_DAMPING",
    "DEFAULT_STIFFNESS_MARGIN",
    "PHYSIOLOGICAL_DELAY_S",
    "StabilityProblem",
    "cli_stability",
    "stability",
]

#: Physiological reflex delay used as the stability threshold in Ch. 5 (Reeves et al. 2005).
PHYSIOLOGICAL_DELAY_S = 0.06


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
