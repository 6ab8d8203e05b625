"""Constraints and their Jacobian of compiled blocks in one C function, written in place.

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
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ..base.compiler import lane_config, linked, vector_math
from ..base.lanes import lane_prelude, lane_source, lane_supported

__all__ = ["FusedPart", "fused_constraints"]

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


def _lane_unit(key: str, ev: ca.Function, jac: ca.Function, width: int, mvec: bool = False) -> str | None:
    """C of ``lk<key>_g`` (the rows) and ``lk<key>_j`` (Jacobian nonzeros and rows) on
    ``width`` instances at once (:mod:`colloc.base.lanes`): inputs and rows in lane layout,
    aligned to a vector; the Jacobian nonzeros written by the kernel straight to their
    global places ``a[k] + b[k]·(i + lane)`` (a buffer and a copy loop were slower).
    ``None`` when a function has an operation without a lane form or more than
    :data:`MAX_LANE_INSTRUCTIONS` instructions."""
    if not _lanes_possible(ev, jac):
        return None
    rows = ca.Function(f"lr{key}", ev.sx_in(), [ev.call(ev.sx_in())[1]])
    kernels = [lane_source(rows, f"lane_g{key}", width, mvec),
               lane_source(jac, f"lane_j{key}", width, mvec, scatter=0)]
    if None in kernels:
        return None
    cast = "(const colloc_lanes*)"
    return (lane_prelude(width, mvec) + "".join(kernels)
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
      for (k = 0; k < {L}; ++k) for (l = 0; l < {W}; ++l) V[{W} * k + l] = x ? x[b{j}_xa[k] + b{j}_xb[k] * (i + l)] : 0;
      for (l = 0; l < {W}; ++l) for (k = 0; k < {D}; ++k) P[{W} * k + l] = p ? p[{data_offset} + {D} * (i + l) + k] : 0;
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
                      parts: list[FusedPart]) -> ca.Function | None:
    """``(x[nx], p[np]) → (g[ng], jac_g_x[ng × nx])`` in C: the constraints and their sparse
    Jacobian (its nonzeros written in the global compressed-column order; the pattern is
    built by the library when CasADi loads it), for blocks that together own every
    constraint row and every Jacobian nonzero (each nonzero from exactly one instance).
    IPOPT gets this function as its ``jac_g``: the nonzeros land in its array directly.

    Regular instances are evaluated several at a time (:mod:`colloc.base.lanes`, vectors of
    :func:`colloc.base.compiler.lane_config`'s width; sin, cos, exp and log by libmvec
    where :func:`colloc.base.compiler.vector_math` allows) where the compiler and linker
    take it, else (silently) one at a time.

    Returns ``None`` when a block has more than :data:`MAX_IRREGULAR` instances off the
    affine pattern, or when compiling is not possible (then with a
    :class:`colloc.base.compiler.CompilerWarning`)."""
    width, flags = lane_config()
    if width > 1 and not all(_lanes_possible(part.defects, part.jacobian) for part in parts):
        width = 1  # decided here: no C generated in vain for a large model
    attempts = [(width, flags, True), (width, flags, False)] if vector_math(width, flags) else [(width, flags, False)]
    for w, f, mvec in attempts if width > 1 else ():
        fn = _fused(num_variables, num_data, num_rows, num_nonzeros, parts, w, f, mvec, quiet=True)
        if fn is not None:
            return fn
    return _fused(num_variables, num_data, num_rows, num_nonzeros, parts, 1, (), False, quiet=False)


def _fused(num_variables: int, num_data: int, num_rows: int, num_nonzeros: int, parts: list[FusedPart],
           width: int, lane_flags: tuple[str, ...], mvec: bool, *, quiet: bool) -> ca.Function | None:
    """The C function of :func:`fused_constraints`, with lanes of ``width`` instances
    (compiled with ``lane_flags``, calling libmvec if ``mvec``) or none (``width`` 1);
    ``None`` as there (warnings only if not ``quiet``)."""
    units, unit_of, blocks_c, decls, pattern_c = [], {}, [], [], []
    sz_arg = sz_res = sz_iw = sz_w = 0
    for j, part in enumerate(parts):
        L, n = part.index.shape
        K = part.position.shape[0]
        xa, xb, xreg = _affine(part.index.astype(np.int64))
        pa, pb, preg = _affine(part.position)
        irregular = np.flatnonzero(~(xreg & preg))
        if irregular.size > MAX_IRREGULAR:
            return None
        key = hashlib.sha256(part.defects.serialize().encode() + part.jacobian.serialize().encode()).hexdigest()[:16]
        if key not in unit_of:
            ev, jac = _renamed(part.defects, f"cf{key}_g"), _renamed(part.jacobian, f"cf{key}_j")
            gen = ca.CodeGenerator(f"cf{key}", {"with_header": False})
            gen.add(ev)
            gen.add(jac)
            units.append((f"cf{key}", gen.dump()))
            decls.append(f"int cf{key}_g(const casadi_real**, casadi_real**, casadi_int*, casadi_real*, int);\n"
                         f"int cf{key}_j(const casadi_real**, casadi_real**, casadi_int*, casadi_real*, int);\n")
            if width > 1:
                lanes = _lane_unit(key, part.defects, part.jacobian, width, mvec)
                if lanes is None:
                    return None
                units.append((f"lk{key}w{width}", lanes, lane_flags))
                decls.append(f"void lk{key}_g(const double*, const double*, double*);\n"
                             f"void lk{key}_j(const double*, const double*, double*, const casadi_int*, "
                             "const casadi_int*, casadi_int, double*);\n")
            unit_of[key] = (ev, jac)
        ev, jac = unit_of[key]
        D, m = part.defects.size1_in(1), part.defects.size1_out(1)
        lane_w = width * (L + D + m + 1) if width > 1 else 0
        sz_arg = max(sz_arg, ev.sz_arg(), jac.sz_arg())
        sz_res = max(sz_res, ev.sz_res(), jac.sz_res())
        sz_iw = max(sz_iw, ev.sz_iw(), jac.sz_iw())
        sz_w = max(sz_w, L + K + lane_w + max(ev.sz_w(), jac.sz_w()))
        lr, lc = part.local_triplets
        pattern_c.append(f"""  for (i = 0; i < {n}; ++i) {{
    int irr = r < {irregular.size} && b{j}_irr[r] == i;
    for (k = 0; k < {K}; ++k) {{
      casadi_int pos = irr ? b{j}_pt[r * {K} + k] : b{j}_pa[k] + b{j}_pb[k] * i;
      casadi_int l = b{j}_lc[k];
      casadi_int col = irr ? b{j}_xt[r * {L} + l] : b{j}_xa[l] + b{j}_xb[l] * i;
      row[pos] = {part.row_offset} + {m} * i + b{j}_lr[k];
      colind[col + 1]++;
    }}
    if (irr) ++r;
  }}
  r = 0;
