"""Franklin (2006) §3.D one-degree-of-freedom example: its data and parameter checks.

The parameters, published results and the independent re-computation of the thesis' §3.D
example are ``data/spine/one_dof_example.json`` (each entry with ``value`` and ``source``).
"""

from __future__ import annotations

import copy
import json
import math
from functools import lru_cache

import numpy as np

from colloc import CollocInputError
from colloc_problems._data import data_path

__all__ = ["DATA", "default_parameters", "example_data"]

#: Shipped data file (relative to the data folder).
DATA = ("spine", "one_dof_example.json")

# JSON parameter name -> keyword of one_dof()
_JSON_NAMES = {
    "q": "q", "b": "b", "alpha2": "alpha2", "Gp": "gp", "Gd": "gd", "g": "g", "f0": "f0", "m": "m",
    "L_p": "length", "Lm1": "lm1", "Lm2": "lm2",
    "angle_pendulum_M1": "angle_m1_deg", "angle_pendulum_M2": "angle_m2_deg",
}


@lru_cache(maxsize=1)
def _load() -> dict:
    with open(data_path(*DATA), encoding="utf-8") as fh:
        return json.load(fh)


def example_data() -> dict:
    """The §3.D data set (``data/spine/one_dof_example.json``) as a fresh dictionary.

    Parameters
    ----------
    None

    Returns
    -------
    dict
        Parameters, equations, published results (J_i, J_d, crossing, margin, Table
        3.D.1) and the independent re-computation, each entry with ``value``/``source``.
    """
    return copy.deepcopy(_load())


def default_parameters() -> dict[str, float]:
    """The §3.D parameter values from the JSON, under the keyword names of :func:`one_dof`.

    Parameters
    ----------
    None

    Returns
    -------
    dict
        ``q, b, alpha2, gp, gd, g, f0, m, length, lm1, lm2, angle_m1_deg, angle_m2_deg``.
    """
    par = _load()["parameters"]
    return {kw: float(par[name]["value"]) for name, kw in _JSON_NAMES.items()}


def _check(p: dict[str, float]) -> None:
    for k, v in p.items():
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise CollocInputError(f"{k} must be a finite number, got {v!r}")
    if not 0.0 < p["alpha2"] <= 1.0:
        raise CollocInputError(f"alpha2 must be in (0, 1] (a muscle activation), got {p['alpha2']:g}")
    for k in ("q", "b", "gp", "gd", "g", "f0"):
        if p[k] < 0:
            raise CollocInputError(f"{k} must be >= 0, got {p[k]:g}")
    for k in ("m", "length", "lm1", "lm2", "f0"):
        if p[k] <= 0:
            raise CollocInputError(f"{k} must be > 0, got {p[k]:g}")
    for k in ("angle_m1_deg", "angle_m2_deg"):
        if not 0.0 < p[k] < 180.0:
            raise CollocInputError(f"{k} must be in (0, 180) degrees, got {p[k]:g}")


def _resolve(overrides: dict) -> dict[str, float]:
    p = default_parameters()
    unknown = sorted(set(overrides) - set(p))
    if unknown:
        raise CollocInputError(f"unknown parameter(s) {', '.join(unknown)}; known: {', '.join(p)}")
    p.update({k: float(v) if isinstance(v, (int, float, np.floating, np.integer)) else v
              for k, v in overrides.items() if v is not None})
    _check(p)
    return p
