"""The cohort view of many fits: estimates by condition, and a test of the conditions' effects.

A cohort is a set of result documents (``colloc batch``'s ``DIR/fits/*.json`` or the
``--out`` files of ``colloc identify``), one per trial, and a conditions file that gives each
trial its conditions: a CSV ``trial,<factor>,...`` (optionally a ``subject`` column), or the
metadata table of the BDS data set (Santos & Duarte 2016, ``BDSinfoCOP.txt``: tab-separated,
``Trial, Subject, Vision, Surface, ...``; its factors are vision and surface).  A document
is matched to its trial by its ``fit_id``, the name of its single trial file or its own file
name, each without extensions (``BDS00001.txt.gz`` → ``BDS00001``).

:func:`cohort` returns a :class:`Cohort`: the estimates of every trial (``trials``), per
quantity and condition their mean, spread and the fits' own typical standard error
(``table``), and per quantity and factor a test of the factor's effect (``tests``), judged
against the repeat-to-repeat spread of the trials rather than the fits' standard errors
(which assume white innovations).  The quantities are the documents' parameters; when a
fit has ankle-torque gains ``KP`` and ``KD`` and its ``info`` has the body (``m, g, h``)
they are shown as K_P/(m·g·h), the stiffness relative to gravity's toppling torque (as in
Peterka 2002, J Neurophysiol 88:1097), and K_D/K_P, the controller's derivative time (s).

The test (statsmodels, Seabold & Perktold 2010):

* **several subjects**: a linear mixed-effects model (``MixedLM``, REML) with a random
  intercept per subject, the factors as fixed effects, Wald χ² tests per factor; repeated
  trials of one subject are not counted as independent subjects;
* **one subject**: the trials are the units and the repeats within each condition give the
  spread; ordinary least squares with the factors, a Wald F test per factor.

Both on the log of a quantity whose estimates are all positive (gains, time constants and
intensities act multiplicatively; an effect is a ratio), else on its own scale.  Factors are
coded sum-to-zero, so a factor's test is its effect averaged over the other factors' levels
(type III; type II when the design is balanced); their interaction is in the model when each
condition has repeats to spare (at least two residual degrees of freedom beyond the cells).
Estimates on a search-range bound are shown, but left out of the test (their value is the
bound's, not the data's).  Fits the problem flags as physiologically implausible (an
``implausible`` warning) are marked (× in the figure, a count in the table); they are tested
with the others, or left out with ``plausible_only`` (``--plausible-only``): where a few trials
end in another family of optima, the test then compares one family.  p-values are also given
adjusted by Holm's (1979, Scand J Stat 6:65) method over all the tests of the cohort.
"""

from __future__ import annotations

import csv
import json
import math
import textwrap
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from ..base.errors import DataError, OptionsError
from ..base.files import write_atomic
from ..results.report import INTERVAL_Z
from .batch import csv_rows, table_text
from .select import flagged_implausible

__all__ = ["Cohort", "Conditions", "cohort", "read_conditions", "read_results", "trial_key"]

#: Extensions stripped from file names and fit ids to get the trial's name.
SUFFIXES = (".gz", ".bz2", ".xz", ".zip", ".json", ".csv", ".tsv", ".txt")
#: The condition columns of the BDS metadata (``BDSinfoCOP.txt``, Santos & Duarte 2016).
BDS_FACTORS = ("Vision", "Surface")
#: What a factor's test needs: at least this many residual degrees of freedom.
MIN_RESIDUAL_DF = 1


def trial_key(name: str) -> str:
    """A trial's name from a file name or fit id: the last path part without extensions."""
    base = Path(str(name)).name
    while True:
        low = base.lower()
        for s in SUFFIXES:
            if low.endswith(s) and len(base) > len(s):
                base = base[: -len(s)]
                break
        else:
            return base


# --------------------------------------------------------------------------- conditions


@dataclass(frozen=True)
class Conditions:
    """The conditions of each trial: ``table`` indexed by the trial's name, with a
    ``subject`` column and one column per factor (strings); ``levels`` keeps each factor's
    levels in the order of the file (the first is the reference of the effects)."""

    table: pd.DataFrame
    factors: tuple[str, ...]
    levels: dict[str, tuple[str, ...]]
    path: Path | None = None
    has_subject: bool = False
    lines: dict[str, int] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return str(self.path) if self.path is not None else "the conditions"

    def find(self, names: Iterable[str]) -> str | None:
        """The first of ``names`` (fit ids, file names) whose trial has a row, else ``None``."""
        return next((k for k in dict.fromkeys(map(trial_key, names)) if k in self.table.index), None)

    def check_manifest(self, specs, manifest: str | Path) -> None:
        """Every fit of a batch manifest (:func:`~colloc.studies.batch.read_manifest`) has a row:
        checked before any fit is run; the error names the manifest's line."""
        for spec in specs:
            names = [spec.fit_id, *(spec.data if len(spec.data) == 1 else ())]
            if self.find(names) is None:
                line = spec.rows[0] if spec.rows else "?"
                raise DataError(f"{manifest}: line {line}: fit '{spec.fit_id}' has no row in {self.source} (looked "
                                f"for trial {' or '.join(repr(k) for k in dict.fromkeys(map(trial_key, names)))})")