""")
        tables = (_array(f"b{j}_lr", lr) + _array(f"b{j}_lc", lc) + _array(f"b{j}_xa", xa) + _array(f"b{j}_xb", xb) + _array(f"b{j}_pa", pa)
                  + _array(f"b{j}_pb", pb) + _array(f"b{j}_irr", irregular)
                  + _array(f"b{j}_xt", part.index[:, irregular].T) + _array(f"b{j}_pt", part.position[:, irregular].T))
        blocks_c.append(tables + f"""
static void block{j}(const casadi_real* x, const casadi_real* p, casadi_real* g, casadi_real* jv,
                     const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w) {{
  casadi_real *v = w, *loc = w + {L};
  casadi_int i, k, r = 0;
  w += {L + K};
  if (!g && !jv) return;
{_lane_loop(j, key, width, L, D, K, m, n, irregular.size, part.row_offset, part.data_offset)}
  for (i = 0; i < {n}; ++i) {{
    int irr = r < {irregular.size} && b{j}_irr[r] == i;
    if (i >= lane_start && i < lane_end) continue;
    if (!x) for (k = 0; k < {L}; ++k) v[k] = 0;
    else if (irr) for (k = 0; k < {L}; ++k) v[k] = x[b{j}_xt[r * {L} + k]];
    else for (k = 0; k < {L}; ++k) v[k] = x[b{j}_xa[k] + b{j}_xb[k] * i];
    arg[0] = v;
    arg[1] = p ? p + {part.data_offset} + {D} * i : 0;
    if (!jv) {{
      res[0] = 0; res[1] = g + {part.row_offset} + {m} * i; res[2] = 0;
      cf{key}_g(arg, res, iw, w, 0);
    }} else {{
      res[0] = loc; res[1] = g ? g + {part.row_offset} + {m} * i : 0;
      cf{key}_j(arg, res, iw, w, 0);
      if (irr) for (k = 0; k < {K}; ++k) jv[b{j}_pt[r * {K} + k]] = loc[k];
      else for (k = 0; k < {K}; ++k) jv[b{j}_pa[k] + b{j}_pb[k] * i] = loc[k];
    }}
    if (irr) ++r;
  }}
}}
""")
    body = "".join(f"  block{j}(arg[0], arg[1], res[0], res[1], arg + 2, res + 2, iw, w);\n" for j in range(len(parts)))
    source = f"""/* colloc: constraints and Jacobian nonzeros of {len(parts)} block(s), written in place */
