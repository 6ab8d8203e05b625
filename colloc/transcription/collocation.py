"""Transcribe a :class:`~colloc.Problem` with a collocation method into NLP blocks.

Variable layout (scaled: the solver sees ``value / scale``)::

    [ trial 0: z_0, z_1, …, z_{N₀−1} | trial 1: … | parameters ]

with ``z_k = [x_k; r_k]`` (states then free inputs) at node ``k``, so that the Jacobian is
banded per trial with dense parameter columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from ..base.errors import ProblemError
from ..base.naming import function_name
from ..definition.problem import Problem, TrialPlan
from .grid import interpolation_stencil, locate, mesh_nodes, trapezoid_weights
from .interpolation import InputReader, keys_kernel, keys_weights
from .methods import AbstractTranscription
from .nlp import Block

__all__ = ["Layout", "transcribe"]


@dataclass
class Layout:
    """Where every named quantity lives in the NLP variable vector.

    Attributes
    ----------
    z_names : list of str
        State then free-input element names (``nz`` of them).
    param_names : list of str
    trial_names : list of str
    offsets : list of int
        First NLP index of each trial's node block.
    nodes : list of ndarray
        Node times of each trial.
    param_offset : int
    scale : ndarray, shape (nx,)
        Physical value = scale · NLP value.
    stride : int
        Nodes per mesh interval: node ``k·stride`` is mesh point ``k`` (1 for two-node
        schemes, whose nodes are the mesh).
    plans : list of TrialPlan
        What the transcription read of each trial (:meth:`colloc.Problem.trial_plans`).
    """

    z_names: list[str]
    num_states: int
    param_names: list[str]
    trial_names: list[str]
    offsets: list[int]
    nodes: list[np.ndarray]
    param_offset: int
    scale: np.ndarray
    stride: int = 1
    plans: list[TrialPlan] = field(default_factory=list)

    @property
    def nz(self) -> int:
        """States plus free inputs per node."""
        return len(self.z_names)

    @property
    def size(self) -> int:
        """Number of NLP variables."""
        return self.param_offset + len(self.param_names)

    def z_index(self, trial: int) -> np.ndarray:
        """NLP indices of trial ``trial``'s node values, shape (nz, num_nodes)."""
        n = len(self.nodes[trial])
        return self.offsets[trial] + np.arange(n)[None, :] * self.nz + np.arange(self.nz)[:, None]

    @property
    def p_index(self) -> np.ndarray:
        """NLP indices of the parameters, shape (num_params,)."""
        return self.param_offset + np.arange(len(self.param_names))

    def unpack(self, x: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Physical node values per trial (nz, num_nodes) and parameters (num_params,)."""
        phys = np.asarray(x, dtype=float).ravel() * self.scale
        trials = [phys[self.z_index(i)] for i in range(len(self.nodes))]
        return trials, phys[self.p_index]

    def describe(self, i: int) -> str:
        """Human-readable name of NLP variable ``i``."""
        if i >= self.param_offset:
            return f"parameter {self.param_names[i - self.param_offset]}"
        t = int(np.searchsorted(self.offsets, i, side="right") - 1)
        k, e = divmod(i - self.offsets[t], self.nz)
        return f"{self.z_names[e]} of trial '{self.trial_names[t]}' at node {k} (t = {self.nodes[t][k]:.6g} s)"


def _scaled(v: ca.SX, start: int, scale: np.ndarray) -> ca.SX:
    """``v[start:start+len(scale)] * scale`` as a column (empty-safe)."""
    if len(scale) == 0:
        return ca.SX(0, 1)
    return v[start : start + len(scale)] * ca.DM(scale)


class _Split:
    """Split a node vector ``z = [x; r; û]`` and merge estimated inputs ``û`` into ``u``."""

    def __init__(self, problem: Problem) -> None:
        model = problem.model
        self.n = len(model.element_names("state"))
        self.q = len(model.element_names("free_input"))
        known = model.element_names("known_input")
        eiv = list(problem.input_noise)
        # position of each known input: ("data", k) or ("z", j)
        self.source = [("z", eiv.index(u)) if u in eiv else ("data", k) for k, u in enumerate(known)]
        self.neiv = len(eiv)

    def __call__(self, z, u_data):
        x, r = z[: self.n], z[self.n : self.n + self.q]
        est = z[self.n + self.q : self.n + self.q + self.neiv]
        parts = [est[j] if kind == "z" else u_data[j] for kind, j in self.source]
        u = ca.vertcat(*parts) if parts else ca.SX(0, 1)
        return x, r, u


@dataclass
class _DelayWindow:
    """Nodes whose values give x(t_k − τ) at node k, for one delayed state (uniform grid)."""

    state_index: list[int]  # positions of the delayed elements in z
    offsets: np.ndarray  # node offsets o relative to node k
    tau_index: int | None  # position of τ among the parameters, or None
    tau_value: float | None

    @staticmethod
    def build(model, delay, h: float) -> _DelayWindow:
        states = model.element_names("state")
        lo = int(np.floor(delay.lower / h + 1e-9))
        hi = int(np.ceil(delay.upper / h - 1e-9))
        # x(t_k − τ) needs the nodes j ∈ (k − τ/h − 2, k − τ/h + 2), open: the kernel and its
        # derivative vanish at |s| = 2
        offsets = np.arange(-hi - 1, -lo + 1 + 1)
        pidx = None if delay.parameter is None else model.element_names("parameter").index(delay.parameter)
        return _DelayWindow([states.index(e) for e in delay.state_elements], offsets, pidx, delay.value)


def _interval_function(problem: Problem, method: AbstractTranscription, sz, sp, eq_scale,
                       windows: list | None = None, h_grid: float | None = None) -> ca.Function:
    """Defects of one mesh interval; local variables ``[z_0, …, z_M, p, window]``.

    ``z_0 … z_M`` are the interval's nodes (its ends and the scheme's interior nodes), data
    ``[u at each read place, t₀, h]``.  With delays, ``window`` holds, for each delayed
    state, its mesh-point values at ``k + o`` for the offsets ``o`` of its window and one
    more, scaled.  ``x(t − τ)`` is the cubic-convolution sum over them where the scheme
    reads its inputs (``method.read_fractions``), substituted into the defect: no extra
    variables or constraints, so the KKT system keeps the size of the undelayed one.
    """
    model = problem.model
    fns = model.functions()
    split = _Split(problem)
    nz, npar = len(sz), len(sp)
    ns = len(model.element_names("known_input"))
    reads = tuple(method.read_fractions)
    nn = len(method.node_fractions)
    windows = windows or []
    nwin = sum(len(w.state_index) * (len(w.offsets) + 1) for w in windows)
    v = ca.SX.sym("v", nn * nz + npar + nwin)
    d = ca.SX.sym("d", nn * ns + 2)
    p = _scaled(v, nn * nz, sp)
    t0, h = d[nn * ns], d[nn * ns + 1]
    parts = [split(v[j * nz : (j + 1) * nz] * sz, d[j * ns : (j + 1) * ns]) for j in range(nn)]
    X = [x for x, _, _ in parts]
    R = [r for _, r, _ in parts]
    U = [u for _, _, u in parts]
    held = model.held_inputs()
    if held.any():  # zero-order hold: the interval sees the start value only
        R = [R[0]] + [ca.vertcat(*[R[0][e] if held[e] else r[e] for e in range(held.size)]) for r in R[1:]]
    if model.delays:  # x(t − τ) by the kernel over the window's mesh-point values
        assert h_grid is not None  # a model with delays is transcribed on a uniform grid of step h_grid
        delayed: dict[float, list] = {frac: [] for frac in reads}
        o = nn * nz + npar
        for w in windows:
            k, L = len(w.state_index), len(w.offsets)
            Xw = ca.reshape(v[o : o + k * (L + 1)], k, L + 1)  # scaled: the scale multiplies the sums
            scale = ca.DM(sz[w.state_index])
            o += k * (L + 1)
            # x(t − τ) where the scheme reads its inputs: at t_k + f·h − τ, from the window
            # points k + o, o = offsets and one more (the kernel is even: weight K(o + τ/h − f))
            ext = np.append(w.offsets, w.offsets[-1] + 1)
            for frac in dict.fromkeys(reads):  # once per distinct place
                if w.tau_index is not None:
                    weights = keys_weights(p[w.tau_index] / h_grid - frac, ext)
                else:
                    assert w.tau_value is not None  # a constant delay has its value
                    weights = ca.DM([float(keys_kernel(off + w.tau_value / h_grid - frac)) for off in ext])
                delayed[frac].append(ca.mtimes(Xw, weights) * scale)
        U = [ca.vertcat(U[j], *delayed[frac]) for j, frac in enumerate(reads)]
    con = method.interval_defects(fns["residual"], X, R, U, p, t0, h, eq_scale, sz[: split.n])
    return ca.Function("dynamics", [v, d], [ca.SX(0, 1), ca.SX(0), con])


def _eiv_interpolation_function(neiv: int, points: int) -> ca.Function:
    """``û(node) − Σᵢ wᵢ û(sample i)`` for a node off the samples (scaled values; one scale
    per input, so the scaled rows are exact)."""
    v = ca.SX.sym("v", (points + 1) * neiv)
    d = ca.SX.sym("d", points)
    interp = sum(d[i] * v[(i + 1) * neiv : (i + 2) * neiv] for i in range(points))
    return ca.Function("eiv_interpolation", [v, d], [ca.SX(0, 1), ca.SX(0), v[:neiv] - interp])


def _interp_function(problem: Problem, name: str, sz, sp, body, *, node: bool = False):
    """A factory of block functions evaluated at a node or between two nodes.

    ``body(z, u, p, t, extra) -> (res, obj, con)``.  With ``node=True`` the local variables
    are ``[z_k, p]`` and the data ``[t, u (s), extra]``; otherwise ``[z_j, z_{j+1}, p]`` and
    ``[θ, t, u (s), extra]``, the node values being interpolated linearly at θ.  The
    returned ``make(num_extra)`` builds the Function.
    """
    model = problem.model
    nz, npar = len(sz), len(sp)
    ns = len(model.element_names("known_input"))
    width = nz if node else 2 * nz
    v = ca.SX.sym("v", width + npar)
    lead = 1 if node else 2

    def make(num_extra: int):
        d = ca.SX.sym("d", lead + ns + num_extra)
        if node:
            t = d[0]
            z = v[:nz] * sz
        else:
            theta, t = d[0], d[1]
            z = ((1 - theta) * v[:nz] + theta * v[nz : 2 * nz]) * sz
        p = _scaled(v, width, sp)
        u = d[lead : lead + ns]
        res, obj, con = body(z, u, p, t, d[lead + ns :])
        return ca.Function(function_name(name), [v, d], [ca.vec(ca.SX(res)), ca.SX(obj), ca.vec(ca.SX(con))])

    return make


def _locate_index(zi: np.ndarray, p_index: np.ndarray, tn: np.ndarray, times: np.ndarray):
    """Local-variable indices and leading data rows for values at ``times``.

    Returns ``(node_mode, index, lead)``: when every time is a node, ``index`` holds
    ``[z_k; p]`` and ``lead`` is ``[t]``; otherwise ``[z_j; z_{j+1}; p]`` and ``[θ; t]``.
    """
    j, theta = locate(tn, times)
    at_node = (theta == 0.0) | (theta == 1.0)
    pidx = np.repeat(p_index[:, None], times.size, axis=1)
    if np.all(at_node):
        k = j + (theta == 1.0)
        return True, np.vstack([zi[:, k], pidx]), times[None, :]
    return False, np.vstack([zi[:, j], zi[:, j + 1], pidx]), np.vstack([theta[None, :], times[None, :]])


def _sample_nodes(sample_times: np.ndarray, nodes: np.ndarray) -> np.ndarray | None:
    """Index of the node at each sample time, or None when some sample is not a node."""
    j = np.clip(np.searchsorted(nodes, sample_times), 1, nodes.size - 1)
    j = np.where(np.abs(nodes[j - 1] - sample_times) <= np.abs(nodes[j] - sample_times), j - 1, j)
    tol = 1e-9 * max(float(nodes[-1] - nodes[0]), 1.0)
    return j if np.all(np.abs(nodes[j] - sample_times) <= tol) else None


def transcribe(
    problem: Problem, method: AbstractTranscription
) -> tuple[Layout, list[Block], np.ndarray, np.ndarray, np.ndarray]:
    """Build the NLP blocks of ``problem`` discretised by ``method``.

    Returns
    -------
    layout : Layout
    blocks : list of Block
    x0, lbx, ubx : ndarray, shape (nx,)
        Scaled initial guess and bounds.
    """
    model = problem.model
    fns = model.functions()
    signals_fn = fns["signals"]
    state_names = model.element_names("state")
    eiv = list(problem.input_noise)
    z_names = state_names + model.element_names("free_input") + eiv
    n = len(state_names)
    known_scale = dict(zip(model.element_names("known_input"), model.scales("known_input")))
    eiv_scale = np.array([known_scale[u] for u in eiv])
    sz = np.concatenate([model.scales("state"), model.scales("free_input"), eiv_scale])
    nfree = len(eiv)
    zlo = np.concatenate([model.bounds("state")[0], model.bounds("free_input")[0], np.full(nfree, -np.inf)])
    zhi = np.concatenate([model.bounds("state")[1], model.bounds("free_input")[1], np.full(nfree, np.inf)])
    sp = model.scales("parameter")
    plo, phi = model.bounds("parameter")
    param_names = model.element_names("parameter")
    known = model.element_names("known_input")
    signal_names = problem.signal_names()
    split = _Split(problem)
    eq_scale = model.equation_scales
    nz = len(z_names)

    # ---- layout -------------------------------------------------------------------------
    nodes: list[np.ndarray] = []
    meshes: list[np.ndarray] = []
    sample_nodes: list[np.ndarray | None] = []
    offsets: list[int] = []
    offset = 0
    plans = problem.trial_plans()
    for plan in plans:
        t = plan.trial
        # mesh points at every jump and at every sample of a held input (its value steps there)
        mesh, tn = mesh_nodes(t.time, method.num_nodes, method.refine, method.node_fractions,
                              np.union1d(plan.jump_times, plan.hold_times))
        at = _sample_nodes(t.time, tn)
        if eiv and len(tn) > t.num_samples and at is None:
            raise ProblemError(
                f"trial '{t.name}': {type(method).__name__}(num_nodes={method.num_nodes}) puts {len(tn)} nodes on "
                f"{t.num_samples} samples that are not among them, but the errors-in-variables input(s) "
                f"{', '.join(eiv)} are tied to the data only at the samples, so the values between samples would "
                "be free; use a grid through the samples (num_nodes=None, with refine=n for more nodes) or at "
                "most one node per sample"
            )
        nodes.append(tn)
        meshes.append(mesh)
        sample_nodes.append(at)
        offsets.append(offset)
        offset += nz * len(tn)
    layout = Layout(
        z_names=z_names,
        num_states=n,
        param_names=param_names,
        trial_names=[t.name for t in problem.trials],
        offsets=offsets,
        nodes=nodes,
        param_offset=offset,
        scale=np.concatenate([np.tile(sz, offset // nz if nz else 0), sp]),
        stride=len(method.node_fractions) - 1,
        plans=plans,
    )

    # ---- blocks -------------------------------------------------------------------------
    dyn = None if model.delays else _interval_function(problem, method, sz, sp, eq_scale)
    blocks: list[Block] = []
    regs = [t for t in problem.terms if t.kind == "regularization"]
    objs = [t for t in problem.terms if t.kind == "objective"]
    paths = [t for t in problem.terms if t.kind == "path"]
    points = [t for t in problem.terms if t.kind == "point"]
    trajs = [t for t in problem.terms if t.kind == "trajectory"]
    ns = len(known)

    def sig_fn(z, u_data, p, t):
        x, r, u = split(z, u_data)
        return ca.vertcat(signals_fn(x, r, u, p, t), z[n + split.q : n + split.q + split.neiv])

    stride = layout.stride  # node k·stride is mesh point k
    row_names = method.row_names(model.equation_names, state_names)
    for i, trial in enumerate(problem.trials):
        tn, mesh = nodes[i], meshes[i]
        N, K = len(tn), len(mesh) - 1  # nodes, mesh intervals
        zi = layout.z_index(i)
        first = np.arange(K) * stride
        pidx = np.repeat(layout.p_index[:, None], K, axis=1)
        interval_index = np.vstack([zi[:, first + j] for j in range(stride + 1)] + [pidx])
        # known inputs through their measured samples, piecewise between their jumps
        reader = InputReader(trial, known, method.input_interpolation, plans[i].input_jumps)
        u_nodes = reader(tn)
        dyn_i = dyn
        steps = np.diff(mesh)
        if model.delays:  # x(t_k − τ) from the mesh-point values k + o of a window (uniform mesh)
            h = float(steps[0])
            if not np.allclose(steps, h, rtol=1e-9, atol=0):
                raise ProblemError(
                    f"trial '{trial.name}': delayed states need a uniform grid; its steps range from "
                    f"{steps.min():.6g} to {steps.max():.6g} s (resample it or pass a uniform --nodes)"
                )
            windows = [_DelayWindow.build(model, dl, h) for dl in model.delays]
            intervals = np.arange(K)
            parts = [interval_index]
            for w in windows:
                extended = np.append(w.offsets, w.offsets[-1] + 1)  # one more: reads at t_k + f·h, f ≤ 1
                points_w = np.clip(intervals[None, :] + extended[:, None], 0, K) * stride  # clamp: constant history
                for j in range(extended.size):
                    parts.append(zi[w.state_index][:, points_w[j]])
            interval_index = np.vstack(parts)
            dyn_i = _interval_function(problem, method, sz, sp, eq_scale, windows, h)

        # dynamics defects on every mesh interval (known inputs where the scheme reads them)
        # (each interval reads the piece of the side of a jump it lies on)
        reads = [reader.on_intervals(mesh, frac) for frac in method.read_fractions]
        data = np.vstack([*reads, mesh[None, :-1], steps[None, :]])
        assert dyn_i is not None  # built above for a model with delays, else once for all trials
        blocks.append(
            Block(
                name="dynamics",
                trial=i,
                func=dyn_i,
                index=interval_index,
                data=data,
                lower=np.zeros((len(row_names), K)),
                upper=np.zeros((len(row_names), K)),
                row_names=row_names,
                instance_times=mesh[:-1],
                compiled=model.compiled,
            )
        )

        # errors-in-variables inputs at nodes off their measured samples: a fixed interpolation
        # of their values at those samples (where their likelihood is), so extra nodes and
        # unmeasured samples never free them
        at = sample_nodes[i]
        if eiv and at is None and any(trial.has_missing and not trial.present(u).all() for u in eiv):
            raise ProblemError(
                f"trial '{trial.name}': errors-in-variables input(s) {', '.join(eiv)} have unmeasured samples "
                f"and {type(method).__name__}(num_nodes={method.num_nodes}) puts nodes off the samples, so their "
                "values there would be free; use a grid through the samples (num_nodes=None)"
            )
        if eiv and at is not None:
            groups: dict[bytes, list[int]] = {}  # inputs measured at the same samples share a block
            for e, u in enumerate(eiv):
                groups.setdefault(trial.present(u).tobytes(), []).append(e)
            for members in groups.values():
                present = trial.present(eiv[members[0]])
                tied = at[present]
                if N <= tied.size:
                    continue
                off = np.setdiff1d(np.arange(N), tied)
                st_idx, st_w = interpolation_stencil(trial.time[present], tn[off])
                rows = n + split.q + np.array(members)
                index = np.vstack([zi[rows][:, off]] + [zi[rows][:, tied[st_idx[j]]] for j in range(st_idx.shape[0])])
                blocks.append(
                    Block(
                        name="eiv-interpolation",
                        trial=i,
                        func=_eiv_interpolation_function(len(members), st_idx.shape[0]),
                        index=index,
                        data=st_w,
                        lower=np.zeros((len(members), off.size)),
                        upper=np.zeros((len(members), off.size)),
                        row_names=tuple(eiv[e] for e in members),
                        instance_times=tn[off],
                    )
                )

        # fit of measured signals at the sample times
        fitted = plans[i].fitted
        sel = [signal_names.index(s) for s in fitted]
        node_mode, idx, lead = _locate_index(zi, layout.p_index, tn, trial.time)
        u_samples = reader(trial.time)  # the measured values, unmeasured ones interpolated
        meas = np.stack([trial[s] for s in fitted]) if fitted else np.zeros((0, trial.num_samples))
        weights = plans[i].weights
        sqrt_w = np.sqrt([weights[s] for s in fitted])[:, None] * np.ones_like(meas)
        unmeasured = np.isnan(meas)  # no residual there: weight 0 (not counted as observations)
        meas[unmeasured], sqrt_w[unmeasured] = 0.0, 0.0

        def fit_body(z, u, p, t, extra, sel=sel, nf=len(fitted)):  # noqa: B008 - bound per trial on purpose
            y = sig_fn(z, u, p, t)[sel]
            return extra[nf:] * (y - extra[:nf]), 0, ca.SX(0, 1)

        fit_fn = _interp_function(problem, "fit", sz, sp, fit_body, node=node_mode)(2 * len(fitted))
        count = trial.num_samples
        blocks.append(
            Block(
                name="fit",
                trial=i,
                func=fit_fn,
                index=idx,
                data=np.vstack([lead, u_samples, meas, sqrt_w]),
                lower=np.zeros((0, count)),
                upper=np.zeros((0, count)),
                row_names=(),
                instance_times=trial.time,
                res_names=tuple(fitted),
            )
        )

        # node-wise extras: regularisation, objective terms, path constraints
        nidx = np.vstack([zi, np.repeat(layout.p_index[:, None], N, axis=1)])
        qw = trapezoid_weights(tn)
        for term in regs:
            def reg_body(z, u, p, t, extra, expr=term.expr):
                val = _substitute(problem, expr, z, u, p, t)
                return extra[0] * val, 0, ca.SX(0, 1)

            fn = _interp_function(problem, f"regularization:{term.name}", sz, sp, reg_body, node=True)(1)
            blocks.append(
                Block(
                    name=f"regularization:{term.name}",
                    trial=i,
                    func=fn,
                    index=nidx,
                    data=np.vstack([tn, u_nodes,
                                    np.sqrt(term.weight * (qw if term.integral else np.ones(N)))[None, :]]),
                    lower=np.zeros((0, N)),
                    upper=np.zeros((0, N)),
                    row_names=(),
                    instance_times=tn,
                    res_names=tuple(f"{term.name}_{k}" for k in range(term.expr.numel())),
                )
            )
        for term in objs:
            def obj_body(z, u, p, t, extra, expr=term.expr):
                return ca.SX(0, 1), extra[0] * _substitute(problem, expr, z, u, p, t), ca.SX(0, 1)

            fn = _interp_function(problem, f"objective:{term.name}", sz, sp, obj_body, node=True)(1)
            quad = qw if term.integral else np.ones(N)
            blocks.append(
                Block(
                    name=f"objective:{term.name}",
                    trial=i,
                    func=fn,
                    index=nidx,
                    data=np.vstack([tn, u_nodes, quad[None, :]]),
                    lower=np.zeros((0, N)),
                    upper=np.zeros((0, N)),
                    row_names=(),
                    instance_times=tn,
                )
            )
        for term in paths:
            def path_body(z, u, p, t, extra, expr=term.expr):
                return ca.SX(0, 1), 0, _substitute(problem, expr, z, u, p, t)

            fn = _interp_function(problem, f"path:{term.name}", sz, sp, path_body, node=True)(0)
            k = term.expr.numel()
            assert term.lower is not None and term.upper is not None  # a path constraint has bounds
            blocks.append(
                Block(
                    name=f"path:{term.name}",
                    trial=i,
                    func=fn,
                    index=nidx,
                    data=np.vstack([tn, u_nodes]),
                    lower=np.repeat(term.lower[:, None], N, axis=1),
                    upper=np.repeat(term.upper[:, None], N, axis=1),
                    row_names=tuple(term.name if k == 1 else f"{term.name}_{e}" for e in range(k)),
                    instance_times=tn,
                )
            )
        for term in trajs:
            # one instance whose local variables are every node of the trial
            v = ca.SX.sym("v", nz * N + len(sp))
            dd = ca.SX.sym("d", ns * N)
            Z = ca.reshape(v[: nz * N], nz, N) * ca.DM(np.repeat(sz[:, None], N, axis=1))
            P = _scaled(v, nz * N, sp)
            Ud = ca.reshape(dd, ns, N) if ns else ca.SX(0, N)
            cols = [sig_fn(Z[:, k], Ud[:, k], P, tn[k]) for k in range(N)]
            Y = ca.horzcat(*cols)
            values = {s: Y[signal_names.index(s), :].T for s in term.signals}
            assert term.function is not None  # a trajectory term has its function
            obj = ca.SX(term.function(values, tn, trial))
            if obj.numel() != 1:
                raise ProblemError(f"trajectory objective '{term.name}' must return a scalar, got {obj.shape}")
            fn = ca.Function(function_name(f"trajectory:{term.name}"), [v, dd], [ca.SX(0, 1), obj, ca.SX(0, 1)])
            blocks.append(
                Block(
                    name=f"trajectory:{term.name}",
                    trial=i,
                    func=fn,
                    index=np.concatenate([zi.ravel(order="F"), layout.p_index])[:, None],
                    data=u_nodes.ravel(order="F")[:, None],
                    lower=np.zeros((0, 1)),
                    upper=np.zeros((0, 1)),
                    row_names=(),
                    instance_times=tn[:1],
                )
            )
        for term in points:
            if term.trial is not None and term.trial != i:
                continue
            node_mode, pt_index, pt_lead = _locate_index(zi, layout.p_index, tn, np.array([term.time]))
            u_pt = reader(np.array([term.time]))[:, 0]

            def point_body(z, u, p, t, extra, expr=term.expr):
                return ca.SX(0, 1), 0, _substitute(problem, expr, z, u, p, t)

            fn = _interp_function(problem, f"point:{term.name}", sz, sp, point_body, node=node_mode)(0)
            k = term.expr.numel()
            assert term.lower is not None and term.upper is not None  # a point constraint has bounds
            blocks.append(
                Block(
                    name=f"point:{term.name}",
                    trial=i,
                    func=fn,
                    index=pt_index,
                    data=np.vstack([pt_lead, u_pt[:, None]]),
                    lower=term.lower[:, None],
                    upper=term.upper[:, None],
                    row_names=tuple(term.name if k == 1 else f"{term.name}_{e}" for e in range(k)),
                    instance_times=np.array([term.time]),
                )
            )

    # ---- guesses and bounds -------------------------------------------------------------
    x0 = np.empty(layout.size)
    lbx = np.empty(layout.size)
    ubx = np.empty(layout.size)
    for i, tn in enumerate(nodes):
        idx = layout.z_index(i)
        guess = problem.guess_trajectories(i, tn)
        x0[idx] = np.stack([guess[name] for name in z_names]) / sz[:, None]
        lbx[idx] = (zlo / sz)[:, None]
        ubx[idx] = (zhi / sz)[:, None]
    x0[layout.p_index] = model.guesses("parameter") / sp
    lbx[layout.p_index] = plo / sp
    ubx[layout.p_index] = phi / sp
    return layout, blocks, x0, lbx, ubx


def _substitute(problem: Problem, expr: ca.SX, z, u_data, p, t) -> ca.SX:
    """Evaluate a user expression in model symbols at local values (``z = [x; r; û]``)."""
    model = problem.model
    syms = [model._vec("state"), model._vec("free_input"), model._vec("known_input"), model._vec("parameter"),
            model.time]
    f = ca.Function("term", syms, [expr])
    x, r, u = _Split(problem)(z, u_data)
    return f(x, r, u, p, t)