def read_conditions(path: str | Path, factors: Sequence[str] | None = None) -> Conditions:
    """Read a conditions file: a CSV ``trial,<factor>,...[,subject]`` or the BDS metadata.

    ``factors`` names the condition columns to use (default: every column but ``trial`` and
    ``subject``; for the BDS metadata ``Vision`` and ``Surface``).  Column names match without
    regard to case.  Errors name the file, column and line.
    """
    path = Path(path)
    lines = table_text(path, "conditions").splitlines()
    if not lines or not lines[0].strip():
        raise DataError(f"{path}: empty conditions file; expected a header 'trial,<condition>,...'")
    delimiter = "\t" if "\t" in lines[0] else ","
    reader = csv.reader(lines, delimiter=delimiter)
    header = [h.strip() for h in next(reader)]
    lower = [h.lower() for h in header]
    dupes = sorted({h for h in lower if h and lower.count(h) > 1})
    if dupes:
        raise DataError(f"{path}: column '{dupes[0]}' appears twice in the header")
    if "trial" not in lower:
        raise DataError(f"{path}: no 'trial' column; a conditions file has the columns trial,<condition>,... "
                        f"(and optionally subject); its header is: {', '.join(header)}")
    trial_col = header[lower.index("trial")]
    subject_col = header[lower.index("subject")] if "subject" in lower else None
    others = [h for h in header if h not in (trial_col, subject_col)]
    bds = all(f.lower() in lower for f in BDS_FACTORS) and subject_col is not None
    if factors is None:
        factors = [header[lower.index(f.lower())] for f in BDS_FACTORS] if bds else others
    else:
        chosen = []
        for f in factors:
            if f.lower() not in lower or f.lower() in ("trial", "subject"):
                raise DataError(f"{path}: no condition column '{f}'; its columns are: {', '.join(others)}")
            chosen.append(header[lower.index(f.lower())])
        factors = chosen
    if not factors:
        raise DataError(f"{path}: no condition column; a conditions file has the columns trial,<condition>,... "
                        f"(its header is: {', '.join(header)})")
    used = [trial_col, *([subject_col] if subject_col else []), *factors]
    rows: list[dict] = []
    where: dict[str, int] = {}
    for line, row in csv_rows(path, reader, header, used):
        key = trial_key(row[trial_col])
        if key in where:
            raise DataError(f"{path}: column '{trial_col}', line {line}: trial '{key}' is also on line {where[key]}")
        where[key] = line
        rows.append({"trial": key, "subject": row[subject_col] if subject_col else "",
                     **{f: row[f] for f in factors}})
    if not rows:
        raise DataError(f"{path}: the conditions file has a header but no trials")
    table = pd.DataFrame(rows).set_index("trial")
    levels = {f: tuple(dict.fromkeys(table[f])) for f in factors}
    return Conditions(table, tuple(factors), levels, path, subject_col is not None, where)


# --------------------------------------------------------------------------- results


def read_results(sources: str | Path | Iterable[str | Path]) -> list[tuple[Path, dict]]:
    """Result documents from folders (``DIR/fits/*.json`` of a batch, else ``DIR/*.json``)
    and files: ``[(path, document), ...]``.  Errors name the file."""
    if isinstance(sources, (str, Path)):
        sources = [sources]
    out: list[tuple[Path, dict]] = []
    for src in sources:
        src = Path(src)
        if src.is_dir():
            folder = src / "fits" if (src / "fits").is_dir() else src
            files = sorted(folder.glob("*.json"))
            if not files:
                raise DataError(f"{src}: no result documents (*.json) in it or in its fits/ folder")
        elif src.is_file():
            files = [src]
        else:
            raise DataError(f"{src}: no such result file or folder")
        for f in files:
            try:
                doc = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise DataError(f"{f}: not a JSON result document ({exc})") from None
            if not isinstance(doc, dict) or "success" not in doc or "parameters" not in doc:
                raise DataError(f"{f}: not a result document of colloc (no 'success' and 'parameters' keys)")
            if not isinstance(doc["parameters"], dict):
                raise DataError(f"{f}: 'parameters' is not an object of name: value")
            out.append((f, doc))
    if not out:
        raise DataError("no result documents given")
    return out


