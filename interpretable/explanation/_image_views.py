"""The views of :class:`~interpretable.explanation.ImageExplanation`: matplotlib figures (the
input, the contribution map, the colour view of the dynamic weights ``W(x)``, the maps of the
model components) and the HTML view that embeds them."""

from __future__ import annotations

import numpy as np

from ._style import (
    NAN_COLOUR,
    colormap,
    figure_png,
    legend,
    nonfinite_caption,
    plot_text,
    render,
    table_cells,
    target_names,
    value_text,
)

__all__ = ["PLOT_KINDS", "ImageViews", "weights_to_rgba"]

PLOT_KINDS = ("overview", "contributions", "weights", "heads")


def weights_to_rgba(weights: np.ndarray, contributions: np.ndarray, percentile: float = 99.9):
    """Colour view of the dynamic weights ``W(x)`` of a ``[x, 1-x]`` encoded input (B-cos).

    A pixel's colour is ``|w_x| / (|w_x| + |w_{1-x}|)`` per channel: the input colour the
    weights align with (a grey level for greyscale); its opacity follows the positive
    contribution.

    Parameters
    ----------
    weights : array-like of shape (H, W, 2C)
        Channels ``[x_1..x_C, 1-x_1..1-x_C]`` (C = 3 for colour, 1 for greyscale).
    contributions : array-like of shape (H, W)
        The contribution map.
    percentile : float, default=99.9
        Opacity saturates at this percentile of the positive contributions.

    Returns
    -------
    ndarray of shape (H, W, 4)
        RGBA in [0, 1].

    Raises
    ------
    ValueError
        If ``weights`` is not of a ``[x, 1-x]`` encoded greyscale or colour image.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.explanation.image import weights_to_rgba
    >>> rgba = weights_to_rgba(np.ones((2, 2, 6)), np.array([[0.0, 1.0], [2.0, -1.0]]))
    >>> rgba.shape, rgba[0, 0, :3].tolist()
    ((2, 2, 4), [0.5, 0.5, 0.5])
    """
    w = np.abs(np.asarray(weights, dtype=np.float64))
    if w.ndim != 3 or w.shape[-1] not in (2, 6):
        raise ValueError("W(x) needs the [x, 1-x] encoding of a greyscale or colour image, "
                         f"(H, W, 2) or (H, W, 6), got {w.shape}.")
    channels = w.shape[-1] // 2
    pos, neg = w[..., :channels], w[..., channels:]
    with np.errstate(invalid="ignore", divide="ignore"):  # NaN / ∞ weights: a neutral grey
        rgb = np.nan_to_num(pos / (pos + neg), nan=0.5, posinf=0.5, neginf=0.5)
    rgb = np.repeat(rgb, 3 // channels, axis=-1)
    positive = np.nan_to_num(np.clip(contributions, 0, None), nan=0.0)
    opacity = np.clip(positive / _limit(positive, percentile), 0, 1)
    return np.concatenate([rgb, opacity[..., None]], axis=-1)


def _limit(maps: np.ndarray, percentile: float) -> float:
    """Colour range: the ``percentile`` of the finite ``|maps|`` (1 when it is 0)."""
    finite = np.abs(maps[np.isfinite(maps)])
    return (float(np.percentile(finite, percentile)) if finite.size else 0.0) or 1.0


def _suptitle(fig, title: str, maps) -> None:
    """The figure's title, with what NaN and ±∞ in the shown ``maps`` look like."""
    caption = nonfinite_caption(list(maps))
    fig.suptitle(f"{title}\n{caption}" if caption else title, fontsize=9)


def _colour_bar(fig, image, ax) -> None:
    fig.colorbar(image, ax=ax, shrink=0.8).ax.tick_params(labelsize=7)


class ImageViews:
    """``plot`` and ``to_html`` of :class:`~interpretable.explanation.ImageExplanation`."""

    # ------------------------------------------------------------------ figures
    def plot(self, kind: str = "overview", *, sample: int = 0, ncols: int = 4,
             percentile: float = 99.9):
        """Draw the explanation as a matplotlib figure.

        The figure is not registered with pyplot: display it, save it or add it to a
        notebook cell's output, where it shows as an image even in a fresh kernel; it is
        never shown twice. Red raises the target's logit, blue lowers it (one purple scale
        for class-independent methods such as attention rollout).

        Parameters
        ----------
        kind : {"overview", "contributions", "weights", "heads"}, default="overview"
            ``"overview"``: one row per sample: the input, the contribution map with a colour
            bar and, when ``W(x)`` is known, its colour view; ``"contributions"`` or
            ``"weights"``: a grid of one of them; ``"heads"``: the component maps
            (``by="head"``) of one sample on one shared scale.
        sample : int, default=0
            The sample shown by ``kind="heads"`` (its position).
        ncols : int, default=4
            Columns of the grids.
        percentile : float, default=99.9
            Maps are clipped at this percentile of ``|value|``, per map.

        Returns
        -------
        matplotlib.figure.Figure
            The figure.

        Raises
        ------
        ValueError
            If ``kind`` is unknown or its data is missing.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import ImageExplanation
        >>> rng = np.random.default_rng(0)
        >>> explanation = ImageExplanation(
        ...     values=np.ones((2, 4, 4)), target=np.array([1, 0]), prediction=np.array([1, 1]),
        ...     method="inherent", images=rng.random((2, 4, 4, 3)), logit=np.array([17.0, 16.5]),
        ...     bias=np.array([1.0, 0.5]))
        >>> figure = explanation.plot(kind="contributions", ncols=2)
        >>> figure.savefig("contributions.png")
        """
        from ._figure import ViewFigure

        if kind not in PLOT_KINDS:
            raise ValueError(f"kind must be one of {list(PLOT_KINDS)}, got {kind!r}.")
        if kind == "weights" and self.weights is None:
            raise ValueError("this explanation carries no dynamic weights W(x).")
        if kind == "heads":
            return self._plot_heads(ViewFigure, sample, ncols, percentile)
        n = len(self)
        if kind == "overview":
            panels = [p for p, known in (("input", self.images is not None),
                                         ("contributions", True),
                                         ("weights", self.weights is not None)) if known]
            cells = [(i, p) for i in range(n) for p in panels]
            nrows, ncols = n, len(panels)
        else:
            cells = [(i, kind) for i in range(n)]
            ncols = max(1, min(ncols, n))
            nrows = -(-n // ncols)
        fig = ViewFigure(figsize=(2.6 * ncols, 2.5 * nrows), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax in axes:
            ax.set_axis_off()
        for ax, (i, panel) in zip(axes, cells):
            self._draw(fig, ax, i, panel, percentile)
        _suptitle(fig, f"{plot_text(self.method)} explanation",
                  [self.values[i] for i, panel in cells if panel == "contributions"])
        return fig

    def _draw(self, fig, ax, i: int, panel: str, percentile: float) -> None:
        if panel == "input":
            image = self.images[i]
            ax.imshow(image[..., 0] if image.shape[-1] == 1 else image, cmap="gray",
                      vmin=0, vmax=1)
            ax.set_title(f"sample {plot_text(self.ids()[i])} · predicted "
                         f"{self._label(i, 'prediction')}", fontsize=8)
        elif panel == "contributions":
            image = self._show_map(ax, self.values[i], _limit(self.values[i], percentile))
            _colour_bar(fig, image, ax)
            logit = "" if self.logit is None else f"\nlogit {value_text(self.logit[i])}"
            ax.set_title(f"contributions to {self._label(i, 'target')}{logit}", fontsize=8)
        else:
            ax.set_facecolor("black")
            ax.set_axis_on()
            ax.set_xticks([])
            ax.set_yticks([])
            ax.imshow(weights_to_rgba(self.weights[i], self.values[i], percentile))
            ax.set_title(f"W(x) colour view → {plot_text(self.target[i])}", fontsize=8)

    def _show_map(self, ax, values: np.ndarray, lim: float):
        """``values`` on the colour scale of the method, clipped at ``±lim``."""
        signed = not self.class_independent
        return ax.imshow(np.clip(values, -lim, lim), vmin=-lim if signed else 0, vmax=lim,
                         cmap=colormap(signed).with_extremes(bad=NAN_COLOUR))

    def _label(self, i: int, which: str) -> str:
        """``"cat (p=0.93)"``: the target or predicted class with its probability if known."""
        label = plot_text(getattr(self, which)[i])
        probabilities = self.probabilities()
        if probabilities is not None:
            label += f" (p={probabilities[which == 'prediction'][i]:.2f})"
        return label

    def _plot_heads(self, ViewFigure, sample: int, ncols: int, percentile: float):
        if self.components is None:
            raise ValueError("this explanation has no components; use explain(by='head').")
        maps, names = self.components[sample], self.component_names
        lim = _limit(maps, percentile)
        ncols = max(1, min(ncols, len(names)))
        nrows = -(-len(names) // ncols)
        fig = ViewFigure(figsize=(2.2 * ncols + 0.8, 2.3 * nrows), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False)
        for ax in axes.ravel():
            ax.set_axis_off()
        for ax, name, values in zip(axes.ravel(), names, maps):
            image = self._show_map(ax, values, lim)
            ax.set_title(f"{plot_text(name)}: {value_text(values.sum())}", fontsize=8)
        _colour_bar(fig, image, axes)
        _suptitle(fig, f"{plot_text(self.ids()[sample])}: contributions to "
                       f"{self._label(sample, 'target')} by component", maps)
        return fig

    # ------------------------------------------------------------------ HTML
    def to_html(self, *, max_samples: int = 8, standalone: bool = False) -> str:
        """Return the overview figure (see :meth:`plot`) as HTML, with a table of the samples.

        The figure is an embedded PNG, with the method, the colour semantics and a table of
        targets, probabilities, logits and predictions.

        Parameters
        ----------
        max_samples : int, default=8
            Show the first ``max_samples`` samples (index the explanation for others).
        standalone : bool, default=False
            A full HTML page instead of a fragment.

        Returns
        -------
        str
            The HTML.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import ImageExplanation
        >>> rng = np.random.default_rng(0)
        >>> explanation = ImageExplanation(
        ...     values=np.ones((2, 4, 4)), target=np.array([1, 0]), prediction=np.array([1, 1]),
        ...     method="inherent", images=rng.random((2, 4, 4, 3)), logit=np.array([17.0, 16.5]),
        ...     bias=np.array([1.0, 0.5]))
        >>> explanation.to_html(max_samples=1).count("<img")
        1
        """
        shown = self[:max_samples]
        signed = not self.class_independent
        samples = shown.to_frame(kind="samples").drop(columns=["method", "class_independent"])
        return render("images.html", kind="images", method=self.method, standalone=standalone,
                      title=f"{self.method} pixel contributions", signed=signed,
                      targets=target_names(self.target), weights=self.weights is not None,
                      shown=len(shown), total=len(self), samples=table_cells(samples),
                      png=figure_png(shown.plot()),
                      scale=legend(None, signed, "the target's logit", per="map",
                                   values=[shown.values]))
