"""Standard errors that hold when the model's noise is wrong: the sandwich (quasi-maximum-likelihood)
covariance of a Kalman maximum-likelihood estimate.

The inverse observed Fisher information H⁻¹ is the covariance of the estimate only if the model's
innovations are white and Gaussian with the variance the filter predicts.  When they are not (real
records: a noise model that is close but not right), the estimate is still the quasi-maximum
likelihood one and its covariance is H⁻¹ J H⁻¹ (White 1982, Econometrica 50:1), J the long-run
covariance of the per-sample scores s_t = ∂l_t/∂θ (l_t the sample's term of the NLL).  Under a
correct model the scores are a martingale difference sequence and J = H (the information equality),
so the two agree; where the model's errors are coloured, the scores are too, and J is estimated
with the Bartlett weights of Newey & West (1987, Econometrica 55:703) over a bandwidth read from
the scores' own autocorrelation (Politis 2003).  The sandwich is itself an estimate, noisy and
biased low in a short record, so the standard error reported is, per parameter, the larger of it
and the model-based one (Angrist & Pischke 2009, Mostly Harmless Econometrics, §8.1).

The scores are central differences of the per-sample NLL terms of the filter, run for the 2k
perturbed parameter vectors at once (:func:`sample_nll`), with steps of a hundredth of each
parameter's standard error; the covariance is held once settled, or after the transient of the
steady-state likelihood the estimator maximised.  The Hessian is the estimator's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .likelihood import STEADY_TOL

__all__ = ["RobustCovariance", "long_run_covariance", "politis_bandwidth", "prediction_variance", "robust_covariance",
           "sample_nll", "sample_scores"]

#: Step of the differences of the per-sample NLL terms, in each parameter's model-based standard
#: error: the NLL then changes by about SCORE_STEP²/2 over the record, far above the filter's
#: rounding (a step relative to the value, 1e-4·|θ|, gave a gain near zero with a standard error
#: 30 times its value scores that were rounding noise, 200 times their Fisher information), and the
#: NLL is quadratic to well within the step.
SCORE_STEP = 0.01


def _batched_filter(model, y: np.ndarray, thetas: Sequence[Mapping[str, float]], missing: bool,
                    steps: int | None = None, hold_after: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The exact Kalman filter for each parameter vector of ``thetas`` side by side (one batched
    recursion, the predictor-form equations of :func:`colloc.kalman.one_step_predictions`): the
    per-sample NLL terms (K × N) and, with ``steps``, the ``steps``-ahead predicted means of the
    outputs (K × N × outputs; rows before ``steps − 1`` NaN).  The covariance is held once it has
    settled (:data:`STEADY_TOL`), or from sample ``hold_after`` on (the steady-state likelihood of
    :func:`colloc.kalman.maximum_likelihood` with that transient), where every output is measured."""
    Y = model.data_matrix(y, missing).T
    ds = [model.discretize(theta) for theta in thetas]

    def stack(key):
        return np.stack([np.asarray(d[key], dtype=float) for d in ds])

    Phi, Q, GD, C, D, R = (stack(k) for k in ("Phi", "Q", "S", "C", "D", "R"))
    m, P = stack("m0").copy(), stack("P0").copy()
    DD = D @ np.swapaxes(D, 1, 2)
    DDR = DD + R
    Ct = np.swapaxes(C, 1, 2)
    n_sets, N, ny = len(ds), Y.shape[0], Y.shape[1]
    out = np.zeros((n_sets, N))
    means = np.empty((n_sets, N, m.shape[1])) if steps else None
    measured = np.isfinite(Y)
    # from the first sample after which every output is measured, the covariance may settle: then
    # the gain is held (the Riccati recursion's fixed point, to STEADY_TOL), O(n²) a sample
    complete_from = N - int(np.argmin(measured.all(axis=1)[::-1])) if not measured.all() else 0
    if not measured[complete_from:].all():
        complete_from = N
    log2pi = np.log(2 * np.pi)
    settled = False
    for k in range(N):
        if means is not None:
            means[:, k] = m
        if k > complete_from and (settled or (hold_after is not None and k >= hold_after)):
            return _steady(Y, k, m, P, Phi, GD, C, DDR, out, means, steps)
        o = measured[k]
        S = C @ P @ Ct + DDR
        B = Phi @ P @ Ct + GD
        K = np.zeros((n_sets, m.shape[1], ny))
        e = np.zeros((n_sets, ny))
        if o.any():
            So = S[:, o][:, :, o]
            eo = Y[k, o][None, :] - np.einsum("kij,kj->ki", C[:, o, :], m)
            if ny == 1:
                s = So[:, 0, 0]
                out[:, k] = 0.5 * (log2pi + np.log(s) + eo[:, 0] ** 2 / s)
                K[:, :, 0] = B[:, :, 0] / s[:, None]
            else:
                _, logdet = np.linalg.slogdet(So)
                solved = np.linalg.solve(So, eo[:, :, None])[:, :, 0]
                out[:, k] = 0.5 * (o.sum() * log2pi + logdet + np.einsum("ki,ki->k", eo, solved))
                K[:, :, o] = np.swapaxes(np.linalg.solve(np.swapaxes(So, 1, 2), np.swapaxes(B[:, :, o], 1, 2)), 1, 2)
            e[:, o] = eo
        F = Phi - K @ C
        m = np.einsum("kij,kj->ki", Phi, m) + np.einsum("kij,kj->ki", K, e)
        KS = K @ np.swapaxes(GD, 1, 2)
        Kt = np.swapaxes(K, 1, 2)
        P_new = F @ P @ np.swapaxes(F, 1, 2) + Q - KS - np.swapaxes(KS, 1, 2) + K @ DD @ Kt + K @ R @ Kt
        P_new = 0.5 * (P_new + np.swapaxes(P_new, 1, 2))
        scale = np.abs(P_new).reshape(n_sets, -1).max(axis=1)
        settled = bool(np.all(np.abs(P_new - P).reshape(n_sets, -1).max(axis=1) <= STEADY_TOL * scale))
        P = P_new
    return _ahead(out, means, Phi, C, steps)


