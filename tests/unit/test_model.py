"""Model declarations: shapes, names, scales, and every misuse named in its message."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

import colloc as co
from colloc import ModelError


def two_link_like():
    m = co.Model("balance")
    q = m.state("q", shape=2, unit="rad")
    u = m.state("u", shape=2, unit="rad/s")
    a = m.known_input("acc", unit="m/s^2")
    K = m.parameter("k", shape=(2, 4), scale=100.0, guess=np.arange(8).reshape(2, 4))
    m.set_der(q, u)
    M = ca.SX([[2.0, 0.5], [0.5, 1.0]])
    m.add_residual(M @ m.der(u) - ca.vertcat(a, 0) + K @ ca.vertcat(q, u), name="eom", scale=10.0)
    return m, K


def test_matrix_parameter_is_one_line_and_row_major():
    m, K = two_link_like()
    assert K.shape == (2, 4)
    assert m.element_names("parameter") == [f"k_{i}{j}" for i in range(2) for j in range(4)]
    # row-major: element k_12 is K[1, 2]
    assert str(K[1, 2]) == "k_12"
    np.testing.assert_array_equal(m.guesses("parameter"), np.arange(8.0))
    np.testing.assert_array_equal(m.scales("parameter"), np.full(8, 100.0))


def test_vector_state_names_and_functions():
    m, _ = two_link_like()
    assert m.element_names("state") == ["q_0", "q_1", "u_0", "u_1"]
    assert m.equation_names == ["ode(q_0)", "ode(q_1)", "eom_0", "eom_1"]
    np.testing.assert_array_equal(m.equation_scales, [1, 1, 10, 10])
    f = m.functions()["residual"]
    assert f.name_in() == ["xdot", "x", "r", "u", "p", "t"]
    # residual at a consistent point is zero: q' = u, M u' = [a, 0] − K x with K = 0, x = 0
    res = f([0.1, 0.2, 0.4, -0.2], [0, 0, 0.1, 0.2], [], [0.8], np.zeros(8), 0.0)
    np.testing.assert_allclose(np.array(res).ravel(), [0.1 - 0.1, 0.2 - 0.2, 2 * 0.4 + 0.5 * -0.2 - 0.8, 0.5 * 0.4 - 0.2])


def test_derivative_pairs_found_for_velocity_initialisation():
    m = co.Model("p")
    th, om = m.state("theta"), m.state("omega")
    m.set_der(th, om)
    m.set_der(om, -th)
    assert m.derivative_pairs() == [("theta", "omega")]


def _dup(m):
    m.state("x")
    m.parameter("x")


def _bad_bounds(m):
    m.parameter("p", bounds=(2.0, 1.0))


def _bad_bounds_element(m):
    m.parameter("k", shape=2, bounds=([0, 5], [1, 1]))


def _bad_scale(m):
    m.state("x", scale=0.0)


def _bad_shape(m):
    m.parameter("k", shape=(2, 0))


def _bad_guess_shape(m):
    m.parameter("k", shape=(2, 4), guess=np.zeros(3))


def _set_der_on_parameter(m):
    p = m.parameter("p")
    m.set_der(p, 1.0)


def _set_der_shape(m):
    x = m.state("x", shape=2)
    m.set_der(x, ca.SX.sym("y", 3))


def _foreign_symbol(m):
    x = m.state("x")
    m.set_der(x, ca.SX.sym("alien"))


def _der_in_set_der(m):
    x = m.state("x")
    m.set_der(x, m.der(x))


def _time_name(m):
    m.state("time")


def _not_identifier(m):
    m.state("my state")


def _output_not_scalar(m):
    x = m.state("x", shape=2)
    m.output("y", x)


def _der_of_input(m):
    u = m.known_input("u")
    m.der(u)


def _unknown_variable(m):
    m.variable("nope")


def _non_square(m):
    m.state("x")
    m.state("y")
    m.set_der("x", 1.0)
    m.check()


def _no_states(m):
    m.parameter("p")
    m.check()


ERRORS = [
    (_dup, r"name 'x' is already declared"),
    (_bad_bounds, r"lower bound 2 > upper bound 1 for element 'p'"),
    (_bad_bounds_element, r"lower bound 5 > upper bound 1 for element 'k_1'"),
    (_bad_scale, r"scale must be finite and > 0"),
    (_bad_shape, r"shape must be a positive int"),
    (_bad_guess_shape, r"guess must be a scalar or have shape \(2, 4\), got shape \(3,\)"),
    (_set_der_on_parameter, r"set_der\(\) on 'p', which is a parameter, not a state"),
    (_set_der_shape, r"expression has shape \(3, 1\), expected \(2, 1\)"),
    (_foreign_symbol, r"symbol 'alien' is not declared in model 'm'"),
    (_der_in_set_der, r"only allowed in add_residual"),
    (_time_name, r"'time' is reserved"),
    (_not_identifier, r"must be an identifier"),
    (_output_not_scalar, r"output 'y' .* must be scalar"),
    (_der_of_input, r"der\(\) takes a state, but 'u' is a known input"),
    (_unknown_variable, r"model 'm' has no variable 'nope'"),
    (_non_square, r"1 dynamic equation\(s\) for 2 state element\(s\)"),
    (_no_states, r"has no states"),
]


@pytest.mark.parametrize("build, match", ERRORS, ids=[f.__name__.strip("_") for f, _ in ERRORS])
def test_model_errors_name_the_culprit(build, match):
    with pytest.raises(ModelError, match=match) as err:
        build(co.Model("m"))
    assert "\n" not in str(err.value)


def test_guess_is_clipped_into_bounds():
    m = co.Model("m")
    m.parameter("p", bounds=(1.0, 2.0), guess=10.0)
    assert m.guesses("parameter")[0] == 2.0
