"""Cohorts: many fits from a manifest, on a Dask cluster (:func:`batch`, ``colloc batch``).

A manifest is a CSV with the columns ``fit_id, problem, data`` (one row per trial file; rows
with the same ``fit_id`` are trials that share the parameters) and optionally ``method`` and
``group``, and the options of ``colloc identify`` that differ between subjects and labs:
``height`` and ``mass`` (the subject's body, m and kg), ``column`` and ``unit`` (``cop=COPx``,
several joined by ``;``), ``controller``, ``noise`` (as ``--noise``) and ``missing``
(``allow``).  Each fit is one Dask task that runs :func:`colloc.studies.identify.identify_files`,
the same code path as ``colloc identify``, on a single-threaded worker.  As fits finish, the
result document of each is written to ``OUT/fits/<fit_id>.json`` and the table
``OUT/results.csv`` (``fit_id, problem, success, status, iterations, objective, total_s``, then
every parameter and ``se_<parameter>``) is rewritten, both atomically, so an interrupted batch
leaves consistent files and ``resume=True`` redoes only the fits without a document.  A fit
that fails (a missing or broken file, a solver failure) is a row with its status and message;
the batch goes on.  Its document is kept as the record of the failure, so ``resume=True`` does
not run it again; ``retry_failed=True`` (which implies ``resume``) does, once its cause is
fixed.  A worker process that dies is replaced and its task retried by Dask.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..base.engine import local_client, single_threaded
from ..base.errors import DataError, ExtraColumnsWarning, OptionsError
from ..base.files import write_atomic
from ..base.versions import versions
from .identify import BASELINES, DEFAULT_METHOD, METHODS, identify_files, problem_registry, signal_pairs, subject_body

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["BatchReport", "FitSpec", "batch", "read_manifest", "summary_figure", "write_summary"]

REQUIRED = ("fit_id", "problem", "data")
OPTIONAL = ("method", "group", "height", "mass", "column", "unit", "controller", "noise", "missing")
#: Manifest columns that are options of one fit (every row of a fit must agree on them).
FIT_OPTIONS = ("height", "mass", "column", "unit", "controller", "noise", "missing")
#: The first columns of results.csv (docs/contracts.md §3), then parameters and standard errors.
RESULT_COLUMNS = ("fit_id", "problem", "success", "status", "iterations", "objective", "total_s")


@dataclass(frozen=True)
class FitSpec:
    """One fit of a manifest: its trials (absolute paths) and options."""

    fit_id: str
    problem: str
    data: tuple[str, ...]
    method: str | None = DEFAULT_METHOD  # None (a manifest row without one): the problem's own choice
    group: str = ""
    rows: tuple[int, ...] = ()
    #: Keyword arguments of :func:`~colloc.studies.identify.identify_files` from the option
    #: columns: ``columns``, ``units``, ``missing``, ``problem_options`` (``body``, ``controller``).
    options: dict = field(default_factory=dict, compare=False)


def _fit_options(path: Path, line: int, problem: str, row: dict) -> dict:
    """The identify options of one manifest row's option columns; errors name the line and column."""
    out: dict = {}
    for col, key, what in (("column", "columns", "COLUMN"), ("unit", "units", "UNIT")):
        try:
            pairs = signal_pairs(filter(None, (p.strip() for p in row.get(col, "").split(";"))), what)
        except ValueError as exc:
            raise DataError(f"{path}: column '{col}', line {line}: {exc} (several are joined by ';')") from None
        if pairs:
            out[key] = pairs
    missing = row.get("missing", "")
    if missing:
        if missing not in ("allow", "error"):
            raise DataError(f"{path}: column 'missing', line {line}: '{missing}' is not 'allow' or 'error'")
        out["missing"] = missing
    height, mass = row.get("height", ""), row.get("mass", "")
    if bool(height) != bool(mass):
        raise DataError(f"{path}: line {line}: 'height' and 'mass' go together (the body model needs both; m, kg)")
    options: dict = {}
    if height:
        for col in ("height", "mass"):
            if not _is_number(row[col]):
                raise DataError(f"{path}: column '{col}', line {line}: '{row[col]}' is not a number")
        try:
            options["body"] = subject_body(problem, float(height), float(mass))
        except ValueError as exc:
            raise DataError(f"{path}: columns 'height'/'mass', line {line}: {exc}") from None
    for col in ("controller", "noise"):
        if row.get(col):
            options[col] = row[col]
    if options:
        out["problem_options"] = options
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass
class BatchReport:
    """What a batch did.  ``rows`` holds results.csv's rows by ``fit_id``."""

    out: Path
    total: int
    skipped: int = 0  #: fits whose recorded document was kept (resume)
    skipped_failed: int = 0  #: of those, fits recorded as failed (``retry_failed`` runs them again)
    retried: int = 0  #: fits recorded as failed that were run again (``retry_failed``)
    run: int = 0
    failed: int = 0
    seconds: float = 0.0
    rows: dict[str, dict] = field(default_factory=dict)
    summary_paths: dict[str, Path] = field(default_factory=dict)
    #: Problem → parameter → unit, from the fits' documents (``units``).
    units: dict[str, dict[str, str]] = field(default_factory=dict)

    def add(self, fit_id: str, doc: dict) -> dict:
        """Record a fit's document: its results.csv row and its parameters' units."""
        self.rows[fit_id] = row = _row(doc)
        if doc.get("success") and doc.get("units"):
            self.units.setdefault(doc.get("problem") or "", {}).update(doc["units"])
        return row

    @property
    def succeeded(self) -> int:
        """Number of fits recorded as successful (this run's and resumed ones)."""
        return sum(1 for r in self.rows.values() if r.get("success") in (True, "True", "true"))


