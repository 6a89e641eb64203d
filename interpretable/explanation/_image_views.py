"""The views of :class:`~interpretable.explanation.ImageExplanation`: matplotlib figures (the
input, the contribution map, the color view of the dynamic weights ``W(x)``, the maps of the
model components) and the HTML view that embeds them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from interpretable.explanation._style import (
    NAN_COLOR,
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

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike

__all__ = ["PLOT_KINDS", "ImageViews", "weights_to_rgba"]

PLOT_KINDS = ("overview", "contributions", "weights", "heads")


def weights_to_rgba(weights: ArrayLike, contributions: ArrayLike, percentile: float = 99.9
                    ) -> np.ndarray:
    """Color view of the dynamic weights ``W(x)`` of a ``[x, 1-x]`` encoded input (B-cos).

    A pixel's color is ``|w_x| / (|w_x| + |w_{1-x}|)`` per channel: the input color the
    weights align with (a grey level for greyscale); its opacity follows the positive
    contribution.

    Parameters
    ----------
    weights : array-like of shape (H, W, 2C)
        Channels ``[x_1..x_C, 1-x_1..1-x_C]`` (C = 3 for color, 1 for greyscale).
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
        If ``weights`` is not of a ``[x, 1-x]`` encoded greyscale or color image.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.explanation import weights_to_rgba
    >>> rgba = weights_to_rgba(np.ones((2, 2, 6)), np.array([[0.0, 1.0], [2.0, -1.0]]))
    >>> rgba.shape, rgba[0, 0, :3].tolist()
    ((2, 2, 4), [0.5, 0.5, 0.5])
    """
    w = np.abs(np.asarray(weights, dtype=np.float64))
    if w.ndim != 3 or w.shape[-1] not in (2, 6):
        raise ValueError("W(x) needs the [x, 1-x] encoding of a greyscale or color image, "
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
    """Color range: the ``percentile`` of the finite ``|maps|`` (1 when it is 0)."""
    finite = np.abs(maps[np.isfinite(maps)])
    return (float(np.percentile(finite, percentile)) if finite.size else 0.0) or 1.0


def _suptitle(fig, title: str, maps) -> None:
    """The figure's title, with what NaN and ±∞ in the shown ``maps`` look like."""
    caption = nonfinite_caption(list(maps))
    fig.suptitle(f"{title}\n{caption}" if caption else title, fontsize=9)


def _color_bar(fig, image, ax, label: str = "") -> None:
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    bar.ax.tick_params(labelsize=7)
    bar.set_label(label, fontsize=7)


def _samples(sample, n: int) -> list[int]:
    """The positions drawn: every sample (None), one (int) or several (a list)."""
    chosen = list(range(n)) if sample is None else np.atleast_1d(sample).tolist()
    bad = [i for i in chosen if isinstance(i, bool) or not isinstance(i, int) or not -n <= i < n]
    if not chosen or bad:
        raise ValueError(f"sample must be None, a position or a list of positions in "
                         f"[-{n}, {n}), got {sample!r}.")
    return [i % n for i in chosen]


#: methods whose maps are exact shares of what they explain (the map plus the bias sums to
#: it), and those whose maps approximate such shares
EXACT_METHODS = ("inherent",)
APPROXIMATE_METHODS = ("integrated_gradients",)
#: what a map holds, by its kind (see ``ImageViews._map_kind``): the caption's first
#: sentence, a panel's title, the color bar's label
_MAPS = {
    "exact": ("contributions: each pixel's exact share of {what} (the map plus the bias sums "
              "to it)", "contributions to {target}", "contribution"),
    "approximate": ("attributions: each pixel's approximate share of {what} minus its value "
                    "on the baseline image (a path integral in finitely many steps: the map "
                    "misses that difference by its completeness error, {error})",
                    "attributions to {target}", "attribution"),
    "weights": ("attention weights of the patches (what the model attends to, the same for "
                "every target; not shares of a logit)", "attention weights", "weight"),
    "scores": ("post-hoc relevance scores for {what} (not shares of it: they need not sum "
               "to it)", "relevance for {target}", "relevance"),
}
#: the caption's sentences, per panel (``plot("overview")``)
_CAPTIONS = {
    "contributions": "{maps}; {colors}; one symmetric scale per row, clipped at the "
                     "{percentile:g}th percentile of |value|.",
    "split": "B-cos reads a pixel as [x, 1 − x]: 'from x' is what its value contributes (the "
             "object's strokes), 'from 1 − x' what its inverse contributes (mostly the "
             "background); the two sum to the contribution map.",
    "weights": "W(x) color view: each pixel in the input color that the dynamic weights "
               "align with (grey levels for greyscale inputs), opaque where it contributes "
               "positively, black where it does not.",
}


