"""The n-link pendulum on a cart: constraint and Jacobian evaluation, colloc against opty.

The larger system of Moore & van den Bogert (2015, slides "Computational Speed"): 10 links
on a sliding cart, 11 DoF, 22 states, 22 unknown parameters, 10,000 collocation nodes (their
opty: 219,978 constraints, 14,518,548 Jacobian non-zeros, constraints in 33 ms, Jacobian in
128 ms on their machine). Both tools are built in this one process on the same data and
evaluated at the same seeded random point:

* **colloc**: ``colloc_problems.cart_pendulum`` (equations of motion derived by hand,
  implicit form M(q)·q̈ + h − Q), ``colloc.Midpoint()`` (the residual at the interval
  centre with the averaged states and (x₁ − x₀)/h), every state fitted, the cart force a
  known input, all 22 parameters unknown. Timed: the NLP's ``nlp_g`` (constraints) and
  ``nlp_jac_g`` (constraints and Jacobian, as IPOPT calls it) through CasADi's buffers into
  preallocated arrays: as ``Model()`` decides by default (``colloc-default``:
  ``compiled=None``, compiled when a C compiler is found and the problem is large, the
  choice printed), with the model interpreted by CasADi's virtual machine
  (``colloc``: ``Model(compiled=False)``), with its local functions compiled
  to C (``colloc-compiled``: ``Model(compiled=True)``: local functions of more than 100
  instructions compiled, the constraints and their Jacobian written in place by one C
  function, colloc.transcription.fused), and, as a diagnostic, with every local function
  compiled (``colloc-compiled-all``: that private threshold set to 0 for the build).
* **opty** (optional, imported only here): the same system written with
  ``sympy.physics.mechanics.KanesMethod`` (massless links with end particles, as opty's and
  PyDy's n-link-on-cart examples), the first-order implicit form
  [q̇ − u; M(q)·u̇ − forcing] = 0, ``integration_method="midpoint"`` (the same scheme; opty
  averages the known force over the interval, colloc reads it at the centre), the cart force
  a known trajectory. Timed: ``Problem.constraints`` and ``Problem.jacobian`` (what cyipopt
  calls). Code generation and C compilation (the ``Problem`` construction) and the SymPy
  derivation are reported separately.

Every timing is the median of ``--repeat`` calls after one warm-up call, the tools
interleaved call by call so that load from other processes falls on all; wall time (the
target) and this thread's CPU time (without the waits for a core that load adds, which
grow with a call's length) are both reported, with the ratios of each. The dynamics
block's local functions (defects, their Jacobian) are also timed alone, mapped over the
intervals, interpreted and compiled: the rest of ``nlp_jac_g`` is the NLP's assembly. The constraint
values of the tools are compared at the point (same rows up to colloc's row scaling
h/eq_scale) as a check that both evaluate the same equations.

    python benchmarks/cart_pendulum_vs_opty.py --out benchmarks/results/cart_pendulum_vs_opty.json
    python benchmarks/cart_pendulum_vs_opty.py --quick --out /tmp/cart.json   # 3 links, 200 nodes

Exit 0 whether or not the target is met (printed as PASS/FAIL and stored), 2 on bad usage.
If opty is not importable the script says ``opty not installed`` and times colloc alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the working tree's colloc and problems, not an installed copy
    sys.path.insert(0, str(ROOT))

#: The issue's target: colloc's evaluation time at most this fraction of opty's.
TARGET_RATIO = 1.0 / 3.0
#: Moore & van den Bogert (2015), slides "Computational Speed" (opty, their machine).
SLIDES = {"nodes": 10000, "constraints": 219978, "jacobian_nonzeros": 14518548, "free": 220022,
          "constraint_s": 0.033, "jacobian_s": 0.128}


def kane_cart_pendulum(n: int, bodies: str = "point"):
    """The n-link cart pendulum by SymPy's Kane's method, for opty (and as an independent
    check of colloc_problems.cart_pendulum).

    Returns a dict: ``q``, ``u`` (dynamicsymbols: cart position, absolute link angles from
    the upward vertical, clockwise; their rates), ``F`` (cart force), ``params`` (symbol by
    colloc's parameter name), ``mass_matrix`` and ``forcing`` (M·u̇ = forcing) and ``eom``,
    the implicit first-order form [q̇ − u; M·u̇ − forcing] opty takes.
    """
    import sympy as sm
    import sympy.physics.mechanics as me

    q = me.dynamicsymbols(f"q_0:{n + 1}")
    u = me.dynamicsymbols(f"u_0:{n + 1}")
    F = me.dynamicsymbols("F")
    g = sm.Symbol("g")
    m = sm.symbols(f"m_0:{n + 1}")
    l = sm.symbols(f"l_0:{n}")
    N = me.ReferenceFrame("N")
    origin = me.Point("O")
    origin.set_vel(N, 0)
    cart = origin.locatenew("C", q[0] * N.x)
    cart.set_vel(N, u[0] * N.x)
    items = [me.Particle("cart", cart, m[0])]
    loads = [(cart, F * N.x - m[0] * g * N.y)]
    joint = cart
    for i in range(n):
        frame = N.orientnew(f"B{i}", "Axis", (-q[i + 1], N.z))   # frame.y along link i
        frame.set_ang_vel(N, -u[i + 1] * N.z)
        tip = joint.locatenew(f"P{i + 1}", l[i] * frame.y)
        tip.v2pt_theory(joint, N, frame)
        if bodies == "point":
            items.append(me.Particle(f"p{i + 1}", tip, m[i + 1]))
            loads.append((tip, -m[i + 1] * g * N.y))
        else:
            centre = joint.locatenew(f"G{i + 1}", l[i] / 2 * frame.y)
            centre.v2pt_theory(joint, N, frame)
            izz = m[i + 1] * l[i] ** 2 / 12
            items.append(me.RigidBody(f"b{i + 1}", centre, frame, m[i + 1],
                                      (me.inertia(frame, izz, 0, izz), centre)))
            loads.append((centre, -m[i + 1] * g * N.y))
        joint = tip
    kane = me.KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=[qi.diff() - ui for qi, ui in zip(q, u)])
    kane.kanes_equations(items, loads)
    M, forcing = kane.mass_matrix, kane.forcing
    t = me.dynamicsymbols._t
    eom = sm.Matrix([qi.diff(t) - ui for qi, ui in zip(q, u)]
                    + list(M * sm.Matrix([ui.diff(t) for ui in u]) - forcing))
    params = {"g": g, **{f"m_{k}": m[k] for k in range(n + 1)}, **{f"l_{i}": l[i] for i in range(n)}}
    return {"q": q, "u": u, "F": F, "params": params, "mass_matrix": M, "forcing": forcing, "eom": eom}


def sympy_form(n: int, bodies: str = "point"):
    """The dynamic rows M·u̇ − forcing of :func:`kane_cart_pendulum` as a ``form`` for
    ``colloc_problems.cart_pendulum.model``: SymPy's expressions, with their common
    subexpressions eliminated by SymPy (as opty's code generation does), evaluated on
    CasADi symbols. colloc then evaluates exactly what opty evaluates."""
    import casadi as ca
    import sympy as sm

    sym = kane_cart_pendulum(n, bodies)
    q, u, ud = (sm.symbols(f"{k}_0:{n + 1}") for k in ("sq", "su", "sud"))
    F = sm.Symbol("sF")
    plain = {**dict(zip(sym["q"], q)), **dict(zip(sym["u"], u)), sym["F"]: F}
    rows = sym["mass_matrix"] * sm.Matrix(ud) - sym["forcing"]
    rows = [r.xreplace(plain) for r in rows]
    p = sym["params"]
    args = [*q, *u, *ud, p["g"], *(p[f"m_{k}"] for k in range(n + 1)), *(p[f"l_{i}"] for i in range(n)), F]
    fn = sm.lambdify(args, rows, modules=[{"sin": ca.sin, "cos": ca.cos, "sqrt": ca.sqrt}], cse=True)

    def form(q_, u_, qdd_, g, m, l, force):
        return fn(*q_, *u_, *qdd_, g, *m, *l, force)
    return form


def _point(n: int, true: dict[str, float], seed: int):
    """A seeded random point (physical units): states (2n + 2, N) and parameters by name."""
    rng = np.random.default_rng(seed + 1)

    def states(N):
        X = np.empty((2 * n + 2, N))
        X[0] = rng.uniform(-1.0, 1.0, N)
        X[1 : n + 1] = np.pi + rng.uniform(-0.5, 0.5, (n, N))
        X[n + 1 :] = rng.uniform(-2.0, 2.0, (n + 1, N))
        return X

    params = {k: v * rng.uniform(0.8, 1.2) for k, v in true.items()}
    return states, params


def _median_time(call, repeat: int) -> float:
    call()
    return float(np.median([_timed(call) for _ in range(repeat)]))


def _timed(call) -> float:
    t = time.perf_counter()
    call()
    return time.perf_counter() - t


def _timed_both(call) -> tuple[float, float]:
    """Wall and CPU time of this thread for one call (the CPU time leaves out the time the
    thread waited for a core: other processes' load)."""
    t, c = time.perf_counter(), time.thread_time()
    call()
    return time.perf_counter() - t, time.thread_time() - c


def _buffered(function, inputs: list[np.ndarray]):
    """``function`` bound to NumPy inputs and freshly allocated outputs: (evaluate, outputs)."""
    buf, evaluate = function.buffer()
    inputs = [np.ascontiguousarray(a, dtype=float).ravel(order="F") for a in inputs]
    outputs = [np.empty(function.nnz_out(i)) for i in range(function.n_out())]
    for i, a in enumerate(inputs):
        buf.set_arg(i, memoryview(a))
    for i, out in enumerate(outputs):
        buf.set_res(i, memoryview(out))

    def call(_keep=(buf, inputs)):
        evaluate()
        return outputs
    return call, outputs


class _CollocEval:
    """colloc's NLP of the problem, evaluated through CasADi buffers into NumPy arrays."""

    def __init__(self, problem, states: np.ndarray, state_names: list[str], params: dict[str, float],
                 compile_every: bool = False):
        import colloc as co
        import colloc.transcription.nlp as nlp_module
        from colloc.transcription.collocation import transcribe

        t0 = time.perf_counter()
        layout, self.blocks, *_ = transcribe(problem, co.Midpoint())
        # diagnostic: colloc compiles only local functions above a size threshold (private)
        threshold = nlp_module._COMPILE_ABOVE
        nlp_module._COMPILE_ABOVE = 0 if compile_every else threshold
        try:
            self.nlp = nlp_module.NLP(layout.size, self.blocks, hessian=co.Ipopt().hessian, residual_jacobian=False)
        finally:
            nlp_module._COMPILE_ABOVE = threshold
        self.build_s = time.perf_counter() - t0
        # the point in colloc's layout (scaled): states node by node, then the parameters
        w = np.zeros(layout.size)
        zi = layout.z_index(0)
        for j, s in enumerate(problem.model.element_names("state")):
            w[zi[j]] = states[state_names.index(s)]
        w[layout.p_index] = [params[p] for p in layout.param_names]
        self.x = w / layout.scale
        self.constraints, _ = _buffered(self.nlp.functions["g"], [self.x, self.nlp.data])
        self.jacobian, (_, jac) = _buffered(self.nlp.functions["jac_g"], [self.x, self.nlp.data])
        self.jac_nnz = int(jac.size)

    def breakdown(self, repeat: int) -> dict:
        """Where ``nlp_jac_g``'s time goes: the dynamics block's local functions (defects and
        their Jacobian) mapped over the intervals alone, interpreted by CasADi's virtual
        machine and compiled to C (whatever their size); the rest of ``nlp_jac_g`` is the
        NLP's assembly (gathering the local variables, scattering the local Jacobians into
        the global pattern)."""
        import dataclasses

        from colloc.base.compiler import compiled_all
        from colloc.transcription.nlp import _Local

        block = dataclasses.replace(next(b for b in self.blocks if b.num_rows), compiled=False)
        loc = _Local(block, "limited-memory")
        V = self.x[block.index]
        out = {"block": block.name, "intervals": block.count, "local_jacobian_nonzeros": int(loc.jac_sp.nnz()),
               "instructions": {"defects": int(loc.eval.n_instructions()), "jacobian": int(loc.jac.n_instructions())}}
        for key, (f_eval, f_jac) in (("interpreted", (loc.eval, loc.jac)),
                                     ("compiled", compiled_all([loc.eval, loc.jac]))):
            calls = {name: _buffered(f.map(block.count), [V, block.data])[0]
                     for name, f in (("defects", f_eval), ("jacobian", f_jac))}
            out[key] = {name: _median_time(call, repeat) for name, call in calls.items()}
        return out


def _build_opty(n: int, bodies: str, N: int, h: float, force: np.ndarray, measured: np.ndarray):
    import opty

    t0 = time.perf_counter()
    sym = kane_cart_pendulum(n, bodies)
    eom_s = time.perf_counter() - t0
    states = tuple(sym["q"]) + tuple(sym["u"])

    def obj(free):
        r = free[: measured.size] - measured.ravel()
        return h * float(r @ r)

    def obj_grad(free):
        grad = np.zeros_like(free)
        grad[: measured.size] = 2.0 * h * (free[: measured.size] - measured.ravel())
        return grad

    t0 = time.perf_counter()
    prob = opty.Problem(obj, obj_grad, sym["eom"], states, N, h,
                        known_trajectory_map={sym["F"]: force}, integration_method="midpoint")
    build_s = time.perf_counter() - t0
    names = {v: k for k, v in sym["params"].items()}
    order = [names[s] for s in prob.collocator.unknown_parameters]
    ops = int(sum(sm_count_ops(e) for e in sym["eom"]))
    return prob, order, {"eom_s": eom_s, "build_s": build_s, "eom_operations": ops,
                         "num_constraints": int(prob.num_constraints), "num_free": int(prob.num_free),
                         "jacobian_nonzeros": int(len(prob.jacobianstructure()[0]))}


def sm_count_ops(expr) -> int:
    import sympy as sm

    return int(sm.count_ops(expr))


def _machine() -> dict:
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "python": platform.python_version()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--links", type=int, help="number of links n (default 10, 3 with --quick)")
    parser.add_argument("--nodes", type=int, help="collocation nodes N (default 10000, 200 with --quick)")
    parser.add_argument("--bodies", choices=("point", "rod"), default="point",
                        help="end particles on massless links (default, as the slides) or uniform rods")
    parser.add_argument("--form", choices=("recursive", "lagrange", "sympy"), default="recursive",
                        help="how colloc's model computes the residual (the same equations): O(n) sums "
                             "(default), the O(n²) mass-matrix form, or opty's SymPy expressions "
                             "(Kane's method, SymPy's common subexpressions) evaluated by CasADi")
    parser.add_argument("--repeat", type=int, default=15, help="timed calls per function (default 15)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="3 links, 200 nodes, 5 calls (smoke test)")
    parser.add_argument("--no-opty", action="store_true", help="time colloc alone")
    parser.add_argument("--no-compiled", action="store_true", help="skip colloc's compiled variant")
    parser.add_argument("--out", type=Path, help="write the JSON result here (atomically)")
    args = parser.parse_args(argv)
    n = args.links if args.links is not None else (3 if args.quick else 10)
    N = args.nodes if args.nodes is not None else (200 if args.quick else 10000)
    repeat = 5 if args.quick and args.repeat == 15 else args.repeat
    if n < 1 or N < 3 or repeat < 1:
        parser.error("--links must be >= 1, --nodes >= 3, --repeat >= 1")

    import colloc as co
    from colloc_problems import cart_pendulum as cp

    opty_version = None
    if not args.no_opty:
        try:
            import opty
            opty_version = opty.__version__
        except ImportError as exc:
            print(f"opty not installed ({exc}); timing colloc alone")
    rate = 100.0
    h = 1.0 / rate
    load = [os.getloadavg()[0]]
    t0 = time.perf_counter()
    trial = cp.simulate_trial(n, args.bodies, num_samples=N, rate=rate, seed=args.seed,
                              noise_std=0.01, compiled=N * n > 20000)
    data_s = time.perf_counter() - t0
    state_names = [f"q_{i}" for i in range(n + 1)] + [f"u_{i}" for i in range(n + 1)]
    force = np.asarray(trial.signals["F"], dtype=float)
    measured = np.stack([np.asarray(trial.signals[s], dtype=float) for s in state_names])
    states_at, params = _point(n, cp.true_parameters(n), args.seed)
    X = states_at(N)
    print(f"{n}-link cart pendulum ({args.bodies}), {N} nodes at {rate:g} Hz; data simulated in {data_s:.1f} s")

    tools: dict[str, dict] = {}
    evaluators: dict[str, tuple] = {}
    # (name, Model(compiled=...), compile every local function whatever its size)
    variants = [("colloc-default", None, False), ("colloc", False, False)]
    if not args.no_compiled:
        variants += [("colloc-compiled", True, False), ("colloc-compiled-all", True, True)]
    for name, compiled, every in variants:
        form = sympy_form(n, args.bodies) if args.form == "sympy" else args.form
        problem = cp.problem([trial], n, args.bodies, form=form, compiled=compiled)
        ev = _CollocEval(problem, X, state_names, params, compile_every=every)
        build_s = ev.build_s
        evaluators[name] = (ev.constraints, ev.jacobian)
        tools[name] = {"build_s": build_s, "num_constraints": int(ev.nlp.num_rows),
                       "num_free": int(ev.nlp.num_variables), "jacobian_nonzeros": ev.jac_nnz,
                       "compiled": compiled, "compile_note": ev.nlp.compile_note, "compile_s": ev.nlp.compile_s,
                       "compile_every_local_function": every, "form": args.form,
                       "eq_scale": problem.model.equation_scales.tolist()}
        tools[name]["_ev"] = ev
        print(f"  {name}: NLP built in {build_s:.2f} s, {ev.nlp.compile_note} ({ev.nlp.num_rows} constraints, "
              f"{ev.jac_nnz} Jacobian non-zeros)")
    if opty_version:
        prob, order, info = _build_opty(n, args.bodies, N, h, force, measured)
        free = np.concatenate([X.ravel(), [params[p] for p in order]])
        evaluators["opty"] = (lambda: prob.constraints(free), lambda: prob.jacobian(free))
        tools["opty"] = info
        print(f"  opty: SymPy Kane's method {info['eom_s']:.1f} s, Problem (code generation and "
              f"compilation) {info['build_s']:.1f} s ({info['num_constraints']} constraints, "
              f"{info['jacobian_nonzeros']} Jacobian non-zeros, {info['eom_operations']} operations "
              "in the equations of motion)")

    # the same equations: opty's rows are equation-major over the N − 1 intervals, colloc's
    # interval-major and multiplied by h / eq_scale; opty averages F over the interval, colloc
    # reads it at the centre, so the cart row (row n + 1) differs by that alone
    check = {}
    if "opty" in evaluators:
        ref = np.asarray(evaluators["opty"][0](), dtype=float).reshape(2 * n + 2, N - 1)
        for name, *_ in variants:
            ev = tools[name]["_ev"]
            mine = ev.constraints()[0].reshape(N - 1, 2 * n + 2).T * (np.asarray(tools[name]["eq_scale"])[:, None] / h)
            diff = np.abs(mine - ref)
            others = np.delete(np.arange(2 * n + 2), n + 1)
            check[name] = {"max_abs_diff_except_cart_row": float(diff[others].max()),
                           "max_abs_constraint": float(np.abs(ref).max()),
                           "max_abs_diff_cart_row": float(diff[n + 1].max())}
            print(f"  check {name} vs opty at the point: max |Δ| {check[name]['max_abs_diff_except_cart_row']:.2e} "
                  f"(rows up to {check[name]['max_abs_constraint']:.1f}); cart row (force at the centre "
                  f"vs averaged) {check[name]['max_abs_diff_cart_row']:.2e}")

    # timings: one warm-up call each, then the tools interleaved call by call
    for g_call, j_call in evaluators.values():
        g_call(), j_call()
    samples = {name: {k: [] for k in ("constraints", "jacobian", "constraints_cpu", "jacobian_cpu")}
               for name in evaluators}
    load.append(os.getloadavg()[0])
    for _ in range(repeat):
        for name, (g_call, j_call) in evaluators.items():
            for key, call in (("constraints", g_call), ("jacobian", j_call)):
                wall, cpu = _timed_both(call)
                samples[name][key].append(wall)
                samples[name][f"{key}_cpu"].append(cpu)
    load.append(os.getloadavg()[0])
    breakdown = tools["colloc"]["_ev"].breakdown(repeat)
    load.append(os.getloadavg()[0])
    for name, s in samples.items():
        tools[name]["constraint_s"] = float(np.median(s["constraints"]))
        tools[name]["jacobian_s"] = float(np.median(s["jacobian"]))
        tools[name]["constraint_cpu_s"] = float(np.median(s["constraints_cpu"]))
        tools[name]["jacobian_cpu_s"] = float(np.median(s["jacobian_cpu"]))
        tools[name]["constraint_samples_s"] = s["constraints"]
        tools[name]["jacobian_samples_s"] = s["jacobian"]
        tools[name]["constraint_cpu_samples_s"] = s["constraints_cpu"]
        tools[name]["jacobian_cpu_samples_s"] = s["jacobian_cpu"]
        tools[name].pop("_ev", None)

    print(f"\nmedians of {repeat} calls (1-min load average {min(load):.2f}–{max(load):.2f}):")
    print(f"{'':18s}{'constraints ms':>16s}{'Jacobian ms':>14s}{'(CPU ms)':>18s}{'Jac nnz':>12s}{'build s':>10s}")
    for name, t in tools.items():
        print(f"{name:18s}{1e3 * t['constraint_s']:16.2f}{1e3 * t['jacobian_s']:14.2f}"
              f"{1e3 * t['constraint_cpu_s']:9.2f}{1e3 * t['jacobian_cpu_s']:9.2f}"
              f"{t['jacobian_nonzeros']:12d}{t['build_s']:10.2f}")
    b = breakdown
    parts = "; ".join(f"{key}: defects {1e3 * b[key]['defects']:.2f} ms, Jacobian {1e3 * b[key]['jacobian']:.2f} ms"
                      for key in ("interpreted", "compiled"))
    print(f"colloc's local functions alone, mapped over the {b['intervals']} intervals ({b['instructions']['defects']} "
          f"and {b['instructions']['jacobian']} instructions, {b['local_jacobian_nonzeros']} Jacobian non-zeros "
          f"per interval): {parts}")
    ratios, targets = {}, {}
    if "opty" in tools:
        for name, *_ in variants:
            ratios[name] = {k: tools[name][f"{k}_s"] / tools["opty"][f"{k}_s"] for k in ("constraint", "jacobian")}
            ratios[name].update({f"{k}_cpu": tools[name][f"{k}_cpu_s"] / tools["opty"][f"{k}_cpu_s"]
                                 for k in ("constraint", "jacobian")})
            print(f"  {name}/opty: constraints {ratios[name]['constraint']:.3f}, Jacobian {ratios[name]['jacobian']:.3f}"
                  f" (CPU time: {ratios[name]['constraint_cpu']:.3f}, {ratios[name]['jacobian_cpu']:.3f})")
            targets[f"{name}_within_one_third_of_opty"] = all(ratios[name][k] <= TARGET_RATIO
                                                              for k in ("constraint", "jacobian"))
        note = "" if (n, N) == (10, 10000) else "the target refers to 10 links at 10,000 nodes; shown as is"
        print("targets (issue):" + (f" {note}" if note else ""))
        for k, v in targets.items():
            print(f"  {k:45s} {'PASS' if v else 'FAIL'}")
    doc = {
        "benchmark": "cart_pendulum_vs_opty",
        "config": {"links": n, "nodes": N, "bodies": args.bodies, "rate_hz": rate, "repeat": repeat,
                   "seed": args.seed, "quick": args.quick, "colloc_method": "midpoint",
                   "opty_integration_method": "midpoint" if opty_version else None,
                   "command": [Path(sys.argv[0]).name, *(sys.argv[1:] if argv is None else argv)]},
        "versions": {**co.versions(), "opty": opty_version},
        "machine": _machine(), "load_average_1min": load,
        "opty": "installed" if opty_version else ("skipped" if args.no_opty else "not installed"),
        "data_s": data_s, "tools": tools, "local_functions": breakdown, "ratios": ratios, "targets": targets,
        "constraint_check": check, "slides_opty_2015": SLIDES,
    }
    if opty_version:
        import cyipopt
        import sympy
        doc["versions"].update({"cyipopt": cyipopt.__version__, "sympy": sympy.__version__})
    if args.out:
        co.write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
