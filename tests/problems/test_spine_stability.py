"""Franklin (2006) 18-DoF spine: activation optimization (IPOPT), co-contraction, delay margin, CLI, experiments."""

from __future__ import annotations

import argparse
import itertools
import json

import numpy as np
import pytest

from colloc import CollocInputError, OptionsError
from colloc_problems.spine import command
from colloc_problems.spine import experiments as ex
from colloc_problems.spine import stability as st
from colloc_problems.spine.model import build_model, linearization

# one worker builds the module's costly fixtures once (xdist would build them on both)
pytestmark = pytest.mark.xdist_group("spine_stability")

CONTRACT_KEYS = {"stable", "metabolic_power_w", "co_contraction_pct", "max_real_eigenvalue", "equilibrium_residual",
                 "delay_margin_s", "activations"}


@pytest.fixture(scope="module")
def model():
    return build_model()


@pytest.fixture(scope="module")
def baseline():
    # unloaded, G_R = 10, b = 2 s, q = 10: three random starts
    return st.stability(load=0.0, reflex_gain=10.0, damping=2.0, stiffness_gain=10.0, starts=3, seed=0)


def _alpha(model, res):
    return np.array([res["activations"][n] for n in model.muscle_names])


def test_baseline_contract_keys_and_optimum(model, baseline):
    r = baseline
    assert CONTRACT_KEYS <= set(r)
    assert r["stable"] is True
    assert list(r["activations"]) == list(model.muscle_names) and len(r["activations"]) == 90
    a = _alpha(model, r)
    assert np.all((a >= 0) & (a <= 1))
    assert all(run["success"] and run["status"] == "Solve_Succeeded" for run in r["runs"])
    assert len(r["runs"]) == 3
    # same optimum from the three random starts
    powers = [run["metabolic_power_w"] for run in r["runs"]]
    assert (max(powers) - min(powers)) / min(powers) < 1e-4 and r["objective_spread_rel"] < 1e-4
    assert r["equilibrium_residual"] < 1e-8
    assert r["max_real_eigenvalue"] < 0
    # the stability constraint is active: min eig K = the margin σ
    assert r["min_stiffness_eigenvalue"] == pytest.approx(r["stiffness_margin_nm_per_rad"], rel=1e-5)
    assert r["metabolic_power_w"] == pytest.approx(model.metabolic_power(a), rel=1e-12)
    assert r["metabolic_power_w"] > r["equilibrium_metabolic_power_w"]
    assert r["delay_margin_s"] > 0 and r["crossing_frequency_rad_s"] > 0
    json.dumps(r)  # JSON-ready


def test_baseline_close_to_table_5_1(baseline):
    # Table 5.1, unloaded, G_R = 10: 9.4 % (ours ≈ 9.8 %)
    assert 7.0 < baseline["co_contraction_pct"] < 12.0
    assert baseline["co_contraction_min_force_pct"] > baseline["co_contraction_pct"]


def test_equilibrium_and_stability_at_the_optimum_are_real(model, baseline):
    a = _alpha(model, baseline)
    p = model.parameter_vector(10, 2, 10, 0, 0)
    Ji, Jd = linearization(model, a, p)
    assert np.max(np.abs(model.rhs(model.x0, model.x0, a, p))) < 1e-6  # q̈ ≈ 0
    assert np.max(np.linalg.eigvals(Ji + Jd).real) == pytest.approx(baseline["max_real_eigenvalue"], rel=1e-6)


