"""``python -m colloc.cli``: the ``colloc`` command."""

from . import run

run()
