"""The ``colloc`` command (strings become objects here and only here).

Exit codes: 0 success; 1 the computation ran but did not succeed; 2 bad usage or input
(one-line message, no traceback).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
import traceback
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from .base.capture import capture_native_output
from .base.errors import CollocInputError, ExtraColumnsWarning
from .base.versions import __version__
from .definition.registry import command_entry_points, load_command
from .studies.identify import (  # the names the command line maps to objects
    BASELINES,
    DEFAULT_METHOD,
    METHODS,
    identify_files,
    make_method,
    method_names,
    problem_registry,
    problem_spec,
    signal_pairs,
    subject_body,
    trial_names,
)
from .studies.identify import load_trials as _load_trials

if TYPE_CHECKING:
    from .solving.ipopt import IterationInfo

# The library itself (CasADi, SciPy, pandas, matplotlib) is imported where a command needs
# it, so that `colloc --help` and `colloc problems` answer at once.  Sub-commands of other
# packages (``colloc spine``, ``colloc ship-motion``) come through the ``colloc.commands``
# entry-point group (:mod:`colloc.definition.registry`); what they may use of this module is
# :data:`PLUGIN_API`.

#: The names of this module that a ``colloc.commands`` plugin uses: its one-line usage error,
#: the check of an output file, the number type of its options, the delay-margin printout.
PLUGIN_API = ("UsageError", "check_output_file", "format_matrix", "margin_lines", "number")


def Ipopt(**kwargs):  # noqa: N802 - stands for the class
    """:class:`colloc.Ipopt` (imported on first use)."""
    from .solving.ipopt import Ipopt as _Ipopt

    return _Ipopt(**kwargs)


EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2


class UsageError(CollocInputError):
    """Bad command-line usage."""


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error and exit code 2."""

    def error(self, message: str):  # noqa: D102 - argparse API
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


class _Progress:
    """Compact live progress line on stderr (throttled; only for solves longer than 1 s)."""

    def __init__(self, stream=sys.stderr, every: float = 0.5) -> None:
        self.stream, self.every = stream, every
        self.last = 0.0
        self.shown = False
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def __call__(self, info: IterationInfo) -> None:
        if info.elapsed_s < 1.0 or info.elapsed_s - self.last < self.every:
            return
        self.last = info.elapsed_s
        line = (f"  iter {info.iteration:4d}  objective {info.objective:.6e}  "
                f"max defect {info.max_violation:.1e}  {info.elapsed_s:6.1f} s")
        self.stream.write(("\r" + line) if self.tty else (line + "\n"))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _known_problem(name: str) -> str:
    """argparse type: a registered problem name (checked before --help is honoured)."""
    registry = problem_registry()
    if name not in registry:
        raise argparse.ArgumentTypeError(
            f"unknown problem '{name}'; available: {', '.join(sorted(registry)) or '(none installed)'}"
        )
    return name


def _seconds(text: str) -> float:
    """argparse type of ``--time-limit``: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got '{text}'") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text}")
    return value


def _starts_count(text: str) -> int:
    """argparse type of ``--starts``: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


#: Figure formats ``--plot`` accepts (matplotlib's file types without a special backend).
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def check_output_file(option: str, path: str | None, suffixes: tuple[str, ...] | None = None) -> None:
    """Refuse, before any work, an output file that cannot be written (one-line error)."""
    if path is None:
        return
    p = Path(path)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise UsageError(f"{option} {path}: unknown file type '{p.suffix or '(none)'}'; "
                         f"use one of {', '.join(suffixes)}")
    if p.is_dir():
        raise UsageError(f"{option} {path}: is a folder; give a file name")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{option} {path}: folder {folder} does not exist")
    _probe(option, path, folder)
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"{option} {path}: file exists and is not writable")


def _probe(option: str, path: str, folder: Path) -> None:
    """Create and remove a file in ``folder`` (permissions alone do not tell: root, read-only
    mounts, full disks); results are written there atomically through a temporary file."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".colloc-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot write in folder {folder} ({exc.strerror or exc})") from None


def _check_output_dir(option: str, path: str) -> Path:
    """Make (if needed) and check a writable output folder before any work."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {path}: exists and is not a folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot create the folder ({exc.strerror or exc})") from None
    _probe(option, path, p)
    return p


def _data_files(option: str, paths: list[str]) -> list[str]:
    """The files behind ``--data``: a folder stands for the ``*.csv`` files in it."""
    files: list[str] = []
    for text in paths:
        p = Path(text)
        if p.is_dir():
            found = sorted(str(f) for f in p.iterdir() if f.is_file() and f.suffix.lower() == ".csv")
            if not found:
                raise UsageError(f"{option} {text}: folder holds no .csv file")
            files += found
        elif p.is_file():
            files.append(text)
        else:
            raise UsageError(f"{option} {text}: no such file or folder")
    return files


def _assignments(option: str, items: list[str] | None, parse) -> dict:
    """``NAME=VALUE`` pairs of a repeatable option, values parsed by ``parse``."""
    out: dict = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"{option} {item}: expected NAME=VALUE")
        if name in out:
            raise UsageError(f"{option}: {name} given twice")
        try:
            out[name] = parse(value.strip())
        except ValueError as exc:
            raise UsageError(f"{option} {item}: {exc}") from None
    return out


_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)


def number(text: str) -> float:
    """A decimal number as people write it (no ``1_0``, no hex); ``inf`` and ``nan`` are read
    (callers refuse what they cannot use)."""
    if not _NUMBER.fullmatch(text.strip()):
        raise ValueError(f"'{text}' is not a number")
    return float(text)


def _finite_number(text: str) -> float:
    value = number(text)
    if not math.isfinite(value):
        raise ValueError(f"'{text}' is not a finite number")
    return value


