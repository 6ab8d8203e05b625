"""Versions of colloc and of what it runs on, recorded in every result document."""

from __future__ import annotations

__all__ = ["__version__", "versions"]

__version__ = "0.1.0"

_VERSIONS: dict[str, str] = {}


def versions() -> dict[str, str]:
    """Versions of colloc, CasADi, IPOPT (from the bundled library's file name), numpy, scipy, pandas."""
    if not _VERSIONS:
        import re
        from pathlib import Path

        import casadi as ca
        import numpy as np
        import pandas as pd
        from scipy.version import version as scipy_version

        # CasADi bundles IPOPT as a shared library whose file name carries the version
        ipopt = "unknown"
        found = sorted(Path(ca.__file__).parent.glob("*ipopt*"))
        for path in found:
            match = re.search(r"ipopt[.\w-]*?(\d+\.\d+\.\d+)", path.name)
            if match and "sipopt" not in path.name:
                ipopt = match.group(1)
                break
        _VERSIONS.update(
            colloc=__version__, casadi=ca.CasadiMeta.version(), ipopt=ipopt, numpy=np.__version__,
            scipy=scipy_version, pandas=pd.__version__,
        )
    return dict(_VERSIONS)
