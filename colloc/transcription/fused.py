"""The NLP's functions of compiled blocks as C functions writing in place.

:class:`colloc.transcription.nlp.NLP` evaluates a block's local functions mapped over its
instances into a buffer, then CasADi gathers the local Jacobians' nonzeros into the global
compressed-column order (one indexed copy a nonzero, with an 8-byte index each) and copies
the result to the caller's array.  At 10,000 intervals of the 10-link cart pendulum
(6.9 million nonzeros) that assembly took twice the local evaluation.

Here, for blocks of compiled models, one C function loops over the instances: it gathers
the instance's local variables from ``x``, calls the block's compiled local functions, and
writes the constraint rows and each local Jacobian nonzero straight to their global
positions.  Those positions are affine in the instance number for all but a few instances
(the first and last intervals, whose end nodes have fewer neighbours): ``position[k, i] =
a[k] + b[k]·i``, so the C code holds two short tables per block and an explicit column for
each irregular instance, never an index per nonzero.  The local functions are compiled once
to a cached object file (:func:`colloc.base.compiler.linked`); only the small wrapper, whose
tables change with the record length, is compiled per problem size.

:func:`fused_gradient` and :func:`fused_hessian` do the same for the objective with its
gradient and for the Lagrangian's Hessian.  Their contributions are SUMMED: a variable shared
by intervals (a node between two intervals, a parameter in every interval, a node in both
the dynamics and the fit block) receives one ``+=`` from each instance that holds it, so the
output is zeroed first and every local nonzero is added at its global place.  Without them
the NLP evaluates these through CasADi graphs that gather the local variables (an 8-byte
index a gathered value), keep the sparsity of every large intermediate and sum shared
contributions by 0/1 matrices (24 bytes a contribution): at 60,001 nodes of the two-link
case those graphs held ~0.5 GB, and their work vectors up to 181 MB each.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ..base.compiler import lane_config, linked, vector_math
from ..base.lanes import lane_gather, lane_prelude, lane_source, lane_supported

__all__ = ["FusedPart", "SummedPart", "fused_constraints", "fused_gradient", "fused_hessian"]

#: More irregular instances than this in a block: the tables would be large, do not fuse.
MAX_IRREGULAR = 64
#: Local functions larger than this (instructions) are evaluated one instance at a time:
#: the lanes' C takes the compiler about 1 ms an instruction at -O2 (3 s for the 10-link
#: cart's midpoint Jacobian of 5,369, 15 s for its Radau-3 one of 17,335, 150 s and 2 GB
#: for ship-stance's of 93,231), once per model.
MAX_LANE_INSTRUCTIONS = 20000


@dataclass
class FusedPart:
    """One block for :func:`fused_constraints`.

    ``index`` (L, n) global variable of each local variable, ``position`` (K, n) global
    nonzero of each local Jacobian nonzero, ``row_offset`` and ``data_offset`` where the
    block's rows and data start (instance ``i``: rows ``row_offset + m·i …``, data
    ``data_offset + D·i …``), ``defects`` and ``jacobian`` the SX local functions
    ``(v, d) → (obj, con, res)`` and ``(v, d) → (jac nonzeros, con)``, ``local_triplets`` the
    local row and column of each of those nonzeros."""

    index: np.ndarray
    position: np.ndarray
    row_offset: int
    data_offset: int
    defects: ca.Function
    jacobian: ca.Function
    local_triplets: tuple[np.ndarray, np.ndarray]


@dataclass
class SummedPart:
    """One block for :func:`fused_gradient` and :func:`fused_hessian`.

    ``index`` (L, n) global variable of each local variable, ``position`` (K, n) global place
    of each local output nonzero (the gradient's entry, the Hessian's nonzero), to which it is
    ADDED; ``row_offset`` and ``data_offset`` where the block's rows (its multipliers) and
    data start; ``function`` the SX local function, ``(v, d) → (obj, gradient nonzeros)`` or
    ``(v, d, σ, λ) → (Hessian nonzeros)``; ``local_triplets`` the local row and column of
    each Hessian nonzero (unused for the gradient)."""

    index: np.ndarray
    position: np.ndarray
    row_offset: int
    data_offset: int
    function: ca.Function
    local_triplets: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def _affine(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, regular)`` with ``table[:, i] == a + b·i`` exactly where ``regular[i]``."""
    rows, n = table.shape
    if n < 2:
        return table[:, 0].copy() if n else np.zeros(rows, np.int64), np.zeros(rows, np.int64), np.ones(n, bool)
    i0 = (n - 1) // 2
    b = table[:, i0 + 1] - table[:, i0]
    a = table[:, i0] - b * i0
    regular = np.ones(n, dtype=bool)
    for start in range(0, n, 4096):  # in slices: no (rows, n) temporary
        cols = np.arange(start, min(n, start + 4096))
        regular[cols] = (table[:, cols] == a[:, None] + b[:, None] * cols).all(axis=0)
    return a, b, regular