def test_stiffness_criterion_agrees_with_the_eigenvalues(model):
    # Kelvin–Tait–Chetaev: at an equilibrium, J_i + J_d is Hurwitz iff K(α) is positive definite
    p = model.parameter_vector(10, 2, 0, 0, 0)
    aj = st._affine_cached(model, tuple(p))
    prob = st.StabilityProblem(model, aj)
    eq = prob.equilibrium_power()
    assert eq["success"] and aj.equilibrium_residual(eq["alpha"]) < 1e-8
    rng = np.random.default_rng(4)
    reserve = prob.stiffness_reserve()["alpha"]
    for t in itertools.chain([0.0, 1.0], rng.uniform(0, 1, 4)):
        a = (1 - t) * eq["alpha"] + t * reserve  # equilibrium activations between unstable and most stable
        kmin = np.linalg.eigvalsh(aj.K(a))[0]
        remax = np.max(np.linalg.eigvals(aj.Ji(a) + aj.Jd(a)).real)
        if abs(kmin) > 1e-3:
            assert (kmin > 0) == (remax < 0), (t, kmin, remax)
    assert np.linalg.eigvalsh(aj.K(eq["alpha"]))[0] < 0  # equilibrium alone is not stable


def test_stiffness_reserve_is_the_same_maximum_from_every_start(model):
    # max λ_min K(α) is a concave maximisation: one value.  From the minimum-force activations
    # at G_R = 100 the Cholesky form once stopped (with success) at 97.81 instead of 98.49 N·m/rad
    p = model.parameter_vector(10, 2, 100, 0, 0)
    prob = st.StabilityProblem(model, st._affine_cached(model, tuple(p), False))
    starts = (prob.minimum_force()["alpha"], None, np.full(model.n_muscles, 0.5))
    values = [prob.stiffness_reserve(a)["reserve"] for a in starts]
    assert max(values) - min(values) < 1e-6 * max(values), values


def test_no_stable_solution_is_a_result_not_an_error():
    # 200 N without reflex: the stiffness reserve stays below the margin
    r = st.stability(load=200.0, reflex_gain=0.0, starts=1)
    assert CONTRACT_KEYS <= set(r)
    assert r["stable"] is False
    assert r["metabolic_power_w"] is None and r["co_contraction_pct"] is None
    assert r["delay_margin_s"] == 0.0
    assert r["stiffness_reserve_nm_per_rad"] < r["stiffness_margin_nm_per_rad"]
    assert "stable equilibri" in r["message"]
    json.dumps(r)


def test_input_checks():
    with pytest.raises(CollocInputError):
        st.stability(load=-1.0)
    with pytest.raises(CollocInputError):
        st.stability(starts=0)
    with pytest.raises(OptionsError):
        st.stability(delay_method="nope")
    with pytest.raises(OptionsError):
        st.stability(co_contraction_reference="nope")


def test_delay_margin_trends_from_one_optimum(model, baseline):
    # the optimized activations do not depend on b or G_d; the margin rises with b, falls with G_p
    a = _alpha(model, baseline)
    from colloc.stability.delay_margin import delay_margin

    def margin(b, gp, load=0.0):
        Ji, Jd = linearization(model, a, model.parameter_vector(10, b, gp, 0, load))
        return delay_margin(Ji, Jd).delay_margin_s

    by_b = [margin(b, 10) for b in (0.2, 2, 20)]
    assert by_b[0] < by_b[1] < by_b[2]
    assert by_b[1] == pytest.approx(baseline["delay_margin_s"], rel=1e-6)
    # larger gains keep the (G_p = 10) activations stable at zero delay; smaller ones need re-optimizing
    by_g = [margin(2, g) for g in (10, 30, 100)]
    assert by_g[0] > by_g[1] > by_g[2] > 0


@pytest.mark.slow
def test_sweep_and_exact_delay_margins_agree(model, baseline):
    # the exact (Kronecker, n² = 1296) method takes 3–15 s depending on the machine load
    from colloc.stability.delay_margin import characteristic_residual, delay_margin

    Ji, Jd = linearization(model, _alpha(model, baseline), model.parameter_vector(10, 2, 10, 0, 0))
    exact = delay_margin(Ji, Jd, method="exact")
    assert exact.delay_margin_s == pytest.approx(baseline["delay_margin_s"], rel=1e-6)
    w, tau = baseline["crossing_frequency_rad_s"], baseline["delay_margin_s"]
    assert characteristic_residual(Ji, Jd, w, tau) < 1e-12