def read_manifest(path: str | Path) -> list[FitSpec]:
    """Read and check a manifest; errors name the file, row (line) and column.

    Data paths are relative to the manifest's folder unless absolute.  Rows of one
    ``fit_id`` must name the same problem, method and group.  Files that do not exist are
    not an error here: that fit fails in the batch and is recorded.
    """
    path = Path(path)
    text = table_text(path, "manifest")
    reader = csv.reader(text.splitlines())
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise DataError(f"{path}: empty manifest; expected a header 'fit_id,problem,data[,method,group,...]'") from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}; a manifest has the columns "
                        f"{', '.join(REQUIRED)} and optionally {', '.join(OPTIONAL)}")
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise DataError(f"{path}: column {dupes[0]!r} appears twice in the header")
    unused = [h for h in header if h not in REQUIRED + OPTIONAL]
    if unused:  # kept for the user's own notes, but a misspelt option would silently do nothing
        warnings.warn(f"{path}: column(s) {', '.join(map(repr, unused))} are not used by colloc batch (it reads "
                      f"{', '.join(REQUIRED + OPTIONAL)})", ExtraColumnsWarning, stacklevel=2)
    known = problem_registry()
    methods = set(METHODS) | set(BASELINES)
    fits: dict[str, dict] = {}
    for line, row in csv_rows(path, reader, header, REQUIRED):
        if row["problem"] not in known:
            raise DataError(f"{path}: column 'problem', line {line}: unknown problem '{row['problem']}'; "
                            f"available: {', '.join(sorted(known))}")
        method = row.get("method") or None  # none named: the problem's own choice, as `colloc identify`
        if method is not None and method not in methods:
            raise DataError(f"{path}: column 'method', line {line}: unknown method '{method}'; "
                            f"available: {', '.join([*METHODS, *BASELINES])}")
        data = Path(row["data"])
        data = data if data.is_absolute() else (path.parent / data)
        entry = fits.setdefault(row["fit_id"], {"problem": row["problem"], "method": method,
                                                "group": row.get("group", ""), "data": [], "rows": [],
                                                "options": _fit_options(path, line, row["problem"], row),
                                                **{c: row.get(c, "") for c in FIT_OPTIONS}})
        agree = [("problem", row["problem"]), ("method", method), ("group", row.get("group", "")),
                 *((c, row.get(c, "")) for c in FIT_OPTIONS)]
        for key, value in agree:
            if entry[key] != value:
                raise DataError(f"{path}: column '{key}', line {line}: fit '{row['fit_id']}' has {key} "
                                f"'{value}' here but '{entry[key]}' on line {entry['rows'][0]}")
        entry["data"].append(str(data.resolve()))
        entry["rows"].append(line)
    if not fits:
        raise DataError(f"{path}: the manifest has a header but no fits")
    return [FitSpec(fid, e["problem"], tuple(e["data"]), e["method"], e["group"], tuple(e["rows"]), e["options"])
            for fid, e in fits.items()]


def table_text(path: Path, what: str) -> str:
    """The text of the table file ``path`` (a byte-order mark dropped); ``what`` names it in errors."""
    if not path.is_file():
        raise DataError(f"{path}: no such {what} file")
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the {what} ({exc})") from None