def _array(name: str, values) -> str:
    values = np.asarray(values, dtype=np.int64).ravel()
    if values.size == 0:
        values = np.zeros(1, np.int64)
    return f"static const casadi_int {name}[{values.size}] = {{{','.join(map(str, values.tolist()))}}};\n"


def _renamed(f: ca.Function, name: str) -> ca.Function:
    args = f.sx_in()
    return ca.Function(name, args, f.call(args))


def _lanes_possible(ev: ca.Function, jac: ca.Function) -> bool:
    return (max(ev.n_instructions(), jac.n_instructions()) <= MAX_LANE_INSTRUCTIONS
            and lane_supported(ev) and lane_supported(jac))


def _chunks(a: np.ndarray, b: np.ndarray, width: int) -> list[tuple[int, ...]]:
    """The local nonzeros in groups of at most ``width`` whose global places are consecutive
    in every regular instance (``a[kⱼ] = a[k₀] + j``, ``b[kⱼ] = b[k₀]``): the runs of a
    column's rows one instance fills, cut into pieces of ``width``; ordered by first nonzero
    (the same groups, and so the same C, for every record length)."""
    order = np.lexsort((a, b))
    breaks = np.flatnonzero((np.diff(a[order]) != 1) | (np.diff(b[order]) != 0)) + 1
    chunks = [tuple(int(k) for k in run[start:start + width])
              for run in np.split(order, breaks) for start in range(0, run.size, width)]
    return sorted(chunks)


def _lane_unit(key: str, ev: ca.Function, jac: ca.Function, width: int, mvec: bool = False,
               chunks: list[tuple[int, ...]] | None = None,
               gather: tuple[list[tuple[int, ...]], list[bool]] | None = None) -> str | None:
    """C of ``lk<key>_g`` (the rows) and ``lk<key>_j`` (Jacobian nonzeros and rows) on
    ``width`` instances at once (:mod:`colloc.base.lanes`): inputs and rows in lane layout,
    aligned to a vector; the Jacobian nonzeros written by the kernel straight to their
    global places ``a[k] + b[k]·(i + lane)``, by the groups of consecutive places
    ``chunks`` (:func:`_chunks`) transposed to one vector store a lane, or (``None``) one
    value at a time (a buffer and a copy loop were slower than that); the local variables
    read from ``x`` by ``gather``'s groups (``(chunks, shared)``, ``lk<key>_x``,
    :func:`colloc.base.lanes.lane_gather`) or one at a time (``None``).  ``None`` when a
    function has an operation without a lane form or more than
    :data:`MAX_LANE_INSTRUCTIONS` instructions."""
    if not _lanes_possible(ev, jac):
        return None
    rows = ca.Function(f"lr{key}", ev.sx_in(), [ev.call(ev.sx_in())[1]])
    kernels = [lane_source(rows, f"lane_g{key}", width, mvec),
               lane_source(jac, f"lane_j{key}", width, mvec, scatter=0, chunks=chunks)]
    if None in kernels:
        return None
    cast = "(const colloc_lanes*)"
    L = ev.size1_in(0)
    # the local variables of instances i … i + width − 1 from x, global variable xa[k] + xb[k]·i
    # (here, at the lanes' optimisation: by groups, or with the loop over lanes unrolled)
    if gather is not None:
        gather_c = lane_gather(f"lk{key}_x", width, L, *gather)
    else:
        gather_c = (f"void lk{key}_x(const double* restrict x, const long long* restrict xa,\n"
                  f"               const long long* restrict xb, long long i, double* restrict V) {{\n"
                  f"  long long k;\n  int l;\n"
                  f"  for (k = 0; k < {L}; ++k) {{\n"
                  f"    const double* xk = x + xa[k] + xb[k] * i;\n    const long long s = xb[k];\n"
                  f"    for (l = 0; l < {width}; ++l) V[{width} * k + l] = xk[l * s];\n  }}\n}}\n")
    return (lane_prelude(width, mvec) + "".join(k for k in kernels if k is not None) + gather_c
            + f"void lk{key}_g(const double* v, const double* d, double* g) {{\n"
              f"  lane_g{key}({cast}v, {cast}d, (colloc_lanes*)g);\n}}\n"
            + f"void lk{key}_j(const double* v, const double* d, double* jv, const long long* a,\n"
              f"               const long long* b, long long i, double* g) {{\n"
              f"  lane_j{key}({cast}v, {cast}d, jv, a, b, i, (colloc_lanes*)g);\n}}\n")


