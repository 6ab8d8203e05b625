"""``colloc delay-margin``: the delay margin of x' = J_i x(t) + J_d x(t − τ) from two matrices, and
the printout that ``colloc spine`` shares."""

from __future__ import annotations

import sys
from pathlib import Path

from .common import EXIT_FAILED, EXIT_OK, UsageError, number


def add_parser(sub) -> None:
    """The ``delay-margin`` sub-command."""
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

    from ..stability.delay_margin import delay_margin

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
