"""Franklin (2006) 18-DoF spine model: data, Lagrange EOM, muscles, discs, load, AD linearization."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from colloc import CollocInputError, OptionsError
from colloc_problems._data import data_path
from colloc_problems.spine import model as sm

# one worker builds the module's costly fixtures once (xdist would build them on both)
pytestmark = pytest.mark.xdist_group("spine_model")

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "spine"
P_REFLEX = {"stiffness_gain": 10.0, "damping": 2.0, "proportional_gain": 10.0, "differential_gain": 1.5,
            "load_N": 200.0}


@pytest.fixture(scope="module")
def model():
    return sm.build_model()


@pytest.fixture(scope="module")
def p(model):
    return model.parameter_vector(**P_REFLEX)


@pytest.fixture(scope="module")
def affine(model, p):
    return sm.affine_jacobians(model, p)


def _M(model, q):
    return np.asarray(model.functions["mass_matrix"](q), dtype=float)


def _h(model, q, qd):
    return np.asarray(model.functions["bias"](q, qd), dtype=float).ravel()


def _random_posture(model, rng, scale=0.1):
    return model.q0 + rng.uniform(-scale, scale, sm.N_DOF)


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------

#: SHA-256 of the checked extraction in ../shared/data/spine (verified by its check_data.py)
EXTRACTION_SHA256 = {
    "muscles.csv": "0cd99d958fa7680940d8903a7f5ae9abe09bd4cf85bbd480aff7ab1a63d9bcd7",
    "points.csv": "22e9f3fa8ad29486bceee4587f37a7f571f5d1f0697245c3b29a1839b981475b",
    "model.json": "91796d6ae8c426fc8cb0fd0628d5c8017b9c174cd8dbd5e23d78104578f62299",
}


@pytest.mark.parametrize("name", sorted(EXTRACTION_SHA256))
def test_shipped_files_are_byte_identical_to_the_extraction(name):
    shipped = data_path("spine", name)
    assert hashlib.sha256(shipped.read_bytes()).hexdigest() == EXTRACTION_SHA256[name]
    if (SHARED / name).is_file():  # where the extraction itself is at hand, compare directly too
        assert (SHARED / name).read_bytes() == shipped.read_bytes()


def test_muscles_and_anomaly_decisions():
    mus = sm.load_muscles()
    assert len(mus) == 90
    assert sum(m.side == "R" for m in mus) == sum(m.side == "L" for m in mus) == 45
    names = [m.name for m in mus]
    assert len(set(names)) == 90
    # anomaly 1: normalized spelling, verbatim names kept
    assert "RExtOb1" in names and "LIlioLum" in names and "RParsL3" in names
    assert {m.source_name for m in mus} >= {"RextOb1", "LlioLum", "RParSL3"}
    # anomaly 2: the misaligned left rows have no via points, CSA from the last field
    psoas = next(m for m in mus if m.name == "LPsoaL1")
    assert psoas.points == ("LPEL17", "LL18") and psoas.csa_cm2 == 3.0
    # anomaly 3: ParsL2 drops its L1 via point by default, keeps it verbatim on request
    pars = {m.name: m for m in mus}["RParsL2"]
    assert pars.points == ("RPEL9", "RL411", "RL310", "RL210", "RL23")
    verb = {m.name: m for m in sm.load_muscles(parsl2_path="verbatim")}["RParsL2"]
    assert verb.points == ("RPEL9", "RL411", "RL310", "RL210", "RL19", "RL23")
    # anomaly 4: LatDL5 starts on the pelvis (kept)
    assert {m.name: m for m in mus}["LLatDL5"].bodies[0] == "pelvis"
    # mirror symmetry of coordinates
    for r in mus[:45]:
        left = next(m for m in mus if m.name == "L" + r.name[1:])
        np.testing.assert_array_equal(left.coords * [-1, 1, 1], r.coords)
    with pytest.raises(OptionsError):
        sm.load_muscles(parsl2_path="nope")


def test_parameters_from_model_json():
    par = sm.load_parameters()
    assert par.masses == (2, 2, 2, 2, 2, 20)
    assert par.lengths[-1] == 0.419 and sm.load_parameters(thorax_length="liu").lengths[-1] == pytest.approx(0.4188196)
    assert par.lengths[0] == pytest.approx(0.2322 * 0.3212 * 0.617)
    np.testing.assert_allclose(np.degrees(par.lordosis), [-14, 8, 18, 15, 10, 0])  # anomaly 9: L3 = 18°
    assert math.degrees(par.pelvis_angle) == pytest.approx(-20)
    assert (par.gravity, par.la, par.lb, par.cent3) == (9.8, 0.12, 0.06, 0.1067)
    assert par.max_stress == pytest.approx(46e4) and par.load_anterior_m == 0.2 and par.load_height_m == 0.2
    with pytest.raises(CollocInputError):
        sm.load_parameters(load_height_m=float("nan"))


def test_parameter_vector_checks(model):
    np.testing.assert_array_equal(model.parameter_vector(10, 2, 3, 0, 200), [10, 2, 3, 0, 200])
    for bad in ({"load_N": -1.0}, {"damping": float("inf")}, {"proportional_gain": "3"}):
        with pytest.raises(CollocInputError):
            model.parameter_vector(**bad)


# ---------------------------------------------------------------------------------------
# kinematics and equations of motion
# ---------------------------------------------------------------------------------------

def test_body_chain_geometry(model):
    par = model.parameters
    origins, coms, load_point = (np.asarray(v, dtype=float) for v in model.functions["points"](model.q0))
    tp = par.pelvis_angle
    np.testing.assert_allclose(origins[:, 0], par.cent3 * np.array([0, -math.sin(tp), math.cos(tp)]), atol=1e-15)
    for j in range(6):
        seg = origins[:, j + 1] - origins[:, j]
        th = par.lordosis[j]  # c3 = (0, −sin θ, cos θ): positive θ tilts axis 3 posteriorly
        np.testing.assert_allclose(seg, par.lengths[j] * np.array([0, -math.sin(th), math.cos(th)]), atol=1e-15)
        np.testing.assert_allclose(coms[:, j], origins[:, j] + seg / 2, atol=1e-15)
    np.testing.assert_allclose(load_point.ravel(), origins[:, 5] + [0, 0.2, 0.2], atol=1e-15)  # thorax upright


def test_angular_velocity_matches_eq_3_A_i_1(model):
    rng = np.random.default_rng(3)
    q, qd = _random_posture(model, rng, 0.5), rng.normal(size=sm.N_DOF)
    w = np.asarray(model.functions["angular_velocity"](q, qd), dtype=float)  # inertial, 3 × 6
    for j in range(6):
        t, b, a = q[3 * j:3 * j + 3]
        C = np.asarray(sm._body_to_inertial(t, b, a), dtype=float)
        wb = C.T @ w[:, j]
        # eq. 3.A.i.1: Euler rates from body-frame angular velocity
        E = np.array([[math.cos(a), -math.sin(a), 0],
                      [math.cos(b) * math.sin(a), math.cos(a) * math.cos(b), 0],
                      [-math.cos(a) * math.sin(b), math.sin(a) * math.sin(b), math.cos(b)]]) / math.cos(b)
        np.testing.assert_allclose(E @ wb, qd[3 * j:3 * j + 3], rtol=1e-12, atol=1e-12)


def test_mass_matrix_symmetric_positive_definite_and_kinetic_energy(model):
    rng = np.random.default_rng(0)
    for q in (model.q0, _random_posture(model, rng, 0.4)):
        M = _M(model, q)
        np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-15)
        assert np.linalg.eigvalsh(M)[0] > 1e-4
        qd = rng.normal(size=sm.N_DOF)
        T = float(model.functions["kinetic"](q, qd))
        assert T == pytest.approx(0.5 * qd @ M @ qd, rel=1e-12)


def test_gravity_force_is_the_gradient_of_the_potential(model):
    rng = np.random.default_rng(1)
    q = _random_posture(model, rng, 0.3)
    G = _h(model, q, np.zeros(sm.N_DOF))  # bias at rest = ∂V/∂q
    h = 1e-6
    fd = np.array([(float(model.functions["potential"](q + h * e)) - float(model.functions["potential"](q - h * e)))
                   / (2 * h) for e in np.eye(sm.N_DOF)])
    np.testing.assert_allclose(G, fd, rtol=1e-7, atol=1e-8)
    # the upright thorax (θ = 0) is balanced about its own base by gravity alone
    assert abs(_h(model, model.q0, np.zeros(18))[15]) < 1e-12


def test_energy_is_conserved_without_muscles_discs_and_load(model):
    # unforced, undamped, muscle-free: M q̈ + h(q, q̇) = 0
    rng = np.random.default_rng(2)
    q0 = _random_posture(model, rng, 0.05)
    v0 = rng.normal(scale=0.5, size=sm.N_DOF)
    M_f, h_f = model.functions["mass_matrix"], model.functions["bias"]

    def f(t, y):
        q, v = y[:18], y[18:]
        return np.concatenate([v, np.linalg.solve(np.asarray(M_f(q)), -np.asarray(h_f(q, v)).ravel())])

    def energy(y):
        return float(model.functions["kinetic"](y[:18], y[18:])) + float(model.functions["potential"](y[:18]))

    sol = solve_ivp(f, (0.0, 0.3), np.concatenate([q0, v0]), method="DOP853", rtol=1e-11, atol=1e-12)
    assert sol.success
    E = np.array([energy(y) for y in sol.y.T])
    kinetic0 = float(model.functions["kinetic"](q0, v0))
    assert np.ptp(E) < 1e-7 * max(kinetic0, 1.0)
    assert np.max(np.abs(sol.y[:18, -1] - q0)) > 1e-3  # it did move


# ---------------------------------------------------------------------------------------
# muscles, discs, load
# ---------------------------------------------------------------------------------------

def test_rest_lengths_mass_and_force(model):
    assert model.rest_length.shape == (90,) and np.all(model.rest_length > 0.02)
    csa = np.array([m.csa_cm2 for m in model.muscles])
    np.testing.assert_allclose(model.max_force, 46.0 * csa)
    np.testing.assert_allclose(model.muscle_mass, 1000 * csa * 1e-4 * model.rest_length)
    L = dict(zip(model.muscle_names, model.rest_length))
    assert L["RParsL2"] < L["RParsL1"]  # after the anomaly-3 correction
    np.testing.assert_allclose(model.rest_length[:45], model.rest_length[45:], rtol=1e-12)  # L/R symmetry


def test_muscle_generalized_force_is_minus_force_times_length_gradient(model, affine):
    # at rest (ε = 0) one fully active muscle pulls with f_o: Q = −f_o ∂L/∂q, ∂L/∂q by central differences
    f_len = model.functions["lengths"]
    h = 1e-6
    fd = np.stack([(np.asarray(f_len(model.q0 + h * e)[0]) - np.asarray(f_len(model.q0 - h * e)[0])).ravel() / (2 * h)
                   for e in np.eye(sm.N_DOF)], axis=1)  # 90 × 18
    np.testing.assert_allclose(affine.A_eq.T, -model.max_force[:, None] * fd, rtol=1e-6, atol=1e-6)
    # and the AD gradient at another posture
    q = _random_posture(model, np.random.default_rng(5), 0.2)
    fd2 = np.stack([(np.asarray(f_len(q + h * e)[0]) - np.asarray(f_len(q - h * e)[0])).ravel() / (2 * h)
                    for e in np.eye(sm.N_DOF)], axis=1)
    np.testing.assert_allclose(np.asarray(f_len(q)[1]), fd2, rtol=1e-6, atol=1e-8)


def test_muscle_force_law(model, p):
    # separated form of eq. 3.B.iv.3: f = f_o α (1 + q ε + b ε̇) + f_o α (G_p ε_d + G_d ε̇_d)
    rng = np.random.default_rng(7)
    alpha = rng.uniform(0, 1, 90)
    x = np.concatenate([_random_posture(model, rng, 0.05), rng.normal(size=18)])
    xd = np.concatenate([_random_posture(model, rng, 0.05), rng.normal(size=18)])
    f = np.asarray(model.functions["muscle_force"](x, xd, alpha, p), dtype=float).ravel()
    f_len = model.functions["lengths"]
    L, J = (np.asarray(v) for v in f_len(x[:18]))
    Ld, Jd = (np.asarray(v) for v in f_len(xd[:18]))
    L0 = model.rest_length
    eps, rate = (L.ravel() - L0) / L0, (J @ x[18:]) / L0
    eps_d, rate_d = (Ld.ravel() - L0) / L0, (Jd @ xd[18:]) / L0
    q, b, gp, gd, _ = p
    fa = model.max_force * alpha
    np.testing.assert_allclose(f, fa * (1 + q * eps + b * rate) + fa * (gp * eps_d + gd * rate_d), rtol=1e-12)


def test_discs_are_neutral_in_the_posture_and_measure_planar_and_twist(model):
    ang = np.asarray(model.functions["disc_angles"](model.q0), dtype=float)
    assert np.max(np.abs(ang)) < 1e-15
    np.testing.assert_allclose(np.asarray(model.functions["disc_force"](model.q0, np.zeros(18))), 0, atol=1e-12)
    # extra flexion δ of L3 (θ about axis 1): planar rotation −δ about n1 for the L4–L3 disc, +δ for L3–L2
    d = 0.07
    q = model.q0.copy()
    q[6] += d
    ang = np.asarray(model.functions["disc_angles"](q), dtype=float)
    np.testing.assert_allclose(ang[:, 2], [d, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(ang[:, 3], [-d, 0, 0, 0], atol=1e-12)
    # axial twist of the upright thorax: twist only, about its axis 3
    q = model.q0.copy()
    q[17] += d
    ang = np.asarray(model.functions["disc_angles"](q), dtype=float)
    np.testing.assert_allclose(ang[:, 5], [0, 0, 0, d], atol=1e-12)
    # a combined rotation: planar angle = angle between the plane normals
    q = model.q0.copy()
    q[9:12] += [0.2, -0.1, 0.3]
    ang = np.asarray(model.functions["disc_angles"](q), dtype=float)[:, 3]
    E_l = np.asarray(sm._body_to_inertial(*q[6:9])) @ np.asarray(sm._R1(model.parameters.lordosis[2]))
    E_u = np.asarray(sm._body_to_inertial(*q[9:12])) @ np.asarray(sm._R1(model.parameters.lordosis[3]))
    assert np.linalg.norm(ang[:3]) == pytest.approx(math.acos(E_l[:, 2] @ E_u[:, 2]), rel=1e-12)


def test_equilibrium_data(model, affine):
    # at α = 0 the posture is loaded by gravity and the 200 N load only (discs are neutral)
    assert affine.b_eq[15] == pytest.approx(200 * 0.2, rel=1e-12)  # thorax: load moment about its base
    assert np.all(affine.b_eq[1::3] == 0) and np.all(affine.b_eq[2::3] == 0)  # sagittal symmetry
    assert affine.equilibrium_residual(np.zeros(90)) == pytest.approx(1.0)
    K, Ka = affine.K0, affine.K_alpha
    np.testing.assert_allclose(K, K.T, atol=1e-10)
    np.testing.assert_allclose(Ka, Ka.transpose(1, 0, 2), atol=1e-10)
    assert np.linalg.eigvalsh(affine.D0)[0] > 0  # disc damping alone is positive definite


# ---------------------------------------------------------------------------------------
# linearization
# ---------------------------------------------------------------------------------------

def test_linearization_matches_central_differences_of_the_nonlinear_rhs(model, p):
    rng = np.random.default_rng(11)
    alpha = rng.uniform(0.0, 0.3, 90)
    x0 = model.x0
    Ji, Jd = sm.linearization(model, alpha, p)
    h = 1e-6
    fd_i = np.zeros((36, 36))
    fd_d = np.zeros((36, 36))
    for k in range(36):
        e = np.zeros(36)
        e[k] = h
        fd_i[:, k] = (model.rhs(x0 + e, x0, alpha, p) - model.rhs(x0 - e, x0, alpha, p)) / (2 * h)
        fd_d[:, k] = (model.rhs(x0, x0 + e, alpha, p) - model.rhs(x0, x0 - e, alpha, p)) / (2 * h)
    scale = np.abs(Ji).max()
    np.testing.assert_allclose(Ji, fd_i, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(Jd, fd_d, rtol=0, atol=1e-6 * scale)
    np.testing.assert_array_equal(Ji[:18], np.hstack([np.zeros((18, 18)), np.eye(18)]))
    assert np.all(Jd[:18] == 0)


def test_jacobians_are_affine_in_the_activations(model, p, affine):
    rng = np.random.default_rng(12)
    a1, a2 = rng.uniform(0, 1, 90), rng.uniform(0, 1, 90)
    J = {k: sm.linearization(model, a, p) for k, a in (("0", np.zeros(90)), ("1", a1), ("2", a2), ("12", a1 + a2))}
    for i in range(2):
        scale = np.abs(J["12"][i]).max()
        np.testing.assert_allclose(J["12"][i] - J["1"][i] - J["2"][i] + J["0"][i], 0, atol=1e-11 * scale)
    for a in (a1, a2):
        Ji, Jd = sm.linearization(model, a, p)
        np.testing.assert_allclose(affine.Ji(a), Ji, atol=1e-11 * np.abs(Ji).max())
        np.testing.assert_allclose(affine.Jd(a), Jd, atol=1e-11 * np.abs(Jd).max())
    Fi, Fd = sm.jacobian_functions(model, p)
    np.testing.assert_allclose(np.asarray(Fi(a1)), affine.Ji(a1), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(np.asarray(Fd(a1)), affine.Jd(a1), rtol=1e-12, atol=1e-9)


def test_zero_delay_jacobian_is_the_mechanical_form_at_equilibrium(model, p, affine):
    # find an equilibrium activation (least squares), then J_i + J_d = [[0, I], [−M⁻¹K, −M⁻¹D]]
    alpha, *_ = np.linalg.lstsq(affine.A_eq, affine.b_eq, rcond=None)
    assert affine.equilibrium_residual(alpha) < 1e-12
    J = affine.Ji(alpha) + affine.Jd(alpha)
    Minv = np.linalg.inv(affine.mass_matrix)
    scale = np.abs(J).max()
    np.testing.assert_allclose(J[18:, :18], -Minv @ affine.K(alpha), atol=1e-9 * scale)
    np.testing.assert_allclose(J[18:, 18:], -Minv @ affine.D(alpha), atol=1e-9 * scale)


def test_delayed_jacobian_is_the_reflex_only(model):
    p0 = model.parameter_vector(10, 2, 0, 0, 0)
    _, Jd = sm.linearization(model, np.full(90, 0.2), p0)
    assert np.all(Jd == 0)
    p1 = model.parameter_vector(10, 2, 5, 0, 0)
    _, Jd1 = sm.linearization(model, np.full(90, 0.2), p1)
    assert np.all(Jd1[:, 18:] == 0) and np.abs(Jd1[18:, :18]).max() > 0
