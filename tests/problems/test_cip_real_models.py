"""The CIP for real subjects: wide gain bounds, fitted disturbance filter, COP noise and
feedback-delay models (issue 10, real data).  Expected values come from hand derivations,
an independent generator (``cip.simulate_trial``'s matrix exponential, not the Kalman model)
or the exact delay equation, never from the estimator under test."""

from __future__ import annotations

import numpy as np
import pytest

import colloc as co
from colloc_problems import cip
from colloc_problems._data import data_path

SUBJECT1 = {"height": 1.575, "mass": 54.2}  # BDS subject 1 (BDSinfoCOP)


def _real(seconds: float) -> co.Trial:
    trial = cip.load_trial(data_path("bds", "BDS00001.txt.gz"), columns={"cop": "COPx"})
    n = int(round(seconds * 100))
    return co.Trial(trial.time[:n], {"cop": trial["cop"][:n]}, name="BDS00001")


def test_wide_bounds_scale_with_the_gravity_term():
    body = cip.body(**SUBJECT1)
    mgh = body["m"] * body["g"] * body["h"]
    b = cip.gain_bounds("wide", body)
    assert b["KP"] == pytest.approx((0.5 * mgh, 6 * mgh))
    assert b["KD"] == pytest.approx((0.01 * mgh, 2 * mgh)) and b["KI"] == pytest.approx((0.0, 3 * mgh))
    assert cip.gain_bounds("table1") == cip.RANGES
    m = cip.model("filtered", body=body, bounds="wide", fit_disturbance=True)
    assert {"A", "B"} <= set(m.element_names("parameter"))
    with pytest.raises(co.ModelError, match="bounds must be 'table1', 'wide' or a mapping"):
        cip.gain_bounds("loose")
    with pytest.raises(co.ModelError, match="fit_disturbance needs disturbance='filtered'"):
        cip.model("known", fit_disturbance=True)
    with pytest.raises(co.ProblemError, match="fit_disturbance needs formulation 'MAP' or 'MAP-OM'"):
        cip.problem(_real(2.0), "J_T", fit_disturbance=True)


def test_delay_model_poles_solve_the_exact_delay_equation():
    """The Padé (2, 2) PD-delay model's slow closed-loop poles are roots of the exact
    characteristic quasi-polynomial I s² + K_D s e^{−sτ} + K_P e^{−sτ} − m g h = 0."""
    body = cip.body(**SUBJECT1)
    I, mgh = body["I"], body["m"] * body["g"] * body["h"]
    theta = {"KP": 1.6 * mgh, "KD": 0.3 * mgh, "tau": 0.15, "sigma": 1e-4}
    lgm = cip.ml_model("PD-delay", dt=0.01, body=body)
    eig = np.linalg.eigvals(lgm.continuous(theta)["A"])
    slow = [e for e in eig if abs(e) < 10 and abs(e + 1 / cip.FILTER["B"]) > 1e-6]  # not T_d's pole
    assert len(slow) >= 2

    KP, KD, tau = theta["KP"], theta["KD"], theta["tau"]

    def newton(s):  # complex Newton on the exact quasi-polynomial
        for _ in range(50):
            e = np.exp(-s * tau)
            f = I * s**2 + (KD * s + KP) * e - mgh
            df = 2 * I * s + KD * e - tau * (KD * s + KP) * e
            s = s - f / df
        return s, abs(I * s**2 + (KD * s + KP) * np.exp(-s * tau) - mgh)

    for e in slow:
        root, residual = newton(complex(e))
        assert residual < 1e-9 * mgh
        assert abs(root - e) < 0.02 * abs(e)
    # without delay the model is the PID one with K_I = 0: the same poles as the hand-formed
    # characteristic polynomial I s² + K_D s + (K_P − m g h)
    pid = cip.ml_model("PID", dt=0.01, body=body)  # K_I → 0: the PD loop and a pole at −K_I/(K_P − m g h)
    eig0 = np.linalg.eigvals(pid.continuous({"KP": theta["KP"], "KI": 1e-9, "KD": theta["KD"], "sigma": 1e-4})["A"])
    ref = np.roots([I, theta["KD"], theta["KP"] - mgh])
    for r in ref:
        assert np.min(np.abs(eig0 - r)) < 1e-6 * abs(r)


@pytest.mark.slow
def test_ml_recovers_the_disturbance_amplitude_and_cop_noise():
    """A record of the independent generator (a real subject's body, a disturbance 3.3 times
    weaker and 5 times faster than the paper's, COP noise 0.3 mm): the ML with A, B and σ
    free recovers them; with the paper's A, B fixed the fit is far worse in likelihood."""
    body = cip.body(**SUBJECT1)
    mgh = body["m"] * body["g"] * body["h"]
    gains = {"KP": 2.0 * mgh, "KI": 30.0, "KD": 0.12 * mgh}
    filt = {"A": 300.0, "B": 16.0}
    trial = cip.simulate_trial(gains, duration=30.0, seed=11, cop_noise=3e-4, body=body, filt=filt)
    r = cip.ml_estimate(trial, cop_noise=None, body=body, bounds="wide", fit_disturbance=True, hessian="exact")
    assert r.success, r.message
    p = r.parameters
    assert p["sigma"] == pytest.approx(3e-4, rel=0.15)
    assert p["A"] / p["B"] == pytest.approx(filt["A"] / filt["B"], rel=0.3)  # the COP's fast increments
    assert p["KP"] == pytest.approx(gains["KP"], rel=0.15)
    fixed = cip.ml_estimate(trial, cop_noise=None, body=body, bounds="wide", hessian="exact")
    assert fixed.nll > r.nll + 20


def test_map_om_fits_the_disturbance_of_a_real_record():
    """BDS00001 (eyes open, firm; 10 s): MAP-OM with A, B fitted converges inside the bounds
    to a stable loop with K_P > m g h."""
    body = cip.body(**SUBJECT1)
    trial = _real(10.0)
    r = co.solve(cip.problem(trial, body=body, bounds="wide", fit_disturbance=True), throw=False)
    assert r.success, r.status
    p = r.parameters
    for k, (lo, hi) in cip.FILTER_RANGES.items():
        assert lo * 1.01 < p[k] < hi * 0.99
    mgh = body["m"] * body["g"] * body["h"]
    assert p["KP"] > mgh
    roots = np.roots([body["I"], p["KD"], p["KP"] - mgh, p["KI"]])
    assert np.all(roots.real < 0)
