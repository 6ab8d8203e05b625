"""The model: named quantities and implicit dynamics, no grid, no data, no solver.

A :class:`Model` hands out CasADi symbols for its states, known (measured) inputs, free
(unknown) input trajectories and constant parameters, and collects the dynamics as an
implicit residual ``0 = f(ẋ, x, r, u, p, t)``.  ``set_der`` is sugar for the explicit
case ``ẋ = g(·)``; ``add_residual`` takes mass-matrix forms and algebraic equations.

Glossary of sizes used in this module and in :mod:`colloc.transcription.nlp`:

======  =====================================================
``n``   number of states (scalar elements)
``q``   number of free (unknown) input elements
``s``   number of known (measured) input elements
``r``   number of constant parameter elements
``m``   number of residual equations (must equal ``n``)
======  =====================================================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import ModelError
from ..base.naming import function_name

__all__ = ["Model", "Variable"]

Kind = Literal["state", "free_input", "known_input", "parameter"]
_KIND_LABEL = {
    "state": "state",
    "free_input": "free input",
    "known_input": "known input",
    "parameter": "parameter",
}


@dataclass(frozen=True)
class Variable:
    """One declared quantity (possibly vector- or matrix-shaped).

    Attributes
    ----------
    name : str
        Declared name.
    kind : {"state", "free_input", "known_input", "parameter"}
    shape : tuple of int
        ``(rows, cols)``; scalars are ``(1, 1)``.
    element_names : tuple of str
        One name per scalar element, row-major (``k_00, k_01, …`` for a matrix ``k``).
    unit : str
        The unit as declared (for a matrix with per-element units, the distinct units
        joined by ", ").
    units : tuple of str
        One unit per element (row-major).
    descriptions : tuple of str
        One description per element (what the element means), ``""`` when not given.
    lower, upper, scale, guess : ndarray, shape (size,)
        Per-element bounds, nominal scale and initial guess (row-major).
    symbol : casadi.SX
        The symbol handed to the user, of shape ``shape``.
    flat : casadi.SX
        The same elements as a column, row-major, shape ``(size, 1)``.
    hold : bool
        Free inputs only: held constant over each interval.
    jumps : tuple of float
        Known inputs only: times (s) at which the input may jump.
    """

    name: str
    kind: str
    shape: tuple[int, int]
    element_names: tuple[str, ...]
    unit: str
    lower: np.ndarray
    upper: np.ndarray
    scale: np.ndarray
    guess: np.ndarray
    symbol: ca.SX = field(repr=False)
    flat: ca.SX = field(repr=False)
    hold: bool = False
    jumps: tuple[float, ...] = ()
    units: tuple[str, ...] = ()
    descriptions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.units:
            object.__setattr__(self, "units", (self.unit,) * len(self.element_names))
        if not self.descriptions:
            object.__setattr__(self, "descriptions", ("",) * len(self.element_names))

    @property
    def size(self) -> int:
        """Number of scalar elements."""
        return len(self.element_names)


@dataclass(frozen=True)
class Equation:
    """A block of residual equations with their names and scales."""

    expr: ca.SX
    names: tuple[str, ...]
    scale: np.ndarray


@dataclass(frozen=True)
class Delay:
    """A state delayed by τ, ``x(t − τ)``, as used in the dynamics.

    Attributes
    ----------
    state_elements : tuple of str
        The delayed state elements.
    symbols : casadi.SX
        Column of the symbols that stand for ``x(t − τ)`` in model expressions.
    parameter : str or None
        Name of the parameter that is τ, or ``None`` when τ is the constant ``value``.
    value : float or None
        The constant delay (s).
    lower, upper : float
        Bounds on τ (equal to ``value`` for a constant); they fix the band of nodes a
        collocation interval couples with.
    """

    state_elements: tuple[str, ...]
    symbols: ca.SX = field(repr=False)
    parameter: str | None
    value: float | None
    lower: float
    upper: float

    def at(self, parameters: dict[str, float]) -> float:
        """τ (s): the constant, or the parameter's value in ``parameters`` (by name)."""
        if self.parameter is not None:
            return float(parameters[self.parameter])
        assert self.value is not None  # a constant delay has its value
        return float(self.value)


def _normalize_shape(shape: int | Sequence[int], where: str) -> tuple[int, int]:
    given = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if len(given) == 1:
        given = (given[0], 1)
    if len(given) != 2 or min(given) < 1:
        raise ModelError(f"{where}: shape must be a positive int or (rows, cols), got {shape!r}")
    return given[0], given[1]


