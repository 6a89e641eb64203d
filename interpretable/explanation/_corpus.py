"""Corpus view: token attributions aggregated over many explanations, per explained class."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interpretable.explanation._chunked import iter_explanations
from interpretable.explanation._frame import labels, texts
from interpretable.explanation._style import (
    NAN_COLOR,
    NEGATIVE,
    POSITIVE,
    SEQUENTIAL,
    figure_png,
    finite_peak,
    hex_color,
    plot_text,
    render,
    table_cells,
    value_text,
)
from interpretable.explanation._text import TokenExplanation

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike

TABLE_COLUMNS = ["target", "token", "count", "mean_attribution", "mean_abs_attribution"]


@dataclass
class GlobalExplanation:
    """Every token's attribution averaged over a corpus, per explained class.

    The analogue of InterpretML's ``explain_global`` for token attributions; built by
    :func:`global_explanation`.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per (target, token): ``count`` (occurrences), ``mean_attribution``,
        ``mean_abs_attribution``; sorted by target, then mean attribution (largest first).
    method : str
        The explanation method.
    n_samples : int
        How many samples were aggregated.
    class_independent : bool, default=False
        Whether the method gives the same values for every target.

    See Also
    --------
    global_explanation : Build one from explanations or an estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import TokenExplanation
    >>> from interpretable.explanation import global_explanation
    >>> explanation = TokenExplanation(
    ...     units=[["good", "film"], ["bad", "film"]],
    ...     values=[np.array([1.0, 0.5]), np.array([-1.0, 0.0])],
    ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
    ...     method="inherent")
    >>> corpus = global_explanation(explanation)
    >>> corpus.n_samples
    2
    >>> corpus.table[["target", "token", "count", "mean_attribution"]]
      target token  count  mean_attribution
    0    neg  film      1               0.0
    1    neg   bad      1              -1.0
    2    pos  good      1               1.0
    3    pos  film      1               0.5
    """

    table: pd.DataFrame
    method: str
    n_samples: int
    class_independent: bool = False

    def to_frame(self) -> pd.DataFrame:
        """Return the table (a copy).

        Returns
        -------
        pandas.DataFrame
            One row per (target, token), as ``table``.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import TokenExplanation
        >>> from interpretable.explanation import global_explanation
        >>> explanation = TokenExplanation(
        ...     units=[["good", "film"], ["bad", "film"]],
        ...     values=[np.array([1.0, 0.5]), np.array([-1.0, 0.0])],
        ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
        ...     method="inherent")
        >>> corpus = global_explanation(explanation)
        >>> corpus.to_frame().columns.tolist()
        ['target', 'token', 'count', 'mean_attribution', 'mean_abs_attribution']
        """
        return self.table.copy()

    def top(self, k: int = 10, min_count: int = 3) -> pd.DataFrame:
        """Return the tokens with the largest and the most negative mean attribution.

        Parameters
        ----------
        k : int, default=10
            Tokens per target and sign.
        min_count : int, default=3
            Only tokens seen at least this many times.

        Returns
        -------
        pandas.DataFrame
            Per target, the ``k`` tokens with the largest positive mean attribution and, for
            signed methods, the ``k`` with the most negative one.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import TokenExplanation
        >>> from interpretable.explanation import global_explanation
        >>> explanation = TokenExplanation(
        ...     units=[["good", "film"], ["bad", "film"]],
        ...     values=[np.array([1.0, 0.5]), np.array([-1.0, 0.0])],
        ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
        ...     method="inherent")
        >>> corpus = global_explanation(explanation)
        >>> corpus.top(k=1, min_count=1)[["target", "token"]]
          target token
        0    neg   bad
        1    pos  good
        """
        table = self.table[self.table["count"] >= min_count]
        parts = []
        for _, group in table.groupby("target", sort=True):
            high = group.head(k)
            if self.class_independent:
                parts.append(high)
                continue
            low = group.tail(k)
            parts += [high[high["mean_attribution"] > 0], low[low["mean_attribution"] < 0]]
        return pd.concat(parts, ignore_index=True) if parts else table.head(0)

    def _undefined(self, min_count: int) -> pd.DataFrame:
        """Tokens seen at least ``min_count`` times whose mean attribution is NaN."""
        table = self.table
        return table[(table["count"] >= min_count) & table["mean_attribution"].isna()]

    def _nonfinite_note(self, top: pd.DataFrame, min_count: int) -> str:
        """What the view does with NaN and ±∞ means (empty when there are none)."""
        undefined = len(self._undefined(min_count))
        infinite = np.isinf(top["mean_attribution"].to_numpy(dtype=np.float64)).any()
        return " · ".join(
            ([f"{undefined} token(s) with a NaN mean attribution (not shown)"] if undefined
             else []) + (["±∞ bars end at the axis limit"] if infinite else []))

    def plot(self, k: int = 10, min_count: int = 3) -> Figure:
        """Draw a bar chart per target of :meth:`top` as a matplotlib figure.

        Red bars raise the class's logit on average, blue bars lower it (one purple for
        class-independent methods); ``n`` = occurrences. A ±∞ mean is drawn to the end of
        the axis and labelled; tokens with a NaN mean are counted in the title. The figure
        is not registered with pyplot; in Jupyter it shows as an image, also in a fresh
        kernel.

        Parameters
        ----------
        k : int, default=10
            Tokens per target and sign.
        min_count : int, default=3
            Only tokens seen at least this many times.

        Returns
        -------
        matplotlib.figure.Figure
            The figure.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import TokenExplanation
        >>> from interpretable.explanation import global_explanation
        >>> explanation = TokenExplanation(
        ...     units=[["good", "film"], ["bad", "film"]],
        ...     values=[np.array([1.0, 0.5]), np.array([-1.0, 0.0])],
        ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
        ...     method="inherent")
        >>> corpus = global_explanation(explanation)
        >>> len(corpus.plot(min_count=1).axes)
        2
        """
        from interpretable.explanation._figure import ViewFigure

        top = self.top(k, min_count)
        targets = sorted(top["target"].unique())
        ncols = max(1, min(len(targets), 3))
        nrows = max(1, -(-len(targets) // ncols))
        height = 0.25 * top.groupby("target").size().max() + 1 if len(top) else 2
        fig = ViewFigure(figsize=(4.2 * ncols, height * nrows), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax in axes[len(targets):]:
            ax.set_axis_off()
        for ax, target in zip(axes[:len(targets)], targets, strict=True):  # the rest: off
            rows = top[top["target"] == target].sort_values("mean_attribution")
            values = rows["mean_attribution"].to_numpy(dtype=np.float64)
            lim = finite_peak(values) or 1.0
            colors = [hex_color(SEQUENTIAL if self.class_independent else
                                  POSITIVE if v > 0 else NEGATIVE) if not np.isnan(v)
                       else NAN_COLOR for v in values]
            ax.barh(range(len(rows)), np.nan_to_num(np.clip(values, -lim, lim)), color=colors)
            ax.set_yticks(range(len(rows)), [
                plot_text(f"{t} (n={c})") + ("" if np.isfinite(v) else f" = {value_text(v)}")
                for t, c, v in zip(rows["token"], rows["count"], values, strict=True)])
            ax.axvline(0, color="black", linewidth=0.6)
            ax.tick_params(labelsize=7)
            ax.set_title(f"target {plot_text(target)}", fontsize=9)
            ax.set_xlabel(f"mean {plot_text(self.method)} attribution", fontsize=8)
        title = (f"{plot_text(self.method)}: tokens by mean attribution over {self.n_samples} "
                 "samples")
        note = self._nonfinite_note(top, min_count)
        fig.suptitle(f"{title}\n{note}" if note else title, fontsize=9)
        return fig

    def to_html(self, k: int = 10, min_count: int = 3, *, standalone: bool = False) -> str:
        """Return the bar chart (embedded PNG) and the table of :meth:`top` as HTML.

        Parameters
        ----------
        k : int, default=10
            Tokens per target and sign.
        min_count : int, default=3
            Only tokens seen at least this many times.
        standalone : bool, default=False
            A full HTML page instead of a fragment.

        Returns
        -------
        str
            The HTML, with the method and the color semantics.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import TokenExplanation
        >>> from interpretable.explanation import global_explanation
        >>> explanation = TokenExplanation(
        ...     units=[["good", "film"], ["bad", "film"]],
        ...     values=[np.array([1.0, 0.5]), np.array([-1.0, 0.0])],
        ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
        ...     method="inherent")
        >>> corpus = global_explanation(explanation)
        >>> "good" in corpus.to_html(min_count=1)
        True
        """
        key = [(SEQUENTIAL, "mean weight")] if self.class_independent else \
            [(POSITIVE, "raises the logit on average"), (NEGATIVE, "lowers it on average")]
        top = self.top(k, min_count)
        return render("corpus.html", kind="corpus", method=self.method, standalone=standalone,
                      title=f"{self.method} corpus view", signed=not self.class_independent,
                      key=[(hex_color(c), meaning) for c, meaning in key],
                      note=self._nonfinite_note(top, min_count), n_samples=self.n_samples,
                      min_count=min_count, png=figure_png(self.plot(k, min_count)),
                      top=table_cells(top))

    def _repr_html_(self) -> str:
        return self.to_html()


def global_explanation(
        source: TokenExplanation | Iterable[TokenExplanation] | Any,  # Any: a text estimator
        X: Sequence[str] | ArrayLike | None = None, *, chunk_size: int = 1000,
        **explain_kwargs: Any) -> GlobalExplanation:
    """Aggregate token attributions over a corpus into a :class:`GlobalExplanation`.

    Parameters
    ----------
    source : TokenExplanation, iterable of TokenExplanation or estimator
        Explanations (of one method), or a fitted text estimator, which then explains ``X``
        chunk by chunk (memory bounded by one chunk).
    X : sequence of str or None, default=None
        The texts, with an estimator ``source``.
    chunk_size : int, default=1000
        Texts explained at a time.
    **explain_kwargs
        Passed to ``explain`` (e.g. ``method``).

    Returns
    -------
    GlobalExplanation
        The per-class mean attribution of every token.

    Raises
    ------
    ValueError
        If there is nothing to aggregate, ``X`` is missing, or the methods differ.
    TypeError
        If ``source`` holds other explanations than token explanations.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.explanation import global_explanation
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> corpus = global_explanation(clf, X, chunk_size=2)
    >>> corpus.n_samples, corpus.method
    (4, 'inherent')
    """
    if hasattr(source, "explain"):
        if X is None:
            raise ValueError("global_explanation(estimator, X): X, the texts to explain, "
                             "is required.")
        parts = (e for _, e in iter_explanations(source, X, chunk_size, **explain_kwargs))
    else:
        parts = [source] if isinstance(source, TokenExplanation) else source
    methods: set[tuple[str, bool]]
    sums, methods, n_samples = None, set(), 0
    for explanation in parts:
        if not isinstance(explanation, TokenExplanation):
            raise TypeError("global_explanation aggregates TokenExplanations, got "
                            f"{type(explanation).__name__}.")
        lengths = [len(u) for u in explanation.units]
        values = np.concatenate(explanation.values).astype(np.float64)
        frame = pd.DataFrame({
            "target": labels(explanation.target)[np.repeat(np.arange(len(lengths)), lengths)],
            "token": texts([t for units in explanation.units for t in units]),
            "count": 1, "nan": np.isnan(values), "sum": np.nan_to_num(values, nan=0.0),
            "abs": np.nan_to_num(np.abs(values), nan=0.0)})
        part = frame.groupby(["target", "token"]).sum()
        sums = part if sums is None else sums.add(part, fill_value=0)
        methods.update(zip(explanation._each("method").tolist(),
                           explanation._each("class_independent").tolist(), strict=True))
        n_samples += len(explanation)
    if sums is None:
        raise ValueError("global_explanation needs at least one explanation.")
    if len(methods) > 1:
        raise ValueError("cannot aggregate explanations of different methods "
                         f"{sorted(m for m, _ in methods)}.")
    table = sums.reset_index()
    table["count"] = table["count"].astype(np.int64)
    undefined = table["nan"] > 0  # a NaN among the values: the mean is NaN too
    table["mean_attribution"] = (table["sum"] / table["count"]).mask(undefined)
    table["mean_abs_attribution"] = (table["abs"] / table["count"]).mask(undefined)
    table = table.sort_values(["target", "mean_attribution"], ascending=[True, False],
                              ignore_index=True)
    method, class_independent = methods.pop()
    return GlobalExplanation(table[TABLE_COLUMNS], method, n_samples, class_independent)