def _model_of(doc: dict) -> tuple:
    info = doc.get("info") or {}
    return (doc.get("problem"), doc.get("method"), info.get("controller"), info.get("noise_model"))


def _describe_model(model: tuple) -> str:
    problem, method, controller, noise = model
    parts = [str(problem), str(method)]
    if controller:
        parts.append(f"controller {controller}")
    if noise:
        parts.append(f"noise {noise}")
    return " · ".join(parts)


def _at_bound(doc: dict) -> set[str]:
    names = set((doc.get("info") or {}).get("active_bounds") or [])
    for w in doc.get("warnings") or []:
        if isinstance(w, dict) and w.get("code") == "parameter_at_bound":
            names.update(w.get("parameters") or [])
    return names


def _finite(v) -> float | None:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _covariance(doc: dict, a: str, b: str) -> float | None:
    cov = doc.get("covariance") or {}
    names, matrix = cov.get("names") or [], cov.get("matrix") or []
    if a not in names or b not in names:
        return None
    try:
        return _finite(matrix[names.index(a)][names.index(b)])
    except (IndexError, TypeError):
        return None


def _quantities(doc: dict) -> list[dict]:
    """Each quantity of one document: name, label, unit, estimate, se, low, high, at_bound."""
    p = {k: _finite(v) for k, v in doc["parameters"].items()}
    se = {k: _finite(v) for k, v in (doc.get("standard_errors") or {}).items()}
    intervals = doc.get("intervals") or {}
    units = doc.get("units") or {}
    bound = _at_bound(doc)
    body = (doc.get("info") or {}).get("body") or {}
    out = []
    replaced = set()
    mgh = None
    if all(_finite(body.get(k)) for k in ("m", "g", "h")):
        mgh = float(body["m"]) * float(body["g"]) * float(body["h"])
    kp, kd = p.get("KP"), p.get("KD")
    if kp is not None and mgh:
        e = se.get("KP")
        lo, hi = (_finite(x) for x in (intervals.get("KP") or (None, None)))
        out.append({"name": "KP/mgh", "label": "K_P/(m·g·h)", "unit": "1", "estimate": kp / mgh,
                    "se": None if e is None else e / mgh, "low": None if lo is None else lo / mgh,
                    "high": None if hi is None else hi / mgh, "at_bound": "KP" in bound})
        replaced.add("KP")
    if kp is not None and kd is not None and kp > 0 and kd > 0:
        ratio = kd / kp
        vp, vd, c = _covariance(doc, "KP", "KP"), _covariance(doc, "KD", "KD"), _covariance(doc, "KP", "KD")
        e = lo = hi = None
        if vp is not None and vd is not None and c is not None:  # delta method on the log scale
            var = vd / kd**2 + vp / kp**2 - 2 * c / (kd * kp)
            if var >= 0:
                s = math.sqrt(var)
                e, lo, hi = ratio * s, ratio * math.exp(-INTERVAL_Z * s), ratio * math.exp(INTERVAL_Z * s)
        out.append({"name": "KD/KP", "label": "K_D/K_P", "unit": "s", "estimate": ratio, "se": e, "low": lo,
                    "high": hi, "at_bound": bool({"KP", "KD"} & bound)})
        replaced.add("KD")
    for name, value in p.items():
        if name in replaced:  # shown through its normalised form
            continue
        lo, hi = (_finite(x) for x in (intervals.get(name) or (None, None)))
        out.append({"name": name, "label": name, "unit": units.get(name, ""), "estimate": value,
                    "se": se.get(name), "low": lo, "high": hi, "at_bound": name in bound})
    return out


# --------------------------------------------------------------------------- the view


