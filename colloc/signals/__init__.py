"""Signal tools for centre-of-pressure (COP) posturography records.

All functions take one uniformly sampled, one-dimensional signal (one COP coordinate at a
time) and its sampling interval ``dt`` in seconds:

* :func:`lowpass` -- zero-phase Butterworth low-pass filter;
* :func:`derivative` -- first or second derivative, second-order accurate everywhere;
* :func:`cumulative_integral` -- running trapezoidal integral;
* :func:`sdf` -- stabilogram diffusion function, computed in O(N log N).

Bad input raises :class:`colloc.CollocInputError` (a :class:`ValueError`) whose message
names the offending argument.

References
----------
Collins, J. J. & De Luca, C. J. (1993). Open-loop and closed-loop control of posture: a
random-walk analysis of center-of-pressure trajectories. Exp. Brain Res. 95, 308-318.
Benda, B. J., Riley, P. O. & Krebs, D. E. (1994). Biomechanical relationship between center of
gravity and center of pressure during standing. IEEE Trans. Rehabil. Eng. 2, 3-10.
Barauskas, R. & Krušinskienė, R. (2007).
"""

from .diffusion import sdf
from .filters import cumulative_integral, derivative, lowpass

__all__ = ["cumulative_integral", "derivative", "lowpass", "sdf"]
