"""``colloc problems``: the installed problems."""

from __future__ import annotations

from ..studies.identify import problem_registry
from .common import EXIT_OK


def add_parser(sub) -> None:
    """The ``problems`` sub-command."""
    ls = sub.add_parser("problems", help="list installed problems", description="List installed problems.")
    ls.set_defaults(func=cmd_problems)


def cmd_problems(args) -> int:
    for name, ep in sorted(problem_registry().items()):
        print(f"{name:16s} {ep.value}")
    return EXIT_OK