def _steady(Y, k0, m, P, Phi, GD, C, DDR, out, means, steps):
    """The rest of :func:`_batched_filter` from sample ``k0`` on, every output measured, with the
    gain held at the settled covariance ``P``."""
    Ct = np.swapaxes(C, 1, 2)
    S = C @ P @ Ct + DDR
    S_inv = np.linalg.inv(S)
    K = (Phi @ P @ Ct + GD) @ S_inv
    F = Phi - K @ C
    _, logdet = np.linalg.slogdet(S)
    const = 0.5 * (Y.shape[1] * np.log(2 * np.pi) + logdet)
    # the means by m ← F m + K y (the one recursion left, a batched product a sample), then the
    # innovations and the terms of every sample at once
    rest = Y[k0:]
    KY = np.einsum("kij,tj->tki", K, rest)
    ms = np.empty((rest.shape[0], *m.shape))
    for j in range(rest.shape[0]):
        ms[j] = m
        m = (F @ m[:, :, None])[:, :, 0] + KY[j]
    if means is not None:
        means[:, k0:] = np.swapaxes(ms, 0, 1)
    e = rest[:, None, :] - np.einsum("kij,tkj->tki", C, ms)
    out[:, k0:] = (const[None, :] + 0.5 * np.sum(e * np.einsum("kij,tkj->tki", S_inv, e), axis=-1)).T
    return _ahead(out, means, Phi, C, steps)


def _ahead(out, means, Phi, C, steps):
    """The per-sample terms and, with ``means``, the ``steps``-ahead predicted output means."""
    if means is None:
        return out, None
    n_sets, N = means.shape[:2]
    CPhi = C @ np.stack([np.linalg.matrix_power(p, steps - 1) for p in Phi])  # C Φ^{steps−1}, one per set
    pred = np.full((n_sets, N, C.shape[1]), np.nan)
    pred[:, steps - 1:] = np.einsum("kij,knj->kni", CPhi, means[:, : N - steps + 1])
    return out, pred


def sample_nll(model, y: np.ndarray, thetas: Sequence[Mapping[str, float]], *, missing: bool = True,
               hold_after: int | None = None) -> np.ndarray:
    """The exact Kalman filter's per-sample NLL terms l_t = ½(log det 2πS_t + e_tᵀS_t⁻¹e_t) of the
    record ``y`` (N × outputs; NaN: not measured, no update) for each parameter vector of
    ``thetas``, as a (len(thetas), N) array; the filters run side by side."""
    return _batched_filter(model, y, thetas, missing, hold_after=hold_after)[0]