def csv_rows(path: Path, reader, header: Sequence[str], required: Sequence[str]):
    """``(line, row)`` of each non-blank row after the header (cells stripped): as many fields
    as the header, none of the ``required`` columns empty; errors name the file, line and column."""
    for line, cells in enumerate(reader, start=2):
        if not "".join(cells).strip():
            continue
        if len(cells) != len(header):
            raise DataError(f"{path}: line {line} has {len(cells)} fields, expected {len(header)} "
                            f"({', '.join(header)})")
        row = {h: c.strip() for h, c in zip(header, cells)}
        for col in required:
            if not row[col]:
                raise DataError(f"{path}: column '{col}', line {line}: empty cell")
        yield line, row


def _safe_id(fit_id: str) -> str:
    """The file name of a fit's document (path separators and the like replaced)."""
    out = "".join(c if c.isalnum() or c in "-_.=+" else "_" for c in fit_id)
    return out if out.strip(".") else f"fit_{abs(hash(fit_id))}"


def _run_fit(spec: FitSpec) -> dict:
    """Worker task: the fit's result document, or a failure document; never raises."""
    single_threaded()
    t0 = time.perf_counter()
    try:
        result = identify_files(spec.problem, list(spec.data), method=spec.method, cohort=True, **spec.options)
        doc = result.to_dict()
    except Exception as exc:  # noqa: BLE001 - a broken file or a failed build is a row, not the end of the batch
        message = " ".join(str(exc).split())[:500]
        doc = {"problem": spec.problem, "method": spec.method, "success": False,
               "status": "error" if not isinstance(exc, (DataError, OptionsError)) else "bad_input",
               "message": f"{type(exc).__name__}: {message}", "iterations": 0, "objective": None,
               "parameters": {}, "standard_errors": {}, "timings": {"total_s": time.perf_counter() - t0},
               "trials": list(spec.data), "versions": versions()}
    doc["fit_id"] = spec.fit_id
    doc["group"] = spec.group
    return doc


def _row(doc: dict) -> dict:
    row = {"fit_id": doc["fit_id"], "problem": doc.get("problem"), "success": bool(doc.get("success")),
           "status": doc.get("status"), "iterations": doc.get("iterations"), "objective": doc.get("objective"),
           "total_s": (doc.get("timings") or {}).get("total_s")}
    se = doc.get("standard_errors") or {}
    for name, value in (doc.get("parameters") or {}).items():
        row[name] = value
        row[f"se_{name}"] = se.get(name)
    row["method"] = doc.get("method")
    row["group"] = doc.get("group", "")
    row["message"] = "" if doc.get("success") else doc.get("message", "")
    return row


def _write_table(out: Path, rows: dict[str, dict], order: Sequence[str]) -> None:
    params: list[str] = []
    for fid in order:
        for key in rows.get(fid, {}):
            if key not in RESULT_COLUMNS and key not in ("method", "group", "message") and not key.startswith("se_") \
                    and key not in params:
                params.append(key)
    columns = [*RESULT_COLUMNS]
    for p in params:
        columns += [p, f"se_{p}"]
    columns += ["method", "group", "message"]
    lines = [",".join(columns)]
    for fid in order:
        if fid not in rows:
            continue
        r = rows[fid]
        lines.append(",".join(_cell(r.get(c)) for c in columns))
    write_atomic(out / "results.csv", "\n".join(lines) + "\n")


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    text = repr(v) if isinstance(v, float) else str(v)
    if any(ch in text for ch in ',"\n'):
        text = '"' + text.replace('"', '""') + '"'
    return text


def _running(client, futures) -> int:
    """Fits being solved now: the unfinished tasks, at most one per worker thread."""
    pending = sum(1 for f in futures if f.status == "pending")
    try:
        slots = sum(w.get("nthreads", 1) for w in client.scheduler_info().get("workers", {}).values())
    except Exception:  # noqa: BLE001 - the scheduler is busy or gone: count the unfinished ones
        return pending
    return min(pending, slots)


class _Bar:
    """One status line on stderr: done, failed, running, time left."""

    def __init__(self, total: int, stream=None, enabled: bool = True) -> None:
        self.total, self.stream, self.enabled = total, stream or sys.stderr, enabled
        self.t0 = time.perf_counter()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.last = 0.0

    def update(self, done: int, failed: int, running: int, final: bool = False) -> None:
        if not self.enabled or self.total == 0:
            return
        now = time.perf_counter()
        if not final and now - self.last < (0.2 if self.tty else 5.0):
            return
        self.last = now
        elapsed = now - self.t0
        left = elapsed / done * (self.total - done) if done else float("nan")
        width = 24
        filled = int(width * done / self.total)
        bar = "#" * filled + "." * (width - filled)
        eta = f"{left:.0f} s left" if math.isfinite(left) else "time left unknown"
        line = (f"  [{bar}] {done}/{self.total} fits · {failed} failed · {running} running · "
                f"{elapsed:.0f} s · {eta if not final else 'done'}")
        self.stream.write(("\r" + line) if self.tty else (line + "\n"))
        if final and self.tty:
            self.stream.write("\n")
        self.stream.flush()


