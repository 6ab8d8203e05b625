"""Semibatch reactor kinetics from nine experiments (Abel & Marquardt 2000, as in Pyomo's parmest).

Two consecutive first-order reactions A → B → C run in a cooled semibatch reactor fed with
pure A.  The model is the one of the parmest "semibatch" example (Nicholson et al. 2018,
after Abel & Marquardt 2000), written here from its published equations::

    r₁ = k₁ exp(−E₁/(R T_r)) C_a,          r₂ = k₂ exp(−E₂/(R T_r)) C_b
    C_a' = F_a/V_r − r₁,   C_b' = r₁ − r₂,   C_c' = r₂,   V_r' = F_a M_a/ρ_r
    ρ_r c_r T_r' = F_a M_a c_r (T_f − T_r)/V_r − ΔH₁ r₁ − ΔH₂ r₂
                   + (α_j A_j + α_c A_c)(T_c − T_r)/V_r0

(the jacket follows the coil temperature, T_j = T_c, as in the example; like it, the
concentration balances carry no dilution term).  The feed F_a (kmol/s) and the coil
temperature T_c (K) are switched once, at :data:`SWITCH_TIME` = 10 800 s, from
``Fa1, Tc1`` to ``Fa2, Tc2``; each experiment has its own four values, given as constant
columns of its CSV file.  The initial state is known (the example fixes it): C_a, C_b, C_c
from the experiment's constant columns ``Ca0, Cb0, Cc0``, T_r = 300 K, V_r = 1 m³.

Unknown parameters ``k1``, ``k2`` (1/s) and ``E1``, ``E2`` (kJ/kmol), shared by the
experiments.  Measured every 1 080 s over 6 h: ``Ca``, ``Cb``, ``Cc`` (kmol/m³) and ``Tr`` (K).
The sampling is coarse against the thermal time constant (about 640 s), so collocate on a finer
grid than the samples, e.g. ``Midpoint(num_nodes=241)`` (90 s; a node sits on the switch).

Noise.  The data files do not state it (the example weights ``Tr`` 100 times less than the
concentrations).  :data:`NOISE_STD` holds the residual RMS of each signal, pooled over the
source's ten files, of a fit with those relative weights (``Midpoint(num_nodes=241)``; see
``data/semibatch/README.md``), rounded; they are the fit weights 1/σ².  A fit verdict on
these data therefore checks the shape of the residuals (their whiteness and how they split
between experiments), not an independent noise level.

Data: ``data/semibatch/exp1.csv … exp8.csv, exp10.csv``, converted from the parmest example's
``exp*.out`` files (Pyomo, BSD-3-Clause; see the folder's README and licence file); the source's
``exp9.out`` repeats ``exp7.out`` and is not shipped.

References: Abel, O. & Marquardt, W. (2000). Scenario-integrated modeling and optimization
of dynamic systems. AIChE J. 46(4), 803–823.  Nicholson, B. et al. (2018). pyomo.dae.
Math. Prog. Comp. 10(2), 187–223.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import casadi as ca
import numpy as np

import colloc as co

__all__ = ["TRUE", "REQUIRED_COLUMNS", "OPTIONAL_COLUMNS", "DEFAULT_DATA", "DATA_FILES", "CONSTANTS",
           "SWITCH_TIME", "NOISE_STD", "SIGNALS", "INPUTS", "INITIAL", "model", "problem", "load_trial", "read_out",
           "simulate_trial"]

#: The values the example's data were generated with (stated in the example).
TRUE = {"k1": 15.01, "k2": 85.01, "E1": 30000.0, "E2": 40000.0}
SIGNALS = ("Ca", "Cb", "Cc", "Tr")
INPUTS = ("Fa1", "Fa2", "Tc1", "Tc2")
#: Initial concentrations of each experiment (constant columns; the initial state is known).
INITIAL = ("Ca0", "Cb0", "Cc0")
REQUIRED_COLUMNS = INPUTS + INITIAL + SIGNALS
OPTIONAL_COLUMNS: tuple[str, ...] = ()
#: The demo fits every shipped experiment, as the Pyomo parmest example does: one experiment (41
#: samples) cannot tell k2 from E2 (their estimates correlate at 1.000) and ends with E2 on its bound.
DEFAULT_DATA = ("semibatch",)
#: The nine shipped experiments (relative to the data folder; the source's exp9 repeats exp7).
DATA_FILES = tuple(("semibatch", f"exp{i}.csv") for i in (1, 2, 3, 4, 5, 6, 7, 8, 10))
#: Time (s) at which feed and coil temperature switch from the first to the second value.
SWITCH_TIME = 10800.0
#: Measurement noise (standard deviations, units of each signal), the fit weights 1/σ².
NOISE_STD = {"Ca": 0.17, "Cb": 0.18, "Cc": 0.17, "Tr": 1.1}
#: Known constants of the example (SI-like units of the source: kJ, kmol, K, m, s, kg).
CONSTANTS = {
    "R": 8.314, "Mwa": 50.0, "rhor": 1000.0, "cpr": 3.9, "Tf": 300.0, "deltaH1": -40000.0,
    "deltaH2": -50000.0, "alphaj": 0.8, "alphac": 0.7, "Aj": 5.0, "Ac": 3.0, "Vr0": 1.0, "Tr0": 300.0,
}


def _rhs(x, u, p, t, c=CONSTANTS):
    """Right-hand side f(x, u, p, t) for CasADi or numpy arguments."""
    Ca, Cb, Tr, Vr = x[0], x[1], x[3], x[4]  # C_c enters no rate
    Fa1, Fa2, Tc1, Tc2 = u[0], u[1], u[2], u[3]
    k1, k2, E1, E2 = p[0], p[1], p[2], p[3]
    early = t < SWITCH_TIME
    if isinstance(t, (ca.SX, ca.MX)):
        Fa, Tc = ca.if_else(early, Fa1, Fa2), ca.if_else(early, Tc1, Tc2)
        exp = ca.exp
    else:
        Fa, Tc = (Fa1, Tc1) if early else (Fa2, Tc2)
        exp = np.exp
    r1 = k1 * exp(-E1 / (c["R"] * Tr)) * Ca
    r2 = k2 * exp(-E2 / (c["R"] * Tr)) * Cb
    heat = (Fa * c["Mwa"] * c["cpr"] * (c["Tf"] - Tr) / Vr - c["deltaH1"] * r1 - c["deltaH2"] * r2
            + (c["alphaj"] * c["Aj"] + c["alphac"] * c["Ac"]) * (Tc - Tr) / c["Vr0"])
    return [Fa / Vr - r1, r1 - r2, r2, heat / (c["rhor"] * c["cpr"]), Fa * c["Mwa"] / c["rhor"]]


def model() -> co.Model:
    """The semibatch model: states Ca, Cb, Cc, Tr, Vr; known inputs Fa1, Fa2, Tc1, Tc2."""
    m = co.Model("semibatch")
    x = [m.state("Ca", unit="kmol/m^3", scale=5.0), m.state("Cb", unit="kmol/m^3", scale=5.0),
         m.state("Cc", unit="kmol/m^3", scale=5.0), m.state("Tr", unit="K", scale=300.0),
         m.state("Vr", unit="m^3", scale=1.0)]
    u = [m.known_input("Fa1", unit="kmol/s"), m.known_input("Fa2", unit="kmol/s"),
         m.known_input("Tc1", unit="K"), m.known_input("Tc2", unit="K")]
    p = [m.parameter("k1", unit="1/s", bounds=(2.0, 100.0), guess=14.0, scale=10.0),
         m.parameter("k2", unit="1/s", bounds=(2.0, 150.0), guess=90.0, scale=100.0),
         m.parameter("E1", unit="kJ/kmol", bounds=(25000.0, 40000.0), guess=27000.0, scale=1e4),
         m.parameter("E2", unit="kJ/kmol", bounds=(35000.0, 50000.0), guess=45000.0, scale=1e4)]
    for xi, fi in zip(x, _rhs(x, u, p, m.time)):
        m.set_der(xi, fi)
    return m


def problem(trials: co.Trial | Sequence[co.Trial], noise_std: dict | None = None) -> co.Problem:
    """All nine (or any) experiments with shared kinetics; initial states fixed as in the example.

    Each trial's initial concentrations are its ``Ca0, Cb0, Cc0`` columns; ``Tr(0) = 300 K``,
    ``Vr(0) = 1 m³``.  ``noise_std`` overrides entries of :data:`NOISE_STD`.
    """
    trials = [trials] if isinstance(trials, co.Trial) else list(trials)
    sigma = dict(NOISE_STD, **(noise_std or {}))
    prob = co.Problem(model(), trials, fit={s: sigma[s] ** -2 for s in SIGNALS}, name="semibatch")
    m = prob.model
    t0 = {i: float(t.time[0]) for i, t in enumerate(trials)}
    for i in range(len(trials)):
        missing = [c for c in INITIAL if c not in trials[i]]
        if missing:
            raise co.ProblemError(f"semibatch: trial '{trials[i].name}' lacks the initial-state column(s) "
                                  f"{', '.join(missing)}")
        start = [float(trials[i][c][0]) for c in INITIAL] + [CONSTANTS["Tr0"], CONSTANTS["Vr0"]]
        for name, value in zip(("Ca", "Cb", "Cc", "Tr", "Vr"), start):
            prob.add_point_constraint(m.variable(name).symbol, t0[i], value, value, trial=i, name=f"{name}(0)")
        fa1 = float(trials[i]["Fa1"][0])
        fa2 = float(trials[i]["Fa2"][0])
        prob.set_guess("Vr", lambda t, a=fa1, b=fa2: CONSTANTS["Vr0"] + CONSTANTS["Mwa"] / CONSTANTS["rhor"] * (
            a * np.minimum(t, SWITCH_TIME) + b * np.maximum(t - SWITCH_TIME, 0.0)), trial=i)
    return prob


def read_out(path, name: str | None = None) -> co.Trial:
    """Read one parmest ``exp*.out`` JSON file as a :class:`~colloc.Trial`."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise co.DataError(f"{path}: not a readable parmest .out JSON file ({exc})") from None
    keys = {"Ca_meas": "Ca", "Cb_meas": "Cb", "Cc_meas": "Cc", "Tr_meas": "Tr"}
    missing = [k for k in [*keys, *INPUTS, *INITIAL] if k not in doc]
    if missing:
        raise co.DataError(f"{path}: missing key(s) {', '.join(missing)}")
    times = sorted(doc["Ca_meas"], key=float)
    signals = {col: np.array([doc[k][t] for t in times], dtype=float) for k, col in keys.items()}
    n = len(times)
    signals.update({u: np.full(n, float(doc[u])) for u in INPUTS + INITIAL})
    return co.Trial(np.array([float(t) for t in times]), signals, name=name or path.stem + ".csv")


