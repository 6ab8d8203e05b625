"""C code evaluating one SX function on several instances at once (SIMD across instances).

A block's local functions (an interval's defects and their Jacobian) are the same
straight-line code for every instance.  :func:`lane_source` writes that code once more, for
``width`` instances side by side: every work variable is a GCC/Clang vector of ``width``
doubles (``__attribute__((vector_size))``), so each addition, multiplication and division
is one vector instruction on ``width`` instances.  Operations without a vector form (``sin``,
``pow``, comparisons, …) are written lane by lane with the same C expressions CasADi's own
code generation uses, so every lane computes exactly what CasADi's scalar C code computes:
IEEE arithmetic is the same in a vector register, and the caller compiles without
``-ffast-math`` and with ``-ffp-contract=off`` (no fused multiply–adds).

The generated kernel reads its inputs and writes its outputs in lane layout: element ``k``
of input ``j`` of the ``width`` instances is the vector ``in_j[k]`` (one output may instead
be written straight to its places in a global array).  On request sin, cos, exp and log are
glibc's vector functions (libmvec): a few ulp from the scalar ones, so values then agree to
rounding, not bit for bit.  Functions with an operation not listed here give ``None`` (the
caller evaluates them one instance at a time).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import casadi as ca

__all__ = ["LANE_TYPE", "lane_gather", "lane_prelude", "lane_source", "lane_supported"]

#: The C type of a lane vector (defined by :func:`lane_prelude`).
LANE_TYPE = "colloc_lanes"

# whole-vector forms (IEEE-exact lane by lane, as CasADi's C code: casadi_sq(x) = x*x)
_VECTOR = {
    ca.OP_ASSIGN: "{0}",
    ca.OP_ADD: "({0}+{1})",
    ca.OP_SUB: "({0}-{1})",
    ca.OP_MUL: "({0}*{1})",
    ca.OP_DIV: "({0}/{1})",
    ca.OP_NEG: "(-{0})",
    ca.OP_TWICE: "(LANE_TWO*{0})",
    ca.OP_SQ: "({0}*{0})",
    ca.OP_INV: "(LANE_ONE/{0})",
}
# lane by lane, CasADi's C expression of the operation (casadi/core/calculus.h)
_SCALAR = {
    ca.OP_SQRT: "sqrt({0})",
    ca.OP_EXP: "exp({0})",
    ca.OP_LOG: "log({0})",
    ca.OP_POW: "pow({0},{1})",
    ca.OP_CONSTPOW: "pow({0},{1})",
    ca.OP_SIN: "sin({0})",
    ca.OP_COS: "cos({0})",
    ca.OP_TAN: "tan({0})",
    ca.OP_ASIN: "asin({0})",
    ca.OP_ACOS: "acos({0})",
    ca.OP_ATAN: "atan({0})",
    ca.OP_SINH: "sinh({0})",
    ca.OP_COSH: "cosh({0})",
    ca.OP_TANH: "tanh({0})",
    ca.OP_ASINH: "asinh({0})",
    ca.OP_ACOSH: "acosh({0})",
    ca.OP_ATANH: "atanh({0})",
    ca.OP_ATAN2: "atan2({0},{1})",
    ca.OP_HYPOT: "hypot({0},{1})",
    ca.OP_LOG1P: "log1p({0})",
    ca.OP_EXPM1: "expm1({0})",
    ca.OP_ERF: "erf({0})",
    ca.OP_FABS: "fabs({0})",
    ca.OP_FLOOR: "floor({0})",
    ca.OP_CEIL: "ceil({0})",
    ca.OP_FMOD: "fmod({0},{1})",
    ca.OP_COPYSIGN: "copysign({0},{1})",
    ca.OP_FMIN: "fmin({0},{1})",
    ca.OP_FMAX: "fmax({0},{1})",
    ca.OP_SIGN: "({0}<0 ? -1 : {0}>0 ? 1 : {0})",
    ca.OP_LT: "({0}<{1})",
    ca.OP_LE: "({0}<={1})",
    ca.OP_EQ: "({0}=={1})",
    ca.OP_NE: "({0}!={1})",
    ca.OP_NOT: "(!{0})",
    ca.OP_AND: "({0}&&{1})",
    ca.OP_OR: "({0}||{1})",
    ca.OP_IF_ELSE_ZERO: "({0}?{1}:0)",
}
_STRUCTURAL = {ca.OP_INPUT, ca.OP_OUTPUT, ca.OP_CONST}
# glibc's vector maths library (libmvec), x86-64 vector function ABI names by width
_MVEC = {ca.OP_SIN: "sin", ca.OP_COS: "cos", ca.OP_EXP: "exp", ca.OP_LOG: "log"}
_MVEC_PREFIX = {2: "_ZGVbN2v_", 4: "_ZGVdN4v_", 8: "_ZGVeN8v_"}


def lane_supported(f: ca.Function) -> bool:
    """Whether :func:`lane_source` can write ``f`` (an SX function of known operations)."""
    if not f.is_a("SXFunction"):
        return False
    return all(f.instruction_id(k) in _VECTOR or f.instruction_id(k) in _SCALAR or f.instruction_id(k) in _STRUCTURAL
               for k in range(f.n_instructions()))


def _constant(value: float) -> str:
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    return repr(float(value))


def lane_source(f: ca.Function, name: str, width: int, vector_math: bool = False,
                scatter: int | None = None, chunks: Sequence[Sequence[int]] | None = None) -> str | None:
    """``static void name(const colloc_lanes* in0, …, colloc_lanes* out0, …)``: ``f`` on
    ``width`` instances, one a lane (each output a dense vector of its nonzeros).  ``None``
    when ``f`` has an operation without a lane form here.  ``vector_math``: sin, cos, exp
    and log by libmvec (:func:`colloc.base.compiler.vector_math`; values within a few ulp
    of the scalar functions', no longer identical).  ``scatter``: that output is written
    straight to its places instead, ``dst[a[k] + b[k]·(i + l)]`` for nonzero ``k`` of lane
    ``l`` (parameters ``double* dst, const long long* a, const long long* b, long long i``
    in its place).  ``chunks`` (with ``scatter``): groups of at most ``width`` of that
    output's nonzeros ``(k₀, k₁, …)`` whose places are consecutive, ``a[kⱼ] = a[k₀] + j`` and
    ``b[kⱼ] = b[k₀]``, every nonzero in one group: each group is written once all its
    nonzeros are computed, its vectors transposed in registers so that each lane writes its
    values with one vector store (a value a lane and a store each cost about as much as
    computing the Jacobian, benchmarks/README.md); the same values in the same places.

    The source needs the definitions of :func:`lane_prelude` for the same ``width``."""
    if not lane_supported(f):
        return None
    group_of: dict[int, tuple[int, int]] = {}
    if scatter is not None and chunks is not None:
        for g, chunk in enumerate(chunks):
            if not 0 < len(chunk) <= width:
                raise ValueError(f"a chunk of {len(chunk)} nonzeros for {width} lanes")
            group_of.update((k, (g, j)) for j, k in enumerate(chunk))
        if sorted(group_of) != list(range(f.nnz_out(scatter))) or len(group_of) != sum(map(len, chunks)):
            raise ValueError("chunks must hold every nonzero of the scattered output once")
    pending: dict[int, dict[int, str]] = {}
    params = [f"const {LANE_TYPE}* restrict in{i}" for i in range(f.n_in())]
    params += [f"{LANE_TYPE}* restrict out{o}" if o != scatter else
               "double* restrict dst, const long long* restrict sa, const long long* restrict sb, long long si"
               for o in range(f.n_out())]
    # one variable per instruction (CasADi reuses its work slots; the compiler allocates
    # registers itself), so that equal values have equal names: an operation repeated on
    # the same operands (AD writes cos(x) again for the derivative of sin(x)) is computed
    # once, which changes no value
    name_of: dict[int, str] = {}
    known: dict[tuple, str] = {}
    code: list[tuple[Any, Any, Any, Any]] = []  # (op, output variable or position, input variables, constant)
    for k in range(f.n_instructions()):
        op = f.instruction_id(k)
        out, args = f.instruction_output(k), f.instruction_input(k)
        if op == ca.OP_OUTPUT:
            code.append((op, tuple(out), (name_of[args[0]],), None))
            continue
        ins = tuple(args) if op == ca.OP_INPUT else tuple(name_of[i] for i in args)
        const = f.instruction_constant(k) if op == ca.OP_CONST else None
        key = (op, ins, None if const is None else float(const).hex())
        if key in known:
            name_of[out[0]] = known[key]
            continue
        name_of[out[0]] = known[key] = f"t{k}"
        code.append((op, f"t{k}", ins, const))
    # sin and cos of one value in one lane loop: the compiler computes them together
    partner: dict[int, int | None] = {}
    first: dict[tuple[str, int], int] = {}
    for k, (op, _, ins, _) in enumerate(code):
        if op in (ca.OP_SIN, ca.OP_COS) and not vector_math:
            other = (ins[0], ca.OP_COS if op == ca.OP_SIN else ca.OP_SIN)
            if other in first and first[other] not in partner:
                partner[first[other]] = k
                partner[k] = None
            else:
                first.setdefault((ins[0], op), k)
    body = []
    for k, (op, out, ins, const) in enumerate(code):
        if op == ca.OP_INPUT:
            body.append(f"{out}=in{ins[0]}[{ins[1]}];")
        elif op == ca.OP_OUTPUT and out[0] == scatter and group_of and chunks is not None:
            g, j = group_of[out[1]]
            pending.setdefault(g, {})[j] = ins[0]
            if len(pending[g]) == len(chunks[g]):
                done = pending.pop(g)
                values = [done[i] for i in range(len(chunks[g]))]
                body.append(f"{name}_put{len(values)}(dst+sa[{chunks[g][0]}]+sb[{chunks[g][0]}]*si, "
                            f"sb[{chunks[g][0]}], {', '.join(values)});")
        elif op == ca.OP_OUTPUT and out[0] == scatter:
            body.append(f"{{double* to=dst+sa[{out[1]}]+sb[{out[1]}]*si; long long s=sb[{out[1]}]; "
                        + " ".join(f"to[{l}*s]={ins[0]}[{l}];" for l in range(width)) + "}")
        elif op == ca.OP_OUTPUT:
            body.append(f"out{out[0]}[{out[1]}]={ins[0]};")
        elif op == ca.OP_CONST:
            body.append(f"{out}=({LANE_TYPE}){{{','.join([_constant(const)] * width)}}};")
        elif op in _VECTOR:
            body.append(f"{out}=" + _VECTOR[op].format(*ins) + ";")
        elif vector_math and op in _MVEC:
            body.append(f"{out}={_MVEC_PREFIX[width]}{_MVEC[op]}({ins[0]});")
        elif k in partner and partner[k] is None:
            continue  # written with its partner
        else:
            lanes = [f"{out}[l]=" + _SCALAR[op].format(*(f"{i}[l]" for i in ins)) + ";"]
            mate = partner.get(k)
            if mate is not None:
                other_op, other_out, other_ins, _ = code[mate]
                lanes.append(f"{other_out}[l]=" + _SCALAR[other_op].format(*(f"{i}[l]" for i in other_ins)) + ";")
            body.append(f"for(l=0;l<LANE_WIDTH;++l){{{''.join(lanes)}}}")
    variables = [out for op, out, _, _ in code if op != ca.OP_OUTPUT]
    decl = "".join(f"  {LANE_TYPE} {', '.join(variables[i:i + 16])};\n" for i in range(0, len(variables), 16))
    if pending:
        raise ValueError("a nonzero of the scattered output is never computed")
    puts = "".join(_transposed_store(f"{name}_put{c}", width, c) for c in sorted({len(c) for c in chunks or ()}))
    return (puts + f"static void {name}({', '.join(params)}) {{\n{decl}  int l;\n  (void)l;\n  "
            + "\n  ".join(body) + "\n}\n")


def _butterfly(rows: list[str | None], width: int, prefix: str) -> tuple[list[str], list[str | None]]:
    """C declaring the transpose of the ``width × width`` matrix whose rows are the vectors
    ``rows`` (``None``: a zero row): a butterfly of two-vector shuffles, bit ``b`` of the row
    and lane numbers swapped at stage ``b`` (``width·log₂ width`` shuffles, fewer with zero
    rows).  Returns the lines and the names of the transposed rows (``prefix`` + stage and
    row)."""
    code, stage = [], 0
    while (1 << stage) < width:
        bit, new = 1 << stage, list(rows)
        for j0 in range(width):
            j1 = j0 | bit
            if j0 & bit or (rows[j0] is None and rows[j1] is None):
                continue
            a, b = rows[j0] or "LANE_ZERO", rows[j1] or "LANE_ZERO"
            pick0 = [lane if not lane & bit else width + (lane ^ bit) for lane in range(width)]
            pick1 = [lane | bit if not lane & bit else width + lane for lane in range(width)]
            for j, pick in ((j0, pick0), (j1, pick1)):
                new[j] = f"{prefix}{stage}_{j}"
                code.append(f"  {LANE_TYPE} {new[j]} = LANE_SHUFFLE({a}, {b}, {','.join(map(str, pick))});")
        rows, stage = new, stage + 1
    return code, rows


def lane_gather(name: str, width: int, num_local: int, chunks: Sequence[Sequence[int]],
                shared: Sequence[bool]) -> str:
    """C: ``void name(x, xa, xb, i, V)``, local variable ``k`` of instances ``i … i + width − 1``
    (global variable ``xa[k] + xb[k]·(i + lane)``) into ``V`` in lane layout (``V[width·k +
    lane]``, aligned to a vector).  ``chunks``: every local variable once, in groups of at
    most ``width`` with consecutive global variables (``xa[kⱼ] = xa[k₀] + j``, the same
    ``xb``); each lane's group is read at once and the vectors transposed in registers.
    ``shared[g]``: group ``g`` is the same variables in every instance (``xb`` zero: the
    parameters), broadcast instead."""
    if sorted(k for c in chunks for k in c) != list(range(num_local)):
        raise ValueError("chunks must hold every local variable once")
    code = []
    for g, (chunk, same) in enumerate(zip(chunks, shared)):
        count, k0 = len(chunk), chunk[0]
        code.append(f"  {{ /* local variables {k0}…{k0 + count - 1} */")
        code.append(f"  const double* p = x + xa[{k0}] + xb[{k0}] * i;")
        if same:
            code += [f"  {{ {LANE_TYPE} b = LANE_ONE * p[{j}]; __builtin_memcpy(V + {width * (k0 + j)}, &b, "
                     f"sizeof({LANE_TYPE})); }}" for j in range(count)]
        else:
            code.append(f"  const long long s = xb[{k0}];")
            for lane in range(width):
                if count == width:
                    code.append(f"  {LANE_TYPE} u{lane}; "
                                f"__builtin_memcpy(&u{lane}, p + {lane} * s, sizeof({LANE_TYPE}));")
                else:
                    code.append(f"  {LANE_TYPE} u{lane} = LANE_ZERO; "
                                + " ".join(f"u{lane}[{j}] = p[{lane} * s + {j}];" for j in range(count)))
            lines, rows = _butterfly([f"u{lane}" for lane in range(width)], width, "t")
            code += lines
            code += [f"  __builtin_memcpy(V + {width * (k0 + j)}, &{rows[j]}, sizeof({LANE_TYPE}));"
                     for j in range(count)]
        code.append("  }")
    return (f"void {name}(const double* restrict x, const long long* restrict xa, const long long* restrict xb,\n"
            f"           long long i, double* restrict V) {{\n" + "\n".join(code) + "\n}\n")


def _transposed_store(name: str, width: int, count: int) -> str:
    """C: ``name(to, s, v0, …)``, element ``l`` of vector ``vⱼ`` (``j < count``) written to
    ``to[l·s + j]``: the ``width × width`` matrix of the vectors (zero rows after ``count``)
    transposed by a butterfly of two-vector shuffles (bit ``b`` of the row and lane numbers
    swapped at stage ``b``: ``width·log₂ width`` shuffles), then each lane's first ``count``
    values stored at once (a whole vector, else halves, quarters, … of it)."""
    code, rows = _butterfly([f"v{j}" if j < count else None for j in range(width)], width, "s")
    for lane in range(width):
        to, done, size = f"to + {lane} * s", 0, width
        code.append(f"  __builtin_prefetch({to} + {2 * width} * s, 1, 3);")
        if count > 1:
            code.append(f"  __builtin_prefetch({to} + {2 * width} * s + {count - 1}, 1, 3);")
        while done < count:
            if count - done >= size:
                if size == width:
                    code.append(f"  __builtin_memcpy({to}, &{rows[lane]}, sizeof({LANE_TYPE}));")
                elif size == 1:
                    code.append(f"  ({to})[{done}] = {rows[lane]}[{done}];")
                else:
                    code.append(f"  LANE_PART{size}({to} + {done}, {rows[lane]}, "
                                f"{','.join(str(done + e) for e in range(size))});")
                done += size
            else:
                size //= 2
    args = ", ".join(f"{LANE_TYPE} v{j}" for j in range(count))
    return (f"static inline __attribute__((always_inline)) void {name}(double* restrict to, long long s, {args}) {{\n"
            + "\n".join(code) + "\n}\n")


def lane_prelude(width: int, vector_math: bool = False) -> str:
    """The definitions :func:`lane_source`'s kernels need, for ``width`` lanes."""
    mvec = "".join(f"{LANE_TYPE} {_MVEC_PREFIX[width]}{fn}({LANE_TYPE});\n" for fn in _MVEC.values()) \
        if vector_math else ""
    return (f"#include <math.h>\n#define LANE_WIDTH {width}\n"
            f"typedef double {LANE_TYPE} __attribute__((vector_size({8 * width})));\n" + mvec +
            f"static const {LANE_TYPE} LANE_ONE = {{{','.join(['1.'] * width)}}};\n"
            f"static const {LANE_TYPE} LANE_TWO = {{{','.join(['2.'] * width)}}};\n"
            + _SHUFFLE_PRELUDE.format(lanes=LANE_TYPE, width=width, zero=",".join(["0."] * width),
                                      parts="".join(_PART.format(size=size, bytes=8 * size)
                                                    for size in (2, 4, 8, 16) if size < width)))


# two-vector shuffles: GCC ≥ 12 and Clang have __builtin_shufflevector, older GCC
# __builtin_shuffle (with a vector of indices; also where COLLOC_NO_SHUFFLEVECTOR is defined,
# for the tests); a part of a vector stored as a shorter vector where the first exists,
# element by element otherwise
_SHUFFLE_PRELUDE = """static const {lanes} LANE_ZERO = {{{zero}}};
#if defined(__has_builtin) && !defined(COLLOC_NO_SHUFFLEVECTOR)
#if __has_builtin(__builtin_shufflevector)
#define LANE_SHUFFLEVECTOR 1
#endif
#endif
#ifdef LANE_SHUFFLEVECTOR
#define LANE_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
typedef long long colloc_lane_index __attribute__((vector_size({width} * 8)));
#define LANE_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, (colloc_lane_index){{__VA_ARGS__}})
#endif
{parts}"""
_PART = """#ifdef LANE_SHUFFLEVECTOR
typedef double colloc_part{size} __attribute__((vector_size({bytes})));
#define LANE_PART{size}(to, v, ...) do {{ colloc_part{size} part_ = __builtin_shufflevector(v, v, __VA_ARGS__); \
  __builtin_memcpy(to, &part_, {bytes}); }} while (0)
#else
#define LANE_PART{size}(to, v, ...) do {{ const int at_[] = {{__VA_ARGS__}}; int e_; \
  for (e_ = 0; e_ < {size}; ++e_) (to)[e_] = (v)[at_[e_]]; }} while (0)
#endif
"""
