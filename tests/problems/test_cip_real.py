"""The CIP on lab files: the subject's body from Winter (2009) and the CLI's lab options."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from colloc import ModelError
from colloc.cli import main
from colloc_problems import cip


def test_body_from_winter_tables():
    b = cip.body(height=1.575, mass=54.2)
    # hand computation (Winter 2009 Table 4.1 / Fig. 4.1), H = 1.575 m, M = 54.2 kg:
    # masses 0.093 M, 0.200 M, 0.678 M; CoM above the ankle (0.039 H):
    # legs 0.285H - 0.433*0.246H - 0.039H = 0.139482 H, thighs 0.530H - 0.433*0.245H - 0.039H
    # = 0.384915 H, HAT 0.530H + 0.626*0.288H - 0.039H = 0.671288 H
    H, M = 1.575, 54.2
    z = np.array([0.139482, 0.384915, 0.671288]) * H
    mass = np.array([0.093, 0.200, 0.678]) * M
    rho = np.array([0.302 * 0.246, 0.323 * 0.245, 0.496 * 0.288]) * H
    assert b["m"] == pytest.approx(0.971 * M)
    assert b["h"] == pytest.approx((mass @ z) / mass.sum(), rel=1e-6)
    assert b["I"] == pytest.approx(float(mass @ (rho ** 2 + z ** 2)), rel=1e-6)
    feet = 0.029 * M  # two feet, CoM taken at 0.02 H above the floor
    whole = (b["m"] * (b["h"] + 0.039 * H) + feet * 0.02 * H) / M
    assert 0.5 * H < whole < 0.6 * H   # whole-body CoM at 50-60 % of the height
    with pytest.raises(ModelError, match=r"height must be a number .* got 157.5"):
        cip.body(height=157.5, mass=54.2)


def _lab_file(tmp_path, trial, name="BDS_like.txt.gz"):
    lines = ["Time[s]\tFz[N]\tCOPx[cm]\tCOPy[cm]"]
    lines += [f"{t:.3f}\t540.0\t{100 * c:.6f}\t0.5" for t, c in zip(trial.time + 0.01, trial["cop"])]
    path = tmp_path / name
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return path


def test_cli_reads_lab_file_with_body(tmp_path, capsys):
    body = cip.body(height=1.575, mass=54.2)
    trial = cip.simulate_trial(duration=20.0, seed=3, body=body)
    path = _lab_file(tmp_path, trial)
    read = cip.load_trial(path, columns={"cop": "COPx"})
    np.testing.assert_allclose(read["cop"], trial["cop"], atol=1e-8)  # cm -> m, 6 decimals in cm
    out = tmp_path / "r.json"
    # the paper's generator (no recording low-pass): its own noise model, not the real records' default
    code = main(["identify", "cip", "--data", str(path), "--column", "cop=COPx", "--height", "1.575",
                 "--mass", "54.2", "--noise", "paper", "--out", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    # one COP-only trial of a subject: the Kalman ML is chosen (no --method given)
    assert doc["method"] == "kalman-ml" and doc["success"]
    mgh = body["m"] * body["g"] * body["h"]
    assert doc["parameters"]["KP"] > mgh  # the identified stiffness exceeds the gravity term
    for k, truth in cip.TRUE.items():  # the generator's gains within 3 standard errors
        assert abs(doc["parameters"][k] - truth) < 3 * doc["standard_errors"][k], k


@pytest.mark.parametrize("args, message", [
    (["--column", "copCOPx"], "--column 'copCOPx' is not SIGNAL=COLUMN"),
    (["--height", "1.7"], "--height and --mass go together"),
    (["--column", "cop=COPz"], "no column 'COPz' for signal 'cop'"),
    (["--column", "cop=COPx", "--unit", "cop=mm"], "unit 'mm' given, but the header says 'cm'"),
])
def test_cli_lab_option_errors(tmp_path, capsys, args, message):
    path = _lab_file(tmp_path, cip.simulate_trial(duration=1.0, seed=1))
    code = main(["identify", "cip", "--data", str(path), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_shipped_real_trials_read_in_si():
    """The 12 shipped trials of subject 1 (BDSinfoCOP) load as the CIP's COP in metres. Their
    published COP measures are reproduced from this reading in tests/unit/test_posturography.py."""
    import csv

    from colloc_problems._data import data_path

    with open(data_path("bds", "BDSinfoCOP_subset.txt"), newline="") as handle:
        info = {r["Trial"]: r for r in csv.DictReader(handle, delimiter="\t")}
    assert len(info) == 12
    for trial_id in info:
        trial = cip.load_trial(data_path("bds", f"{trial_id}.txt.gz"), columns={"cop": "COPx"})
        assert trial.num_samples == 6000 and trial.time[0] == pytest.approx(0.01)
        assert abs(trial["cop"]).max() < 0.3  # metres: a COP within 30 cm of the plate origin


def test_mean_cop_offset_is_identified_when_the_plate_origin_is_not_the_ankle():
    import colloc as co

    plain = cip.simulate_trial(duration=10.0, seed=5)
    shifted = co.Trial(plain.time, {"cop": plain["cop"] - 0.0734}, name="shifted")  # ankle 7.34 cm behind
    assert "cop_offset" not in cip.problem([plain]).model.element_names("parameter")
    prob = cip.problem([shifted])
    assert "cop_offset" in prob.model.element_names("parameter")
    result = co.solve(prob)
    assert result.success
    # the recovered offset is the shift plus the (small) mean of the unshifted model COP
    assert result.parameters["cop_offset"] == pytest.approx(-0.0734, abs=0.004)
    with pytest.raises(co.ProblemError, match="cop_offset must be True, False or 'auto'"):
        cip.problem([shifted], cop_offset="yes")
    # Table 1 is the paper's subject's physiological range: over 10 s the offset and the integral
    # action share the mean COP and the gains end on it, a warning. For another subject's body the
    # same ranges are only a search range, and the same fit is a failure
    assert "parameter_at_bound" in {w["code"] for w in result.warnings}
    other = co.solve(cip.problem([shifted], body=cip.body(height=1.70, mass=62.0)), throw=False)
    assert not other.success and other.status == "parameter_at_bound", other.status
    assert "search range" in other.message