def _window(text: str) -> tuple[float | None, float | None]:
    """argparse type of ``--window A:B``: seconds of the record's own time, start inclusive,
    end exclusive; either side may be empty (open)."""
    start, sep, end = text.partition(":")
    try:
        if not sep:
            raise ValueError
        pair = tuple(_finite_number(v) if v.strip() else None for v in (start, end))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A:B in seconds (start inclusive, end exclusive; either "
                                         f"side may be empty), got '{text}'") from None
    if pair[0] is not None and pair[1] is not None and not pair[0] < pair[1]:
        raise argparse.ArgumentTypeError(f"'{text}': the start must be before the end")
    return pair


def _bounds_pair(text: str) -> tuple[float | None, float | None]:
    lo, sep, hi = text.partition(":")
    if not sep:
        raise ValueError("expected LO:HI (either side may be empty)")
    pair = (number(lo) if lo.strip() else None, number(hi) if hi.strip() else None)
    if any(v is not None and math.isnan(v) for v in pair):
        raise ValueError("a bound may not be NaN")
    if pair[0] is not None and pair[1] is not None and pair[0] > pair[1]:
        raise ValueError(f"lower bound {pair[0]:g} > upper bound {pair[1]:g}")
    return pair


def _identify(problem_name: str, paths: list[str], method_name: str,
              nodes: int | None, verbose: bool, quiet: bool, max_iter: int = 500, refine: int = 1,
              start: str | None = None, starts: int = 1, seed: int = 0, missing: str = "error",
              names: list[str] | None = None, fit_weights: dict | None = None, guess: dict | None = None,
              bounds: dict | None = None, absolute_sigma: bool = False, time_limit: float | None = None,
              **reading):
    """:func:`colloc.studies.identify.identify_files` with a progress line; with ``verbose``
    off, what IPOPT, CasADi and CVODES print is kept off the terminal (a one-line note counts
    it; ``result.info["solver_output"]`` keeps the first lines)."""
    with capture_native_output(enabled=not verbose) as native:
        progress = None if quiet or starts > 1 else _Progress(stream=native.terminal)
        try:
            result = identify_files(problem_name, paths, method=method_name, nodes=nodes, refine=refine,
                                    max_iter=max_iter, start=start, starts=starts, seed=seed, missing=missing,
                                    names=names, fit_weights=fit_weights, guess=guess, bounds=bounds,
                                    absolute_sigma=absolute_sigma, print_level=5 if verbose else 0,
                                    progress=progress, time_limit=time_limit, **reading)
        finally:
            if progress is not None:
                progress.close()
    _replay(native, result)
    return result


def _replay(native, result=None) -> None:
    """After a captured block: our own warnings go to the terminal; the libraries' output is
    counted in one line (and its first lines kept in the result)."""
    ours = [ln for ln in native.lines if ln.startswith("colloc:")]
    theirs = [ln for ln in native.lines if not ln.startswith("colloc:")]
    for line in ours:
        sys.stderr.write(line + "\n")
    if theirs:
        sys.stderr.write(f"colloc: note: {len(theirs)} line(s) of solver/integrator output hidden "
                         "(--verbose shows them)\n")
        if result is not None:
            result.info["solver_output"] = theirs[:40]


#: ``time.perf_counter()`` when :func:`main` was entered (the command's own clock).
_T_MAIN: float | None = None


#: Stands for ``write_s`` while the result document is serialised (no time is this number).
_WRITE_PLACEHOLDER = 1.2345678901234567e-300


def cmd_identify(args) -> int:
    problem_spec(args.problem)  # an unknown or broken problem is refused first
    import casadi  # noqa: F401  (the heavy libraries: part of the import phase, not of the build)

    from .solving import solve  # noqa: F401  (SciPy's and pandas' parts the solve path uses: imports too)

    imported = time.perf_counter()
    # every check before the solve: outputs, inputs, options
    check_output_file("--out", args.out, (".json",))  # the result document is JSON (and so never the figure)
    check_output_file("--plot", args.plot, PLOT_SUFFIXES)
    paths = _data_files("--data", args.data)
    guess = _assignments("--guess", args.guess, _finite_number)
    bounds = _assignments("--bounds", args.bounds, _bounds_pair)
    weights = _assignments("--fit-weight", args.fit_weight, _finite_number)
    from .base.compiler import builds_ahead

    with builds_ahead():  # fused functions not yet compiled: built in the background for the next run
        result = _identify(args.problem, paths, args.method, args.nodes, args.verbose, args.json,
                           args.max_iter, args.refine, args.start, args.starts, args.seed, args.missing,
                           names=args.name, fit_weights=weights, guess=guess, bounds=bounds,
                           absolute_sigma=args.absolute_sigma, time_limit=args.time_limit, window=args.window,
                           **_lab_options(args))
    if _T_MAIN is not None:  # from main() to the problem and its libraries imported (not the interpreter's start)
        result.timings["import_s"] = imported - _T_MAIN
    _report_poor_fit(result)
    note = sys.stderr if args.json else sys.stdout
    if not args.json:
        print(result.summary())
    try:
        if args.plot:  # before the document is written, so that it carries the figure's time (plot_s)
            _plot(result, args.verbose, args.plot)
    finally:  # the result document is written even when the figure fails
        _write_result(result, args.out, args.json)
    if args.plot:
        note.write(f"figure written to {args.plot}\n")
    return EXIT_OK if result.success else EXIT_FAILED


