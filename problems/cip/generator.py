"""The CIP's data generator: the linear system integrated exactly over each sample interval
(matrix exponential) with unit white noise held over it, and the surrogate disturbance of J_u
and J_S."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.linalg

import colloc as co

from .constants import COP_NOISE, GAINS, TRUE, _body


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
