"""``colloc predict``: k-step-ahead predictive distributions of a record from an identified model
(docs/contracts.md §3)."""

from __future__ import annotations

from pathlib import Path

from ..studies.identify import load_trials as _load_trials, problem_spec
from .common import EXIT_OK, UsageError, _data_files, _seconds, _window, check_output_file
from .identify import _lab_options


def add_parser(sub) -> None:
    """The ``predict`` sub-command."""
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


def cmd_predict(args) -> int:
    from ..base.files import write_atomic
    from ..results.prediction import registered_model
    from ..results.result import Result

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

    from ..signals.forecast import coverage, log_score, persistence_forecast

    names = table.attrs["signals"]
    rows = np.searchsorted(trial.time, table["time"].to_numpy())
    steps = round(horizon / float(np.median(np.diff(trial.time))))
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
