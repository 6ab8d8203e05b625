"""The CIP as a linear-Gaussian model for the Kalman maximum likelihood: its controllers
(PID, PD, with a feedback delay), its noise models (the paper's, and the sway models of real
records with the recording's low-pass) and the direct estimate :func:`ml_estimate`."""

from __future__ import annotations

from collections.abc import Mapping

import casadi as ca
import numpy as np

import colloc as co

from .constants import COP_NOISE, FILTER_RANGES, GAINS, _body, _guess, gain_bounds

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
