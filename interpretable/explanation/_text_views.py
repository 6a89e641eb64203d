"""The matplotlib view of :class:`~interpretable.explanation.TokenExplanation`: each sample's
words on the color of their attribution (as the HTML view), or a bar chart of its strongest
units."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from interpretable.explanation._style import (
    NAN_COLOR,
    NEGATIVE,
    POSITIVE,
    SEQUENTIAL,
    cell_colors,
    colormap,
    finite_peak,
    fmt,
    hex_color,
    nonfinite_caption,
    plot_text,
    row_scales,
    value_text,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["TextViews"]

PLOT_KINDS = ("text", "bars")
_FONT, _DPI, _WIDTH = 9, 100, 8.0  # points, dots per inch, figure width (inches)
_LINE = 0.26                       # inches per line of text


def _text_width(renderer, text: str) -> float:
    """The width in inches of ``text`` drawn at :data:`_FONT` points (a glyph the font lacks
    is reported when the figure is drawn, not here too)."""
    from matplotlib.font_manager import FontProperties

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Glyph .* missing from", UserWarning)
        width, _, _ = renderer.get_text_width_height_descent(
            text, FontProperties(size=_FONT), ismath=False)
    return width / _DPI


class TextViews:
    """``plot`` of :class:`~interpretable.explanation.TokenExplanation`."""

    def plot(self, kind: str = "text", *, sample: int | Sequence[int] | None = None,
             k: int = 10, scale: str | float = "shared", ax: Axes | None = None) -> Figure:
        """Draw the explanation as a matplotlib figure.

        ``"text"``: per sample a header (id, target, what is explained and its value,
        prediction) and its units on the color of their attribution, as :meth:`to_html`
        draws them (red raises what is explained, blue lowers it, white is 0; one purple for
        class-independent methods; NaN grey, ±∞ the end of the scale), with a color bar.
        ``"bars"``: per sample the ``k`` units with the largest ``|attribution|``. The figure
        is not registered with pyplot; in Jupyter it shows as an image, also in a fresh
        kernel.

        Parameters
        ----------
        kind : {"text", "bars"}, default="text"
            The colored text or the bar chart of the strongest units.
        sample : int, list of int or None, default=None
            The samples drawn (positions); None: all of them.
        k : int, default=10
            Units per sample in the bar chart.
        scale : {"shared", "row"} or float, default="shared"
            The text's color scale, as in :meth:`to_html`.
        ax : matplotlib.axes.Axes or None, default=None
            Draw one sample into this axes (``"bars"``; ``"text"`` lays the words out to its
            width) instead of a new figure.

        Returns
        -------
        matplotlib.figure.Figure
            The figure (that of ``ax`` when given).

        Raises
        ------
        ValueError
            If ``kind``, ``sample`` or ``scale`` is not one of the above, or ``ax`` is given
            with several samples.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import TokenExplanation
        >>> explanation = TokenExplanation(
        ...     units=[["good", "film"], ["bad"]], values=[np.array([0.5, 0.25]), np.array([-1.0])],
        ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
        ...     method="inherent", logit=np.array([1.0, -0.5]), bias=np.array([0.25, 0.5]))
        >>> explanation.plot().savefig("tokens.png")
        >>> len(explanation.plot("bars").axes)
        2
        """
        from interpretable.explanation._image_views import _samples

        if kind not in PLOT_KINDS:
            raise ValueError(f"kind must be one of {list(PLOT_KINDS)}, got {kind!r}.")
        chosen = _samples(sample, len(self))
        if ax is not None and len(chosen) != 1:
            raise ValueError(f"ax= draws one sample; pass sample=<position> (got {len(chosen)}"
                             " samples).")
        if kind == "bars":
            return self._plot_bars(chosen, k, ax)
        return self._plot_text(chosen, scale, ax)

    def _header(self, i: int) -> str:
        """``sample 3 · target pos (p=0.91): logit(pos) = +1.2 · predicted pos``."""
        probabilities = self.probabilities()
        p = "" if probabilities is None else f" (p={probabilities[0][i]:.2f})"
        value = "" if self.logit is None else f" = {value_text(self.logit[i])}"
        return (f"sample {self.ids()[i]} · target {self.target[i]}{p}: "
                f"{self.explained(i)}{value} · predicted {self.prediction[i]}")

    def _plot_bars(self, chosen: list, k: int, ax):
        from interpretable.explanation._figure import ViewFigure

        if ax is None:
            rows = [min(k, len(self.units[i])) for i in chosen]
            fig = ViewFigure(figsize=(6, sum(0.25 * r + 0.9 for r in rows)),
                             layout="constrained")
            axes = fig.subplots(len(chosen), 1, squeeze=False,
                                height_ratios=[r + 3 for r in rows]).ravel()
        else:
            fig, axes = ax.figure, [ax]
        signed = not self._single("class_independent")
        for ax, i in zip(axes, chosen, strict=True):
            values = np.asarray(self.values[i], dtype=np.float64)
            order = np.argsort(-np.nan_to_num(np.abs(values), nan=-1.0), kind="stable")[:k][::-1]
            shown = values[order]
            lim = finite_peak(shown) or 1.0
            colors = [NAN_COLOR if np.isnan(v) else hex_color(
                SEQUENTIAL if not signed else POSITIVE if v > 0 else NEGATIVE) for v in shown]
            ax.barh(range(len(order)), np.nan_to_num(np.clip(shown, -lim, lim)), color=colors)
            ax.set_yticks(range(len(order)), [
                plot_text(self.units[i][j], limit=30) + ("" if np.isfinite(v) else
                                                         f" = {value_text(v)}")
                for j, v in zip(order, shown, strict=True)], fontsize=7)
            ax.axvline(0, color="black", linewidth=0.6)
            ax.tick_params(axis="x", labelsize=7)
            ax.set_xlabel(f"{plot_text(self._single('method'))} attribution to "
                          f"{plot_text(self.explained(i))}", fontsize=8)
            ax.set_title(plot_text(self._header(i), limit=120), fontsize=8)
        caption = nonfinite_caption([np.asarray(self.values[i]) for i in chosen])
        if caption:
            fig.suptitle(caption, fontsize=8)
        return fig

    def _plot_text(self, chosen: list, scale, ax):
        from matplotlib.backends.backend_agg import RendererAgg
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize

        from interpretable.explanation._figure import ViewFigure

        rows = [np.asarray(self.values[i], dtype=np.float64) for i in chosen]
        scales = row_scales(scale, rows)
        signed = not self._single("class_independent")
        width = _WIDTH if ax is None else ax.get_window_extent().width / ax.figure.dpi
        renderer = RendererAgg(10, 10, _DPI)
        space = _text_width(renderer, "a b") - _text_width(renderer, "ab")
        placed, y = [], 0.0  # (x, y, text, value, row) in inches from the top left
        for row, i in enumerate(chosen):
            placed.append((0.0, y, plot_text(self._header(i), limit=150), None, row))
            y, x = y + _LINE, 0.0
            for unit, value in zip(self.units[i], rows[row], strict=True):
                text = plot_text(unit, limit=60)
                w = _text_width(renderer, text) + 0.06
                if x > 0 and x + w > width - 0.1:
                    y, x = y + _LINE, 0.0
                placed.append((x, y, text, value, row))
                x += w + space
            y += 1.6 * _LINE
        if ax is None:
            height = y + 0.9  # the color bar and its label below
            fig = ViewFigure(figsize=(width, height))
            ax = fig.add_axes((0.0, 0.9 / height, 1.0, 1 - 0.9 / height))
            bar = fig.add_axes((0.25, 0.45 / height, 0.5, 0.12 / height))
        else:  # inches as data units: the axes' height, or the text's if taller
            fig, bar = ax.figure, None
            y = max(y, ax.get_window_extent().height / fig.dpi)
        ax.set_axis_off()
        ax.set_xlim(0, width)
        ax.set_ylim(y, 0)
        for x, y, text, value, row in placed:
            if value is None:
                ax.text(x, y, text, fontsize=_FONT, va="top", weight="bold")
                continue
            (color,), (white,) = cell_colors([value], scales[row], signed)
            ax.text(x + 0.03, y + 0.02, text, fontsize=_FONT, va="top",
                    color="white" if white and not np.isnan(value) else "black",
                    bbox=dict(boxstyle="square,pad=0.15", edgecolor="none",
                              facecolor=NAN_COLOR if np.isnan(value) else hex_color(color)))
        if bar is not None:
            lim = float(scales.max()) if len(scales) else 1.0
            norm = Normalize(-lim if signed else 0.0, lim or 1.0)
            color_bar = fig.colorbar(ScalarMappable(norm, colormap(signed)), cax=bar,
                                      orientation="horizontal")
            color_bar.ax.tick_params(labelsize=7)
            what = plot_text(self.explained(), limit=80)
            note = nonfinite_caption(rows)
            color_bar.set_label(
                f"{plot_text(self._single('method'))} attribution to {what}"
                + (f" (each row its own range, ±{fmt(lim)} here)" if scale == "row" else "")
                + (f" · {note}" if note else ""), fontsize=7)
        return fig
