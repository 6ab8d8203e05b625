"""The ``colloc ship-motion`` command: ship-stance's deck motion (its 12 ship columns, docs/contracts.md §2)
for one seeded realisation of a sea state, written as a CSV record.

Plugged into ``colloc`` through the ``colloc.commands`` entry point
``ship-motion = "colloc_problems.ship_command:add_parser"``.  Only argparse is imported here;
the handler imports NumPy and the sea-keeping model when the command runs.
"""

from __future__ import annotations

import argparse
import math

__all__ = ["add_parser", "cli_ship_motion"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``ship-motion`` to the ``colloc`` sub-commands; the new parser."""
    from colloc.cli import number

    sm = subparsers.add_parser("ship-motion", help="deck motion of the MSS supply vessel in a JONSWAP sea state (CSV)",
                               description="Write the 12 ship columns of docs/contracts.md §2 (ship-stance) for one seeded "
                                           "realisation of a long-crested JONSWAP sea through the supply vessel's "
                                           "motion RAOs (zero speed), with exact derivatives.")
    sm.add_argument("--hs", type=number, required=True, metavar="M", help="significant wave height (m, > 0)")
    sm.add_argument("--tp", type=number, required=True, metavar="S", help="peak period (s, > 0)")
    sm.add_argument("--gamma", type=number, default=3.3, help="JONSWAP peak enhancement, 1-7 (default 3.3)")
    sm.add_argument("--heading", type=number, default=180.0, metavar="DEG",
                    help="wave direction of travel relative to the bow, 0-360: 0 following, 90 towards "
                         "starboard, 180 head seas (default)")
    sm.add_argument("--point", default=None, metavar="X,Y,Z",
                    help="deck point (m; x to the bow, y to port, z up) from the vessel's CG (default 0,0,0)")
    sm.add_argument("--duration", type=number, default=60.0, metavar="S", help="record length (default 60 s)")
    sm.add_argument("--rate", type=number, default=100.0, metavar="HZ", help="sampling rate (default 100 Hz)")
    sm.add_argument("--seed", type=int, default=0, help="seed of the random phases (default 0)")
    sm.add_argument("--harmonics", type=int, default=200, metavar="N", help="wave components (default 200)")
    sm.add_argument("--out", required=True, metavar="FILE.csv", help="where to write the record (atomically)")
    sm.set_defaults(func=cli_ship_motion)
    return sm


def cli_ship_motion(args) -> int:
    """Handler of ``colloc ship-motion``; returns the exit code (bad values raise
    :class:`colloc.cli.UsageError` or :class:`colloc.OptionsError`: exit 2)."""
    import numpy as np
    from colloc_problems.ship_stance import SHIP_COLUMNS

    import colloc as co
    from colloc.cli import UsageError, check_output_file, number

    check_output_file("--out", args.out, (".csv",))
    sea = co.SeaState(args.hs, args.tp, args.gamma, args.heading)
    point = [number(v) for v in args.point.split(",")] if args.point else [0.0, 0.0, 0.0]
    if len(point) != 3:
        raise UsageError(f"--point {args.point}: give three numbers x,y,z (m)")
    if not (math.isfinite(args.duration) and args.duration > 0):
        raise UsageError(f"--duration {args.duration:g}: must be a finite number > 0 (s)")
    if not (math.isfinite(args.rate) and args.rate > 0):
        raise UsageError(f"--rate {args.rate:g}: must be a finite number > 0 (Hz)")
    motion = co.ship_motion(sea, point=point, seed=args.seed, harmonics=args.harmonics)
    time = np.arange(round(args.duration * args.rate) + 1) / args.rate
    table = np.column_stack([time, motion(time)])
    lines = [",".join(("time",) + SHIP_COLUMNS)] + [",".join(f"{v:.10g}" for v in row) for row in table]
    co.write_atomic(args.out, "\n".join(lines) + "\n")
    print(f"{args.out}: {time.size} rows, Hs {sea.hs:g} m, Tp {sea.tp:g} s, gamma {sea.gamma:g}, "
          f"heading {sea.heading:g} deg, seed {args.seed}; roll std {np.degrees(table[:, 1].std()):.2f} deg, "
          f"pitch std {np.degrees(table[:, 2].std()):.2f} deg")
    return 0