class ImageViews:
    """``plot`` and ``to_html`` of :class:`~interpretable.explanation.ImageExplanation`."""

    # ------------------------------------------------------------------ figures
    def plot(self, kind: str = "overview", *, sample: int | Sequence[int] | None = None,
             ncols: int = 4, percentile: float = 99.9, evidence: str = "all",
             split: bool = True) -> Figure:
        """Draw the explanation as a matplotlib figure.

        The figure is not registered with pyplot: display it, save it or add it to a
        notebook cell's output, where it shows as an image even in a fresh kernel; it is
        never shown twice. Maps use one diverging scale centred at 0 with symmetric limits:
        red raises what is explained (the target's logit, or with ``explain(contrast=...)``
        a difference of logits), blue lowers it (one purple scale for class-independent
        methods such as attention rollout). A caption says what each panel shows.

        Parameters
        ----------
        kind : {"overview", "contributions", "weights", "heads"}, default="overview"
            ``"overview"``: one row per sample: the input, the contribution map with a color
            bar, with ``split`` its two exact parts, and when ``W(x)`` is known its color
            view; ``"contributions"`` or ``"weights"``: a grid of one of them; ``"heads"``:
            per sample, the input and the component maps (``explain(by="head")``) on one
            scale.
        sample : int, list of int or None, default=None
            The samples drawn (positions); None: all of them.
        ncols : int, default=4
            Columns of the grids (``"heads"``: panels per row, the input included).
        percentile : float, default=99.9
            Maps are clipped at this percentile of ``|value|`` (per row of the overview, per
            sample of ``"heads"``, per map otherwise).
        evidence : {"all", "positive"}, default="all"
            ``"positive"`` shows only what raises the explained logit (white to red), as the
            B-cos papers draw their maps.
        split : bool, default=True
            In the overview, also draw the contribution map's two exact parts for B-cos's
            ``[x, 1 − x]`` input encoding (when ``W(x)`` is known): from the pixel's value
            ``x`` (the object) and from ``1 − x`` (the background).

        Returns
        -------
        matplotlib.figure.Figure
            The figure.

        Raises
        ------
        ValueError
            If ``kind``, ``sample`` or ``evidence`` is not one of the above or the data of
            ``kind`` is missing.

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
        >>> len(explanation.plot(sample=1).axes)  # the input, its map and the map's color bar
        3
        """
        from interpretable.explanation._figure import ViewFigure

        if kind not in PLOT_KINDS:
            raise ValueError(f"kind must be one of {list(PLOT_KINDS)}, got {kind!r}.")
        if evidence not in ("all", "positive"):
            raise ValueError(f"evidence must be 'all' or 'positive', got {evidence!r}.")
        if kind == "weights" and self.weights is None:
            raise ValueError("this explanation carries no dynamic weights W(x).")
        chosen = _samples(sample, len(self))
        positive = evidence == "positive" and not self._single("class_independent")
        if kind == "heads":
            return self._plot_heads(ViewFigure, chosen, ncols, percentile, positive)
        panels = [kind]
        if kind == "overview":
            parts = split and self._parts(0) is not None
            panels = [p for p, known in (("input", self.images is not None),
                                         ("contributions", True), ("from x", parts),
                                         ("from 1 − x", parts),
                                         ("weights", self.weights is not None)) if known]
        cells = [(i, p) for i in chosen for p in panels]
        width = len(panels) if kind == "overview" else max(1, min(ncols, len(cells)))
        nrows = -(-len(cells) // width)
        fig = ViewFigure(figsize=(2.6 * width, 2.5 * nrows + 0.6), layout="constrained")
        axes = fig.subplots(nrows, width, squeeze=False).ravel()
        for ax in axes:
            ax.set_axis_off()
        drawn = []  # the maps shown, for the caption on NaN and ±∞
        for i in chosen:
            row = [ax for ax, (j, _) in zip(axes, cells, strict=True) if j == i]
            maps = [] if kind == "weights" else [self.values[i]]
            maps += list(self._parts(i)) if "from x" in panels else []
            lim = _limit(np.stack(maps), percentile) if maps else 1.0
            image = None
            for ax, panel in zip(row, panels, strict=True):
                image = self._draw(ax, i, panel, percentile, lim, positive) or image
            if image is not None:
                _color_bar(fig, image, row, _MAPS[self._map_kind()][2]
                            + " (positive)" * positive)
            drawn += maps
        what = plot_text(self.explained(), limit=80)
        _suptitle(fig, f"{plot_text(self._single('method'))} explanation of {what}", drawn)
        fig.supxlabel(self._caption(panels, what, percentile, positive), fontsize=7,
                      wrap=True)
        return fig

    def _caption(self, panels, what: str, percentile: float, positive: bool) -> str:
        colors = ("purple: more weight (the same for every target)"
                   if self._single("class_independent")
                   else "red raises it, white is 0 (positive evidence only)" if positive
                   else "red raises it, blue lowers it, white is 0")
        keys = [k for k, p in (("contributions", "contributions"), ("split", "from x"),
                               ("weights", "weights")) if p in panels]
        errors = self.completeness_error
        error = "not measured here" if errors is None else \
            f"here at most {value_text(np.nanmax(np.abs(errors)))} (relative)"
        maps = _MAPS[self._map_kind()][0].format(what=what, error=error)
        return " ".join(_CAPTIONS[k].format(maps=maps, colors=colors, percentile=percentile)
                        for k in keys)

    def _map_kind(self) -> str:
        """What the maps hold: ``"exact"`` shares of the explained logit, ``"approximate"``
        ones (integrated gradients), attention ``"weights"`` (class-independent methods) or
        other post-hoc relevance ``"scores"``."""
        if self._single("class_independent"):
            return "weights"
        if self._single("method") in EXACT_METHODS:
            return "exact"
        return "approximate" if self._single("method") in APPROXIMATE_METHODS else "scores"

    def _parts(self, i: int):
        """The contribution map's exact parts ``(H, W)`` from ``x`` and from ``1 − x`` (B-cos's
        input encoding), or None without ``W(x)`` and the input."""
        if self.weights is None or self.images is None \
                or self.weights.shape[-1] != 2 * self.images.shape[-1]:
            return None
        x = np.asarray(self.images[i], dtype=np.float64)
        w = np.asarray(self.weights[i], dtype=np.float64)
        channels = x.shape[-1]
        return (w[..., :channels] * x).sum(-1), (w[..., channels:] * (1 - x)).sum(-1)

    def _draw(self, ax, i: int, panel: str, percentile: float, lim: float, positive: bool):
        """One panel of sample ``i``; the color-mapped image of a map panel (else None)."""
        if panel == "input":
            image = self.images[i]
            ax.imshow(image[..., 0] if image.shape[-1] == 1 else image, cmap="gray",
                      vmin=0, vmax=1)
            ax.set_title(f"sample {plot_text(self.ids()[i])} · predicted "
                         f"{self._label(i, 'prediction')}", fontsize=8)
            return None
        if panel == "weights":
            ax.set_facecolor("black")
            ax.set_axis_on()
            ax.set_xticks([])
            ax.set_yticks([])
            ax.imshow(weights_to_rgba(self.weights[i], self.values[i], percentile))
            ax.set_title(f"W(x) color view → {plot_text(self.target[i])}", fontsize=8)
            return None
        if panel == "contributions":
            values = self.values[i]
            title = _MAPS[self._map_kind()][1].format(target=self._label(i, "target"))
            if self.logit is not None:
                title += f"\n{plot_text(self.explained(i))} = {value_text(self.logit[i])}"
        else:
            values = self._parts(i)[panel != "from x"]
            title = f"{panel}: {value_text(values.sum())}"
        ax.set_title(title, fontsize=8)
        return self._show_map(ax, values, lim, positive)

    def _show_map(self, ax, values: np.ndarray, lim: float, positive: bool = False):
        """``values`` on the color scale of the method, clipped at ``±lim`` (``positive``:
        at 0 and ``lim``, white to red)."""
        signed = not self._single("class_independent")
        low = -lim if signed and not positive else 0
        cmap = colormap(signed, positive=positive).with_extremes(bad=NAN_COLOR)
        return ax.imshow(np.clip(values, low, lim), vmin=low, vmax=lim, cmap=cmap)

    def _label(self, i: int, which: str) -> str:
        """``"cat (p=0.93)"``: the target or predicted class with its probability if known."""
        label = plot_text(getattr(self, which)[i])
        probabilities = self.probabilities()
        if probabilities is not None:
            label += f" (p={probabilities[which == 'prediction'][i]:.2f})"
        return label

    def _plot_heads(self, ViewFigure, chosen: list, ncols: int, percentile: float,
                    positive: bool):
        """Per sample, a block of panels: its input, then its component maps on one scale."""
        if self.components is None:
            raise ValueError("this explanation has no components; use explain(by='head').")
        names = list(self.component_names)
        first = 1 if self.images is not None else 0
        ncols = max(1, min(ncols, len(names) + first))
        nrows = -(-(len(names) + first) // ncols)
        fig = ViewFigure(figsize=(2.2 * ncols + 0.8, (2.3 * nrows + 0.5) * len(chosen)),
                         layout="constrained")
        blocks = np.atleast_1d(fig.subfigures(len(chosen), 1, squeeze=False).ravel())
        for block, i in zip(blocks, chosen, strict=True):
            maps = self.components[i]
            lim = _limit(maps, percentile)
            axes = block.subplots(nrows, ncols, squeeze=False).ravel()
            for ax in axes:
                ax.set_axis_off()
            if first:
                self._draw(axes[0], i, "input", percentile, lim, positive)
            for ax, name, values in zip(axes[first:], names, maps, strict=True):
                image = self._show_map(ax, values, lim, positive)
                ax.set_title(f"{plot_text(name)}: {value_text(values.sum())}", fontsize=8)
            _color_bar(block, image, axes, "contribution")
            block.suptitle(f"sample {plot_text(self.ids()[i])} · target "
                           f"{self._label(i, 'target')}: contributions to "
                           f"{plot_text(self.explained(i))} by component", fontsize=9)
        _suptitle(fig, f"{plot_text(self._single('method'))}: the components' maps sum to the "
                       "contribution map", [self.components[i] for i in chosen])
        return fig

    # ------------------------------------------------------------------ HTML
    def to_html(self, *, max_samples: int = 8, standalone: bool = False) -> str:
        """Return the overview figure (see :meth:`plot`) as HTML, with a table of the samples.

        The figure is an embedded PNG, with the method, the color semantics and a table of
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
        signed, method = not self._single("class_independent"), self._single("method")
        samples = shown.to_frame(kind="samples").drop(columns=["method", "class_independent"])
        return render("images.html", kind="images", method=method, standalone=standalone,
                      title=f"{method} pixel contributions", signed=signed,
                      targets=target_names(self.target), weights=self.weights is not None,
                      shown=len(shown), total=len(self), samples=table_cells(samples),
                      png=figure_png(shown.plot()), explains=self.explained(),
                      scale=legend(None, signed, self.explained(), per="row",
                                   values=[shown.values]))
