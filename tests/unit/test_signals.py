"""Unit tests for colloc.signals: filtering, differentiation, integration and the SDF."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import butter, sosfilt

from colloc.signals import cumulative_integral, derivative, lowpass, sdf

DT = 0.01  # 100 Hz, a typical force-plate rate


def sdf_direct(signal, dt, max_lag):
    """O(N*K) reference: SDF_k = mean over i of (u[i+k] - u[i])**2."""
    u = np.asarray(signal, dtype=float)
    k_max = int(np.floor(max_lag / dt * (1.0 + 1e-12)))
    values = np.array([np.mean((u[k:] - u[: u.size - k]) ** 2) for k in range(k_max + 1)])
    return np.arange(k_max + 1) * dt, values


def sine_fit(t, y, freq):
    """Amplitude and phase of the ``freq`` component of y (least squares on sin and cos)."""
    basis = np.column_stack([np.sin(2 * np.pi * freq * t), np.cos(2 * np.pi * freq * t),
                             np.ones_like(t)])
    (s, c, _), *_ = np.linalg.lstsq(basis, y, rcond=None)
    return np.hypot(s, c), np.arctan2(c, s)


# -- sdf ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 7, 128, 1001, 4096, 5003])
@pytest.mark.parametrize("kind", ["white", "walk", "offset", "drift"])
def test_sdf_matches_direct_loop(n, kind):
    rng = np.random.default_rng(n)
    u = rng.standard_normal(n)
    if kind == "walk":
        u = np.cumsum(u)
    elif kind == "offset":  # COP in mm far from the origin
        u = 350.0 + 0.5 * u
    elif kind == "drift":  # random walk on a strong linear trend
        u = np.cumsum(u) + 0.2 * np.arange(n)
    for max_lag in ((n - 1) * DT, (n // 2) * DT, DT):
        lags, values = sdf(u, DT, max_lag)
        ref_lags, ref = sdf_direct(u, DT, max_lag)
        np.testing.assert_allclose(lags, ref_lags, rtol=0, atol=1e-12)
        np.testing.assert_allclose(values, ref, rtol=1e-10, atol=0)


def test_sdf_long_record_is_fast_and_exact():
    # 10 min at 100 Hz, lags up to 10 s: an O(N*K) loop inside sdf would be visibly slow.
    rng = np.random.default_rng(42)
    u = np.cumsum(rng.standard_normal(60_000)) * 0.1
    lags, values = sdf(u, DT, 10.0)
    assert lags.size == 1001
    np.testing.assert_allclose(values, sdf_direct(u, DT, 10.0)[1], rtol=1e-10, atol=0)


def test_sdf_zero_lag_lag_spacing_and_shape():
    u = np.random.default_rng(1).standard_normal(500)
    lags, values = sdf(u, DT, 2.0)
    assert lags.shape == values.shape == (201,)
    assert lags[0] == 0.0 and values[0] == 0.0
    np.testing.assert_allclose(np.diff(lags), DT, rtol=1e-12)
    np.testing.assert_allclose(lags[-1], 2.0, rtol=1e-12)
    assert np.all(values >= 0.0)


def test_sdf_lag_count_is_robust_to_round_off():
    # 0.3 / 0.1 == 2.9999999999999996 in floating point; the lag 0.3 s must be included.
    lags, _ = sdf(np.arange(10.0), 0.1, 0.3)
    assert lags.size == 4


@pytest.mark.parametrize("value", [0.0, 1.0, 3.7, -123.456, 1e4])
def test_sdf_of_constant_is_zero(value):
    lags, values = sdf(np.full(1234, value), DT, 5.0)
    assert lags.size == 501
    np.testing.assert_allclose(values, 0.0, rtol=0, atol=1e-20)


def test_sdf_of_random_walk_grows_linearly():
    # Unit-variance increments: E[SDF_k] = k, i.e. SDF(lag) = lag / dt (diffusion D = 1/(2 dt)).
    rng = np.random.default_rng(2024)
    u = np.cumsum(rng.standard_normal(400_000))
    lags, values = sdf(u, DT, 0.5)
    k = np.arange(1, lags.size)
    assert np.all(np.abs(values[1:] / k - 1.0) < 0.1)
    slope = np.sum(lags[1:] * values[1:]) / np.sum(lags[1:] ** 2)  # fit through the origin
    assert slope * DT == pytest.approx(1.0, rel=0.05)


def test_sdf_of_white_noise_is_flat():
    # Independent samples: SDF_k = 2 var for every k >= 1.
    u = 3.0 * np.random.default_rng(7).standard_normal(200_000)
    _, values = sdf(u, DT, 0.2)
    np.testing.assert_allclose(values[1:], 18.0, rtol=0.03)


# -- lowpass --------------------------------------------------------------------------------
T = np.arange(0.0, 40.0, DT)
MIDDLE = slice(1000, 3000)  # 10 s .. 30 s, far from the padded ends


def test_lowpass_passes_slow_sine_without_gain_or_phase_change():
    x = np.sin(2 * np.pi * 1.0 * T + 0.3)
    y = lowpass(x, DT, 10.0)
    amplitude, phase = sine_fit(T[MIDDLE], y[MIDDLE], 1.0)
    assert abs(amplitude - 1.0) < 0.01
    assert abs(phase - np.arctan2(np.sin(0.3), np.cos(0.3))) < 1e-6
    np.testing.assert_allclose(y[MIDDLE], x[MIDDLE], atol=0.01)
    # cross-correlation peaks at lag 0
    a, b = x[MIDDLE] - x[MIDDLE].mean(), y[MIDDLE] - y[MIDDLE].mean()
    xcorr = np.correlate(b, a, mode="full")
    assert np.argmax(xcorr) - (a.size - 1) == 0


def test_lowpass_attenuates_fast_sine_by_more_than_40_db():
    x = np.sin(2 * np.pi * 1.0 * T) + np.sin(2 * np.pi * 40.0 * T)
    y = lowpass(x, DT, 10.0)
    amplitude, _ = sine_fit(T[MIDDLE], y[MIDDLE], 40.0)
    assert 20 * np.log10(amplitude) < -40.0
    np.testing.assert_allclose(y[MIDDLE], np.sin(2 * np.pi * T[MIDDLE]), atol=0.01)


@pytest.mark.parametrize("order", [2, 4])
def test_lowpass_gain_is_minus_6_db_at_cutoff_and_3_db_below_it(order):
    cutoff = 10.0
    amplitude, phase = sine_fit(T[MIDDLE], lowpass(np.sin(2 * np.pi * cutoff * T), DT, cutoff, order)[MIDDLE],
                                cutoff)
    assert amplitude == pytest.approx(0.5, rel=1e-3)  # |H|^2 at the design cutoff
    assert abs(phase) < 1e-3
    ratio = np.arctan(np.tan(np.pi * cutoff * DT) * (np.sqrt(2) - 1) ** (1 / (2 * order))) / (np.pi * DT * cutoff)
    f3 = ratio * cutoff
    # well below Nyquist this is close to the analogue value (sqrt(2) - 1) ** (1 / (2 order))
    assert ratio == pytest.approx((np.sqrt(2) - 1) ** (1 / (2 * order)), abs=0.01)
    assert ratio < 0.91
    amplitude, _ = sine_fit(T[MIDDLE], lowpass(np.sin(2 * np.pi * f3 * T), DT, cutoff, order)[MIDDLE], f3)
    assert amplitude == pytest.approx(1 / np.sqrt(2), rel=1e-3)


def test_lowpass_is_zero_phase_on_an_asymmetric_pulse():
    t = np.arange(0.0, 10.0, DT)
    s = np.clip(t - 3.0, 0.0, None)
    x = s**2 * np.exp(-s / 0.2)  # fast rise, slow decay; zero well before both ends
    y = lowpass(x, DT, 5.0)

    def centroid(v):
        return np.sum(t * v) / np.sum(v)

    assert np.sum(y) == pytest.approx(np.sum(x), rel=1e-9)  # unit DC gain
    assert abs(centroid(y) - centroid(x)) < 1e-3 * DT
    # the same Butterworth filter run causally delays the pulse by several samples
    causal = sosfilt(butter(4, 5.0, output="sos", fs=1 / DT), x)
    assert centroid(causal) - centroid(x) > 3 * DT


def test_lowpass_short_signal_limit():
    assert lowpass(np.arange(16.0), DT, 10.0).shape == (16,)  # order 4 pads 15 samples
    with pytest.raises(ValueError, match=r"signal must have at least 16 samples"):
        lowpass(np.arange(15.0), DT, 10.0)
    assert lowpass(np.arange(7.0), DT, 10.0, order=1).shape == (7,)  # order 1: 2 taps, pads 6
    with pytest.raises(ValueError, match=r"signal must have at least 7 samples"):
        lowpass(np.arange(6.0), DT, 10.0, order=1)


# -- derivative and cumulative_integral -----------------------------------------------------
def test_first_derivative_is_exact_for_quadratics():
    t = np.arange(0.0, 1.0, 0.05)
    x = 3.0 - 2.0 * t + 5.0 * t**2
    np.testing.assert_allclose(derivative(x, 0.05), -2.0 + 10.0 * t, rtol=0, atol=1e-11)


def test_second_derivative_is_exact_for_cubics_including_the_ends():
    t = np.arange(0.0, 1.0, 0.05)
    x = 1.0 + t - 4.0 * t**2 + 7.0 * t**3
    np.testing.assert_allclose(derivative(x, 0.05, order=2), -8.0 + 42.0 * t, rtol=0, atol=1e-9)
    quad = derivative(2.5 * t**2, 0.05, order=2)
    np.testing.assert_allclose(quad, 5.0, rtol=0, atol=1e-9)
    assert derivative([0.0, 1.0, 4.0, 9.0], 1.0, order=2).tolist() == [2.0, 2.0, 2.0, 2.0]


@pytest.mark.parametrize("order, exact", [(1, np.cos), (2, lambda t: -np.sin(t))])
def test_derivative_converges_with_order_two(order, exact):
    errors = []
    for h in (0.02, 0.01):
        t = np.arange(0.0, 3.0 + h / 2, h)
        errors.append(np.max(np.abs(derivative(np.sin(t), h, order=order) - exact(t))))
    rate = np.log2(errors[0] / errors[1])
    assert rate == pytest.approx(2.0, abs=0.15)


def test_cumulative_integral_is_exact_for_linear_functions():
    t = np.arange(0.0, 2.0, 0.1)
    out = cumulative_integral(2.0 - 3.0 * t, 0.1, initial=1.5)
    assert out.shape == t.shape and out[0] == 1.5
    np.testing.assert_allclose(out, 1.5 + 2.0 * t - 1.5 * t**2, rtol=0, atol=1e-12)


def test_derivative_undoes_cumulative_integral():
    t = np.arange(0.0, 5.0, 0.001)
    x = np.sin(3.0 * t) + 0.5 * t
    back = derivative(cumulative_integral(x, 0.001), 0.001)
    np.testing.assert_allclose(back, x, rtol=0, atol=1e-5)


# -- input errors ---------------------------------------------------------------------------
GOOD = np.sin(np.arange(200) * DT)
NAN = GOOD.copy()
NAN[17] = np.nan

CALLS = {
    "lowpass": lambda s=GOOD, dt=DT, **kw: lowpass(s, dt, kw.pop("cutoff", 5.0), **kw),
    "derivative": lambda s=GOOD, dt=DT, **kw: derivative(s, dt, **kw),
    "cumulative_integral": lambda s=GOOD, dt=DT, **kw: cumulative_integral(s, dt, **kw),
    "sdf": lambda s=GOOD, dt=DT, **kw: sdf(s, dt, kw.pop("max_lag", 0.5), **kw),
}
COMMON_ERRORS = [
    ("2-D signal", {"s": GOOD.reshape(20, 10)}, r"signal must be 1-D, got an array of shape \(20, 10\)"),
    ("scalar signal", {"s": 1.0}, r"signal must be 1-D"),
    ("too short", {"s": [1.0]}, r"signal must have at least \d+ samples"),
    ("empty", {"s": []}, r"signal must have at least \d+ samples"),
    ("NaN", {"s": NAN}, r"signal contains NaN at index 17"),
    ("inf", {"s": np.r_[GOOD, np.inf]}, r"signal contains an infinite value at index 200"),
    ("complex", {"s": GOOD + 1j}, r"signal must be real"),
    ("text", {"s": ["a", "b", "c", "d"]}, r"signal must be numeric"),
    ("zero dt", {"dt": 0.0}, r"dt must be a positive"),
    ("negative dt", {"dt": -0.01}, r"dt must be a positive"),
    ("nan dt", {"dt": float("nan")}, r"dt must be a positive"),
    ("array dt", {"dt": np.array([0.01, 0.02])}, r"dt must be a positive"),
]


@pytest.mark.parametrize("func", sorted(CALLS))
@pytest.mark.parametrize("label, kwargs, message", COMMON_ERRORS, ids=[e[0] for e in COMMON_ERRORS])
def test_bad_common_input_raises_value_error_naming_the_argument(func, label, kwargs, message):
    with pytest.raises(ValueError, match=message):
        CALLS[func](**kwargs)


@pytest.mark.parametrize("call, message", [
    (lambda: lowpass(GOOD, DT, 50.0), r"cutoff = 50 Hz must be below the Nyquist frequency .* 50 Hz"),
    (lambda: lowpass(GOOD, DT, 80.0), r"cutoff .* Nyquist"),
    (lambda: lowpass(GOOD, DT, 0.0), r"cutoff must be a positive"),
    (lambda: lowpass(GOOD, DT, 5.0, order=0), r"order must be a positive integer"),
    (lambda: lowpass(GOOD, DT, 5.0, order=2.5), r"order must be a positive integer"),
    (lambda: lowpass(GOOD, DT, 5.0, order=True), r"order must be a positive integer"),
    (lambda: derivative(GOOD, DT, order=3), r"order must be one of \(1, 2\)"),
    (lambda: derivative([1.0, 2.0, 3.0], DT, order=2), r"signal must have at least 4 samples"),
    (lambda: derivative([1.0, 2.0], DT), r"signal must have at least 3 samples"),
    (lambda: cumulative_integral(GOOD, DT, initial=float("nan")), r"initial must be a finite number"),
    (lambda: sdf(GOOD, DT, max_lag=2.0), r"max_lag = 2 s is 200 samples but the record has only 200"),
    (lambda: sdf(GOOD, DT, max_lag=100.0), r"max_lag .* record duration"),
    (lambda: sdf(GOOD, DT, max_lag=0.0), r"max_lag must be a positive"),
    (lambda: sdf(GOOD, DT, max_lag=-1.0), r"max_lag must be a positive"),
])
def test_bad_specific_input_raises_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_max_lag_equal_to_record_duration_is_allowed():
    lags, values = sdf(GOOD, DT, max_lag=199 * DT)
    assert lags.size == 200
    np.testing.assert_allclose(values, sdf_direct(GOOD, DT, 199 * DT)[1], rtol=1e-10)


def test_inputs_are_not_modified_and_lists_are_accepted():
    x = GOOD.copy()
    for func in CALLS.values():
        func(s=x)
    np.testing.assert_array_equal(x, GOOD)
    assert derivative([0.0, 1.0, 4.0], 1.0).tolist() == [0.0, 2.0, 4.0]
    assert cumulative_integral([1, 1, 1], 0.5).tolist() == [0.0, 0.5, 1.0]
