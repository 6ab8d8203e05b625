"""How well the data determine the parameters: correlations, the scaled Fisher condition
and the worst-determined parameter combination, from a covariance."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Identifiability", "identifiability"]


@dataclass
class Identifiability:
    """How well the data determine the parameters, from their covariance.

    Attributes
    ----------
    standard_errors : dict of str to float
    relative_errors : dict of str to float
        Standard error over ``|estimate|`` (``inf`` for an estimate of zero).
    correlation : pandas.DataFrame
    condition : float
        Condition number of the Fisher information scaled to unit standard errors (the
        condition number of the correlation matrix): 1 when every parameter is determined
        independently; large when a combination of parameters is not.
    weakest_direction : dict of str to float
        Unit eigenvector of the correlation matrix with the smallest eigenvalue: the
        combination (in standard-error units) the data determine worst.
    poorly_determined : list of str
        Parameters whose relative error exceeds ``relative_threshold``.
    strongly_correlated : list of (str, str, float)
        Pairs with ``|correlation|`` above ``correlation_threshold``.
    """

    standard_errors: dict
    relative_errors: dict
    correlation: object
    condition: float
    weakest_direction: dict
    poorly_determined: list
    strongly_correlated: list

    def summary(self) -> str:
        """A few lines of plain text for a report."""
        lines = [f"condition of the scaled Fisher information: {self.condition:.3g}"]
        lines += [f"  {k}: SE {self.standard_errors[k]:.4g} ({self.relative_errors[k]:.1%} of the estimate)"
                  for k in self.standard_errors]
        if self.strongly_correlated:
            lines.append("  strongly correlated: " + ", ".join(f"{a}–{b} ({r:+.3f})"
                                                             for a, b, r in self.strongly_correlated))
        if self.poorly_determined:
            lines.append("  poorly determined: " + ", ".join(self.poorly_determined))
        return "\n".join(lines)


def identifiability(covariance: pd.DataFrame, estimates: Mapping[str, float], *, relative_threshold: float = 0.1,
                    correlation_threshold: float = 0.9) -> Identifiability:
    """Identifiability diagnosis from a parameter covariance.

    Parameters
    ----------
    covariance : pandas.DataFrame
        Square, indexed by parameter name (``Result.covariance``).
    estimates : mapping of str to float
        The estimates (``Result.parameters``), for relative errors.
    relative_threshold : float
        A parameter is "poorly determined" when ``SE/|estimate|`` exceeds this.
    correlation_threshold : float
        A pair is "strongly correlated" when ``|correlation|`` exceeds this.
    """
    import pandas as pd

    names = list(covariance.index)
    C = np.asarray(covariance, dtype=float)
    if C.shape != (len(names), len(names)) or not np.all(np.isfinite(C)):
        raise ValueError("identifiability: covariance must be a finite square matrix indexed by parameter names")
    se = np.sqrt(np.clip(np.diag(C), 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        R = C / np.outer(se, se)
    R = np.where(np.isfinite(R), R, 0.0)
    np.fill_diagonal(R, 1.0)
    evals, evecs = np.linalg.eigh(R)
    condition = float(evals[-1] / evals[0]) if evals[0] > 0 else float("inf")
    rel = {k: (float(s / abs(estimates[k])) if estimates[k] != 0 else float("inf")) for k, s in zip(names, se)}
    pairs = [(names[i], names[j], float(R[i, j])) for i in range(len(names)) for j in range(i + 1, len(names))
             if abs(R[i, j]) > correlation_threshold]
    weakest = evecs[:, 0] * np.sign(evecs[np.argmax(np.abs(evecs[:, 0])), 0])
    return Identifiability(
        standard_errors=dict(zip(names, se.tolist())),
        relative_errors=rel,
        correlation=pd.DataFrame(R, index=names, columns=names),
        condition=condition,
        weakest_direction=dict(zip(names, weakest.tolist())),
        poorly_determined=[k for k in names if rel[k] > relative_threshold],
        strongly_correlated=pairs,
    )
