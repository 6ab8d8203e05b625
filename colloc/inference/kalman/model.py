"""The continuous-time linear-Gaussian state-space model and its exact discretisation: zero-order
hold of white noise held over each sample, or Van Loan's integral for continuous white noise."""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from ...base.errors import CollocInputError, DataError, ModelError
from .expm import expm, expm_squarings_for, van_loan
from .filter import filter_step, steady_gain

#: Changes whenever :meth:`LinearGaussianModel._gradient_function` builds a different function:
#: part of the key of its compiled library in the disk cache.
_GRADIENT_CODE = "kalman-gradient-5"

__all__ = ["NOISE_FORMS", "LinearGaussianModel"]

#: Samples of the held part of the filter (the steady-state likelihood) in one call of its compiled
#: block (:meth:`LinearGaussianModel._steady_blocks`): the held matrices are passed once a block, not
#: once a sample, and the adjoint sums of a block are added up inside it.
STEADY_BLOCK = 50

#: The two forms of the process noise ``x(t)`` of :class:`LinearGaussianModel`.
NOISE_FORMS = ("held", "continuous")

#: Parameter values ``θ``: in ``parameter_names`` order, or a mapping name → value.
ParameterValues: TypeAlias = "ArrayLike | Mapping[str, float]"


def _as_symbolic(value, sym_type, what: str):
    """Convert a user's matrix (CasADi expression, number or array) to ``sym_type``."""
    if isinstance(value, (ca.SX, ca.MX)):
        if not isinstance(value, sym_type):
            raise ModelError(f"LinearGaussianModel: {what} is {type(value).__name__}, expected "
                             f"{sym_type.__name__}")
        return value
    if isinstance(value, ca.DM):
        return sym_type(value)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"LinearGaussianModel: {what} must be a CasADi expression or numeric, "
                         f"got {value!r}") from exc
    if arr.ndim > 2:
        raise ModelError(f"LinearGaussianModel: {what} must be a matrix, got an array of shape {arr.shape}")
    if arr.ndim < 2:
        arr = arr.reshape(-1, 1)
    return sym_type(ca.DM(arr))


