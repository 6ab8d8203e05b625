"""Signal tools for centre-of-pressure (COP) posturography records.

These functions take one uniformly sampled, one-dimensional signal (one COP coordinate at a
time) and its sampling interval ``dt`` in seconds:

* :func:`lowpass` -- zero-phase Butterworth low-pass filter;
* :func:`derivative` -- first or second derivative, second-order accurate everywhere;
* :func:`cumulative_integral` -- running trapezoidal integral;
* :func:`sdf` -- stabilogram diffusion function, computed in O(N log N);
* :func:`mean_power_frequency` -- mean frequency of the Welch power spectrum;
* :func:`resolution`, :func:`rounding_sd` -- the quantum a record was written with, and the SD
  δ/√12 of the noise that rounding to it adds.

These take both coordinates (``ap``, ``ml``, in metres) of one record (:mod:`.posturography`,
the definitions of the data set of Santos & Duarte 2016):

* :func:`ellipse_area` -- area of the 95 % prediction ellipse (m²);
* :func:`path_length`, :func:`mean_speed` -- COP path length (m) and mean speed (m/s);
* :func:`mean_frequency` -- power-weighted mean frequency of the two coordinates (Hz);
* :func:`sway_metrics` -- area, mean speed and mean frequency at once.

Bad input raises :class:`colloc.CollocInputError` (a :class:`ValueError`) whose message
names the offending argument.

References
----------
Collins, J. J. & De Luca, C. J. (1993). Open-loop and closed-loop control of posture: a
random-walk analysis of center-of-pressure trajectories. Exp. Brain Res. 95, 308-318.
Benda, B. J., Riley, P. O. & Krebs, D. E. (1994). Biomechanical relationship between center of
gravity and center of pressure during standing. IEEE Trans. Rehabil. Eng. 2, 3-10.
Barauskas, R. & Krušinskienė, R. (2007).
Santos, D. A. & Duarte, M. (2016). A public data set of human balance evaluations. PeerJ 4,
e2648 (the sources of :mod:`.posturography` are in its docstring).
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

#: Where each name lives: imported on first use (PEP 562), so that importing one module of this
#: package (``colloc.signals.forecast`` for the Kalman path) does not pay for SciPy's signal
#: processing (≈ 0.6 s) until a filter or a spectrum is asked for.
_LAZY = {"sdf": "diffusion", "cumulative_integral": "filters", "derivative": "filters", "lowpass": "filters",
         "ellipse_area": "posturography", "mean_frequency": "posturography", "mean_power_frequency": "posturography",
         "mean_speed": "posturography", "path_length": "posturography", "sway_metrics": "posturography",
         "resolution": "rounding", "rounding_sd": "rounding", "white_noise_floor": "noise"}

__all__ = ["cumulative_integral", "derivative", "ellipse_area", "lowpass", "mean_frequency",
           "mean_power_frequency", "mean_speed", "path_length", "resolution", "rounding_sd", "sdf", "sway_metrics",
           "white_noise_floor"]

if TYPE_CHECKING:  # what type checkers and IDEs see
    from .diffusion import sdf as sdf
    from .filters import cumulative_integral as cumulative_integral, derivative as derivative, lowpass as lowpass
    from .noise import white_noise_floor as white_noise_floor
    from .posturography import (
        ellipse_area as ellipse_area,
        mean_frequency as mean_frequency,
        mean_power_frequency as mean_power_frequency,
        mean_speed as mean_speed,
        path_length as path_length,
        sway_metrics as sway_metrics,
    )
    from .rounding import resolution as resolution, rounding_sd as rounding_sd


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(_import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
