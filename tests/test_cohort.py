"""The cohort view (colloc/studies/cohort.py, ``colloc cohort``, ``colloc batch --cohort``).

The fast tests read result documents written here with known estimates, so the expected
group means, effects and p-values come from the numbers the test chose and from closed forms
(the balanced two-way ANOVA; the delta method written out), never from the code under test.
One slow test runs ``colloc batch --cohort`` on four shipped real trials.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import colloc as co
from colloc.cli import main
from colloc.studies.cohort import cohort, read_conditions, read_results, trial_key

ROOT = Path(__file__).resolve().parents[1]
BDS = ROOT / "data" / "bds"
BODY = {"I": 47.4, "m": 52.6, "h": 0.884, "g": 9.81}
MGH = BODY["m"] * BODY["g"] * BODY["h"]
Z = stats.norm.ppf(0.975)


def _doc(trial: str, params: dict, se: dict | None = None, *, cov_kp_kd: float = 0.0, bound=(), success=True,
         controller="PID", fit_id: str | None = None) -> dict:
    """A result document of a cip kalman-ml fit with the given estimates (log-scale intervals)."""
    se = se if se is not None else {k: 0.05 * abs(v) for k, v in params.items()}
    names = list(params)
    cov = [[None] * len(names) for _ in names]
    for i, a in enumerate(names):
        if se.get(a) is not None:
            cov[i][i] = se[a] ** 2
    if "KP" in names and "KD" in names:
        i, j = names.index("KP"), names.index("KD")
        cov[i][j] = cov[j][i] = cov_kp_kd
    intervals = {k: ([v * math.exp(-Z * se[k] / v), v * math.exp(Z * se[k] / v)] if se.get(k) and v > 0
                     else [None, None]) for k, v in params.items()}
    doc = {"problem": "cip", "method": "kalman-ml", "success": success,
           "status": "Solve_Succeeded" if success else "error", "iterations": 10, "objective": -1.0,
           "parameters": params, "standard_errors": {k: se.get(k) for k in params}, "intervals": intervals,
           "covariance": {"names": names, "matrix": cov},
           "units": {"KP": "N·m/rad", "KD": "N·m·s/rad", "KI": "N·m/(rad·s)", "q_d": "N·m·√s", "sigma": "m"},
           "info": {"controller": controller, "noise_model": "sway", "body": BODY, "active_bounds": list(bound)},
           "trials": [f"/records/{trial}.txt.gz"], "timings": {"total_s": 1.0}}
    if fit_id is not None:
        doc["fit_id"] = fit_id
    return doc


def _write(folder: Path, docs: dict[str, dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, doc in docs.items():
        (folder / f"{name}.json").write_text(json.dumps(doc))
    return folder


def _conditions(path: Path, rows: list[tuple], header=("trial", "vision", "surface")) -> Path:
    path.write_text("\n".join([",".join(header)] + [",".join(map(str, r)) for r in rows]) + "\n")
    return path


CELLS = [("open", "firm"), ("closed", "firm"), ("open", "foam"), ("closed", "foam")]


def _two_by_two(tmp_path, vision_effect=0.3, surface_effect=0.0, sd=0.05, seed=1, repeats=3):
    """One subject, 2 x 2 conditions x ``repeats``: log(KP/mgh) = log 2 + effects + noise;
    KD/KP = 0.2 s and q_d = 700 N·m·√s (× 3 on foam), each with noise."""
    rng = np.random.default_rng(seed)
    docs, rows, truth = {}, [], {}
    for c, (vision, surface) in enumerate(CELLS):
        for r in range(repeats):
            name = f"T{c}{r}"
            log_k = math.log(2.0) + vision_effect * (vision == "closed") + surface_effect * (surface == "foam") \
                + sd * rng.standard_normal()
            kp = math.exp(log_k) * MGH
            qd = 700.0 * (3.0 if surface == "foam" else 1.0) * math.exp(0.1 * rng.standard_normal())
            ratio = 0.2 * math.exp(0.1 * rng.standard_normal())
            params = {"KP": kp, "KI": 100.0 + 10 * r, "KD": ratio * kp, "q_d": qd, "sigma": 1e-4}
            docs[name] = _doc(name, params)
            rows.append((name, vision, surface))
            truth[name] = {"KP/mgh": kp / MGH, "KD/KP": ratio, "KI": params["KI"], "q_d": qd}
    return _write(tmp_path / "fits", docs), _conditions(tmp_path / "conditions.csv", rows), truth, rows


def test_group_means_and_spread_are_those_of_the_chosen_values(tmp_path):
    fits, conds, truth, rows = _two_by_two(tmp_path)
    view = cohort(fits, conds)
    assert view.factors == ("vision", "surface") and view.levels["vision"] == ("open", "closed")
    assert [q[0] for q in view.quantities()] == ["KP/mgh", "KD/KP", "KI", "q_d", "sigma"]
    for (vision, surface) in CELLS:
        names = [r[0] for r in rows if r[1:] == (vision, surface)]
        for q in ("KP/mgh", "KD/KP", "KI", "q_d"):
            vals = np.array([truth[n][q] for n in names])
            row = view.table[(view.table.quantity == q) & (view.table.vision == vision)
                             & (view.table.surface == surface)]
            assert len(row) == 1 and int(row.n.iloc[0]) == 3
            assert row["mean"].iloc[0] == pytest.approx(vals.mean(), rel=1e-12)
            assert row["sd"].iloc[0] == pytest.approx(vals.std(ddof=1), rel=1e-9, abs=1e-14)
            assert row["min"].iloc[0] == pytest.approx(vals.min(), rel=1e-12)
    # the fits' own typical SE beside the spread: KP's SE (5 % of KP) over m g h
    kp_rows = view.trials[view.trials.quantity == "KP/mgh"].set_index("trial")
    for name in truth:
        assert kp_rows.loc[name, "se"] == pytest.approx(0.05 * truth[name]["KP/mgh"], rel=1e-12)
    text = view.format()
    assert "K_P/(m·g·h)" in text and "OLS" in text and "one subject" in text


def test_ratio_interval_is_the_delta_method_on_the_log_scale(tmp_path):
    kp, kd, s_kp, s_kd, c = 1200.0, 240.0, 60.0, 20.0, 500.0
    _write(tmp_path / "fits", {"A": _doc("A", {"KP": kp, "KD": kd}, {"KP": s_kp, "KD": s_kd}, cov_kp_kd=c)})
    _conditions(tmp_path / "c.csv", [("A", "open", "firm")])
    row = cohort(tmp_path / "fits", tmp_path / "c.csv").trials.set_index("quantity").loc["KD/KP"]
    # var log(KD/KP) = (s_kd/kd)^2 + (s_kp/kp)^2 - 2 c/(kd kp), written out by hand
    s = math.sqrt((20 / 240) ** 2 + (60 / 1200) ** 2 - 2 * 500 / (240 * 1200))
    assert row["estimate"] == pytest.approx(0.2, rel=1e-12)
    assert row["se"] == pytest.approx(0.2 * s, rel=1e-12)
    assert (row["low"], row["high"]) == pytest.approx((0.2 * math.exp(-Z * s), 0.2 * math.exp(Z * s)), rel=1e-12)


def _balanced_anova_p(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """p-values of the balanced two-way ANOVA with interaction, from the sums of squares."""
    la, lb = np.unique(a), np.unique(b)
    n = len(y) // (len(la) * len(lb))
    grand = y.mean()
    ma = np.array([y[a == u].mean() for u in la])
    mb = np.array([y[b == v].mean() for v in lb])
    mab = np.array([[y[(a == u) & (b == v)].mean() for v in lb] for u in la])
    ss_a = n * len(lb) * np.sum((ma - grand) ** 2)
    ss_b = n * len(la) * np.sum((mb - grand) ** 2)
    ss_ab = n * np.sum((mab - ma[:, None] - mb[None, :] + grand) ** 2)
    fitted = np.array([mab[list(la).index(u), list(lb).index(v)] for u, v in zip(a, b)])
    df_e = len(y) - len(la) * len(lb)
    ms_e = np.sum((y - fitted) ** 2) / df_e
    return {"A": stats.f.sf(ss_a / ms_e, 1, df_e), "B": stats.f.sf(ss_b / ms_e, 1, df_e),
            "AB": stats.f.sf(ss_ab / ms_e, 1, df_e), "ms_e": ms_e, "df_e": df_e}


def test_one_subject_known_effect_detected_null_effect_not_and_p_values_are_the_anova(tmp_path):
    fits, conds, truth, rows = _two_by_two(tmp_path, vision_effect=0.3, surface_effect=0.0, sd=0.05)
    view = cohort(fits, conds)
    tests = view.tests[view.tests.quantity == "KP/mgh"].set_index("term")
    assert list(tests.index) == ["vision", "surface", "vision:surface"]
    assert set(tests.test) == {"OLS"} and set(tests.scale) == {"log"} and set(tests.n) == {12}
    vision, surface = tests.loc["vision"], tests.loc["surface"]
    assert vision.contrast == "closed vs open"
    assert vision.p < 1e-4 and vision.effect_low > 1.2  # a known effect of x1.35: detected
    assert surface.p > 0.05 and surface.effect_low < 1.0 < surface.effect_high  # none: not detected
    y = np.log([truth[r[0]]["KP/mgh"] for r in rows])
    a, b = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
    expected = _balanced_anova_p(y, a, b)
    assert vision.p == pytest.approx(expected["A"], rel=1e-8)
    assert surface.p == pytest.approx(expected["B"], rel=1e-8)
    assert tests.loc["vision:surface"].p == pytest.approx(expected["AB"], rel=1e-8)
    # the effect is the difference of the log marginal means (balanced)
    d = y[a == "closed"].mean() - y[a == "open"].mean()
    assert vision.effect == pytest.approx(math.exp(d), rel=1e-10)
    half = stats.t.ppf(0.975, expected["df_e"]) * math.sqrt(expected["ms_e"] * (1 / 6 + 1 / 6))
    assert (vision.effect_low, vision.effect_high) == pytest.approx((math.exp(d - half), math.exp(d + half)), rel=1e-9)
    assert vision.df == "1,8"
    q_d = view.tests[view.tests.quantity == "q_d"].set_index("term").loc["surface"]  # three times on foam
    assert q_d.p < 1e-4 and q_d.effect_low < 3.0 < q_d.effect_high
    sigma = view.tests[view.tests.quantity == "sigma"]  # the same in every trial: nothing to test
    assert len(sigma) == 1 and sigma.term.iloc[0] == "" and "the same in every trial" in sigma.note.iloc[0]
    # Holm over all the tests: never below the raw p
    assert (view.tests.p_holm.dropna() >= view.tests.p.dropna() - 1e-15).all()
    assert "why: one subject" in view.format()


def test_several_subjects_use_a_mixed_model_whose_effect_is_the_difference_of_means(tmp_path):
    rng = np.random.default_rng(7)
    docs, rows = {}, []
    y_by = {}
    for s in range(5):
        offset = 0.5 * rng.standard_normal()  # subjects differ far more than repeats
        for vision in ("open", "closed"):
            for surface in ("firm", "foam"):
                for r in range(2):
                    name = f"S{s}_{vision}_{surface}_{r}"
                    log_k = math.log(2.0) + offset + 0.2 * (vision == "closed") + 0.05 * rng.standard_normal()
                    docs[name] = _doc(name, {"KP": math.exp(log_k) * MGH, "KD": 100.0})
                    rows.append((name, f"s{s}", vision, surface))
                    y_by[name] = log_k
    _write(tmp_path / "fits", docs)
    _conditions(tmp_path / "c.csv", rows, header=("trial", "subject", "vision", "surface"))
    view = cohort(tmp_path / "fits", tmp_path / "c.csv")
    assert view.n_subjects == 5 and "MixedLM" in view.test_name and "several subjects" in view.test_reason
    tests = view.tests[view.tests.quantity == "KP/mgh"].set_index("term")
    assert set(tests.test) == {"MixedLM"} and set(tests.n_subjects) == {5}
    vision, surface = tests.loc["vision"], tests.loc["surface"]
    assert vision.p < 1e-4 and vision.effect_low < math.exp(0.2) < vision.effect_high
    assert surface.p > 0.05 and surface.effect_low < 1.0 < surface.effect_high
    y = np.array([y_by[r[0]] for r in rows])
    closed = np.array([r[2] == "closed" for r in rows])
    assert math.log(vision.effect) == pytest.approx(y[closed].mean() - y[~closed].mean(), rel=1e-5)
    # least squares ignoring the subjects would judge the effect against the subjects' spread
    ols_se = math.sqrt(np.var(y[closed], ddof=1) / closed.sum() + np.var(y[~closed], ddof=1) / (~closed).sum())
    assert (math.log(vision.effect_high) - math.log(vision.effect_low)) / (2 * Z) < 0.5 * ols_se


def test_bound_and_failed_fits_and_a_subset_of_the_conditions(tmp_path):
    docs = {"A": _doc("A", {"KP": 900.0, "KD": 180.0, "B": 500.0}, bound=("B",)),
            "B": _doc("B", {"KP": 950.0, "KD": 200.0, "B": 500.0}, bound=("B",)),
            "C": _doc("C", {"KP": 1000.0, "KD": 210.0, "B": 500.0}, success=False)}
    _write(tmp_path / "fits", docs)
    _conditions(tmp_path / "c.csv", [("A", "open", "firm"), ("B", "closed", "firm"), ("C", "open", "foam"),
                                     ("D", "closed", "foam")])
    view = cohort(tmp_path / "fits", tmp_path / "c.csv")
    assert view.failed == ["C"] and view.unmatched == ["D"]
    b = view.tests[view.tests.quantity == "B"]
    assert len(b) == 1 and b.term.iloc[0] == "" and "every estimate (2) on a bound" in b.note.iloc[0]
    kp = view.tests[view.tests.quantity == "KP/mgh"]  # two trials, one factor of two levels: no spread left
    assert kp.term.iloc[0] == "" and "no spread left" in kp.note.iloc[0]
    assert view.table.set_index("quantity").loc["B", "n_at_bound"].tolist() == [1, 1]
    assert "not in the view (the fit failed): C" in view.format()


def test_fits_flagged_implausible_are_marked_and_left_out_of_the_tests_only_when_asked(tmp_path, capsys):
    fits, conds, truth, rows = _two_by_two(tmp_path, vision_effect=0.0, surface_effect=0.0)
    odd = ["T20", "T21"]  # two of the three eyes-open trials on foam: another family of optima
    for name in odd:
        doc = json.loads((fits / f"{name}.json").read_text())
        doc["parameters"]["KP"] *= 2.5
        doc["warnings"] = [{"code": "implausible", "message": "K_P/(m·g·h) outside [1, 3]"}]
        (fits / f"{name}.json").write_text(json.dumps(doc))
    view = cohort(fits, conds)
    flagged = view.trials.drop_duplicates("trial").set_index("trial")["implausible"]
    assert sorted(flagged[flagged].index) == odd
    kp = view.table[view.table.quantity == "KP/mgh"]
    assert kp.set_index(["vision", "surface"])["n_implausible"].to_dict() == {
        ("open", "firm"): 0, ("open", "foam"): 2, ("closed", "firm"): 0, ("closed", "foam"): 0}
    assert set(kp["n"]) == {3}
    tests = view.tests[view.tests.quantity == "KP/mgh"]
    assert set(tests.n) == {12} and all("2 flagged implausible included" in n for n in tests.note)
    assert "flagged implausible by their fits: T20, T21 (in the tests" in view.format()
    # left out: the tests are those of the cohort without the two documents at all
    kept = cohort(fits, conds, plausible_only=True)
    for name in odd:
        (fits / f"{name}.json").unlink()
    without = cohort(fits, conds)
    a = kept.tests[kept.tests.quantity == "KP/mgh"].set_index("term")
    b = without.tests[without.tests.quantity == "KP/mgh"].set_index("term")
    assert set(a.n) == {10} and all("2 flagged implausible left out" in n for n in a.note)
    for term in b.index:
        assert a.loc[term, "p"] == pytest.approx(b.loc[term, "p"], rel=1e-12)
        assert a.loc[term, "statistic"] == pytest.approx(b.loc[term, "statistic"], rel=1e-12)
    assert kept.trials["trial"].nunique() == 12  # still shown
    # the command line: the flag, and the batch's flag only with --cohort
    for name in odd:
        (fits / f"{name}.json").write_text(json.dumps(_doc(name, {"KP": 5 * MGH, "KD": 100.0})))
    assert main(["cohort", str(fits), "--conditions", str(conds), "--out", str(tmp_path / "view"),
                 "--plausible-only"]) == 0
    assert "flagged implausible" not in capsys.readouterr().out  # the rewritten two carry no flag
    (tmp_path / "m.csv").write_text("fit_id,problem,data\nA,cip,a.csv\n")
    assert main(["batch", str(tmp_path / "m.csv"), "--out", str(tmp_path / "o"), "--cohort-plausible-only"]) == 2
    err = capsys.readouterr().err
    assert "--cohort-plausible-only needs --cohort" in err and len(err.strip().splitlines()) == 1


def test_figure_and_tables_are_written(tmp_path):
    from matplotlib.image import imread

    fits, conds, truth, _ = _two_by_two(tmp_path)
    paths = cohort(fits, conds).write(tmp_path / "out")
    image = imread(paths["figure"])
    assert image.shape[0] > 400 and image.shape[1] > 800 and image[..., :3].std() > 0.05  # not blank
    with open(paths["trials"], newline="") as fh:
        trials = list(csv.DictReader(fh))
    kp = {r["trial"]: float(r["estimate"]) for r in trials if r["quantity"] == "KP/mgh"}
    assert kp == pytest.approx({k: v["KP/mgh"] for k, v in truth.items()}, rel=1e-12)
    with open(paths["tests"], newline="") as fh:
        assert {r["term"] for r in csv.DictReader(fh)} >= {"vision", "surface", "vision:surface"}
    assert paths["text"].read_text().startswith("cohort: 12 successful fits of cip · kalman-ml")


def test_bds_metadata_gives_vision_and_surface_of_each_trial():
    conds = read_conditions(BDS / "BDSinfoCOP_subset.txt")
    assert conds.factors == ("Vision", "Surface") and conds.has_subject
    assert conds.levels == {"Vision": ("Open", "Closed"), "Surface": ("Firm", "Foam")}
    # the README's table: 1-3 open firm, 4-6 closed firm, 7-9 open foam, 10-12 closed foam
    expected = {1: ("Open", "Firm"), 4: ("Closed", "Firm"), 7: ("Open", "Foam"), 10: ("Closed", "Foam")}
    for first, cell in expected.items():
        for k in range(first, first + 3):
            assert tuple(conds.table.loc[f"BDS{k:05d}", ["Vision", "Surface"]]) == cell
    assert set(conds.table["subject"]) == {"1"}


def test_trial_names_from_files_and_fit_ids(tmp_path):
    assert trial_key("/data/bds/BDS00001.txt.gz") == "BDS00001"
    assert trial_key("run.2.csv") == "run.2" and trial_key("fits/s1.json") == "s1"
    # a batch document is found by its fit id, an identify --out file by its trial's file name
    _write(tmp_path / "fits", {"x1": _doc("rec_a", {"KP": 900.0}, fit_id="s1"),
                               "x2": _doc("rec_b", {"KP": 950.0})})
    _conditions(tmp_path / "c.csv", [("s1", "open", "firm"), ("rec_b.csv", "closed", "firm")])
    view = cohort(tmp_path / "fits", tmp_path / "c.csv")
    assert sorted(view.trials.trial.unique()) == ["rec_b", "s1"]


@pytest.mark.parametrize("text, factors, fragment", [
    ("vision,surface\nA,open,firm\n", None, "c.csv: no 'trial' column"),
    ("trial\nA\n", None, "c.csv: no condition column"),
    ("trial,vision\nA,open\nB,\n", None, "c.csv: column 'vision', line 3: empty cell"),
    ("trial,vision\nA,open\nA.csv,closed\n", None, "line 3: trial 'A' is also on line 2"),
    ("trial,vision\nA,open,x\n", None, "c.csv: line 2 has 3 fields, expected 2"),
    ("trial,vision\nA,open\n", ["surface"], "c.csv: no condition column 'surface'; its columns are: vision"),
    ("trial,vision,Vision\nA,open,x\n", None, "c.csv: column 'vision' appears twice"),
    ("", None, "c.csv: empty conditions file"),
])
def test_bad_conditions_name_the_file_column_and_line(tmp_path, text, factors, fragment):
    (tmp_path / "c.csv").write_text(text)
    with pytest.raises(co.DataError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        read_conditions(tmp_path / "c.csv", factors)


def test_bad_results_name_the_file(tmp_path):
    _conditions(tmp_path / "c.csv", [("A", "open", "firm"), ("B", "closed", "firm")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(co.DataError, match="empty: no result documents"):
        read_results(tmp_path / "empty")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(co.DataError, match=r"bad.json: not a JSON result document"):
        read_results(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps({"comparison": 1}))
    with pytest.raises(co.DataError, match=r"other.json: not a result document of colloc"):
        read_results(tmp_path / "other.json")
    _write(tmp_path / "f1", {"Z": _doc("Z", {"KP": 900.0})})
    with pytest.raises(co.DataError, match=r"Z.json: no row of .*c.csv for this fit \(looked for trial 'Z'\)"):
        cohort(tmp_path / "f1", tmp_path / "c.csv")
    _write(tmp_path / "f2", {"A": _doc("A", {"KP": 900.0}), "B": _doc("B", {"KP": 900.0}, controller="PID-delay")})
    with pytest.raises(co.DataError, match="B.json: a fit of cip · kalman-ml · controller PID-delay .* one model"):
        cohort(tmp_path / "f2", tmp_path / "c.csv")
    _write(tmp_path / "f3", {"A": _doc("A", {"KP": 900.0}), "A2": _doc("A", {"KP": 910.0})})
    with pytest.raises(co.DataError, match=r"trial 'A' \(line 2 of .*c.csv\) already has the result"):
        cohort(tmp_path / "f3", tmp_path / "c.csv")
    _write(tmp_path / "f4", {"A": _doc("A", {"KP": 900.0}, success=False)})
    with pytest.raises(co.DataError, match=r"no successful fit among the 1 result document\(s\).*failed: A"):
        cohort(tmp_path / "f4", tmp_path / "c.csv")


def test_command_writes_the_view_and_bad_input_is_one_line_exit_2(tmp_path, capsys):
    fits, conds, _, _ = _two_by_two(tmp_path)
    assert main(["cohort", str(fits), "--conditions", str(conds), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "why: one subject" in out and "cohort written to" in out
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"cohort.csv", "cohort_tests.csv", "cohort_trials.csv",
                                                              "cohort.txt", "cohort.png"}
    assert main(["cohort", str(fits), "--conditions", str(conds), "--factors", "vision,colour",
                 "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "conditions.csv: no condition column 'colour'" in err
    assert main(["cohort", str(fits), "--conditions", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "o3")]) == 2
    assert "nope.csv: no such conditions file" in capsys.readouterr().err


def test_batch_with_cohort_checks_the_conditions_before_any_fit(tmp_path, capsys):
    (tmp_path / "m.csv").write_text("fit_id,problem,data\nA,pendulum,a.csv\nB,pendulum,b.csv\n")
    _conditions(tmp_path / "c.csv", [("A", "open", "firm")])
    code = main(["batch", str(tmp_path / "m.csv"), "--out", str(tmp_path / "out"), "--cohort", str(tmp_path / "c.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "m.csv: line 3: fit 'B' has no row in" in err and "c.csv" in err
    assert not (tmp_path / "out" / "results.csv").exists()
    assert main(["batch", str(tmp_path / "m.csv"), "--out", str(tmp_path / "out"), "--cohort-factors", "a"]) == 2
    assert "--cohort-factors needs --cohort" in capsys.readouterr().err


def test_batch_with_cohort_writes_the_view_after_the_fits(tmp_path, capsys):
    """Pendulum fits of four short records (p from the generator), two conditions x two repeats."""
    from colloc_problems import pendulum

    rows, conds = ["fit_id,problem,data"], []
    for k, (p, level) in enumerate([(9.0, "low"), (9.5, "low"), (20.0, "high"), (21.0, "high")]):
        pendulum.simulate_trial(p=p, duration=2.0, theta0=0.5, noise_std=0.005, seed=k).to_csv(tmp_path / f"r{k}.csv")
        rows.append(f"r{k},pendulum,r{k}.csv")
        conds.append((f"r{k}", level))
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    _conditions(tmp_path / "c.csv", conds, header=("trial", "level"))
    code = main(["batch", str(tmp_path / "m.csv"), "--out", str(tmp_path / "out"), "--workers", "1",
                 "--cohort", str(tmp_path / "c.csv")])
    assert code == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "4 fits: 4 succeeded" in out and "cohort written to" in out
    with open(tmp_path / "out" / "cohort_tests.csv", newline="") as fh:
        (test,) = [r for r in csv.DictReader(fh) if r["quantity"] == "p"]
    assert test["term"] == "level" and test["contrast"] == "high vs low" and int(test["n"]) == 4
    assert 20.5 / 9.25 * 0.9 < float(test["effect"]) < 20.5 / 9.25 * 1.1 and float(test["p"]) < 0.01


@pytest.mark.slow  # four real 60 s trials fitted with the sway-lp noise model (about 10 s of CPU each)
def test_batch_of_four_shipped_trials_with_the_sway_model_ends_in_the_cohort_view(tmp_path, capsys):
    names = ["BDS00001", "BDS00004", "BDS00007", "BDS00010"]  # one per condition
    rows = ["fit_id,problem,data,height,mass,column,noise"]
    rows += [f"{n},cip,{BDS / (n + '.txt.gz')},1.575,54.2,cop=COPx,sway-lp" for n in names]
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    code = main(["batch", str(tmp_path / "m.csv"), "--out", str(tmp_path / "out"), "--workers", "2",
                 "--cohort", str(BDS / "BDSinfoCOP_subset.txt")])
    out = capsys.readouterr().out
    assert code == 0 and "4 fits: 4 succeeded" in out and "Vision (Open/Closed), Surface (Firm/Foam)" in out
    view_trials = list(csv.DictReader((tmp_path / "out" / "cohort_trials.csv").read_text().splitlines()))
    for n in names:
        doc = json.loads((tmp_path / "out" / "fits" / f"{n}.json").read_text())
        # one model for the cohort: cip.COHORT_CONTROLLER, as the manifest names none
        assert doc["info"]["noise_model"] == "sway-lp" and doc["info"]["controller"] == "PD-delay"
        assert doc["success"], (n, doc["status"])
        body = doc["info"]["body"]
        (kp,) = [float(r["estimate"]) for r in view_trials if r["trial"] == n and r["quantity"] == "KP/mgh"]
        assert kp == pytest.approx(doc["parameters"]["KP"] / (body["m"] * body["g"] * body["h"]), rel=1e-12)
    tests = list(csv.DictReader((tmp_path / "out" / "cohort_tests.csv").read_text().splitlines()))
    kp_tests = {r["term"]: r for r in tests if r["quantity"] == "KP/mgh"}
    assert set(kp_tests) == {"Vision", "Surface"}  # one trial per condition: no interaction, 1 residual df
    assert {r["df"] for r in kp_tests.values()} == {"1,1"} and {r["test"] for r in kp_tests.values()} == {"OLS"}
    assert (tmp_path / "out" / "cohort.png").stat().st_size > 10_000


def test_help_of_cohort_and_of_batch_cohort(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["cohort", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "usage: colloc cohort" in out and "--conditions" in out and "--factors" in out
    with pytest.raises(SystemExit) as exc:
        main(["batch", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "--cohort CONDITIONS" in out and "--cohort-factors" in out


def test_manifest_column_noise_is_the_fit_option(tmp_path):
    from colloc.studies.batch import read_manifest

    (tmp_path / "m.csv").write_text("fit_id,problem,data,height,mass,column,noise\n"
                                    "a,cip,a.txt.gz,1.575,54.2,cop=COPx,sway\nb,cip,b.txt.gz,1.575,54.2,cop=COPx,\n")
    a, b = read_manifest(tmp_path / "m.csv")
    assert a.options["problem_options"]["noise"] == "sway" and "noise" not in b.options["problem_options"]
