"""The views of :class:`~interpretable.explanation.SequenceExplanation`: the HTML heat map of
every explained step and the step × unit matplotlib figure of one sample."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from interpretable.explanation._style import (
    NAN_COLOR,
    colormap,
    finite_peak,
    fmt,
    heat_cells,
    legend,
    nonfinite_caption,
    plot_text,
    render,
    row_scales,
    target_names,
    value_text,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["SequenceViews", "visible"]

_VISIBLE = str.maketrans({" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"})
_LINE_BREAKS = str.maketrans({"\n": "↵", "\t": "⇥", "\r": "␍"})


def visible(symbol) -> str:
    """A symbol with whitespace made visible (``" "`` → ``␣``, newline → ``↵``)."""
    return str(symbol).translate(_VISIBLE)


class SequenceViews:
    """``to_html`` and ``plot`` of :class:`~interpretable.explanation.SequenceExplanation`."""

    def to_html(self, steps: int | Sequence[int] | None = None, *,
                scale: str | float = "shared", max_steps: int = 40,
                standalone: bool = False) -> str:
        """Return an HTML view: one heat-map row per explained step.

        Each row colors the units read so far by their contribution to the logit of that
        step's target (later units grey), so a short text reads as a step × step heat map.

        Parameters
        ----------
        steps : int, list of int or None, default=None
            The steps shown, in units of ``level`` (negative from the end); None: every step,
            or the last one when a sequence has more than ``max_steps``.
        scale : {"shared", "row"} or float, default="shared"
            One color scale for all rows, one per row, or a fixed number.
        max_steps : int, default=40
            See ``steps``.
        standalone : bool, default=False
            A full HTML page instead of a fragment.

        Returns
        -------
        str
            The HTML.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import SequenceExplanation
        >>> explanation = SequenceExplanation(
        ...     units=[["a", "b"]], values=[np.array([[0.5, 0.0], [0.25, 1.0]])],
        ...     target=[np.array(["b", "c"])], prediction=[np.array(["b", "a"])],
        ...     method="inherent", logit=[np.array([1.0, 1.5])], bias=[np.array([0.5, 0.25])],
        ...     inputs=["ab"])
        >>> "inherent" in explanation.to_html(steps=-1)
        True
        """
        selected = [self._select(i, steps, max_steps) for i in range(len(self))]
        rows = [row[: s + 1] for i, (picked, step) in enumerate(selected)
                for row, s in zip(self._dense(i, picked, step), step, strict=True)]
        scales = row_scales(scale, rows)
        shared = None if scale == "row" else (scales[0] if len(scales) else 0.0)
        signed = not self._single("class_independent")
        targets = [t for i, (picked, _) in enumerate(selected) for t in self.target[i][picked]]
        per_row = iter(scales)
        samples = [self._html_sample(i, picked, step, per_row, signed)
                   for i, (picked, step) in enumerate(selected)]
        return render("sequence.html", kind="sequence", method=self._single("method"),
                      standalone=standalone, signed=signed, level=self.level,
                      title=f"{self._single('method')} {self.level}-level contributions",
                      targets=target_names(visible(t) for t in targets), samples=samples,
                      scale=legend(shared, signed, "the target's logit", values=rows))

    def _html_sample(self, i, picked, step, scales, signed) -> dict:
        """One sample of the view (``sequence.html``): a row per explained step, the units
        read so far colored and the later ones grey."""
        units = [str(u).translate(_LINE_BREAKS) for u in self.units[i]]
        rows = [{"step": s, "target": visible(self.target[i][r]),
                 "prediction": visible(self.prediction[i][r]),
                 "logit": None if self.logit is None else value_text(self.logit[i][r]),
                 "cells": heat_cells(units[: s + 1], values[: s + 1], next(scales), signed),
                 "future": units[s + 1:]}
                for r, s, values in zip(picked, step, self._dense(i, picked, step), strict=True)]
        return {"id": self.ids()[i], "steps": len(self._explained(i)[0]), "rows": rows}

    def plot(self, sample: int = 0, steps: int | Sequence[int] | None = None, *,
             max_labels: int = 80) -> Figure:
        """Draw the step × unit heat map of one sample as a matplotlib figure.

        Row = explained step (its target symbol on the left), column = unit, color =
        contribution (units not read yet are light grey, NaN contributions grey, ±∞ the ends
        of the scale). The figure is not registered with pyplot; in Jupyter it shows as an
        image, also in a fresh kernel.

        Parameters
        ----------
        sample : int, default=0
            The sample's position.
        steps : int, list of int or None, default=None
            The steps shown (as in :meth:`to_frame`); None: all.
        max_labels : int, default=80
            Units are labelled when there are at most this many.

        Returns
        -------
        matplotlib.figure.Figure
            The figure.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import SequenceExplanation
        >>> explanation = SequenceExplanation(
        ...     units=[["a", "b"]], values=[np.array([[0.5, 0.0], [0.25, 1.0]])],
        ...     target=[np.array(["b", "c"])], prediction=[np.array(["b", "a"])],
        ...     method="inherent", logit=[np.array([1.0, 1.5])], bias=[np.array([0.5, 0.25])],
        ...     inputs=["ab"])
        >>> explanation.plot().savefig("steps.png")
        """
        from matplotlib.colors import ListedColormap

        from interpretable.explanation._figure import ViewFigure

        rows, step = self._select(sample, steps)
        units = self.units[sample]
        grid = self._dense(sample, rows, step)
        unread = np.arange(len(units))[None] > step[:, None]
        lim = finite_peak(grid[~unread]) or 1.0
        signed = not self._single("class_independent")
        labels = [plot_text(visible(u), limit=24) for u in units] \
            if len(units) <= max_labels else []
        tall = 0.07 * max(map(len, labels), default=0)  # room for the rotated labels
        fig = ViewFigure(figsize=(min(2 + 0.22 * len(units), 16),
                              min(1.6 + tall + 0.22 * len(rows), 16)), layout="constrained")
        ax = fig.subplots()
        shown = np.ma.masked_array(np.clip(grid, -lim, lim), mask=unread | np.isnan(grid))
        image = ax.imshow(shown, cmap=colormap(signed).with_extremes(bad="#eeeeee"),
                          vmin=-lim if signed else 0, vmax=lim, aspect="auto",
                          interpolation="nearest")
        nan = np.isnan(grid) & ~unread
        if nan.any():
            ax.imshow(np.where(nan, 1.0, np.nan), cmap=ListedColormap([NAN_COLOR]), vmin=0,
                      vmax=1, aspect="auto", interpolation="nearest")
        fig.colorbar(image, ax=ax, label="contribution to the target's logit")
        if labels:
            ax.set_xticks(range(len(units)), labels, rotation=90, fontsize=7)
            ax.set_yticks(range(len(rows)), [f"{s} → {plot_text(visible(self.target[sample][r]))}"
                                             for r, s in zip(rows, step, strict=True)], fontsize=7)
        ax.set_xlabel(f"{self.level} read")
        ax.set_ylabel("step → explained target")
        title = (f"{plot_text(self._single('method'))}: sample "
                 f"{plot_text(self.ids()[sample])} (range ±{fmt(lim)})")
        caption = nonfinite_caption([grid[~unread]])
        ax.set_title(f"{title}\n{caption}" if caption else title, fontsize=9)
        return fig