def prediction_variance(model, y: np.ndarray, theta: Mapping[str, float], names: Sequence[str],
                        covariance: np.ndarray, steps: int, *, missing: bool = True) -> np.ndarray:
    """The variance the estimate's uncertainty adds to the ``steps``-ahead predicted means of the
    record ``y`` (N × outputs): gᵀVg with g the means' derivatives in the parameters ``names``
    (central differences over a hundredth of each standard error, one-sided where that would change a
    parameter's sign) and V their ``covariance``; the delta method of Ansley & Kohn (1986,
    Biometrika 73:467) for a prediction with estimated parameters."""
    V = np.asarray(covariance, dtype=float)
    se = np.sqrt(np.clip(np.diag(V), 0.0, None))
    points, widths = [], []
    for name, s in zip(names, se):
        value, h = float(theta[name]), SCORE_STEP * float(s)
        up, down = value + h, value - h
        if value != 0.0 and np.sign(down) != np.sign(value):
            down = value
        points += [{**theta, name: up}, {**theta, name: down}]
        widths.append(up - down)
    if not points:
        return np.zeros((np.shape(y)[0], 1 if np.ndim(y) == 1 else np.shape(y)[1]))
    means = _batched_filter(model, y, points, missing, steps=steps)[1]
    assert means is not None  # with steps, the filter returns the predicted means
    g = np.stack([(means[2 * j] - means[2 * j + 1]) / w if w > 0 else np.zeros_like(means[0])
                  for j, w in enumerate(widths)], axis=-1)  # N × outputs × parameters
    return np.einsum("noi,ij,noj->no", g, V, g)


def sample_scores(model, y: np.ndarray, theta: Mapping[str, float], free: Sequence[str], steps: Sequence[float], *,
                  bounds: Mapping[str, tuple[float, float]] | None = None, missing: bool = True,
                  hold_after: int | None = None) -> np.ndarray:
    """The per-sample scores ∂l_t/∂θ_j (N × len(free)) at ``theta``, by central differences of
    :func:`sample_nll` with the steps ``steps`` (one per parameter of ``free``), or forward or
    backward ones where a central step would cross a bound of ``bounds``."""
    points, kinds = [], []
    for name, h in zip(free, steps):
        lo, hi = (bounds or {}).get(name, (-np.inf, np.inf))
        lo, hi = (-np.inf if lo is None else lo), (np.inf if hi is None else hi)
        value = float(theta[name])
        up = value + h if value + h <= hi else value
        down = value - h if value - h >= lo else value
        if up == down:
            raise ValueError(f"robust standard errors: the step {h:g} of {name} does not fit between its bounds")
        points += [{**theta, name: up}, {**theta, name: down}]
        kinds.append(up - down)
    terms = sample_nll(model, y, points, missing=missing, hold_after=hold_after)
    return np.column_stack([(terms[2 * j] - terms[2 * j + 1]) / width for j, width in enumerate(kinds)])


def politis_bandwidth(scores: np.ndarray) -> float:
    """The Bartlett kernel's bandwidth from the scores' own autocorrelation, by Politis' (2003, J
    Nonparametr Stat 15:517) rule: for each score column, m̂ the smallest lag after which the next
    K = max(5, √log₁₀N) autocorrelations all lie within ±2√(log₁₀N / N); the bandwidth 2·max m̂
    over the columns (the cautious choice: a longer bandwidth gives the larger, safer standard
    error).  Unlike a rule fitted to the first few lags (Newey & West 1994: ≈ 30 samples here),
    it follows a correlation that lasts a sway cycle (on the shipped trials the sandwich standard
    errors keep growing with the bandwidth up to 100–300 samples)."""
    X = np.asarray(scores, dtype=float)
    X = X - X.mean(axis=0)
    sd = X.std(axis=0)
    X = X[:, sd > 0] / sd[sd > 0]
    N = X.shape[0]
    if X.shape[1] == 0 or N < 20:
        return 0.0
    max_lag = N // 4
    K = max(5, int(np.ceil(np.sqrt(np.log10(N)))))
    limit = 2.0 * np.sqrt(np.log10(N) / N)
    nfft = 1 << int(np.ceil(np.log2(2 * N)))
    m_hat = 0
    for x in X.T:
        f = np.fft.rfft(x, nfft)
        acf = np.fft.irfft(f * np.conj(f), nfft)[: max_lag + K + 1]
        acf = acf / acf[0]
        small = np.abs(acf[1:]) < limit  # small[j - 1]: lag j
        m = max_lag
        for j in range(max_lag):
            if small[j: j + K].all():
                m = j  # lags j+1 … j+K all small
                break
        m_hat = max(m_hat, m)
    return float(2 * m_hat)


