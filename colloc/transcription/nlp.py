"""Structure-exploiting NLP assembly.

The NLP is a sum of *blocks*.  A block is one small CasADi function of a few local
variables (for example the two end nodes of an interval and the parameters) applied to
many *instances* (the intervals of a trial).  Every derivative IPOPT needs is obtained by
automatic differentiation of the *local* function only, mapped over the instances and
scattered into a global sparsity pattern that is precomputed with numpy.  Build time is
therefore O(N) with a small constant, and no global symbolic AD or colouring is done.

Glossary:

========  ==========================================================
``L``     number of local variables of a block
``D``     number of local data values (measurements, times, steps…)
``m``     number of constraint rows per instance
``nres``  number of least-squares residuals per instance
``count`` number of instances of a block
``nx``    number of NLP variables; ``ng`` number of constraint rows
========  ==========================================================

The objective of a block instance is ``½‖res‖² + obj``; the NLP objective is the sum over
blocks and instances multiplied by ``objective_scale``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from dataclasses import dataclass, field
from typing import Literal

import casadi as ca
import numpy as np

from ..base.buffers import function_buffer, view
from ..base.compiler import cached_only, compiled_all, compiler_runs, has_compiler
from ..base.naming import function_name
from ..base.sparsity import sparsity_from_ccs

__all__ = ["NLP", "Block"]

HessianKind = Literal["exact", "gauss-newton", "limited-memory"]


@dataclass
class Block:
    """One local function applied to ``count`` instances.

    Attributes
    ----------
    name : str
        For example ``"dynamics"`` or ``"fit"``.
    trial : int or None
        Trial this block belongs to (``None`` for problem-wide blocks).
    func : casadi.Function
        ``(v[L], d[D]) → (res[nres], obj[1], con[m])``, SX-based.
    index : ndarray of int, shape (L, count)
        Global NLP-variable index of each local variable of each instance.
    data : ndarray, shape (D, count)
        Numeric data of each instance (enters the NLP as parameters).
    lower, upper : ndarray, shape (m, count)
        Bounds of the constraint rows.
    row_names : tuple of str, length m
        Names of the constraint rows of one instance.
    instance_times : ndarray, shape (count,)
        Time at which each instance sits (for messages).
    compiled : bool or None
        Compile the block's local derivative functions to machine code
        (:func:`colloc.base.compiler.compiled`; the model's ``compiled`` option); ``None``:
        as :func:`compile_decision` decides for the whole NLP.  An NLP none of whose blocks
        is ``True`` or ``None`` compiles nothing (not even the fused functions).
    """

    name: str
    trial: int | None
    func: ca.Function
    index: np.ndarray
    data: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    row_names: tuple[str, ...]
    instance_times: np.ndarray
    res_names: tuple[str, ...] = field(default=())
    compiled: bool | None = False

    @property
    def count(self) -> int:
        """Number of instances."""
        return self.index.shape[1]

    @property
    def num_local(self) -> int:
        """Number of local variables L."""
        return self.index.shape[0]

    @property
    def num_rows(self) -> int:
        """Constraint rows per instance m."""
        return self.func.size1_out(2)

    @property
    def num_res(self) -> int:
        """Least-squares residuals per instance."""
        return self.func.size1_out(0)


def _nonzeros(expr: ca.SX) -> ca.SX:
    """Structural nonzeros of a (sparse) SX matrix as a column, in CCS order."""
    return expr.nz[:] if expr.nnz() else ca.SX(0, 1)


def _triplets(sp: ca.Sparsity) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = sp.get_triplet()
    return np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)


def _ccs(nrow: int, ncol: int, rows: np.ndarray, cols: np.ndarray,
         sparsity: bool = True) -> tuple[ca.Sparsity | None, np.ndarray, np.ndarray]:
    """CCS sparsity of the unique (row, col) pairs and, per input pair, its nonzero position.

    Returns ``(sparsity, position, order)`` where ``position[i]`` is the nonzero holding pair
    ``i``; duplicates share a position.  ``sparsity=False``: no CasADi object (``None``; a
    fused function builds its pattern itself, and making it cost 0.1 s at 6,001 nodes).
    """
    key = cols.astype(np.int64) * nrow + rows
    # np.unique(key, return_inverse=True) by a stable sort: the contributions come instance by
    # instance, so the keys are nearly sorted already and the merge sort's runs find it (3-4x
    # faster than unique's quicksort on the two-link case's 438,000 Jacobian nonzeros)
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.empty(key.size, dtype=bool)
    first[:1] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    unique = key[first]
    del key
    position = np.empty(order.size, dtype=np.int64)
    position[order] = np.cumsum(first) - 1
    del order, first
    ucols = unique // nrow
    urows = unique % nrow
    colind = np.zeros(ncol + 1, dtype=np.int64)
    colind[1:] = np.cumsum(np.bincount(ucols, minlength=ncol))
    sp = sparsity_from_ccs(nrow, ncol, colind, urows) if sparsity else None
    return sp, position.astype(np.int64, copy=False), unique


def _assembly(nrow: int, targets: np.ndarray) -> ca.DM:
    """Sparse 0/1 matrix A with ``A @ values`` summing ``values[i]`` into row ``targets[i]``."""
    n = targets.size
    sp = sparsity_from_ccs(nrow, n, np.arange(n + 1, dtype=np.int64), targets, chunk=_CHUNK)
    return ca.DM(sp, 1.0)


#: Index vectors pass from NumPy to CasADi as Python lists (~36 bytes an entry) in pieces of
#: at most this many entries: the transient lists stay ~10 MB however large the NLP.
_CHUNK = 250_000


def _gather(values: ca.MX, index: np.ndarray) -> ca.MX:
    """``values[index]`` (a column), built from pieces of :data:`_CHUNK` indices (CasADi writes
    a concatenation of gathers straight into its destination: no extra copy when evaluated)."""
    index = np.asarray(index, dtype=np.int64)
    if index.size <= _CHUNK:
        return values[index.tolist()]
    return ca.vertcat(*(values[index[a : a + _CHUNK].tolist()] for a in range(0, index.size, _CHUNK)))


#: Local functions of compiled blocks with fewer operations than this stay in CasADi's
#: virtual machine.  Measured mapped over 10,000 instances (benchmarks/README.md,
#: "compiled local functions"): 100–500 operations run 3–6× faster compiled (the 10-link
#: cart's 522-operation defects 18.4 → 3.0 ms a call, 0.24 s to compile once, cached), below
#: ~70 the gain is under 2× and a fraction of a millisecond.
_COMPILE_ABOVE = 100


#: Models not marked compiled get the fused C functions (their local functions compiled once,
#: cached on disk) from this many block instances on (measured: benchmarks/README.md,
#: memory_profile.py): below it CasADi's graphs are small and the first run's compile is not
#: worth it.
FUSE_ABOVE = 20_000
#: From this many block instances (and below :data:`FUSE_ABOVE`) the fused C functions are
#: used when the compile cache already holds them (nothing is compiled during the build;
#: under :func:`colloc.base.compiler.builds_ahead`, as in the ``colloc`` command, a miss is
#: compiled in the background for the next run).  The two-link seed case (18,001
#: instances): the build 0.57 → 0.36 s and IPOPT's function evaluations 0.33 → 0.03 s
#: with the libraries cached (benchmarks/README.md).  A lookup generates the C (≈0.03 s on
#: that case, in vain on a miss), so small NLPs, whose graphs cost little, do not look.
FUSE_CACHED_ABOVE = 3_000


#: Models left to decide (``Model(compiled=None)``, the default) are compiled from this much
#: work on: the blocks' instances times the instructions of their local function (CasADi's
#: virtual machine), summed.  Measured (benchmarks/README.md, "Compiled by default"): a
#: first compile costs 1.9 s for the pendulum at 100 nodes (work 4e3; the whole solve
#: 0.3 s) and 2.1 s for the two-link seed case (1.25e6; it saves ≈ 1.1 s there), more than
#: it saves; the 10-link cart at 10,000 nodes (6.7e6) evaluates its constraints and
#: Jacobian 14× and 26× faster compiled, every iteration and every later run (cached).
COMPILE_WORK_ABOVE = 4_000_000


def compile_decision(blocks: list[Block]) -> tuple[bool, str]:
    """``(compile, why)`` for the blocks whose model left it open (``compiled=None``): not
    without a C compiler (``why`` ``"no C compiler"``), nor below :data:`COMPILE_WORK_ABOVE`
    (``"small problem"``; ``$COLLOC_COMPILE_WORK_ABOVE`` overrides it), else compiled
    (``"large problem"``).  Blocks marked ``True`` or ``False`` keep their mark."""
    if not has_compiler():
        return False, "no C compiler"
    work = sum(b.count * b.func.n_instructions() for b in blocks if b.compiled is None)
    if work >= int(os.environ.get("COLLOC_COMPILE_WORK_ABOVE", COMPILE_WORK_ABOVE)):
        return True, "large problem"
    return False, "small problem"


def _compiling(fuse: str | None):
    """The compile cache's mode of a fused function: only what it holds for ``"cached"``."""
    return cached_only() if fuse == "cached" else contextlib.nullcontext()


class _Local:
    """AD of one block's local function (SX), each derivative as a small Function."""

    def __init__(self, block: Block, hessian: HessianKind) -> None:
        f = block.func
        base = function_name(block.name)
        L, D = block.num_local, f.size1_in(1)
        v, d = ca.SX.sym("v", L), ca.SX.sym("d", D)
        sigma = ca.SX.sym("sigma")
        lam = ca.SX.sym("lam", block.num_rows)
        res, obj, con = f(v, d)
        floc = 0.5 * ca.sumsqr(res) + obj
        self.eval = ca.Function(f"{base}_eval", [v, d], [floc, con, res])
        grad = ca.gradient(floc, v)
        self.grad = ca.Function(f"{base}_grad", [v, d], [grad])
        # kept SX for the fused objective: the objective and its gradient's nonzeros (at the
        # local variables grad_rows); None for a block without objective (dynamics)
        self.grad_rows = np.asarray(grad.sparsity().row(), dtype=np.int64)
        self.sx_grad = None if floc.is_zero() and not self.grad_rows.size else \
            ca.Function(f"{base}_objgrad", [v, d], [floc, _nonzeros(grad)])
        jac = ca.jacobian(con, v)
        self.jac_sp = jac.sparsity()
        self.jac = ca.Function(f"{base}_jac", [v, d], [_nonzeros(jac)])
        # kept SX for fused constraints: the rows, and the Jacobian with the rows (shared work)
        self.sx_eval = self.eval
        self.sx_jac = ca.Function(f"{base}_jac_con", [v, d], [_nonzeros(jac), con])
        jres = ca.jacobian(res, v)
        self.jres_sp = jres.sparsity()
        self.jres = ca.Function(f"{base}_jres", [v, d], [_nonzeros(jres)])
        if hessian == "exact":
            lag = sigma * floc + ca.dot(lam, con)
            hess = ca.tril(ca.hessian(lag, v)[0])
        elif hessian == "gauss-newton":
            hess = ca.tril(sigma * (ca.mtimes(jres.T, jres) + ca.hessian(obj, v)[0]))
        else:
            hess = None
        if hess is not None:
            self.hess_sp = hess.sparsity()
            self.hess = ca.Function(f"{base}_hess", [v, d, sigma, lam], [_nonzeros(hess)])
            self.sx_hess = self.hess
        self.compiled = block.compiled

    def compile(self, skip: tuple[str, ...] = ()) -> None:
        """Replace the local functions (but ``skip``) of a compiled block by machine code."""
        if not self.compiled:
            return
        attrs = [a for a in ("eval", "grad", "jac", "jres", "hess")
                 if a not in skip and hasattr(self, a) and getattr(self, a).n_instructions() > _COMPILE_ABOVE]
        for attr, f in zip(attrs, compiled_all([getattr(self, a) for a in attrs])):
            setattr(self, attr, f)


class _Functions(dict):
    """The NLP's functions by name; the names in ``lazy`` are built on first use (all the
    names one builder returns at once)."""

    def __init__(self, functions: dict, lazy: dict) -> None:
        super().__init__(functions)
        self._lazy = dict(lazy)

    def __missing__(self, key: str) -> ca.Function:
        if key not in self._lazy:
            raise KeyError(key)
        built = self._lazy[key]()
        for k, f in built.items():
            self._lazy.pop(k, None)
            self[k] = f
        return self[key]

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._lazy


class NLP:
    """The assembled NLP ``min f(x; p)  s.t.  lbg ≤ g(x; p) ≤ ubg`` with exact sparse derivatives.

    Parameters
    ----------
    num_variables : int
        ``nx``.
    blocks : list of Block
    hessian : {"exact", "gauss-newton", "limited-memory"}
    objective_scale : float
        The NLP minimises ``objective_scale · Σ (½‖res‖² + obj)``.
    parallel : int
        Map local functions over instances with this many threads (1 = serial).  Fused
        functions (:mod:`colloc.transcription.fused`) are serial C whatever this is.
    residual_jacobian : bool
        Also provide ``jac_res`` (needed for standard errors only).

    Attributes
    ----------
    functions : dict of casadi.Function
        ``f``, ``g``, ``grad_f``, ``jac_g``, ``hess_lag`` (absent for limited-memory),
        ``res`` (all least-squares residuals) and ``jac_res``, each with inputs ``(x, p)``
        (``hess_lag``: ``(x, p, lam_f, lam_g)``).  For a compiled model, and for any model
        from :data:`FUSE_ABOVE` block instances on when a C compiler exists, ``grad_f``
        (with ``f``), ``jac_g`` (with ``g``) and ``hess_lag`` are the C functions of
        :mod:`colloc.transcription.fused` writing in place (``fused`` says which), else
        CasADi graphs.  ``res`` and ``jac_res`` are CasADi graphs built on first use (after
        the solve: not held while IPOPT runs).
    fused : dict of bool
        Which of ``jac_g``, ``grad_f``, ``hess_lag`` are fused C functions.
    compile_s : float
        Seconds spent compiling for this NLP (0 when the compile cache held everything).
    compile_note : str
        ``"compiled (cache hit)"``, ``"compiled (N s)"``, ``"interpreted (no C compiler)"``,
        ``"interpreted (small problem)"`` or ``"interpreted (compiled=False)"``: what was
        done with the blocks' functions.
    data : ndarray
        The NLP parameter vector (all block data, concatenated).
    """

    def __init__(
        self,
        num_variables: int,
        blocks: list[Block],
        *,
        hessian: HessianKind = "exact",
        objective_scale: float = 1.0,
        parallel: int = 1,
        residual_jacobian: bool = True,
    ) -> None:
        self.num_variables = nx = int(num_variables)
        why = "compiled=False"
        # Model(compiled=False) everywhere: nothing compiled, not even the fused functions
        self._interpreted = not any(b.compiled is None or b.compiled for b in blocks)
        if any(b.compiled is None for b in blocks):  # Model(compiled=None): decided here, by size
            choice, why = compile_decision(blocks)
            blocks = [dataclasses.replace(b, compiled=choice) if b.compiled is None else b for b in blocks]
        elif not has_compiler():
            why = "no C compiler"
        self.blocks = blocks
        self.hessian = hessian
        self.objective_scale = float(objective_scale)

        # ---- data (NLP parameters) and row offsets -------------------------------------
        data_parts, self.data_offsets, self.row_offsets, self.res_offsets = [], [], [], []
        offset = row = res = 0
        for b in blocks:
            self.data_offsets.append(offset)
            self.row_offsets.append(row)
            self.res_offsets.append(res)
            data_parts.append(np.asarray(b.data, dtype=float).ravel(order="F"))
            offset += b.data.size
            row += b.num_rows * b.count
            res += b.num_res * b.count
        self.data = np.concatenate(data_parts) if data_parts else np.zeros(0)
        self.num_rows = ng = row
        self.num_res = res
        self.lbg = np.concatenate([b.lower.ravel(order="F") for b in blocks]) if blocks else np.zeros(0)
        self.ubg = np.concatenate([b.upper.ravel(order="F") for b in blocks]) if blocks else np.zeros(0)

        x = ca.MX.sym("x", nx)
        p = ca.MX.sym("p", self.data.size)
        lam_f = ca.MX.sym("lam_f")
        lam_g = ca.MX.sym("lam_g", ng)

        f_terms, g_parts = [], []
        grad_vals, grad_targets = [], []
        jac_vals, jac_rows, jac_cols = [], [], []
        hess_vals, hess_rows, hess_cols = [], [], []
        mode = ("thread", parallel) if parallel > 1 else ("serial",)

        # contributions' rows and columns in 4 bytes while every index fits (halves the
        # assembly's transient memory; positions and keys are computed in 8 bytes)
        itype = np.int32 if max(nx, ng, res) < 2**31 - 1 else np.int64
        locs = [_Local(b, hessian) for b in blocks]
        quiet = not any(b.compiled for b in blocks)  # fused on our own decision: fall back silently
        runs, t_compile = compiler_runs(), time.perf_counter()
        fuse = self._fuse_decision()
        with _compiling(fuse):
            fused, jac_pattern = self._fused(locs, quiet) if fuse else (None, None)
        with _compiling(fuse):
            fused_grad = self._fused_gradient(locs, quiet) if fuse else None
        with _compiling(fuse):
            fused_hess = self._fused_hessian(locs, quiet) if fuse and hessian != "limited-memory" else None
        self.fused = {"jac_g": fused is not None, "grad_f": fused_grad is not None, "hess_lag": fused_hess is not None}
        skip = tuple(k for k, done in (("jac", fused), ("grad", fused_grad), ("hess", fused_hess)) if done is not None)
        graphs = len(skip) < (3 if hessian != "limited-memory" else 2)  # something is left to CasADi's graphs
        for loc in locs:
            loc.compile(skip=skip)
        self.compile_s = time.perf_counter() - t_compile if compiler_runs() > runs else 0.0
        if any(self.fused.values()) or any(b.compiled for b in blocks):
            self.compile_note = ("compiled (cache hit)" if compiler_runs() == runs
                                 else f"compiled ({self.compile_s:.1f} s)")
        else:
            self.compile_note = f"interpreted ({why})"
        for loc, b, doff, roff in zip(locs, blocks, self.data_offsets, self.row_offsets):
            if not graphs:
                continue
            n, L, m = b.count, b.num_local, b.num_rows
            index = b.index.astype(itype, copy=False)
            V = ca.reshape(_gather(x, b.index.ravel(order="F")), L, n)
            Dm = ca.reshape(p[doff : doff + b.data.size], b.data.shape[0], n)

            floc, con, _ = loc.eval.map(n, *mode)(V, Dm)
            if fused_grad is None:
                f_terms.append(ca.sum2(floc))
                # gradient: local gradients summed into global positions
                grad_vals.append(ca.vec(loc.grad.map(n, *mode)(V, Dm)))
                grad_targets.append(b.index.ravel(order="F"))
            if fused is None:
                g_parts.append(ca.vec(con))

            inst = np.arange(n, dtype=itype)
            # constraint Jacobian
            if fused is None and loc.jac_sp.nnz():
                lr, lc = _triplets(loc.jac_sp)
                jac_vals.append(ca.vec(loc.jac.map(n, *mode)(V, Dm)))
                jac_rows.append((roff + inst[None, :] * m + lr[:, None].astype(itype)).ravel(order="F"))
                jac_cols.append(index[lc, :].ravel(order="F"))
            # Hessian of the Lagrangian, upper triangle in global numbering
            if fused_hess is None and hessian != "limited-memory" and loc.hess_sp.nnz():
                lr, lc = _triplets(loc.hess_sp)
                lam_b = ca.reshape(lam_g[roff : roff + m * n], m, n) if m else ca.MX(0, n)
                sigma = lam_f * self.objective_scale
                hv = ca.vec(loc.hess.map(n, *mode)(V, Dm, sigma, lam_b))
                gi, gj = index[lr, :], index[lc, :]
                # a block may list one global variable twice (clamped delay windows): an
                # off-diagonal local entry then lands on the global diagonal twice over
                twice = (lr[:, None] != lc[:, None]) & (gi == gj)
                if twice.any():
                    hv = hv * ca.DM(np.where(twice, 2.0, 1.0).ravel(order="F"))
                hess_vals.append(hv)
                hess_rows.append(np.minimum(gi, gj).ravel(order="F"))
                hess_cols.append(np.maximum(gi, gj).ravel(order="F"))

        g = ca.vertcat(*g_parts) if g_parts else ca.MX(0, 1)
        if fused_grad is not None:  # the objective and its gradient summed in place
            f, grad = fused_grad(x, p)
        else:
            f = self.objective_scale * ca.sum1(ca.vertcat(*f_terms)) if f_terms else ca.MX(0)
            targets = np.concatenate(grad_targets) if grad_targets else np.zeros(0, np.int64)
            grad = self.objective_scale * ca.mtimes(_assembly(nx, targets), ca.vertcat(*grad_vals)) \
                if grad_vals else ca.MX(nx, 1)
            grad = ca.densify(grad)

        if fused is not None:  # the compiled blocks write g and the Jacobian in place
            g, jac = fused(x, p)
        else:
            jac, jac_pattern = self._sparse(ng, nx, jac_rows, jac_cols, jac_vals)
        # the patterns of the Jacobians, for :meth:`sparse_value` (no lists from CasADi)
        if jac_pattern is None:  # the fused blocks give theirs, the sparse assembly its own
            raise RuntimeError("no pattern of the constraint Jacobian")
        self._patterns: dict[tuple[str, int], tuple[tuple[int, int], tuple]] = {
            ("jac_g", 1): ((ng, nx), jac_pattern)}

        self.x, self.p = x, p
        self.f, self.g = f, g
        fns = {
            "f": ca.Function("nlp_f", [x, p], [f], ["x", "p"], ["f"]),
            "g": ca.Function("nlp_g", [x, p], [g], ["x", "p"], ["g"]),
            "grad_f": fused_grad if fused_grad is not None
            else ca.Function("nlp_grad_f", [x, p], [f, grad], ["x", "p"], ["f", "grad_f_x"]),
            "jac_g": fused if fused is not None
            else ca.Function("nlp_jac_g", [x, p], [g, jac], ["x", "p"], ["g", "jac_g_x"]),
        }
        if fused_hess is not None:
            fns["hess_lag"] = fused_hess
        elif hessian != "limited-memory":
            hess, _ = self._sparse(nx, nx, hess_rows, hess_cols, hess_vals)
            fns["hess_lag"] = ca.Function(
                "nlp_hess_l",
                [x, p, lam_f, lam_g],
                [hess],
                ["x", "p", "lam_f", "lam_g"],
                ["triu_hess_gamma_x_x"],
            )
        # the residuals and their Jacobian serve after the solve only: built on first use,
        # their graphs are not held while IPOPT runs
        self._locs, self._mode, self._itype = locs, mode, itype
        lazy = ("res", "jac_res") if residual_jacobian else ("res",)
        self.functions = _Functions(fns, {k: self._residual_functions for k in lazy})

    def _residual_functions(self) -> dict[str, ca.Function]:
        """``res`` (all least-squares residuals) and, if asked for, ``jac_res`` (their
        Jacobian, for the standard errors): CasADi graphs of the mapped local functions."""
        x, p, mode, itype = self.x, self.p, self._mode, self._itype
        res_parts, jres_vals, jres_rows, jres_cols = [], [], [], []
        jacobian = "jac_res" in self.functions._lazy
        for loc, b, doff, soff in zip(self._locs, self.blocks, self.data_offsets, self.res_offsets):
            n, L, nr = b.count, b.num_local, b.num_res
            if not nr:
                continue
            V = ca.reshape(_gather(x, b.index.ravel(order="F")), L, n)
            Dm = ca.reshape(p[doff : doff + b.data.size], b.data.shape[0], n)
            res_parts.append(ca.vec(loc.eval.map(n, *mode)(V, Dm)[2]))
            if jacobian and loc.jres_sp.nnz():
                lr, lc = _triplets(loc.jres_sp)
                inst = np.arange(n, dtype=itype)
                jres_vals.append(ca.vec(loc.jres.map(n, *mode)(V, Dm)))
                jres_rows.append((soff + inst[None, :] * nr + lr[:, None].astype(itype)).ravel(order="F"))
                jres_cols.append(b.index.astype(itype, copy=False)[lc, :].ravel(order="F"))
        res_all = ca.vertcat(*res_parts) if res_parts else ca.MX(0, 1)
        out = {"res": ca.Function("nlp_res", [x, p], [res_all], ["x", "p"], ["res"])}
        if jacobian:
            jres, pattern = self._sparse(self.num_res, self.num_variables, jres_rows, jres_cols, jres_vals)
            self._patterns[("jac_res", 0)] = ((self.num_res, self.num_variables), pattern)
            out["jac_res"] = ca.Function("nlp_jac_res", [x, p], [jres], ["x", "p"], ["jac_res_x"])
        return out

    def residual_values(self, x: np.ndarray, jacobian: bool = False):
        """``(res, jac_res)`` at ``x``: all least-squares residuals (NumPy) and, if asked, their
        Jacobian (SciPy CSC; else ``None``), the values of ``functions["res"]`` and
        ``functions["jac_res"]`` computed block by block (each block's mapped local functions
        evaluated through their buffers, the Jacobian's entries placed by SciPy), without a
        graph of the whole NLP: building those graphs took longer than evaluating them
        (two-link seed case: 17 ms against 2 ms)."""
        import scipy.sparse as sps

        from ..base.buffers import values

        x = np.asarray(x, dtype=float)
        mapped = self.__dict__.setdefault("_mapped", {})  # the mapped functions, made once

        def over(f: ca.Function, n: int) -> ca.Function:
            key = (f.name(), id(f), n)
            if key not in mapped:
                mapped[key] = (f, f.map(n, *self._mode))  # f kept: its id stays its own
            return mapped[key][1]

        res_parts, rows, cols, vals = [], [], [], []
        for loc, b, doff, soff in zip(self._locs, self.blocks, self.data_offsets, self.res_offsets):
            n, nr = b.count, b.num_res
            if not nr:
                continue
            V = x[b.index]
            Dm = self.data[doff : doff + b.data.size]
            res_parts.append(values(over(loc.eval, n), V, Dm)[2].ravel(order="F"))
            if jacobian and loc.jres_sp.nnz():
                lr, lc = _triplets(loc.jres_sp)
                vals.append(values(over(loc.jres, n), V, Dm)[0].ravel(order="F"))
                rows.append((soff + np.arange(n, dtype=np.int64)[None, :] * nr + lr[:, None]).ravel(order="F"))
                cols.append(b.index[lc, :].ravel(order="F"))
        res = np.concatenate(res_parts) if res_parts else np.zeros(0)
        if not jacobian:
            return res, None
        shape = (self.num_res, self.num_variables)
        if not vals:
            return res, sps.csc_matrix(shape)
        jac = sps.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=shape)
        return res, jac.tocsc()  # entries at one position summed, as the graph sums them

    def _fuse_decision(self) -> str | None:
        """Whether the NLP's functions are fused C functions (:mod:`colloc.transcription.fused`):
        ``"compile"`` for a compiled model (a block marked ``compiled``), never for a model
        marked ``compiled=False``, and for a model left to decide (``compiled=None``) once
        the blocks have :data:`FUSE_ABOVE` instances in all (``$COLLOC_FUSE_ABOVE``
        overrides it) and a C compiler exists; ``"cached"`` (used if already compiled) from
        :data:`FUSE_CACHED_ABOVE`; else ``None``.  A compile failure or a cache miss falls
        back to CasADi's graphs silently."""
        if not self.blocks:
            return None
        if any(b.compiled for b in self.blocks):
            return "compile"
        if self._interpreted:
            return None
        count = sum(b.count for b in self.blocks)
        if not has_compiler():
            return None
        if count >= int(os.environ.get("COLLOC_FUSE_ABOVE", FUSE_ABOVE)):
            return "compile"
        return "cached" if count >= FUSE_CACHED_ABOVE else None

    def _fused_gradient(self, locs: list[_Local], quiet: bool):
        """The objective and its gradient as one C function (:func:`fused.fused_gradient`), or ``None``."""
        from .fused import SummedPart, fused_gradient

        parts = [SummedPart(b.index, b.index[loc.grad_rows, :], roff, doff, loc.sx_grad)
                 for loc, b, roff, doff in zip(locs, self.blocks, self.row_offsets, self.data_offsets)
                 if loc.sx_grad is not None and b.count]
        return fused_gradient(self.num_variables, self.data.size, self.objective_scale, parts, quiet=quiet)

    def _fused_hessian(self, locs: list[_Local], quiet: bool):
        """The Hessian of the Lagrangian as one C function (:func:`fused.fused_hessian`), with
        exactly the upper-triangle pattern of the graph it replaces; ``None`` when a block
        holds one variable twice (its off-diagonal entry would count twice on the diagonal)
        or when it cannot be compiled."""
        from .fused import SummedPart, fused_hessian

        owners = [(loc, b, roff, doff) for loc, b, roff, doff
                  in zip(locs, self.blocks, self.row_offsets, self.data_offsets) if b.count and loc.hess_sp.nnz()]
        if not owners:
            return None
        rows, cols, sizes = [], [], []
        for loc, b, _, _ in owners:
            lr, lc = _triplets(loc.hess_sp)
            gi, gj = b.index[lr, :], b.index[lc, :]
            if ((lr[:, None] != lc[:, None]) & (gi == gj)).any():
                return None
            rows.append(np.minimum(gi, gj).ravel(order="F"))
            cols.append(np.maximum(gi, gj).ravel(order="F"))
            sizes.append(rows[-1].size)
        _, position, (_, unique_rows) = self._pattern(self.num_variables, self.num_variables, rows, cols, False)
        parts, start = [], 0
        for (loc, b, roff, doff), size in zip(owners, sizes):
            K = loc.hess_sp.nnz()
            parts.append(SummedPart(b.index, position[start : start + size].reshape(b.count, K).T, roff, doff,
                                    loc.sx_hess, _triplets(loc.hess_sp)))
            start += size
        return fused_hessian(self.num_variables, self.data.size, self.num_rows, unique_rows.size,
                             self.objective_scale, parts, quiet=quiet)

    def _fused(self, locs: list[_Local], quiet: bool):
        """The constraints and their Jacobian as one C function writing in place
        (:mod:`colloc.transcription.fused`) when each Jacobian nonzero comes from one
        instance: ``(function, pattern)``, else ``(None, None)``."""
        from .fused import FusedPart, fused_constraints

        owners = [(loc, b, roff, doff) for loc, b, roff, doff
                  in zip(locs, self.blocks, self.row_offsets, self.data_offsets) if b.num_rows]
        if not owners:
            return None, None
        rows, cols = [], []
        for loc, b, roff, _ in owners:
            lr, lc = _triplets(loc.jac_sp)
            inst = np.arange(b.count, dtype=np.int64)
            rows.append((roff + inst[None, :] * b.num_rows + lr[:, None]).ravel(order="F"))
            cols.append(b.index[lc, :].ravel(order="F"))
        sizes = [r.size for r in rows]
        _, position, pattern = self._pattern(self.num_rows, self.num_variables, rows, cols, False)
        nnz = pattern[1].size
        if nnz != position.size:  # a nonzero summed from several contributions
            return None, None
        parts, start = [], 0
        for (loc, b, roff, doff), size in zip(owners, sizes):
            K = loc.jac_sp.nnz()
            parts.append(FusedPart(b.index, position[start : start + size].reshape(b.count, K).T,
                                   roff, doff, loc.sx_eval, loc.sx_jac, _triplets(loc.jac_sp)))
            start += size
        fn = fused_constraints(self.num_variables, self.data.size, self.num_rows, nnz, parts, quiet=quiet)
        return (fn, pattern) if fn is not None else (None, None)

    @staticmethod
    def _pattern(nrow, ncol, rows, cols, sparsity: bool = True):
        """``(sparsity, position, (colind, rows))`` of the contributions at ``rows``/``cols``:
        ``position[i]`` the nonzero of contribution ``i`` (``sparsity=False``: ``None`` for
        the first, see :func:`_ccs`)."""
        rows_a, cols_a = np.concatenate(rows), np.concatenate(cols)
        rows.clear()  # the caller's pieces: freed now, not when the NLP is built
        cols.clear()
        sp, position, unique = _ccs(nrow, ncol, rows_a, cols_a, sparsity)
        del rows_a, cols_a
        pattern = (np.searchsorted(unique // nrow, np.arange(ncol + 1)).astype(np.int64),
                   (unique % nrow).astype(np.int32 if nrow < 2**31 else np.int64))
        return sp, position, pattern

    @classmethod
    def _sparse(cls, nrow, ncol, rows, cols, vals) -> tuple[ca.MX, tuple]:
        """The sparse matrix of the contributions (those at one position summed), and its
        pattern as compressed-column arrays ``(colind, rows)``."""
        if not vals:
            return ca.MX(nrow, ncol), (np.zeros(ncol + 1, dtype=np.int64), np.zeros(0, dtype=np.int32))
        sp, position, pattern = cls._pattern(nrow, ncol, rows, cols)
        values = ca.vertcat(*vals)
        # each nonzero gathered from its first contribution, the others (a variable shared by
        # instances, like a parameter in the Hessian, or listed twice in a block, like clamped
        # delay windows) added through a 0/1 matrix of the remaining contributions only: the
        # gather costs 8 bytes a contribution, the matrix 24
        first = np.full(sp.nnz(), -1, dtype=np.int64)
        first[position[::-1]] = np.arange(position.size)[::-1]
        nz = _gather(values, first)
        if sp.nnz() != position.size:
            extra = np.ones(position.size, dtype=bool)
            extra[first] = False
            idx = np.flatnonzero(extra)
            nz = nz + ca.mtimes(_assembly(sp.nnz(), position[idx]), _gather(values, idx))
        return ca.MX(sp, nz), pattern

    def sparse_value(self, name: str, x: np.ndarray):
        """The Jacobian ``name`` (``"jac_g"`` or ``"jac_res"``) at ``x`` as a SciPy CSC matrix.

        Evaluated through the function's buffers straight into NumPy arrays: a Jacobian of
        millions of non-zeros never passes through Python lists (which cost ~70 bytes and a
        SWIG conversion per non-zero)."""
        import scipy.sparse as sps

        output = 1 if name == "jac_g" else 0
        f = self.functions[name]  # built now if it is built on first use
        shape, (colind, rows) = self._patterns[(name, output)]
        buf, evaluate = function_buffer(f)
        xv = np.ascontiguousarray(x, dtype=float)
        pv = np.ascontiguousarray(self.data, dtype=float)
        values = np.empty(rows.size)
        buf.set_arg(0, view(xv))
        buf.set_arg(1, view(pv))
        buf.set_res(output, view(values))
        evaluate()
        return sps.csc_matrix((values, rows, colind), shape=shape)

    def solver(self, options: dict) -> ca.Function:
        """An IPOPT ``nlpsol`` using the precomputed derivative functions."""
        opts = dict(options)
        # λ_p is never used: skip CasADi's reverse-mode "nlp_grad" of the whole graph
        opts.setdefault("calc_lam_p", False)
        opts.setdefault("no_nlp_grad", True)
        opts["grad_f"] = self.functions["grad_f"]
        opts["jac_g"] = self.functions["jac_g"]
        if "hess_lag" in self.functions:
            opts["hess_lag"] = self.functions["hess_lag"]
        nlp = {"x": self.x, "p": self.p, "f": self.f, "g": self.g}
        return ca.nlpsol("colloc", "ipopt", nlp, opts)