def _write_result(result, out: str | None, as_json: bool) -> None:
    """``--out`` (atomically) and ``--json`` (stdout) of ``colloc identify``."""
    if out:
        # the document carries the time of its own serialisation: serialised once with a
        # placeholder number in its place, which is then replaced by the time it took
        from .base.files import write_atomic

        t_write = time.perf_counter()
        result.timings["write_s"] = _WRITE_PLACEHOLDER
        text = result.to_json()
        result.timings["write_s"] = time.perf_counter() - t_write
        write_atomic(out, text.replace(repr(_WRITE_PLACEHOLDER), repr(result.timings["write_s"]), 1) + "\n")
    if as_json:
        sys.stdout.write(result.to_json(indent=None) + "\n")
    elif out:
        print(f"result written to {out}")


def _plot(result, verbose: bool, fit_path, residuals_path=None, signals=None) -> None:
    """Draw and write the fit figure (and the residuals figure); their time is ``timings["plot_s"]``."""
    from .results.plotting import plot_fit, plot_residuals

    t_plot = time.perf_counter()
    try:
        with capture_native_output(enabled=not verbose) as native:
            plot_fit(result, signals=signals, path=fit_path)
            if residuals_path is not None:
                plot_residuals(result, path=residuals_path)
        _replay(native)
    finally:
        result.timings["plot_s"] = time.perf_counter() - t_plot


def _lab_options(args) -> dict:
    """``--column/--unit`` (lab files as they come) and ``--height/--mass`` (the subject's body,
    SI units) as keyword arguments of :func:`colloc.studies.identify.identify_files`."""
    out: dict = {}
    for option, key, what, given in (("--column", "columns", "COLUMN", args.column),
                                     ("--unit", "units", "UNIT", args.unit)):
        try:
            pairs = signal_pairs(given or [], what)
        except ValueError as exc:
            raise UsageError(f"{option} {exc}") from None
        if pairs:
            out[key] = pairs
    if (args.height is None) != (args.mass is None):
        raise UsageError("--height and --mass go together (the body model needs both; SI units: m, kg)")
    if args.height is not None:
        try:
            out["problem_options"] = {"body": subject_body(args.problem, args.height, args.mass)}
        except ValueError as exc:
            raise UsageError(f"--height/--mass: {exc}") from None
    if getattr(args, "controller", None) is not None:
        out.setdefault("problem_options", {})["controller"] = args.controller
    if getattr(args, "noise", None) is not None:
        out.setdefault("problem_options", {})["noise"] = args.noise
    return out


def _report_poor_fit(result) -> None:
    """One line on stderr when the solver converged but the fit is far above the declared noise."""
    if result.status == "poor_fit":
        from .solving.solve import POOR_FIT_HINT

        reason = result.fit_verdict.get("reason", "residuals far above the declared noise")
        sys.stderr.write(f"colloc: poor fit: {reason}; {POOR_FIT_HINT}\n")


def _demo_data(spec) -> list[str]:
    """The shipped files of a problem's demo (a :class:`~colloc.definition.registry.ProblemSpec`).
    ``DEFAULT_DATA`` names one file or folder (path parts of its shipped data, a folder
    standing for its ``.csv`` files) or a tuple of such names; the problem's registry entry
    finds them (its ``data_path`` hook or its package's ``colloc.data`` entry point)."""
    return _data_files("DEFAULT_DATA", [str(spec.data_path(*parts)) for parts in spec.default_data])


def cmd_demo(args) -> int:
    spec = problem_spec(args.problem)
    paths = _demo_data(spec)
    out = _check_output_dir("--out", args.out)
    stem = args.problem.replace("-", "_")
    shown = paths[0] if len(paths) == 1 else (f"{len(paths)} records in {Path(paths[0]).parent}: "
                                              + ", ".join(Path(p).name for p in paths))
    print(f"colloc {__version__} demo: identify the {args.problem} parameters from {shown}")
    t0 = time.perf_counter()
    result = _identify(args.problem, paths, args.method, None, args.verbose, False)
    print(result.summary(spec.true))
    _report_poor_fit(result)
    fig_path = out / f"{stem}_fit.png"
    states = spec.state_names
    try:
        _plot(result, args.verbose, fig_path, out / f"{stem}_residuals.png", list(states) if states else None)
    finally:  # with the figures' time, plot_s; written even when a figure fails
        result.to_json(out / f"{stem}_result.json")
    print(f"\nfigure written to {fig_path.resolve()}")
    print(f"residual figure written to {(out / f'{stem}_residuals.png').resolve()}")
    print(f"result document written to {(out / f'{stem}_result.json').resolve()}")
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return EXIT_OK if result.success else EXIT_FAILED


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
    from .results.report import solver_converged

    if result.success:
        return "converged, fit accepted"
    if solver_converged(result):
        return f"converged, fit NOT accepted ({result.status})"
    return f"solver FAILED ({result.solver_status or result.status})"


def cmd_compare(args) -> int:
    from .results.report import solver_converged
    from .studies.compare import compare

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
            from .base.engine import local_client

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
    paths = comparison.write(out)
    ok = sum(r.result.success for r in comparison.runs)
    converged = sum(solver_converged(r.result) for r in comparison.runs)
    print(f"{args.problem} · {len(methods)} methods × {args.starts} starts (seed {args.seed}) · "
          f"{converged}/{len(comparison.runs)} runs converged, {ok} succeeded (fit accepted)")
    print(comparison.format_table())
    print(f"\ncomparison written to {paths['json']}")
    print(f"figures written to {paths['objective_history']} and {paths['estimates']}")
    if not ok:
        sys.stderr.write("colloc: no run succeeded (see the table's solver_converged and status columns)\n")
    return EXIT_OK if ok else EXIT_FAILED


