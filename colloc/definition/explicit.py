"""The explicit form ``ẋ = g(x, r, u, p, t)`` of a model whose implicit residual is affine in ẋ
(forward simulation, shooting and the Onsager–Machlup term need it)."""

from __future__ import annotations

import casadi as ca

from ..base.errors import ModelError
from ..base.naming import function_name
from .model import Model

__all__ = ["explicit_rhs"]


def explicit_rhs(model: Model) -> ca.Function:
    """``ẋ = g(x, r, u, p, t)`` from the implicit residual, if it is affine in ẋ.

    Raises
    ------
    ModelError
        If the residual is nonlinear in ẋ or ∂f/∂ẋ is structurally singular (a DAE).
    """
    fns = model.functions()
    res = fns["residual"]
    xdot = ca.SX.sym("xdot", res.size1_in(0))
    args = [ca.SX.sym(res.name_in(i), res.sparsity_in(i)) for i in range(1, res.n_in())]
    f = res(xdot, *args)
    M = ca.jacobian(f, xdot)
    if ca.jacobian(ca.vec(M), xdot).nnz() != 0:
        raise ModelError(f"model '{model.name}': residual is nonlinear in the state derivatives")
    if ca.sprank(M) < M.shape[0]:
        raise ModelError(
            f"model '{model.name}': ∂f/∂ẋ is structurally singular (a DAE); "
            "forward simulation needs an ODE"
        )
    b = ca.substitute(f, xdot, ca.DM.zeros(xdot.shape))
    rhs = ca.solve(M, -b)
    return ca.Function(function_name(f"{model.name}_rhs"), args, [rhs], [res.name_in(i) for i in range(1, res.n_in())], ["xdot"])