def load_trial(path) -> co.Trial:
    """Read a semibatch CSV (``time, Fa1, Fa2, Tc1, Tc2, Ca0, Cb0, Cc0, Ca, Cb, Cc, Tr``) or a
    parmest ``.out`` file."""
    if str(path).endswith(".out"):
        return read_out(path)
    return co.Trial.from_csv(path, required=REQUIRED_COLUMNS, optional=OPTIONAL_COLUMNS, min_rows=3)


def simulate_trial(params: dict | None = None, *, inputs=(0.003, 0.0, 320.0, 320.0), initial=(0.0, 0.0, 0.0),
                   duration: float = 21600.0, step: float = 1080.0, noise_std: dict | None = None, seed: int = 0,
                   name: str = "semibatch.csv") -> co.Trial:
    """Synthetic experiment integrated by scipy's stiff Radau method, with seeded Gaussian noise.

    ``inputs`` are ``(Fa1, Fa2, Tc1, Tc2)``, ``initial`` ``(Ca0, Cb0, Cc0)``; ``noise_std``
    maps signals to σ (default: no noise).
    """
    from scipy.integrate import solve_ivp

    p = [dict(TRUE, **(params or {}))[k] for k in ("k1", "k2", "E1", "E2")]
    time = np.arange(0.0, duration + 0.5 * step, step)
    x = np.array([*initial, CONSTANTS["Tr0"], CONSTANTS["Vr0"]], dtype=float)
    columns = []
    for lo, hi in ((0.0, min(SWITCH_TIME, duration)), (min(SWITCH_TIME, duration), duration)):
        grid = time[(time >= lo) & (time < hi)] if hi < duration else time[time >= lo]
        if hi <= lo:
            continue
        t_eval = np.union1d(grid, [hi])
        sol = solve_ivp(lambda t, y, when=0.5 * (lo + hi): _rhs(y, inputs, p, when), (lo, hi), x,
                        method="Radau", t_eval=t_eval, rtol=1e-10, atol=1e-10)
        if not sol.success:
            raise RuntimeError(f"semibatch simulation failed: {sol.message}")
        columns.append(sol.y[:, np.isin(sol.t, grid)])
        x = sol.y[:, -1]
    Y = np.hstack(columns)
    rng = np.random.default_rng(seed)
    sigma = noise_std or {}
    signals = {s: Y[i] + sigma.get(s, 0.0) * rng.standard_normal(time.size) for i, s in enumerate(SIGNALS)}
    signals.update({u: np.full(time.size, float(v)) for u, v in zip(INPUTS + INITIAL, (*inputs, *initial))})
    return co.Trial(time, signals, name=name)
