"""Names that CasADi accepts."""

from __future__ import annotations

import re

__all__ = ["function_name"]


def function_name(text: str) -> str:
    """A valid CasADi function name made from ``text`` (letters, digits, single underscores)."""
    name = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]", "_", text)).strip("_")
    return name if name and name[0].isalpha() else f"f_{name}"
