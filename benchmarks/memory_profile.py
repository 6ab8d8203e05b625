"""Where the memory of `colloc identify two-link` goes: resident memory phase by phase.

    python benchmarks/memory_profile.py [--nodes 60001] [--method radau2] [--out FILE.json]
    python benchmarks/memory_profile.py --quick --out /tmp/m.json     # 1,201 nodes
    python benchmarks/memory_profile.py --breakdown [--trace] [--log FILE] --out /tmp/k.json

The two-link seed case (as benchmarks/whole_command.py: docs/contracts.md §2, seed 0, made longer)
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

``--breakdown`` takes the solve apart (the ``kkt`` section of the report): the KKT system's
size as IPOPT and MUMPS print it (variables, constraints, Jacobian and Hessian nonzeros, the
KKT matrix's order and nonzeros), MUMPS's factor (entries, real and integer space, largest
front, its estimated in-core and out-of-core memory, the memory it allocated and used:
INFOG(3)-(29)), and the RSS sampled every 10 ms by a second process while IPOPT runs (the
peak, when it comes, and the plateau between the factorisations).  IPOPT's output and
MUMPS's statistics go to ``--log`` (not the terminal).  ``--trace`` adds the native
allocations live at the solve's peak, by the library function that made them
(``benchmarks/alloc_trace.c``, compiled with the system's C compiler and preloaded; it
cannot see MUMPS's own allocations, which MUMPS reports itself).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import re
import resource
import signal
import subprocess
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


#: The second process that samples this one's RSS: every 10 ms until its stdin closes, then
#: it prints "seconds rss_mb" pairs (at most one every 50 ms, and the maximum's sample). It says
#: "ready" once its first sample is taken.
_SAMPLER = r"""
import os, sys, threading, time
path, page, t0 = f"/proc/{sys.argv[1]}/statm", os.sysconf("SC_PAGE_SIZE") / 2**20, time.perf_counter()
done, rows = threading.Event(), []
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
while not done.is_set():
    try:
        with open(path) as f:
            rows.append((time.perf_counter() - t0, int(f.read().split()[1]) * page))
    except OSError:
        break
    if len(rows) == 1:
        print("ready", flush=True)  # the first sample is taken: the parent may go on
    time.sleep(0.01)
top = max(range(len(rows)), key=lambda i: rows[i][1]) if rows else -1
last = -1.0
for i, (t, r) in enumerate(rows):
    if i == top or t - last >= 0.05:
        print(f"{t:.3f} {r:.1f}")
        last = t
