"""The figure class of colloc's plots: a :class:`matplotlib.figure.Figure` that shows itself.

colloc builds its figures without pyplot (no global state, no display, nothing to close), so
a figure is shown in Jupyter only as the value of a cell, and then exactly once: pyplot's
inline backend never sees it (it shows the figures pyplot made at the end of every cell, a
second time when such a figure is also the cell's value).  A plain ``Figure`` made this way
has an image form only when matplotlib's inline formatter is registered (after ``%matplotlib
inline`` or a pyplot import under the inline backend); otherwise Jupyter prints
``<Figure size 800x362 with 2 Axes>``.  This subclass gives the image form itself
(:meth:`Figure._repr_png_`, rendered by Agg, whatever the backend), and IPython takes a
registered formatter first when there is one, so either way one PNG is shown.

This module imports matplotlib; import it only when plotting.
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure as _MplFigure

__all__ = ["Figure"]


class Figure(_MplFigure):
    """A matplotlib figure with a PNG form for IPython/Jupyter (``_repr_png_``)."""

    def _repr_png_(self) -> bytes:
        """The figure as PNG bytes at its own resolution, trimmed as Jupyter's inline backend does."""
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=self.dpi, bbox_inches="tight")
        return buffer.getvalue()
