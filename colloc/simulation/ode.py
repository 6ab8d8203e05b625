"""Forward simulation of a model: fixed-step RK4 whose error is checked by step doubling,
else an adaptive integrator (CVODES through CasADi).

Used to check every identified model against the data (an optimum of the collocation NLP
is only as good as the trajectory the model really produces) and by the data generators.
Inputs (known and free) are linear between the given times, exactly as the collocation
grid treats them, or held at the interval's start value where declared (free inputs with
``hold=True``, known inputs in ``held_known_inputs``): one integration per interval either way.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

import casadi as ca
import numpy as np
from numpy.typing import ArrayLike

from ..base.buffers import values
from ..base.compiler import compiled
from ..base.errors import ModelError
from ..definition.explicit import explicit_rhs
from ..definition.model import Model
from .integrators import Cvodes, RungeKutta
from .rk4 import compiled_rk4

__all__ = ["Simulation", "simulate", "solved_rhs"]


@dataclass
class Simulation:
    """Outcome of :func:`simulate`.

    Attributes
    ----------
    success : bool
    status : str
        ``"ok"``, ``"diverged"`` (state left the finite range), ``"integrator_failed"`` or
        ``"not_available"`` (the model is implicit in ẋ in a way that cannot be solved
        for ẋ, e.g. a DAE with singular ∂f/∂ẋ).
    message : str
    time : ndarray, shape (num_times,)
    states : ndarray, shape (num_times, num_states)
        NaN after a failure.
    signals : dict of str to ndarray
        Every model signal (states, free inputs, outputs) at ``time``.
    """

    success: bool
    status: str
    message: str
    time: np.ndarray
    states: np.ndarray
    signals: dict[str, np.ndarray] = field(default_factory=dict)


def simulate(
    model: Model,
    x0: ArrayLike,
    parameters: ArrayLike | Mapping[str, float],
    time: ArrayLike,
    *,
    known_inputs: ArrayLike | None = None,
    free_inputs: ArrayLike | None = None,
    rtol: float = 1e-9,
    atol: float = 1e-9,
    divergence_bound: float = 1e6,
    held_known_inputs: ArrayLike | None = None,
) -> Simulation:
    """Integrate the model from ``x0`` over ``time``: fixed-step RK4 checked by step doubling,
    else CVODES (adaptive step, order).

    RK4 with 1, 2, 4, 8 steps per output interval is tried first (one compiled call over the
    whole trajectory per step count); its result is kept when the step-doubling estimate of
    its global error is within ``rtol·|x| + atol`` at every output time (see
    :func:`_checked_rk4`), else CVODES integrates interval by interval.

    A model with delayed states (:meth:`Model.delayed`) is a delay differential equation:
    it is integrated by the method of steps instead, with classical RK4 on a fixed step of
    at most 2.5 ms and a quarter of the smallest non-zero delay (a whole fraction of the
    output step), the past being
    interpolated by cubic Hermite polynomials and the history before ``time[0]`` equal to
    ``x0``; ``rtol`` and ``atol`` then do not apply.

    Parameters
    ----------
    model : Model
    x0 : array, shape (num_states,)
        Initial state (physical units), elements in model order.
    parameters : array, shape (num_params,) or dict name → value
    time : array, shape (num_times,)
        Output times, non-decreasing; inputs are linear between consecutive times.  A time
        written twice in a row is a jump of the inputs: the first row holds the values just
        before it, the second those just after, and the integration restarts there from
        the state reached (both rows get that state).  Delay models do not take jumps.
    known_inputs, free_inputs : array, shape (num_times, s) / (num_times, q), optional
        Input values at ``time`` (zero-width when the model has none).
    held_known_inputs : array of bool, shape (s,), optional
        The known inputs held constant over each interval at the value of its start time
        (zero-order hold, a sampled input); the others are linear between the times.  Each
        interval is still one integration (no restart at every step of the input).
    rtol, atol : float
        CVODES tolerances.
    divergence_bound : float
        A state whose magnitude exceeds this is reported as ``"diverged"``.

    Returns
    -------
    Simulation
        Never raises for a failing integration: the status says what happened.
    """
    time = np.asarray(time, dtype=float).ravel()
    N = time.size
    n = len(model.element_names("state"))
    q = len(model.element_names("free_input"))
    s = len(model.element_names("known_input"))
    pnames = model.element_names("parameter")
    if isinstance(parameters, dict):
        missing = [k for k in pnames if k not in parameters]
        if missing:
            raise ModelError(f"simulate: parameters missing: {', '.join(missing)}")
        pvec = np.array([parameters[k] for k in pnames], dtype=float)
    else:
        pvec = np.asarray(parameters, dtype=float).ravel()
    if pvec.size != len(pnames):
        raise ModelError(f"simulate: expected {len(pnames)} parameters, got {pvec.size}")
    x0 = np.asarray(x0, dtype=float).ravel()
    if x0.size != n:
        raise ModelError(f"simulate: x0 has {x0.size} elements, the model has {n} states")
    U = np.zeros((N, s)) if known_inputs is None else np.asarray(known_inputs, dtype=float).reshape(N, s)
    R = np.zeros((N, q)) if free_inputs is None else np.asarray(free_inputs, dtype=float).reshape(N, q)
    hold = np.zeros(s, dtype=bool) if held_known_inputs is None else np.asarray(held_known_inputs, dtype=bool).ravel()
    if hold.size != s:
        raise ModelError(f"simulate: held_known_inputs has {hold.size} elements, the model has {s} known inputs")

    nan_states = np.full((N, n), np.nan)
    try:
        rhs = explicit_rhs(model)
        if model.compiled and not model.delays:
            rhs = solved_rhs(model)
    except ModelError as exc:
        return Simulation(False, "not_available", str(exc), time, nan_states)
    repeats = np.flatnonzero(np.diff(time) == 0.0) + 1  # jumps: the row after the step
    if repeats.size:
        if model.delays:
            return Simulation(False, "not_available", "the delay simulator does not take input jumps "
                              f"(a repeated time at t = {time[repeats[0]]:.6g} s)", time, nan_states)
        return _simulate_pieces(model, x0, pvec, time, U, R, repeats, rtol, atol, divergence_bound, hold)
    if model.delays:
        return _simulate_delayed(model, rhs, x0, pvec, time, U, R, divergence_bound, hold)

    # one interval in normalised time τ ∈ [0, 1]: inputs linear between the end values
    # (held inputs constant at the start value)
    cols = np.vstack([
        np.repeat(pvec[:, None], N - 1, axis=1),
        U[:-1].T, np.where(hold[:, None], U[:-1].T, U[1:].T),
        R[:-1].T, np.where(model.held_inputs()[:, None], R[:-1].T, R[1:].T),
        time[None, :-1], np.diff(time)[None, :],
    ])
    if N > 1 and not model.compiled:  # compiled models: CVODES with their compiled Jacobian
        fast = _checked_rk4(rhs, x0, cols, n, len(pnames), s, q, rtol, atol, divergence_bound)
        if fast is not None:
            states, substeps = fast
            return _finish(model, "ok", f"integrated to the final time (RK4, {substeps} steps per interval, "
                           "error estimated by step doubling within rtol/atol)", time, states, R, U, pvec)
    step = Cvodes(rtol=rtol, atol=atol).step(rhs, n, len(pnames), s, q)
    states = nan_states.copy()
    states[0] = x0
    # integrate in chunks so that a divergence is located and stops the run early
    chunk = 500
    runners: dict[int, ca.Function] = {}  # one mapaccum per chunk length, built once
    xk = x0
    status, message = "ok", "integrated to the final time"
    for start in range(0, N - 1, chunk):
        stop = min(start + chunk, N - 1)
        try:
            length = stop - start
            if length not in runners:
                runners[length] = step.mapaccum(length)
            traj = np.array(runners[length](xk, cols[:, start:stop]))
        except RuntimeError as exc:
            status, message = "integrator_failed", (
                f"CVODES failed between t = {time[start]:.6g} s and {time[stop]:.6g} s: "
                f"{str(exc).splitlines()[-1][:200]}"
            )
            break
        bad = ~np.isfinite(traj).all(axis=0) | (np.abs(traj) > divergence_bound).any(axis=0)
        if bad.any():
            k = int(np.argmax(bad))
            states[start + 1 : start + 1 + k] = traj[:, :k].T
            status = "diverged"
            message = f"state magnitude exceeded {divergence_bound:g} at t = {time[start + k + 1]:.6g} s"
            break
        states[start + 1 : stop + 1] = traj.T
        xk = traj[:, -1]
    return _finish(model, status, message, time, states, R, U, pvec)


#: Step-doubling ladder of the fixed-step path: RK4 with 1, 2, 4, 8 steps per interval.
_RK4_LADDER = (1, 2, 4, 8)
#: Beyond the ladder, the compiled loop may take up to this many RK4 steps an interval when the
#: ladder's h⁴ trend predicts that it meets the tolerance there ...
_RK4_MAX_STEPS = 512
#: ... and when the right-hand side's instructions times those steps stay below this: about the
#: cost of CVODES restarted on each interval (its start-up, at order 1 and a small step, is
#: most of an interval's time; ~0.5 ms an interval on the 2-state Duffing oscillator of
#: ``benchmarks/duffing_sysid.py``, where 384 compiled RK4 steps an interval took ~0.1 ms).
_RK4_EXTENSION_BUDGET = 20_000
#: ... on records of at least this many intervals unless the loop is compiled already (the first
#: compile of a model's loop takes ~0.3 s, what CVODES takes for ~600 intervals).
_RK4_EXTENSION_MIN_INTERVALS = 1000


def _checked_rk4(rhs: ca.Function, x0, cols, n, num_params, s, q, rtol, atol, bound):
    """States from fixed-step RK4 when its error, estimated by step doubling, is within tolerance.

    The whole trajectory is integrated with ``m`` and ``2m`` steps per output interval (one
    compiled C loop each, :func:`colloc.simulation.rk4.compiled_rk4`, when a compiler is found
    and the run is long enough, else one CasADi ``mapaccum`` each; the two agree to rounding); RK4's global error is
    ``O(h⁴)``, so ``|x₂ₘ − xₘ| / 15`` estimates the error of ``x₂ₘ`` at every output time.
    It is accepted where that is at most ``rtol·|x| + atol`` for every state and time, a
    stricter test than CVODES' local error control.  When the estimate at 8 steps is still too
    large but has shrunk like ``h⁴`` along the ladder, the step count that meets the tolerance
    is predicted from that trend (with a factor 2 of margin), rounded up to a power of two ``M``,
    and, if ``M ≤`` :data:`_RK4_MAX_STEPS`, the right-hand side is cheap enough
    (:data:`_RK4_EXTENSION_BUDGET`), the record long enough (:data:`_RK4_EXTENSION_MIN_INTERVALS`)
    and the loop runs compiled, ``M/2`` and ``M`` are compared
    the same way: lightly damped oscillations sampled a few times a period (a sampled record
    with its input held over each sample) need a hundred steps or more, which compiled RK4 does
    faster than CVODES restarted on every interval.  ``None`` (the caller integrates with
    CVODES) when the estimate stays too large, stops shrinking like ``h⁴`` (stiff or non-smooth
    dynamics), or the state leaves the finite range (CVODES then locates the divergence).
    """
    N = cols.shape[1] + 1
    prev, prev_est = None, np.inf
    fast = compiled_rk4(rhs, n, num_params, s, q, N - 1)
    with np.errstate(over="ignore", invalid="ignore"):
        for m in _RK4_LADDER:
            if fast is not None:
                steps = fast(x0, cols, m)
            else:
                steps = np.array(RungeKutta(m).step(rhs, n, num_params, s, q).mapaccum(N - 1)(x0, cols))
            X = np.vstack([x0, steps.T])
            if not np.all(np.isfinite(X)) or np.abs(X).max() > bound:
                return None
            if prev is not None:
                err = np.abs(X - prev) / 15.0
                est = float((err / (rtol * np.abs(X) + atol)).max())
                if est <= 1.0:
                    return X, m
                if est > prev_est / 8.0:  # not in RK4's asymptotic range
                    return None
                prev_est = est
            prev = X
        # the error shrinks like m⁻⁴: predict the steps that meet the tolerance (margin 2)
        m = _RK4_LADDER[-1]
        need = m * (2.0 * prev_est) ** 0.25
        steps_hi = 1 << int(np.ceil(np.log2(max(need, 2.0 * m))))
        if steps_hi > _RK4_MAX_STEPS or rhs.n_instructions() * steps_hi > _RK4_EXTENSION_BUDGET:
            return None
        if fast is None and N - 1 < _RK4_EXTENSION_MIN_INTERVALS:
            return None
        fast = fast or compiled_rk4(rhs, n, num_params, s, q, (N - 1) * steps_hi)  # worth compiling now
        if fast is None:
            return None
        lo, hi = (np.vstack([x0, fast(x0, cols, k).T]) for k in (steps_hi // 2, steps_hi))
        if not np.all(np.isfinite(hi)) or np.abs(hi).max() > bound:
            return None
        if float((np.abs(hi - lo) / 15.0 / (rtol * np.abs(hi) + atol)).max()) <= 1.0:
            return hi, steps_hi
    return None


def solved_rhs(model: Model) -> ca.Function:
    """``ẋ = g(x, r, u, p, t)`` of a model whose residual ``f`` is affine in ẋ, solved
    numerically from the model's residual compiled to C (the simulation path of
    ``Model(compiled=True)``).

    ``M = ∂f/∂ẋ`` and ``b = f(0, x, …)`` come from one compiled function and ``ẋ = −M⁻¹b``
    from a dense LU; the Jacobian (what CVODES's Newton iterations need) is, by the implicit
    function theorem, ``∂g/∂(x, r, u, p, t) = −M⁻¹ ∂f/∂(x, r, u, p, t)`` at ``ẋ = g``, from a
    second compiled function.  The symbolic alternative (:func:`~colloc.definition.explicit.
    explicit_rhs`, the elimination written out) has a Jacobian about 25× the residual's size
    for a 24-state chain, whose evaluation dominated the simulation.
    """
    res = model.functions()["residual"]
    names = [res.name_in(i) for i in range(res.n_in())]
    xdot = ca.SX.sym("xdot", res.size1_in(0))
    args = [ca.SX.sym(names[i], res.sparsity_in(i)) for i in range(1, res.n_in())]
    f = res(xdot, *args)
    base = f"{res.name()}_solved"
    parts = ca.Function(f"{base}_parts", args, [ca.densify(ca.jacobian(f, xdot)),
                                               ca.substitute(f, xdot, ca.DM.zeros(xdot.shape))])
    partials = ca.Function(f"{base}_partials", [xdot, *args], [ca.densify(ca.jacobian(f, ca.vertcat(*args)))])
    xs = [ca.MX.sym(names[i], res.sparsity_in(i)) for i in range(1, res.n_in())]
    M, b = parts(*xs)
    y = ca.MX.sym("xdot", xdot.shape)
    J = -ca.solve(M, partials(y, *xs), "qr")
    widths = np.cumsum([0] + [a.numel() for a in args]).tolist()
    blocks = [J[:, widths[i]:widths[i + 1]] for i in range(len(args))]
    jac = ca.Function(f"jac_{base}", [*xs, y], blocks, [*names[1:], "out_xdot"],
                      [f"jac_xdot_{nm}" for nm in names[1:]])
    rhs = ca.Function(base, xs, [ca.solve(M, -b, "qr")], names[1:], ["xdot"])
    return compiled(rhs, jacobian=jac)


def _simulate_pieces(model: Model, x0, pvec, time, U, R, repeats, rtol, atol, bound, hold) -> Simulation:
    """Integrate piece by piece between the repeated times (input jumps), chaining the state."""
    N, n = time.size, x0.size
    states = np.full((N, n), np.nan)
    bounds = [0, *repeats.tolist(), N]
    xk = x0
    status, message = "ok", f"integrated to the final time in {len(bounds) - 1} pieces (inputs jump between them)"
    for a, b in itertools.pairwise(bounds):
        if b - a == 1:  # a piece of one point: the state does not move
            states[a] = xk
            continue
        piece = simulate(model, xk, pvec, time[a:b], known_inputs=U[a:b], free_inputs=R[a:b],
                         rtol=rtol, atol=atol, divergence_bound=bound, held_known_inputs=hold)
        states[a:b] = piece.states
        if not piece.success:
            status, message = piece.status, piece.message
            break
        xk = piece.states[-1]
    return _finish(model, status, message, time, states, R, U, pvec)


def _finish(model: Model, status, message, time, states, R, U, pvec) -> Simulation:
    """The Simulation, with every model signal evaluated when the run succeeded."""
    ok = status == "ok"
    signals: dict[str, np.ndarray] = {}
    if ok:
        sig = model.functions()["signals"].map(time.size)
        Y = values(sig, states.T, R.T, U.T, pvec, time[None, :])[0]
        signals = dict(zip(model.signal_names(), Y))
    return Simulation(ok, status, message, time, states, signals)


def _simulate_delayed(model: Model, rhs: ca.Function, x0, pvec, time, U, R, bound, hold) -> Simulation:
    """Method of steps (fixed-step RK4, Hermite-interpolated past) for a delayed model; a held
    known input takes the value of the output interval its step lies in."""
    N, n = time.size, x0.size
    steps = np.diff(time)
    taus = []
    pnames = model.element_names("parameter")
    states = model.element_names("state")
    named = dict(zip(pnames, np.asarray(pvec, dtype=float).tolist()))
    for d in model.delays:
        taus.append((d.at(named), [states.index(e) for e in d.state_elements]))
    positive = [t for t, _ in taus if t > 0]
    h_out = float(steps.min())
    h_max = min([0.0025] + [t / 4 for t in positive])
    sub = max(1, int(np.ceil(h_out / h_max - 1e-9)))
    held = model.held_inputs()
    f = rhs

    # fine grid: each output interval cut into `sub` steps
    tt = np.concatenate([time[:-1, None] + steps[:, None] * np.arange(sub)[None, :] / sub,
                         time[-1:, None]], axis=None) if N > 1 else time.copy()
    M = tt.size
    X = np.full((M, n), np.nan)
    F = np.full((M, n), np.nan)
    X[0] = x0

    def held_at(t_mid):
        """The interval of each step (by its midpoint ``t_mid``), for the held inputs."""
        return np.clip(np.searchsorted(time, t_mid, side="right") - 1, 0, max(N - 2, 0))

    def inputs(t, m):
        k_out = held_at(0.5 * (tt[m] + tt[min(m + 1, M - 1)]))
        u = np.array([U[k_out, j] if hold[j] else np.interp(t, time, U[:, j]) for j in range(U.shape[1])])
        if R.shape[1]:
            k = int(np.clip(np.searchsorted(time, t, side="right") - 1, 0, N - 2))
            r = np.array([R[k, j] if held[j] else np.interp(t, time, R[:, j]) for j in range(R.shape[1])])
        else:
            r = np.zeros(0)
        return u, r

    def past(s, m):
        """x(s) for s ≤ tt[m] from the stored steps (x0 before the start)."""
        if s <= tt[0]:
            return X[0]
        i = int(np.clip(np.searchsorted(tt, s, side="right") - 1, 0, M - 2))
        if i >= m:  # inside the step being taken (delay shorter than a step): Taylor from tt[m]
            return X[m] + (s - tt[m]) * F[m]
        w = tt[i + 1] - tt[i]
        th = (s - tt[i]) / w
        t2, t3 = th * th, th * th * th
        return ((2 * t3 - 3 * t2 + 1) * X[i] + (t3 - 2 * t2 + th) * w * F[i]
                + (-2 * t3 + 3 * t2) * X[i + 1] + (t3 - t2) * w * F[i + 1])

    def g(t, x, m):
        u, r = inputs(t, m)
        xd = [past(t - tau, m)[idx] for tau, idx in taus]
        uext = np.concatenate([u, *xd]) if xd else u
        return np.array(f(x, r, uext, pvec, t)).ravel()

    status, message = "ok", "integrated to the final time (method of steps, RK4)"
    tau_min = min(t for t, _ in taus) if taus else 0.0
    chunk = _ChunkStepper(f, n, pvec, [idx for _, idx in taus]) if tau_min > 0 else None

    def delayed_at(S: np.ndarray) -> list[np.ndarray]:
        """Every delay's states at the times ``S − τ``, from the stored past (all ≤ the chunk start)."""
        out = []
        for tau, idx in taus:
            s_ = S - tau
            i = np.clip(np.searchsorted(tt, s_, side="right") - 1, 0, M - 2)
            w = tt[i + 1] - tt[i]
            th = ((s_ - tt[i]) / w)[:, None]
            t2, t3 = th * th, th * th * th
            v = ((2 * t3 - 3 * t2 + 1) * X[i] + (t3 - 2 * t2 + th) * w[:, None] * F[i]
                 + (-2 * t3 + 3 * t2) * X[i + 1] + (t3 - t2) * w[:, None] * F[i + 1])
            v[s_ <= tt[0]] = X[0]
            out.append(v[:, idx])
        return out

    def inputs_at(S: np.ndarray, S_mid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k_out = held_at(S_mid)
        Uv = np.stack([U[k_out, j] if hold[j] else np.interp(S, time, U[:, j]) for j in range(U.shape[1])],
                      axis=1) if U.shape[1] else np.zeros((S.size, 0))
        if R.shape[1]:
            k = np.clip(np.searchsorted(time, S, side="right") - 1, 0, N - 2)
            Rv = np.stack([R[k, j] if held[j] else np.interp(S, time, R[:, j]) for j in range(R.shape[1])], axis=1)
        else:
            Rv = np.zeros((S.size, 0))
        return Uv, Rv

    with np.errstate(over="ignore", invalid="ignore"):
        m = 0
        while m < M - 1:
            # the steps whose stages read the past before tt[m] only: one CasADi call for all
            L = int(np.searchsorted(tt, tt[m] + tau_min * (1 - 1e-9), side="right") - 1 - m) if chunk else 0
            L = min(L, M - 1 - m, 2000)
            if L >= 2:
                assert chunk is not None  # L is 0 without it
                F[m] = g(tt[m], X[m], m)
                t0, hs = tt[m:m + L], np.diff(tt[m:m + L + 1])
                S = np.concatenate([t0, t0 + hs / 2, t0 + hs])
                Uv, Rv = inputs_at(S, np.tile(t0 + hs / 2, 3))
                xds = delayed_at(S)
                Xc, K1 = chunk(X[m], t0, hs, Uv, Rv, xds, L)
                bad = ~np.all(np.isfinite(Xc), axis=1) | (np.abs(np.nan_to_num(Xc, nan=np.inf)) > bound).any(axis=1)
                keep = int(np.argmax(bad)) if bad.any() else L
                X[m + 1:m + 1 + keep] = Xc[:keep]
                F[m + 1:m + keep] = K1[1:keep]
                if bad.any():
                    X[m + 1 + keep] = Xc[keep]
                    status = "diverged"
                    message = (f"state magnitude exceeded {bound:g} at t = {tt[m + keep + 1]:.6g} s "
                               "(e.g. a delay that destabilises the loop)")
                    break
                m += L
                continue
            t, h, x = tt[m], tt[m + 1] - tt[m], X[m]
            F[m] = g(t, x, m)
            k1 = F[m]
            k2 = g(t + h / 2, x + h / 2 * k1, m)
            k3 = g(t + h / 2, x + h / 2 * k2, m)
            k4 = g(t + h, x + h * k3, m)
            X[m + 1] = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            if not np.all(np.isfinite(X[m + 1])) or np.max(np.abs(X[m + 1])) > bound:
                status = "diverged"
                message = (f"state magnitude exceeded {bound:g} at t = {tt[m + 1]:.6g} s "
                           "(e.g. a delay that destabilises the loop)")
                break
            m += 1
    out = X[::sub][:N] if N > 1 else X[:1]
    out = out.copy()
    if status != "ok":
        off = ~np.all(np.isfinite(out), axis=1) | (np.abs(np.nan_to_num(out, nan=np.inf)) > bound).any(axis=1)
        good = int(np.argmax(off))
        out[good:] = np.nan
    return _finish(model, status, message, time, out, R, U, pvec)


class _ChunkStepper:
    """RK4 steps of a delayed model over a run of steps whose delayed arguments all lie in
    the already computed past: the inputs and delayed states at every stage are known
    before the run, so the steps are one CasADi ``mapaccum`` call (the same arithmetic as
    the step-by-step loop, without a Python call per stage)."""

    def __init__(self, rhs: ca.Function, n: int, pvec: np.ndarray, delay_idx: list[list[int]]) -> None:
        self.rhs, self.n, self.pvec = rhs, n, np.asarray(pvec, dtype=float)
        self.nd = sum(len(i) for i in delay_idx)
        self.s = rhs.size1_in(2) - self.nd  # known inputs before the delayed states
        self.q = rhs.size1_in(1)
        x = ca.SX.sym("x", n)
        w = 2 + 3 * (self.s + self.q + self.nd)
        d = ca.SX.sym("d", w)
        p = ca.SX.sym("p", self.pvec.size)
        t, h = d[0], d[1]
        o = 2
        u = [d[o + k * self.s:o + (k + 1) * self.s] for k in range(3)]
        o += 3 * self.s
        r = [d[o + k * self.q:o + (k + 1) * self.q] for k in range(3)]
        o += 3 * self.q
        xd = [d[o + k * self.nd:o + (k + 1) * self.nd] for k in range(3)]

        def f(xx, k, tk):
            return rhs(xx, r[k], ca.vertcat(u[k], xd[k]), p, tk)

        k1 = f(x, 0, t)
        k2 = f(x + h / 2 * k1, 1, t + h / 2)
        k3 = f(x + h / 2 * k2, 1, t + h / 2)
        k4 = f(x + h * k3, 2, t + h)
        step = ca.Function("dde_step", [x, d, p], [x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), k1])
        self.step = step
        self.runners: dict[int, ca.Function] = {}

    def __call__(self, x0, t0, hs, Uv, Rv, xds, L: int) -> tuple[np.ndarray, np.ndarray]:
        """States after each of the ``L`` steps and each step's first stage (the derivative at
        its start).  ``Uv``, ``Rv`` and ``xds`` hold the stages' values in three blocks of
        ``L`` rows: at ``t``, ``t + h/2`` and ``t + h``."""
        Xd = np.concatenate(xds, axis=1) if xds else np.zeros((3 * L, 0))
        cols = [t0[None, :], hs[None, :]]
        for block in (Uv, Rv, Xd):
            for k in range(3):
                cols.append(block[k * L:(k + 1) * L].T)
        D = np.vstack(cols)
        if L not in self.runners:
            self.runners[L] = self.step.mapaccum("dde_steps", L)
        P = np.repeat(self.pvec[:, None], L, axis=1)
        Xc, K1 = self.runners[L](x0, D, P)
        return np.array(Xc).T, np.array(K1).T
