"""``colloc batch`` (many fits from a manifest on Dask) and the cohort view of its results
(``colloc cohort``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base.capture import capture_native_output
from ..base.errors import CollocInputError
from .common import EXIT_FAILED, EXIT_OK, UsageError, _check_output_dir
from .identify import _replay


def add_parser(sub) -> None:
    """The ``batch`` sub-command."""
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


def cmd_batch(args) -> int:
    from ..studies.batch import batch, read_manifest

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

    def write_view(results, conditions, out: Path, plausible_only: bool = False) -> None:
        from ..studies.cohort import cohort

        view = cohort(results, conditions, plausible_only=plausible_only)
        paths = view.write(out)
        print(view.format())
        print(f"cohort written to {paths['table']}, {paths['tests']}, {paths['trials']}, {paths['text']} "
              f"and {paths['figure']}")

    def cmd_cohort(args) -> int:
        from ..studies.cohort import read_conditions

        conditions = read_conditions(args.conditions, args.factors)
        out = _check_output_dir("--out", args.out)
        write_view(args.results, conditions, out, args.plausible_only)
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
    c.add_argument("--plausible-only", action="store_true",
                   help="leave the fits flagged implausible (outside the problem's physiological ranges) out of the "
                        "tests; they are marked in the table and the figure either way")
    c.set_defaults(func=cmd_cohort)

    b = sub.choices["batch"]
    b.add_argument("--cohort", default=None, metavar="CONDITIONS",
                   help="after the fits, the cohort view by these conditions (as colloc cohort DIR --conditions "
                        "CONDITIONS --out DIR): DIR/cohort.csv, cohort_tests.csv, cohort_trials.csv, cohort.png")
    b.add_argument("--cohort-factors", type=factor_list, default=None, metavar="A,B",
                   help="with --cohort: the condition columns to compare (as colloc cohort --factors)")
    b.add_argument("--cohort-plausible-only", action="store_true",
                   help="with --cohort: leave the fits flagged implausible out of the tests (as colloc cohort "
                        "--plausible-only)")
    run_batch = b.get_default("func")

    def cmd_batch_cohort(args) -> int:
        if args.cohort is None:
            if args.cohort_factors is not None or args.cohort_plausible_only:
                given = "--cohort-factors" if args.cohort_factors is not None else "--cohort-plausible-only"
                raise UsageError(f"{given} needs --cohort CONDITIONS")
            return run_batch(args)
        from ..studies.batch import read_manifest
        from ..studies.cohort import read_conditions

        conditions = read_conditions(args.cohort, args.cohort_factors)  # bad input before any fit
        conditions.check_manifest(read_manifest(args.manifest), args.manifest)
        code = run_batch(args)
        if code != EXIT_OK:
            return code
        try:
            write_view(Path(args.out), conditions, Path(args.out), args.cohort_plausible_only)
        except CollocInputError as exc:  # e.g. no fit succeeded: the batch's files are written all the same
            sys.stderr.write(f"colloc: cohort: {' '.join(str(exc).splitlines())}\n")
            return EXIT_FAILED
        return EXIT_OK

    b.set_defaults(func=cmd_batch_cohort)
