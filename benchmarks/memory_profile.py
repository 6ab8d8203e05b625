"""Where the memory of `colloc identify two-link` goes: resident memory phase by phase.

    python benchmarks/memory_profile.py [--nodes 60001] [--method radau2] [--out FILE.json]
    python benchmarks/memory_profile.py --quick --out /tmp/m.json     # 1,201 nodes

The two-link seed case (as benchmarks/whole_command.py: CONTRACTS §2, seed 0, made longer)
is written as a CSV file and taken through the steps of the command in this one process:
imports, reading the file, transcription, the NLP's assembly (colloc.transcription.nlp),
IPOPT's ``nlpsol``, the solve, the solver freed, and the residual functions (built on
first use, after the solve). After each step the script reports the
resident memory (RSS), the RSS after ``malloc_trim`` (memory the step still holds: glibc
keeps freed blocks), and the peak so far (``ru_maxrss``). It also reports what each NLP
function holds (the retained RSS freed by dropping it) and its work vector (``sz_w``: the
largest one is allocated by ``nlpsol``). The step costs are the differences of these
figures. Linux only (``/proc/self/statm``, glibc's ``malloc_trim``). It reports, it never
asserts.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

try:  # run as a script (benchmarks/ on the path) or imported as benchmarks.NAME
    from _report import write_report
except ImportError:
    from benchmarks._report import write_report

ROOT = Path(__file__).resolve().parents[1]


class Meter:
    """RSS, trimmed RSS and peak RSS (MB) at named steps."""

    def __init__(self) -> None:
        self.libc = ctypes.CDLL("libc.so.6")
        self.rows: list[dict] = []

    @staticmethod
    def rss() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    def trimmed(self) -> float:
        gc.collect()
        self.libc.malloc_trim(0)
        return self.rss()

    def mark(self, step: str, seconds: float | None = None) -> None:
        rss = self.rss()
        row = {"step": step, "rss_mb": rss, "held_mb": self.trimmed(),
               "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "seconds": seconds}
        self.rows.append(row)
        print(f"{step:28s} RSS {row['rss_mb']:7.0f} MB   held {row['held_mb']:7.0f} MB   "
              f"peak {row['peak_mb']:7.0f} MB" + (f"   {seconds:6.1f} s" if seconds is not None else ""), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=60001)
    ap.add_argument("--method", default=None, help="collocation method name (default: the command's)")
    ap.add_argument("--quick", action="store_true", help="1,201 nodes")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "memory_profile.json"))
    ap.add_argument("--ipopt", action="append", default=[], metavar="KEY=VALUE",
                    help="a further IPOPT option (repeatable), e.g. mumps_mem_percent=5")
    args = ap.parse_args(argv)
    extra = {}
    for item in args.ipopt:
        key, sep, value = item.partition("=")
        if not sep or not key:
            ap.error(f"--ipopt: expected KEY=VALUE, got {item!r}")
        for cast in (int, float):
            try:
                value = cast(value)
                break
            except ValueError:
                pass
        extra[key.strip()] = value
    nodes = 1201 if args.quick else args.nodes
    if nodes < 101:
        ap.error("--nodes: at least 101")
    meter = Meter()
    meter.mark("start")
    import numpy as np

    import colloc as co
    from colloc.studies.identify import DEFAULT_METHOD, make_method
    from colloc.transcription.collocation import transcribe
    from colloc.transcription.nlp import NLP
    from colloc_problems import two_link as tl
    meter.mark("imports")
    method_name = args.method or DEFAULT_METHOD
    with tempfile.TemporaryDirectory(prefix="colloc-memory-") as tmp:
        csv = Path(tmp) / "two_link.csv"
        tl.simulate_trial(duration=(nodes - 1) / 100.0, seed=0).to_csv(csv)
        gc.collect()
        t = time.perf_counter()
        problem = tl.problem(tl.load_trial(csv))
        meter.mark("file read", time.perf_counter() - t)
    t = time.perf_counter()
    layout, blocks, x0, lbx, ubx = transcribe(problem, make_method(method_name))
    meter.mark("transcription", time.perf_counter() - t)
    solver = co.Ipopt(extra=extra or None)
    t = time.perf_counter()
    nlp = NLP(layout.size, blocks, hessian=solver.hessian, objective_scale=1.0 / max(problem.num_observations, 1),
              residual_jacobian=solver.standard_errors)
    meter.mark("NLP assembled", time.perf_counter() - t)
    functions = {k: {"work_mb": f.sz_w() * 8 / 2**20, "outputs_nnz": [int(f.nnz_out(i)) for i in range(f.n_out())]}
                 for k, f in nlp.functions.items()}
    t = time.perf_counter()
    nlpsol = nlp.solver(solver.nlpsol_options())
    meter.mark("nlpsol", time.perf_counter() - t)
    t = time.perf_counter()
    sol = nlpsol(x0=x0, p=nlp.data, lbx=lbx, ubx=ubx, lbg=nlp.lbg, ubg=nlp.ubg)
    meter.mark("solved", time.perf_counter() - t)
    stats = nlpsol.stats()
    iterations = int(stats.get("iter_count", 0))
    status = str(stats.get("return_status", "unknown"))
    print(f"IPOPT: {status}, {iterations} iterations")
    # the time of one IPOPT call of each NLP function (CasADi's own counters)
    calls = {k[len("n_call_"):]: {"calls": int(v), "ms_per_call": 1e3 * stats["t_proc_" + k[len("n_call_"):]] / v}
             for k, v in stats.items() if k.startswith("n_call_nlp_") and v}
    for k, v in calls.items():
        print(f"{k:14s}{v['calls']:6d} calls {v['ms_per_call']:9.2f} ms a call (CPU)")
    _, params = layout.unpack(np.asarray(sol["x"]).ravel())
    estimates = dict(zip(layout.param_names, params.tolist()))
    print("estimates:", "  ".join(f"{k} {v:.10g}" for k, v in estimates.items()))
    del sol, nlpsol
    meter.mark("solver freed")
    t = time.perf_counter()
    for k in ("res", "jac_res"):  # built on first use, after the solve (as the command does)
        if k in nlp.functions:
            f = nlp.functions[k]
            functions[k] = {"work_mb": f.sz_w() * 8 / 2**20, "outputs_nnz": [int(f.nnz_out(i)) for i in range(f.n_out())]}
    meter.mark("residual functions", time.perf_counter() - t)
    # what each NLP function holds: the memory freed by dropping it (shared nodes count once)
    before = meter.trimmed()
    for k in list(nlp.functions):
        nlp.functions.pop(k)
        now = meter.trimmed()
        functions[k]["held_mb"] = before - now
        before = now
    print(f"{'NLP function':14s}{'held MB':>9s}{'work MB':>9s}  output nonzeros")
    for k, v in functions.items():
        print(f"{k:14s}{v.get('held_mb', float('nan')):9.1f}{v['work_mb']:9.1f}  {v['outputs_nnz']}")
    write_report(args.out, {"nodes": nodes, "method": method_name, "variables": int(layout.size),
                            "constraints": int(nlp.num_rows), "iterations": iterations, "status": status, "ipopt": extra,
                            "calls": calls, "estimates": estimates,
                            "steps": meter.rows, "functions": functions,
                            "blocks": [{"name": b.name, "count": int(b.count), "local": int(b.num_local),
                                        "rows": int(b.num_rows), "residuals": int(b.num_res)} for b in blocks]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
