"""Missing samples and input jumps in trial data: reading, refusing, interpolating."""

import numpy as np
import pytest

import colloc as co
from colloc.base.errors import DataError, ProblemError
from colloc.transcription.grid import mesh_nodes
from colloc.transcription.interpolation import InputReader


def _csv(tmp_path, text, name="t.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_empty_cell_without_opt_in_keeps_todays_message(tmp_path):
    path = _csv(tmp_path, "time,a,b\n0,1,\n0.5,2,3\n1,3,4\n")
    with pytest.raises(DataError, match=r"t\.csv: column 'b', row 1 \(line 2 of the file\): empty cell; "
                                        r"expected a number"):
        co.Trial.from_csv(path)


def test_empty_cells_are_unmeasured_samples_when_allowed(tmp_path):
    path = _csv(tmp_path, "time,a,b\n0,1,\n0.5,,\n1,3,4\n1.5,,5\n")
    trial = co.Trial.from_csv(path, missing="allow")
    np.testing.assert_array_equal(trial.time, [0, 0.5, 1, 1.5])  # the all-empty row is a time point
    np.testing.assert_array_equal(trial.present("a"), [True, False, True, False])
    np.testing.assert_array_equal(trial["b"][2:], [4.0, 5.0])
    assert trial.has_missing and trial.missing == "allow"
    trial.to_csv(tmp_path / "back.csv")
    back = co.Trial.from_csv(tmp_path / "back.csv", missing="allow")
    np.testing.assert_array_equal(back["a"], trial["a"])  # NaN == NaN position by position
    assert (tmp_path / "back.csv").read_text().splitlines()[2] == "0.5,,"


@pytest.mark.parametrize("text, match", [
    ("time,a\n0,1\n,2\n1,3\n", r"column 'time', row 2 \(line 3 of the file\): empty time cell"),
    ("time,a\n0,1\n0.5,nan\n1,3\n", r"column 'a', row 2 \(line 3 of the file\): value 'nan' is not finite"),
    ("time,a\n0,1\n0.5,inf\n1,3\n", r"column 'a', row 2 \(line 3 of the file\): value 'inf' is not finite"),
    ("time,a\n0,1\n0.5,x\n1,3\n", r"column 'a', row 2 \(line 3 of the file\): cannot read 'x'"),
])
def test_allowed_missing_still_refuses_nan_inf_text_and_empty_time(tmp_path, text, match):
    with pytest.raises(DataError, match=match):
        co.Trial.from_csv(_csv(tmp_path, text), missing="allow")


def test_bad_missing_value_is_refused(tmp_path):
    path = _csv(tmp_path, "time,a\n0,1\n1,2\n")
    with pytest.raises(ValueError, match=r"missing must be 'error' .* or 'allow' .*got 'yes'"):
        co.Trial.from_csv(path, missing="yes")
    with pytest.raises(ValueError, match=r"missing must be .*got 'skip'"):
        co.Trial([0.0, 1.0], {"a": [1.0, 2.0]}, missing="skip")


def test_nan_in_python_needs_the_opt_in():
    with pytest.raises(DataError, match=r"trial 'x': signal 'a', row 2 \(index 1\): value nan is not finite.*"
                                        r"missing='allow'"):
        co.Trial([0.0, 1.0, 2.0], {"a": [1.0, np.nan, 3.0]}, name="x")
    trial = co.Trial([0.0, 1.0, 2.0], {"a": [1.0, np.nan, 3.0]}, name="x", missing="allow")
    assert trial.present("a").tolist() == [True, False, True]
    with pytest.raises(DataError, match=r"signal 'a', row 3 \(index 2\): value inf is not finite"):
        co.Trial([0.0, 1.0, 2.0], {"a": [1.0, np.nan, np.inf]}, missing="allow")


def test_repeated_time_is_a_jump_of_a_jump_column(tmp_path):
    path = _csv(tmp_path, "time,x,u\n0,1,0\n0.5,2,0\n0.5,2,1\n1,3,1\n")
    trial = co.Trial.from_csv(path, jump_columns=["u"])
    np.testing.assert_array_equal(trial.time, [0, 0.5, 1])
    np.testing.assert_array_equal(trial["u"], [0, 1, 1])  # the value after the step
    times, left = trial.jumps["u"]
    assert times.tolist() == [0.5] and left.tolist() == [0.0]
    trial.to_csv(tmp_path / "back.csv")
    assert (tmp_path / "back.csv").read_text() == "time,x,u\n0.0,1.0,0.0\n0.5,2.0,0.0\n0.5,2.0,1.0\n1.0,3.0,1.0\n"


@pytest.mark.parametrize("text, kwargs, match", [
    # without jump columns: today's message, even where a column differs
    ("time,x,u\n0,1,0\n0.5,2,0\n0.5,2,1\n1,3,1\n", {},
     r"column 'time', row 3 \(line 4 of the file\): duplicate time 0.5 \(same as row 2 \(line 3 of the file\)\); "
     r"time must be strictly increasing: remove or fix the duplicate row$"),
    # another column differs
    ("time,x,u\n0,1,0\n0.5,2,0\n0.5,2.5,1\n1,3,1\n", {"jump_columns": ["u"]},
     r"row 3 \(line 4 of the file\): duplicate time 0.5 .*column 'x' differs between the two rows: 2.0 and 2.5"),
    # nothing differs
    ("time,x,u\n0,1,0\n0.5,2,0\n0.5,2,0\n1,3,1\n", {"jump_columns": ["u"]},
     r"row 3 \(line 4 of the file\): duplicate time 0.5 .*only where the jump column\(s\) 'u' differ"),
    # three rows at one time
    ("time,x,u\n0,1,0\n0.5,2,0\n0.5,2,1\n0.5,2,2\n1,3,1\n", {"jump_columns": ["u"]},
     r"row 4 \(line 5 of the file\): duplicate time 0.5 \(same as row 3"),
    # decreasing time is still today's error
    ("time,x,u\n0,1,0\n0.5,2,0\n0.4,2,1\n1,3,1\n", {"jump_columns": ["u"]},
     r"row 3 \(line 4 of the file\): decreasing time 0.4"),
])
def test_other_repeated_times_stay_errors(tmp_path, text, kwargs, match):
    with pytest.raises(DataError, match=match):
        co.Trial.from_csv(_csv(tmp_path, text), **kwargs)


def test_jump_rows_may_leave_other_columns_empty(tmp_path):
    path = _csv(tmp_path, "time,x,u\n0,1,0\n0.5,2,0\n0.5,,1\n1,3,1\n")
    trial = co.Trial.from_csv(path, jump_columns=["u"], missing="allow")
    np.testing.assert_array_equal(trial["x"], [1, 2, 3])
    assert trial.jumps["u"][1].tolist() == [0.0]


def test_reader_is_piecewise_between_jumps_with_the_data_values_on_each_side():
    # u = t² before the jump at 1.0 (rows at 1.0: 1.0 then 5.0), u = 4 + t after it
    t = np.linspace(0.0, 2.0, 21)
    before, after = t[t <= 1.0], t[t >= 1.0]
    time = np.concatenate([before, after])
    u = np.concatenate([before**2, 4 + after])
    trial = co.Trial(time, {"u": u}, jump_columns=["u"])
    reader = InputReader(trial, ["u"], "cubic", {"u": np.array([1.0])})
    probe = np.array([0.33, 0.97, 1.0, 1.03, 1.71])
    # a cubic spline reproduces t² and 4 + t exactly within each piece
    np.testing.assert_allclose(reader(probe)[0], [0.33**2, 0.97**2, 5.0, 5.03, 5.71], atol=1e-12)
    np.testing.assert_allclose(reader(np.array([1.0]), side="left")[0], [1.0], atol=1e-12)
    mesh = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    # the interval ending at the jump reads the left piece at its end, the next the right piece
    np.testing.assert_allclose(reader.on_intervals(mesh, 1.0)[0], [0.25, 1.0, 5.5, 6.0], atol=1e-12)
    np.testing.assert_allclose(reader.on_intervals(mesh, 0.0)[0], [0.0, 0.25, 5.0, 5.5], atol=1e-12)


def test_reader_declared_jump_off_the_samples_extends_each_side_to_it():
    t = np.linspace(0.0, 1.0, 11)
    u = np.where(t < 0.537, 2.0 * t, 3.0 - t)  # a jump at 0.537, between samples
    trial = co.Trial(t, {"u": u})
    reader = InputReader(trial, ["u"], "cubic", {"u": np.array([0.537])})
    np.testing.assert_allclose(reader(np.array([0.537]), side="left")[0], [1.074], atol=1e-12)
    np.testing.assert_allclose(reader(np.array([0.537]))[0], [2.463], atol=1e-12)
    np.testing.assert_allclose(reader(np.array([0.52, 0.55]))[0], [1.04, 2.45], atol=1e-12)


def test_reader_interpolates_through_measured_samples_only():
    t = np.linspace(0.0, 1.0, 11)
    u = 1.0 + 2.0 * t - t**3
    u[[3, 4, 7]] = np.nan
    trial = co.Trial(t, {"u": u}, missing="allow")
    got = InputReader(trial, ["u"], "cubic")(t)[0]
    np.testing.assert_allclose(got, 1.0 + 2.0 * t - t**3, atol=1e-12)  # a cubic: the spline is exact


def test_mesh_gets_a_point_at_each_jump():
    mesh, nodes = mesh_nodes(np.linspace(0, 1, 11), None, 1, (0.0, 1.0), np.array([0.537, 0.6]))
    assert 0.537 in mesh and np.sum(np.isclose(mesh, 0.6)) == 1 and mesh.size == 12


def _model(jumps=()):
    m = co.Model("first_order")
    x = m.state("x")
    u = m.known_input("u", jumps=jumps)
    a = m.parameter("a", bounds=(0.01, 100.0), guess=1.0)
    m.set_der(x, -a * x + u)
    return m


def test_signal_with_fewer_than_two_measured_values_is_refused(tmp_path):
    path = _csv(tmp_path, "time,x,u\n0,1,0\n0.5,,1\n1,,1\n")
    trial = co.Trial.from_csv(path, missing="allow")
    with pytest.raises(ProblemError, match=r"trial 't\.csv' \(.*t\.csv\): column 'x' has 1 measured value\(s\) of 3"):
        co.Problem(_model(), [trial])
    trial = co.Trial([0.0, 0.5, 1.0], {"x": [1.0, 2.0, 3.0], "u": [np.nan, np.nan, 1.0]}, name="py",
                     missing="allow")
    with pytest.raises(ProblemError, match=r"trial 'py': signal 'u' has 1 measured value\(s\)"):
        co.Problem(_model(), [trial])


def test_jumps_outside_the_record_are_refused():
    trial = co.Trial([0.0, 0.5, 1.0], {"x": [1.0, 2.0, 3.0], "u": [0.0, 1.0, 1.0]}, name="short")
    with pytest.raises(ProblemError, match=r"known input 'u': jump at t = 5 s is outside trial 'short', "
                                           r"which runs from 0 to 1 s"):
        co.Problem(_model(jumps=[5.0]), [trial])
    with pytest.raises(ProblemError, match=r"jump at t = 0 s is outside trial 'short'"):
        co.Problem(_model(jumps=[0.0]), [trial])


def test_model_jumps_must_be_finite_times():
    m = co.Model("m")
    with pytest.raises(co.ModelError, match=r"known input 'u' of model 'm': jumps must be finite times"):
        m.known_input("u", jumps=[np.nan])


def test_jumps_only_in_exact_known_inputs(tmp_path):
    path = _csv(tmp_path, "time,x,u\n0,1,0\n0.5,2,0\n0.5,2.5,0\n1,3,1\n")
    trial = co.Trial.from_csv(path, jump_columns=["x"])
    with pytest.raises(ProblemError, match=r"column 'x' jumps at t = 0.5 s but is not a known input"):
        co.Problem(_model(), [trial])
    path = _csv(tmp_path, "time,x,u\n0,1,0\n0.5,2,0\n0.5,2,1\n1,3,1\n", "u.csv")
    trial = co.Trial.from_csv(path, jump_columns=["u"])
    with pytest.raises(ProblemError, match=r"column 'u' jumps at t = 0.5 s but is an errors-in-variables input"):
        co.Problem(_model(), [trial], fit={"x": 1.0}, input_noise={"u": 0.1})


def test_num_observations_counts_measured_values_only():
    t = np.linspace(0.0, 1.0, 11)
    x = np.exp(-t)
    x[[2, 3, 4]] = np.nan
    trial = co.Trial(t, {"x": x, "u": np.zeros(11)}, missing="allow")
    assert co.Problem(_model(), [trial], fit={"x": 1.0}).num_observations == 8
    guess = co.Problem(_model(), [trial], fit={"x": 1.0}).guess_trajectories(0, t)["x"]
    np.testing.assert_allclose(guess[[2, 3, 4]], np.interp(t[[2, 3, 4]], [0.1, 0.5], np.exp(-np.array([0.1, 0.5]))))


def test_simulate_restarts_at_a_repeated_time_with_the_input_step():
    # ẋ = −a x + u, u = 0 then 1 from t = 0.5: x = e^{−a t}, then x(0.5) e^{−a(t−0.5)} + (1 − e^{−a(t−0.5)})/a
    m = co.Model("m")
    x = m.state("x")
    u = m.known_input("u")
    a = m.parameter("a")
    m.set_der(x, -a * x + u)
    t = np.array([0.0, 0.25, 0.5, 0.5, 0.75, 1.0])
    U = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])[:, None]
    sim = co.simulate(m, [1.0], [2.0], t, known_inputs=U, rtol=1e-11, atol=1e-11)
    assert sim.success and "2 pieces" in sim.message
    xs = np.exp(-1.0)
    exact = np.where(t < 0.5, np.exp(-2 * t), xs * np.exp(-2 * (t - 0.5)) + (1 - np.exp(-2 * (t - 0.5))) / 2)
    exact[2] = xs
    np.testing.assert_allclose(sim.states[:, 0], exact, rtol=1e-8)


