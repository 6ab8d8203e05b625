"""The ``colloc spine`` command line (``one-dof``, ``stability``), plugged into ``colloc`` through
the ``colloc.commands`` entry point ``spine = "colloc_problems.spine.command:add_parser"``.

Only argparse is imported here; each handler imports its model when the command runs, so that
``colloc --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys

from colloc_problems.spine import DEFAULT_DAMPING

__all__ = ["DEFAULT_DAMPING", "add_parser", "add_stability_parser", "cli_one_dof"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``spine`` (with its analyses ``one-dof`` and ``stability``) to the ``colloc``
    sub-commands; the new parser (its sub-parsers are of its own class, so that the command
    line's one-line errors reach them too)."""
    sp = subparsers.add_parser("spine", help="Franklin (2006) reflexive spine model",
                               description="Analyses of the Franklin (2006) reflexive spine model.")
    spine_sub = sp.add_subparsers(dest="spine_command", metavar="ANALYSIS", required=True, parser_class=type(sp))
    add_one_dof_parser(spine_sub)
    add_stability_parser(spine_sub)
    return sp


def add_one_dof_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``one-dof`` to the ``colloc spine`` sub-commands (its handler :func:`cli_one_dof`)."""
    od = subparsers.add_parser("one-dof", help="J_i, J_d and delay margin of the §3.D 1-DoF example",
                               description="Linearise the §3.D one-degree-of-freedom reflexive pendulum "
                                           "(CasADi AD) and compute its delay margin. Defaults are the "
                                           "thesis values (J_i = [[0,1],[4.88,-1.09]], J_d = [[0,0],"
                                           "[-8.15,-1.63]], margin 0.317 s). Exit 1 when unstable at "
                                           "zero delay.")
    od.add_argument("--q", type=float, default=20.0, help="intrinsic stiffness gain (default 20)")
    od.add_argument("--b", type=float, default=2.0, help="intrinsic damping gain, s (default 2)")
    od.add_argument("--alpha2", type=float, default=0.5, help="activation of muscle M2, in (0, 1] (default 0.5)")
    od.add_argument("--gp", type=float, default=15.0, help="proportional reflex gain G_p (default 15)")
    od.add_argument("--gd", type=float, default=3.0, help="derivative reflex gain G_d, s (default 3)")
    od.add_argument("--g", type=float, default=None, help="gravity (default 10, as in §3.D.iv)")
    od.add_argument("--f0", type=float, default=None, help="maximum muscle force (default 1)")
    od.add_argument("--m", type=float, default=None, help="pendulum mass (default 1)")
    od.add_argument("--length", type=float, default=None, help="pendulum length L (default 1)")
    od.add_argument("--lm1", type=float, default=None, help="length of M1 at equilibrium (default 0.5)")
    od.add_argument("--lm2", type=float, default=None, help="length of M2 at equilibrium (default 2)")
    od.add_argument("--angle-m1", type=float, default=None, metavar="DEG",
                    help="angle between pendulum and M1, degrees (default 90)")
    od.add_argument("--angle-m2", type=float, default=None, metavar="DEG",
                    help="angle between pendulum and M2, degrees (default 10)")
    od.add_argument("--method", choices=("sweep", "exact"), default="sweep", help="delay-margin method")
    od.add_argument("--json", action="store_true", help="print the result as JSON and nothing else")
    od.set_defaults(func=cli_one_dof)
    return od


def cli_one_dof(args) -> int:
    """Handler of ``colloc spine one-dof``; returns the exit code (0 stable at zero delay, 1 not)."""
    from colloc_problems.spine.one_dof import one_dof

    from colloc.cli import format_matrix, margin_lines

    result = one_dof(q=args.q, b=args.b, alpha2=args.alpha2, gp=args.gp, gd=args.gd, g=args.g, f0=args.f0,
                     m=args.m, length=args.length, lm1=args.lm1, lm2=args.lm2,
                     angle_m1_deg=args.angle_m1, angle_m2_deg=args.angle_m2, method=args.method)
    if args.json:
        sys.stdout.write(json.dumps(result.to_dict()) + "\n")
    else:
        p = result.parameters
        print("Franklin (2006) §3.D 1-DoF reflexive pendulum, x = [theta, theta']")
        print(f"q = {p['q']:g}, b = {p['b']:g} s, alpha2 = {p['alpha2']:g} (alpha1 = {result.alpha1:.6g}), "
              f"Gp = {p['gp']:g}, Gd = {p['gd']:g} s, g = {p['g']:g}, f0 = {p['f0']:g}")
        print(format_matrix("J_i", result.J_i))
        print(format_matrix("J_d", result.J_d))
        print("\n".join(margin_lines(result.margin)))
    return 0 if result.stable_at_zero_delay else 1


def _run_stability(args) -> int:
    from colloc_problems.spine.stability import cli_stability

    return cli_stability(args)


def add_stability_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``stability`` to the ``colloc spine`` sub-commands.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The ``spine`` sub-parser collection (made by :func:`add_parser`).

    Returns
    -------
    argparse.ArgumentParser
        The new sub-parser (its handler, which runs
        :func:`colloc_problems.spine.stability.cli_stability`, is set as ``func``).
    """
    sp = subparsers.add_parser(
        "stability", help="minimum-power stable activations of the 18-DoF spine and its delay margin",
        description="Franklin (2006) 18-DoF, 90-muscle spine: activations minimizing metabolic power subject "
                    "to equilibrium in the lordotic posture and stability at zero reflex delay (IPOPT, several "
                    "random starts), co-contraction and delay margin. Exit 0 when a stable solution exists, 1 when "
                    "none does (or the solver failed).")
    sp.add_argument("--load", type=float, required=True, metavar="N",
                    help="downward external load 20 cm anterior at T4 (N; thesis 0 or 200)")
    sp.add_argument("--reflex-gain", type=float, required=True, metavar="G",
                    help="proportional reflex gain G_p = G_R (thesis 0 ... 100)")
    sp.add_argument("--damping", type=float, default=DEFAULT_DAMPING, metavar="b",
                    help=f"intrinsic damping gain b, s (default {DEFAULT_DAMPING:g}; thesis 0.2, 2, 20)")
    sp.add_argument("--stiffness-gain", type=float, default=10.0, metavar="q",
                    help="intrinsic stiffness gain q (default 10)")
    sp.add_argument("--differential-gain", type=float, default=0.0, metavar="Gd",
                    help="derivative reflex gain G_d, s (default 0)")
    sp.add_argument("--starts", type=int, default=3, metavar="K", help="random starts (default 3)")
    sp.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the random starts (default 0)")
    sp.add_argument("--method", choices=("sweep", "exact"), default="sweep", help="delay-margin method")
    sp.add_argument("--json", action="store_true", help="print the result as JSON and nothing else")
    sp.set_defaults(func=_run_stability)
    return sp