def _element_names(name: str, shape: tuple[int, int]) -> tuple[str, ...]:
    rows, cols = shape
    if rows == cols == 1:
        return (name,)
    if cols == 1:
        return tuple(f"{name}_{i}" for i in range(rows))
    if rows > 10 or cols > 10:
        return tuple(f"{name}_{i}_{j}" for i in range(rows) for j in range(cols))
    return tuple(f"{name}_{i}{j}" for i in range(rows) for j in range(cols))


def _per_element_text(value, size: int, shape: tuple[int, int], what: str, where: str) -> tuple[str, ...]:
    """A string, or one string per element (nested rows or flat, row-major)."""
    if value is None:
        return ("",) * size
    if isinstance(value, str):
        return (value,) * size
    arr = np.asarray(value, dtype=object)
    if arr.shape == shape or arr.size == size:
        items = tuple(arr.reshape(shape).ravel(order="C").tolist())
        if all(isinstance(v, str) for v in items):
            return items
    raise ModelError(f"{where}: {what} must be a string or one string per element (shape {shape}), got {value!r}")


def _per_element(value, size: int, shape: tuple[int, int], what: str, where: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        return np.full(size, float(arr))
    if arr.shape == shape or (arr.ndim == 1 and arr.size == size) or arr.size == size:
        return np.array(arr, dtype=float).reshape(shape).ravel(order="C").copy()
    raise ModelError(
        f"{where}: {what} must be a scalar or have shape {shape}, got shape {arr.shape}"
    )


class Model:
    """A dynamic model with named states, inputs and parameters.

    Parameters
    ----------
    name : str
        Used in messages and result documents.
    compiled : bool or None
        Compile the derivative functions of the collocation defects (and, if ``True``, the
        forward simulation's right-hand side) to machine code with the system C compiler,
        cached on disk (:func:`colloc.base.compiler.compiled`).  ``None`` (the default):
        decided when the NLP is built (:func:`colloc.transcription.nlp.compile_decision`):
        compiled when a C compiler is found and the problem is large enough to repay the
        compile time or the cache already holds its functions, else interpreted by CasADi's
        virtual machine; ``True`` / ``False`` force it.  What was done and what it cost are
        in ``result.model_evaluation`` and ``result.timings["compile_s"]``.

    Examples
    --------
    >>> m = Model("pendulum")
    >>> theta = m.state("theta", unit="rad")
    >>> omega = m.state("omega", unit="rad/s")
    >>> p = m.parameter("p", bounds=(0.1, 100.0), guess=1.0, unit="1/s^2")
    >>> m.set_der(theta, omega)
    >>> m.set_der(omega, -p * ca.sin(theta))
    """

    def __init__(self, name: str, *, compiled: bool | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise ModelError(f"Model name must be a non-empty string, got {name!r}")
        if compiled is not None and not isinstance(compiled, (bool, np.bool_)):
            raise ModelError(f"Model '{name}': compiled must be True, False or None (decided by size), "
                             f"got {compiled!r}")
        self.name = name
        self.compiled: bool | None = None if compiled is None else bool(compiled)
        self.time = ca.SX.sym("t")
        self._variables: dict[str, Variable] = {}
        self._element_owner: dict[str, str] = {}
        self._derivatives: dict[str, ca.SX] = {}
        self._equations: list[Equation] = []
        self._outputs: dict[str, tuple[ca.SX, str]] = {}
        self._der_pairs: list[tuple[str, ca.SX]] = []
        self._delays: list[Delay] = []
        # parameter element -> (lower bound physical, upper bound physical); other bounds are
        # search ranges (Model.parameter(physical=...))
        self._physical: dict[str, tuple[bool, bool]] = {}

    # ---- declarations -------------------------------------------------------------------
    def _declare(
        self,
        kind: Kind,
        name: str,
        shape: int | Sequence[int],
        unit: str | Sequence[Any],
        bounds: tuple,
        scale,
        guess,
        hold: bool = False,
        description=None,
    ) -> ca.SX:
        where = f"{_KIND_LABEL[kind]} '{name}' of model '{self.name}'"
        if not isinstance(name, str) or not name.isidentifier():
            raise ModelError(f"{_KIND_LABEL[kind]} name must be an identifier, got {name!r}")
        if name == "time":
            raise ModelError(f"{where}: 'time' is reserved for the time column; pick another name")
        dims = _normalize_shape(shape, where)
        names = _element_names(name, dims)
        for n in (name, *names):
            if n in self._variables or n in self._element_owner or n in self._outputs:
                raise ModelError(f"{where}: the name '{n}' is already declared in this model")
        size = len(names)
        try:
            lo, hi = bounds
        except (TypeError, ValueError):
            raise ModelError(f"{where}: bounds must be a pair (lower, upper), got {bounds!r}") from None
        lower = _per_element(-np.inf if lo is None else lo, size, dims, "lower bound", where)
        upper = _per_element(np.inf if hi is None else hi, size, dims, "upper bound", where)
        bad = np.flatnonzero(lower > upper)
        if bad.size:
            i = bad[0]
            raise ModelError(
                f"{where}: lower bound {lower[i]:g} > upper bound {upper[i]:g} for element "
                f"'{names[i]}'; swap them"
            )
        scale_arr = _per_element(scale, size, dims, "scale", where)
        if np.any(~np.isfinite(scale_arr)) or np.any(scale_arr <= 0):
            raise ModelError(f"{where}: scale must be finite and > 0, got {scale!r}")
        guess_arr = _per_element(guess, size, dims, "guess", where)
        if np.any(~np.isfinite(guess_arr)):
            raise ModelError(f"{where}: guess must be finite, got {guess!r}")
        guess_arr = np.clip(guess_arr, lower, upper)
        units = _per_element_text(unit, size, dims, "unit", where)
        descriptions = _per_element_text(description, size, dims, "description", where)
        if not isinstance(unit, str):
            unit = ", ".join(dict.fromkeys(u for u in units if u))
        flat = ca.vertcat(*[ca.SX.sym(n) for n in names])
        symbol = flat if dims[1] == 1 else ca.reshape(flat, dims[1], dims[0]).T
        var = Variable(
            name=name,
            kind=kind,
            shape=dims,
            element_names=names,
            unit=unit,
            lower=lower,
            upper=upper,
            scale=scale_arr,
            guess=guess_arr,
            symbol=symbol,
            flat=flat,
            hold=bool(hold),
            units=units,
            descriptions=descriptions,
        )
        self._variables[name] = var
        for n in names:
            self._element_owner[n] = name
        if kind == "state":
            self._derivatives[name] = ca.vertcat(*[ca.SX.sym(f"der({n})") for n in names])
        return symbol

    def state(
        self,
        name: str,
        shape: int | Sequence[int] = 1,
        *,
        unit: str = "",
        bounds: tuple = (-np.inf, np.inf),
        scale: ArrayLike = 1.0,
        guess: ArrayLike = 0.0,
    ) -> ca.SX:
        """Declare a state (differential or algebraic) and return its symbol.

        Parameters
        ----------
        name : str
            Identifier; a state is measurable under this name.
        shape : int or (rows, cols), optional
            Vector states have element names ``name_0, name_1, …``.
        unit : str, optional
        bounds : (lower, upper), optional
            Scalars or per-element arrays; ``None`` means unbounded.
        scale : float or array, optional
            Nominal magnitude; the solver sees ``value / scale``.
        guess : float or array, optional
            Initial guess used where the data say nothing.
        """
        return self._declare("state", name, shape, unit, bounds, scale, guess)

    def known_input(
        self, name: str, shape: int | Sequence[int] = 1, *, unit: str = "", scale: ArrayLike = 1.0,
        jumps: Sequence[float] = (),
    ) -> ca.SX:
        """Declare a measured input; every trial must provide a column of this name.

        Parameters
        ----------
        name : str
            Identifier and CSV column name.
        shape : int or (rows, cols), optional
        unit : str, optional
        scale : float or array, optional
            Nominal magnitude (used when the input is estimated as errors-in-variables).
        jumps : sequence of float, optional
            Times (s) at which the input may jump (a step in a dose, a stimulator switched
            on).  Each becomes a mesh point; the input is interpolated separately on each
            side, the spline of each side ending at the jump, and the simulation check
            restarts there.  A jump written in the data itself (two rows at one time, read
            with ``jump_columns=``) needs no declaration.  Each time must lie strictly
            inside every trial's record.
        """
        where = f"known input '{name}' of model '{self.name}'"
        try:
            times = np.array(jumps, dtype=float).ravel()
        except (TypeError, ValueError):
            raise ModelError(f"{where}: jumps must be a sequence of times in seconds, got {jumps!r}") from None
        if isinstance(jumps, str) or not np.all(np.isfinite(times)):
            raise ModelError(f"{where}: jumps must be finite times in seconds, got {jumps!r}")
        symbol = self._declare("known_input", name, shape, unit, (-np.inf, np.inf), scale, 0.0)
        if times.size:
            var = self._variables[name]
            self._variables[name] = dataclasses.replace(var, jumps=tuple(sorted(set(times.tolist()))))
        return symbol

    def input_jumps(self) -> dict[str, tuple[float, ...]]:
        """Known-input element name -> the jump times declared with ``known_input(..., jumps=)``
        (only elements that have some)."""
        return {e: v.jumps for v in self.variables("known_input") if v.jumps for e in v.element_names}

    def free_input(
        self,
        name: str,
        shape: int | Sequence[int] = 1,
        *,
        unit: str = "",
        bounds: tuple = (-np.inf, np.inf),
        scale: ArrayLike = 1.0,
        guess: ArrayLike = 0.0,
        hold: bool = False,
    ) -> ca.SX:
        """Declare an unknown input trajectory, estimated at every node of every trial.

        Parameters
        ----------
        name : str
        shape : int or (rows, cols), optional
        unit : str, optional
        bounds : (lower, upper), optional
            Path bounds at every node.
        scale : float or array, optional
            Nominal magnitude.
        guess : float or array, optional
            Initial guess where the data say nothing (see :meth:`Problem.set_guess`).
        hold : bool, optional
            ``False`` (default): the input is linear between nodes.  ``True``: it is held
            constant over each interval at its value at the interval's start (zero-order
            hold), as a sampled white-noise or piecewise-constant control is; the value at
            the last node then drives nothing.
        """
        return self._declare("free_input", name, shape, unit, bounds, scale, guess, hold)

    def parameter(
        self,
        name: str,
        shape: int | Sequence[int] = 1,
        *,
        unit: str | Sequence = "",
        bounds: tuple = (-np.inf, np.inf),
        scale: ArrayLike = 1.0,
        guess: ArrayLike = 0.0,
        description: str | Sequence | None = None,
        physical: bool | tuple[bool, bool] = False,
        search_range: bool | None = None,
    ) -> ca.SX:
        """Declare a constant unknown parameter shared by all trials.

        A matrix parameter is one line: ``K = m.parameter("k", shape=(2, 4), scale=100.0)``
        gives elements ``k_00 … k_13`` (row-major) in results.

        Parameters
        ----------
        name : str
        shape : int or (rows, cols), optional
        unit : str or array of str, optional
            One unit, or one per element (nested rows for a matrix): the gains of
            ``K = m.parameter("k", shape=(2, 4), unit=[["N·m/rad"] * 2 + ["N·m·s/rad"] * 2] * 2)``
            print each with its own unit.
        bounds : (lower, upper), optional
            Scalars or per-element arrays; ``None`` means unbounded.
        scale : float or array, optional
            Nominal magnitude; the solver sees ``value / scale``.
        guess : float or array, optional
            Initial guess (clipped into the bounds).
        description : str or array of str, optional
            What the parameter (or each element) means, shown in reports.
        physical : bool or (bool, bool), optional
            Whether the bounds are limits of the model (an activation in [0, 1], a stiffness
            ≥ 0), where an estimate on the bound is an answer (a success with the warning
            ``parameter_at_bound``); one flag for both sides or ``(lower, upper)``.  By default
            (``False``) bounds are search ranges, saying where to look: an estimate that ends
            on one is a failure (``status "parameter_at_bound"``), since the optimum of the
            model lies beyond it.
        search_range : bool, optional
            The older spelling: ``search_range=True`` is the default, ``search_range=False``
            is ``physical=True``.
        """
        symbol = self._declare("parameter", name, shape, unit, bounds, scale, guess, description=description)
        if search_range is not None:
            if physical is not False:
                raise ModelError(f"parameter '{name}' of model '{self.name}': give physical= or search_range=, "
                                 "not both")
            physical = not search_range
        sides = (bool(physical), bool(physical)) if isinstance(physical, (bool, np.bool_)) else tuple(physical)
        if len(sides) != 2 or not all(isinstance(v, (bool, np.bool_)) for v in sides):
            raise ModelError(f"parameter '{name}' of model '{self.name}': physical= expects a bool or a pair "
                             f"(lower, upper) of bools, got {physical!r}")
        for element in self._variables[name].element_names:
            self._physical[element] = (bool(sides[0]), bool(sides[1]))
        return symbol

    def physical_bounds(self, element: str) -> tuple[bool, bool]:
        """``(lower, upper)``: whether each bound of parameter element ``element`` is a limit
        of the model (``Model.parameter(physical=...)``) rather than a search range."""
        return self._physical.get(element, (False, False))

    @property
    def search_ranges(self) -> tuple[str, ...]:
        """Parameter elements with a finite bound that is a search range, not a limit of the
        model (see :meth:`parameter`): an estimate on it is a failure."""
        out = []
        for name in self.element_names("parameter"):
            var = self.variable(name)
            i = var.element_names.index(name) if name in var.element_names else 0
            finite = (np.isfinite(var.lower[i]), np.isfinite(var.upper[i]))
            if any(f and not p for f, p in zip(finite, self.physical_bounds(name))):
                out.append(name)
        return tuple(out)

    def output(self, name: str, expr: ca.SX | float, *, unit: str = "") -> ca.SX:
        """Declare a measurable output ``y = h(x, r, u, p, t)`` and return ``expr``.

        Parameters
        ----------
        name : str
            Signal name (a trial column may carry it).
        expr : casadi.SX
            Scalar expression in the model's symbols (no derivatives).
        unit : str, optional
        """
        if not isinstance(name, str) or not name.isidentifier() or name == "time":
            raise ModelError(f"output name must be an identifier other than 'time', got {name!r}")
        if name in self._variables or name in self._element_owner or name in self._outputs:
            raise ModelError(f"output '{name}' of model '{self.name}': name already declared")
        expr = ca.SX(expr)
        if expr.numel() != 1:
            raise ModelError(
                f"output '{name}' of model '{self.name}' must be scalar, got shape {expr.shape}; "
                "declare one output per measured signal"
            )
        self._check_symbols(expr, f"output '{name}'", allow_der=False)
        self._outputs[name] = (expr, unit)
        return expr

    # ---- delays -------------------------------------------------------------------------
    def delayed(self, state: ca.SX | str, delay: float | ca.SX | str) -> ca.SX:
        """The state ``x(t − τ)`` for use in the dynamics (a delayed feedback, for example).

        Parameters
        ----------
        state : casadi.SX or str
            A declared state (by symbol or name) or any column of state-element symbols,
            such as ``vertcat(q, w)``; delayed element-wise.
        delay : float or casadi.SX or str
            τ ≥ 0 in seconds: a constant, or a scalar parameter of this model (symbol or
            name) with finite bounds ``0 ≤ lower ≤ upper``; the bounds fix how many nodes
            a collocation interval couples with (the Jacobian band).

        Returns
        -------
        casadi.SX
            Symbols of the same shape as ``state``.

        Notes
        -----
        Before the first sample the history is the initial state (constant history).
        Collocation interpolates the node values with the C¹ cubic-convolution kernel
        (Keys 1981), so ``x(t − τ)`` is smooth in τ and τ need not be a multiple of the step.
        Delayed states may appear in the dynamics only (not in outputs or extra terms).
        """
        if isinstance(state, str):
            state = self.variable(state).symbol
        sx = ca.SX(state)
        elements: list[str] = []
        for e in ca.vertsplit(ca.vec(sx.T) if sx.shape[1] > 1 else sx):
            name = e.name() if e.is_symbolic() else ""
            owner = self._variables.get(self._element_owner.get(name, ""), None)
            if not name or owner is None or owner.kind != "state":
                raise ModelError(f"delayed() takes states of model '{self.name}' (symbols or a name), got {e}")
            elements.append(name)
        if isinstance(delay, (int, float, np.integer, np.floating)):
            tau = float(delay)
            if not np.isfinite(tau) or tau < 0:
                raise ModelError(f"delayed({', '.join(elements)}): delay must be finite and >= 0 s, got {delay!r}")
            parameter, value, lo, hi, label = None, tau, tau, tau, f"{tau:g}"
        else:
            pvar = self._variable_of(delay, "delayed")
            if pvar.kind != "parameter" or pvar.size != 1:
                raise ModelError(f"delayed({', '.join(elements)}): delay must be a number or a scalar parameter, "
                                 f"got {_KIND_LABEL[pvar.kind]} '{pvar.name}'")
            lo, hi = float(pvar.lower[0]), float(pvar.upper[0])
            if not (np.isfinite(lo) and np.isfinite(hi) and 0 <= lo <= hi):
                raise ModelError(
                    f"delayed({', '.join(elements)}): the delay parameter '{pvar.name}' needs finite bounds "
                    f"0 <= lower <= upper (they fix the Jacobian band), got ({lo:g}, {hi:g})"
                )
            parameter, value, label = pvar.name, None, pvar.name
        syms = ca.vertcat(*[ca.SX.sym(f"{n}(t-{label})") for n in elements])
        self._delays.append(Delay(tuple(elements), syms, parameter, value, lo, hi))
        return syms if sx.shape[1] == 1 else ca.reshape(syms, sx.shape[1], sx.shape[0]).T

    @property
    def delays(self) -> list[Delay]:
        """The delayed states declared with :meth:`delayed`, in order."""
        return list(self._delays)

    def delayed_vector(self) -> ca.SX:
        """All delayed-state symbols stacked (empty without delays)."""
        parts = [d.symbols for d in self._delays]
        return ca.vertcat(*parts) if parts else ca.SX(0, 1)

    # ---- dynamics -----------------------------------------------------------------------
    def der(self, state: ca.SX | str) -> ca.SX:
        """Symbol for the time derivative of a state (for implicit residuals)."""
        var = self._variable_of(state, "der")
        if var.kind != "state":
            raise ModelError(
                f"der() takes a state, but '{var.name}' is a {_KIND_LABEL[var.kind]} of model "
                f"'{self.name}'"
            )
        d = self._derivatives[var.name]
        return d if var.shape[1] == 1 else ca.reshape(d, var.shape[1], var.shape[0]).T

    def set_der(self, state: ca.SX | str, expr: ca.SX | float) -> None:
        """Explicit dynamics ``ẋ = expr`` for ``state`` (sugar for a residual ``ẋ − expr``)."""
        var = self._variable_of(state, "set_der")
        if var.kind != "state":
            raise ModelError(
                f"set_der() on '{var.name}', which is a {_KIND_LABEL[var.kind]}, not a state, "
                f"of model '{self.name}'"
            )
        expr = ca.SX(expr)
        if expr.shape != var.symbol.shape:
            raise ModelError(
                f"set_der('{var.name}'): expression has shape {expr.shape}, expected "
                f"{var.symbol.shape} (the state's shape)"
            )
        self._check_symbols(expr, f"set_der('{var.name}')", allow_der=False)
        flat_expr = ca.vec(expr.T) if var.shape[1] > 1 else expr
        self._equations.append(
            Equation(
                expr=self._derivatives[var.name] - flat_expr,
                names=tuple(f"ode({n})" for n in var.element_names),
                scale=var.scale.copy(),
            )
        )
        self._der_pairs.append((var.name, flat_expr))

    def add_residual(self, expr: ca.SX | float, *, name: str = "residual", scale: ArrayLike = 1.0) -> None:
        """Add implicit equations ``0 = expr(ẋ, x, r, u, p, t)`` (mass-matrix forms, DAEs).

        Parameters
        ----------
        expr : casadi.SX, shape (k, 1)
            Uses :meth:`der` symbols for derivatives.
        name : str, optional
            Equations are named ``name_0 … name_{k-1}`` (or ``name`` if k = 1) in
            constraint-violation reports.
        scale : float or array, optional
            Nominal magnitude of each equation (for example a torque scale in N·m).
        """
        expr = ca.SX(expr)
        if expr.numel() == 0:
            raise ModelError(f"add_residual('{name}'): empty expression")
        expr = ca.vec(expr)
        k = expr.numel()
        scale_arr = _per_element(scale, k, (k, 1), "scale", f"add_residual('{name}')")
        if np.any(scale_arr <= 0):
            raise ModelError(f"add_residual('{name}'): scale must be > 0, got {scale!r}")
        self._check_symbols(expr, f"add_residual('{name}')", allow_der=True)
        names = (name,) if k == 1 else tuple(f"{name}_{i}" for i in range(k))
        self._equations.append(Equation(expr=expr, names=names, scale=scale_arr))

    # ---- introspection ------------------------------------------------------------------
    def variables(self, kind: Kind | None = None) -> list[Variable]:
        """Declared variables in declaration order, optionally of one kind."""
        return [v for v in self._variables.values() if kind is None or v.kind == kind]

    def variable(self, name: str) -> Variable:
        """The declared variable called ``name`` (ModelError listing names if unknown)."""
        if name in self._variables:
            return self._variables[name]
        if name in self._element_owner:
            return self._variables[self._element_owner[name]]
        raise ModelError(
            f"model '{self.name}' has no variable '{name}'; declared: "
            f"{', '.join(self._variables) or '(none)'}"
        )

    def element_names(self, kind: Kind) -> list[str]:
        """Scalar element names of all variables of ``kind``, in layout order."""
        return [n for v in self.variables(kind) for n in v.element_names]

    def _stack(self, kind: Kind, attr: str) -> np.ndarray:
        parts = [getattr(v, attr) for v in self.variables(kind)]
        return np.concatenate(parts) if parts else np.zeros(0)

    def bounds(self, kind: Kind) -> tuple[np.ndarray, np.ndarray]:
        """Per-element lower and upper bounds of ``kind``."""
        return self._stack(kind, "lower"), self._stack(kind, "upper")

    def scales(self, kind: Kind) -> np.ndarray:
        """Per-element nominal scales of ``kind``."""
        return self._stack(kind, "scale")

    def held_inputs(self) -> np.ndarray:
        """Boolean mask over the free-input elements: ``True`` where the input is held
        constant over each interval (``free_input(..., hold=True)``)."""
        return np.array([v.hold for v in self.variables("free_input") for _ in v.element_names], dtype=bool)

    def guesses(self, kind: Kind) -> np.ndarray:
        """Per-element initial guesses of ``kind``."""
        return self._stack(kind, "guess")

    @property
    def output_names(self) -> list[str]:
        """Names of the declared outputs (states are measurable by their own names too)."""
        return list(self._outputs)

    def signal_names(self) -> list[str]:
        """Every name a trial column or a fit weight may refer to."""
        return (
            self.element_names("state")
            + self.element_names("free_input")
            + self.output_names
        )

    def unit_of(self, signal: str) -> str:
        """Unit of a state, input, parameter or output element (its own, for an element of
        a matrix declared with per-element units)."""
        if signal in self._outputs:
            return self._outputs[signal][1]
        var = self.variable(signal)
        if signal in var.element_names:
            return var.units[var.element_names.index(signal)]
        return var.unit

    def description_of(self, element: str) -> str:
        """The declared description of a variable element (``""`` when none)."""
        var = self.variable(element)
        if element in var.element_names:
            return var.descriptions[var.element_names.index(element)]
        return ""

    def set_bounds(self, name: str, lower: float | None = None, upper: float | None = None) -> None:
        """Change the bounds of a declared variable or of one of its elements.

        ``None`` keeps a side as it is.  The guess is not changed (starts are clipped into
        the bounds when a solve begins).
        """
        var = self.variable(name)
        where = f"{_KIND_LABEL[var.kind]} '{name}' of model '{self.name}'"
        index = [var.element_names.index(name)] if name in var.element_names and name != var.name \
            else list(range(var.size))
        lo, hi = var.lower.copy(), var.upper.copy()
        for arr, value in ((lo, lower), (hi, upper)):
            if value is not None:
                value = float(value)
                if np.isnan(value):
                    raise ModelError(f"{where}: a bound may not be NaN")
                arr[index] = value
        bad = [i for i in index if lo[i] > hi[i]]
        if bad:
            i = bad[0]
            raise ModelError(f"{where}: lower bound {lo[i]:g} > upper bound {hi[i]:g} for element "
                             f"'{var.element_names[i]}'")
        self._variables[var.name] = dataclasses.replace(var, lower=lo, upper=hi)

    def derivative_pairs(self) -> list[tuple[str, str]]:
        """(state, state) pairs where ``set_der(a, b)`` made ``b`` the plain derivative of ``a``.

        Used to initialise unmeasured velocities by differentiating measured positions.
        """
        pairs = []
        for name, expr in self._der_pairs:
            var = self._variables[name]
            for i, elem in enumerate(var.element_names):
                e = expr[i]
                if e.is_symbolic() and e.name() in self._element_owner:
                    owner = self._variables[self._element_owner[e.name()]]
                    if owner.kind == "state":
                        pairs.append((elem, e.name()))
        return pairs

    # ---- compilation --------------------------------------------------------------------
    def _vec(self, kind: Kind) -> ca.SX:
        parts = [v.flat for v in self.variables(kind)]
        return ca.vertcat(*parts) if parts else ca.SX(0, 1)

    def check(self) -> None:
        """Raise ModelError unless the model is complete and square."""
        n = len(self.element_names("state"))
        if n == 0:
            raise ModelError(f"model '{self.name}' has no states; declare them with state()")
        m = sum(len(eq.names) for eq in self._equations)
        if m != n:
            raise ModelError(
                f"model '{self.name}' has {m} dynamic equation(s) for {n} state element(s); "
                "add set_der()/add_residual() until they match"
            )
        xdot = ca.vertcat(*[self._derivatives[v.name] for v in self.variables("state")])
        res = self.residual_expr()
        if ca.jacobian(res, xdot).nnz() == 0:
            raise ModelError(
                f"model '{self.name}': no equation contains a state derivative; use set_der() or "
                "der() in add_residual()"
            )

    def residual_expr(self) -> ca.SX:
        """All residual equations stacked, shape (m, 1)."""
        return ca.vertcat(*[eq.expr for eq in self._equations])

    @property
    def equation_names(self) -> list[str]:
        """Names of the residual equations in order."""
        return [n for eq in self._equations for n in eq.names]

    @property
    def equation_scales(self) -> np.ndarray:
        """Nominal magnitude of each residual equation."""
        parts = [eq.scale for eq in self._equations]
        return np.concatenate(parts) if parts else np.zeros(0)

    def functions(self) -> dict[str, ca.Function]:
        """Compile the model into CasADi functions with named inputs and outputs.

        Returns
        -------
        dict with
            ``"residual"``: (xdot[n], x[n], r[q], u[s + d], p[r], t) → res[m], where the
            last ``d`` entries of ``u`` are the delayed states (:meth:`delayed_vector`)
            ``"signals"``: (x, r, u, p, t) → y (every signal in :meth:`signal_names`)
        """
        self.check()
        xdot = ca.vertcat(*[self._derivatives[v.name] for v in self.variables("state")])
        args = [
            xdot,
            self._vec("state"),
            self._vec("free_input"),
            self._vec("known_input"),
            self._vec("parameter"),
            self.time,
        ]
        names = ["xdot", "x", "r", "u", "p", "t"]
        # delayed states enter the residual as extra inputs after the known inputs
        res_args = list(args)
        res_args[3] = ca.vertcat(args[3], self.delayed_vector())
        residual = ca.Function(
            function_name(f"{self.name}_residual"), res_args, [self.residual_expr()], names, ["res"]
        )
        signals_expr = ca.vertcat(
            self._vec("state"),
            self._vec("free_input"),
            *[expr for expr, _ in self._outputs.values()],
        )
        signals = ca.Function(
            function_name(f"{self.name}_signals"), args[1:], [signals_expr], names[1:], ["y"]
        )
        return {"residual": residual, "signals": signals}

    # ---- helpers ------------------------------------------------------------------------
    def _variable_of(self, symbol, where: str) -> Variable:
        if isinstance(symbol, str):
            return self.variable(symbol)
        sx = ca.SX(symbol)
        for var in self._variables.values():
            if sx.shape == var.symbol.shape and ca.is_equal(sx, var.symbol, 1):
                return var
        raise ModelError(
            f"{where}() needs a symbol (or name) declared by this model '{self.name}', got {sx}"
        )

    def _check_symbols(self, expr: ca.SX, where: str, allow_der: bool) -> None:
        known = {self.time.name()} | set(self._element_owner)
        if allow_der:
            known |= {f"der({n})" for v in self.variables("state") for n in v.element_names}
        if where.startswith(("set_der", "add_residual")):
            known |= {s.name() for d in self._delays for s in ca.symvar(d.symbols)}
        for s in ca.symvar(expr):
            if s.name() not in known:
                hint = (
                    " (derivatives are only allowed in add_residual)"
                    if s.name().startswith("der(")
                    else ""
                )
                raise ModelError(
                    f"{where}: symbol '{s.name()}' is not declared in model '{self.name}'{hint}"
                )

    def __repr__(self) -> str:
        counts = ", ".join(
            f"{len(self.element_names(k))} {_KIND_LABEL[k]}s"
            for k in ("state", "free_input", "known_input", "parameter")
        )
        return f"Model('{self.name}': {counts}, {len(self._outputs)} outputs)"