class LinearGaussianModel:
    """A linear-Gaussian state-space model driven by white noise, held or continuous.

    ``s' = A(θ) s + G(θ) x(t)``, ``y_k = C(θ) s(t_k) + D(θ) x_k + e_k`` with ``e_k ~ N(0, R(θ))``.
    With ``noise="held"`` (the default) ``x(t) = x_k ~ N(0, I)`` on each sample interval
    (zero-order hold); with ``noise="continuous"`` ``x(t)`` is continuous-time white noise of
    spectral density ``Q_c(θ)`` (below).  See the module docstring.

    Parameters
    ----------
    parameter_names : sequence of str
        Names of the entries of the parameter vector ``θ``, in order.
    matrices : callable
        ``matrices(theta) -> (A, G, C, R)`` or ``(A, G, C, R, D)`` or a mapping with keys
        ``"A", "G", "C", "R"`` and optionally ``"D"``.  ``theta`` is a CasADi column vector
        (SX; MX if the callable fails on SX), and the matrices are CasADi expressions of it
        (or constants): ``A`` is n×n, ``G`` n×q, ``C`` p×n, ``R`` p×p (symmetric positive
        semidefinite; the innovation covariance must be positive definite), ``D`` p×q.  A
        scalar ``R`` is allowed for one output.  With ``noise="continuous"`` the mapping may
        also give ``"Qc"`` (q×q, symmetric positive semidefinite; default the identity), and
        ``D`` is not allowed (continuous white noise has no value at a sample to feed through).
    dt : float
        Uniform sampling interval.
    initial_mean : array-like or callable, optional
        Mean of the state at the first sample, length n, or ``callable(theta)`` returning
        a CasADi expression.  Default zero.
    initial_covariance : array-like or callable, optional
        Covariance of the state at the first sample (n×n, symmetric positive semidefinite),
        or ``callable(theta)``.  Default the zero matrix (state known exactly).
    name : str, optional
        Used in CasADi function names and messages.
    noise : {"held", "continuous"}, optional
        ``"held"`` (default): ``x(t) = x_k ~ N(0, I)`` held over ``[t_k, t_k + dt)``, discretised
        exactly by ``Φ = e^{A dt}``, ``Γ = ∫₀^dt e^{Aτ} dτ G`` (process noise ``Γ x_k``, covariance
        ``Γ Γᵀ``); its size per sample does not depend on ``dt``, so the same process recorded at
        another rate is another model.  ``"continuous"``: ``x(t)`` is white noise in continuous
        time with ``E[x(t) x(t')ᵀ] = Q_c δ(t − t')``.  ``Q_c`` is the two-sided power spectral
        density of ``x`` per hertz (the one-sided density is ``2 Q_c``): if ``x`` has unit ``[x]``,
        ``Q_c`` has unit ``[x]²·s = [x]²/Hz``, and the default ``Q_c = I`` makes ``G`` carry
        ``√(density)``, unit ``[s']·√s``.  The process noise over a sample is exact (Van Loan
        1978): ``Q_d = ∫₀^dt e^{Aτ} G Q_c Gᵀ e^{Aᵀτ} dτ``, from one exponential of
        ``[[−A, G Q_c Gᵀ], [0, Aᵀ]]·dt`` (its lower-right block is ``Φᵀ``, and ``Q_d = Φ`` times its
        upper-right block; computed on n×n blocks by :func:`~colloc.inference.kalman.expm.van_loan`),
        so the parameters mean the same at every sample rate.

    Notes
    -----
    The matrix exponential is compiled for a fixed number of squarings; the number is
    chosen from the 1-norm of the block matrix (``[[A, G], [0, 0]] dt`` or Van Loan's) at the
    parameters where the model is evaluated (one compiled version is cached per number of
    squarings and record length).
    """

    def __init__(
        self,
        parameter_names: Sequence[str],
        matrices: Callable[[Any], Any],
        *,
        dt: float,
        initial_mean: ArrayLike | Callable[[Any], Any] | None = None,
        initial_covariance: ArrayLike | Callable[[Any], Any] | None = None,
        name: str = "lgss",
        noise: str = "held",
    ) -> None:
        if isinstance(parameter_names, str):
            raise ModelError("LinearGaussianModel: parameter_names must be a sequence of names, "
                             "not one string")
        names = list(parameter_names)
        if not names:
            raise ModelError("LinearGaussianModel: at least one parameter is needed")
        for nm in names:
            if not isinstance(nm, str) or not nm:
                raise ModelError("LinearGaussianModel: parameter names must be non-empty "
                                 f"strings, got {nm!r}")
        dup = sorted({nm for nm in names if names.count(nm) > 1})
        if dup:
            raise ModelError(f"LinearGaussianModel: duplicate parameter names {dup}")
        if not callable(matrices):
            raise ModelError("LinearGaussianModel: matrices must be a callable theta -> (A, G, C, R)")
        try:
            dt = float(dt)
        except (TypeError, ValueError) as exc:
            raise ModelError(f"LinearGaussianModel: dt must be a number, got {dt!r}") from exc
        if not (math.isfinite(dt) and dt > 0):
            raise ModelError(f"LinearGaussianModel: dt must be finite and > 0, got {dt}")
        if noise not in NOISE_FORMS:
            raise ModelError(f"LinearGaussianModel: noise must be one of {', '.join(NOISE_FORMS)}, got {noise!r}")
        continuous = noise == "continuous"

        self.parameter_names: tuple[str, ...] = tuple(names)
        self.dt = dt
        self.name = str(name)
        np_ = len(names)

        built = None
        errors = []
        sym_type: Any
        theta: Any  # SX, or MX for matrices that only MX can express: one kind throughout
        for sym_type in (ca.SX, ca.MX):
            theta = sym_type.sym("theta", np_)
            try:
                out = matrices(theta)
            except Exception as exc:  # noqa: BLE001 - retried with MX, then reported
                errors.append(f"{sym_type.__name__}: {type(exc).__name__}: {exc}")
                continue
            built = (sym_type, theta, out)
            break
        if built is None:
            raise ModelError("LinearGaussianModel: calling matrices(theta) failed: " + "; ".join(errors))
        sym_type, theta, out = built

        Qc = None
        if isinstance(out, Mapping):
            optional = {"Qc"} if continuous else {"D"}
            missing = [k for k in ("A", "G", "C", "R") if k not in out]
            extra = sorted(set(out) - {"A", "G", "C", "R"} - optional)
            if missing or extra:
                hint = ("; D is not allowed with noise='continuous'" if continuous and "D" in extra else
                        "; Qc needs noise='continuous'" if "Qc" in extra else "")
                raise ModelError(f"LinearGaussianModel: matrices() mapping needs keys A, G, C, R "
                                 f"(and optionally {' or '.join(sorted(optional))}); missing {missing}, "
                                 f"unknown {extra}{hint}")
            mats = [out["A"], out["G"], out["C"], out["R"], out.get("D")]
            Qc = out.get("Qc")
        else:
            try:
                mats = list(out)
            except TypeError as exc:
                raise ModelError("LinearGaussianModel: matrices() must return (A, G, C, R) "
                                 "or (A, G, C, R, D)") from exc
            if len(mats) not in (4, 5):
                raise ModelError(f"LinearGaussianModel: matrices() returned {len(mats)} items; "
                                 "expected (A, G, C, R) or (A, G, C, R, D)")
            if len(mats) == 4:
                mats.append(None)
            elif continuous:
                raise ModelError("LinearGaussianModel: matrices() returned D, which is not allowed with "
                                 "noise='continuous' (continuous white noise has no value at a sample)")
        for v, k in zip(mats[:4], "AGCR"):
            if v is None:
                raise ModelError(f"LinearGaussianModel: matrices() returned None for {k}")
        A, G, C, R = (_as_symbolic(v, sym_type, k) for v, k in zip(mats[:4], "AGCR"))
        D = None if mats[4] is None else _as_symbolic(mats[4], sym_type, "D")
        n = A.shape[0]
        if A.shape != (n, n) or n == 0:
            raise ModelError("LinearGaussianModel: A must be square and non-empty, got "
                             f"{A.shape[0]}x{A.shape[1]}")
        if G.shape[0] != n or G.shape[1] == 0:
            raise ModelError(f"LinearGaussianModel: G must have {n} rows and at least one column, "
                             f"got {G.shape[0]}x{G.shape[1]}")
        q = G.shape[1]
        if C.shape[1] != n or C.shape[0] == 0:
            raise ModelError(f"LinearGaussianModel: C must have {n} columns and at least one row, "
                             f"got {C.shape[0]}x{C.shape[1]}")
        p = C.shape[0]
        if R.shape == (1, 1) and p > 1:
            raise ModelError(f"LinearGaussianModel: R must be {p}x{p} for {p} outputs, got a scalar")
        if R.shape != (p, p):
            raise ModelError(f"LinearGaussianModel: R must be {p}x{p}, got {R.shape[0]}x{R.shape[1]}")
        if D is None:
            D = sym_type(p, q)
        elif D.shape != (p, q):
            raise ModelError(f"LinearGaussianModel: D must be {p}x{q}, got {D.shape[0]}x{D.shape[1]}")

        if continuous:
            Qc = sym_type.eye(q) if Qc is None else _as_symbolic(Qc, sym_type, "Qc")
            if Qc.shape != (q, q):
                raise ModelError(f"LinearGaussianModel: Qc must be {q}x{q} (one row per column of G), "
                                 f"got {Qc.shape[0]}x{Qc.shape[1]}")
        m0 = self._initial(initial_mean, theta, sym_type, (n, 1), "initial_mean")
        P0 = self._initial(initial_covariance, theta, sym_type, (n, n), "initial_covariance")

        self.num_states, self.num_inputs, self.num_outputs = n, q, p
        #: ``"held"`` or ``"continuous"``: the form of the process noise (see the class docstring).
        self.noise = noise
        self._theta = theta
        self._sym_type = sym_type
        self._A, self._G, self._C, self._D, self._R, self._m0, self._P0 = A, G, C, D, R, m0, P0
        self._Qc = Qc
        outputs: list[Any] = [A, G, C, D, R, m0, P0] + ([Qc] if continuous else [])
        try:
            self._continuous = ca.Function(
                f"{self.name}_continuous", [theta], outputs,
                ["theta"], ["A", "G", "C", "D", "R", "m0", "P0"] + (["Qc"] if continuous else []))
        except RuntimeError as exc:
            raise ModelError("LinearGaussianModel: the matrices may depend on theta only "
                             f"(free symbols found): {exc}") from exc
        if continuous:  # Van Loan (1978): exp of [[-A, G Qc Gᵀ], [0, Aᵀ]] dt
            Ac: Any = A
            GQG: Any = G @ Qc @ G.T
            # The upper-right block of the exponential is linear in G Qc Gᵀ: it enters divided by
            # 1 + Σ|G Qc Gᵀ| (so that a large noise intensity neither adds squarings nor costs
            # accuracy in the other blocks) and the block is multiplied back in _discrete.
            th_any: Any = theta
            self._noise_scale = ca.Function(f"{self.name}_noise_scale", [th_any],
                                            [1.0 + ca.sum1(ca.sum2(ca.fabs(GQG)))])
            H = 0.5 * (GQG + GQG.T) / self._noise_scale(th_any)
            zero: Any = sym_type(n, n)
            M = ca.blockcat([[-Ac, H], [zero, Ac.T]]) * dt
            self._van_loan_args = ca.Function(f"{self.name}_van_loan_args", [th_any], [Ac * dt, H * dt])
        else:
            M = ca.blockcat([[A, G], [sym_type(q, n), sym_type(q, q)]]) * dt
        self._block = ca.Function(f"{self.name}_block", [theta], [M])
        self._undiscretised = ca.Function(f"{self.name}_undiscretised", [theta],
                                           [C, D, R, m0, P0])
        constant = ca.Function(f"{self.name}_constant", [theta], [C, D])
        C_value, D_value = (None if ca.depends_on(M, theta) else np.array(v)
                            for M, v in zip((C, D), constant(np.zeros(np_))))
        self._step = filter_step(n, q, p, C_value=C_value, D_value=D_value, covariance=continuous)
        self._gain = steady_gain(n, q, p, C_value=C_value, D_value=D_value, covariance=continuous)
        self._discrete_cache: dict[int, ca.Function] = {}
        self._nll_cache: dict[tuple[int, int], ca.Function] = {}
        self._deriv_cache: dict[tuple[str, int, int, int] | str, ca.Function] = {}
        #: Seconds spent compiling the filter's C code so far, and what each load of it was:
        #: "built" (the compiler ran), "cache" (a library from the disk cache) or "failed"
        #: (no compiler, or it failed: the filter runs uncompiled).
        self.compile_s = 0.0
        self.compile_log: list[str] = []

    @staticmethod
    def _initial(value, theta, sym_type, shape, what):
        if value is None:
            return sym_type(*shape)
        if callable(value):
            try:
                value = value(theta)
            except Exception as exc:
                raise ModelError(f"LinearGaussianModel: {what}(theta) failed: "
                                 f"{type(exc).__name__}: {exc}") from exc
            expr = _as_symbolic(value, sym_type, what)
        else:
            try:
                arr = np.asarray(value, dtype=float)
            except (TypeError, ValueError) as exc:
                raise ModelError(f"LinearGaussianModel: {what} must be numeric or callable, got "
                                 f"{value!r}") from exc
            if shape[1] == 1:
                arr = arr.reshape(-1, 1) if arr.ndim <= 1 else arr
            if not np.all(np.isfinite(arr)):
                raise ModelError(f"LinearGaussianModel: {what} must be finite")
            if arr.shape != shape:
                raise ModelError(f"LinearGaussianModel: {what} must have shape {shape}, got {arr.shape}")
            if shape[1] != 1:
                if not np.allclose(arr, arr.T, rtol=1e-12, atol=0.0):
                    raise ModelError(f"LinearGaussianModel: {what} must be symmetric")
                eig = np.linalg.eigvalsh(arr)
                if eig.min() < -1e-12 * max(1.0, float(np.abs(eig).max())):
                    raise ModelError(f"LinearGaussianModel: {what} must be positive semidefinite "
                                     f"(smallest eigenvalue {eig.min():.3g})")
            expr = sym_type(ca.DM(arr))
        if expr.shape == (shape[1], shape[0]) and shape[1] == 1:
            expr = expr.T
        if expr.shape != shape:
            raise ModelError(f"LinearGaussianModel: {what} must have shape {shape}, got {expr.shape}")
        return expr

    # -- parameters ------------------------------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        """A digest of what defines the model: its matrices as functions of ``θ`` (serialised),
        the parameter names, the sample step and the form of the noise.  Two models with the
        same fingerprint have the same likelihood of every record at every ``θ``."""
        if getattr(self, "_fingerprint", None) is None:
            text = "\n".join([self._continuous.serialize(), repr(float(self.dt)), self.noise,
                              ",".join(self.parameter_names)])
            self._fingerprint = hashlib.sha256(text.encode()).hexdigest()
        return self._fingerprint

    @property
    def num_parameters(self) -> int:
        """Length of the parameter vector ``θ``."""
        return len(self.parameter_names)

    def parameter_vector(self, theta: ParameterValues) -> np.ndarray:
        """Validate ``theta`` and return it as a float vector in ``parameter_names`` order.

        Parameters
        ----------
        theta : array-like or mapping
            Values in ``parameter_names`` order, or a mapping name → value naming every
            parameter.

        Returns
        -------
        numpy.ndarray
            Shape ``(num_parameters,)``.
        """
        names = self.parameter_names
        values: ArrayLike
        if isinstance(theta, Mapping):
            unknown = sorted(set(theta) - set(names))
            missing = [nm for nm in names if nm not in theta]
            if unknown or missing:
                raise CollocInputError(f"{self.name}: theta mapping has unknown names {unknown} "
                                       f"and lacks {missing}")
            values = [theta[nm] for nm in names]
        else:
            values = theta
        try:
            vec = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as exc:
            raise CollocInputError(f"{self.name}: theta must be numeric, got {theta!r}") from exc
        if vec.ndim == 2 and 1 in vec.shape:
            vec = vec.ravel()
        if vec.ndim != 1 or vec.size != len(names):
            raise CollocInputError(f"{self.name}: theta must have {len(names)} entries ({', '.join(names)}), "
                                   f"got shape {vec.shape}")
        if not np.all(np.isfinite(vec)):
            bad = [nm for nm, v in zip(names, vec) if not math.isfinite(v)]
            raise CollocInputError(f"{self.name}: theta is not finite for {bad}")
        return vec

    def data_matrix(self, y: ArrayLike, missing: bool = False) -> np.ndarray:
        """Validate a record and return it as an ``(num_outputs, N)`` matrix (columns are samples).

        Parameters
        ----------
        y : array-like
            Shape ``(N, num_outputs)``; for one output also ``(N,)``.  Finite values only,
            unless ``missing``.
        missing : bool, optional
            Accept NaN as "not measured" (a gap, or an output recorded at a lower rate);
            infinities are still refused, and so is a record with no measured value.

        Returns
        -------
        numpy.ndarray
            The transposed record, shape ``(num_outputs, N)``, NaN where not measured.
        """
        try:
            arr = np.asarray(y, dtype=float)
        except (TypeError, ValueError) as exc:
            raise DataError(f"{self.name}: y must be numeric") from exc
        p = self.num_outputs
        if arr.ndim == 1 and p == 1:
            arr = arr.reshape(-1, 1)
        if arr.ndim != 2 or arr.shape[1] != p:
            expected = "(N,) or (N, 1)" if p == 1 else f"(N, {p})"
            raise DataError(f"{self.name}: y must have shape {expected} (rows are samples), got {arr.shape}")
        if arr.shape[0] < 1:
            raise DataError(f"{self.name}: y has no samples")
        bad = np.isinf(arr) if missing else ~np.isfinite(arr)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            what = "infinite values" if missing else "non-finite values (NaN or inf)"
            hint = "" if missing or np.isinf(arr).any() else " (missing=True takes NaN as not measured)"
            raise DataError(f"{self.name}: y has {int(bad.sum())} {what}; the first is at sample {row}, "
                            f"output {col}{hint}")
        if missing and np.isnan(arr).all():
            raise DataError(f"{self.name}: y has no measured value (every sample is NaN)")
        return np.ascontiguousarray(arr.T)

    @staticmethod
    def observed(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(Y with 0 where NaN, observation mask)`` of a :meth:`data_matrix`: the inputs ``Y, W``
        of :meth:`nll_function`."""
        W = np.isfinite(Y).astype(float)
        return np.where(W > 0, Y, 0.0), W

    # -- numeric matrices ------------------------------------------------------------------------

    def squarings(self, theta: ParameterValues) -> int:
        """Squarings the matrix exponential needs at ``theta`` (:func:`expm_squarings_for`).

        Parameters
        ----------
        theta : array-like or mapping
            Parameter values.

        Returns
        -------
        int
        """
        M = np.array(self._block(self.parameter_vector(theta)))
        if not np.all(np.isfinite(M)):
            raise CollocInputError(f"{self.name}: the model matrices are not finite at theta")
        return expm_squarings_for(M)

    def _discrete(self, s: int) -> ca.Function:
        """``theta -> (Φ, N, C, D, R, m0, P0)`` at ``s`` squarings, where the noise term ``N`` is
        ``Γ`` (n×q) for held noise and ``Q_d`` (n×n, symmetric) for continuous noise: the
        filter step's input in that place (:func:`~colloc.inference.kalman.filter.filter_step`).

        An MX function: the exponential's products and its solve are matrix operations on the
        model's (SX) matrices, not their expansion into scalars.  On the 15-state PID-delay sway
        model at 12 squarings that builds its reverse (:meth:`_discrete_reverse`) in 0.03 s instead
        of 0.6 s and evaluates it in 1.1 ms instead of 7.6 ms (the discretisation itself 0.6 ms
        instead of 2.6 ms).  At those squarings its Φ is 2–5 times further from
        ``scipy.linalg.expm`` than the scalars' (2.8e-9 against 5.6e-10 of the largest entry at
        BDS00010's estimate); at the squarings :meth:`squarings` chooses (0 there) it is 9e-13
        (``benchmarks/kalman_discretisation.py``)."""
        if s not in self._discrete_cache:
            n = self.num_states
            theta = ca.MX.sym("theta", self.num_parameters)
            if self.noise == "continuous":
                a_dt, h_dt = self._van_loan_args(theta)
                Phi, Qd = van_loan(a_dt, h_dt, s)
                noise, noise_name = self._noise_scale(theta) * Qd, "Q"
            else:
                E = expm(self._block(theta), s)
                Phi, noise, noise_name = E[:n, :n], E[:n, n:], "Gamma"
            self._discrete_cache[s] = ca.Function(
                f"{self.name}_discrete_s{s}", [theta], [Phi, noise, *self._undiscretised(theta)],
                ["theta"], ["Phi", noise_name, "C", "D", "R", "m0", "P0"])
        return self._discrete_cache[s]

    def continuous(self, theta: ParameterValues) -> dict[str, np.ndarray]:
        """The continuous-time matrices at ``theta``.

        Parameters
        ----------
        theta : array-like or mapping
            Parameter values.

        Returns
        -------
        dict
            Keys ``A, G, C, D, R, m0, P0`` (``m0`` is a vector), and ``Qc`` for continuous noise.
        """
        out = self._continuous(self.parameter_vector(theta))
        res = {k: np.array(v) for k, v in zip(["A", "G", "C", "D", "R", "m0", "P0", "Qc"], out)}
        res["m0"] = res["m0"].ravel()
        return res

    def discretize(self, theta: ParameterValues) -> dict[str, np.ndarray]:
        """The exact discretisation at ``theta`` (zero-order hold, or Van Loan's for continuous noise).

        Parameters
        ----------
        theta : array-like or mapping
            Parameter values.

        Returns
        -------
        dict
            ``Phi, Q, C, D, R, S, m0, P0``: ``s_{k+1} = Φ s_k + w_k`` with ``Cov w_k = Q`` and
            ``Cov(w_k, D x_k) = S`` (the process/measurement noise cross-covariance).  Held
            noise also gives ``Gamma`` (``w_k = Γ x_k``, so ``Q = Γ Γᵀ`` and ``S = Γ Dᵀ``);
            continuous noise has ``D = 0`` and ``S = 0``.
        """
        vec = self.parameter_vector(theta)
        out = self._discrete(self.squarings(vec))(vec)
        noise_name = "Q" if self.noise == "continuous" else "Gamma"
        res = {k: np.array(v) for k, v in zip(["Phi", noise_name, "C", "D", "R", "m0", "P0"], out)}
        res["m0"] = res["m0"].ravel()
        if self.noise == "continuous":
            res["S"] = np.zeros((self.num_states, self.num_outputs))
        else:
            res["Q"] = res["Gamma"] @ res["Gamma"].T
            res["S"] = res["Gamma"] @ res["D"].T
        return res

    # -- likelihood functions --------------------------------------------------------------------

    def nll_function(self, num_samples: int, squarings: int) -> ca.Function:
        """The CasADi function ``(theta, Y, W) -> NLL`` for records of ``num_samples`` samples.

        Parameters
        ----------
        num_samples : int
            Record length N; ``Y`` is ``num_outputs × N`` (columns are samples) and ``W`` its
            observation mask of the same shape (1 measured, 0 not; see :meth:`observed`).
        squarings : int
            Squarings of the matrix exponential (see :meth:`squarings`).

        Returns
        -------
        casadi.Function
            MX function built from the SX filter step mapped with ``mapaccum``; differentiable.
        """
        key = (int(num_samples), int(squarings))
        if key not in self._nll_cache:
            N, s = key
            theta = ca.MX.sym("theta", self.num_parameters)
            Y = ca.MX.sym("Y", self.num_outputs, N)
            W = ca.MX.sym("W", self.num_outputs, N)
            Phi, Gam, C, D, R, m0, P0 = self._discrete(s)(theta)
            scan = self._step.mapaccum(f"{self.name}_filter_{N}", N, 2, {})
            _, _, terms = scan(m0, P0, Y, W, Phi, Gam, C, D, R)
            nll = ca.sum2(terms)
            self._nll_cache[key] = ca.Function(f"{self.name}_nll_{N}_s{s}", [theta, Y, W], [nll],
                                               ["theta", "Y", "W"], ["nll"])
        return self._nll_cache[key]

    def _backward_step(self) -> ca.Function:
        """One step of the filter's reverse (adjoint) sweep, as an SX function.

        Inputs: the adjoints of the step's outputs ``m⁺, P⁺`` (its NLL term has adjoint 1), the
        running sums of the adjoints of ``Φ, Γ, C, D, R``, then the step's own inputs
        ``(m, P, y, w, Φ, Γ, C, D, R)``.  Outputs: the adjoints of ``m, P`` and the sums with
        this step's adjoints of ``Φ, Γ, C, D, R`` added: reverse-mode AD of
        :func:`~colloc.inference.kalman.filter.filter_step`, exact.
        """
        if "backward" not in self._deriv_cache:
            step = self._step
            inputs = [ca.SX.sym(step.name_in(i), step.sparsity_in(i)) for i in range(step.n_in())]
            outputs = step(*inputs)
            seeds = [ca.SX.sym("adj_" + step.name_out(i), step.sparsity_out(i)) for i in range(2)]
            sums = [ca.SX.sym("sum_" + step.name_in(i), step.sparsity_in(i)) for i in range(4, 9)]
            adj = step.reverse(1)(*inputs, *outputs, *seeds, ca.SX(1.0))
            self._deriv_cache["backward"] = ca.Function(
                "kalman_step_adjoint", [*seeds, *sums, *inputs],
                [adj[0], adj[1], *[a + b for a, b in zip(sums, adj[4:9])]])
        return self._deriv_cache["backward"]

    def _steady_blocks(self, B: int) -> tuple[ca.Function, ca.Function]:
        """The held-covariance filter over ``B`` samples at a time, forward and reverse, as SX functions
        (unrolled: one call a block instead of one a sample, and the held matrices passed once a block).

        Forward ``(m, Y, F, K, C) -> (m⁺, M, E)``: from the predicted mean ``m`` of the block's first
        sample, ``ε_j = y_j − C m_j`` and ``m_{j+1} = F m_j + K y_j`` (``F = Φ − K C``, so that
        ``m_{j+1} = Φ m_j + K ε_j``) over the block's samples ``Y`` (ny×B); ``M`` (n×B) are the
        means ``m_j`` and ``E`` (ny×B) the innovations.  Reverse ``(λ, M, E, F, K, C, S⁻¹) -> (λ₀, A_Φ,
        A_K, A_C)``: from ``λ`` = dNLL/dm after the block, ``λ_j = Fᵀ λ_{j+1} − Cᵀ S⁻¹ ε_j`` down to
        the block's first sample, and the block's sums ``A_Φ = Σ λ_{j+1} m_jᵀ``, ``A_K = Σ λ_{j+1}
        ε_jᵀ`` and ``A_C = Σ (S⁻¹ ε_j + Kᵀ λ_{j+1}) m_jᵀ``: the adjoints of ``Φ``, ``K`` and (negated)
        ``C`` through the mean's recursion, O(n²) a sample."""
        key, key_adjoint = ("steady-block", int(B), 0, 0), ("steady-block-adjoint", int(B), 0, 0)
        if key not in self._deriv_cache:
            n, ny = self.num_states, self.num_outputs
            m0, Y = ca.SX.sym("m", n), ca.SX.sym("Y", ny, B)
            F, K, C = ca.SX.sym("F", n, n), ca.SX.sym("K", n, ny), ca.SX.sym("C", ny, n)
            m, means, errors = m0, [], []
            for j in range(B):
                means.append(m)
                errors.append(Y[:, j] - C @ m)
                m = F @ m + K @ Y[:, j]
            forward = ca.Function(f"kalman_steady_block{B}", [m0, Y, F, K, C],
                                  [m, ca.horzcat(*means), ca.horzcat(*errors)], ["m", "Y", "F", "K", "C"],
                                  ["m_next", "M", "E"])
            lam0, M, E = ca.SX.sym("lam", n), ca.SX.sym("M", n, B), ca.SX.sym("E", ny, B)
            S_inv = ca.SX.sym("S_inv", ny, ny)
            lam, a_phi, a_k, a_c = lam0, ca.SX.zeros(n, n), ca.SX.zeros(n, ny), ca.SX.zeros(ny, n)
            for j in reversed(range(B)):
                se = S_inv @ E[:, j]
                a_phi = a_phi + lam @ M[:, j].T
                a_k = a_k + lam @ E[:, j].T
                a_c = a_c + (se + K.T @ lam) @ M[:, j].T
                lam = F.T @ lam - C.T @ se
            backward = ca.Function(f"kalman_steady_block{B}_adjoint", [lam0, M, E, F, K, C, S_inv],
                                   [lam, a_phi, a_k, a_c], ["lam", "M", "E", "F", "K", "C", "S_inv"],
                                   ["lam_first", "A_Phi", "A_K", "A_C"])
            self._deriv_cache[key], self._deriv_cache[key_adjoint] = forward, backward
        return self._deriv_cache[key], self._deriv_cache[key_adjoint]

    def _filter_adjoint_function(self, N: int, transient: int | None = None) -> ca.Function:
        """``(Φ, N, C, D, R, m0, P0, Y, W) -> (nll, adjoints of Φ, N, C, D, R, m0, P0)`` over a record
        of ``N`` samples (``N`` the noise input of :meth:`_discrete`): a forward filter pass that
        keeps every step's mean and covariance and one reverse sweep of :meth:`_backward_step`
        over them.  It does not depend on the parameters or on the discretisation, so one
        compiled copy serves every sample rate and squaring count.

        The same reverse-mode AD as ``ca.gradient`` of :meth:`nll_function`, but flat: CasADi
        differentiates its nested ``mapaccum`` by recomputing each block's forward steps
        (memory ∝ the nesting base), which here costs more than keeping the ``N`` steps'
        ``(m, P)`` (``N·n·(n+1)`` numbers: 3.5 MB for 6000 samples and 8 states).

        ``transient`` (``0 < transient < N - 1``): the covariance is updated over the first
        ``transient`` samples only and held at its value there for the rest (its gain computed once,
        :func:`~colloc.inference.kalman.filter.steady_gain`, and the mean's recursion and adjoint
        :meth:`_steady_blocks`, :data:`STEADY_BLOCK` samples a call: O(n²) a sample instead of O(n³)).
        Once the Riccati recursion has settled this is the exact likelihood up to the covariance's
        remaining change; the gradient is exact for it (the held covariance's adjoint flows back into
        the transient's sweep).
        """
        n = self.num_states
        step = self._step
        mats = [ca.MX.sym(step.name_in(i), step.sparsity_in(i)) for i in range(4, 9)]
        Phi, Gam, C, D, R = mats
        m0 = ca.MX.sym("m0", n, 1)
        P0 = ca.MX.sym("P0", n, n)
        Y = ca.MX.sym("Y", self.num_outputs, N)
        W = ca.MX.sym("W", self.num_outputs, N)
        Yall, Wall = Y, W
        T = N if transient is None else int(transient)
        if not 0 < T <= N or T == N - 1:
            raise ValueError(f"_filter_adjoint_function: transient {transient} outside 1..{N - 2} (or N)")
        zeros = [ca.MX.zeros(v.sparsity()) for v in (m0, P0, Phi, Gam, C, D, R)]
        seeds, terms_steady = list(zeros), ca.MX(0.0)
        if T < N:  # the steady part: the mean through the held covariance P_T, then its reverse sweep
            S = N - T
            Yt, Wt = Y[:, :T], W[:, :T]
            scan = step.mapaccum(f"{self.name}_filter_{N}_t{T}", T, 2, {})
            M, P, terms = scan(m0, P0, Yt, Wt, Phi, Gam, C, D, R)
            mT, PT = M[:, T - 1], P[:, n * (T - 1):]
            # the gain, S⁻¹ and log det S at the held P_T, once; then the mean's LTI recursion and its
            # adjoint λ_k = dNLL/dm_k = Fᵀ λ_{k+1} − Cᵀ S⁻¹ ε_k (F = Φ − K C, λ_N = 0); the adjoints of
            # Φ, K, C, S⁻¹ are sums of outer products over the samples, and go back through the gain to
            # P_T and the matrices by the gain function's reverse
            K, S_inv, logdet, Cu = self._gain(PT, Phi, Gam, C, D, R)
            F = Phi - K @ Cu
            B = min(STEADY_BLOCK, S)
            full, rest = divmod(S, B)
            forward, backward = self._steady_blocks(B)
            Ys, ny = Y[:, T:], self.num_outputs
            blocks = forward.mapaccum(f"{self.name}_steady_{N}_t{T}", full, 1, {})
            m_end, Ms, Es = blocks(mT, Ys[:, :full * B], F, K, Cu)
            m_end = m_end[:, full - 1]
            if rest:
                tail, tail_adjoint = self._steady_blocks(rest)
                _, M_rest, E_rest = tail(m_end, Ys[:, full * B:], F, K, Cu)
                lam, a_phi, a_k, a_c = tail_adjoint(ca.MX.zeros(n, 1), M_rest, E_rest, F, K, Cu, S_inv)
                E = ca.horzcat(Es, E_rest)
            else:
                lam, a_phi, a_k, a_c, E = ca.MX.zeros(n, 1), ca.MX(n, n), ca.MX(n, ny), ca.MX(ny, n), Es
            # the blocks' reverse sweep, last block first (each block reverses its own samples)
            order = list(range(full - 1, -1, -1))
            lams, A_phi, A_k, A_c = backward.mapaccum(f"{self.name}_steady_adjoint_{N}_t{T}", full, 1, {})(
                lam, ca.horzcat(*[Ms[:, b * B:(b + 1) * B] for b in order]),
                ca.horzcat(*[Es[:, b * B:(b + 1) * B] for b in order]), F, K, Cu, S_inv)

            def block_sum(A, rows, cols):  # the sum of `full` blocks rows×cols side by side
                return ca.reshape(ca.sum2(ca.reshape(A, rows * cols, full)), rows, cols)

            a_phi = a_phi + block_sum(A_phi, n, n)
            a_k = a_k + block_sum(A_k, n, ny)
            a_c = a_c + block_sum(A_c, ny, n)
            EE = E @ E.T
            terms_steady = 0.5 * (S * (logdet + ny * math.log(2 * math.pi)) + ca.dot(S_inv, EE))
            # the adjoints of the gain's outputs K, S⁻¹, log det S and C, back through the gain to P_T and
            # the matrices by the gain function's reverse
            a_gain = self._gain.reverse(1)(PT, Phi, Gam, C, D, R, K, S_inv, logdet, Cu, a_k, 0.5 * EE, 0.5 * S, -a_c)
            seeds = [lams[:, full - 1], a_gain[0], a_phi + a_gain[1], *a_gain[2:]]
            Y, W = Yt, Wt
        else:
            scan = step.mapaccum(f"{self.name}_filter_{N}", N, 2, {})
            M, P, terms = scan(m0, P0, Y, W, Phi, Gam, C, D, R)
        Mprev = ca.horzcat(m0, M[:, :T - 1])
        Pprev = ca.horzcat(P0, P[:, :n * (T - 1)])
        back = list(range(T - 1, -1, -1))
        back_blocks = [k * n + j for k in back for j in range(n)]
        sweep = self._backward_step().mapaccum(f"{self.name}_adjoint_{N}" + (f"_t{T}" if T < N else ""), T, 7, {})
        adj = sweep(*seeds, Mprev[:, back], Pprev[:, back_blocks], Y[:, back], W[:, back], Phi, Gam, C, D, R)
        # the last column of each accumulated output is the sum over all steps
        last = [a[:, a.shape[1] - z.shape[1]:] for a, z in zip(adj, zeros)]
        am0, aP0, aPhi, aGam, aC, aD, aR = last
        return ca.Function(f"{self.name}_filter_adjoint_{N}" + (f"_t{T}" if T < N else ""),
                           [Phi, Gam, C, D, R, m0, P0, Yall, Wall],
                           [ca.sum2(terms) + terms_steady, aPhi, aGam, aC, aD, aR, am0, aP0])

    def _gradient_function(self, N: int, s: int, filter_adjoint: ca.Function | None = None,
                           transient: int | None = None) -> ca.Function:
        """``(theta, Y, W) -> (nll, gradient)``: the discretisation at ``s`` squarings, the filter and
        its adjoint (:meth:`_filter_adjoint_function` with ``transient``, or the compiled
        ``filter_adjoint``), and the adjoints taken back to ``theta`` through the discretisation
        (reverse-mode AD of its MX graph of matrix operations)."""
        theta = ca.MX.sym("theta", self.num_parameters)
        Y = ca.MX.sym("Y", self.num_outputs, N)
        W = ca.MX.sym("W", self.num_outputs, N)
        disc = self._discrete(s)(theta)  # Φ, Γ or Q, C, D, R, m0, P0
        fa = self._filter_adjoint_function(N, transient) if filter_adjoint is None else filter_adjoint
        nll, *adj = fa(*disc, Y, W)
        gradient = self._discrete_reverse(s)(theta, ca.vertcat(*[ca.vec(v) for v in adj]))
        return ca.Function(f"{self.name}_gradient_{N}", [theta, Y, W], [nll, gradient],
                           ["theta", "Y", "W"], ["nll", "gradient"])

    def _discrete_reverse(self, s: int) -> ca.Function:
        """``(theta, seeds) -> seedsᵀ ∂(Φ, N, C, D, R, m0, P0)/∂θ`` at ``s`` squarings (the seeds the
        matrices' adjoints, each vectorised, in that order): reverse-mode AD of :meth:`_discrete`, built
        once per squaring count and shared by the gradients of every record length and transient."""
        key = ("discrete-reverse", int(s), 0, 0)
        if key not in self._deriv_cache:
            theta = ca.MX.sym("theta", self.num_parameters)
            outs = ca.vertcat(*[ca.vec(v) for v in self._discrete(s)(theta)])
            seeds = ca.MX.sym("seeds", outs.shape[0])
            self._deriv_cache[key] = ca.Function(f"{self.name}_discrete_reverse_s{s}", [theta, seeds],
                                                 [ca.jtimes(outs, theta, seeds, True)])
        return self._deriv_cache[key]

    def _compiled_gradient(self, N: int, s: int, transient: int | None = None) -> ca.Function:
        """:meth:`_gradient_function` with its filter and adjoint sweep compiled to C
        (:func:`colloc.base.compiler.shared_library`), or uncompiled, with a
        :class:`~colloc.base.compiler.CompilerWarning`, where that fails.

        Only the part that runs over the record is compiled; the discretisation and its reverse
        (one evaluation a gradient) run in CasADi's virtual machine, so that the compiled code
        does not grow with the matrix exponential and serves every sample step and squaring
        count.  The library is found again by a key of what defines it (the SX filter step, its
        name with ``N``, the CasADi version and :data:`_GRADIENT_CODE`), so that a later process
        loads it without building the function or generating its C code."""
        T = None if transient is None or int(transient) >= N else int(transient)
        key = ("compiled", int(N), int(s), T or 0)
        if key in self._deriv_cache:
            return self._deriv_cache[key]
        fkey = ("compiled-filter", int(N), 0, T or 0)
        if fkey not in self._deriv_cache:
            from ...base.compiler import cache_dir, shared_library
            from ...base.files import write_atomic

            name = f"{self.name}_filter_adjoint_{N}" + (f"_t{T}" if T else "")
            version: str = ca.__version__  # type: ignore[attr-defined]
            key_text = f"{_GRADIENT_CODE}\n{version}\n{self._step.serialize()}\n{name}"
            digest = hashlib.sha256(key_text.encode()).hexdigest()[:32]
            index = cache_dir() / f"colloc_kalman_{digest}.path"
            function = None
            try:
                library = index.read_text().strip()
                if library and Path(library).exists():
                    function = ca.external(name, library)
                    self.compile_log.append("cache")
            except (OSError, RuntimeError):
                function = None
            if function is None:
                from ...base.compiler import compiler_runs

                function = self._filter_adjoint_function(N, T)
                gen = ca.CodeGenerator(f"kalman_{name}", {"with_header": False})
                gen.add(function)
                t_compile, runs = time.perf_counter(), compiler_runs()
                built = shared_library(f"kalman_{name}", gen.dump())
                self.compile_s += time.perf_counter() - t_compile
                self.compile_log.append("failed" if built is None else "built" if compiler_runs() > runs else "cache")
                if built is not None:
                    function = ca.external(name, str(built))
                    try:
                        write_atomic(index, str(built) + "\n")
                    except OSError:
                        pass
            self._deriv_cache[fkey] = function
        self._deriv_cache[key] = self._gradient_function(N, s, self._deriv_cache[fkey])
        return self._deriv_cache[key]

    def _derivative(self, kind: str, num_samples: int, squarings: int, transient: int | None = None) -> ca.Function:
        """``(theta, Y, W) -> (nll, gradient)`` (``kind="gradient"``, :meth:`_gradient_function`, with
        ``transient``) or ``-> (nll, gradient, hessian)`` (``"hessian"``: AD of :meth:`nll_function`)."""
        T = None if transient is None or int(transient) >= num_samples or kind != "gradient" else int(transient)
        key = (kind, int(num_samples), int(squarings), T or 0)
        if key not in self._deriv_cache:
            N, s = key[1:3]
            if kind == "gradient":
                self._deriv_cache[key] = self._gradient_function(N, s, transient=T)
            else:
                theta = ca.MX.sym("theta", self.num_parameters)
                Y = ca.MX.sym("Y", self.num_outputs, N)
                W = ca.MX.sym("W", self.num_outputs, N)
                nll = self.nll_function(N, s)(theta, Y, W)
                H, g = ca.hessian(nll, theta)
                self._deriv_cache[key] = ca.Function(f"{self.name}_{kind}_{N}", [theta, Y, W], [nll, g, H],
                                                     ["theta", "Y", "W"], ["nll", "gradient", "hessian"])
        return self._deriv_cache[key]

    def __repr__(self) -> str:
        return (f"LinearGaussianModel({self.name!r}, parameters={list(self.parameter_names)}, "
                f"states={self.num_states}, inputs={self.num_inputs}, outputs={self.num_outputs}, "
                f"dt={self.dt}, noise={self.noise!r})")