@dataclass
class Cohort:
    """The cohort view (:func:`cohort`).

    ``trials``: one row per trial and quantity (``trial, subject, <factors>, quantity,
    label, unit, estimate, se, low, high, at_bound, implausible, file``); ``table``: one row per
    quantity and condition (``n`` trials, ``mean``, ``sd`` between them, ``median``, ``min``,
    ``max``, ``median_se`` of the fits' own standard errors, ``n_at_bound``, ``n_implausible``);
    ``tests``: one row per
    quantity and model term (``test``, ``scale``, ``effect`` with ``effect_low/high`` for a
    two-level factor: the ratio, or difference, of the second level to the first, averaged
    over the other factors; ``statistic``, ``df``, ``p``, ``p_holm``, ``n`` trials tested,
    ``n_subjects``, ``note``)."""

    trials: pd.DataFrame
    table: pd.DataFrame
    tests: pd.DataFrame
    factors: tuple[str, ...]
    levels: dict[str, tuple[str, ...]]
    model: str
    test_name: str
    test_reason: str
    failed: list[str]
    unmatched: list[str]
    n_subjects: int
    plausible_only: bool = False

    def quantities(self) -> list[tuple[str, str, str]]:
        """``(name, label, unit)`` of each quantity, in order."""
        seen = self.trials.drop_duplicates("quantity")
        return list(zip(seen["quantity"], seen["label"], seen["unit"]))

    def format(self) -> str:
        """The printed cohort table and tests."""
        n = self.trials["trial"].nunique()
        described = ", ".join(f"{f} ({'/'.join(self.levels[f])})" for f in self.factors)
        lines = [(f"cohort: {n} successful fit{'s' if n != 1 else ''} of {self.model} · "
                  f"{self.n_subjects} subject{'s' if self.n_subjects != 1 else ''} · factors {described}")]
        if self.failed:
            lines.append(f"not in the view (the fit failed): {', '.join(self.failed)}")
        fw = [max(len(f), *(len(v) for v in self.levels[f])) for f in self.factors]
        head = (f"{'quantity':14s} {'unit':12s} " + " ".join(f"{f:{w}s}" for f, w in zip(self.factors, fw))
                + f" {'n':>3s} {'mean':>10s} {'sd':>10s} {'min':>10s} {'max':>10s} {'fit SE':>10s}")
        lines += ["", head]
        for _, r in self.table.iterrows():
            cells = " ".join(f"{r[f]!s:{w}s}" for f, w in zip(self.factors, fw))
            marks = ([f"{int(r['n_at_bound'])} on a bound"] if r["n_at_bound"] else []) + (
                [f"{int(r['n_implausible'])} implausible"] if r["n_implausible"] else [])
            bound = f"  ({', '.join(marks)})" if marks else ""
            lines.append(f"{r['label']:14s} {r['unit']:12s} {cells} {int(r['n']):3d} {_g(r['mean'])} {_g(r['sd'])} "
                         f"{_g(r['min'])} {_g(r['max'])} {_g(r['median_se'])}{bound}".rstrip())
        flagged = sorted(set(self.trials.loc[self.trials["implausible"], "trial"]))
        if flagged:
            lines.append(f"flagged implausible by their fits: {', '.join(flagged)} ("
                         + ("left out of the tests" if self.plausible_only else "in the tests; --plausible-only "
                            "leaves them out") + ")")
        lines += ["", "sd: between the trials of a condition; fit SE: the median of the fits' own standard errors",
                  "", f"test: {self.test_name}", f"  why: {self.test_reason}", ""]
        tw = max([len("term"), *(len(t) for t in self.tests["term"])])
        cw = max([len("contrast"), *(len(str(t)) for t in self.tests["contrast"].fillna(""))])
        lines.append(f"{'quantity':14s} {'scale':6s} {'term':{tw}s} {'contrast':{cw}s} {'effect [95 % CI]':30s} "
                     f"{'statistic':>18s} {'p':>8s} {'p Holm':>8s} {'n':>3s}")
        for _, r in self.tests.iterrows():
            if not r["term"]:
                lines.append(f"{r['label']:14s} {'':6s} not tested: {r['note']}")
                continue
            eff = ""
            if _finite(r["effect"]) is not None:
                op = "×" if r["scale"] == "log" else "Δ "
                eff = f"{op}{r['effect']:.3g} [{r['effect_low']:.3g}, {r['effect_high']:.3g}]"
            stat = f"{r['stat_name']}({r['df']}) = {r['statistic']:.3g}"
            lines.append(f"{r['label']:14s} {r['scale']:6s} {r['term']:{tw}s} {r['contrast']:{cw}s} {eff:30s} "
                         f"{stat:>18s} {_p(r['p'])} {_p(r['p_holm'])} {int(r['n']):3d}"
                         + (f"  ({r['note']})" if r["note"] else ""))
        lines += ["", ("effect: the second level against the first, averaged over the other factor(s); × a ratio "
                       "(log scale), Δ a difference; p Holm: adjusted over all the tests above")]
        return "\n".join(lines)

    def figure(self):
        """Each quantity by condition: each trial a point with its 95 % interval (hollow: on
        a bound), the condition's mean a bar (geometric on a log axis); p-values in the titles."""
        from matplotlib.ticker import FuncFormatter, NullFormatter

        from ..results.figure import Figure

        quantities = self.quantities()
        cells = _cells(self.trials, self.factors, self.levels)
        cols = min(4, len(quantities))
        rows = -(-len(quantities) // cols)
        fig = Figure(figsize=(max(3.3 * cols, 6.4), 2.9 * rows + 0.8), layout="constrained")
        axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
        for ax, (name, label, unit) in zip(axes, quantities):
            sub = self.trials[self.trials["quantity"] == name]
            log = bool((sub["estimate"] > 0).all()) and sub["estimate"].nunique() > 1
            for k, cell in enumerate(cells):
                mask = np.ones(len(sub), bool)
                for f, v in zip(self.factors, cell):
                    mask &= (sub[f] == v).to_numpy()
                pts = sub[mask]
                if pts.empty:
                    continue
                x = k + (np.linspace(-0.18, 0.18, len(pts)) if len(pts) > 1 else np.zeros(1))
                y = pts["estimate"].to_numpy(float)
                lo = pts["low"].to_numpy(float)
                hi = pts["high"].to_numpy(float)
                has = np.isfinite(lo) & np.isfinite(hi)
                if has.any():
                    ax.errorbar(x[has], y[has], yerr=[y[has] - lo[has], hi[has] - y[has]], fmt="none",
                                ecolor=f"C{k % 10}", elinewidth=1, capsize=2, alpha=0.8)
                bnd = pts["at_bound"].to_numpy(bool)
                odd = pts["implausible"].to_numpy(bool)
                for keep, marker in ((~odd, "o"), (odd, "x")):
                    ax.plot(x[keep & ~bnd], y[keep & ~bnd], marker, ms=4.5, color=f"C{k % 10}")
                    ax.plot(x[keep & bnd], y[keep & bnd], marker, ms=4.5, mfc="none", color=f"C{k % 10}")
                centre = float(np.exp(np.mean(np.log(y)))) if log else float(np.mean(y))
                ax.plot([k - 0.3, k + 0.3], [centre, centre], "k-", lw=1.5)
            if log:
                ax.set_yscale("log")
                plain = FuncFormatter(lambda v, _: f"{v:.4g}")
                ax.yaxis.set_major_formatter(plain)
                lo, hi = ax.get_ylim()
                ax.yaxis.set_minor_formatter(plain if hi < 8 * lo else NullFormatter())  # a narrow axis: minor labels
            ax.set_xticks(range(len(cells)), ["\n".join(c) for c in cells], fontsize=7)
            ax.set_xlim(-0.6, len(cells) - 0.4)
            ax.set_ylabel(f"{label} ({unit})" if unit and unit != "1" else label, fontsize=8)
            ax.tick_params(axis="y", labelsize=7)
            tests = self.tests[(self.tests["quantity"] == name) & self.tests["term"].astype(bool)]
            items = [f"{t}\u00a0{_p(p).strip()}" for t, p in zip(tests["term"], tests["p"])]
            title = "\n".join(textwrap.wrap("p: " + " · ".join(items), 52)) if items else ""
            ax.set_title(title or "not tested", fontsize=7)
        for ax in axes[len(quantities):]:
            ax.axis("off")
        n = self.trials["trial"].nunique()
        fig.suptitle(f"{self.model}: {n} trials, {self.n_subjects} subject{'s' if self.n_subjects != 1 else ''} "
                     f"· points: trials with 95 % intervals (hollow: on a bound; ×: flagged implausible"
                     f"{', not tested' if self.plausible_only else ''}) · bar: condition mean · "
                     f"p: {self.test_name.split(':')[0]}", fontsize=8)
        return fig

    def write(self, out: str | Path) -> dict[str, Path]:
        """Write ``cohort.csv`` (the table), ``cohort_trials.csv``, ``cohort_tests.csv``,
        ``cohort.txt`` (the printed view) and ``cohort.png`` to the folder ``out``."""
        from ..results.plotting import save_figure

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"table": out / "cohort.csv", "trials": out / "cohort_trials.csv", "tests": out / "cohort_tests.csv",
                 "text": out / "cohort.txt"}
        write_atomic(paths["table"], self.table.to_csv(index=False))
        write_atomic(paths["trials"], self.trials.to_csv(index=False))
        write_atomic(paths["tests"], self.tests.to_csv(index=False))
        write_atomic(paths["text"], self.format() + "\n")
        paths["figure"] = save_figure(self.figure(), out / "cohort.png")
        return paths