"""


class RssSampler:
    """Samples this process's RSS from a second process (IPOPT holds the GIL while it runs)."""

    def __enter__(self) -> "RssSampler":
        self.proc = subprocess.Popen([sys.executable, "-c", _SAMPLER, str(os.getpid())],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.proc.stdout.readline()  # "ready": the sampler has taken its first sample (however busy the machine)
        self.series: list[tuple[float, float]] = []
        return self

    def __exit__(self, *exc) -> None:
        out, _ = self.proc.communicate("")
        self.series = [(float(a), float(b)) for a, b in (ln.split() for ln in out.split("\n") if ln.strip())]

    def summary(self) -> dict:
        """Peak RSS and its time; the series (seconds from the sampler's start, MB)."""
        if not self.series:
            return {"peak_mb": None, "peak_at_s": None, "series": []}
        t, r = max(self.series, key=lambda x: x[1])
        return {"peak_mb": r, "peak_at_s": t, "series": [[round(a, 3), round(b, 1)] for a, b in self.series]}


#: MUMPS's three ways of printing INFOG(i): " INFOG  (9) Real space for factors  =  433",
#: " ** Memory allocated, total in Mbytes  (INFOG(19)):  896" and, in the analysis's summary,
#: " -- (20) Number of entries in factors (estim.)  =  330"
_INFOG = (re.compile(r"INFOG\s*\(\s*(\d+)\s*\)[^=:\n]*[=:]\s*(-?\d+)\s*$"),
          re.compile(r"\(INFOG\((\d+)\)\)\s*:\s*(-?\d+)\s*$"),
          re.compile(r"^\s*--\s+\(\s*(\d+)\)[^=\n]*=\s*(-?\d+)\s*$"))
_IPOPT_SIZES = {"variables": "Total number of variables",
                "equality_constraints": "Total number of equality constraints",
                "inequality_constraints": "Total number of inequality constraints",
                "jacobian_nnz": "Number of nonzeros in equality constraint Jacobian",
                "inequality_jacobian_nnz": "Number of nonzeros in inequality constraint Jacobian",
                "hessian_nnz": "Number of nonzeros in Lagrangian Hessian"}


def parse_solver_log(text: str) -> dict:
    """The KKT system's size and MUMPS's factor statistics from IPOPT's output (print level
    >= 5) with MUMPS's statistics (``mumps_print_level`` >= 2).

    Returns ``ipopt`` (the sizes IPOPT prints), ``kkt_order`` and ``kkt_nnz`` (MUMPS's N and
    NNZ: the KKT matrix's lower triangle as IPOPT hands it over), ``factorizations`` (MUMPS
    factorisation calls) and ``infog``: each INFOG(i) printed, its LAST value (the analysis
    prints estimates, each factorisation the actuals; IPOPT refactorises with the same
    analysis, so they repeat).  Missing items are absent.
    """
    out: dict = {"ipopt": {}, "infog": {}, "factorizations": 0}
    for line in text.splitlines():
        for key, label in _IPOPT_SIZES.items():
            if line.startswith(label):
                out["ipopt"][key] = int(line.rsplit(":", 1)[1])
        m = re.search(r"with JOB, N, NNZ =\s*(-?\d+)\s+(\d+)\s+(\d+)", line)
        if m:
            out["kkt_order"], out["kkt_nnz"] = int(m.group(2)), int(m.group(3))
            out["factorizations"] += m.group(1) in ("2", "4", "5", "6")
        for rx in _INFOG:
            m = rx.search(line)
            if m:
                out["infog"][int(m.group(1))] = int(m.group(2))
                break
    return out


def kkt_breakdown(log: dict, nlp_held_mb: float, solve_peak_mb: float, between_mb: float | None) -> dict:
    """MB figures of the solve from the parsed log: the KKT matrix, MUMPS's factor, and what
    IPOPT with MUMPS adds over the built NLP (``between_mb``: the RSS between two
    factorisations, passed through)."""
    g, mb = log["infog"], 2.0**20
    out = {"nlp_held_mb": nlp_held_mb, "solve_peak_mb": solve_peak_mb,
           "over_nlp_mb": solve_peak_mb - nlp_held_mb, "between_factorisations_mb": between_mb}
    if "kkt_nnz" in log:
        # one triplet copy: int32 row and column, double value
        out["kkt_triplet_mb"] = log["kkt_nnz"] * (4 + 4 + 8) / mb
    if 9 in g and 10 in g:
        out["factor_real_mb"] = g[9] * 8 / mb      # INFOG(9): real space for factors (doubles)
        out["factor_int_mb"] = g[10] * 4 / mb      # INFOG(10): integer space (32-bit MUMPS_INT)
    for key, i in (("mumps_incore_estimate_mb", 17), ("mumps_allocated_mb", 19),
                   ("mumps_used_mb", 22), ("mumps_ooc_estimate_mb", 27)):
        if i in g:
            out[key] = float(g[i])
    if 29 in g:
        out["factor_entries"] = g[29]
    if 11 in g:
        out["max_front"] = g[11]
    return out


def traced(path: str) -> dict:
    """The tracer's report: MB in use at the window's peak and live MB per tag there."""
    head, tags = {}, []
    for line in Path(path).read_text().splitlines():
        parts = line.split("\t")
        if parts[0] == "tag":
            tags.append({"mb": int(parts[1]) / 2**20, "where": parts[2]})
        elif len(parts) == 2:
            head[parts[0] + "_mb"] = int(parts[1]) / 2**20
    tags.sort(key=lambda t: -t["mb"])
    return {**head, "tags": tags}


def _preload_tracer(argv: list[str]) -> None:
    """Re-run this script with benchmarks/alloc_trace.c compiled and preloaded (never returns)."""
    cc = os.environ.get("CC", "cc")
    lib = Path(tempfile.mkdtemp(prefix="colloc-alloctrace-")) / "alloc_trace.so"
    source = Path(__file__).with_name("alloc_trace.c")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(source), "-ldl", "-lpthread"], check=True)
    env = {**os.environ, "LD_PRELOAD": str(lib), "ALLOCTRACE_OUT": str(lib.with_suffix(".txt"))}
    os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *argv], env)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=60001)
    ap.add_argument("--method", default=None, help="collocation method name (default: the command's)")
    ap.add_argument("--quick", action="store_true", help="1,201 nodes")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "memory_profile.json"))
    ap.add_argument("--ipopt", action="append", default=[], metavar="KEY=VALUE",
                    help="a further IPOPT option (repeatable), e.g. mumps_mem_percent=5")
    ap.add_argument("--breakdown", action="store_true",
                    help="take the solve apart: KKT size, MUMPS's factor and memory, RSS over the solve")
    ap.add_argument("--trace", action="store_true",
                    help="with --breakdown: native allocations at the solve's peak (alloc_trace.c; Linux)")
    ap.add_argument("--log", default=None, help="with --breakdown: IPOPT's and MUMPS's output to this file")
    args = ap.parse_args(argv)
    if args.trace and not args.breakdown:
        ap.error("--trace: needs --breakdown")
    if args.trace and "ALLOCTRACE_OUT" not in os.environ:
        _preload_tracer(list(sys.argv[1:] if argv is None else argv))
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
    if args.breakdown:
        # MUMPS writes through gfortran's unit 6: unbuffered, so nothing is left in a buffer
        # when the descriptor is handed back (read when the IPOPT plugin loads libgfortran)
        os.environ.setdefault("GFORTRAN_UNBUFFERED_PRECONNECTED", "y")
        extra = {"print_level": 5, "mumps_print_level": 2, **extra}
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
    kkt = None
    if args.breakdown:
        from colloc.base.capture import capture_native_output
        held_before = meter.rows[-1]["held_mb"]
        with RssSampler() as sampler, capture_native_output() as native:
            if args.trace:
                os.kill(os.getpid(), signal.SIGUSR1)  # the tracer's window opens
            t = time.perf_counter()
            sol = nlpsol(x0=x0, p=nlp.data, lbx=lbx, ubx=ubx, lbg=nlp.lbg, ubg=nlp.ubg)
            seconds = time.perf_counter() - t
            if args.trace:
                os.kill(os.getpid(), signal.SIGUSR2)  # ... and is written
            meter.libc.fflush(None)  # IPOPT's C stdio buffer, before the descriptor goes back
        meter.mark("solved", seconds)
        if args.log:
            Path(args.log).write_text(native.text)
        log = parse_solver_log(native.text)
        rss = sampler.summary()
        # the RSS between factorisations (MUMPS frees its factor when it factorises again):
        # the 5th percentile of the second half of the solve, beside the peak
        tail = sorted(r for _, r in sampler.series[len(sampler.series) // 2:])
        kkt = {**log, "infog": {str(k): v for k, v in log["infog"].items()}, "rss": rss,
               "breakdown": kkt_breakdown(log, held_before, rss["peak_mb"] or meter.rows[-1]["peak_mb"],
                                          tail[len(tail) // 20] if tail else None)}
        if args.trace:
            kkt["native_at_peak"] = traced(os.environ["ALLOCTRACE_OUT"])
        for key, value in kkt["breakdown"].items():
            if value is not None:
                print(f"  {key:26s} {value:12,.1f}")
        print(f"  RSS peak {rss['peak_mb']} MB at {rss['peak_at_s']} s of the sampling")
        for tag in (kkt.get("native_at_peak") or {}).get("tags", [])[:25]:
            print(f"  {tag['mb']:9.1f} MB  {tag['where'][:110]}")
    else:
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
    if args.breakdown:
        with capture_native_output():  # MUMPS's goodbye
            del sol, nlpsol
    else:
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
                            "calls": calls, "estimates": estimates, "kkt": kkt,
                            "steps": meter.rows, "functions": functions,
                            "blocks": [{"name": b.name, "count": int(b.count), "local": int(b.num_local),
                                        "rows": int(b.num_rows), "residuals": int(b.num_res)} for b in blocks]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