def cmd_batch(args) -> int:
    from .studies.batch import batch, read_manifest

    if args.workers is not None and args.scheduler is not None:
        raise UsageError("give --workers (a local cluster) or --scheduler (a running one), not both")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    specs = read_manifest(args.manifest)  # every manifest error before any work
    out = _check_output_dir("--out", args.out)
    print(f"colloc batch: {len(specs)} fit(s) from {args.manifest} -> {out}"
          + (f" on the scheduler {args.scheduler}" if args.scheduler else ""), flush=True)
    with capture_native_output() as native:
        report = batch(args.manifest, out, workers=args.workers, scheduler=args.scheduler, resume=args.resume,
                       retry_failed=args.retry_failed, summary=args.summary, stream=native.terminal)
    _replay(native)
    ok = report.succeeded
    print(f"{report.total} fits: {ok} succeeded, {report.total - ok} failed"
          + (f", {report.skipped} kept from {out / 'fits'}/ (--resume)" if report.skipped else "")
          + (f", {report.retried} failed fit(s) run again (--retry-failed)" if report.retried else "")
          + f" · {report.seconds:.1f} s")
    print(f"results written to {out / 'results.csv'} and {out / 'fits'}/")
    if report.total - ok:
        kept = (f"; {report.skipped_failed} of them recorded by an earlier run and not run again"
                if report.skipped_failed else "")
        print(f"{report.total - ok} failed fit(s): see the status and message columns of results.csv{kept}. "
              f"Once their cause is fixed, run them again (and keep the fits that succeeded) with: "
              f"colloc batch {args.manifest} --out {args.out} --resume --retry-failed")
    for kind, path in report.summary_paths.items():
        print(f"summary {kind} written to {path}")
    return EXIT_OK


def add_cohort_commands(sub) -> None:
    """``colloc cohort RESULTS... --conditions FILE --out DIR`` and ``colloc batch ... --cohort
    CONDITIONS``: the cohort view of colloc/studies/cohort.py (every cohort option is here)."""

    def factor_list(text: str) -> list[str]:
        names = [t.strip() for t in text.split(",")]
        if not all(names):
            raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of column names")
        return names

    def write_view(results, conditions, out: Path) -> None:
        from .studies.cohort import cohort

        view = cohort(results, conditions)
        paths = view.write(out)
        print(view.format())
        print(f"cohort written to {paths['table']}, {paths['tests']}, {paths['trials']}, {paths['text']} "
              f"and {paths['figure']}")

    def cmd_cohort(args) -> int:
        from .studies.cohort import read_conditions

        conditions = read_conditions(args.conditions, args.factors)
        out = _check_output_dir("--out", args.out)
        write_view(args.results, conditions, out)
        return EXIT_OK

    c = sub.add_parser("cohort", help="estimates by condition over many fits, and a test of the conditions' effects",
                       description="The cohort view of result documents (a batch's output folder, a folder of "
                                   "`colloc identify --out` files, or the files): per quantity and condition the "
                                   "estimates' mean and spread (DIR/cohort.csv, every trial in cohort_trials.csv), "
                                   "a test of each condition factor against the repeat-to-repeat spread "
                                   "(cohort_tests.csv: a mixed-effects model with a random intercept per subject "
                                   "when the conditions name several subjects, else least squares over the "
                                   "trials; on the log scale for positive quantities) and a figure (cohort.png). "
                                   "Exit 0 when written, 2 on bad input.")
    c.add_argument("results", nargs="+", metavar="RESULTS",
                   help="result documents (.json) or folders of them (a batch's DIR: its fits/)")
    c.add_argument("--conditions", required=True, metavar="FILE",
                   help="CSV trial,<factor>,...[,subject] (a trial: the fit id or the data file's name without "
                        "extensions), or the BDS metadata BDSinfoCOP.txt (factors Vision, Surface)")
    c.add_argument("--factors", type=factor_list, default=None, metavar="A,B",
                   help="the condition columns to compare (default: every column but trial and subject; the BDS "
                        "metadata's Vision and Surface)")
    c.add_argument("--out", required=True, metavar="DIR", help="output folder (created if needed)")
    c.set_defaults(func=cmd_cohort)

    b = sub.choices["batch"]
    b.add_argument("--cohort", default=None, metavar="CONDITIONS",
                   help="after the fits, the cohort view by these conditions (as colloc cohort DIR --conditions "
                        "CONDITIONS --out DIR): DIR/cohort.csv, cohort_tests.csv, cohort_trials.csv, cohort.png")
    b.add_argument("--cohort-factors", type=factor_list, default=None, metavar="A,B",
                   help="with --cohort: the condition columns to compare (as colloc cohort --factors)")
    run_batch = b.get_default("func")

    def cmd_batch_cohort(args) -> int:
        if args.cohort is None:
            if args.cohort_factors is not None:
                raise UsageError("--cohort-factors needs --cohort CONDITIONS")
            return run_batch(args)
        from .studies.batch import read_manifest
        from .studies.cohort import read_conditions

        conditions = read_conditions(args.cohort, args.cohort_factors)  # bad input before any fit
        conditions.check_manifest(read_manifest(args.manifest), args.manifest)
        code = run_batch(args)
        if code != EXIT_OK:
            return code
        try:
            write_view(Path(args.out), conditions, Path(args.out))
        except CollocInputError as exc:  # e.g. no fit succeeded: the batch's files are written all the same
            sys.stderr.write(f"colloc: cohort: {' '.join(str(exc).splitlines())}\n")
            return EXIT_FAILED
        return EXIT_OK

    b.set_defaults(func=cmd_batch_cohort)