def _g(v) -> str:
    v = _finite(v)
    return f"{'':>10s}" if v is None else f"{v:10.4g}"


def _p(v) -> str:
    v = _finite(v)
    if v is None:
        return f"{'':>8s}"
    return f"{v:8.2g}" if v >= 1e-4 else f"{'<1e-4':>8s}"


def _cells(trials: pd.DataFrame, factors: Sequence[str], levels: dict) -> list[tuple[str, ...]]:
    present = set(map(tuple, trials[list(factors)].drop_duplicates().to_numpy()))
    grid: list[tuple[str, ...]] = [()]
    for f in factors:
        grid = [g + (v,) for g in grid for v in levels[f]]
    return [c for c in grid if c in present]


def cohort(results: str | Path | Iterable[str | Path] | list[tuple[Path, dict]], conditions: str | Path | Conditions,
           *, factors: Sequence[str] | None = None, plausible_only: bool = False) -> Cohort:
    """The cohort view of ``results`` (folders, files, or :func:`read_results`' list) by the
    conditions of ``conditions`` (a file for :func:`read_conditions`, or its result).

    A document whose trial has no row in the conditions is an error; trials of the conditions
    without a document are left out (a subset of a data set); failed fits are listed, not
    shown.  All documents must come from one model (problem, method, controller, noise model).
    ``plausible_only``: the fits flagged implausible are shown but left out of the tests.
    """
    if not isinstance(conditions, Conditions):
        conditions = read_conditions(conditions, factors)
    elif factors is not None and tuple(factors) != conditions.factors:
        raise OptionsError("give factors= to read_conditions, not with a Conditions already read")
    if isinstance(results, list) and results and isinstance(results[0], tuple):
        docs: list[tuple[Path, dict]] = results  # read_results' list
    else:
        docs = read_results(cast("str | Path | Iterable[str | Path]", results))  # not read_results' list
    table = conditions.table
    matched: dict[str, Path] = {}
    rows, failed = [], []
    models: dict[tuple, Path] = {}  # each model met: the first document of it
    for path, doc in docs:
        keys = []
        if doc.get("fit_id"):
            keys.append(trial_key(doc["fit_id"]))
        trials = doc.get("trials") or []
        if len(trials) == 1:
            keys.append(trial_key(trials[0]))
        keys.append(trial_key(path.name))
        key = conditions.find(keys)
        if key is None:
            raise DataError(f"{path}: no row of {conditions.source} for this fit (looked for trial "
                            f"{' or '.join(repr(k) for k in dict.fromkeys(keys))})")
        if key in matched:
            raise DataError(f"{path}: trial '{key}' (line {conditions.lines.get(key, '?')} of {conditions.source}) "
                            f"already has the result {matched[key]}")
        matched[key] = path
        if not doc.get("success"):
            failed.append(key)
            continue
        models.setdefault(_model_of(doc), path)
        if len(models) > 1:
            (m1, p1), (m2, p2) = list(models.items())[:2]
            raise DataError(f"{p2}: a fit of {_describe_model(m2)}, but {p1} is of {_describe_model(m1)}; a cohort "
                            f"compares the fits of one model")
        cond = table.loc[key]
        for q in _quantities(doc):
            if q["estimate"] is None:
                continue
            rows.append({"trial": key, "subject": cond["subject"], **{f: cond[f] for f in conditions.factors},
                         "quantity": q["name"], "label": q["label"], "unit": q["unit"], "estimate": q["estimate"],
                         "se": q["se"], "low": q["low"], "high": q["high"], "at_bound": bool(q["at_bound"]),
                         "implausible": flagged_implausible(doc.get("warnings")), "file": str(path)})
    if not rows:
        raise DataError(f"no successful fit among the {len(docs)} result document(s): nothing to compare"
                        + (f" (failed: {', '.join(failed)})" if failed else ""))
    trials = pd.DataFrame(rows)
    for c in ("estimate", "se", "low", "high"):
        trials[c] = pd.to_numeric(trials[c], errors="coerce").astype(float)
    levels = {f: tuple(v for v in conditions.levels[f] if v in set(trials[f])) for f in conditions.factors}
    subjects = trials["subject"].nunique()
    several = conditions.has_subject and subjects > 1
    summary = _summary(trials, conditions.factors, levels)
    tests, name, reason = _tests(trials, conditions.factors, levels, several, plausible_only)
    unmatched = [k for k in table.index if k not in matched]
    return Cohort(trials, summary, tests, conditions.factors, levels, _describe_model(next(iter(models))),
                  name, reason, failed, unmatched, subjects, plausible_only)