def _lane_loop(j: int, key: str, width: int, L: int, D: int, K: int, m: int, n: int, num_irregular: int,
               row_offset: int, data_offset: int) -> str:
    """C of block ``j``'s instances ``width`` at a time (``lk<key>_*``), at the head of the
    block function: whole groups of regular instances from the first regular one up to the
    next irregular one (``[lane_start, lane_end)``); the one-at-a-time loop after it skips
    those and does the rest."""
    if width <= 1:
        return "  casadi_int lane_start = 0, lane_end = 0;"
    W = width
    return f"""  casadi_int lane_start = 0, lane_end = 0;
  {{
    casadi_real *V = (casadi_real*)(((size_t)w + {8 * W - 1}) & ~(size_t){8 * W - 1});
    casadi_real *P = V + {W * L}, *G = P + {W * D};
    casadi_int l, i0;
    w = G + {W * m};
    /* groups of {W} consecutive regular instances, up to the first irregular one after the
       leading irregular instances; the loop below does the rest one at a time */
    for (i0 = 0; r < {num_irregular} && b{j}_irr[r] == i0; ++r) ++i0;
    lane_end = r < {num_irregular} ? b{j}_irr[r] : {n};
    lane_end = i0 + (lane_end - i0) / {W} * {W};
    r = 0;
    for (i = i0; i < lane_end; i += {W}) {{
      if (x) lk{key}_x(x, b{j}_xa, b{j}_xb, i, V);
      else for (k = 0; k < {W * L}; ++k) V[k] = 0;
      if (p) for (l = 0; l < {W}; ++l) for (k = 0; k < {D}; ++k) P[{W} * k + l] = p[{data_offset} + {D} * (i + l) + k];
      else for (k = 0; k < {W * D}; ++k) P[k] = 0;
      if (!jv) {{
        lk{key}_g(V, P, G);
      }} else {{
        lk{key}_j(V, P, jv, b{j}_pa, b{j}_pb, i, G);
      }}
      if (g) for (l = 0; l < {W}; ++l) for (k = 0; k < {m}; ++k) g[{row_offset} + {m} * (i + l) + k] = G[{W} * k + l];
    }}
    lane_start = i0;
  }}"""


