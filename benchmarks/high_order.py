"""High-order transcriptions: measured order of convergence, accuracy at 100 Hz, and cost.

(a) Order: the pendulum θ'' = −p sin θ from θ = 1, ω = 0 over 1 s; the collocation equations
    of each method are solved by Newton on grids of N intervals (the data play no part), and
    the error of the end state against scipy's DOP853 at 1e-13 gives the observed order
    (log–log slope).  Figure: error against step, one line per method.
(b) Accuracy: a clean 100 Hz two-link record made here by scipy (DOP853, 1e-12) with other
    gains and excitation than the seed case; worst relative gain error per method, with the
    platform acceleration as errors-in-variables (the default) and as exact.
(c) Cost: each method on the shipped seed case (6,001 samples at 100 Hz) in a fresh process:
    build, solve, iterations, covariance, whole-solve wall time and peak memory
    (``ru_maxrss``), and their ratios to the midpoint rule.

    python benchmarks/high_order.py                     # all three, writes high_order.json/png
    python benchmarks/high_order.py --quick --out DIR   # small grids and a 4 s record
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import colloc as co
from colloc.transcription.collocation import transcribe
from colloc.transcription.nlp import NLP
from colloc_problems import pendulum
from colloc_problems import two_link as tl

METHODS = {
    "midpoint": "co.Midpoint()",
    "trapezoidal": "co.Trapezoidal()",
    "hermite-simpson": "co.HermiteSimpson()",
    "radau2": "co.Radau(degree=2)",
    "radau3": "co.Radau(degree=3)",
}


def _method(name: str):
    return eval(METHODS[name], {"co": co})  # noqa: S307  (fixed strings above)


def end_state_error(method, N: int, reference) -> float:
    model = pendulum.model()
    t = np.linspace(0.0, 1.0, N + 1)
    problem = co.Problem(model, co.Trial(t, {"theta": np.zeros(t.size)}), fit={"theta": 1.0})
    layout, blocks, *_ = transcribe(problem, method)
    nlp = NLP(layout.size, blocks)
    idx = layout.z_index(0)
    free = idx[:, 1:].ravel()
    w = np.zeros(layout.size)
    w[idx] = reference(layout.nodes[0]) / layout.scale[idx]
    w[idx[:, 0]] = np.array([1.0, 0.0]) / layout.scale[idx[:, 0]]
    w[layout.p_index] = pendulum.TRUE["p"] / layout.scale[layout.p_index]
    for _ in range(30):
        g, J = nlp.functions["jac_g"](w, nlp.data)
        step = np.linalg.solve(J.full()[: free.size, free], -np.array(g).ravel()[: free.size])
        w[free] += step
        if np.abs(step).max() < 1e-14:
            break
    return float(np.linalg.norm((w * layout.scale)[idx[:, -1]] - reference(np.array([1.0])).ravel()))


def order_study(grids) -> dict:
    p = pendulum.TRUE["p"]
    ref = solve_ivp(lambda t, s: [s[1], -p * np.sin(s[0])], (0, 1.0), [1.0, 0.0], method="DOP853",
                    rtol=1e-13, atol=1e-13, dense_output=True).sol
    out = {}
    for name in METHODS:
        method = _method(name)
        Ns = grids["high"] if method.order >= 4 else grids["low"]
        errors = [end_state_error(method, N, ref) for N in Ns]
        slope = float(np.polyfit(np.log(1.0 / np.asarray(Ns)), np.log(errors), 1)[0])
        out[name] = {"declared_order": method.order, "observed_order": slope, "N": list(Ns), "errors": errors}
    return out


def accuracy_study(duration: float) -> dict:
    K = np.array([[820.0, 210.0, 160.0, 60.0], [60.0, 250.0, 70.0, 30.0]])
    acc, _ = tl.excitation(7)
    b = tl.BODY
    lL, dL, dT, mL, mT, IL, IT, g = (b[k] for k in ("l_L", "d_L", "d_T", "m_L", "m_T", "I_L", "I_T", "g"))

    def rhs(t, x):  # docs/contracts.md §2 in numpy
        qa, qh, wa, wh = x
        a = acc(t)
        Ta, Th = -(K @ x)
        M = np.array([[IL + IT + dL**2 * mL + mT * (dT**2 + 2 * dT * lL * np.cos(qh) + lL**2),
                       IT + dT * mT * (dT + lL * np.cos(qh))],
                      [IT + dT * mT * (dT + lL * np.cos(qh)), IT + dT**2 * mT]])
        F = np.array([
            Ta + a * dL * mL * np.cos(qa) + a * dT * mT * np.cos(qa + qh) + a * lL * mT * np.cos(qa)
            + dL * g * mL * np.sin(qa) + dT * g * mT * np.sin(qa + qh)
            + 2 * dT * lL * mT * wa * wh * np.sin(qh) + dT * lL * mT * wh**2 * np.sin(qh) + g * lL * mT * np.sin(qa),
            Th + a * dT * mT * np.cos(qa + qh) + dT * g * mT * np.sin(qa + qh) - dT * lL * mT * wa**2 * np.sin(qh),
        ])
        return np.concatenate([[wa, wh], np.linalg.solve(M, F)])

    t = np.arange(int(duration * 100) + 1) / 100
    y = solve_ivp(rhs, (0, duration), np.zeros(4), t_eval=t, method="DOP853", rtol=1e-12, atol=1e-12).y
    trial = co.Trial(t, {**{n: y[i] for i, n in enumerate(tl.STATE_NAMES)}, "platform_acc": acc(t)})
    solver = co.Ipopt(simulate=False, standard_errors=False)
    out = {}
    for name in METHODS:
        for eiv in (True, False):
            r = co.solve(tl.problem(trial, errors_in_variables=eiv), _method(name), solver=solver, throw=False,
                         verdict=False)
            worst = max(abs(r.parameters[f"k_{i}{j}"] / K[i, j] - 1) for i in range(2) for j in range(4))
            out.setdefault(name, {})["eiv" if eiv else "exact_input"] = worst
    return out


_COST = """
import json, resource, sys, time
import colloc as co
from colloc_problems import two_link as tl
trial = tl.load_trial(sys.argv[1])
t0 = time.perf_counter()
r = co.solve(tl.problem(trial), {method}, throw=False)
wall = time.perf_counter() - t0
print(json.dumps({{"build_s": r.timings["build_s"], "solve_s": r.timings["solve_s"], "iterations": r.iterations,
                  "covariance_s": r.info.get("covariance_s"), "wall_s": wall, "nodes": r.num_nodes,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def cost_study(path: str, repeat: int) -> dict:
    out = {}
    for _ in range(repeat):  # interleaved, so that drift of the machine hits every method alike
        for name, expr in METHODS.items():
            proc = subprocess.run([sys.executable, "-c", _COST.format(method=expr), path], capture_output=True,
                                  text=True, check=True)
            out.setdefault(name, []).append(json.loads(proc.stdout.strip().splitlines()[-1]))
    table = {}
    for name, runs in out.items():
        table[name] = {k: float(np.median([r[k] for r in runs])) for k in runs[0] if runs[0][k] is not None}
    base = table["midpoint"]
    for name, row in table.items():
        row["total_ratio"] = (row["build_s"] + row["solve_s"]) / (base["build_s"] + base["solve_s"])
        row["wall_ratio"] = row["wall_s"] / base["wall_s"]
        row["memory_ratio"] = row["peak_mib"] / base["peak_mib"]
    return table


def plot(order: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for name, row in order.items():
        h = 1.0 / np.asarray(row["N"])
        ax.loglog(h, row["errors"], "o-", label=f"{name}: order {row['observed_order']:.2f} "
                                                f"(declared {row['declared_order']})")
    ax.set_xlabel("step h (s)")
    ax.set_ylabel("end-state error")
    ax.set_title("pendulum, 1 s: error against step")
    ax.legend(fontsize=7)
    fig.tight_layout()
    co.save_figure(fig, path)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small grids, a 4 s record, a 1,001-sample cost case")
    ap.add_argument("--out", default=".", help="folder for high_order.json and high_order.png")
    ap.add_argument("--repeat", type=int, default=3, help="cost runs per method (medians)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    grids = {"low": [10, 20, 40], "high": [4, 8, 16]} if args.quick else {"low": [20, 40, 80, 160],
                                                                          "high": [6, 12, 24, 48]}
    order = order_study(grids)
    accuracy = accuracy_study(4.0 if args.quick else 20.0)
    if args.quick:
        short = tl.simulate_trial(duration=10.0, seed=2, name="quick.csv")
        case = str(out / "quick.csv")
        short.to_csv(case)
    else:
        from colloc_problems._data import data_path

        case = str(data_path("two_link", "two_link_seed.csv"))
    cost = cost_study(case, 1 if args.quick else args.repeat)
    print(f"{'method':16} {'order':>7} {'observed':>9} {'EIV err':>9} {'exact err':>9} {'build+solve':>12} "
          f"{'iters':>5} {'wall':>7} {'×time':>6} {'×mem':>6}")
    for name in METHODS:
        o, a, c = order[name], accuracy[name], cost[name]
        print(f"{name:16} {o['declared_order']:>7} {o['observed_order']:>9.2f} {100 * a['eiv']:>8.4f}% "
              f"{100 * a['exact_input']:>8.4f}% {c['build_s'] + c['solve_s']:>11.2f}s {c['iterations']:>5.0f} "
              f"{c['wall_s']:>6.2f}s {c['total_ratio']:>6.2f} {c['memory_ratio']:>6.2f}")
    doc = {"order": order, "accuracy_100Hz": accuracy, "cost": cost, "cost_case": case,
           "versions": co.versions(), "elapsed_s": time.perf_counter() - t0,
           "self_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    co.write_atomic(out / "high_order.json", json.dumps(doc, indent=1) + "\n")
    plot(order, out / "high_order.png")
    print(f"written {out / 'high_order.json'} and {out / 'high_order.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