def test_delay_simulation_refuses_input_jumps():
    m = co.Model("d")
    x = m.state("x")
    u = m.known_input("u")
    m.set_der(x, -m.delayed(x, 0.1) + u)
    t = np.array([0.0, 0.5, 0.5, 1.0])
    sim = co.simulate(m, [1.0], [], t, known_inputs=np.array([[0.0], [0.0], [1.0], [1.0]]))
    assert not sim.success and sim.status == "not_available" and "jumps" in sim.message


def test_shooting_refuses_jumps_and_fits_measured_values_only():
    t = np.linspace(0.0, 1.0, 21)
    a = 1.3
    x = np.exp(-a * t)  # u = 0: ẋ = −a x
    trial = co.Trial(t, {"x": x, "u": np.zeros(21)}, name="s")
    with pytest.raises(ProblemError, match=r"trial 's': known input\(s\) u jump; the shooting baselines"):
        co.solve(co.Problem(_model(jumps=[0.5]), [trial], fit={"x": 1.0}), co.SingleShooting(), start="guess")
    gaps = x.copy()
    gaps[5:12] = np.nan
    trial = co.Trial(t, {"x": gaps, "u": np.zeros(21)}, name="g", missing="allow")
    result = co.solve(co.Problem(_model(), [trial], fit={"x": 1.0}), co.SingleShooting(), start="guess")
    assert result.success and result.parameters["a"] == pytest.approx(a, rel=1e-5)