def batch(manifest: str | Path, out: str | Path, *, workers: int | None = None, scheduler: str | None = None,
          client: Client | None = None, resume: bool = False, retry_failed: bool = False, summary: bool = False,
          progress: bool | Callable = True, stream: TextIO | None = None) -> BatchReport:
    """Run every fit of ``manifest`` on Dask; write ``out/results.csv`` and ``out/fits/``.

    Parameters
    ----------
    manifest : path
        CSV with ``fit_id, problem, data`` (and optionally ``method``, ``group``).
    out : path
        Output folder (created).
    workers : int, optional
        Worker processes of the local cluster (default: one per core).
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``) instead of a local cluster;
        its workers need colloc and the problems installed and the data files readable.
    client : dask.distributed.Client, optional
        A client to use as it is.
    resume : bool
        Skip the fits whose document ``out/fits/<fit_id>.json`` exists, failed ones included
        (their document records the failure).
    retry_failed : bool
        Run again the fits whose document records a failure (a file since supplied, a
        solver failure to retry); implies ``resume``: successful fits are kept.
    summary : bool
        Also write ``summary.csv`` (unit, mean, sd, n per problem, group and parameter) and
        ``summary.png`` (one block of panels per problem).
    progress : bool or callable
        A status line on ``stream`` (stderr), or a callable given ``(done, failed, running)``.

    Returns
    -------
    BatchReport
    """
    specs = read_manifest(manifest)
    if workers is not None and scheduler is not None:
        raise OptionsError("give workers= (a local cluster) or scheduler= (a running one), not both")
    out = Path(out)
    fits_dir = out / "fits"
    fits_dir.mkdir(parents=True, exist_ok=True)
    stream = stream or sys.stderr
    order = [s.fit_id for s in specs]
    names = {s.fit_id: _safe_id(s.fit_id) for s in specs}
    if len(set(names.values())) != len(names):
        raise DataError(f"{manifest}: fit ids that differ only in characters not allowed in file names")
    report = BatchReport(out=out, total=len(specs))
    resume = resume or retry_failed
    todo = []
    for spec in specs:
        doc_path = fits_dir / f"{names[spec.fit_id]}.json"
        if resume and doc_path.is_file():
            try:
                doc = json.loads(doc_path.read_text(encoding="utf-8"))
                row = _row(doc)
            except (json.JSONDecodeError, KeyError, OSError):
                row = None  # unreadable: redo it
            if row is not None and retry_failed and not row["success"]:
                report.retried += 1
            elif row is not None:
                report.add(spec.fit_id, doc)
                report.skipped += 1
                report.skipped_failed += not row["success"]
                continue
        todo.append(spec)
    bar = _Bar(len(todo), stream, enabled=progress is True)
    t0 = time.perf_counter()
    if todo:
        from distributed import as_completed

        with local_client(client, tasks=len(todo), workers=workers, scheduler=scheduler) as c:
            link = getattr(c, "dashboard_link", None)
            if progress is True and link and scheduler is not None:
                stream.write(f"colloc: Dask dashboard at {link}\n")
            futures = {c.submit(_run_fit, spec, pure=False): spec for spec in todo}
            done = failed = 0
            try:
                for fut in as_completed(futures):
                    spec = futures[fut]
                    try:
                        doc = fut.result()
                    except Exception as exc:  # noqa: BLE001 - the task itself was lost (workers died too often)
                        doc = {"fit_id": spec.fit_id, "group": spec.group, "problem": spec.problem,
                               "method": spec.method, "success": False, "status": "lost",
                               "message": f"{type(exc).__name__}: {exc}", "timings": {}, "versions": versions()}
                    write_atomic(fits_dir / f"{names[spec.fit_id]}.json",
                                 json.dumps(doc, indent=1, allow_nan=False) + "\n")
                    report.add(spec.fit_id, doc)
                    _write_table(out, report.rows, order)
                    done += 1
                    failed += not doc.get("success")
                    report.run += 1
                    report.failed += not doc.get("success")
                    running = _running(c, futures)
                    if callable(progress):
                        progress(done, failed, running)
                    bar.update(done, failed, running)
            except KeyboardInterrupt:
                for f in futures:
                    f.cancel()
                raise
        bar.update(len(todo), report.failed, 0, final=True)
    _write_table(out, report.rows, order)
    report.seconds = time.perf_counter() - t0
    if summary:
        report.summary_paths = write_summary(out, report.rows, order, report.units)
    return report


