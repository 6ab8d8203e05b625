"""The CIP of one COP record as a :class:`colloc.StochasticProblem` (the model of ``colloc identify
cip --method kalman-ml``): its bounds, starts, checks, notes and report."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import colloc as co

from .constants import BODY, CENTRE_NORMAL, GAINS, _body, gain_bounds
from .kalman_model import SIGMA_RANGE, _ml_start, ml_model
from .real import (
    NESTED_START_KI_PER_MGH,
    PLAUSIBLE,
    SECOND_START_NOISE,
    SECOND_START_PER_MGH,
    SHORT_RECORD_S,
    SIGMA_BELOW_FLOOR,
    SWAY_SECOND_START_KI_PER_MGH,
    THIRD_START_NOISE,
    THIRD_START_PER_MGH,
    _on_one_grid,
    noise_floor,
    plausibility,
)


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

    # a real subject's PID in the sway models: the PD fit (this model at K_I = 0) first, with its starts,
    # and the PID from its estimate (NESTED_START_KI_PER_MGH), not three PID searches from afar; with
    # --controller auto the PD's fit is the candidate's own (KalmanML keeps it).  Not PID-delay: from
    # PD-delay's estimate its fit failed on BDS00001's first 30 s and fell back to its own starts,
    # 15.4 s of CPU against 6.9 s for those starts alone (the same optimum)
    nested, nested_start = None, None
    if real and not guess and noise.startswith("sway") and controller == "PID":
        def nested(tr):
            return stochastic_problem(tr, controller="PD", body=body, noise=noise, bounds=bounds)
        nested_start = {"KI": min(max(NESTED_START_KI_PER_MGH * mgh, search["KI"][0]), search["KI"][1])}
    return co.StochasticProblem(model_at, trial, outputs=["cop"], start=start, starts=second, bounds=search,
                                physical=physical,
                                center=True, units=unit, descriptions=describe, notes=notes, checks=checks,
                                info=info, name="cip", label=controller, nested=nested, nested_start=nested_start)