@pytest.mark.slow
def test_co_contraction_falls_with_reflex_gain_and_loaded_margin_is_the_same():
    unloaded = [st.stability(load=0.0, reflex_gain=g) for g in (1.0, 10.0, 100.0)]
    cc = [r["co_contraction_pct"] for r in unloaded]
    assert cc[0] > cc[1] > cc[2]
    assert cc[0] == pytest.approx(38.0, abs=3.0)  # Table 5.1: 38 %, 9.4 %, 0 %
    assert cc[2] == pytest.approx(0.0, abs=0.5)
    powers = [r["metabolic_power_w"] for r in unloaded]
    assert powers[0] > powers[1] > powers[2]
    assert powers[2] == pytest.approx(unloaded[2]["equilibrium_metabolic_power_w"], rel=1e-6)
    loaded = st.stability(load=200.0, reflex_gain=10.0)
    assert loaded["stable"]
    assert loaded["delay_margin_s"] == pytest.approx(unloaded[1]["delay_margin_s"], rel=0.05)
    assert loaded["co_contraction_pct"] > 0


# ---------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------

def _parse(argv):
    parser = argparse.ArgumentParser(prog="colloc spine")
    sub = parser.add_subparsers(dest="spine_command", required=True)
    command.add_stability_parser(sub)
    return parser.parse_args(argv)


def test_cli_json(capsys, baseline):
    args = _parse(["stability", "--load", "0", "--reflex-gain", "10", "--json"])
    assert args.damping == st.DEFAULT_DAMPING and args.stiffness_gain == 10
    assert args.func(args) == 0  # the parser's handler runs cli_stability
    out = json.loads(capsys.readouterr().out)
    assert CONTRACT_KEYS <= set(out)
    assert out["metabolic_power_w"] == pytest.approx(baseline["metabolic_power_w"], rel=1e-9)


def test_cli_text_and_unstable_exit_code(capsys):
    args = _parse(["stability", "--load", "200", "--reflex-gain", "0", "--starts", "1"])
    assert st.cli_stability(args) == 1
    text = capsys.readouterr().out
    assert "stable                  False" in text
    with pytest.raises(CollocInputError):
        st.cli_stability(_parse(["stability", "--load", "-3", "--reflex-gain", "1"]))


# ---------------------------------------------------------------------------------------
# experiments
# ---------------------------------------------------------------------------------------

def test_max_tolerable_gain():
    g = [1, 10, 100]
    assert ex.max_tolerable_gain(g, [0.6, 0.06, 0.006]) == pytest.approx(10.0)
    assert ex.max_tolerable_gain(g, [0.6, 0.6, 0.6]) is None
    assert ex.max_tolerable_gain(g, [0.01, 0.006, 0.001]) == 0.0
    assert ex.max_tolerable_gain(g, [None, 0.6, 0.006]) == pytest.approx(10 ** 1.5)


def test_differential_gain_experiment_writes_figure(tmp_path):
    res = ex.delay_margin_vs_differential_gain((0.0, 0.5), dampings=(2.0,), out=tmp_path)
    assert res["stable"] and len(res["rows"]) == 2
    assert res["rows"][1]["delay_margin_s"] > res["rows"][0]["delay_margin_s"]  # small G_d helps (Fig. 4.8)
    assert (tmp_path / "fig4_8_delay_margin_vs_gd.png").stat().st_size > 0
    assert json.loads((tmp_path / "delay_margin_vs_gd.json").read_text())["proportional_gain"] == 10.0


@pytest.mark.slow
def test_nonlinear_simulation_contracts_below_and_expands_above_the_margin():
    # Ch. 4 B.v: 0.01° thorax perturbation, nonlinear DDE at 50 % and 150 % of the linear margin
    res = ex.nonlinear_verification(percentages=(50.0, 150.0), t_end=1.5)
    slopes = [r["dss_slope"] for r in res["rows"]]
    assert [r["status"] for r in res["rows"]] == ["ok", "ok"]
    assert slopes[0] < 0 < slopes[1]
    assert ex.state_space_distance(np.zeros((3, 36))).tolist() == [0.0, 0.0, 0.0]
