"""Experiments of Franklin (2006) chapters 4–5 on the 18-DoF spine, with figures.

Each experiment is a function that computes its table, writes figures (matplotlib Agg,
atomically via :func:`colloc.save_figure`) and a JSON file into ``out``, and returns the data;
they live in :mod:`~colloc_problems.spine.sweeps` and :mod:`~colloc_problems.spine.sensitivity`
(figures: :mod:`~colloc_problems.spine.figures`) and are gathered here.  Command line::

    python -m colloc_problems.spine.experiments NAME [--out DIR] [--quick]

with ``NAME`` one of ``reflex-gain`` (Table 5.1, Figs 5.2 / 4.5 / 4.6), ``delay-margin``
(Figs 5.3 / 4.7), ``differential-gain`` (Fig. 4.8), ``load-position`` (sensitivity of the
200 N feasibility threshold to the unknown load point, data README anomaly 13), ``nonlinear``
(Ch. 4 B.v: nonlinear DDE simulations around the delay margin) or ``all``.
"""

from __future__ import annotations

import argparse
import sys
import time

from colloc_problems.spine.sensitivity import load_position_sensitivity, nonlinear_verification, state_space_distance
from colloc_problems.spine.sweeps import (
    DAMPINGS,
    DEFAULT_GAINS,
    MARGIN_GAINS,
    PUBLISHED_TABLE_5_1,
    delay_margin_vs_differential_gain,
    delay_margin_vs_reflex_gain,
    max_tolerable_gain,
    reflex_gain_sweep,
)

__all__ = [
    "DAMPINGS",
    "DEFAULT_GAINS",
    "EXPERIMENTS",
    "MARGIN_GAINS",
    "PUBLISHED_TABLE_5_1",
    "delay_margin_vs_differential_gain",
    "delay_margin_vs_reflex_gain",
    "load_position_sensitivity",
    "main",
    "max_tolerable_gain",
    "nonlinear_verification",
    "reflex_gain_sweep",
    "state_space_distance",
]


EXPERIMENTS = {
    "reflex-gain": reflex_gain_sweep,
    "delay-margin": delay_margin_vs_reflex_gain,
    "differential-gain": delay_margin_vs_differential_gain,
    "load-position": load_position_sensitivity,
    "nonlinear": nonlinear_verification,
}


def _summary(name: str, res: dict) -> list[str]:
    lines = [f"== {name} =="]
    if name == "reflex-gain":
        lines.append(f"{'load':>5} {'G_R':>6} {'stable':>6} {'power W':>9} {'cocon %':>8} {'minF %':>8} "
                     f"{'margin ms':>10} {'maxRe':>9} {'resid':>8} {'opt s':>6}")
        for r in res["rows"]:
            dm = r["delay_margin_s"]
            lines.append(
                f"{r['load_N']:5.0f} {r['reflex_gain']:6g} {r['stable']!s:>6} "
                f"{_num(r['metabolic_power_w'], '9.4f')} {_num(r['co_contraction_pct'], '8.2f')} "
                f"{_num(r['co_contraction_min_force_pct'], '8.2f')} "
                f"{'inf' if dm is None else format(1e3 * dm, '10.2f'):>10} {_num(r['max_real_eigenvalue'], '9.3g')} "
                f"{_num(r['equilibrium_residual'], '8.1e')} {_num(r['optimization_s'], '6.2f')}")
        lines.append("Table 5.1 (published vs ours): " + "; ".join(
            f"{t['load_N']} N G_R={t['G_R']}: {t['published_pct']} vs "
            f"{'no stable solution' if not t['ours_stable'] else format(t['ours_pct'], '.1f')}"
            for t in res["table_5_1"]))
    elif name == "delay-margin":
        for r in res["rows"]:
            dm = r["delay_margin_s"]
            lines.append(f"{r['load_N']:5.0f} N  G_R {r['reflex_gain']:6g}  b {r['damping']:5g}  margin "
                         f"{'inf' if dm is None else format(1e3 * dm, '.2f')} ms")
        lines.append(f"max tolerable gain at 60 ms: {res['max_tolerable_gain']}")
        lines.append(f"timings: {res['timings']}")
    elif name == "differential-gain":
        for r in res["rows"]:
            dm = r["delay_margin_s"]
            lines.append(f"b {r['damping']:5g}  G_d {r['differential_gain']:6g}  margin "
                         f"{'inf' if dm is None else format(1e3 * dm, '.2f')} ms")
    elif name == "nonlinear":
        lines.append(f"delay margin {1e3 * (res['delay_margin_s'] or 0):.3f} ms at "
                     f"{res['crossing_frequency_rad_s']} rad/s")
        for r in res["rows"]:
            lines.append(f"{r['pct_delay_margin']:6g} %  tau {1e3 * r['delay_s']:.3f} ms  {r['status']}  "
                         f"D_ss slope {r['dss_slope']:+.4g} 1/s  ({r['time_s']:.1f} s)")
    elif name == "load-position":
        for r in res["rows"]:
            g = r["threshold_gain"]
            lines.append(f"height {r['height_m']:.2f} m, anterior {r['anterior_m']:.2f} m: reserve(G=0) − margin "
                         f"{r['reserve_at_zero_gain']:.3g} N·m/rad, threshold G_R "
                         f"{'> ' + format(res['max_gain'], 'g') if g is None else format(g, '.3g')}")
    lines.extend(f"figure: {f}" for f in res.get("figures", []))
    return lines


def _num(v, spec):
    return "n/a" if v is None else format(v, spec)


def main(argv=None) -> int:
    """``python -m colloc_problems.spine.experiments NAME [--out DIR] [--quick]``.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).
    """
    ap = argparse.ArgumentParser(prog="python -m colloc_problems.spine.experiments",
                                 description="Franklin (2006) Ch. 4-5 experiments on the 18-DoF spine model.")
    ap.add_argument("name", choices=[*EXPERIMENTS, "all"])
    ap.add_argument("--out", default="spine-experiments", help="output folder (default ./spine-experiments)")
    ap.add_argument("--quick", action="store_true", help="coarser grids and one start (smoke run)")
    args = ap.parse_args(argv)
    names = list(EXPERIMENTS) if args.name == "all" else [args.name]
    for name in names:
        t0 = time.perf_counter()
        kwargs = {"out": args.out}
        if args.quick:
            kwargs.update({"reflex-gain": {"gains": (0.0, 10.0), "loads": (0.0,), "starts": 1},
                           "delay-margin": {"gains": (1.0, 10.0), "loads": (0.0,), "starts": 1},
                           "differential-gain": {"differential_gains": (0.0, 1.0), "starts": 1},
                           "load-position": {"heights": (0.2,), "anteriors": (0.2,)},
                           "nonlinear": {"percentages": (50.0, 150.0), "t_end": 1.0}}[name])
        res = EXPERIMENTS[name](**kwargs)
        print("\n".join(_summary(name, res)))
        print(f"({name}: {time.perf_counter() - t0:.1f} s)")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