def _summary(trials: pd.DataFrame, factors: Sequence[str], levels: dict) -> pd.DataFrame:
    out = []
    quantities = list(dict.fromkeys(trials["quantity"]))
    for q in quantities:
        sub = trials[trials["quantity"] == q]
        for cell in _cells(sub, factors, levels):
            mask = np.ones(len(sub), bool)
            for f, v in zip(factors, cell):
                mask &= (sub[f] == v).to_numpy()
            pts = sub[mask]
            y = pts["estimate"].to_numpy(float)
            se = pts["se"].to_numpy(float)
            se = se[np.isfinite(se)]
            out.append({"quantity": q, "label": pts["label"].iloc[0], "unit": pts["unit"].iloc[0],
                        **dict(zip(factors, cell)), "n": len(y), "mean": float(np.mean(y)),
                        "sd": float(np.std(y, ddof=1)) if len(y) > 1 else math.nan,
                        "median": float(np.median(y)), "min": float(np.min(y)), "max": float(np.max(y)),
                        "median_se": float(np.median(se)) if se.size else math.nan,
                        "n_at_bound": int(pts["at_bound"].sum()), "n_implausible": int(pts["implausible"].sum())})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- the test

_OLS = ("OLS: ordinary least squares with the condition factors (sum-to-zero coding), Wald F test per factor "
        "(statsmodels)")
