"""``colloc identify`` and ``colloc demo``: one problem's parameters from measured records (the
user's, or the problem's shipped demo data), the report, the figure and the result document."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..base.capture import capture_native_output
from ..base.versions import __version__
from ..studies.identify import (
    DEFAULT_METHOD,
    identify_files,
    method_names,
    problem_registry,
    problem_spec,
    signal_pairs,
    subject_body,
)
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    PLOT_SUFFIXES,
    UsageError,
    _assignments,
    _bounds_pair,
    _check_output_dir,
    _data_files,
    _finite_number,
    _known_problem,
    _Progress,
    _seconds,
    _starts_count,
    _window,
    check_output_file,
    started,
)


def add_parser(sub) -> None:
    """The ``identify`` and ``demo`` sub-commands."""
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
                   help="cip with --method kalman-ml: auto (the default with --height/--mass and a sway noise "
                        "model: PID, PD, PD-delay and PID-delay each fitted on the first half and scored on the "
                        "second; the best held-out prediction is fitted on the whole, with the comparison table), "
                        "PID (the default otherwise), PD, PD-delay or PID-delay (a feedback delay tau, Pade (2,2)); "
                        "heel-off: PD (default) or PD-delay (the delay tau identified too)")
    p.add_argument("--noise", default=None, metavar="MODEL",
                   help="cip with --method kalman-ml: the noise model, sway-lp (the default with --height/--mass: "
                        "continuous-time disturbance, the torque noise through a lag, the BDS records' documented "
                        "low-pass fixed, diffuse initial state), sway (the same without the lag, the low-pass "
                        "fitted as two 2nd-order sections), sway-held (sway with the disturbance noise held over "
                        "each sample) or paper (the paper's disturbance, state at rest; the default for the "
                        "paper's subject)")
    p.add_argument("--errors", default=None, choices=("model", "robust"),
                   help="cip with --method kalman-ml: the standard errors, robust (the default with --height/--mass: "
                        "the sandwich covariance, which holds when the noise model is wrong) or model (the inverse "
                        "Fisher information, which assumes white Gaussian innovations; the default otherwise)")
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


#: Stands for ``write_s`` while the result document is serialised (no time is this number).
_WRITE_PLACEHOLDER = 1.2345678901234567e-300


def cmd_identify(args) -> int:
    problem_spec(args.problem)  # an unknown or broken problem is refused first
    import casadi  # noqa: F401  (the heavy libraries: part of the import phase, not of the build)

    from ..solving import solve  # noqa: F401  (SciPy's and pandas' parts the solve path uses: imports too)

    imported = time.perf_counter()
    # every check before the solve: outputs, inputs, options
    check_output_file("--out", args.out, (".json",))  # the result document is JSON (and so never the figure)
    check_output_file("--plot", args.plot, PLOT_SUFFIXES)
    paths = _data_files("--data", args.data)
    guess = _assignments("--guess", args.guess, _finite_number)
    bounds = _assignments("--bounds", args.bounds, _bounds_pair)
    weights = _assignments("--fit-weight", args.fit_weight, _finite_number)
    from ..base.compiler import builds_ahead

    with builds_ahead():  # fused functions not yet compiled: built in the background for the next run
        result = _identify(args.problem, paths, args.method, args.nodes, args.verbose, args.json,
                           args.max_iter, args.refine, args.start, args.starts, args.seed, args.missing,
                           names=args.name, fit_weights=weights, guess=guess, bounds=bounds,
                           absolute_sigma=args.absolute_sigma, time_limit=args.time_limit, window=args.window,
                           **_lab_options(args))
    t_main = started()
    if t_main is not None:  # from main() to the problem and its libraries imported (not the interpreter's start)
        result.timings["import_s"] = imported - t_main
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
        from ..base.files import write_atomic

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
    from ..results.plotting import plot_fit, plot_residuals

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
    if getattr(args, "errors", None) is not None:
        out.setdefault("problem_options", {})["errors"] = args.errors
    return out


def _report_poor_fit(result) -> None:
    """One line on stderr when the solver converged but the fit is far above the declared noise."""
    if result.status == "poor_fit":
        from ..solving.solve import POOR_FIT_HINT

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