def test_errors_in_variables_with_gaps_needs_a_grid_through_the_samples():
    t = np.linspace(0.0, 1.0, 21)
    u = np.sin(t)
    u[5:9] = np.nan
    trial = co.Trial(t, {"x": np.cos(t), "u": u}, name="e", missing="allow")
    problem = co.Problem(_model(), [trial], fit={"x": 1.0}, input_noise={"u": 0.1})
    from colloc.transcription.collocation import transcribe

    with pytest.raises(ProblemError, match=r"trial 'e': errors-in-variables input\(s\) u have unmeasured samples"):
        transcribe(problem, co.Midpoint(num_nodes=15))


def test_bootstrap_replicates_keep_the_unmeasured_samples_unmeasured():
    from colloc.studies.bootstrap import _replicate

    t = np.linspace(0.0, 1.0, 11)
    x = np.exp(-t)
    x[[3, 4]] = np.nan
    trial = co.Trial(t, {"x": x, "u": np.zeros(11)}, name="b", missing="allow")
    problem = co.Problem(_model(), [trial], fit={"x": 1.0})

    class _R:
        trajectories = {"b": __import__("pandas").DataFrame({"x": np.exp(-t)}, index=t)}

    (replica,) = _replicate(problem, _R(), np.random.default_rng(0), 1e-4)
    assert np.array_equal(np.isnan(replica["x"]), np.isnan(x))
    assert replica.missing == "allow"


def test_from_dataframe_takes_the_missing_opt_in():
    import pandas as pd

    frame = pd.DataFrame({"time": [0.0, 1.0, 2.0], "a": [1.0, np.nan, 3.0]})
    with pytest.raises(DataError, match=r"trial 'f': signal 'a', row 2 \(index 1\): value nan is not finite"):
        co.Trial.from_dataframe(frame, name="f")
    assert co.Trial.from_dataframe(frame, name="f", missing="allow").present("a").tolist() == [True, False, True]


def test_cli_refuses_missing_for_a_loader_without_it():
    import types

    from colloc import OptionsError
    from colloc.definition.registry import check_problem_module
    from colloc.studies.identify import load_trials

    module = types.ModuleType("mine")
    module.__dict__.update(TRUE={}, DEFAULT_DATA=("mine.csv",), REQUIRED_COLUMNS=("y",),
                           load_trial=lambda path: None, problem=lambda trials: None)
    with pytest.raises(OptionsError, match=r"--missing allow: the load_trial of problem 'mine' has no missing= argument"):
        load_trials(check_problem_module(module), ["x.csv"], "allow")