_MIXED = ("MixedLM: linear mixed-effects model with a random intercept per subject and the condition factors as "
          "fixed effects (sum-to-zero coding, REML), Wald chi² test per factor (statsmodels)")
_WHY_OLS = ("one subject: the trials are the units, and the repeats within each condition give the "
            "repeat-to-repeat spread that an effect is judged against (the fits' own standard errors are not used)")
_WHY_MIXED = ("several subjects: the trials of one subject are repeated measures, not independent units; the "
              "random intercept takes the subject-to-subject spread, the residual the repeat-to-repeat spread")


def _design(data: pd.DataFrame, factors: Sequence[str], levels: dict, interaction: bool):
    """Sum-to-zero coded design: the matrix, and per term its columns; two-level factors
    are coded −1 (first level) / +1 (second), so twice the coefficient is the second level
    minus the first, averaged over the other factors."""
    cols, terms = [np.ones(len(data))], {}
    coded = {}
    for f in factors:
        lv = levels[f]
        block = []
        for v in lv[1:]:
            block.append(np.where(data[f] == v, 1.0, np.where(data[f] == lv[0], -1.0, 0.0)))
        coded[f] = block
        terms[f] = list(range(len(cols), len(cols) + len(block)))
        cols += block
    if interaction:
        for i, f in enumerate(factors):
            for g in factors[i + 1:]:
                term = f"{f}:{g}"
                start = len(cols)
                for a in coded[f]:
                    for b in coded[g]:
                        cols.append(a * b)
                terms[term] = list(range(start, len(cols)))
    return np.column_stack(cols), terms


