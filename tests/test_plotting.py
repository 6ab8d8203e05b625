"""Figures of a result (colloc.results.plotting) on small made-up results: the size limits, the
zoomed window sized by the signal's dynamics, units on the axes, the legend outside the
panels, the parameter lines, hybrid trajectories and a result read back from JSON."""

from __future__ import annotations

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from colloc import Result
from colloc.results import plotting
from colloc.results.plotting import (DPI, MAX_HEIGHT_IN, MAX_WIDTH_IN, parameter_lines, plot_fit,
                                     plot_residuals)


def fake_result(trials=1, signals=("x",), duration=10.0, rate=100.0, period=1.0, units=None, times=None,
                spike_at=None, **fields) -> Result:
    """Sines of ``period`` sampled at ``rate`` for ``duration`` (or at ``times``) in every trial;
    the measurement is the model plus fixed noise, and a large error at ``spike_at`` (s)."""
    rng = np.random.default_rng(7)
    t = np.arange(int(round(duration * rate)) + 1) / rate if times is None else np.asarray(times, dtype=float)
    index = pd.Index(t, name="time")
    traj, meas, res = {}, {}, {}
    for k in range(trials):
        model = pd.DataFrame({s: np.sin(2 * np.pi * t / period + j + k) for j, s in enumerate(signals)},
                             index=index)
        noise = pd.DataFrame(0.05 * rng.standard_normal(model.shape), index=index, columns=model.columns)
        if spike_at is not None:
            noise.iloc[int(np.argmin(np.abs(t - spike_at)))] = 2.0
        name = f"trial{k + 1}.csv"
        traj[name], meas[name], res[name] = model, model - noise, noise
    doc = dict(problem="fake", method="midpoint", success=True, status="Solve_Succeeded", message="",
               iterations=3, objective=1.0, parameters={"k": 1.5}, standard_errors={"k": 0.1},
               covariance=None, trajectories=traj, measurements=meas, residuals=res, timings={},
               num_nodes=len(t) * trials, trials=list(traj), versions={},
               units={"k": "N/m", **{s: "rad" for s in signals}} if units is None else units)
    doc.update(fields)
    return Result(**doc)


def pixels(fig) -> tuple[float, float]:
    w, h = fig.get_size_inches()
    return w * DPI, h * DPI


def data_axes(fig):
    return [ax for ax in fig.axes if ax.lines]


# ---- size ------------------------------------------------------------------------------------
def test_many_trials_make_a_grid_within_a_screen_pair():
    # the semibatch case: 10 experiments of 21,600 s, 21 samples each
    fig = plot_fit(fake_result(trials=10, signals=("a", "b", "c", "d"), duration=21600, rate=1 / 1080,
                               period=40000))
    width, height = pixels(fig)
    assert width <= 2400 and height <= 2 * 1080
    assert len(data_axes(fig)) == 40  # all ten trials, no zoomed panel (21 samples)
    assert len({round(ax.get_position().x0, 3) for ax in fig.axes}) > 1
    assert len({round(ax.get_position().y0, 3) for ax in fig.axes}) > 4  # blocks of trials below each other


def test_too_many_trials_are_cut_and_the_figure_says_which():
    fig = plot_fit(fake_result(trials=30, signals=("a", "b", "c"), duration=5.0, rate=20))
    width, height = pixels(fig)
    assert width <= MAX_WIDTH_IN * DPI and height <= MAX_HEIGHT_IN * DPI
    shown = {ax.get_title(loc="right") for ax in fig.axes} - {""}
    assert 1 < len(shown) < 30
    notes = [t.get_text() for t in fig.texts if "trials" in t.get_text()]
    assert notes == [f"showing {len(shown)} of 30 trials: trial1.csv … trial{len(shown)}.csv "
                     "(plot one with trial=NAME)"]


