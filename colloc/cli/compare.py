"""``colloc compare``: several methods (collocation, shooting) from several starts on one problem."""

from __future__ import annotations

import sys

from ..base.capture import capture_native_output
from ..studies.identify import (
    BASELINES,
    METHODS,
    load_trials as _load_trials,
    make_method,
    method_names,
    problem_spec,
    trial_names,
)
from .common import EXIT_FAILED, EXIT_OK, Ipopt, UsageError, _check_output_dir, _data_files, _known_problem
from .identify import _replay


def add_parser(sub) -> None:
    """The ``compare`` sub-command."""
    c = sub.add_parser("compare", help="compare methods (collocation, shooting) from several initial guesses",
                       description="Run each method from K initial guesses (start 0: the declared guesses; "
                                   "the others drawn with --seed: log-uniform within finite positive bounds, "
                                   "uniform within other finite bounds, else guess ± 50 %), print a summary "
                                   "table and write DIR/comparison.json, DIR/objective_history.png and "
                                   "DIR/estimates.png. Each run reports two facts apart: solver_converged "
                                   "(the solver's own ending, JSON solver_status) and success (the fit "
                                   "accepted too; status poor_fit or parameter_at_bound when the solver "
                                   "converged to a fit that is not). Exit 0 when the comparison was made and "
                                   "written and at least one run succeeded (runs that fail, e.g. a local "
                                   "minimum, are results of the comparison), 1 when no run succeeded, 2 on "
                                   "bad usage or input.")
    c.add_argument("problem", type=_known_problem, help="problem name (see `colloc problems`)")
    c.add_argument("--data", action="append", required=True, metavar="FILE.csv",
                   help="measured trial (CSV); repeat for several trials")
    c.add_argument("--missing", choices=("error", "allow"), default="error",
                   help="an empty signal cell is an error (default) or, with 'allow', a sample not measured")
    c.add_argument("--methods", required=True, metavar="M1,M2,...",
                   help=f"comma-separated, from: {', '.join(method_names())}")
    c.add_argument("--starts", type=int, default=1, metavar="K", help="initial guesses per method (default 1)")
    c.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the random starts (default 0)")
    c.add_argument("--nodes", type=int, default=None, metavar="N",
                   help="collocation nodes per trial (collocation methods; default: one per sample)")
    c.add_argument("--max-iter", type=int, default=500, metavar="K",
                   help="IPOPT iteration limit of the collocation methods (default 500)")
    c.add_argument("--out", required=True, metavar="DIR", help="output folder (created if needed)")
    c.add_argument("--verbose", action="store_true", help="show the solvers' and integrators' own output")
    cwhere = c.add_mutually_exclusive_group()
    cwhere.add_argument("--workers", type=int, default=None, metavar="N",
                        help="run the method × start solves in parallel on a local Dask cluster of N "
                             "single-threaded processes (each run's timings then include the other runs' "
                             "contention for the cores)")
    cwhere.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run them on a running Dask scheduler (tcp://host:8786); its workers need colloc "
                             "installed")
    c.set_defaults(func=cmd_compare)


def _parse_methods(text: str, nodes: int | None) -> dict:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--methods: no method given; available: {', '.join(method_names())}")
    unknown = [n for n in names if n not in METHODS and n not in BASELINES]
    if unknown:
        raise UsageError(f"--methods: unknown method(s) {', '.join(unknown)}; available: {', '.join(method_names())}")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UsageError(f"--methods: {', '.join(dupes)} given twice")
    if nodes is not None and not any(n in METHODS for n in names):
        raise UsageError(f"--nodes applies to the collocation methods ({', '.join(METHODS)}) only")
    return {n: make_method(n, nodes if n in METHODS else None) for n in names}


def _run_outcome(result) -> str:
    """The solver's ending and the fit's judgement of one compare run, apart."""
    from ..results.report import solver_converged

    if result.success:
        return "converged, fit accepted"
    if solver_converged(result):
        return f"converged, fit NOT accepted ({result.status})"
    return f"solver FAILED ({result.solver_status or result.status})"


def cmd_compare(args) -> int:
    from ..results.report import solver_converged
    from ..studies.compare import compare

    methods = _parse_methods(args.methods, args.nodes)
    if args.starts < 1:
        raise UsageError(f"--starts must be >= 1, got {args.starts}")
    if args.max_iter < 0:
        raise UsageError(f"--max-iter must be >= 0, got {args.max_iter}")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    out = _check_output_dir("--out", args.out)
    spec = problem_spec(args.problem)
    paths = _data_files("--data", args.data)
    trials = [t.renamed(n) for t, n in zip(_load_trials(spec, paths, args.missing), trial_names(paths))]
    problem = spec.problem(trials)
    names = set(problem.model.element_names("parameter"))
    truth = {k: v for k, v in spec.true.items() if k in names} or None

    terminal = [sys.stderr]

    def progress(event) -> None:
        if event.result is None:
            return
        r = event.result
        terminal[0].write(f"  [{event.index + 1}/{event.total}] {event.method} start {event.start}: "
                          f"{_run_outcome(r)} · {r.iterations} iterations · "
                          f"{r.timings.get('total_s', float('nan')):.2f} s\n")
        terminal[0].flush()

    solver = Ipopt(max_iter=args.max_iter)
    parallel = args.workers is not None or args.scheduler is not None
    with capture_native_output(enabled=not args.verbose) as native:
        terminal[0] = native.terminal
        if parallel:
            from ..base.engine import local_client

            with local_client(None, workers=args.workers, scheduler=args.scheduler,
                              tasks=None if args.scheduler else len(methods) * args.starts) as client:
                comparison = compare(problem, methods, starts=args.starts, seed=args.seed, truth=truth,
                                     solver=solver, progress=progress, client=client)
        else:
            comparison = compare(problem, methods, starts=args.starts, seed=args.seed, truth=truth,
                                 solver=solver, progress=progress)
    _replay(native)
    if parallel:
        comparison.notes["parallel"] = (f"scheduler {args.scheduler}" if args.scheduler
                                        else f"{args.workers} local worker process(es)")
    comparison.problem = args.problem
    comparison.notes["trials"] = [str(p) for p in paths]
    written = comparison.write(out)
    ok = sum(r.result.success for r in comparison.runs)
    converged = sum(solver_converged(r.result) for r in comparison.runs)
    print(f"{args.problem} · {len(methods)} methods × {args.starts} starts (seed {args.seed}) · "
          f"{converged}/{len(comparison.runs)} runs converged, {ok} succeeded (fit accepted)")
    print(comparison.format_table())
    print(f"\ncomparison written to {written['json']}")
    print(f"figures written to {written['objective_history']} and {written['estimates']}")
    if not ok:
        sys.stderr.write("colloc: no run succeeded (see the table's solver_converged and status columns)\n")
    return EXIT_OK if ok else EXIT_FAILED
