"""``colloc batch`` / ``co.batch``: many fits on Dask, each the fit ``colloc identify`` makes.

Records are short pendulum trials from the problem's generator (CVODES); the reference for
every fit is a serial identification of the same files in this process.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import colloc as co
from colloc.cli import main
from colloc.studies.compare import compare
from colloc.studies.identify import identify_files
from colloc_problems import pendulum

TRUE_P = {"s0": 5.0, "s1": 10.0, "s2": 20.0, "s3": 40.0}


def _cohort(folder: Path, subjects=TRUE_P, broken: bool = True) -> Path:
    rows = ["fit_id,problem,data,group"]
    for i, (fid, p) in enumerate(subjects.items()):
        for k in range(2):
            pendulum.simulate_trial(p=p, duration=2.0, theta0=0.5 + 0.3 * k, noise_std=0.01,
                                    seed=10 * i + k).to_csv(folder / f"{fid}_t{k}.csv")
            rows.append(f"{fid},pendulum,{fid}_t{k}.csv,{'A' if i % 2 else 'B'}")
    if broken:
        (folder / "broken.csv").write_text("time,theta\n0,abc\n0.01,1\n")
        rows += ["bad,pendulum,broken.csv,B", "gone,pendulum,no_such_file.csv,B"]
    (folder / "manifest.csv").write_text("\n".join(rows) + "\n")
    return folder / "manifest.csv"


def _table(path: Path) -> dict[str, dict]:
    with open(path, newline="") as fh:
        return {r["fit_id"]: r for r in csv.DictReader(fh)}


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cohort")
    manifest = _cohort(folder)
    report = co.batch(manifest, folder / "out", workers=2, summary=True, progress=False)
    return folder, manifest, report


def test_good_fits_equal_serial_identify_and_broken_ones_are_rows(cohort):
    folder, _, report = cohort
    table = _table(folder / "out" / "results.csv")
    assert list(table) == ["s0", "s1", "s2", "s3", "bad", "gone"]  # manifest order
    header = (folder / "out" / "results.csv").read_text().splitlines()[0].split(",")
    assert header[:7] == ["fit_id", "problem", "success", "status", "iterations", "objective", "total_s"]
    assert header[7:9] == ["p", "se_p"]
    for fid, p in TRUE_P.items():
        serial = identify_files("pendulum", [str(folder / f"{fid}_t{k}.csv") for k in range(2)])
        doc = json.loads((folder / "out" / "fits" / f"{fid}.json").read_text())
        assert doc["parameters"] == serial.parameters  # exactly: the same code path
        assert doc["standard_errors"]["p"] == serial.standard_errors["p"]
        assert table[fid]["success"] == "True" and float(table[fid]["p"]) == serial.parameters["p"]
        assert abs(serial.parameters["p"] / p - 1) < 0.01
    for fid, fragment in (("bad", "cannot read 'abc'"), ("gone", "no such file")):
        assert table[fid]["success"] == "False" and table[fid]["status"] == "bad_input"
        assert fragment in table[fid]["message"]
    assert report.total == 6 and report.run == 6 and report.failed == 2 and report.succeeded == 4


def test_summary_groups(cohort):
    folder, _, _ = cohort
    rows = list(csv.DictReader((folder / "out" / "summary.csv").read_text().splitlines()))
    table = _table(folder / "out" / "results.csv")
    for g in ("A", "B"):
        vals = [float(r["p"]) for r in table.values() if r["group"] == g and r["success"] == "True"]
        (row,) = [r for r in rows if r["group"] == g and r["parameter"] == "p"]
        assert int(row["n"]) == len(vals) == 2
        assert float(row["mean"]) == pytest.approx(np.mean(vals), rel=1e-12)
        assert float(row["sd"]) == pytest.approx(np.std(vals, ddof=1), rel=1e-12)
    assert (folder / "out" / "summary.png").read_bytes()[:4] == b"\x89PNG"


def test_resume_redoes_only_what_is_missing(cohort, tmp_path):
    folder, manifest, _ = cohort
    out = tmp_path / "out"
    import shutil

    shutil.copytree(folder / "out", out)
    (out / "fits" / "s2.json").unlink()  # as if the batch had been stopped before s2 finished
    before = {f: (out / "fits" / f"{f}.json").stat().st_mtime_ns for f in ("s0", "s1", "s3")}
    report = co.batch(manifest, out, workers=1, resume=True, progress=False)
    assert report.run == 1 and report.skipped == 5
    assert {f: (out / "fits" / f"{f}.json").stat().st_mtime_ns for f in before} == before
    assert _table(out / "results.csv") .keys() == _table(folder / "out" / "results.csv").keys()
    assert json.loads((out / "fits" / "s2.json").read_text())["parameters"] == \
        json.loads((folder / "out" / "fits" / "s2.json").read_text())["parameters"]


def test_a_killed_worker_does_not_lose_fits(tmp_path):
    from distributed import Client, LocalCluster

    manifest = _cohort(tmp_path, {f"k{i}": 5.0 + 3 * i for i in range(6)}, broken=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"}, silence_logs=50) as cluster, Client(cluster) as client:
        pids = list(client.run(os.getpid).values())
        killed = []

        def kill_one(done, failed, running):
            if not killed and running:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        report = co.batch(manifest, tmp_path / "out", client=client, progress=kill_one)
    assert killed, "the batch ended before a worker could be killed"
    assert report.run == 6 and report.failed == 0, _table(tmp_path / "out" / "results.csv")
    # the fits redone after the kill are the fits: every one equals a serial identify exactly
    table = _table(tmp_path / "out" / "results.csv")
    for i in range(6):
        fid = f"k{i}"
        serial = identify_files("pendulum", [str(tmp_path / f"{fid}_t{k}.csv") for k in range(2)])
        doc = json.loads((tmp_path / "out" / "fits" / f"{fid}.json").read_text())
        assert doc["parameters"] == serial.parameters and float(table[fid]["p"]) == serial.parameters["p"]
        assert abs(serial.parameters["p"] / (5.0 + 3 * i) - 1) < 0.01


def test_cluster_path_with_a_separate_scheduler_and_worker(tmp_path):
    manifest = _cohort(tmp_path, {"c0": 7.0, "c1": 12.0}, broken=False)
    sched_file = tmp_path / "scheduler.json"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", "0",
                               "--dashboard-address", ":0", "--scheduler-file", str(sched_file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)]
    try:
        for _ in range(300):
            if sched_file.exists() and sched_file.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                       "--nthreads", "1", "--nworkers", "1", "--no-dashboard"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
        code = main(["batch", str(manifest), "--out", str(tmp_path / "out"), "--scheduler", address])
    finally:
        for p in procs[::-1]:
            p.terminate()
        for p in procs:
            p.wait()
    assert code == 0
    table = _table(tmp_path / "out" / "results.csv")
    assert [r["success"] for r in table.values()] == ["True", "True"]
    assert float(table["c1"]["p"]) == pytest.approx(12.0, rel=0.02)


@pytest.mark.parametrize("text, fragment", [
    ("fit_id,problem\nx,pendulum\n", "missing column(s) data"),
    ("fit_id,problem,data\nx,pendulm,a.csv\n", "line 2: unknown problem 'pendulm'"),
    ("fit_id,problem,data,method\nx,pendulum,a.csv,fast\n", "line 2: unknown method 'fast'"),
    ("fit_id,problem,data\nx,pendulum,a.csv\nx,two-link,b.csv\n", "line 3: fit 'x' has problem 'two-link'"),
    ("fit_id,problem,data\nx,pendulum,\n", "column 'data', line 2: empty cell"),
    ("fit_id,problem,data\n", "no fits"),
    ("fit_id,problem,data,height\nx,cip,a.csv,1.7\n", "line 2: 'height' and 'mass' go together"),
    ("fit_id,problem,data,height,mass\nx,cip,a.csv,1.7,heavy\n", "column 'mass', line 2: 'heavy' is not a number"),
    ("fit_id,problem,data,height,mass\nx,pendulum,a.csv,1.7,70\n", "problem 'pendulum' has no body model"),
    ("fit_id,problem,data,column\nx,cip,a.csv,COPx\n", "column 'column', line 2: 'COPx' is not SIGNAL=COLUMN"),
    ("fit_id,problem,data,missing\nx,cip,a.csv,yes\n", "column 'missing', line 2: 'yes' is not 'allow'"),
    ("fit_id,problem,data,height,mass\nx,cip,a.csv,1.7,70\nx,cip,b.csv,1.7,71\n", "line 3: fit 'x' has mass '71'"),
])
def test_bad_manifest_is_one_line_exit_2(tmp_path, capsys, text, fragment):
    (tmp_path / "m.csv").write_text(text)
    code = main(["batch", str(tmp_path / "m.csv"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and fragment in err, err
    assert not (tmp_path / "out").exists()  # nothing made before the manifest was checked


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"}, silence_logs=50) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def fitted():
    trial = pendulum.simulate_trial(duration=2.0, noise_std=0.01, seed=5)
    problem = pendulum.problem([trial])
    return problem, co.solve(problem)


def test_bootstrap_on_a_client_equals_the_serial_bootstrap(client, fitted):
    problem, result = fitted
    serial = co.bootstrap(problem, result, replicates=4, seed=3)
    parallel = co.bootstrap(problem, result, replicates=4, seed=3, client=client)
    assert parallel.estimates.equals(serial.estimates)
    assert parallel.failures == serial.failures == 0


def test_compare_on_a_client_equals_the_serial_compare(client, fitted):
    problem, _ = fitted
    methods = {"radau2": co.Radau(degree=2), "midpoint": co.Midpoint()}
    serial = compare(problem, methods, starts=2, seed=4)
    events = []
    parallel = compare(problem, methods, starts=2, seed=4, client=client, progress=events.append)
    assert [(r.method, r.start) for r in parallel.runs] == [(r.method, r.start) for r in serial.runs]
    for a, b in zip(parallel.runs, serial.runs):
        assert a.initial_guess == b.initial_guess
        assert a.result.parameters == b.result.parameters and a.result.objective == b.result.objective
        assert a.result.success == b.result.success and a.result.status == b.result.status
    assert parallel.runs[0].result.success  # start 0, the declared guess, finds the record's p
    assert len(events) == 8 and sum(e.result is not None for e in events) == 4


def test_profile_on_a_client(client, fitted):
    problem, result = fitted
    p_hat = result.parameters["p"]
    grid = p_hat * np.array([0.9, 0.95, 1.0, 1.05, 1.1])
    serial = co.profile(problem, "p", grid)
    one = co.profile(problem, "p", grid, client=client, segments=1)  # the serial walk on a worker
    np.testing.assert_array_equal(one.objective, serial.objective)
    seen = []
    two = co.profile(problem, "p", grid, client=client, progress=lambda i, v, r: seen.append((i, v)))
    assert seen == [(i, float(v)) for i, v in enumerate(grid)]
    assert two.success.all() and serial.success.all()
    np.testing.assert_allclose(two.objective, serial.objective, rtol=1e-6)
    # the profile of a one-parameter model is the objective itself: lowest at the estimate
    assert np.argmin(serial.objective) == 2
    with pytest.raises(co.OptionsError, match="segments"):
        co.profile(problem, "p", grid, segments=2)


def test_retry_failed_runs_a_failed_fit_again_once_its_file_is_supplied(tmp_path, client, capsys):
    (tmp_path / "manifest.csv").write_text("fit_id,problem,data\nok,pendulum,a.csv\nlate,pendulum,b.csv\n")
    pendulum.simulate_trial(duration=2.0, noise_std=0.01, seed=1).to_csv(tmp_path / "a.csv")
    manifest, out = tmp_path / "manifest.csv", tmp_path / "out"
    first = co.batch(manifest, out, client=client, progress=False)
    assert first.run == 2 and first.failed == 1
    assert _table(out / "results.csv")["late"]["status"] == "bad_input"  # b.csv does not exist yet
    pendulum.simulate_trial(duration=2.0, theta0=0.4, noise_std=0.01, seed=2).to_csv(tmp_path / "b.csv")
    kept = (out / "fits" / "ok.json").stat().st_mtime_ns
    # --resume keeps the recorded failure and says how to run it again
    code = main(["batch", str(manifest), "--out", str(out), "--resume"])
    stdout = capsys.readouterr().out
    assert code == 0 and "1 succeeded, 1 failed, 2 kept from" in stdout, stdout
    assert "1 of them recorded by an earlier run and not run again" in stdout
    assert f"colloc batch {manifest} --out {out} --resume --retry-failed" in stdout
    assert _table(out / "results.csv")["late"]["success"] == "False"
    # --retry-failed runs it again; the fit that succeeded is kept as it was
    code = main(["batch", str(manifest), "--out", str(out), "--resume", "--retry-failed",
                 "--scheduler", client.scheduler.address])  # the fixture's cluster: none started here
    stdout = capsys.readouterr().out
    assert code == 0 and "2 succeeded, 0 failed, 1 kept from" in stdout, stdout
    assert "1 failed fit(s) run again (--retry-failed)" in stdout and "failed fit(s): see" not in stdout
    table = _table(out / "results.csv")
    assert table["late"]["success"] == "True" and table["late"]["message"] == ""
    serial = identify_files("pendulum", [str(tmp_path / "b.csv")])
    assert json.loads((out / "fits" / "late.json").read_text())["parameters"] == serial.parameters
    assert (out / "fits" / "ok.json").stat().st_mtime_ns == kept
    # retry_failed implies resume: with nothing failed, nothing runs
    again = co.batch(manifest, out, client=client, retry_failed=True, progress=False)
    assert again.run == 0 and again.skipped == 2 and again.retried == 0


def test_summary_of_several_problems_has_every_problem_units_and_a_whole_title(tmp_path):
    """A cohort of two problems: each problem's parameters are summarised (not only the first
    problem's), with the units of the fits' documents on the axes and a title that fits."""
    from colloc.studies.batch import summary_figure, write_summary

    rows = {"a1": {"fit_id": "a1", "problem": "pendulum", "success": True, "p": 9.0, "se_p": 0.1, "group": "x"},
            "a2": {"fit_id": "a2", "problem": "pendulum", "success": True, "p": 11.0, "se_p": 0.1, "group": "x"},
            "b1": {"fit_id": "b1", "problem": "cip", "success": True, "KP": 1000.0, "KD": 200.0, "group": "y"},
            "b2": {"fit_id": "b2", "problem": "cip", "success": False, "KP": 5.0, "KD": 5.0, "group": "y"}}
    units = {"pendulum": {"p": "1/s^2"}, "cip": {"KP": "N·m/rad", "KD": "N·m·s/rad"}}
    paths = write_summary(tmp_path, rows, list(rows), units)
    table = list(csv.DictReader(paths["table"].read_text().splitlines()))
    assert [(r["problem"], r["group"], r["parameter"], r["unit"], float(r["mean"]), r["n"]) for r in table] == [
        ("pendulum", "x", "p", "1/s^2", 10.0, "2"), ("cip", "y", "KP", "N·m/rad", 1000.0, "1"),
        ("cip", "y", "KD", "N·m·s/rad", 200.0, "1")]
    assert paths["figure"].read_bytes()[:4] == b"\x89PNG"
    good = {"pendulum": [rows["a1"], rows["a2"]], "cip": [rows["b1"]]}
    fig = summary_figure(good, {"pendulum": ["p"], "cip": ["KP", "KD"]}, units)
    labels = {ax.get_ylabel() for sub in fig.subfigs for ax in sub.axes if ax.axison}
    assert labels == {"p (1/s^2)", "KP (N·m/rad)", "KD (N·m·s/rad)"}
    assert [sub._suptitle.get_text() for sub in fig.subfigs] == ["pendulum: 2 successful fits",
                                                                 "cip: 1 successful fit"]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    inside = fig.bbox
    for title in (fig._suptitle, *(sub._suptitle for sub in fig.subfigs)):
        box = title.get_window_extent(renderer)
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and box.y1 <= inside.y1, title.get_text()


def test_progress_line_counts_and_time_left():
    import io

    from colloc.studies.batch import _Bar

    stream = io.StringIO()
    bar = _Bar(4, stream)
    bar.update(0, 0, 2, final=False)  # nothing done yet: no estimate
    bar.last = 0.0
    bar.t0 -= 10.0  # 10 s elapsed
    bar.update(2, 1, 2)
    bar.update(4, 1, 0, final=True)
    first, second, last = stream.getvalue().splitlines()
    assert "0/4 fits · 0 failed · 2 running" in first and "time left unknown" in first
    assert "2/4 fits · 1 failed · 2 running" in second and "10 s left" in second  # 10 s for 2, 2 to go
    assert "4/4 fits" in last and last.endswith("done") and "[" + "#" * 24 + "]" in last


@pytest.mark.slow  # a command-line batch in a subprocess, stopped with Ctrl-C, then resumed
def test_ctrl_c_leaves_consistent_files_and_resume_finishes(tmp_path):
    manifest = _cohort(tmp_path, {f"i{i}": 5.0 + 2 * i for i in range(6)}, broken=False)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from colloc.cli import main; sys.exit(main(sys.argv[1:]))",
                             "batch", str(manifest), "--out", str(out), "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while len(list((out / "fits").glob("*.json"))) < 2 and proc.poll() is None:  # two fits written, at any speed
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate()
    assert proc.returncode == 130, err[-2000:]
    docs = {p.stem: json.loads(p.read_text()) for p in (out / "fits").glob("*.json")}  # each one complete
    table = _table(out / "results.csv")
    assert 2 <= len(docs) < 6 and set(table) == set(docs)  # the table and the documents agree
    report = co.batch(manifest, out, workers=1, resume=True, progress=False)
    assert report.skipped == len(docs) and report.run == 6 - len(docs) and report.failed == 0
    assert list(_table(out / "results.csv")) == [f"i{i}" for i in range(6)]


@pytest.mark.slow  # two-link fits (the cohort of issue 14) with broken rows, against serial identify
def test_two_link_cohort_equals_serial_identify(tmp_path):
    from colloc_problems import two_link

    rows = ["fit_id,problem,data,group"]
    for s, factor in enumerate((0.85, 1.15)):
        K = np.asarray(two_link.K_TRUE, dtype=float) * factor
        for k in range(2):
            two_link.simulate_trial(K, duration=2.0, seed=100 * s + k, name=f"s{s}t{k}.csv").to_csv(tmp_path / f"s{s}t{k}.csv")
            rows.append(f"subject{s},two-link,s{s}t{k}.csv,{'young' if s else 'old'}")
    (tmp_path / "short.csv").write_text("time,q1\n0,0.1\n")
    rows += ["broken,two-link,short.csv,old", "missing,two-link,nowhere.csv,old"]
    pendulum.simulate_trial(duration=2.0, noise_std=0.01, seed=4).to_csv(tmp_path / "swing.csv")
    rows.append("swing,pendulum,swing.csv,old")  # a second problem: the summary has both
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    code = main(["batch", str(tmp_path / "m.csv"), "--out", str(tmp_path / "out"), "--workers", "2", "--summary"])
    assert code == 0
    table = _table(tmp_path / "out" / "results.csv")
    for s in range(2):
        serial = identify_files("two-link", [str(tmp_path / f"s{s}t{k}.csv") for k in range(2)])
        doc = json.loads((tmp_path / "out" / "fits" / f"subject{s}.json").read_text())
        assert serial.success and doc["parameters"] == serial.parameters
        assert doc["standard_errors"] == serial.standard_errors
        assert table[f"subject{s}"]["success"] == "True"
        assert float(table[f"subject{s}"]["k_00"]) == serial.parameters["k_00"]
    for fid in ("broken", "missing"):
        assert table[fid]["success"] == "False" and table[fid]["message"]
    summary = list(csv.DictReader((tmp_path / "out" / "summary.csv").read_text().splitlines()))
    assert {(r["problem"], r["parameter"]) for r in summary} == \
        {("two-link", f"k_{i}{j}") for i in range(2) for j in range(4)} | {("pendulum", "p")}
    assert {r["unit"] for r in summary if r["parameter"] in ("k_00", "p")} == {"N·m/rad", "1/s^2"}


@pytest.mark.slow  # 14 s alone (2026-11-29): out of the default suite's 10 minutes
def test_a_cohort_of_real_subjects_with_their_bodies_and_lab_columns(tmp_path):
    """Real 100 Hz force-plate trials as the lab wrote them (gzip, tab-separated, COPx in cm),
    each fit with its subject's height and mass from the manifest: the batch's fits equal
    `colloc identify cip ... --height --mass --column` run serially on the same files."""
    import gzip

    import pandas as pd

    shipped = Path(__file__).resolve().parents[1] / "data" / "bds"
    bds = tmp_path / "bds"  # the first 20 s of two shipped trials, written as the lab writes them
    bds.mkdir()
    for name in ("BDS00001", "BDS00004"):
        table = pd.read_csv(shipped / f"{name}.txt.gz", sep="\t")
        with gzip.open(bds / f"{name}.txt.gz", "wt") as fh:
            table[table["Time[s]"] <= 20.0].to_csv(fh, sep="\t", index=False)
    rows = ["fit_id,problem,data,height,mass,column,controller,noise,group"]
    for name, controller in (("BDS00001", "PID"), ("BDS00004", "PD-delay")):
        rows.append(f"{name},cip,{bds / (name + '.txt.gz')},1.575,54.2,cop=COPx,{controller},paper,subject1")
    rows.append(f"no_column,cip,{bds / 'BDS00004.txt.gz'},1.575,54.2,cop=COPz;time=Time[s],PID,paper,subject1")
    (tmp_path / "manifest.csv").write_text("\n".join(rows) + "\n")
    report = co.batch(tmp_path / "manifest.csv", tmp_path / "out", workers=2, progress=False)
    table = _table(tmp_path / "out" / "results.csv")
    assert list(table) == ["BDS00001", "BDS00004", "no_column"]
    body = {"body": cip_body(1.575, 54.2)}
    for name, controller in (("BDS00001", "PID"), ("BDS00004", "PD-delay")):
        serial = identify_files("cip", [str(bds / (name + ".txt.gz"))], method=None, columns={"cop": "COPx"},
                                problem_options={**body, "controller": controller, "noise": "paper"})
        doc = json.loads((tmp_path / "out" / "fits" / f"{name}.json").read_text())
        assert doc["success"] and doc["method"] == "kalman-ml" and doc["info"]["controller"] == controller
        assert table[name]["success"] == "True"
        for k, v in serial.parameters.items():
            assert doc["parameters"][k] == pytest.approx(v, rel=1e-9), (name, k)
    assert "tau" in json.loads((tmp_path / "out" / "fits" / "BDS00004.json").read_text())["parameters"]
    assert table["no_column"]["success"] == "False" and "COPz" in table["no_column"]["message"]
    assert report.succeeded == 2


def cip_body(height, mass):
    from colloc_problems import cip

    return cip.body(height=height, mass=mass)


def test_a_manifest_column_batch_does_not_read_is_named_in_a_warning(tmp_path, capsys):
    """A misspelt option column ('heigth') would otherwise be ignored without a word."""
    (tmp_path / "m.csv").write_text("fit_id,problem,data,heigth,notes\nx,pendulum,a.csv,1.7,first\n")
    from colloc.studies.batch import read_manifest

    with pytest.warns(co.ExtraColumnsWarning, match="'heigth', 'notes' are not used by colloc batch"):
        specs = read_manifest(tmp_path / "m.csv")
    assert [s.fit_id for s in specs] == ["x"] and specs[0].options == {}
