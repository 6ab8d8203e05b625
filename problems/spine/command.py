"""The ``colloc spine stability`` command line: its options and a handler that imports the
model only when the command runs (so that ``colloc --help`` stays fast)."""

from __future__ import annotations

import argparse

__all__ = ["DEFAULT_DAMPING", "add_stability_parser"]

#: Intrinsic damping gain b (s) used when none is given (the thesis' middle value).
DEFAULT_DAMPING = 2.0


def _run(args) -> int:
    from colloc_problems.spine.stability import cli_stability

    return cli_stability(args)


def add_stability_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``stability`` to the ``colloc spine`` sub-commands.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The ``spine`` sub-parser collection (``spine_sub`` in ``colloc/cli.py``).

    Returns
    -------
    argparse.ArgumentParser
        The new sub-parser (its handler :func:`cli_stability` is set as ``func``).
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
    sp.set_defaults(func=_run)
    return sp