def cmd_predict(args) -> int:
    from .base.files import write_atomic
    from .results.prediction import registered_model
    from .results.result import Result

    check_output_file("--out", args.out, (".csv",))
    source = Path(args.result)
    if not source.is_file():
        raise UsageError(f"RESULT {args.result}: no such file")
    try:
        result = Result.from_json(source)
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"RESULT {args.result}: not a colloc result document ({type(exc).__name__}: {exc})") from None
    spec = problem_spec(result.problem)
    paths = _data_files("--data", args.data)
    if len(paths) != 1:
        raise UsageError(f"--data: give one record to predict, got {len(paths)} files")
    options = _lab_options(args)
    trial = _load_trials(spec, paths, args.missing, options.get("columns"), options.get("units"))[0]
    if args.window is not None:  # the filter is conditioned from the record's start on
        end = args.window[1]
        if end is not None:
            trial = trial.window(None, end)
    table = result.predict(trial, horizon=args.horizon, window=args.window, model=registered_model(result, trial))
    write_atomic(args.out, table.to_csv(index=False, float_format="%.10g"))
    print(_prediction_line(table, trial, args.horizon, args.window))
    print(f"predictions written to {args.out}")
    return EXIT_OK


def _prediction_line(table, trial, horizon: float, window) -> str:
    """Coverage of the 95 % intervals and the mean log score, beside persistence's (y(t) predicted
    by y(t − H), its SD that of the H-changes before the window)."""
    import numpy as np

    from .signals.forecast import coverage, log_score, persistence_forecast

    names = table.attrs["signals"]
    rows = np.searchsorted(trial.time, table["time"].to_numpy())
    steps = int(round(horizon / float(np.median(np.diff(trial.time)))))
    start = trial.time[0] if window is None or window[0] is None else window[0]
    parts = []
    for name in names:
        g = "" if len(names) == 1 else f"_{name}"
        y, mu, sd = (table[f"{c}{g}"].to_numpy(dtype=float) for c in ("observed", "mean", "sd"))
        signal = np.asarray(trial[name], dtype=float)
        before = signal[trial.time < start]
        reference = before if np.isfinite(before).sum() > steps + 1 else signal
        pm, ps = persistence_forecast(signal, steps, fit=reference)
        parts.append(f"{name}: 95 % interval coverage {coverage(y, mu, sd):.3f}, "
                     f"log score {log_score(y, mu, sd):.3f} nats a sample (persistence "
                     f"{log_score(y, pm[rows], ps[rows]):.3f})")
    return f"{len(table)} predictions {horizon:g} s ahead · " + "; ".join(parts)


def cmd_problems(args) -> int:
    for name, ep in sorted(problem_registry().items()):
        print(f"{name:16s} {ep.value}")
    return EXIT_OK


def _read_matrix_csv(path: str, option: str):
    """Read a headerless, comma-separated numeric matrix; errors name the file, row and column.

    Parameters
    ----------
    path : str
        CSV file (one matrix row per line, no header).
    option : str
        Command-line option that named the file (used in error messages).

    Returns
    -------
    numpy.ndarray
        2-D float array.

    Raises
    ------
    UsageError
        Missing file, empty file, non-numeric or NaN/inf cell, or rows of unequal length.
    """
    import csv

    import numpy as np

    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{option} {path}: no such file")
    rows: list[list[float]] = []
    try:
        with open(p, newline="", encoding="utf-8-sig") as fh:
            for lineno, cells in enumerate(csv.reader(fh), start=1):
                if not cells or all(not c.strip() for c in cells):
                    continue
                row = []
                for col, cell in enumerate(cells, start=1):
                    text = cell.strip()
                    try:
                        value = number(text)
                    except ValueError:
                        raise UsageError(f"{option} {path}: row {lineno}, column {col}: "
                                         f"{text!r} is not a number (headerless numeric CSV expected)") from None
                    if not np.isfinite(value):
                        raise UsageError(f"{option} {path}: row {lineno}, column {col}: {text} (NaN/inf not allowed)")
                    row.append(value)
                if rows and len(row) != len(rows[0]):
                    raise UsageError(f"{option} {path}: row {lineno} has {len(row)} values, "
                                     f"the first row has {len(rows[0])}")
                rows.append(row)
    except UnicodeDecodeError:
        raise UsageError(f"{option} {path}: not a text CSV file") from None
    if not rows:
        raise UsageError(f"{option} {path}: empty file, no matrix")
    return np.array(rows, dtype=float)


def format_matrix(name: str, m) -> str:
    """``name =`` and the rows of matrix ``m`` (the delay-margin commands' printout)."""
    lines = [f"{name} ="]
    for row in m:
        lines.append("  [" + "  ".join(f"{v:11.5g}" for v in row) + " ]")
    return "\n".join(lines)


def margin_lines(margin) -> list[str]:
    """The lines that report a :class:`colloc.DelayMargin` (the delay-margin commands' printout)."""
    if not margin.stable_at_zero_delay:
        worst = margin.max_real_eigenvalue_zero_delay
        return [f"unstable at zero delay (max Re eig(J_i + J_d) = {worst:.6g} 1/s): delay margin 0 s"]
    if margin.delay_margin_s is None:
        return ["stable for every delay (no root reaches the imaginary axis): delay margin infinite"]
    return [f"delay margin        {margin.delay_margin_s:.6g} s",
            f"crossing frequency  {margin.crossing_frequency_rad_s:.6g} rad/s",
            f"crossings found     {len(margin.crossings)} ({margin.method}, {margin.elapsed_s:.3f} s)"]


