"""Classical RK4 over a whole trajectory in compiled C (the fixed-step path of
:func:`colloc.simulate`).

CasADi's ``mapaccum`` of an RK4 step evaluates the right-hand side in its virtual machine,
one instruction at a time: for the two-link seed case (6,000 intervals, the step-doubling
ladder of 1, 2, 4 and 8 steps an interval, 60 right-hand-side evaluations an interval) that
was most of the simulation check's time.  :func:`compiled_rk4` generates the C code of
the interval's right-hand side once (CasADi's code generation), adds a loop in C over the
intervals and the RK4 stages, and compiles both with the system compiler into a library
cached on disk by the hash of its source (:func:`colloc.base.compiler.linked`): the next
simulation of the same model loads it without compiling.  The loop takes the number of
steps an interval and the number of intervals as arguments, so one library serves every
record length and every rung of the ladder.

The arithmetic is the one of :class:`colloc.simulation.integrators.RungeKutta` (same
stages, same constants, same order of the sums), so both paths agree to rounding.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import casadi as ca
import numpy as np

from ..base.compiler import linked
from .integrators import _interval_ode

__all__ = ["CHUNK", "COMPILE_ABOVE", "compiled_rk4"]

#: Compile when the intervals times the right-hand side's instructions exceed this (below
#: it the virtual machine finishes before the compiler would, the first time).
COMPILE_ABOVE = 200_000
#: Intervals per call of the compiled loop (its inputs have a fixed size).
CHUNK = 2048


def compiled_rk4(rhs: ca.Function, n: int, num_params: int, s: int, q: int,
                 num_intervals: int) -> Callable[[np.ndarray, np.ndarray, int], np.ndarray] | None:
    """``run(x0, cols, m) → X`` (``n × num_intervals``): the states after each interval
    from ``x0``, RK4 with ``m`` steps an interval, ``cols`` the intervals' data
    (:func:`colloc.simulation.integrators.interval_data_size` rows), as
    ``RungeKutta(m).step(...).mapaccum(num_intervals)`` computes them.

    ``None`` (the caller evaluates in CasADi's virtual machine) when the run is too small to
    be worth a compiler (:data:`COMPILE_ABOVE`), CasADi cannot generate C for ``rhs``, or
    no compiler is found or it fails; silently, since the virtual machine gives the same
    states."""
    if rhs.n_instructions() * max(num_intervals, 0) < COMPILE_ABOVE:
        return None
    try:
        x, tau, data, ode = _interval_ode(rhs, n, num_params, s, q)
        f = ca.Function("f", [x, tau, data], [ode])
        key = hashlib.sha256(f.serialize().encode()).hexdigest()[:16]
        f = ca.Function(f"rk{key}_f", [x, tau, data], [ode])
        gen = ca.CodeGenerator(f"rk{key}", {"with_header": False})
        gen.add(f)
        unit = gen.dump()
    except RuntimeError:  # an operation without C code (e.g. an external or a plugin's solver)
        return None
    D = data.numel()
    source = _SOURCE.format(key=key, n=n, D=D, C=CHUNK, sz_arg=max(f.sz_arg(), 3) + 4,
                            sz_res=max(f.sz_res(), 1) + 1, sz_iw=f.sz_iw(), sz_w=f.sz_w() + 6 * n + 2,
                            **{f"n{k}": k * n for k in range(2, 7)})
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    name = f"colloc_rk4_{digest}"
    fn = linked(name, source.replace("NAME", name), [(f"rk{key}", unit)], quiet=True)
    if fn is None:
        return None

    def run(x0: np.ndarray, cols: np.ndarray, m: int) -> np.ndarray:
        N = cols.shape[1]
        out = np.empty((n, N))
        xk = np.asarray(x0, dtype=float)
        for start in range(0, N, CHUNK):
            stop = min(start + CHUNK, N)
            block = np.zeros((D, CHUNK))
            block[:, : stop - start] = cols[:, start:stop]
            X = np.array(fn(xk, block, float(m), float(stop - start)))
            out[:, start:stop] = X[:, : stop - start]
            xk = out[:, stop - 1]
        return out

    return run


# the RK4 loop; `rk<key>_f(x, tau, data) → h·ẋ` is the interval's right-hand side in normalised
# time, its stages as in RungeKutta.step: k2 at x + dt/2·k1, …, x + dt/6·(k1 + 2k2 + 2k3 + k4)
_SOURCE = """/* colloc: classical RK4 over up to {C} intervals */
#define casadi_real double
#define casadi_int long long int
#ifdef _WIN32
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif
int rk{key}_f(const casadi_real**, casadi_real**, casadi_int*, casadi_real*, int);
static const casadi_int s_x[3] = {{{n}, 1, 1}};
static const casadi_int s_d[3] = {{{D}, {C}, 1}};
static const casadi_int s_1[3] = {{1, 1, 1}};
static const casadi_int s_X[3] = {{{n}, {C}, 1}};
EXPORT void NAME_incref(void) {{}}
EXPORT void NAME_decref(void) {{}}
EXPORT const char* NAME_name_in(casadi_int i) {{
  return i == 0 ? "x0" : i == 1 ? "data" : i == 2 ? "steps" : i == 3 ? "count" : 0;
}}
EXPORT const char* NAME_name_out(casadi_int i) {{ return i == 0 ? "x" : 0; }}
EXPORT casadi_int NAME_n_in(void) {{ return 4; }}
EXPORT casadi_int NAME_n_out(void) {{ return 1; }}
EXPORT const casadi_int* NAME_sparsity_in(casadi_int i) {{
  return i == 0 ? s_x : i == 1 ? s_d : i == 2 || i == 3 ? s_1 : 0;
}}
EXPORT const casadi_int* NAME_sparsity_out(casadi_int i) {{ return i == 0 ? s_X : 0; }}
EXPORT int NAME_work(casadi_int* sz_arg, casadi_int* sz_res, casadi_int* sz_iw, casadi_int* sz_w) {{
  *sz_arg = {sz_arg}; *sz_res = {sz_res}; *sz_iw = {sz_iw}; *sz_w = {sz_w};
  return 0;
}}
EXPORT int NAME(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, int mem) {{
  const casadi_real *x0 = arg[0], *d = arg[1];
  casadi_int m = arg[2] ? (casadi_int)arg[2][0] : 1, count = arg[3] ? (casadi_int)arg[3][0] : 0;
  casadi_real *X = res[0];
  casadi_real *x = w, *k1 = w + {n}, *k2 = w + {n2}, *k3 = w + {n3}, *k4 = w + {n4}, *y = w + {n5};
  casadi_real *tau = w + {n6};
  const casadi_real** fa = arg + 4;
  casadi_real** fr = res + 1;
  casadi_real dt = 1.0 / m, t;
  casadi_int i, j, k;
  static const casadi_real zero[{D}];
  w += {n6} + 2;
  if (m < 1 || count > {C}) return 1;
  for (j = 0; j < {n}; ++j) x[j] = x0 ? x0[j] : 0;
  for (i = 0; i < count; ++i) {{
    fa[2] = d ? d + {D} * i : zero;
    for (k = 0; k < m; ++k) {{
      t = k * dt;
      tau[0] = t; fa[0] = x; fa[1] = tau; fr[0] = k1;
      if (rk{key}_f(fa, fr, iw, w, 0)) return 1;
      for (j = 0; j < {n}; ++j) y[j] = x[j] + dt / 2 * k1[j];
      tau[0] = t + dt / 2; fa[0] = y; fr[0] = k2;
      if (rk{key}_f(fa, fr, iw, w, 0)) return 1;
      for (j = 0; j < {n}; ++j) y[j] = x[j] + dt / 2 * k2[j];
      fr[0] = k3;
      if (rk{key}_f(fa, fr, iw, w, 0)) return 1;
      for (j = 0; j < {n}; ++j) y[j] = x[j] + dt * k3[j];
      tau[0] = t + dt; fr[0] = k4;
      if (rk{key}_f(fa, fr, iw, w, 0)) return 1;
      for (j = 0; j < {n}; ++j) x[j] = x[j] + dt / 6 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
    }}
    if (X) for (j = 0; j < {n}; ++j) X[{n} * i + j] = x[j];
  }}
  return 0;
}}
"""
