"""Corpus view: token attributions aggregated over many explanations, per explained class."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._frame import labels, texts
from .chunked import iter_explanations
from ._style import (
    NAN_COLOUR,
    NEGATIVE,
    POSITIVE,
    SEQUENTIAL,
    figure_png,
    finite_peak,
    hex_colour,
    plot_text,
    render,
    table_cells,
    value_text,
)
from .text import TokenExplanation

TABLE_COLUMNS = ["target", "token", "count", "mean_attribution", "mean_abs_attribution"]


@dataclass
class GlobalExplanation:
    """Every token's attribution averaged over a corpus, per explained class (the analogue
    of InterpretML's ``explain_global`` for token attributions).

    table : one row per (target, token): ``count`` (occurrences), ``mean_attribution``,
    ``mean_abs_attribution``; sorted by target, then mean attribution (largest first).
    method : the explanation method; n_samples : how many samples were aggregated;
    class_independent : whether the method gives the same values for every target.
    """

    table: pd.DataFrame
    method: str
    n_samples: int
    class_independent: bool = False

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def top(self, k: int = 10, min_count: int = 3) -> pd.DataFrame:
        """Per target, the ``k`` tokens seen at least ``min_count`` times with the largest
        mean attribution and, for signed methods, the ``k`` with the most negative one."""
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

    def plot(self, k: int = 10, min_count: int = 3):
        """Bar chart per target of :meth:`top` (a matplotlib ``Figure``, not registered with
        pyplot, shown as an image in Jupyter): red bars raise the class's logit on average,
        blue bars lower it (one purple for class-independent methods); ``n`` = occurrences.
        A ±∞ mean is drawn to the end of the axis and labelled; tokens with a NaN mean are
        counted in the title."""
        from ._figure import ViewFigure

        top = self.top(k, min_count)
        targets = sorted(top["target"].unique())
        ncols = max(1, min(len(targets), 3))
        nrows = max(1, -(-len(targets) // ncols))
        height = 0.25 * top.groupby("target").size().max() + 1 if len(top) else 2
        fig = ViewFigure(figsize=(4.2 * ncols, height * nrows), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax in axes[len(targets):]:
            ax.set_axis_off()
        for ax, target in zip(axes, targets):
            rows = top[top["target"] == target].sort_values("mean_attribution")
            values = rows["mean_attribution"].to_numpy(dtype=np.float64)
            lim = finite_peak(values) or 1.0
            colours = [hex_colour(SEQUENTIAL if self.class_independent else
                                  POSITIVE if v > 0 else NEGATIVE) if not np.isnan(v)
                       else NAN_COLOUR for v in values]
            ax.barh(range(len(rows)), np.nan_to_num(np.clip(values, -lim, lim)), color=colours)
            ax.set_yticks(range(len(rows)), [
                plot_text(f"{t} (n={c})") + ("" if np.isfinite(v) else f" = {value_text(v)}")
                for t, c, v in zip(rows["token"], rows["count"], values)])
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
        """The bar chart (embedded PNG) and the table of :meth:`top`, with the method and
        the colour semantics."""
        key = [(SEQUENTIAL, "mean weight")] if self.class_independent else \
            [(POSITIVE, "raises the logit on average"), (NEGATIVE, "lowers it on average")]
        top = self.top(k, min_count)
        return render("corpus.html", kind="corpus", method=self.method, standalone=standalone,
                      title=f"{self.method} corpus view", signed=not self.class_independent,
                      key=[(hex_colour(c), meaning) for c, meaning in key],
                      note=self._nonfinite_note(top, min_count), n_samples=self.n_samples,
                      min_count=min_count, png=figure_png(self.plot(k, min_count)),
                      top=table_cells(top))

    def _repr_html_(self) -> str:
        return self.to_html()


def global_explanation(source, X=None, *, chunk_size: int = 1000,
                       **explain_kwargs) -> GlobalExplanation:
    """Aggregate token attributions over a corpus into a :class:`GlobalExplanation`.

    source : a :class:`TokenExplanation`, an iterable of them (same method), or a fitted text
        estimator, which then explains ``X`` chunk by chunk (``chunk_size``, memory bounded
        by one chunk; ``explain_kwargs`` go to ``explain``).
    """
    if hasattr(source, "explain"):
        if X is None:
            raise ValueError("global_explanation(estimator, X): X, the texts to explain, "
                             "is required.")
        parts = (e for _, e in iter_explanations(source, X, chunk_size, **explain_kwargs))
    else:
        parts = [source] if isinstance(source, TokenExplanation) else source
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
        methods.add((explanation.method, explanation.class_independent))
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