def fused_constraints(num_variables: int, num_data: int, num_rows: int, num_nonzeros: int,
                      parts: list[FusedPart], *, quiet: bool = False) -> ca.Function | None:
    """``(x[nx], p[np]) → (g[ng], jac_g_x[ng × nx])`` in C: the constraints and their sparse
    Jacobian (its nonzeros written in the global compressed-column order; the pattern is
    built by the library when CasADi loads it), for blocks that together own every
    constraint row and every Jacobian nonzero (each nonzero from exactly one instance).
    IPOPT gets this function as its ``jac_g``: the nonzeros land in its array directly.

    Regular instances are evaluated several at a time (:mod:`colloc.base.lanes`, vectors of
    :func:`colloc.base.compiler.lane_config`'s width; sin, cos, exp and log by libmvec
    where :func:`colloc.base.compiler.vector_math` allows; the Jacobian's runs of consecutive
    places transposed in registers and written one vector a lane, :func:`_chunks`) where the
    compiler and linker take it, else (silently) without libmvec, one value at a time, or
    one instance at a time.

    Returns ``None`` when a block has more than :data:`MAX_IRREGULAR` instances off the
    affine pattern, or when compiling is not possible (then with a
    :class:`colloc.base.compiler.CompilerWarning`, unless ``quiet``)."""
    width, flags = lane_config()
    if width > 1 and not all(_lanes_possible(part.defects, part.jacobian) for part in parts):
        width = 1  # decided here: no C generated in vain for a large model
    # (libmvec, transposed stores): the fastest first, then without what may not build
    attempts = [(False, True), (False, False)]
    if vector_math(width, flags):
        attempts.insert(0, (True, True))
    for mvec, transposed in attempts if width > 1 else ():
        fn = _fused(num_variables, num_data, num_rows, num_nonzeros, parts, width, flags, mvec, transposed, quiet=True)
        if fn is not None:
            return fn
    return _fused(num_variables, num_data, num_rows, num_nonzeros, parts, 1, (), False, quiet=quiet)


class _Tables:
    """Block ``j``'s tables in C: the global variable of each local variable
    (``b<j>_xa + b<j>_xb·i``) and the global place of each local output nonzero
    (``b<j>_pa + b<j>_pb·i``), affine in the instance ``i`` but for the irregular instances
    ``b<j>_irr``, whose columns are explicit (``b<j>_xt``, ``b<j>_pt``).  ``text`` is
    ``None`` when there are more than :data:`MAX_IRREGULAR` irregular instances."""

    def __init__(self, j: int, index: np.ndarray, position: np.ndarray, **local: np.ndarray) -> None:
        self.j, (self.L, self.n), self.K = j, index.shape, position.shape[0]
        xa, xb, xreg = _affine(index.astype(np.int64))
        pa, pb, preg = _affine(position.astype(np.int64))
        self.pa, self.pb, self.xa, self.xb = pa, pb, xa, xb
        self.irregular = np.flatnonzero(~(xreg & preg))
        self.text = None
        if self.irregular.size <= MAX_IRREGULAR:
            self.text = ("".join(_array(f"b{j}_{name}", values) for name, values in local.items())
                         + _array(f"b{j}_xa", xa) + _array(f"b{j}_xb", xb) + _array(f"b{j}_pa", pa)
                         + _array(f"b{j}_pb", pb) + _array(f"b{j}_irr", self.irregular)
                         + _array(f"b{j}_xt", index[:, self.irregular].T)
                         + _array(f"b{j}_pt", position[:, self.irregular].T))

    def variable(self, local: str) -> str:
        """C expression: the global variable of local variable ``local`` of instance ``i``."""
        j, L = self.j, self.L
        return f"(irr ? b{j}_xt[r * {L} + ({local})] : b{j}_xa[{local}] + b{j}_xb[{local}] * i)"

    def loop(self, body: str, skip: str = "") -> str:
        """C: ``body`` for every instance ``i`` (``irr`` whether it is irregular, ``r`` its
        number among the irregular ones), instances where ``skip`` holds left out."""
        j = self.j
        return f"""  for (i = 0, r = 0; i < {self.n}; ++i) {{
    int irr = r < {self.irregular.size} && b{j}_irr[r] == i;
{f"    if ({skip}) continue;" if skip else ""}
{body}
    if (irr) ++r;
  }}
"""

    def gather(self) -> str:
        """C: the instance's local variables from ``x`` into ``v``."""
        j, L = self.j, self.L
        return f"""    if (!x) for (k = 0; k < {L}; ++k) v[k] = 0;
    else if (irr) for (k = 0; k < {L}; ++k) v[k] = x[b{j}_xt[r * {L} + k]];
    else for (k = 0; k < {L}; ++k) v[k] = x[b{j}_xa[k] + b{j}_xb[k] * i];"""

    def scatter(self, out: str, op: str) -> str:
        """C: each local nonzero ``loc[k]`` written (``op`` ``=``) or added (``+=``) at its
        global place in ``out``."""
        j, K = self.j, self.K
        return f"""      if (irr) for (k = 0; k < {K}; ++k) {out}[b{j}_pt[r * {K} + k]] {op} loc[k];
      else for (k = 0; k < {K}; ++k) {out}[b{j}_pa[k] + b{j}_pb[k] * i] {op} loc[k];"""

    def pattern(self, row: str, col: str) -> str:
        """C: the output pattern's row of each local nonzero, and its column counted once
        (``seen``: several instances may add to one nonzero)."""
        j, K = self.j, self.K
        return self.loop(f"""    for (k = 0; k < {K}; ++k) {{
      casadi_int pos = irr ? b{j}_pt[r * {K} + k] : b{j}_pa[k] + b{j}_pb[k] * i;
      row[pos] = {row};
      if (!seen[pos]) {{ seen[pos] = 1; colind[{col} + 1]++; }}
    }}""")


