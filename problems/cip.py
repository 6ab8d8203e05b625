"""Controlled inverted pendulum (CIP) of quiet standing (Barauskas & Krušinskienė 2007).

Model (docs/contracts.md §2 ``cip``; the paper's eq. 1 and 4)::

    I·u'' − m g h·u = T_d − T_c,     T_c = K_P u + K_I ∫₀ᵗ u dt + K_D u'
    T_d + B·T_d' = A·x(t)            (x: unit white noise)
    u_cop = h·u − I·u''/(m g)        (= (T_c − T_d)/(m g) by the equation of motion)

States: ``sway`` u (rad), ``sway_rate`` u' (rad/s), ``sway_integral`` ∫₀ᵗ u (rad·s, zero at
the first sample by definition) and, when it is modelled, ``disturbance`` T_d (N·m).
Unknown parameters ``KP``, ``KI``, ``KD``, bounded by the physiological ranges of the
paper's Table 1 (after Peterka 2000) and guessed at its "centre normal" values.

White noise convention.  The paper generates x with Matlab's ``randn`` at the 100 Hz
sample rate and low-pass filters it; we do the same: x is a sequence of independent
N(0, 1) values *held over each sample interval*.  The data generator integrates the
linear system exactly over each interval (matrix exponential), and the process-noise
formulation declares x as a held free input (``free_input(..., hold=True)``) whose exact
Gaussian prior is ``½ Σ_k x_k²``.

Formulations (:data:`FORMULATIONS`, all on the same model conventions):

``known``
    T_d measured (the ``disturbance`` column): least-squares fit of the COP.
``J_u``
    The paper's §4.1: T_d replaced by a filtered-noise realization of the right
    statistics (not the one that acted), fit of the COP time law (eq. 2–3).
``J_S``
    The same surrogate T_d, fit of the stabilogram diffusion function (eq. 5–6) up to
    Δt = 10 s.
``J_T``
    T_d a free trajectory, ½∫T_d'² dt minimised while the COP is fitted (eq. 19, solved
    simultaneously instead of the paper's alternation).  :func:`jt_inverse_dynamics` is the
    paper's own procedure (COM from the low-pass filtered COP, T_d by inverse dynamics,
    eq. 18).
``MAP``
    T_d driven by the unknown white noise x with its exact prior (process-noise
    formulation): the joint maximum a-posteriori trajectory and gains.  Biased: it drives
    K_D to its lower bound (see ``MAP-OM``).
``MAP-OM``
    ``MAP`` plus the Onsager–Machlup term ½∫∇·f dt = −T·K_D/(2I) + const, the Jacobian of
    the map from noise to path that the joint MAP leaves out (it grows with K_D, so without
    it the damping gain is pushed down).  This is the path likelihood; it agrees with the
    exact ``ML`` (see the study in benchmarks/cip_study.py).  The default for COP-only data.
``ML`` (:func:`ml_estimate`)
    Exact maximum likelihood of the gains by the Kalman-filter prediction-error method
    (the CIP with this disturbance is linear-Gaussian).

Real subjects (Santos & Duarte 2016 BDS records, ``benchmarks/real_cip_study.py``): the body
from height and mass (:func:`body`), gains bounded by :data:`WIDE_RANGES_PER_MGH`
(``bounds="wide"``), the disturbance filter's A and B fitted (``fit_disturbance=True``), and
for the ML the COP noise σ and the controllers of :data:`CONTROLLERS` (PID, PD, and PD and PID
with a feedback delay, :func:`ml_model`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np
import scipy.linalg
import scipy.optimize

import colloc as co
from colloc.signals import cumulative_integral, derivative, lowpass, sdf

__all__ = [
    "BODY",
    "CENTRE_NORMAL",
    "CONTROLLERS",
    "COP_NOISE",
    "DEFAULT_DATA",
    "DELAY_RANGE",
    "FILTER",
    "FILTER_RANGES",
    "FORMULATIONS",
    "OPTIONAL_COLUMNS",
    "PAPER_TABLE2",
    "PLAUSIBLE",
    "RANGES",
    "RECORDING_LOWPASS",
    "REQUIRED_COLUMNS",
    "SHORT_RECORD_S",
    "SIGMA_RANGE",
    "TRUE",
    "WIDE_RANGES_PER_MGH",
    "body",
    "com_from_cop",
    "cop_from_states",
    "discrete_system",
    "gain_bounds",
    "initial_trajectories",
    "jt_inverse_dynamics",
    "load_trial",
    "ml_estimate",
    "ml_model",
    "model",
    "noise_floor",
    "plausibility",
    "problem",
    "sdf_objective",
    "select_controller",
    "simulate_trial",
    "stochastic_problem",
    "surrogate_disturbance",
]

#: Body of the paper's subject (after Peterka 2000): I (kg·m²), m (kg), h (m), g (m/s²).
BODY = {"I": 76.0, "m": 60.0, "h": 0.87, "g": 9.81}
#: Disturbance filter T_d + B·T_d' = A·x of the paper (after Peterka 2000).
FILTER = {"A": 1000.0, "B": 80.0}
#: Table 1: physiological ranges (minimum, maximum) of the gains, SI units.
RANGES = {"KP": (1005.54, 1228.99), "KI": (0.0, 114.59), "KD": (232.05, 283.61)}
#: Wide gain ranges for real subjects, as multiples of the subject's gravity term m·g·h (K_P,
#: N·m/rad), m·g·h·s (K_D) and m·g·h/s (K_I); ``problem(bounds="wide")``.  Table 1 is one
#: subject's physiological range (±10 % about Peterka's values); on the 36 real BDS trials
#: (Santos & Duarte 2016) 34 fits ended on one of its bounds, so these ranges only exclude
#: the physically meaningless: a stiffness from half the gravity term (an unstable loop is
#: still representable, so the data can show it) to six times it, a damping from 1 % to
#: 200 % of m·g·h·s (Peterka 2000 reports K_D/K_P ≈ 0.2–0.4 s; 0.65 s with K_P at 3 m·g·h needs
#: about 2 m·g·h·s) and an integral gain up to
#: 3·m·g·h/s.  Our choice, not a published range.
WIDE_RANGES_PER_MGH = {"KP": (0.5, 6.0), "KI": (0.0, 3.0), "KD": (0.01, 2.0)}
#: Bounds of the fitted disturbance filter (``fit_disturbance=True``): amplitude A (N·m) and
#: time constant B (s).  The paper's values (A = 1000, B = 80) are the guess.
FILTER_RANGES = {"A": (1.0, 1e5), "B": (0.05, 500.0)}
#: Table 1: "centre normal" gains, the default initial guess.
CENTRE_NORMAL = {"KP": 1117.27, "KI": 14.32, "KD": 257.83}
#: Table 2: gains identified in the paper from its subject's COP record.
PAPER_TABLE2 = {
    "J_u": {"KP": 1131.62, "KI": 14.70, "KD": 260.33},
    "J_S": {"KP": 1117.27, "KI": 14.32, "KD": 265.35},
    "J_T": {"KP": 1045.75, "KI": 16.6996, "KD": 237.588},
}
#: Gains of the synthetic data: inside Table 1's ranges but away from the centre-normal
#: guess (KP +5.6 %, KI ×2.8, KD −5 %), so that an estimator that does not move shows.
TRUE = {"KP": 1180.0, "KI": 40.0, "KD": 245.0}
#: Default COP measurement noise of the synthetic data (m): 0.1 mm, force-plate level.
COP_NOISE = 1e-4
#: mean COP (m) beyond which ``problem(cop_offset="auto")`` identifies the COP's mean position
OFFSET_AUTO = 0.01
FORMULATIONS = ("known", "J_u", "J_S", "J_T", "MAP", "MAP-OM")
REQUIRED_COLUMNS = ("cop",)
OPTIONAL_COLUMNS = ("disturbance",)
DEFAULT_DATA = ("cip", "cip.csv")
GAINS = ("KP", "KI", "KD")
_SCALES = {"KP": 1000.0, "KI": 10.0, "KD": 100.0}


def _body(body: Mapping[str, float] | None, filt: Mapping[str, float] | None = None):
    b, f = dict(BODY), dict(FILTER)
    for given, default, what in ((body, b, "body"), (filt, f, "filter")):
        unknown = set(given or {}) - set(default)
        if unknown:
            raise co.ModelError(f"cip {what}: unknown parameter(s) {', '.join(sorted(unknown))}; "
                                f"known: {', '.join(default)}")
        default.update(given or {})
    return b, f


def gain_bounds(bounds: Mapping[str, tuple] | str | None, body: Mapping[str, float] | None = None) -> dict:
    """The gain bounds: Table 1 (:data:`RANGES`) updated by a mapping, or ``"table1"``, or
    ``"wide"`` (:data:`WIDE_RANGES_PER_MGH` times the body's m·g·h)."""
    rng = dict(RANGES)
    if isinstance(bounds, str):
        if bounds == "wide":
            b, _ = _body(body)
            mgh = b["m"] * b["g"] * b["h"]
            return {k: (lo * mgh, hi * mgh) for k, (lo, hi) in WIDE_RANGES_PER_MGH.items()}
        if bounds != "table1":
            raise co.ModelError(f"cip: bounds must be 'table1', 'wide' or a mapping, got {bounds!r}")
        return rng
    rng.update(bounds or {})
    return rng


def model(disturbance: str = "known", *, body: Mapping[str, float] | None = None,
          filt: Mapping[str, float] | None = None, bounds: Mapping[str, tuple] | str | None = None,
          cop_offset: float | None = None, fit_disturbance: bool = False) -> co.Model:
    """The CIP with PID feedback.

    Parameters
    ----------
    disturbance : {"known", "rate", "filtered"}
        ``"known"``: T_d is the measured input ``disturbance``.  ``"rate"``: T_d is a state
        driven by the free input ``disturbance_rate`` = T_d' (held over each interval).
        ``"filtered"``: T_d is a state with B·T_d' = A·x − T_d, x the held free input
        ``noise`` (unit white noise).
    body, filt : mapping, optional
        Overrides of :data:`BODY` and :data:`FILTER`.
    bounds : mapping of gain name to (lower, upper), or "table1" / "wide", optional
        Default: Table 1's ranges (:data:`RANGES`); see :func:`gain_bounds`.
    fit_disturbance : bool
        With ``disturbance="filtered"``: the filter's amplitude ``A`` (N·m) and time constant
        ``B`` (s) are parameters (bounds :data:`FILTER_RANGES`, guessed at ``filt``), so the
        disturbance intensity follows the subject's sway.
    cop_offset : float, optional
        If given, the COP's mean position is a parameter ``cop_offset`` (m, guess this value)
        added to the model's COP: a force plate measures the COP about its own origin, not
        about the ankle.

    Table 1's ranges are the physiological ranges of the paper's subject, part of its
    formulation: a gain on one of them is reported with a warning.  For another body, or
    with ``bounds="wide"``, the gain bounds are only where to look, and so are the filter's
    (``search_range``): a gain or A, B ending on one is a failure, ``parameter_at_bound``.
    """
    if disturbance not in ("known", "rate", "filtered"):
        raise co.ModelError(f"cip model: disturbance must be 'known', 'rate' or 'filtered', got {disturbance!r}")
    if fit_disturbance and disturbance != "filtered":
        raise co.ModelError("cip model: fit_disturbance needs disturbance='filtered'")
    b, f = _body(body, filt)
    rng = gain_bounds(bounds, body)
    searched = body is not None or (isinstance(bounds, str) and bounds == "wide")
    m = co.Model("cip")
    u = m.state("sway", unit="rad", scale=0.01)
    v = m.state("sway_rate", unit="rad/s", scale=0.01)
    w = m.state("sway_integral", unit="rad·s", scale=0.1)
    if disturbance == "known":
        td = m.known_input("disturbance", unit="N·m", scale=10.0)
    else:
        td = m.state("disturbance", unit="N·m", scale=10.0)
    gains = {k: m.parameter(k, unit=unit, bounds=rng[k], guess=_guess(k, rng[k]), scale=_SCALES[k],
                            description=f"{term} gain of the ankle torque", search_range=searched)
             for k, unit, term in zip(GAINS, ("N·m/rad", "N·m/(rad·s)", "N·m·s/rad"),
                                      ("proportional", "integral", "derivative"))}
    tc = gains["KP"] * u + gains["KI"] * w + gains["KD"] * v
    m.set_der(u, v)
    m.set_der(v, (b["m"] * b["g"] * b["h"] * u + td - tc) / b["I"])
    m.set_der(w, u)
    if disturbance == "rate":
        r = m.free_input("disturbance_rate", unit="N·m/s", scale=10.0, hold=True)
        m.set_der(td, r)
    elif disturbance == "filtered":
        x = m.free_input("noise", unit="1", scale=1.0, hold=True)
        if fit_disturbance:
            f = {k: m.parameter(k, unit=unit, bounds=FILTER_RANGES[k], guess=f[k], scale=scale,
                                description=text, search_range=True)
                 for k, unit, scale, text in (("A", "N·m", 100.0, "amplitude of the disturbance filter"),
                                              ("B", "s", 10.0, "time constant of the disturbance filter"))}
        m.set_der(td, (f["A"] * x - td) / f["B"])
    offset = 0.0
    if cop_offset is not None:
        offset = m.parameter("cop_offset", unit="m", bounds=(-0.5, 0.5), guess=float(cop_offset), scale=0.01,
                             description="mean COP position in the plate's frame (the ankle's projection)")
    m.output("cop", (tc - td) / (b["m"] * b["g"]) + offset, unit="m")
    return m


def _guess(name: str, bounds: tuple) -> float:
    """The centre-normal gain, moved inside ``bounds`` if they exclude it."""
    lo, hi = bounds
    return float(min(max(CENTRE_NORMAL[name], lo), hi))


def cop_from_states(states: np.ndarray, gains: Mapping[str, float], disturbance: np.ndarray,
                    body: Mapping[str, float] | None = None) -> np.ndarray:
    """u_cop = (T_c − T_d)/(m g) from states ``(N, 3)`` = (u, u', ∫u) and T_d (numpy)."""
    b, _ = _body(body)
    s = np.asarray(states, dtype=float)
    tc = gains["KP"] * s[:, 0] + gains["KD"] * s[:, 1] + gains["KI"] * s[:, 2]
    return (tc - np.asarray(disturbance, dtype=float)) / (b["m"] * b["g"])


# ---- data -------------------------------------------------------------------------------
def load_trial(path, missing: str = "error", columns: Mapping[str, str] | None = None,
               units: Mapping[str, str] | None = None) -> co.Trial:
    """Read a CIP trial (``time, cop[, disturbance]``; COP in m, disturbance in N·m).

    ``missing="allow"`` reads an empty cell as a sample not measured; the disturbance may
    step at a time written on two rows (:class:`colloc.Trial`, ``jump_columns``).
    ``columns``/``units`` read a lab's file as it comes, e.g. a BDS force-plate record
    (Santos & Duarte 2016): ``columns={"cop": "COPx"}`` (``COPx[cm]`` is converted to m).
    """
    return co.Trial.from_csv(path, required=REQUIRED_COLUMNS, optional=OPTIONAL_COLUMNS, min_rows=20,
                             missing=missing, jump_columns=("disturbance",), columns=columns, units=units)


# Winter (2009), Biomechanics and Motor Control of Human Movement, 4th ed.: segment masses as a
# fraction of body mass M, centre of mass from the proximal end and radius of gyration about the
# centre of mass as fractions of the segment length (Table 4.1), and joint heights as fractions
# of body height H (Fig. 4.1).  Per segment: (mass fraction, proximal joint height, distal joint
# height, CoM fraction from proximal, radius of gyration fraction); both legs are counted.
WINTER_ANKLE_HEIGHT = 0.039   # Fig. 4.1: lateral malleolus at 0.039 H
WINTER_FOOT_MASS = 0.0145     # Table 4.1: foot, per side
WINTER_SEGMENTS = {
    "legs (shanks)": (2 * 0.0465, 0.285, 0.039, 0.433, 0.302),  # femoral condyles / medial malleolus
    "thighs": (2 * 0.100, 0.530, 0.285, 0.433, 0.323),           # greater trochanter / femoral condyles
    "HAT": (0.678, 0.530, 0.818, 0.626, 0.496),                  # greater trochanter / glenohumeral joint
}


def body(height: float, mass: float, g: float = 9.81) -> dict[str, float]:
    """The CIP's body (``m``, ``h``, ``I``, ``g``) of a subject of ``height`` (m) and ``mass`` (kg).

    The pendulum is everything above the ankles, rigid (Winter 2009, Table 4.1 segment
    fractions and Fig. 4.1 joint heights, see :data:`WINTER_SEGMENTS`): ``m`` = M minus the two
    feet, ``h`` the height of its centre of mass above the ankle joint and ``I`` its moment of
    inertia about the ankle axis (parallel-axis sum of the segments' ``m (ρ L)²`` and
    ``m d²``).  Pass the result as ``problem(..., body=body(height=1.575, mass=54.2))``.
    """
    for value, what, lo, hi in ((height, "height", 0.5, 2.6), (mass, "mass", 10.0, 400.0)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not lo <= value <= hi:
            raise co.ModelError(f"cip body: {what} must be a number in [{lo:g}, {hi:g}] "
                                f"({'m' if what == 'height' else 'kg'}, SI units), got {value!r}")
    ankle = WINTER_ANKLE_HEIGHT * height
    m = moment = inertia = 0.0
    for fraction, z0, z1, com, gyration in WINTER_SEGMENTS.values():
        seg_mass = fraction * mass
        length = abs(z1 - z0) * height
        z = z0 * height + com * (z1 - z0) * height - ankle   # CoM height above the ankle
        m += seg_mass
        moment += seg_mass * z
        inertia += seg_mass * ((gyration * length) ** 2 + z ** 2)
    return {"m": m, "h": moment / m, "I": inertia, "g": float(g)}


def discrete_system(gains: Mapping[str, float], dt: float, body: Mapping[str, float] | None = None,
                    filt: Mapping[str, float] | None = None):
    """Exact zero-order-hold discretisation of the CIP with state (u, u', ∫u, T_d).

    Returns ``(Phi, Gamma, C)``: s_{k+1} = Φ s_k + Γ x_k and u_cop,k = C s_k.
    """
    b, f = _body(body, filt)
    KP, KI, KD = (float(gains[k]) for k in GAINS)
    I, mgh = b["I"], b["m"] * b["g"] * b["h"]
    Ac = np.array([[0.0, 1.0, 0.0, 0.0],
                   [(mgh - KP) / I, -KD / I, -KI / I, 1.0 / I],
                   [1.0, 0.0, 0.0, 0.0],
                   [0.0, 0.0, 0.0, -1.0 / f["B"]]])
    G = np.array([0.0, 0.0, 0.0, f["A"] / f["B"]])
    M = np.zeros((5, 5))
    M[:4, :4], M[:4, 4] = Ac, G
    E = scipy.linalg.expm(M * dt)
    C = np.array([KP, KD, KI, -1.0]) / (b["m"] * b["g"])
    return E[:4, :4], E[:4, 4], C


def surrogate_disturbance(num_samples: int, dt: float, seed: int,
                          filt: Mapping[str, float] | None = None) -> np.ndarray:
    """A filtered-noise disturbance T_d (N·m) from rest, exact for held unit white noise."""
    _, f = _body(None, filt)
    a = np.exp(-dt / f["B"])
    x = np.random.default_rng([seed, 7]).standard_normal(num_samples)
    td = np.zeros(num_samples)
    for k in range(num_samples - 1):
        td[k + 1] = a * td[k] + f["A"] * (1.0 - a) * x[k]
    return td


def simulate_trial(gains: Mapping[str, float] | None = None, *, duration: float = 60.0, rate: float = 100.0,
                   seed: int = 0, cop_noise: float = COP_NOISE, body: Mapping[str, float] | None = None,
                   filt: Mapping[str, float] | None = None, name: str = "cip.csv",
                   return_states: bool = False):
    """Synthetic quiet-standing record (the paper: 60 s at 100 Hz).

    The body starts at rest in the upright position with no disturbance; x is
    ``numpy.random.default_rng(seed)`` standard normal values held over each sample
    interval; the system is integrated exactly (matrix exponential); Gaussian noise of
    standard deviation ``cop_noise`` (m) is added to the COP (drawn after x).

    Returns
    -------
    Trial with columns ``cop`` and ``disturbance`` (the true T_d), or
    ``(trial, states)`` with ``states`` of shape (N, 4) = (u, u', ∫u, T_d) and the noise
    x of shape (N,) when ``return_states=True`` (as a tuple ``(trial, states, x)``).
    """
    gains = dict(TRUE if gains is None else gains)
    if cop_noise < 0 or not np.isfinite(cop_noise):
        raise ValueError(f"cop_noise must be finite and >= 0, got {cop_noise!r}")
    N = round(duration * rate) + 1
    dt = 1.0 / rate
    Phi, Gamma, C = discrete_system(gains, dt, body, filt)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(N)
    S = np.zeros((N, 4))
    for k in range(N - 1):
        S[k + 1] = Phi @ S[k] + Gamma * x[k]
    cop = S @ C + (cop_noise * rng.standard_normal(N) if cop_noise > 0 else 0.0)
    time = np.arange(N) * dt
    trial = co.Trial(time, {"cop": cop, "disturbance": S[:, 3].copy()}, name=name)
    if return_states:
        return trial, S, x
    return trial


# ---- initialisation from the data ---------------------------------------------------------
def com_from_cop(cop: np.ndarray, dt: float, body: Mapping[str, float] | None = None) -> np.ndarray:
    """Sway angle u (rad) from the COP by the exact inverse relation u_cop = h u − I u''/(m g).

    The bounded solution of u'' − ω₀² u = −ω₀² u_cop / h (ω₀² = m g h / I) is the COP
    convolved with the two-sided kernel (ω₀/2)·e^{−ω₀|t|}: a zero-phase low-pass with
    corner ω₀ (0.41 Hz for the paper's subject) that needs no tuning, unlike a Butterworth
    cut-off.  Solved as a tridiagonal system (second-order differences, reflecting ends,
    whose error decays as e^{−ω₀ t} away from the ends).
    """
    b, _ = _body(body)
    c = np.asarray(cop, dtype=float)
    N = c.size
    w2 = b["m"] * b["g"] * b["h"] / b["I"] * dt**2
    ab = np.zeros((3, N))
    ab[0, 1:] = 1.0
    ab[1, :] = -2.0 - w2
    ab[2, :-1] = 1.0
    ab[0, 1] = 2.0  # reflecting ends: u_{-1} = u_1, u_N = u_{N-2}
    ab[2, -2] = 2.0
    return scipy.linalg.solve_banded((1, 1), ab, -w2 * c / b["h"])


def initial_trajectories(trial: co.Trial, gains: Mapping[str, float] | None = None,
                         body: Mapping[str, float] | None = None,
                         filt: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """Trajectory guesses from the measured COP, never all-zero.

    COM from :func:`com_from_cop`, its rate and integral numerically, the disturbance from
    the COP relation T_d = T_c − m g u_cop with the guessed gains, its rate and the white
    noise that would produce it.  (A 60 s solve started from zero trajectories was seen to
    stop at a far-off stationary point, K_P ≈ −45 000.)
    """
    b, f = _body(body, filt)
    g = dict(CENTRE_NORMAL if gains is None else gains)
    t = trial.time
    dt = float(np.median(np.diff(t)))
    u = com_from_cop(trial["cop"], dt, body)
    v = derivative(u, dt)
    w = cumulative_integral(u, dt)
    td = g["KP"] * u + g["KI"] * w + g["KD"] * v - b["m"] * b["g"] * trial["cop"]
    rate = derivative(td, dt)
    noise = (td + f["B"] * rate) / f["A"]
    return {"sway": u, "sway_rate": v, "sway_integral": w, "disturbance": td,
            "disturbance_rate": rate, "noise": noise}


# ---- the formulations ---------------------------------------------------------------------
def sdf_objective(max_lag: float = 10.0, lag_step: float = 0.1, unit: float = 1e3):
    """The paper's J_S (eq. 6) as a trajectory objective for :meth:`Problem.add_trajectory_objective`.

    J_S = ∫₀^τ ½ (SDF_model(Δt) − SDF_data(Δt))² dΔt, τ = ``max_lag``, evaluated on a lag
    grid of spacing ``lag_step`` with the trapezoidal rule; COP in ``unit``-scaled metres
    (1e3: SDF in mm², as the paper reports it).  SDF_model is the discrete SDF of the
    model's COP at the nodes (the same estimator as :func:`colloc.signals.sdf` for the data).
    """
    def function(values, time, trial):
        c = values["cop"] * unit
        dt = float(np.median(np.diff(time)))
        if not np.allclose(np.diff(time), dt, rtol=1e-6, atol=0):
            raise co.ProblemError("J_S needs a uniform grid")
        N = len(time)
        step = max(1, round(lag_step / dt))
        kmax = int(np.floor(max_lag / dt + 1e-9))
        if kmax >= N:
            raise co.ProblemError(f"J_S: max_lag {max_lag} s is not shorter than trial '{trial.name}'")
        lags = np.arange(step, kmax + 1, step)
        _, ref = sdf(trial["cop"] * unit, float(np.median(np.diff(trial.time))), max_lag=max_lag)
        weights = np.full(lags.size, step * dt)
        weights[-1] /= 2  # trapezoid; SDF(0) = 0 for model and data alike
        total = 0
        for k, wgt in zip(lags, weights):
            d = c[int(k):] - c[: N - int(k)]
            total = total + wgt * 0.5 * (ca.sumsqr(d) / (N - int(k)) - float(ref[int(k)])) ** 2
        return total

    return function


def problem(trials: co.Trial | Sequence[co.Trial], formulation: str | None = None, *,
            cop_noise: float = COP_NOISE, surrogate_seed: int = 12345,
            body: Mapping[str, float] | None = None, filt: Mapping[str, float] | None = None,
            bounds: Mapping[str, tuple] | str | None = None, sdf_lag_step: float = 0.1,
            sdf_max_lag: float = 10.0, cop_offset: bool | str = "auto",
            fit_disturbance: bool = False) -> co.Problem:
    """The identification problem in one of :data:`FORMULATIONS`.

    Parameters
    ----------
    trials : Trial or sequence of Trial
        Columns ``cop`` and, for ``"known"``, ``disturbance``.
    formulation : str, optional
        Default: ``"known"`` when every trial has a ``disturbance`` column, else ``"MAP-OM"``.
    cop_noise : float
        COP noise standard deviation (m); the COP fit weight is 1/σ².
    surrogate_seed : int
        Seed of the surrogate disturbance of ``J_u`` and ``J_S`` (one per trial).
    body, filt, bounds : mapping, optional
        Overrides (see :func:`model`).
    sdf_lag_step, sdf_max_lag : float
        Lag spacing and upper limit τ (s) of the J_S integral (the paper: τ = 10 s).
    cop_offset : bool or "auto"
        Identify the mean COP position ``cop_offset`` (m) as a parameter.  ``"auto"``: when
        some trial's mean COP is more than :data:`OFFSET_AUTO` from 0 (a force plate's
        COP is about the plate's origin, the model's about the ankle), not for the
        formulations with a known disturbance.
    fit_disturbance : bool
        ``MAP``/``MAP-OM`` only: the disturbance filter's ``A`` and ``B`` are parameters.
        The path density of the disturbance then carries the Jacobian of the map from the
        white noise to T_d: x_k = (B·T_d' + T_d)/A, so each held sample adds
        log(A/B) (+ a constant) to the negative log-density.  Without it the noise prior
        alone would be minimised by A → ∞.  Use it (with ``bounds="wide"``) on real
        subjects, whose sway intensity is not the paper's subject's.
    """
    trials = [trials] if isinstance(trials, co.Trial) else list(trials)
    means = [float(np.nanmean(t["cop"])) for t in trials if "cop" in t]
    if cop_offset == "auto":
        cop_offset = bool(means) and max(abs(v) for v in means) > OFFSET_AUTO
    elif not isinstance(cop_offset, bool):
        raise co.ProblemError(f"cip: cop_offset must be True, False or 'auto', got {cop_offset!r}")
    have_td = all("disturbance" in t for t in trials)
    formulation = formulation or ("known" if have_td else "MAP-OM")
    if formulation not in FORMULATIONS:
        raise co.ProblemError(f"cip: formulation must be one of {', '.join(FORMULATIONS)}, got {formulation!r}")
    if not (np.isfinite(cop_noise) and cop_noise > 0):
        raise co.ProblemError(f"cip: cop_noise must be > 0 (it sets the fit weight 1/σ²), got {cop_noise!r}")
    if formulation == "known" and not have_td:
        missing = [t.name for t in trials if "disturbance" not in t]
        raise co.ProblemError(f"cip formulation 'known' needs a 'disturbance' column; missing in {', '.join(missing)}")
    fit = {"cop": 1.0 / cop_noise**2}
    if formulation in ("J_u", "J_S"):
        # the paper's §4.1: a disturbance of the right statistics, not the one that acted
        new = []
        for i, t in enumerate(trials):
            dt = float(np.median(np.diff(t.time)))
            td = surrogate_disturbance(t.num_samples, dt, surrogate_seed + i, filt)
            new.append(co.Trial(t.time, {"cop": t["cop"], "disturbance": td}, name=t.name))
        trials = new
    kind = {"known": "known", "J_u": "known", "J_S": "known", "J_T": "rate", "MAP": "filtered",
            "MAP-OM": "filtered"}[formulation]
    if fit_disturbance and formulation not in ("MAP", "MAP-OM"):
        raise co.ProblemError(f"cip: fit_disturbance needs formulation 'MAP' or 'MAP-OM', got {formulation!r}")
    offset = float(np.mean(means)) if cop_offset and kind == "filtered" else None
    mdl = model(kind, body=body, filt=filt, bounds=bounds, cop_offset=offset, fit_disturbance=fit_disturbance)
    prob = co.Problem(mdl, trials, fit={} if formulation == "J_S" else fit, name="cip")
    _b, _f = _body(body, filt)
    if formulation == "J_S":
        prob.add_trajectory_objective(sdf_objective(max_lag=sdf_max_lag, lag_step=sdf_lag_step), ["cop"], name="J_S")
    elif formulation == "J_T":
        dt = float(np.median(np.diff(trials[0].time)))
        r = mdl.variable("disturbance_rate").symbol
        prob.add_regularization(r, weight=dt, integral=False, name="J_T")
    elif formulation in ("MAP", "MAP-OM"):
        x = mdl.variable("noise").symbol
        prob.add_regularization(x, weight=1.0, integral=False, name="white_noise_prior")
        if formulation == "MAP-OM":
            prob.add_onsager_machlup()
        if fit_disturbance:
            amp, tau = mdl.variable("A").symbol, mdl.variable("B").symbol
            prob.add_objective(ca.log(amp) - ca.log(tau), integral=False, name="noise_jacobian")
    w = mdl.variable("sway_integral").symbol
    for i, t in enumerate(prob.trials):
        prob.add_point_constraint(w, t.time[0], 0.0, 0.0, trial=i, name="integral_starts_at_zero")
        if offset is not None:  # the start is built about the ankle
            t = co.Trial(t.time, {"cop": t["cop"] - offset}, name=t.name, missing=t.missing)
        guess = initial_trajectories(t, body=body, filt=filt)
        for name in mdl.element_names("state") + mdl.element_names("free_input"):
            prob.set_guess(name, (lambda times, tt=t.time, y=guess[name]: np.interp(times, tt, y)), trial=i)
    return prob


def jt_inverse_dynamics(trial: co.Trial, *, cutoff: float = 0.5, body: Mapping[str, float] | None = None,
                        bounds: Mapping[str, tuple] | str | None = None) -> dict:
    """The paper's J_T procedure (§2.3): COM from the Butterworth-filtered COP (Benda et al.
    1994), T_d by inverse dynamics (eq. 18), gains minimising ½∫T_d'² dt (eq. 19).

    T_d' = I u''' + K_D u'' + (K_P − m g h) u' + K_I u is linear in the gains, so the
    minimiser the paper approached by steepest descent is a bounded linear least-squares
    problem, solved here exactly.  ``cutoff`` (Hz) of the 4th-order zero-phase filter is
    not given in the paper; 0.5 Hz is our choice (the COP→COM corner is 0.41 Hz).

    Returns
    -------
    dict with ``parameters``, ``objective`` (J_T, N²·m²/s), ``disturbance`` (N·m) and
    ``sway`` (rad).
    """
    b, _ = _body(body)
    rng = gain_bounds(bounds, body)
    dt = float(np.median(np.diff(trial.time)))
    u = lowpass(trial["cop"], dt, cutoff) / b["h"]
    du = derivative(u, dt)
    d2u = derivative(u, dt, order=2)
    d3u = derivative(d2u, dt)
    mgh = b["m"] * b["g"] * b["h"]
    q = np.full(u.size, dt)  # rectangle rule, as J = ½ Σ Ṫ_d² dt
    sw = np.sqrt(q)
    Amat = np.column_stack([du, u, d2u]) * sw[:, None]  # columns KP, KI, KD
    rhs = -(b["I"] * d3u - mgh * du) * sw
    scale = np.array([_SCALES[k] for k in GAINS])
    lo = np.array([rng[k][0] for k in GAINS]) / scale
    hi = np.array([rng[k][1] for k in GAINS]) / scale
    sol = scipy.optimize.lsq_linear(Amat * scale, rhs, bounds=(lo, hi), method="bvls")
    gains = dict(zip(GAINS, (sol.x * scale).tolist()))
    w = cumulative_integral(u, dt)
    td = b["I"] * d2u + gains["KD"] * du + (gains["KP"] - mgh) * u + gains["KI"] * w
    objective = 0.5 * float(np.sum((Amat @ (sol.x * scale) - rhs) ** 2))
    return {"parameters": gains, "objective": objective, "disturbance": td, "sway": u}


#: Controller variants of :func:`ml_model`: name -> (integral term, feedback delay).  ``"PD"``: the PID
#: without its integral term (K_I = 0, the PID's estimate on the shipped BDS trials: 0–0.5 N·m/(rad·s)
#: with standard errors of 0.7–7, ``benchmarks/real_sway_heldout.py``), without the integral state
#: whose initial value the filter can only learn slowly.
CONTROLLERS = {"PID": (True, False), "PD": (False, False), "PD-delay": (False, True), "PID-delay": (True, True)}
#: Bounds of the feedback delay τ (s) and of the COP measurement noise σ (m) in :func:`ml_model`.
#: The delay's lower bound keeps the Padé states' poles (≈ 12/τ² rad²/s²) from making the matrix
#: exponential needlessly stiff; quiet-standing feedback delays are 0.1-0.2 s (Peterka 2002).
DELAY_RANGE = (0.02, 0.5)
SIGMA_RANGE = (1e-7, 1e-2)
#: In the sway models the COP noise σ starts at the record's own noise floor (:func:`noise_floor`) and
#: is sought down to this fraction of it (two decades: room for a record whose floor is not white
#: noise), up to :data:`SIGMA_RANGE`'s upper end.
SIGMA_BELOW_FLOOR = 1e-2
#: The top fraction of the frequencies up to Nyquist whose median spectral level bounds σ from above
#: in a record written at full precision (:func:`noise_floor`).
FLOOR_BAND = 0.4


def noise_floor(cop, dt: float) -> tuple[float, str]:
    """Where the sway models' COP noise σ (m) starts, from the record ``cop`` (m) sampled every
    ``dt`` s, and how it was found.

    A record written with a fixed number of decimals carries the rounding error of its quantum δ,
    white with SD δ/√12 (:func:`colloc.signals.rounding_sd`): no white measurement noise of the
    record is smaller (the BDS files' COP in cm with six decimals: δ = 1e-8 m, 2.9 nm, where their
    spectrum is flat above 30 Hz).  A record at full precision: the level of its spectrum over the
    top :data:`FLOOR_BAND` of the frequencies, √(median one-sided Welch PSD · f_s/2), an upper bound
    of a white noise's SD (the noise's one-sided density is 2σ²·dt)."""
    from colloc.signals import rounding_sd

    y = np.asarray(cop, dtype=float)
    y = y[np.isfinite(y)]
    floor = rounding_sd(y)
    if np.isfinite(floor) and floor > 0:
        return float(floor), f"the rounding noise δ/√12 of the record's resolution δ = {floor * np.sqrt(12):.3g} m"
    from scipy.signal import welch

    f, p = welch(y - y.mean(), fs=1.0 / dt, nperseg=min(256, y.size))
    level = float(np.sqrt(np.median(p[f >= (1.0 - FLOOR_BAND) * f[-1]]) / (2.0 * dt)))
    return level, f"the record's spectral level over the top {FLOOR_BAND:.0%} of its frequencies (unrounded record)"


#: Noise models of :func:`ml_model`: ``"paper"`` (the disturbance filter driven by unit white
#: noise held over each sample, amplitude ``A``; the state starts at rest, as the generator's);
#: ``"sway"`` (for real records: the disturbance's white-noise intensity
#: ``q_d`` in continuous time, discretised exactly, so the same at any sample rate; the recording's
#: low-pass as two second-order Butterworth sections at a fitted cut-off ``f_c``; a diffuse initial
#: state, nothing at rest by assumption); ``"sway-held"`` (the same, but the noise held over each
#: sample with variance q_d²/dt: the zero-order-hold approximation, whose q_d changes with the sample
#: rate) and ``"sway-lp"`` (the torque noise through a first-order lag ``tau_m`` before the
#: disturbance filter, and the recording's own low-pass fixed, :data:`RECORDING_LOWPASS`, not fitted;
#: the default with a body: with σ at the records' rounding floor its innovations have SD ≈ 1 and it
#: predicts the held-out half of the shipped trials 0.1 s ahead within 0.1–0.3 nat of an AR(20), where
#: ``"sway"``, whose shallower low-pass leaves σ on its bound, is 0.5–0.9 nat short,
#: ``benchmarks/README.md``).
NOISE_MODELS = ("paper", "sway", "sway-held", "sway-lp")
#: Bounds of the sway noise models' parameters: ``q_d`` (N·m·√s, the square root of the driving
#: noise's two-sided spectral density in N²·m²/Hz), ``f_c`` (Hz, not in ``"sway-lp"``), ``tau_m`` (s,
#: ``"sway-lp"`` only; its lower bound is an answer, "no lag", not a limit of the search).
SWAY_RANGES = {"q_d": (1e-2, 1e4), "tau_m": (1e-3, 2.0), "f_c": (0.5, 45.0)}
#: The low-pass the BDS records went through (Santos & Duarte 2016; the data set's PhysioNet
#: description: "low-pass filtered at 10 Hz"): a 4th-order Butterworth run forwards and backwards
#: (zero lag), so the power gain is 1/(1 + (f/10 Hz)⁸)².  The description gives the cut-off, not the
#: order; the order is the records' own: the median Welch spectrum of the twelve shipped trials
#: (1024-sample segments) from 3 to 27 Hz is fitted by a power law times this gain with an RMS error
#: of 1.6 dB at 10 Hz (1.0 dB with the cut-off free, at 11.2 Hz), against 6.1 dB for a 2nd-order
#: zero-lag Butterworth; above 30 Hz the records are at the floor of their six-decimal cm
#: rounding (−188 dB re m²/Hz, σ ≈ 3 nm).  A Gaussian record's likelihood depends on its spectrum
#: only, so the causal cascade of two such filters (:data:`LOWPASS_ZETA_LP`) stands exactly for it.
RECORDING_LOWPASS = {"cutoff_hz": 10.0, "order": 4, "zero_lag": True}
#: Damping ratios of the ``"sway"`` model's low-pass as two second-order sections at the fitted
#: ``f_c``: twice the same second-order Butterworth (ζ = 1/√2), the gain of a second-order Butterworth
#: run forwards and backwards.  (The BDS records' spectrum falls faster: :data:`RECORDING_LOWPASS`.)
LOWPASS_ZETA = (float(np.sqrt(0.5)), float(np.sqrt(0.5)))
#: Damping ratios of the ``"sway-lp"`` model's fixed low-pass: a 4th-order Butterworth (ζ = cos(π/8),
#: cos(3π/8)) twice, at :data:`RECORDING_LOWPASS`'s cut-off.
LOWPASS_ZETA_LP = (float(np.cos(np.pi / 8)), float(np.cos(3 * np.pi / 8))) * 2
#: Where the sway models' noise parameters start: a disturbance of 12 N·m·√s (the ``"paper"``
#: model's fits of the shipped BDS subject, A ≈ 120 N·m at 100 Hz, are q_d = A·√dt ≈ 12), a lag of
#: 0.1 s, the data set's 10 Hz low-pass and a COP noise of 20 µm.
SWAY_START = {"q_d": 12.0, "sigma": 2e-5, "f_c": 10.0, "tau_m": 0.1}
#: Prior SDs of the sway models' diffuse initial state, far above quiet standing's: sway angle
#: (rad), its rate (rad/s), its integral (rad·s), the disturbance torque and the lagged torque
#: noise (N·m), the Padé states (N·m, N·m/s) and the low-pass states (m, m/s).
DIFFUSE_SD = {"u": 0.2, "v": 1.0, "w": 0.5, "td": 200.0, "md": 200.0, "q": 2000.0, "qd": 2e4,
              **{f"f{i}": 0.2 for i in range(1, 5)}, **{f"f{i}d": 20.0 for i in range(1, 5)}}


def _sway_form(noise: str) -> dict:
    """The structure of a sway noise model: low-pass cut-off (None: the parameter ``f_c``), its
    sections' damping ratios, the torque noise's lag, and the form of the noise."""
    if noise == "sway-lp":
        return {"lowpass_hz": RECORDING_LOWPASS["cutoff_hz"], "zeta": LOWPASS_ZETA_LP, "lag": True,
                "noise": "continuous"}
    return {"lowpass_hz": None, "zeta": LOWPASS_ZETA, "lag": False,
            "noise": "held" if noise == "sway-held" else "continuous"}


def ml_model(controller: str = "PID", *, dt: float, body: Mapping[str, float] | None = None,
             filt: Mapping[str, float] | None = None, fit_disturbance: bool = False, noise: str = "paper"):
    """The CIP as a :class:`colloc.kalman.LinearGaussianModel` (COP output, noise ``sigma``).

    ``controller`` (:data:`CONTROLLERS`): ``"PID"`` (the contract's model), ``"PD"``, ``"PD-delay"`` or
    ``"PID-delay"``: the control torque acts after a feedback delay τ (parameter ``tau``, s),
    T_c(t) = K_P u(t−τ) + K_I ∫u(t−τ) + K_D u'(t−τ).  A pure delay has no finite state, so it
    enters as its (2, 2) Padé approximant e^{−sτ} ≈ (1 − sτ/2 + s²τ²/12)/(1 + sτ/2 + s²τ²/12)
    (two extra states), exact in gain; its phase lag falls short of ωτ by 0.2° at 1 Hz with
    τ = 0.2 s (1.5° at τ = 0.3 s; 5° at 2 Hz, τ = 0.2 s: computed from the approximant's phase
    −2 atan((ωτ/2)/(1 − (ωτ)²/12))), small where quiet-standing sway has its power (< 1 Hz).
    The COP is u_cop = (T_c(t−τ) − T_d)/(m g) (the equation of motion).
    States: u, u', [∫u (PID only)], T_d, [the two Padé states].
    ``fit_disturbance``: the filter's ``A`` and ``B`` are parameters.  Parameter order:
    gains (``KP``, [``KI``], ``KD``), [``tau``], [``A``, ``B``], ``sigma``.

    ``noise="sway"`` (:data:`NOISE_MODELS`): T_d + B·T_d' = w(t) with w continuous white noise of
    intensity ``q_d`` (N·m·√s: E w(t)w(s) = q_d² δ(t − s); q_d² is w's two-sided power spectral
    density, N²·m²/Hz, and 2·q_d² its one-sided one), discretised exactly by Van Loan's integral
    (``LinearGaussianModel(noise="continuous")``), so that q_d does not depend on the sample rate;
    stationary SD of T_d q_d/√(2B); B beyond the record is a random-walk torque), the measured COP
    the model's through a low-pass at ``f_c`` (two second-order Butterworth sections,
    :data:`LOWPASS_ZETA`), and a diffuse initial state (SDs :data:`DIFFUSE_SD`).  Parameters:
    gains, [``tau``], ``q_d``, ``B``, ``f_c``, ``sigma``; ``fit_disturbance`` is implied.
    ``noise="sway-held"``: the same model with w held over each sample at variance q_d²/dt
    (``LinearGaussianModel(noise="held")``), the zero-order-hold approximation, kept for comparison
    (``benchmarks/README.md``, real_sway sections).

    ``noise="sway-lp"``: T_d + B·T_d' = m(t), m + τ_m·m' = w(t), w as above: the lag ``tau_m`` (s)
    makes the torque smooth (its spectrum falls as f⁻⁴ above 1/(2π τ_m), as the records' does below
    their low-pass: f^−4.7 from 3 to 27 Hz), where a torque driven by white noise directly falls as
    f⁻²; and the measured COP is the model's through the recording's own low-pass, fixed
    (:data:`RECORDING_LOWPASS`, sections :data:`LOWPASS_ZETA_LP`), so that no cut-off is fitted.
    Parameters: gains, [``tau``], ``q_d``, ``B``, ``tau_m``, ``sigma``.  Four more states than
    ``"sway"`` (13 with PID): about three times its CPU.
    """
    if noise not in NOISE_MODELS:
        raise co.ModelError(f"cip ml_model: noise must be one of {', '.join(NOISE_MODELS)}, got {noise!r}")
    sway = noise.startswith("sway")
    fit_disturbance = fit_disturbance or sway
    from colloc import kalman

    if controller not in CONTROLLERS:
        raise co.ModelError(f"cip ml_model: controller must be one of {', '.join(CONTROLLERS)}, got {controller!r}")
    integral, delay = CONTROLLERS[controller]
    b, f = _body(body, filt)
    I, m, g, h = b["I"], b["m"], b["g"], b["h"]
    form = _sway_form(noise) if sway else {"lowpass_hz": None, "zeta": (), "lag": False, "noise": "held"}
    fixed_fc, zetas, muscle = form["lowpass_hz"], tuple(form["zeta"]), bool(form["lag"])
    names = ["KP"] + (["KI"] if integral else []) + ["KD"] + (["tau"] if delay else []) + \
        (["q_d", "B"] + (["tau_m"] if muscle else []) + ([] if fixed_fc else ["f_c"]) if sway
         else ["A", "B"] if fit_disturbance else []) + ["sigma"]

    sections = [(f"f{i + 1}", f"f{i + 1}d") for i in range(len(zetas))] if sway else []
    states = ["u", "v"] + (["w"] if integral else []) + ["td"] + (["md"] if muscle else []) + \
        (["q", "qd"] if delay else []) + [x for pair in sections for x in pair]
    at = {name: i for i, name in enumerate(states)}
    n = len(states)

    def row(**coefficients):
        r = ca.SX.zeros(1, n)
        for name, value in coefficients.items():
            r[at[name]] = value
        return r

    def matrices(theta):
        th = {k: theta[i] for i, k in enumerate(names)}
        A, B = (th["A"], th["B"]) if fit_disturbance and not sway else (f["A"], f["B"])
        if sway:  # w = q_d·x(t), x continuous white noise of unit density (discretised exactly), or
            # (sway-held) the held unit sample x_k standing for w's average over the interval: variance q_d²/dt
            A, B = (th["q_d"] / np.sqrt(dt) if form["noise"] == "held" else th["q_d"]), th["B"]
        tc = row(u=th["KP"], v=th["KD"], **({"w": th["KI"]} if integral else {}))  # T_c(t) = tc · s
        # Padé (2, 2): q'' = (12/τ²)(T_c − q − (τ/2) q'); the delayed torque is T_c − τ q'
        torque = tc - row(qd=th["tau"]) if delay else tc
        Amat = ca.SX.zeros(n, n)
        Amat[at["u"], :] = row(v=1)
        Amat[at["v"], :] = (row(u=m * g * h, td=1) - torque) / I
        if integral:
            Amat[at["w"], :] = row(u=1)
        G = ca.SX.zeros(n, 1)
        if muscle:  # the torque noise through a first-order lag: T_d + B·T_d' = m, m + τ_m·m' = w
            Amat[at["td"], :] = row(td=-1 / B, md=1 / B)
            Amat[at["md"], :] = row(md=-1 / th["tau_m"])
            G[at["md"], 0] = A / th["tau_m"]
        else:
            Amat[at["td"], :] = row(td=-1 / B)
            G[at["td"], 0] = A / B
        if delay:
            Amat[at["q"], :] = row(qd=1)
            Amat[at["qd"], :] = 12 / th["tau"]**2 * (tc - row(q=1, qd=th["tau"] / 2))
        C = (torque - row(td=1)) / (m * g)
        if sway:  # the recording's low-pass (RECORDING_LOWPASS, or at f_c)
            wc = 2 * np.pi * (fixed_fc or th["f_c"])
            source = C
            for (x, xd), zeta in zip(sections, zetas):
                Amat[at[x], :] = row(**{xd: 1})
                Amat[at[xd], :] = wc**2 * (source - row(**{x: 1})) - 2 * zeta * wc * row(**{xd: 1})
                source = row(**{x: 1})
            C = source
        return Amat, G, C, ca.reshape(th["sigma"]**2, 1, 1)

    initial = {"initial_covariance": np.diag([DIFFUSE_SD[k] ** 2 for k in states]),
               "noise": form["noise"]} if sway else {}
    return kalman.LinearGaussianModel(names, matrices, dt=dt, name="cip_" + controller.replace("-", "_")
                                      + ("_sway" if sway else ""), **initial)


def _ml_start(lgm, *, rng: Mapping[str, tuple], gains0: Mapping[str, float] | None, filt, cop_noise, tau0, noise):
    """Start values and search ranges of the Kalman ML parameters of ``lgm`` (gains in ``rng``)."""
    _, f = _body(None, filt)
    start = {k: _guess(k, rng[k]) if gains0 is None else float(gains0[k]) for k in GAINS}
    start.update(tau=tau0, A=f["A"], B=f["B"], sigma=COP_NOISE if cop_noise is None else cop_noise,
                 q_d=SWAY_START["q_d"], f_c=SWAY_START["f_c"], tau_m=SWAY_START["tau_m"])
    if noise.startswith("sway") and cop_noise is None:
        start["sigma"] = SWAY_START["sigma"]
    bnds = {k: rng[k] for k in GAINS}
    bnds.update(tau=DELAY_RANGE, sigma=SIGMA_RANGE, **FILTER_RANGES, **SWAY_RANGES)
    names = lgm.parameter_names
    return {k: start[k] for k in names}, {k: bnds[k] for k in names}


def ml_estimate(trial: co.Trial, *, cop_noise: float | None = COP_NOISE, gains0: Mapping[str, float] | None = None,
                body: Mapping[str, float] | None = None, filt: Mapping[str, float] | None = None,
                bounds: Mapping[str, tuple] | str | None = None, controller: str = "PID",
                fit_disturbance: bool = False, tau0: float = 0.1, center: bool = False,
                hessian: str = "limited-memory", max_iter: int = 200, optimizer: str = "lbfgsb",
                compiled: bool = True, noise: str = "paper"):
    """Exact maximum-likelihood gains by the Kalman-filter prediction-error method.

    The state (u, u', ∫u, T_d[, Padé states]) starts at rest (as the generator does); the COP
    noise standard deviation is ``cop_noise`` or, when ``None``, estimated with the gains.
    ``controller``, ``fit_disturbance``: see :func:`ml_model`; ``tau0`` is the delay's start.
    ``optimizer``, ``compiled``, ``hessian``, ``max_iter``: see :func:`colloc.kalman.maximum_likelihood`
    (default: L-BFGS-B with the compiled exact gradient, then Newton steps; ``hessian``
    applies to ``optimizer="ipopt"``).
    ``center``: subtract the record's mean COP first (a force plate's origin is not the
    ankle; the mean is the estimate of that offset, not a parameter of the fit).
    Returns the :class:`colloc.kalman.MLResult`.
    """
    from colloc import kalman

    dt = float(np.median(np.diff(trial.time)))
    lgm = ml_model(controller, dt=dt, body=body, filt=filt, fit_disturbance=fit_disturbance, noise=noise)
    start, bnds = _ml_start(lgm, rng=gain_bounds(bounds, body), gains0=gains0, filt=filt, cop_noise=cop_noise,
                            tau0=tau0, noise=noise)
    fixed = None if cop_noise is None else {"sigma": float(cop_noise)}
    y = trial["cop"] - (np.nanmean(trial["cop"]) if center else 0.0)
    return kalman.maximum_likelihood(lgm, y[:, None], list(start.values()), bounds=bnds, fixed=fixed,
                                     hessian=hessian, max_iter=max_iter, optimizer=optimizer, compiled=compiled,
                                     missing=bool(np.isnan(y).any()))


#: Largest COP excursion (m) accepted from a quiet-standing record: a foot is about 0.25 m long
#: (Winter 2009: 0.152 × height), so a wider COP is in other units or not quiet standing.
COP_SPAN_MAX = 0.3


def _on_one_grid(trial: co.Trial) -> co.Trial:
    """The trial on one evenly spaced time grid, for the Kalman likelihood
    (:func:`colloc.on_one_grid`), with the checks of a quiet-standing COP:
    at least 100 measured samples and a span under :data:`COP_SPAN_MAX` (else it is in cm or mm)."""
    cop = np.asarray(trial["cop"], dtype=float)
    measured = int(np.isfinite(cop).sum())
    span = float(np.nanmax(cop) - np.nanmin(cop)) if measured else 0.0
    if span > COP_SPAN_MAX:
        raise co.OptionsError(f"--method kalman-ml: the COP of trial '{trial.name}' spans {span:.4g} m; a COP "
                              f"under the feet spans less than {COP_SPAN_MAX:g} m in quiet standing: is it in cm "
                              "or mm? (--unit cop=cm)")
    if measured < 100:
        raise co.OptionsError(f"--method kalman-ml: trial '{trial.name}' has {measured} measured COP samples; "
                              "at least 100 are needed")
    return co.on_one_grid(trial, ["cop"], who="--method kalman-ml")


#: Where quiet-standing gains are plausible: the proportional gain must exceed the gravitational
#: stiffness m·g·h for the body to stay up, and fits of the independent-channel model put it near
#: 1.2–2 m·g·h (Peterka 2002, J Neurophysiol 88:1097; Maurer & Peterka 2005, J Neurophysiol 93:189),
#: with a feedback delay of 0.1–0.2 s and K_D/K_P of a few tenths of a second.  The ranges checked
#: (a warning outside) are the wider ones of the project's acceptance for real records.
PLAUSIBLE = {"KP_over_mgh": (1.0, 3.0), "tau": (0.05, 0.3), "KD_over_KP": (0.2, 0.65)}
#: The second start of a real subject's fit (:func:`stochastic_problem`): gains as multiples of
#: m·g·h (K_P 1.3, K_D/K_P 0.3 s, little integral action), and a disturbance of a few seconds
#: whose stationary torque SD q_d/√(2B) is ≈ 2.5 N·m (the size found on the shipped records).
SECOND_START_PER_MGH = {"KP": 1.3, "KI": 0.02, "KD": 0.39}
#: In the sway noise models the second start's K_I is 5e-4·m·g·h instead (≈ 0.2 N·m/(rad·s) for the
#: shipped subject, whose PID fits give K_I of 0–0.5 with standard errors of 0.7–7): from
#: 0.02·m·g·h the search crossed a flat K_I–q_d–B ridge where the integral loop's slow pole keeps the
#: filter's gain changing over the whole record, so that the steady-state likelihood needs its
#: longest transient there (``sway-lp``, BDS00001 and BDS00002, 60 s: 24.9 and 20.4 s of CPU for the
#: whole fit against 5.7 and 5.8 s, the same estimates within 0.03 standard errors;
#: benchmarks/README.md, kalman_speed.py).  The ``"paper"`` model keeps 0.02 (from 5e-4 its fit of
#: BDS00001's first 30 s fails).
SWAY_SECOND_START_KI_PER_MGH = 5e-4
#: A third start of a real subject's fit in the sway noise models, in the other family of optima: a
#: stiff, lightly damped loop (K_P 2.3·m·g·h, K_D/K_P 0.1 s) with a slow disturbance (B 10 s).  The
#: second start lies in the soft, well damped family with a fast disturbance (K_D/K_P 0.3 s, B 2 s),
#: and which family a window's search reaches depended on the window: BDS00001 (PD, ``sway-lp``)
#: reached the soft family from 2.5–32.5 s and the stiff one from 0–30 s, while on both windows the
#: stiff family's NLL is lower by 10.5 and 11.8 (benchmarks/README.md, real_sway_stability.py).
THIRD_START_PER_MGH = {"KP": 2.3, "KI": 5e-4, "KD": 0.23}
THIRD_START_NOISE = {"B": 10.0, "q_d": 10.0}
SECOND_START_NOISE = {"B": 2.0, "q_d": 5.0}
#: A record shorter than this many closed-loop time constants (≈ B or 2 s) per free parameter is
#: too short for the parameters asked: the Fisher information is then that of a few sway cycles.
SHORT_RECORD_S = 20.0


def plausibility(theta: Mapping[str, float], mgh: float) -> list[dict]:
    """Warnings for gains outside :data:`PLAUSIBLE` (``code`` ``implausible``)."""
    found = {"KP_over_mgh": theta["KP"] / mgh, "KD_over_KP": theta["KD"] / theta["KP"]}
    if "tau" in theta:
        found["tau"] = theta["tau"]
    text = {"KP_over_mgh": ("K_P/(m·g·h)", ""), "KD_over_KP": ("K_D/K_P", " s"), "tau": ("τ", " s")}
    out = []
    for k, v in found.items():
        lo, hi = PLAUSIBLE[k]
        if not lo <= v <= hi:
            label, unit = text[k]
            out.append({"code": "implausible", "parameters": [k],
                        "message": f"{label} = {v:.3g}{unit} is outside the physiological range [{lo:g}, {hi:g}]{unit} "
                                   "of quiet standing (cip.PLAUSIBLE): the model may be describing something else"})
    return out


#: ``colloc identify cip --method kalman-ml``: methods this problem runs itself (not a transcription).
OWN_METHODS = ("kalman-ml",)


def default_method(trials: Sequence[co.Trial], options: Mapping) -> str | None:
    """``colloc identify cip`` without ``--method``: the Kalman ML for one COP-only trial of a
    subject given by ``--height/--mass`` (a real record: the collocation MAP-OM with a fixed COP
    noise is not honest there), else the CLI's default transcription."""
    if options.get("body") is not None and len(trials) == 1 and "disturbance" not in trials[0]:
        return "kalman-ml"
    return None


def identify_method(trials: Sequence[co.Trial], *, method: str = "kalman-ml", guess: Mapping[str, float] | None = None,
                    bounds: Mapping[str, tuple] | None = None, max_iter: int = 500, print_level: int = 0,
                    body: Mapping[str, float] | None = None, controller: str = "PID",
                    noise: str | None = None) -> co.Result:
    """``colloc identify cip --method kalman-ml [--controller PID|PD|PD-delay|PID-delay]``: the exact
    Kalman maximum likelihood of one COP trial, ``co.solve(stochastic_problem(...), co.KalmanML())``.

    With a ``body`` (``--height/--mass``: a real subject) the gains are bounded by
    :data:`WIDE_RANGES_PER_MGH` and the disturbance is fitted; without one, the paper's subject,
    Table 1 ranges and filter.  ``guess``/``bounds`` concern the gains.  ``noise``
    (``--noise``): :data:`NOISE_MODELS`, default ``"paper"``.  See :func:`stochastic_problem`.
    """
    if method not in OWN_METHODS:
        raise co.OptionsError(f"--method {method}: cip runs {', '.join(OWN_METHODS)} itself")
    if controller not in CONTROLLERS and controller != "auto":
        raise co.OptionsError(f"--controller {controller}: one of {', '.join(CONTROLLERS)} or auto")
    if noise is not None and noise not in NOISE_MODELS:
        raise co.OptionsError(f"--noise {noise}: one of {', '.join(NOISE_MODELS)}")
    if len(trials) != 1:
        raise co.OptionsError(f"--method kalman-ml fits one trial at a time, got {len(trials)} --data files "
                              "(colloc batch fits many)")
    for option, given in (("--guess", guess), ("--bounds", bounds)):
        unknown = [k for k in (given or {}) if k not in GAINS]
        if unknown:
            raise co.OptionsError(f"{option}: {', '.join(unknown)} not allowed with --method kalman-ml; "
                                  f"it takes the gains {', '.join(GAINS)}")
    method = co.KalmanML(max_iter=max_iter)
    # a real subject's record: the noise model of the BDS records' own low-pass (it predicts held-out
    # sway best among the noise models: benchmarks/real_sway_heldout.py, benchmarks/README.md)
    noise = noise or ("sway-lp" if body is not None else "paper")
    if controller != "auto":
        sp = stochastic_problem(trials[0], controller=controller, body=body, noise=noise, guess=guess, bounds=bounds)
        return co.solve(sp, method, throw=False)
    return select_controller(trials[0], body=body, noise=noise, guess=guess, bounds=bounds, method=method)


def select_controller(trial: co.Trial, *, body: Mapping[str, float] | None = None, noise: str = "sway-lp",
                      guess: Mapping[str, float] | None = None, bounds: Mapping[str, tuple] | None = None,
                      method=None, candidates: Sequence[str] = tuple(CONTROLLERS)) -> co.Result:
    """``--controller auto``: each controller of ``candidates`` fitted on the first half of the
    record and scored on the second (:func:`colloc.select_model`: held-out log score at 0.1 and
    0.5 s against persistence and an AR(20)); the best that succeeded is fitted on the whole
    record.  The comparison table is printed under the result's table
    (``info["model_selection"]``)."""
    trial = _on_one_grid(trial)
    make = {c: (lambda tr, c=c: stochastic_problem(tr, controller=c, body=body, noise=noise, guess=guess,
                                                   bounds=bounds)) for c in candidates}
    import sys

    selection = co.select_model(make, trial, method=method,
                                progress=lambda line: print(line, file=sys.stderr, flush=True))
    chosen = selection.best or "PID"
    result = co.solve(make[chosen](trial), method or co.KalmanML(), throw=False)
    result.notes = [*selection.text().splitlines(), *result.notes]
    if selection.best is None:
        result.warnings.insert(0, {"code": "no_candidate", "parameters": [],
                                   "message": "no controller's fit on the first half succeeded; PID is shown"})
    result.info["model_selection"] = selection.to_info()
    return result


def stochastic_problem(trial: co.Trial, *, controller: str = "PID", body: Mapping[str, float] | None = None,
                       noise: str = "paper", guess: Mapping[str, float] | None = None,
                       bounds: Mapping[str, tuple] | None = None) -> co.StochasticProblem:
    """The CIP of one COP record as a :class:`colloc.StochasticProblem` (the model :func:`ml_model`).

    The COP noise ``sigma`` is always fitted; the record's mean is the plate-to-ankle offset
    ``cop_offset`` (subtracted, as the plate's origin is not the ankle).  ``success`` needs the
    library's verdict: converged, a positive definite information matrix for the parameters off
    their bounds, no parameter on a search-range bound, and a stable identified closed loop.
    Gains outside :data:`PLAUSIBLE` and a record shorter than :data:`SHORT_RECORD_S` are warned of.
    """
    trial = _on_one_grid(trial)
    real = body is not None
    b, _ = _body(body)
    rng = gain_bounds("wide" if real else None, body)
    for k, (lo, hi) in (bounds or {}).items():
        old = rng[k]
        rng[k] = (old[0] if lo is None else float(lo), old[1] if hi is None else float(hi))
    # a real subject's start: the paper's centre-normal gains scaled to this body's m·g·h
    ratio = b["m"] * b["g"] * b["h"] / (BODY["m"] * BODY["g"] * BODY["h"]) if real else 1.0
    gains0 = {k: float((guess or {}).get(k, min(max(CENTRE_NORMAL[k] * ratio, rng[k][0]), rng[k][1])))
              for k in GAINS}
    bad = [k for k in GAINS if not rng[k][0] <= gains0[k] <= rng[k][1]]
    if bad:
        raise co.OptionsError(f"--guess: {', '.join(bad)} outside its bounds {[rng[k] for k in bad]}")
    dt = float(np.median(np.diff(trial.time)))
    lgm = ml_model(controller, dt=dt, body=body, fit_disturbance=real, noise=noise)
    start, search = _ml_start(lgm, rng=rng, gains0=gains0, filt=None, cop_noise=None, tau0=0.1, noise=noise)
    if "f_c" in search:  # a cut-off above 0.9 of the Nyquist frequency is not seen in the samples
        search["f_c"] = (search["f_c"][0], min(search["f_c"][1], 0.45 / dt))
        start["f_c"] = min(start["f_c"], 0.5 * search["f_c"][1])
    floor, floor_source = noise_floor(trial["cop"], dt) if noise.startswith("sway") else (np.nan, "")
    if noise.startswith("sway"):  # σ from the record's own floor, not from a constant that suits one subject
        search["sigma"] = (SIGMA_BELOW_FLOOR * floor, max(SIGMA_RANGE[1], 10 * floor))
        start["sigma"] = floor
    mgh = b["m"] * b["g"] * b["h"]
    duration = float(trial.time[-1] - trial.time[0])
    # a real record's likelihood has two families of optima (a stiff loop with an integral gain
    # and a slow disturbance; a softer, better damped loop with a fast one): a second start in the
    # other (:data:`SECOND_START_PER_MGH`), and in the sway models a third in the stiff one
    # (:data:`THIRD_START_PER_MGH`), unless the user gave a guess
    second = []
    if real and not guess:
        point = {k: v * mgh for k, v in SECOND_START_PER_MGH.items() if k in lgm.parameter_names}
        if noise.startswith("sway") and "KI" in point:
            point["KI"] = SWAY_SECOND_START_KI_PER_MGH * mgh
        point.update({k: v for k, v in SECOND_START_NOISE.items() if k in lgm.parameter_names})
        second = [{k: min(max(v, search[k][0]), search[k][1]) for k, v in point.items()}]
        if noise.startswith("sway"):
            point = {k: v * mgh for k, v in THIRD_START_PER_MGH.items() if k in lgm.parameter_names}
            point.update({k: v for k, v in THIRD_START_NOISE.items() if k in lgm.parameter_names})
            second.append({k: min(max(v, search[k][0]), search[k][1]) for k, v in point.items()})

    def notes(theta):
        return [f"K_P/(m·g·h) {theta['KP'] / mgh:.3g} (m·g·h {mgh:.4g} N·m/rad; plausible "
                f"{PLAUSIBLE['KP_over_mgh'][0]:g}–{PLAUSIBLE['KP_over_mgh'][1]:g}) · K_D/K_P "
                f"{theta['KD'] / theta['KP']:.3g} s (plausible {PLAUSIBLE['KD_over_KP'][0]:g}–"
                f"{PLAUSIBLE['KD_over_KP'][1]:g} s)"
                + (f" · τ {theta['tau']:.3g} s (plausible {PLAUSIBLE['tau'][0]:g}–{PLAUSIBLE['tau'][1]:g} s)"
                   if "tau" in theta else "")] + integral_note(theta) + sigma_note(theta)

    def integral_note(theta):
        if "KI" not in theta or theta["KI"] > 1e-6 * mgh:
            return []
        return [(f"K_I {theta['KI']:.3g} N·m/(rad·s): on its lower bound 0, the stability limit: no integral "
                 "action (the PD controller is this model without the integral state)")]

    def sigma_note(theta):
        if not floor_source:
            return []
        return [f"COP noise σ {theta['sigma']:.3g} m, started at the record's floor {floor:.3g} m ({floor_source})"]

    def checks(theta):
        out = plausibility(theta, mgh)
        if duration < SHORT_RECORD_S:
            out.append({"code": "short_record", "parameters": [],
                        "message": f"the record is {duration:.3g} s long: under {SHORT_RECORD_S:g} s a quiet-standing "
                                   f"record holds a few sway cycles, too few for {len(lgm.parameter_names)} "
                                   "parameters; the standard errors are then unreliable"})
        return out

    def info(theta):
        return {"controller": controller, "noise_model": noise, "KP_over_mgh": theta["KP"] / mgh, "body": dict(b),
                "fit_disturbance": real, "gain_bounds": {k: list(v) for k, v in rng.items()},
                "plausible_ranges": {k: list(v) for k, v in PLAUSIBLE.items()},
                **({"cop_noise_floor": floor, "cop_noise_floor_source": floor_source} if floor_source else {})}

    unit = {"KP": "N·m/rad", "KI": "N·m/(rad·s)", "KD": "N·m·s/rad", "tau": "s", "A": "N·m", "B": "s",
            "q_d": "N·m·√s", "f_c": "Hz", "tau_m": "s", "sigma": "m", "cop_offset": "m", "cop": "m"}
    describe = {"KP": "proportional gain of the ankle torque", "KI": "integral gain of the ankle torque",
                "KD": "derivative gain of the ankle torque", "tau": "feedback delay of the ankle torque",
                "A": "amplitude of the disturbance filter", "B": "time constant of the disturbance filter",
                "q_d": "intensity of the white noise driving the disturbance torque (continuous time; "
                       "q_d² is its two-sided spectral density in N²·m²/Hz)",
                "f_c": "cut-off of the recording's low-pass (2nd-order Butterworth, zero lag)",
                "tau_m": "time constant of the first-order lag of the torque noise (T_d smooth above 1/(2π τ_m))",
                "sigma": "COP measurement noise (standard deviation)",
                "cop_offset": "mean COP position in the plate's frame (the record's mean; no standard error)"}
    # a white COP noise of (nearly) zero is an answer in a low-passed record, and so is a torque noise
    # without lag (tau_m on its lower bound); so, in the sway model,
    # is a disturbance time constant beyond any record's length (a random-walk torque); the other
    # bounds are where the fit looks
    # and, for a real subject, K_I = 0: the closed loop's characteristic polynomial
    # I s³ + K_D s² + (K_P − m g h) s + K_I has all roots in the left half-plane only if K_I > 0
    # (Routh–Hurwitz), so a K_I below 0 is an unstable loop and K_I = 0 its limit, "no integral
    # action": an answer, reported as one (the other parameters' standard errors are then conditional
    # on it); the PD controller is that model without the integral state
    physical = {"sigma": (True, False), **({"B": (False, True)} if noise.startswith("sway") else {}),
                **({"tau_m": (True, False)} if "tau_m" in lgm.parameter_names else {}),
                **({"KI": (True, False)} if real and "KI" in lgm.parameter_names else {})}

    def model_at(step):
        return ml_model(controller, dt=step, body=body, fit_disturbance=real, noise=noise)

    return co.StochasticProblem(model_at, trial, outputs=["cop"], start=start, starts=second, bounds=search,
                                physical=physical,
                                center=True, units=unit, descriptions=describe, notes=notes, checks=checks,
                                info=info, name="cip", label=controller)


def prediction_model(result, trial):
    """What a cip result predicts ``trial`` with (``colloc predict``): for ``kalman-ml`` its
    linear-Gaussian model (the controller, body and disturbance of the fit, the COP centred on
    the fit's ``cop_offset``); for a collocation fit, the problem on ``trial``."""
    if result.method not in OWN_METHODS:
        return problem([trial])
    from colloc import StochasticModel

    dt = float(np.median(np.diff(trial.time)))
    info = result.info
    lgm = ml_model(info.get("controller", "PID"), dt=dt, body=info.get("body"),
                   fit_disturbance=bool(info.get("fit_disturbance", False)), noise=info.get("noise_model", "paper"))
    theta = {k: result.parameters[k] for k in lgm.parameter_names}
    return StochasticModel(lgm, theta, "cop", float(result.parameters.get("cop_offset", 0.0)))
