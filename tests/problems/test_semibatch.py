"""The semibatch reactor problem: data conversion, model against scipy, nine-experiment fit."""

from __future__ import annotations

import json

import numpy as np
import pytest

import colloc as co
from colloc.cli import main
from colloc_problems import semibatch
from colloc_problems._data import data_path


def test_csv_and_out_reader_agree(tmp_path):
    csv = semibatch.load_trial(data_path("semibatch", "exp4.csv"))
    doc = {"Ca_meas": {}, "Cb_meas": {}, "Cc_meas": {}, "Tr_meas": {}}
    for k, t in enumerate(csv.time):  # write the .out layout here, times out of order
        for s in semibatch.SIGNALS:
            doc[f"{s}_meas"][str(t)] = float(csv[s][k])
    doc = {k: dict(reversed(list(v.items()))) for k, v in doc.items()}
    doc.update({u: float(csv[u][0]) for u in semibatch.INPUTS + semibatch.INITIAL})
    (tmp_path / "exp4.out").write_text(json.dumps(doc))
    out = semibatch.load_trial(tmp_path / "exp4.out")
    np.testing.assert_array_equal(out.time, csv.time)
    for s in semibatch.SIGNALS + semibatch.INITIAL:
        np.testing.assert_array_equal(out[s], csv[s])
    assert csv["Cb0"][0] == 2.0  # experiment 4 starts with B in the reactor


def test_bad_out_file_is_a_data_error(tmp_path):
    (tmp_path / "x.out").write_text("{\"Ca_meas\": {}}")
    with pytest.raises(co.DataError, match=r"x.out: missing key\(s\) Cb_meas"):
        semibatch.load_trial(tmp_path / "x.out")
    (tmp_path / "y.out").write_text("not json")
    with pytest.raises(co.DataError, match="not a readable parmest .out JSON file"):
        semibatch.load_trial(tmp_path / "y.out")


def test_clean_synthetic_experiment_recovers_the_kinetics():
    trial = semibatch.simulate_trial(inputs=(0.002, 0.001, 315.0, 335.0), name="syn.csv")
    trial2 = semibatch.simulate_trial(inputs=(0.003, 0.0, 320.0, 320.0), initial=(0.0, 1.0, 0.0), name="syn2.csv")
    r = co.solve(semibatch.problem([trial, trial2]), co.Midpoint(num_nodes=721),
                 solver=co.Ipopt(print_level=0, simulate=False), verdict=False)
    for k, v in semibatch.TRUE.items():  # midpoint on a 30 s grid: small discretisation bias only
        assert r.parameters[k] == pytest.approx(v, rel=2e-2), k


def test_the_shipped_experiments_are_distinct_and_all_listed():
    """The source's exp9.out repeats exp7.out (data/semibatch/README.md): one record fitted as
    two experiments would count its samples twice, so it is not shipped."""
    folder = data_path("semibatch", "exp1.csv").parent
    texts = {p.name: p.read_bytes() for p in sorted(folder.glob("*.csv"))}
    assert sorted(texts) == sorted(f[-1] for f in semibatch.DATA_FILES) and len(texts) == 9
    assert len(set(texts.values())) == len(texts), "two shipped experiments hold the same record"


def test_nine_experiments_fit_well_and_the_cli_runs(capsys, tmp_path):
    paths = [str(data_path(*f)) for f in semibatch.DATA_FILES]
    argv = ["identify", "semibatch", "--nodes", "241", "--out", str(tmp_path / "r.json")]
    for p in paths:
        argv += ["--data", p]
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 0, out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert len(doc["trials"]) == 9
    assert doc["success"] and doc["fit_verdict"]["verdict"] == "good"
    assert all(np.isfinite(v) for v in doc["standard_errors"].values())
    assert "fit verdict: good" in out