def _unit(key: str, functions: dict[str, ca.Function]) -> tuple[tuple[str, str], str]:
    """The C unit of the local ``functions`` (suffix → SX function), named ``cf<key>_<suffix>``,
    and the C declarations of those names."""
    gen = ca.CodeGenerator(f"cf{key}", {"with_header": False})
    decls = ""
    for suffix, f in functions.items():
        gen.add(_renamed(f, f"cf{key}_{suffix}"))
        decls += f"int cf{key}_{suffix}(const casadi_real**, casadi_real**, casadi_int*, casadi_real*, int);\n"
    return (f"cf{key}", gen.dump()), decls


def _key(*functions: ca.Function) -> str:
    return hashlib.sha256("".join(f.serialize() for f in functions).encode()).hexdigest()[:16]


def _library(title: str, inputs: list[tuple[str, int]], outputs: list[tuple[str, int | None]], decls: str,
             blocks_c: str, pattern: tuple[int, int, int, str] | None, work: tuple[int, int, int, int],
             body: str, units: list, *, libraries: tuple[str, ...] = (), quiet: bool) -> ca.Function | None:
    """The C library (CasADi's external-function interface) of a fused function: ``inputs``
    and ``outputs`` dense columns of the given sizes but one output (size ``None``) with the
    sparse ``pattern`` ``(nrow, ncol, nnz, C loops filling row and colind)``, built on
    first request and freed with the last reference; ``work`` the sizes of ``arg``, ``res``,
    ``iw`` and ``w``; ``body`` the function's C; the ``units`` linked with it
    (:func:`colloc.base.compiler.linked`)."""
    dense = "".join(f"static const casadi_int s_{k}[3] = {{{size}, 1, 1}};\n"
                    for k, (_, size) in enumerate(inputs + outputs) if size is not None)

    def sparsity(names, first):
        cases = [f"i == {i} ? {'s_' + str(first + i) if size is not None else 'sparse_pattern()'}"
                 for i, (_, size) in enumerate(names)]
        return " : ".join(cases + ["0"])

    def names(items):
        return " : ".join([f'i == {i} ? "{name}"' for i, (name, _) in enumerate(items)] + ["0"])

    if pattern is not None:
        nrow, ncol, nnz, loops = pattern
        pattern_c = f"""static casadi_int* s_j = 0;   /* the sparse output's pattern, built on first request */
static const casadi_int* sparse_pattern(void) {{
  casadi_int i, k, r, *colind, *row;
  char* seen;
  if (s_j) return s_j;
  s_j = (casadi_int*)calloc({3 + ncol + nnz}, sizeof(casadi_int));
  seen = (char*)calloc({max(nnz, 1)}, 1);
  if (!s_j || !seen) {{ free(s_j); free(seen); s_j = 0; return 0; }}
  s_j[0] = {nrow}; s_j[1] = {ncol};
  colind = s_j + 2; row = s_j + {3 + ncol};
{loops}  for (i = 0; i < {ncol}; ++i) colind[i + 1] += colind[i];
  free(seen);
  return s_j;
}}
"""
    else:
        pattern_c = "static casadi_int* s_j = 0;\n"
    sz_arg, sz_res, sz_iw, sz_w = work
    source = f"""/* colloc: {title}, written in place */
#include <stdlib.h>
#include <string.h>
#define casadi_real double
#define casadi_int long long int
#ifdef _WIN32
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif
{decls}
{dense}static int refs = 0;
{blocks_c}
{pattern_c}EXPORT void NAME_incref(void) {{ ++refs; }}
EXPORT void NAME_decref(void) {{ if (--refs == 0 && s_j) {{ free(s_j); s_j = 0; }} }}
EXPORT const char* NAME_name_in(casadi_int i) {{ return {names(inputs)}; }}
EXPORT const char* NAME_name_out(casadi_int i) {{ return {names(outputs)}; }}
EXPORT casadi_int NAME_n_in(void) {{ return {len(inputs)}; }}
EXPORT casadi_int NAME_n_out(void) {{ return {len(outputs)}; }}
EXPORT const casadi_int* NAME_sparsity_in(casadi_int i) {{ return {sparsity(inputs, 0)}; }}
EXPORT const casadi_int* NAME_sparsity_out(casadi_int i) {{ return {sparsity(outputs, len(inputs))}; }}
EXPORT int NAME_work(casadi_int* sz_arg, casadi_int* sz_res, casadi_int* sz_iw, casadi_int* sz_w) {{
  *sz_arg = {len(inputs) + sz_arg}; *sz_res = {len(outputs) + sz_res}; *sz_iw = {sz_iw}; *sz_w = {sz_w};
  return 0;
}}
EXPORT int NAME(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, int mem) {{
  /* CasADi copied the pattern when it loaded the library: not kept twice (another load of
     the library builds it again) */
  if (s_j) {{ free(s_j); s_j = 0; }}
{body}  return 0;
}}
"""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    name = f"colloc_fused_{digest}"
    return linked(name, source.replace("NAME", name), units, libraries=libraries, quiet=quiet)