def long_run_covariance(scores: np.ndarray, bandwidth: float) -> np.ndarray:
    """Σ_t s_t s_tᵀ + Σ_{l≥1} w_l Σ_t (s_t s_{t−l}ᵀ + s_{t−l} s_tᵀ), w_l = 1 − l/bandwidth (Bartlett,
    Newey & West 1987) for l < bandwidth, of the centred scores (N × k): the sum's covariance, not
    the mean's."""
    X = np.asarray(scores, dtype=float)
    X = X - X.mean(axis=0)
    J = X.T @ X
    for lag in range(1, int(np.ceil(bandwidth))):
        w = 1.0 - lag / bandwidth
        if w <= 0 or lag >= X.shape[0]:
            break
        G = X[lag:].T @ X[:-lag]
        J += w * (G + G.T)
    return J


@dataclass(frozen=True)
class RobustCovariance:
    """The sandwich covariance of :func:`robust_covariance` and what it was built from."""

    names: tuple[str, ...]
    covariance: np.ndarray
    model_covariance: np.ndarray
    bandwidth: float
    samples: int
    sandwich_standard_errors: np.ndarray

    @property
    def standard_errors(self) -> dict[str, float]:
        return dict(zip(self.names, np.sqrt(np.clip(np.diag(self.covariance), 0.0, None)).tolist()))

    @property
    def ratios(self) -> dict[str, float]:
        """Reported (robust) standard error over the model-based one, per parameter (≥ 1)."""
        model = np.sqrt(np.clip(np.diag(self.model_covariance), 0.0, None))
        robust = np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))
        return {k: float(r / m) if m > 0 else float("nan") for k, r, m in zip(self.names, robust, model)}

    def to_info(self) -> dict:
        return {"kind": "the larger of the sandwich H⁻¹JH⁻¹ (J by Newey–West weights over a bandwidth by Politis' "
                "rule) and the model-based standard error, per parameter",
                "bandwidth_samples": self.bandwidth, "samples": self.samples,
                "standard_errors": self.standard_errors,
                "model_based_standard_errors": dict(zip(self.names, np.sqrt(np.clip(
                    np.diag(self.model_covariance), 0.0, None)).tolist())),
                "sandwich_standard_errors": dict(zip(self.names, self.sandwich_standard_errors.tolist())),
                "ratio_to_model_based": self.ratios}


def robust_covariance(model, y: np.ndarray, theta: Mapping[str, float], free: Sequence[str],
                      inverse_hessian: np.ndarray, *, bounds: Mapping[str, tuple[float, float]] | None = None,
                      missing: bool = True, bandwidth: float | None = None,
                      hold_after: int | None = None) -> RobustCovariance:
    """The sandwich covariance H⁻¹ J H⁻¹ of the parameters ``free`` at the estimate ``theta``:
    ``inverse_hessian`` the estimator's (the model-based covariance), J the scores' long-run
    covariance (:func:`long_run_covariance`, bandwidth by :func:`politis_bandwidth` unless given);
    the scores' steps :data:`SCORE_STEP` model-based standard errors, inside ``bounds``; with
    ``hold_after`` the scores are those of the steady-state likelihood with that transient (the one
    the estimator maximised)."""
    free = tuple(free)
    Hinv = np.asarray(inverse_hessian, dtype=float)
    steps = SCORE_STEP * np.sqrt(np.clip(np.diag(Hinv), 0.0, None))
    S = sample_scores(model, y, theta, free, steps, bounds=bounds, missing=missing, hold_after=hold_after)
    S = S[np.all(np.isfinite(S), axis=1)]
    L = politis_bandwidth(S) if bandwidth is None else float(bandwidth)
    L = min(L, S.shape[0] / 4.0)
    J = long_run_covariance(S, L)
    V = Hinv @ J @ Hinv
    V = 0.5 * (V + V.T)
    # no standard error under the model-based one: the sandwich's own estimate is noisy and biased
    # low in short records (its J from a few sway cycles), so each parameter's is the larger of the
    # two (Angrist & Pischke 2009, Mostly Harmless Econometrics, §8.1), the sandwich's correlations kept
    sandwich = np.sqrt(np.clip(np.diag(V), 0.0, None))
    model_se = np.sqrt(np.clip(np.diag(Hinv), 0.0, None))
    scale = np.where(sandwich > 0, np.maximum(1.0, model_se / np.where(sandwich > 0, sandwich, 1.0)), 1.0)
    return RobustCovariance(free, V * np.outer(scale, scale), Hinv, L, int(S.shape[0]), sandwich)