def _tests(trials: pd.DataFrame, factors: Sequence[str], levels: dict, several: bool, plausible_only: bool = False):
    try:
        import statsmodels.api as sm
    except ImportError:  # pragma: no cover - a test dependency, an extra of the package
        raise OptionsError("the cohort's tests need statsmodels: pip install statsmodels "
                           "(or colloc[stats])") from None
    from scipy import stats

    rows = []
    name, reason = (_MIXED, _WHY_MIXED) if several else (_OLS, _WHY_OLS)
    for q in dict.fromkeys(trials["quantity"]):
        sub = trials[trials["quantity"] == q]
        label, unit = sub["label"].iloc[0], sub["unit"].iloc[0]
        base = {"quantity": q, "label": label, "unit": unit, "test": "", "scale": "", "term": "", "contrast": "",
                "stat_name": "", "df": "", "note": ""}
        odd = sub["implausible"] & ~sub["at_bound"]
        keep = ~sub["at_bound"] & ~odd if plausible_only else ~sub["at_bound"]
        data = sub[keep]
        left_out = int(sub["at_bound"].sum())
        n_odd = int(odd.sum())
        note_bound = "; ".join(filter(None, [
            f"{left_out} estimate(s) on a bound left out" if left_out else "",
            (f"{n_odd} flagged implausible " + ("left out" if plausible_only else "included")) if n_odd else ""]))
        live = [f for f in factors if data[f].nunique() > 1]
        if data.empty:
            rows.append({**base, "note": (f"no estimate to test: {note_bound}" if plausible_only and n_odd
                                          else f"every estimate ({left_out}) on a bound"), "n": 0})
            continue
        if not live:
            rows.append({**base, "note": "; ".join(filter(None, ["no factor has two levels among the trials",
                                                                 note_bound])), "n": len(data)})
            continue
        lv = {f: tuple(v for v in levels[f] if v in set(data[f])) for f in live}
        log = bool((data["estimate"] > 0).all())
        y = np.log(data["estimate"].to_numpy(float)) if log else data["estimate"].to_numpy(float)
        if np.ptp(y) <= 1e-12 * max(1.0, float(np.max(np.abs(y)))):
            rows.append({**base, "note": "; ".join(filter(None, ["the same in every trial", note_bound])),
                         "n": len(data)})
            continue
        n_cells = len(data[live].drop_duplicates())
        interaction = len(live) > 1 and len(data) - n_cells >= 2
        X, terms = _design(data, live, lv, interaction)
        if interaction and np.linalg.matrix_rank(X) < X.shape[1]:  # a condition missing: no interaction
            X, terms = _design(data, live, lv, False)
        rank = np.linalg.matrix_rank(X)
        if rank < X.shape[1] or len(y) - rank < MIN_RESIDUAL_DF:
            why = ("the factors are confounded among these trials" if rank < X.shape[1] else
                   f"{len(y)} trial(s) for {rank} model coefficient(s): no spread left to judge effects against")
            rows.append({**base, "note": "; ".join(filter(None, [why, note_bound])), "n": len(data)})
            continue
        groups = data["subject"].to_numpy()
        n_subj = len(set(groups))
        note = [note_bound] if note_bound else []
        if several and n_subj > 1:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fit = sm.MixedLM(y, X, groups=groups).fit(reml=True)
            if any("converge" in str(w.message).lower() or "singular" in str(w.message).lower()
                   or "boundary" in str(w.message).lower() for w in caught):
                note.append("the mixed model's fit warned (subject variance near zero or not converged)")
            k_fe = X.shape[1]
            beta, cov = np.asarray(fit.fe_params), np.asarray(fit.cov_params())[:k_fe, :k_fe]
            df_resid, stat_name, dist = None, "chi2", "normal"
        else:
            fit = sm.OLS(y, X).fit()
            beta, cov = np.asarray(fit.params), np.asarray(fit.cov_params())
            df_resid, stat_name, dist = fit.df_resid, "F", "t"
        for term, idx in terms.items():
            R = np.zeros((len(idx), X.shape[1]))
            R[np.arange(len(idx)), idx] = 1.0
            b = R @ beta
            V = R @ cov @ R.T
            wald = float(b @ np.linalg.solve(V, b))
            if df_resid is not None:  # F test of the least-squares fit
                stat, df = wald / len(idx), f"{len(idx)},{int(df_resid)}"
                p = float(stats.f.sf(stat, len(idx), df_resid))
            else:
                stat, df = wald, f"{len(idx)}"
                p = float(stats.chi2.sf(stat, len(idx)))
            effect = low = high = math.nan
            contrast = ""
            if len(idx) == 1 and ":" not in term:
                d, s = 2 * float(b[0]), 2 * math.sqrt(float(V[0, 0]))
                zq = stats.t.ppf(0.975, df_resid) if dist == "t" else stats.norm.ppf(0.975)
                lo, hi = d - zq * s, d + zq * s
                effect, low, high = (math.exp(d), math.exp(lo), math.exp(hi)) if log else (d, lo, hi)
                contrast = f"{lv[term][1]} vs {lv[term][0]}"
            elif len(idx) == 1:
                contrast = "interaction"
            rows.append({**base, "test": "MixedLM" if stat_name == "chi2" else "OLS",
                         "scale": "log" if log else "linear", "term": term, "contrast": contrast,
                         "effect": effect, "effect_low": low, "effect_high": high, "stat_name": stat_name,
                         "statistic": stat, "df": df, "p": p, "n": len(y), "n_subjects": n_subj,
                         "note": "; ".join(note)})
    tests = pd.DataFrame(rows, columns=["quantity", "label", "unit", "test", "scale", "term", "contrast", "effect",
                                        "effect_low", "effect_high", "stat_name", "statistic", "df", "p", "p_holm",
                                        "n", "n_subjects", "note"])
    ps = tests["p"].to_numpy(float)
    ok = np.isfinite(ps)
    holm = np.full(len(ps), math.nan)
    if ok.any():
        from statsmodels.stats.multitest import multipletests

        holm[ok] = multipletests(ps[ok], method="holm")[1]
    tests["p_holm"] = holm
    return tests, name, reason