def _fused(num_variables: int, num_data: int, num_rows: int, num_nonzeros: int, parts: list[FusedPart],
           width: int, lane_flags: tuple[str, ...], mvec: bool, transposed: bool = False, *,
           quiet: bool) -> ca.Function | None:
    """The C function of :func:`fused_constraints`, with lanes of ``width`` instances
    (compiled with ``lane_flags``, calling libmvec if ``mvec``, the Jacobian's consecutive
    places written by transposed vectors if ``transposed``) or none (``width`` 1); ``None``
    as there (warnings only if not ``quiet``)."""
    units: list[tuple] = []  # (name, C source[, extra flags])
    unit_of: dict[object, bool] = {}  # the units made: a block's key, or a lane unit's (key, width)
    blocks_c, decls, pattern_c = [], [], []
    sz_arg = sz_res = sz_iw = sz_w = 0
    for j, part in enumerate(parts):
        L, n = part.index.shape
        K = part.position.shape[0]
        lr, lc = part.local_triplets
        tables = _Tables(j, part.index, part.position, lr=lr, lc=lc)
        if tables.text is None:
            return None
        key = _key(part.defects, part.jacobian)
        if key not in unit_of:
            unit, decl = _unit(key, {"g": part.defects, "j": part.jacobian})
            units.append(unit)
            decls.append(decl)
            unit_of[key] = True
        # the lanes' C depends on the groups of consecutive places too: its own name
        chunks = gather = None
        if width > 1 and transposed:
            chunks = _chunks(tables.pa, tables.pb, width)
            xchunks = _chunks(tables.xa, tables.xb, width)
            gather = (xchunks, [bool(tables.xb[c[0]] == 0) for c in xchunks])
        lkey = key if chunks is None else hashlib.sha256(f"{key}{chunks}{gather}".encode()).hexdigest()[:16]
        if width > 1 and (lkey, width) not in unit_of:
            lanes = _lane_unit(lkey, part.defects, part.jacobian, width, mvec, chunks, gather)
            if lanes is None:
                return None
            units.append((f"lk{lkey}w{width}", lanes, lane_flags))
            decls.append(f"void lk{lkey}_x(const double*, const casadi_int*, const casadi_int*, casadi_int, double*);\n"
                         f"void lk{lkey}_g(const double*, const double*, double*);\n"
                         f"void lk{lkey}_j(const double*, const double*, double*, const casadi_int*, "
                         "const casadi_int*, casadi_int, double*);\n")
            unit_of[lkey, width] = True
        ev, jac = part.defects, part.jacobian
        D, m = part.defects.size1_in(1), part.defects.size1_out(1)
        lane_w = width * (L + D + m + 1) if width > 1 else 0
        sz_arg = max(sz_arg, ev.sz_arg(), jac.sz_arg())
        sz_res = max(sz_res, ev.sz_res(), jac.sz_res())
        sz_iw = max(sz_iw, ev.sz_iw(), jac.sz_iw())
        sz_w = max(sz_w, L + K + lane_w + max(ev.sz_w(), jac.sz_w()))
        pattern_c.append(tables.pattern(f"{part.row_offset} + {m} * i + b{j}_lr[k]", tables.variable(f"b{j}_lc[k]")))
        instance = f"""
    arg[0] = v;
    arg[1] = p ? p + {part.data_offset} + {D} * i : 0;
    if (!jv) {{
      res[0] = 0; res[1] = g + {part.row_offset} + {m} * i; res[2] = 0;
      cf{key}_g(arg, res, iw, w, 0);
    }} else {{
      res[0] = loc; res[1] = g ? g + {part.row_offset} + {m} * i : 0;
      cf{key}_j(arg, res, iw, w, 0);
{tables.scatter("jv", "=")}
    }}"""
        loop = tables.loop(tables.gather() + instance, skip="i >= lane_start && i < lane_end")
        blocks_c.append(tables.text + f"""
static void block{j}(const casadi_real* x, const casadi_real* p, casadi_real* g, casadi_real* jv,
                     const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w) {{
  casadi_real *v = w, *loc = w + {L};
  casadi_int i, k, r = 0;
  w += {L + K};
  if (!g && !jv) return;
{_lane_loop(j, lkey, width, L, D, K, m, n, tables.irregular.size, part.row_offset, part.data_offset)}
{loop}}}
""")
    body = "".join(f"  block{j}(arg[0], arg[1], res[0], res[1], arg + 2, res + 2, iw, w);\n" for j in range(len(parts)))
    return _library(f"constraints and Jacobian nonzeros of {len(parts)} block(s)",
                    [("x", num_variables), ("p", num_data)],
                    [("g", num_rows), ("jac_g_x", None)], "".join(decls), "".join(blocks_c),
                    (num_rows, num_variables, num_nonzeros, "".join(pattern_c)), (sz_arg, sz_res, sz_iw, sz_w), body,
                    units, libraries=("mvec",) if mvec else (), quiet=quiet)