def test_many_signals_take_several_columns_or_are_cut_with_a_note():
    names = [f"s{j}" for j in range(24)]
    fig = plot_fit(fake_result(signals=names, duration=5.0))
    assert pixels(fig)[1] <= MAX_HEIGHT_IN * DPI
    assert sorted(ax.get_ylabel() for ax in fig.axes) == sorted(f"{s} (rad)" for s in names)
    assert len({round(ax.get_position().x0, 3) for ax in fig.axes}) >= 2
    many = [f"s{j}" for j in range(60)]
    fig = plot_residuals(fake_result(signals=many, duration=2.0, rate=20))
    width, height = pixels(fig)
    assert width <= MAX_WIDTH_IN * DPI and height <= MAX_HEIGHT_IN * DPI
    n = len(fig.axes)
    assert n < 60
    note = f"showing the first {n} of 60 signals (choose with signals=[…])"
    assert any(t.get_text() == note for t in fig.texts)


def test_the_written_png_has_the_size_of_the_figure(tmp_path):
    fig = plot_fit(fake_result(signals=("a", "b")), path=tmp_path / "fit.png")
    rows, cols = matplotlib.image.imread(tmp_path / "fit.png").shape[:2]
    assert (cols, rows) == tuple(round(p) for p in pixels(fig))


# ---- zoomed window ---------------------------------------------------------------------------
def zoom_axes(fig):
    return [ax for ax in fig.axes if ax.get_title(loc="right").startswith("zoom")]


@pytest.mark.parametrize("period", [0.5, 2.0])
def test_the_zoomed_window_spans_a_few_periods_of_the_signal(period):
    """A sine's autocorrelation falls to 1/e in 0.19 period: the window is about 3 periods
    whatever the period, and sits on the largest residual."""
    result = fake_result(duration=60.0, period=period, spike_at=41.0)
    lo, hi = plotting._zoom_window(result, "trial1.csv", ["x"])
    assert 2.5 * period < hi - lo < 3.5 * period
    assert lo < 41.0 < hi
    fig = plot_fit(result)
    (zoom,) = zoom_axes(fig)
    assert zoom.get_xlim() == pytest.approx((lo, hi))
    shown = zoom.lines[0].get_xdata()  # the measured samples drawn in the zoomed panel
    assert shown.min() >= lo - 0.011 and shown.max() <= hi + 0.011


def test_the_zoomed_window_holds_at_least_twenty_samples():
    # a fast sine sampled slowly: a few periods would be 3 samples
    result = fake_result(duration=2000.0, rate=2.0, period=1.1)
    lo, hi = plotting._zoom_window(result, "trial1.csv", ["x"])
    assert hi - lo == pytest.approx(plotting.ZOOM_MIN_SAMPLES / 2.0)


@pytest.mark.parametrize("duration, rate, period", [(3.0, 100.0, 1.0),  # three periods only
                                                    (21600.0, 1 / 1080, 5000.0)])  # 21 samples
def test_no_zoom_when_the_record_is_short_in_its_own_units(duration, rate, period):
    result = fake_result(duration=duration, rate=rate, period=period)
    assert plotting._zoom_window(result, "trial1.csv", ["x"]) is None
    assert zoom_axes(plot_fit(result)) == []


def test_timescale_of_a_constant_or_trend_signal():
    t = np.linspace(0.0, 10.0, 101)
    assert np.isnan(plotting._timescale(t, np.ones_like(t)))
    assert plotting._timescale(t, t ** 2) > 1.0  # a trend's time scale is a fair part of its record


# ---- labels, legend, text --------------------------------------------------------------------
def test_every_axis_has_a_unit_and_an_undeclared_one_is_named():
    result = fake_result(signals=("x", "force"), duration=60.0, units={"x": "m"})
    for fig in (plot_fit(result), plot_residuals(result)):
        labels = {ax.get_ylabel() for ax in fig.axes}
        assert labels == {"x (m)", "force (unit not declared)"}
        bottom = [ax for ax in fig.axes if ax.xaxis.get_tick_params(which="major")["labelbottom"]]
        assert bottom and all(ax.get_xlabel() == "time (s)" for ax in bottom)
        assert all(ax.get_xlabel() in ("time (s)", "") for ax in fig.axes)


