"""Where the shipped datasets live (the repository's ``data/`` or the installed copy)."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["data_path"]


def data_path(*parts: str) -> Path:
    """Path of a shipped data file, e.g. ``data_path("pendulum", "pendulum.csv")``.

    Looks in the source checkout first (``<repo>/data``), then in the copy installed under
    ``<prefix>/share/colloc/data`` by ``pip install .``.
    """
    candidates = [
        Path(__file__).resolve().parents[1] / "data",
        Path(sys.prefix) / "share" / "colloc" / "data",
    ]
    for base in candidates:
        path = base.joinpath(*parts)
        if path.exists():
            return path
    raise FileNotFoundError(
        f"shipped data file {'/'.join(parts)} not found in {', '.join(str(c) for c in candidates)}"
    )