def _summed(title: str, parts: list[SummedPart], lagrangian: bool, inputs, outputs, pattern, head: str, tail: str,
            quiet: bool) -> ca.Function | None:
    """The C function of :func:`fused_gradient` (``lagrangian`` false: each block's local
    ``(v, d) → (obj, gradient nonzeros)``, objectives summed into ``*fs``) or
    :func:`fused_hessian` (``(v, d, σ, λ) → Hessian nonzeros``): every local nonzero ADDED
    at its global place in ``out`` (zeroed by ``head``)."""
    units, seen_keys, blocks_c, decls, pattern_c = [], set(), [], [], []
    sz_arg = sz_res = sz_iw = sz_w = 0
    for j, part in enumerate(parts):
        L, _n = part.index.shape
        K = part.position.shape[0]
        fn = part.function
        lr, lc = part.local_triplets
        tables = _Tables(j, part.index, part.position, lr=lr, lc=lc)
        if tables.text is None:
            return None
        key = _key(fn)
        if key not in seen_keys:
            unit, decl = _unit(key, {"s": fn})
            units.append(unit)
            decls.append(decl)
            seen_keys.add(key)
        D = fn.size1_in(1)
        sz_arg, sz_res, sz_iw = max(sz_arg, fn.sz_arg()), max(sz_res, fn.sz_res()), max(sz_iw, fn.sz_iw())
        sz_w = max(sz_w, L + K + 1 + fn.sz_w())
        if lagrangian:
            m = fn.size1_in(3)
            call = f"""    arg[2] = &sigma;
    arg[3] = lam ? lam + {part.row_offset} + {m} * i : 0;
    res[0] = loc;
    cf{key}_s(arg, res, iw, w, 0);
{tables.scatter("out", "+=")}"""
            gi, gj = tables.variable(f"b{j}_lr[k]"), tables.variable(f"b{j}_lc[k]")
            pattern_c.append(tables.pattern(f"({gi} <= {gj} ? {gi} : {gj})", f"({gi} <= {gj} ? {gj} : {gi})"))
        else:
            call = f"""    res[0] = &obj; res[1] = out ? loc : 0;
    cf{key}_s(arg, res, iw, w, 0);
    *fs += obj;
    if (out) {{
{tables.scatter("out", "+=")}
    }}"""
        loop = tables.loop(tables.gather() + f"""
    arg[0] = v;
    arg[1] = p ? p + {part.data_offset} + {D} * i : 0;
{call}""")
        blocks_c.append(tables.text + f"""
static void block{j}(const casadi_real* x, const casadi_real* p, casadi_real sigma, const casadi_real* lam,
                     casadi_real* fs, casadi_real* out, const casadi_real** arg, casadi_real** res,
                     casadi_int* iw, casadi_real* w) {{
  casadi_real *v = w, *loc = w + {L}, obj;
  casadi_int i, k, r = 0;
  w += {L + K + 1};
{loop}}}
""")
    n_in = len(inputs)
    body = (head + "".join(f"  block{j}(arg[0], arg[1], sigma, {'arg[3]' if lagrangian else '0'}, &fs, out, "
                           f"arg + {n_in}, res + {len(outputs)}, iw, w);\n" for j in range(len(parts))) + tail)
    return _library(title, inputs, outputs, "".join(decls), "".join(blocks_c),
                    pattern if pattern is None else (*pattern, "".join(pattern_c)),
                    (sz_arg, sz_res, sz_iw, sz_w), body, units, quiet=quiet)


