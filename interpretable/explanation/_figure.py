"""The matplotlib figure of the ``plot`` views: a plain :class:`matplotlib.figure.Figure`
(no pyplot, so no global figure registry, thread-safe) that Jupyter displays as an image.

IPython shows an object as an image through its ``_repr_png_``; matplotlib's ``Figure`` has
none and relies on pyplot's inline backend, which formats figures only after pyplot has been
imported in the kernel. This subclass renders itself as the inline backend does (PNG, tight
bounding box), so a view returned by the last line of a cell is shown in a fresh kernel.
Where the inline backend is active its own formatter takes precedence (IPython looks up the
formatters registered for a type before ``_repr_png_``), and the figure is never registered
with pyplot, so it is shown once, by the cell's result.
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure

__all__ = ["ViewFigure"]


class ViewFigure(Figure):
    """A :class:`matplotlib.figure.Figure` with ``_repr_png_`` for Jupyter."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.canvas.print_figure(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue()
