"""The explicit form ``ẋ = g(x, r, u, p, t)`` of a model whose implicit residual is affine in ẋ
(forward simulation, shooting and the Onsager–Machlup term need it)."""

from __future__ import annotations

import casadi as ca

from ..base.errors import ModelError
from ..base.naming import function_name
from .model import Model

__all__ = ["explicit_form", "explicit_rhs"]


def explicit_form(residual: ca.Function, what: str, needs: str) -> ca.Function:
    """``ẋ = g(x, r, u, p, t)`` from an implicit residual ``f(ẋ, x, r, u, p, t)`` affine in ẋ.

    ``what`` names the model in messages; ``needs`` says what needs the ODE.

    Raises
    ------
    ModelError
        If the residual is nonlinear in ẋ or ∂f/∂ẋ is structurally singular (a DAE).
    """
    xdot = ca.SX.sym("xdot", residual.size1_in(0))
    names = [residual.name_in(i) for i in range(1, residual.n_in())]
    args = [ca.SX.sym(residual.name_in(i), residual.sparsity_in(i)) for i in range(1, residual.n_in())]
    f = residual(xdot, *args)
    M = ca.jacobian(f, xdot)
    if ca.jacobian(ca.vec(M), xdot).nnz() != 0:
        raise ModelError(f"{what}: residual is nonlinear in the state derivatives")
    if ca.sprank(M) < M.shape[0]:
        raise ModelError(f"{what}: ∂f/∂ẋ is structurally singular (a DAE); {needs}")
    b = ca.substitute(f, xdot, ca.DM.zeros(xdot.shape))
    rhs = ca.solve(M, -b)
    return ca.Function(function_name(f"{residual.name()}_rhs"), args, [rhs], names, ["xdot"])


def explicit_rhs(model: Model) -> ca.Function:
    """``ẋ = g(x, r, u, p, t)`` of ``model``, if its residual is affine in ẋ.

    Raises
    ------
    ModelError
        If the residual is nonlinear in ẋ or ∂f/∂ẋ is structurally singular (a DAE).
    """
    rhs = explicit_form(model.functions()["residual"], f"model '{model.name}'", "forward simulation needs an ODE")
    return ca.Function(function_name(f"{model.name}_rhs"), rhs.sx_in(), rhs.call(rhs.sx_in()),
                       rhs.name_in(), ["xdot"])