def fused_gradient(num_variables: int, num_data: int, scale: float, parts: list[SummedPart], *,
                   quiet: bool = False) -> ca.Function | None:
    """``(x[nx], p[np]) → (f, grad_f_x[nx])`` in C: the objective ``scale · Σ obj`` and its
    dense gradient, each block's local gradient nonzeros added at their variables
    (``position`` the global variable of each).  ``f`` alone is computed when the gradient is
    not requested (IPOPT's objective calls).  ``None`` as :func:`fused_constraints`."""
    head = f"""  casadi_real fs = 0, sigma = 0, *out = res[1];
  casadi_int k;
  if (out) memset(out, 0, {num_variables} * sizeof(casadi_real));
"""
    tail = f"""  if (res[0]) res[0][0] = {scale!r} * fs;
  if (out) for (k = 0; k < {num_variables}; ++k) out[k] *= {scale!r};
"""
    return _summed("objective and gradient", parts, False, [("x", num_variables), ("p", num_data)],
                   [("f", 1), ("grad_f_x", num_variables)], None, head, tail, quiet)


def fused_hessian(num_variables: int, num_data: int, num_rows: int, num_nonzeros: int, scale: float,
                  parts: list[SummedPart], *, quiet: bool = False) -> ca.Function | None:
    """``(x, p, lam_f, lam_g) → triu_hess_gamma_x_x`` in C: the Hessian of the Lagrangian
    ``scale·lam_f·f + lam_gᵀg``, upper triangle (row ≤ column, CasADi's convention for
    ``nlpsol``'s ``hess_lag``), each block's local lower-triangle nonzeros ADDED at their
    global places (``position``; a pair of variables shared by instances or blocks sums the
    contributions).  A local off-diagonal entry must not land on the global diagonal (a
    block holding one variable twice): the caller checks.  ``None`` as
    :func:`fused_constraints`."""
    head = f"""  casadi_real fs = 0, *out = res[0];
  casadi_real sigma = arg[2] ? {scale!r} * arg[2][0] : 0;
  if (!out) return 0;
  memset(out, 0, {num_nonzeros} * sizeof(casadi_real));
"""
    return _summed("Hessian of the Lagrangian", parts, True,
                   [("x", num_variables), ("p", num_data), ("lam_f", 1), ("lam_g", num_rows)],
                   [("triu_hess_gamma_x_x", None)], (num_variables, num_variables, num_nonzeros), head, "", quiet)