def test_the_legend_is_outside_every_panel():
    fig = plot_fit(fake_result(trials=2, signals=("a", "b"), duration=60.0))
    fig.draw_without_rendering()
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == ["measured", "identified (midpoint)", "zoomed window"]
    box = legend.get_window_extent()
    assert all(ax.get_legend() is None for ax in fig.axes)
    assert not any(box.overlaps(ax.get_window_extent()) for ax in fig.axes)
    assert not any(box.overlaps(ax.title.get_window_extent()) for ax in fig.axes if ax.get_title(loc="right"))


def test_parameter_lines_show_the_interval_or_say_there_is_none():
    result = fake_result(parameters={"k": 1.23, "c": 4.0, "d": 2.0},
                         standard_errors={"k": float("nan"), "c": 0.5, "d": 0.1},
                         intervals={"d": (1.8, 2.3)}, units={"k": "m", "c": "N", "d": "s"})
    assert parameter_lines(result) == ["k = 1.23 m (SE not estimable)",
                                       "c = 4 N [3.02, 4.98]",  # no interval given: ±1.96 SE
                                       "d = 2 s [1.8, 2.3]"]  # asymmetric, as given
    result.standard_errors = None
    result.intervals = {}
    assert parameter_lines(result)[0] == "k = 1.23 m (SE not estimable)"
    text = "\n".join(t.get_text() for t in plot_fit(result).texts)
    assert "n/a" not in text and "k = 1.23 m (SE not estimable)" in text


def test_residual_panels_carry_their_rms():
    result = fake_result(signals=("x",), duration=5.0)
    (ax,) = plot_residuals(result).axes
    rms = np.sqrt(np.mean(result.residuals["trial1.csv"]["x"].to_numpy() ** 2))
    assert ax.get_title(loc="right") == f"trial1.csv · RMS {rms:.3g} rad"


# ---- any result ------------------------------------------------------------------------------
def test_repeated_times_of_a_hybrid_trajectory():
    """A mode switch repeats a time in the trajectory (the state before and after the impact)."""
    t = np.linspace(0.0, 30.0, 1501)
    times = np.sort(np.r_[t, t[[300, 900]]])
    result = fake_result(times=times, period=0.8)
    assert result.trajectories["trial1.csv"].index.has_duplicates
    lo, hi = plotting._zoom_window(result, "trial1.csv", ["x"])
    assert 2.0 < hi - lo < 3.0
    assert len(zoom_axes(plot_fit(result))) == 1
    assert len(plot_residuals(result).axes) == 1


def test_a_result_read_back_from_json_plots_the_same(tmp_path):
    result = fake_result(trials=2, signals=("a", "b"), duration=60.0, intervals={"k": (1.3, 1.7)})
    back = Result.from_json(result.to_json())
    for plot in (plot_fit, plot_residuals):
        figs = [plot(r) for r in (result, back)]
        assert [[(ax.get_ylabel(), ax.get_title(loc="right")) for ax in f.axes] for f in figs][0] == \
               [[(ax.get_ylabel(), ax.get_title(loc="right")) for ax in f.axes] for f in figs][1]
    plot_fit(back, path=tmp_path / "back.png")
    assert (tmp_path / "back.png").stat().st_size > 10_000


def test_a_result_without_trajectories_still_gives_a_figure():
    result = fake_result(trials=0)
    for fig in (plot_fit(result), plot_residuals(result)):
        assert fig.axes == []
        assert any(t.get_text().startswith("nothing to plot") for t in fig.texts)
    assert any(t.get_text().startswith("k = 1.5 N/m [") for t in plot_fit(result).texts)


