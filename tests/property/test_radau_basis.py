"""The one Radau collocation basis (:func:`colloc.radau_basis`) against closed forms.

Expected values are the published Radau IIA tableaux (Hairer & Wanner, *Solving Ordinary
Differential Equations II*, §IV.5) written out by hand, and exactness on monomials whose
derivatives and integrals are known in closed form; never values computed by colloc.
"""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

import colloc as co

S6 = np.sqrt(6.0)
#: Radau IIA: nodes c, weights b and Butcher matrix A for d = 1, 2, 3 (closed forms).
TABLEAUX = {
    1: ([1.0], [1.0], [[1.0]]),
    2: ([1 / 3, 1.0], [3 / 4, 1 / 4], [[5 / 12, -1 / 12], [3 / 4, 1 / 4]]),
    3: ([(4 - S6) / 10, (4 + S6) / 10, 1.0], [(16 - S6) / 36, (16 + S6) / 36, 1 / 9],
        [[(88 - 7 * S6) / 360, (296 - 169 * S6) / 1800, (-2 + 3 * S6) / 225],
         [(296 + 169 * S6) / 1800, (88 + 7 * S6) / 360, (-2 - 3 * S6) / 225],
         [(16 - S6) / 36, (16 + S6) / 36, 1 / 9]]),
}


@pytest.mark.parametrize("d", [1, 2, 3])
def test_nodes_weights_and_butcher_matrix_are_radau_iia(d):
    c, b, A = (np.array(v, dtype=float) for v in TABLEAUX[d])
    basis = co.radau_basis(d)
    assert basis.degree == d
    np.testing.assert_allclose(basis.tau, c, rtol=0, atol=1e-14)
    np.testing.assert_allclose(basis.points, np.concatenate([[0.0], c]), rtol=0, atol=1e-14)
    np.testing.assert_allclose(basis.weights, b, rtol=0, atol=1e-14)
    np.testing.assert_allclose(basis.integration, A, rtol=0, atol=1e-13)


@pytest.mark.parametrize("d", range(1, 8))
def test_differentiation_is_exact_up_to_degree_d_and_no_further(d):
    basis = co.radau_basis(d)
    s = basis.points
    for k in range(d + 1):
        np.testing.assert_allclose(basis.derivative @ s**k, k * s ** max(k - 1, 0) * (k > 0), atol=1e-10)
    # degree d + 1 is not differentiated exactly (the test can fail)
    assert np.max(np.abs(basis.derivative @ s ** (d + 1) - (d + 1) * s**d)) > 1e-3


@pytest.mark.parametrize("d", range(1, 8))
def test_quadrature_is_exact_up_to_degree_2d_minus_2_and_no_further(d):
    basis = co.radau_basis(d)
    for k in range(2 * d - 1):
        assert basis.weights @ basis.tau**k == pytest.approx(1 / (k + 1), abs=1e-13)
    assert abs(basis.weights @ basis.tau ** (2 * d - 1) - 1 / (2 * d)) > 1e-9  # exact ones: ~1e-15
    # the Butcher matrix integrates degree ≤ d − 1 exactly from 0 to each node
    for k in range(d):
        np.testing.assert_allclose(basis.integration @ basis.tau**k, basis.tau ** (k + 1) / (k + 1), atol=1e-13)


@pytest.mark.parametrize("d", range(1, 6))
def test_basis_values_interpolate_and_give_the_continuity_coefficients(d):
    basis = co.radau_basis(d)
    # Lagrange: ℓ_i(s_j) = δ_ij; reproduces polynomials of degree ≤ d anywhere, extrapolated too
    np.testing.assert_allclose(np.array([basis.values(sj) for sj in basis.points]), np.eye(d + 1), atol=1e-12)
    s = np.array([-0.3, 0.25, 0.6, 1.4])
    coef = np.arange(1.0, d + 2)  # a polynomial of degree d
    at_nodes = np.polyval(coef, basis.points)
    np.testing.assert_allclose(sum(f * v for f, v in zip(at_nodes, basis.values(s))), np.polyval(coef, s), rtol=1e-11)
    np.testing.assert_allclose(basis.end, np.eye(d + 1)[-1], atol=1e-12)  # c_d = 1
    # a CasADi symbol goes through the same evaluation
    r = ca.SX.sym("r")
    fn = ca.Function("l", [r], [ca.vertcat(*basis.values(r))])
    np.testing.assert_allclose(np.array(fn(0.37)).ravel(), basis.values(0.37), rtol=1e-14)


def test_radau_points_are_the_zeros_of_the_radau_polynomial_for_higher_degrees():
    from numpy.polynomial import legendre

    for d in range(4, 10):
        c = co.radau_basis(d).tau
        coef = np.zeros(d + 1)
        coef[d], coef[d - 1] = 1.0, -1.0
        np.testing.assert_allclose(legendre.legval(2 * c - 1, coef), 0.0, atol=1e-11)
        assert c[-1] == pytest.approx(1.0, abs=1e-14) and np.all(np.diff(c) > 0) and c[0] > 0


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_a_bad_degree_is_named(bad):
    with pytest.raises(co.OptionsError, match="Radau degree must be an int >= 1"):
        co.radau_basis(bad)