def write_summary(out: Path, rows: dict[str, dict], order: Sequence[str],
                  units: dict[str, dict[str, str]] | None = None) -> dict[str, Path]:
    """``summary.csv`` (per problem, group and parameter: unit, mean, sd, n over the successful
    fits) and ``summary.png`` (each parameter's estimates across fits, by group; one block of
    panels per problem).  ``units`` maps problem → parameter → unit (the fits' ``units``)."""
    import numpy as np

    from ..results.plotting import save_figure

    units = units or {}
    good = [rows[f] for f in order if f in rows and rows[f].get("success") is True]
    problems: dict[str, list[dict]] = {}
    for r in good:
        problems.setdefault(r.get("problem") or "", []).append(r)
    params = {prob: [k for k in dict.fromkeys(k for r in fits for k in r)
                     if k not in RESULT_COLUMNS and not k.startswith("se_") and k not in ("method", "group", "message")]
              for prob, fits in problems.items()}
    lines = ["problem,group,parameter,unit,mean,sd,n"]
    for prob, fits in problems.items():
        for g in sorted({r.get("group", "") for r in fits}):
            for p in params[prob]:
                vals = np.array([r[p] for r in fits if r.get("group", "") == g and r.get(p) is not None], dtype=float)
                sd = float(np.std(vals, ddof=1)) if vals.size > 1 else float("nan")
                lines.append(",".join([_cell(prob), _cell(g), p, _cell(units.get(prob, {}).get(p, "")),
                                       _cell(float(np.mean(vals)) if vals.size else None), _cell(sd), str(vals.size)]))
    write_atomic(out / "summary.csv", "\n".join(lines) + "\n")
    paths = {"table": out / "summary.csv"}
    fig = summary_figure(problems, params, units)
    if fig is not None:
        paths["figure"] = save_figure(fig, out / "summary.png")
    return paths


def summary_figure(problems: dict[str, list[dict]], params: dict[str, list[str]],
                   units: dict[str, dict[str, str]]):
    """The figure of :func:`write_summary` (``None`` when no fit has a parameter): problem →
    its successful rows, problem → parameter names, problem → parameter → unit."""
    import numpy as np

    blocks = [(prob, params[prob]) for prob in problems if params[prob]]
    if blocks:
        from ..results.figure import Figure

        cols = min(4, max(len(ps) for _, ps in blocks))
        heights = [-(-len(ps) // cols) for _, ps in blocks]
        fig = Figure(figsize=(max(3.2 * cols, 6.4), sum(2.6 * h + 0.5 for h in heights) + 0.5), layout="constrained")
        made = fig.subfigures(len(blocks), 1, height_ratios=[2.6 * h + 0.5 for h in heights])
        subfigs = list(made.ravel()) if isinstance(made, np.ndarray) else [made]  # one block: a SubFigure
        for sub, (prob, ps), nrows in zip(subfigs, blocks, heights):
            fits = problems[prob]
            groups = sorted({r.get("group", "") for r in fits})
            axes = np.atleast_1d(sub.subplots(nrows, cols, squeeze=False)).ravel()
            for ax, p in zip(axes, ps):
                for k, g in enumerate(groups):
                    vals = [r[p] for r in fits if r.get("group", "") == g and r.get(p) is not None]
                    jitter = np.linspace(-0.15, 0.15, len(vals)) if len(vals) > 1 else np.zeros(len(vals))
                    ax.plot(k + jitter, vals, "o", ms=3.5, alpha=0.7, color=f"C{k % 10}")
                    if vals:
                        ax.plot([k - 0.3, k + 0.3], [np.mean(vals)] * 2, "k-", lw=1.5)
                ax.set_xticks(range(len(groups)), [g or "(no group)" for g in groups], fontsize=8)
                ax.set_xlim(-0.6, len(groups) - 0.4)
                unit = units.get(prob, {}).get(p, "")
                ax.set_ylabel(f"{p} ({unit})" if unit else p, fontsize=8)
                ax.tick_params(axis="y", labelsize=8)
            for ax in axes[len(ps):]:
                ax.axis("off")
            sub.suptitle(f"{prob}: {len(fits)} successful fit{'s' if len(fits) != 1 else ''}", fontsize=10)
        fig.suptitle("Estimates by group (bar: group mean)", fontsize=11)
        return fig
    return None