def cmd_delay_margin(args) -> int:
    import json

    from .stability.delay_margin import delay_margin

    ji = _read_matrix_csv(args.ji, "--ji")
    jd = _read_matrix_csv(args.jd, "--jd")
    for option, path, m in (("--ji", args.ji, ji), ("--jd", args.jd, jd)):
        if m.shape[0] != m.shape[1]:
            raise UsageError(f"{option} {path}: matrix is {m.shape[0]}×{m.shape[1]}, not square")
    if ji.shape != jd.shape:
        raise UsageError(f"--ji {args.ji} is {ji.shape[0]}×{ji.shape[1]} but --jd {args.jd} is "
                         f"{jd.shape[0]}×{jd.shape[1]}; the shapes must agree")
    margin = delay_margin(ji, jd, method=args.method)
    if args.json:
        sys.stdout.write(json.dumps(margin.to_dict()) + "\n")
    else:
        print(f"x'(t) = J_i x(t) + J_d x(t - tau), n = {ji.shape[0]}")
        print("\n".join(margin_lines(margin)))
    return EXIT_OK if margin.stable_at_zero_delay else EXIT_FAILED


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="colloc", description="Identify model parameters from measured trajectories by direct collocation.")
    parser.add_argument("--version", action="version", version=f"colloc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    known = ", ".join(sorted(problem_registry())) or "(none installed)"
    p = sub.add_parser("identify", help="identify a problem's parameters from CSV trials",
                       description="Identify the parameters of PROBLEM from one or more CSV trials "
                                   "(several --data files share the parameters). "
                                   f"Problems: {known}. Initial states are estimated with the parameters; "
                                   "standard errors are rescaled by the residual variance unless "
                                   "--absolute-sigma.")
    p.add_argument("problem", type=_known_problem, help=f"problem name: {known}")
    p.add_argument("--data", action="append", required=True, metavar="FILE.csv",
                   help="measured trial (CSV: time column then signals); repeat for several trials; a folder "
                        "stands for the .csv files in it")
    p.add_argument("--name", action="append", default=None, metavar="NAME",
                   help="name of the trial of each --data file, in order (default: the file name, with as many "
                        "folders as it takes to tell equal file names apart)")
    p.add_argument("--fit-weight", action="append", default=None, metavar="SIGNAL=W",
                   help="fit weight 1/sigma^2 of a signal (replaces the problem's; 0 leaves the signal out)")
    p.add_argument("--guess", action="append", default=None, metavar="PARAM=V",
                   help="initial value of a parameter (an element such as k_00, or a whole matrix); the solve "
                        "starts from the guesses unless --start equation-error")
    p.add_argument("--bounds", action="append", default=None, metavar="PARAM=LO:HI",
                   help="bounds of a parameter (either side may be empty: k_00=0: )")
    p.add_argument("--absolute-sigma", action="store_true",
                   help="take the fit weights as exact 1/sigma^2: standard errors are not rescaled by the "
                        "residual variance")
    p.add_argument("--method", default=None,
                   help=f"one of {', '.join(method_names())} (default {DEFAULT_METHOD}); cip also runs "
                        "kalman-ml (exact Kalman maximum likelihood of one COP trial; its default for one "
                        "COP-only trial of a subject given by --height/--mass); fes-muscle's default is radau3; "
                        "heel-off also runs complementarity (modes out of the fit)")
    p.add_argument("--controller", default=None, metavar="NAME",
                   help="cip with --method kalman-ml: PID (default), PD-delay, PID-delay (a feedback delay "
                        "tau, Pade (2,2)) or auto (each fitted on the first half and scored on the second; the best "
                        "held-out prediction is fitted on the whole, with the comparison table); heel-off: PD "
                        "(default) or PD-delay (the delay tau identified too)")
    p.add_argument("--noise", default=None, metavar="MODEL",
                   help="cip with --method kalman-ml: the noise model, sway (the default with --height/--mass: "
                        "continuous-time disturbance, the recording's low-pass, diffuse initial state) or paper (the "
                        "paper's disturbance, state at rest; the default for the paper's subject)")
    p.add_argument("--nodes", type=int, default=None, metavar="N",
                   help="collocation nodes per trial (default: one mesh point per sample)")
    p.add_argument("--refine", type=int, default=1, metavar="N",
                   help="mesh intervals per sample interval (default 1; the data stay at the samples)")
    p.add_argument("--out", metavar="RESULT.json", help="write the result document here (JSON, atomically; the "
                                                        "file name ends in .json)")
    p.add_argument("--json", action="store_true", help="print the result document on stdout and nothing else")
    p.add_argument("--plot", metavar="FIG.png", help="write measured vs identified trajectories")
    p.add_argument("--max-iter", type=int, default=500, metavar="K", help="IPOPT iteration limit (default 500)")
    p.add_argument("--time-limit", type=_seconds, default=None, metavar="SECONDS",
                   help="wall-clock budget of the fit, checked inside the solves (IPOPT's max_wall_time; "
                        "heel-off: its whole fit, default 600 s); a fit that runs out of it is a failure")
    p.add_argument("--verbose", action="store_true", help="show IPOPT's own iteration table")
    p.add_argument("--start", choices=("equation-error", "guess"), default=None,
                   help="initial parameters: the equation-error estimate from the data (default for "
                        "collocation) or the declared guesses")
    p.add_argument("--starts", type=_starts_count, default=1, metavar="N",
                   help="solve from N starts (start 0 as --start, the rest space-filling within the bounds) "
                        "in parallel worker processes and keep the best (default 1)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the space-filling starts (default 0)")
    p.add_argument("--column", action="append", default=None, metavar="SIGNAL=COLUMN",
                   help="read the signal from the lab's column (e.g. cop=COPx); files may be gzip, tab-separated, "
                        "with units in the header (COPx[cm])")
    p.add_argument("--unit", action="append", default=None, metavar="SIGNAL=UNIT",
                   help="unit of a column whose header has none (e.g. cop=cm); converted to SI")
    p.add_argument("--height", type=float, default=None, metavar="M", help="subject height in m (with --mass)")
    p.add_argument("--mass", type=float, default=None, metavar="KG", help="subject mass in kg (with --height)")
    p.add_argument("--missing", choices=("error", "allow"), default="error",
                   help="an empty signal cell is an error (default) or, with 'allow', a sample not measured "
                        "(signals at different rates in one file, gaps); fits use the measured values only")
    p.add_argument("--window", type=_window, default=None, metavar="A:B",
                   help="fit only the samples with A <= time < B (seconds of the records' own time column; "
                        "either side may be empty: 30: is from 30 s to the end)")
    p.set_defaults(func=cmd_identify)

    d = sub.add_parser("demo", help="the main job: identify the two-link feedback gains from the shipped data",
                       description="Identify a problem's parameters from its shipped dataset (default: "
                                   "the 2×4 feedback gain matrix of the two-link standing-balance seed "
                                   "case), print true vs identified ± standard error and write figures.")
    d.add_argument("--problem", type=_known_problem, default="two-link",
                   help="problem whose shipped data to use (default two-link)")
    d.add_argument("--out", default="colloc-demo", metavar="DIR", help="output folder (default ./colloc-demo)")
    d.add_argument("--method", default=None,
                   help=f"one of {', '.join(method_names())} (default {DEFAULT_METHOD}; fes-muscle radau3)")
    d.add_argument("--verbose", action="store_true", help="show IPOPT's own iteration table")
    d.set_defaults(func=cmd_demo)

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

    dm = sub.add_parser("delay-margin", help="delay margin of x' = J_i x(t) + J_d x(t - tau)",
                        description="Delay margin of x'(t) = J_i x(t) + J_d x(t - tau): the largest tau "
                                    "below which the system stays stable (Franklin 2006 §3.B.iv; Chen, Gu "
                                    "& Nett 1995). J_i and J_d are square matrices of equal size as "
                                    "headerless CSV. Exit 0 when stable at zero delay (margin finite or "
                                    "infinite, i.e. null), 1 when unstable at zero delay (margin 0).")
    dm.add_argument("--ji", required=True, metavar="JI.csv", help="instantaneous Jacobian J_i (headerless CSV)")
    dm.add_argument("--jd", required=True, metavar="JD.csv", help="delayed Jacobian J_d (headerless CSV)")
    dm.add_argument("--method", choices=("sweep", "exact"), default="sweep",
                    help="sweep: adaptive frequency sweep (default); exact: Kronecker eigenproblem of "
                         "size n² (slower, cannot miss a crossing)")
    dm.add_argument("--json", action="store_true",
                    help="print the result (delay_margin_s, crossing_frequency_rad_s, stable_at_zero_delay, "
                         "...) as JSON and nothing else")
    dm.set_defaults(func=cmd_delay_margin)

    b = sub.add_parser("batch", help="identify many fits from a manifest on a Dask cluster",
                       description="Identify every fit of MANIFEST.csv (columns fit_id, problem, data; optional "
                                   "method, group; rows with one fit_id are trials that share the parameters) in "
                                   "parallel on Dask: a local cluster by default, or a running scheduler. Each "
                                   "fit is the fit `colloc identify` makes. DIR/results.csv and DIR/fits/<fit_id>.json "
                                   "are written as fits finish; a failed fit is a row with its status and message. "
                                   "--resume keeps every fit that has a document (a failed fit's document "
                                   "records its failure); --retry-failed runs the failed ones again. "
                                   "Exit 0 when the batch completed (failed fits included).")
    b.add_argument("manifest", metavar="MANIFEST.csv", help="the fits (data paths relative to the manifest's folder)")
    b.add_argument("--out", required=True, metavar="DIR", help="output folder (created if needed)")
    where = b.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=None, metavar="N",
                       help="worker processes of the local cluster (default: one per core)")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="address of a running Dask scheduler (tcp://host:8786); its workers need colloc installed")
    b.add_argument("--resume", action="store_true",
                   help="skip the fits whose DIR/fits/<fit_id>.json exists, failed ones included (after an "
                        "interruption: only the fits not yet done run)")
    b.add_argument("--retry-failed", action="store_true",
                   help="run again the fits whose document records a failure (a data file since supplied or "
                        "fixed, a solver failure); implies --resume, so the fits that succeeded are kept")
    b.add_argument("--summary", action="store_true",
                   help="also write DIR/summary.csv (unit, mean, sd, n per problem, group and parameter) and "
                        "DIR/summary.png (the estimates by group, one block of panels per problem)")
    b.set_defaults(func=cmd_batch)

    pr = sub.add_parser("predict", help="k-step-ahead prediction of a record with an identified model",
                        description="For each sample time t with A + H <= t < B, the predictive distribution of "
                                    "each measured signal at t given the data up to t - H (the record before A "
                                    "included), from the model of RESULT.json: stochastic models by their Kalman "
                                    "filter, deterministic ones by an extended Kalman filter and simulation H "
                                    "ahead. Writes PRED.csv with columns time, observed, mean, sd (one signal) or "
                                    "observed_<s>, mean_<s>, sd_<s> (several), SI units. Exit 0 when written, 2 on "
                                    "bad input.")
    pr.add_argument("result", metavar="RESULT.json", help="result document of colloc identify (--out)")
    pr.add_argument("--data", action="append", required=True, metavar="FILE", help="the record to predict")
    pr.add_argument("--column", action="append", default=None, metavar="SIGNAL=COLUMN",
                    help="read the signal from the lab's column (as in colloc identify)")
    pr.add_argument("--unit", action="append", default=None, metavar="SIGNAL=UNIT",
                    help="unit of a column whose header has none (as in colloc identify)")
    pr.add_argument("--missing", choices=("error", "allow"), default="error",
                    help="an empty signal cell is an error (default) or a sample not measured")
    pr.add_argument("--window", type=_window, default=None, metavar="A:B",
                    help="predict the samples with A + H <= time < B (seconds of the record's own time)")
    pr.add_argument("--horizon", type=_seconds, required=True, metavar="H",
                    help="prediction horizon in seconds, a whole number of samples (e.g. 0.1)")
    pr.add_argument("--out", required=True, metavar="PRED.csv", help="where to write the predictions (atomically)")
    pr.set_defaults(func=cmd_predict, height=None, mass=None, controller=None, problem=None)

    ls = sub.add_parser("problems", help="list installed problems", description="List installed problems.")
    ls.set_defaults(func=cmd_problems)
    add_cohort_commands(sub)
    _add_plugin_commands(sub)
    return parser


