"""Accurate at the data's own rate: clean 100 Hz records made by generators written here,
independently of colloc (scipy's DOP853 at 1e-12; a method of steps with DOP853's dense
output for the delay), with gains, delays, seeds and excitations other than the shipped ones.

Acceptance of issue 8: with the default method, every two-link gain within 0.1 % (the input
as errors-in-variables and as exact), τ within 0.1 ms with the mean gain error within 0.1 %,
the pendulum's p to 1e-6, CIP gains with a known disturbance to 1e-4.  The midpoint rule
misses each of these on the same records (checked, so the records are demanding).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import colloc as co
from colloc_problems import cip
from colloc_problems import pendulum
from colloc_problems import two_link as tl
from colloc_problems import two_link_delay as tld

from test_two_link import reference_rhs  # noqa: E402  (tests/problems is on the path)

RATE = 100.0
SOLVER = co.Ipopt(simulate=False, standard_errors=False)


def _mass_matrix(qh):
    b = tl.BODY
    lL, dL, dT, mL, mT, IL, IT = (b[k] for k in ("l_L", "d_L", "d_T", "m_L", "m_T", "I_L", "I_T"))
    return np.array([[IL + IT + dL**2 * mL + mT * (dT**2 + 2 * dT * lL * np.cos(qh) + lL**2),
                      IT + dT * mT * (dT + lL * np.cos(qh))],
                     [IT + dT * mT * (dT + lL * np.cos(qh)), IT + dT**2 * mT]])


def two_link_record(K, seed, duration):
    acc, _ = tl.excitation(seed)
    t = np.arange(int(duration * RATE) + 1) / RATE
    ref = solve_ivp(reference_rhs, (0, duration), np.zeros(4), t_eval=t, args=(K, acc), method="DOP853",
                    rtol=1e-12, atol=1e-12)
    return co.Trial(t, {**{n: ref.y[i] for i, n in enumerate(tl.STATE_NAMES)}, "platform_acc": acc(t)},
                    name=f"two_link_{seed}.csv")


def delayed_two_link_record(K, tau, seed, duration):
    """ẋ = f(x, T = −K·x(t − τ), a(t)), x = 0 before t = 0: method of steps over intervals of
    length τ, each integrated by DOP853 reading x(t − τ) from the previous intervals' dense
    output (itself of order 7)."""
    acc, _ = tl.excitation(seed)
    pieces = []

    def past(s):
        if s <= 0.0:
            return np.zeros(4)
        for a, b, sol in reversed(pieces):
            if a - 1e-9 <= s <= b + 1e-9:
                return sol(s)
        raise AssertionError(f"no history at {s}")

    def rhs(t, x):
        out = reference_rhs(t, x, np.zeros((2, 4)), acc)  # the body without feedback
        out[2:] += np.linalg.solve(_mass_matrix(x[1]), -(K @ past(t - tau)))
        return out

    x, t0 = np.zeros(4), 0.0
    while t0 < duration - 1e-12:
        t1 = min(t0 + tau, duration)
        sol = solve_ivp(rhs, (t0, t1), x, method="DOP853", rtol=1e-12, atol=1e-12, dense_output=True)
        pieces.append((t0, t1, sol.sol))
        x, t0 = sol.y[:, -1], t1
    t = np.arange(int(duration * RATE) + 1) / RATE
    Y = np.array([past(s) for s in t]).T
    return co.Trial(t, {**{n: Y[i] for i, n in enumerate(tl.STATE_NAMES)}, "platform_acc": acc(t)},
                    name=f"delay_{seed}.csv")


@pytest.fixture(scope="module")
def two_link_clean():
    K = np.array([[820.0, 210.0, 160.0, 60.0], [60.0, 250.0, 70.0, 30.0]])
    return K, two_link_record(K, seed=7, duration=20.0)


@pytest.mark.parametrize("eiv", [True, False], ids=["errors-in-variables", "exact-input"])
def test_two_link_gains_within_a_tenth_of_a_percent_at_100_Hz(two_link_clean, eiv):
    K, trial = two_link_clean
    result = co.solve(tl.problem(trial, errors_in_variables=eiv), solver=SOLVER)  # the default method
    worst = max(abs(result.parameters[f"k_{i}{j}"] / K[i, j] - 1) for i in range(2) for j in range(4))
    assert result.success and result.method == "radau2"
    assert worst < 1e-3, worst
    midpoint = co.solve(tl.problem(trial, errors_in_variables=eiv), co.Midpoint(), solver=SOLVER)
    assert max(abs(midpoint.parameters[f"k_{i}{j}"] / K[i, j] - 1) for i in range(2) for j in range(4)) > 2e-3


def test_delay_within_a_tenth_of_a_millisecond_at_100_Hz():
    K = np.array([[900.0, 190.0, 170.0, 55.0], [50.0, 270.0, 65.0, 28.0]])
    tau = 0.0213
    trial = delayed_two_link_record(K, tau, seed=9, duration=12.0)
    prob = tld.problem(trial, tau_bounds=(0.01, 0.035), tau_guess=0.02)  # errors-in-variables input
    result = co.solve(prob, solver=SOLVER)
    mean_gain = np.mean([abs(result.parameters[f"k_{i}{j}"] / K[i, j] - 1) for i in range(2) for j in range(4)])
    assert abs(result.parameters["tau"] - tau) < 1e-4, result.parameters["tau"] - tau
    assert mean_gain < 1e-3, mean_gain
    midpoint = co.solve(prob, co.Midpoint(), solver=SOLVER)
    assert abs(midpoint.parameters["tau"] - tau) > 1e-4  # the records are not easy


@pytest.mark.parametrize("p_true, theta0", [(10.0, 1.0), (23.0, 0.5), (150.0, 0.3)])
def test_pendulum_p_to_one_part_in_a_million_at_100_Hz(p_true, theta0):
    t = np.arange(1001) / RATE
    sol = solve_ivp(lambda s, x: [x[1], -p_true * np.sin(x[0])], (0, t[-1]), [theta0, 0.0], t_eval=t,
                    method="DOP853", rtol=1e-13, atol=1e-13)
    trial = co.Trial(t, {"theta": sol.y[0]}, name="pendulum.csv")
    solver = co.Ipopt(simulate=False, standard_errors=False, tol=1e-12)
    result = co.solve(pendulum.problem(trial), guess={"p": 1.05 * p_true}, solver=solver)
    assert abs(result.parameters["p"] / p_true - 1) < 1e-6
    midpoint = co.solve(pendulum.problem(trial), co.Midpoint(), guess={"p": 1.05 * p_true}, solver=solver)
    assert abs(midpoint.parameters["p"] / p_true - 1) > 1e-5


@pytest.mark.parametrize("seed", [0, 1])
def test_cip_gains_with_a_known_disturbance_to_1e_minus_4(seed):
    """The generator is the exact zero-order-hold discretisation (matrix exponential)."""
    trial = cip.simulate_trial(seed=seed, cop_noise=0.0)
    result = co.solve(cip.problem(trial, "known"), solver=SOLVER)
    for k in cip.GAINS:
        assert abs(result.parameters[k] / cip.TRUE[k] - 1) < 1e-4, k