def test_a_long_record_is_thinned_to_what_it_looks_like():
    rng = np.random.default_rng(1)
    t = np.arange(200_000) / 1000.0
    y = np.sin(t) + 0.1 * rng.standard_normal(t.size)
    y[123_457] = 9.0
    y[5000:7000] = np.nan
    ts, ys = plotting._thin(t, y)  # a line: its envelope
    assert len(ts) <= plotting.MAX_POINTS + 2 and np.all(np.diff(ts) > 0)
    assert 9.0 in ys and np.nanmin(ys) == np.nanmin(y)
    assert np.isnan(ys).any()  # the gap stays a gap
    ts, ys = plotting._thin(t, y, dots=True)  # dots: the same scatter, the outlier kept
    assert len(ts) <= plotting.MAX_POINTS + 1 and np.all(np.diff(ts) > 0)
    assert 9.0 in ys
    noise = (y - np.sin(t))[np.isfinite(y)]
    kept = (ys - np.sin(ts))[np.isfinite(ys)]
    assert np.percentile(kept, [10, 50, 90]) == pytest.approx(np.percentile(noise, [10, 50, 90]), abs=0.01)


def test_unknown_signal_is_named():
    with pytest.raises(KeyError, match="no signal.*nope.*available: x"):
        plot_fit(fake_result(), signals=["nope"])


def test_comparison_legends_sit_under_the_panels():
    from colloc.results.plotting import plot_estimates, plot_objective_history
    from colloc.studies.compare import Comparison, Run

    timings = {"build_s": 0.1, "solve_s": 1.0, "total_s": 1.2}
    runs = [Run(m, s, {"k": 1.0 + s}, fake_result(success=m == "a", timings=timings,
                                                  info={"objective_history": [10.0, 3.0, 1.0 + s]}))
            for m in ("a", "b") for s in range(2)]
    comparison = Comparison(problem="fake", runs=runs, methods={"a": "a", "b": "b"}, parameter_names=["k"],
                            truth={"k": 1.5}, starts=2)
    for fig in (plot_objective_history(comparison), plot_estimates(comparison)):
        fig.draw_without_rendering()
        (legend,) = fig.legends
        assert {t.get_text().split(" ")[0] for t in legend.get_texts()} >= {"a", "b"}
        assert all(ax.get_legend() is None for ax in fig.axes)
        assert not any(legend.get_window_extent().overlaps(ax.get_window_extent()) for ax in fig.axes)


def test_every_plot_is_a_figure_that_shows_itself_without_pyplot(tmp_path):
    """Each plotting function returns colloc's Figure, whose PNG form (what Jupyter shows as a
    cell's value) is a real image of the figure's size; pyplot keeps no figure (nothing to show
    a second time, nothing to close); a profile's ``path`` is written headless."""
    import io

    import matplotlib.pyplot as plt

    from colloc.results.figure import Figure
    from colloc.studies.compare import Comparison, Run
    from colloc.studies.profile import Profile

    plt.close("all")
    result = fake_result(signals=("a", "b"), duration=5.0)
    runs = [Run(m, s, {"k": 1.0 + s}, fake_result(info={"objective_history": [10.0, 3.0, 1.0 + s]},
                                                  timings={"build_s": 0.1, "solve_s": 1.0, "total_s": 1.2}))
            for m in ("a", "b") for s in range(2)]
    comparison = Comparison(problem="fake", runs=runs, methods={"a": "a", "b": "b"}, parameter_names=["k"],
                            truth={"k": 1.5}, starts=2)
    grid = np.linspace(0.5, 1.5, 5)
    profile = Profile("k", grid, 10 * (grid - 1) ** 2, pd.DataFrame(index=range(5)), np.ones(5, bool))
    figures = [result.plot_fit(), result.plot_residuals(), comparison.plot_estimates(),
               comparison.plot_objective_history(), profile.plot(path=tmp_path / "profile.png")]
    assert plt.get_fignums() == []
    for fig in figures:
        assert isinstance(fig, Figure)
        image = matplotlib.image.imread(io.BytesIO(fig._repr_png_()))
        assert image.shape[0] > 100 and image.shape[1] > 100
    assert matplotlib.image.imread(tmp_path / "profile.png").shape[:2] == (432, 720)  # 3.6 × 6 in at 120 dpi
    fig, ax = plt.subplots()  # drawn into the caller's axes: those are returned, the figure is theirs
    assert profile.plot(ax=ax) is ax and plt.get_fignums() == [fig.number]
    plt.close(fig)