def _add_plugin_commands(sub) -> None:
    """The sub-commands of the ``colloc.commands`` entry points (``colloc spine``, ``colloc
    ship-motion``), each checked to add the command its entry point is named after.  One that
    cannot be loaded or added is left out with a one-line warning: the other commands still work."""
    from .definition.registry import COMMANDS_GROUP

    for name, ep in sorted(command_entry_points().items()):
        try:
            added = load_command(ep)(sub)
            if not isinstance(added, argparse.ArgumentParser) or added.prog.split()[-1] != name:
                raise UsageError(f"{ep.value} did not add and return the parser of 'colloc {name}'")
        except (CollocInputError, argparse.ArgumentError) as exc:
            sys.stderr.write(f"colloc: warning: command '{name}' ({COMMANDS_GROUP}) left out: "
                             f"{' '.join(str(exc).split())}\n")


def _one_line_warnings(message, category, filename, lineno, file=None, line=None):
    sys.stderr.write(f"colloc: warning: {str(message).splitlines()[0]}\n")


def _one_thread_libraries() -> bool:
    """One BLAS/OpenMP thread (:data:`colloc.base.engine.THREAD_ENV`) for the command's own
    process, unless the user set any of those variables or the libraries are loaded already
    (``main`` called in a running program: its environment is left alone).  OpenBLAS's and
    OpenMP's idle threads spin on the second core: the two-link seed case (6,001 nodes) took
    the same wall time on a quiet machine and 3.7 → 2.5 s of CPU; at 60,001 nodes neither
    wall nor CPU time grew (benchmarks/README.md).  Returns whether it set them."""
    from .base.engine import THREAD_ENV

    if "numpy" in sys.modules or "casadi" in sys.modules or any(k in os.environ for k in THREAD_ENV):
        return False
    os.environ.update(THREAD_ENV)
    return True


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``colloc`` command; returns the exit code."""
    global _T_MAIN
    _T_MAIN = time.perf_counter()
    _one_thread_libraries()
    parser = build_parser()
    with warnings.catch_warnings():
        # data warnings (extra columns …) are shown as one line each, never raised
        warnings.simplefilter("always", ExtraColumnsWarning)
        warnings.showwarning = _one_line_warnings
        try:
            args = parser.parse_args(argv)
            return args.func(args)
        except CollocInputError as exc:
            msg = " ".join(str(exc).split("\n"))
            sys.stderr.write(f"colloc: error: {msg}\n")
            return EXIT_INPUT
        except KeyboardInterrupt:
            sys.stderr.write("colloc: interrupted\n")
            return 130
        except OSError as exc:  # a file that could not be read or written after the checks
            where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
            sys.stderr.write(f"colloc: error: cannot access{where}: {exc.strerror or exc}\n")
            return EXIT_INPUT
        except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
            if os.environ.get("COLLOC_TRACEBACK"):
                traceback.print_exc()
            first = (str(exc).splitlines() or [""])[0][:300]
            sys.stderr.write(f"colloc: internal error: {type(exc).__name__}: {first} "
                             "(please report it; COLLOC_TRACEBACK=1 shows the traceback)\n")
            return EXIT_FAILED


#: glibc's ``mallopt`` parameters (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def _keep_freed_memory() -> bool:
    """glibc's allocator keeps what the command frees for the command's next allocations.

    By default a block from 32 MB up is mapped from the kernel and unmapped when freed, and the
    heap's free top returned: each of IPOPT's factorisations then touches fresh pages, and
    zeroing them cost 0.1-0.15 s of system time in the two-link seed case's 0.5 s solve
    (benchmarks/README.md).  Here blocks up to 1 GiB come from the heap and freed memory stays
    with the process until it ends (a command: moments later).  Only for the console script,
    on glibc, and not when the user tuned the allocator (``GLIBC_TUNABLES``, ``MALLOC_*_``).
    Returns whether it changed them."""
    if not sys.platform.startswith("linux") or "malloc" in os.environ.get("GLIBC_TUNABLES", "") \
            or any(k.startswith("MALLOC_") and k.endswith("_") for k in os.environ):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only (musl's mallopt does nothing)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # older glibc refuses a mapping threshold above 32 MiB: then that, its largest
    mapped = mallopt(_M_MMAP_THRESHOLD, 1 << 30) or mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    return bool(mallopt(_M_TRIM_THRESHOLD, (1 << 31) - 1) and mapped)


def run() -> None:
    """The ``colloc`` console script: :func:`main`, then the process ends at once (unless a
    thread the interpreter would wait for is still running).  Exit handlers run (a Dask
    cluster is shut down, temporary folders are removed) and the output is flushed, but the
    interpreter's teardown (a thousand modules, the solve's NumPy arrays
    and CasADi objects freed one by one) is skipped: 0.15–0.4 s of the two-link seed case's
    whole command (benchmarks/README.md)."""
    import atexit
    import threading

    _keep_freed_memory()
    code = main()
    if any(t is not threading.main_thread() and t.is_alive() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)  # a thread the interpreter would wait for (a pool's worker): the usual exit
    atexit._run_exitfuncs()  # what Python runs at exit, before it tears the modules down
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be written anyway
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