#include <stdlib.h>
#define casadi_real double
#define casadi_int long long int
#ifdef _WIN32
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif
{''.join(decls)}
static const casadi_int s_x[3] = {{{num_variables}, 1, 1}};
static const casadi_int s_p[3] = {{{num_data}, 1, 1}};
static const casadi_int s_g[3] = {{{num_rows}, 1, 1}};
static casadi_int* s_j = 0;   /* the Jacobian's pattern, built on first request */
static int refs = 0;
{''.join(blocks_c)}
static const casadi_int* jacobian_pattern(void) {{
  casadi_int i, k, r = 0, *colind, *row;
  if (s_j) return s_j;
  s_j = (casadi_int*)calloc({3 + num_variables + num_nonzeros}, sizeof(casadi_int));
  if (!s_j) return 0;
  s_j[0] = {num_rows}; s_j[1] = {num_variables};
  colind = s_j + 2; row = s_j + {3 + num_variables};
{''.join(pattern_c)}  for (i = 0; i < {num_variables}; ++i) colind[i + 1] += colind[i];
  return s_j;
}}
EXPORT void NAME_incref(void) {{ ++refs; }}
EXPORT void NAME_decref(void) {{ if (--refs == 0 && s_j) {{ free(s_j); s_j = 0; }} }}
EXPORT const char* NAME_name_in(casadi_int i) {{ return i == 0 ? "x" : i == 1 ? "p" : 0; }}
EXPORT const char* NAME_name_out(casadi_int i) {{ return i == 0 ? "g" : i == 1 ? "jac_g_x" : 0; }}
EXPORT casadi_int NAME_n_in(void) {{ return 2; }}
EXPORT casadi_int NAME_n_out(void) {{ return 2; }}
EXPORT const casadi_int* NAME_sparsity_in(casadi_int i) {{ return i == 0 ? s_x : i == 1 ? s_p : 0; }}
EXPORT const casadi_int* NAME_sparsity_out(casadi_int i) {{ return i == 0 ? s_g : i == 1 ? jacobian_pattern() : 0; }}
EXPORT int NAME_work(casadi_int* sz_arg, casadi_int* sz_res, casadi_int* sz_iw, casadi_int* sz_w) {{
  *sz_arg = {2 + sz_arg}; *sz_res = {2 + sz_res}; *sz_iw = {sz_iw}; *sz_w = {sz_w};
  return 0;
}}
EXPORT int NAME(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, int mem) {{
{body}  return 0;
}}
"""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    name = f"colloc_fused_{digest}"
    return linked(name, source.replace("NAME", name), units, libraries=("mvec",) if mvec else (), quiet=quiet)
