"""Helpers for real quiet-standing records: where the COP noise starts (the record's noise
floor), the checks of a COP record for the Kalman likelihood, and the plausible ranges and second
start of a real subject's gains."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import colloc as co
from colloc.signals.noise import white_noise_floor

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
    of a white noise's SD (the noise's one-sided density is 2σ²·dt).  Both by
    :func:`colloc.signals.noise.white_noise_floor`."""
    floor = white_noise_floor(cop, dt, band=FLOOR_BAND)
    if floor.source == "rounding":
        return floor.sd, f"the rounding noise δ/√12 of the record's resolution δ = {floor.sd * np.sqrt(12):.3g} m"
    return floor.sd, f"the record's spectral level over the top {FLOOR_BAND:.0%} of its frequencies (unrounded record)"


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
#: Where a real subject's PID fit in the sway models starts K_I when it starts from the PD estimate
#: (the PD is this model at K_I = 0; ``StochasticProblem(nested=...)``): a small positive gain, so
#: that the search has a scale for it (the PID's K_I on the shipped trials: 0–0.5 N·m/(rad·s), standard
#: errors 0.7–7, so at this start the likelihood is within a fraction of a nat of the PD's).
NESTED_START_KI_PER_MGH = SWAY_SECOND_START_KI_PER_MGH
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
