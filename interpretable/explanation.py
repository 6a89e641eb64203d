"""Explanation containers: arrays + metadata, a tidy table and a human view.

Every container turns into the same long-format table (:data:`FRAME_COLUMNS`), one row per
sample × unit::

    sample       int    index of the sample in the explained batch
    unit         int    token position, flat pixel index (row * W + col) or sequence position
    token        str    the token / symbol at the unit (None for pixels; lone surrogates → U+FFFD)
    row, col     Int64  pixel coordinates (<NA> for text)
    step         Int64  position of the explained logit in a sequence (<NA> unless sequence)
    component    str    "total", or the model component (e.g. "layer0.head1") of a by-head view
    target       object the class / symbol whose logit is explained
    attribution  float  contribution of the unit to that logit
    prediction   object the model's prediction for the sample (or step)
    method       str    explanation method ("inherent", "attention", "integrated_gradients", ...)

Inherent (faithful-by-construction) explanations also carry ``logit`` and ``bias``: the
values plus the bias reproduce the logit, checked by ``completeness_error``: the
absolute error ``|sum(values) + bias - logit|`` relative to the size of what is summed,
``max(|logit|, sum|values| + |bias|)``. That is the scale of floating-point rounding in
the sum, so the error stays meaningful for logits near 0 (float32 gives ~1e-7, float64 ~1e-16).
"""

from __future__ import annotations

import dataclasses
import html
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = [
    "FRAME_COLUMNS",
    "TokenExplanation",
    "ImageExplanation",
    "SequenceExplanation",
    "concat_explanations",
]

FRAME_COLUMNS = [
    "sample", "unit", "token", "row", "col", "step", "component",
    "target", "attribution", "prediction", "method",
]


def _relative_error(total, logit, magnitude):
    """``|total - logit|`` relative to ``max(|logit|, magnitude, 1e-300)``, where ``magnitude``
    is the sum of the absolute values of the summed terms."""
    total, logit = np.asarray(total, dtype=np.float64), np.asarray(logit, dtype=np.float64)
    scale = np.maximum(np.maximum(np.abs(logit), np.asarray(magnitude, dtype=np.float64)), 1e-300)
    return np.abs(total - logit) / scale


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _exportable(text):
    """``text`` with lone surrogates (invalid in UTF-8, e.g. from ``errors="surrogateescape"``
    decoding) replaced by U+FFFD, so that every export format can write it."""
    return _LONE_SURROGATE.sub("\ufffd", text) if isinstance(text, str) else text


def _frame(columns: dict, n_rows: int) -> pd.DataFrame:
    """Assemble the shared schema; missing columns are filled with nulls of the right dtype.
    Tokens are made exportable (lone surrogates → U+FFFD)."""
    if columns.get("token") is not None:
        columns = {**columns, "token": np.array([_exportable(t) for t in columns["token"]],
                                                dtype=object)}
    data = {}
    for name in FRAME_COLUMNS:
        value = columns.get(name)
        if value is None:
            if name in ("row", "col", "step"):
                value = pd.array([pd.NA] * n_rows, dtype="Int64")
            elif name == "component":
                value = np.full(n_rows, "total", dtype=object)
            else:
                value = np.full(n_rows, None, dtype=object)
        elif name in ("row", "col", "step"):
            value = pd.array(np.asarray(value, dtype=np.int64), dtype="Int64")
        data[name] = value
    return pd.DataFrame(data)


def _color(value: float, scale: float) -> str:
    """Red for positive, blue for negative, white for zero (alpha by magnitude)."""
    alpha = 0.0 if scale == 0 else min(abs(value) / scale, 1.0)
    rgb = "220,40,40" if value > 0 else "40,80,220"
    return f"rgba({rgb},{alpha:.3f})"


def _heat_spans(units, values, sep: str = " ") -> str:
    """HTML spans of ``units`` coloured by ``values`` (scaled by the largest ``|value|``)."""
    values = np.asarray(values, dtype=np.float64)
    scale = float(np.abs(values).max()) if values.size else 0.0
    return sep.join(
        f'<span style="background-color:{_color(a, scale)}" title="{a:.4g}">{html.escape(u)}</span>'
        for u, a in zip(units, values)
    )


def _html_document(method: str, rows: list) -> str:
    return (
        f'<div class="interpretable-explanation" data-method="{html.escape(method)}">'
        + "\n".join(rows) + "</div>"
    )


class _Explanation:
    """Shared behaviour: length, indexing, concatenation of per-sample fields."""

    _per_sample: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(getattr(self, self._per_sample[0]))

    def __getitem__(self, index):
        """A sub-explanation with the samples selected by an int, slice or index array."""
        indices = np.arange(len(self))[index]
        indices = np.atleast_1d(indices)
        changes = {}
        for name in self._per_sample:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, np.ndarray):
                changes[name] = value[indices]
            else:
                changes[name] = [value[i] for i in indices]
        return dataclasses.replace(self, **changes)

    @property
    def completeness_error(self) -> np.ndarray | None:
        """Per-sample relative error of ``sum(values) + bias`` against ``logit``
        (None when the explanation has no logit, e.g. post-hoc methods)."""
        if getattr(self, "logit", None) is None:
            return None
        totals, magnitudes = self._totals()
        return _relative_error(totals, self.logit, magnitudes)


def _concat_field(values: list):
    if any(v is None for v in values):
        if not all(v is None for v in values):
            raise ValueError("cannot concatenate explanations where only some carry a field")
        return None
    if isinstance(values[0], np.ndarray):
        return np.concatenate(values, axis=0)
    return [item for value in values for item in value]


def concat_explanations(explanations):
    """Concatenate explanations of the same type and method, samples renumbered in order."""
    explanations = list(explanations)
    if not explanations:
        raise ValueError("concat_explanations needs at least one explanation.")
    kind = type(explanations[0])
    if any(type(e) is not kind for e in explanations):
        raise TypeError("cannot concatenate explanations of different types.")
    changes = {}
    for f in dataclasses.fields(kind):
        values = [getattr(e, f.name) for e in explanations]
        if f.name in kind._per_sample:
            changes[f.name] = _concat_field(values)
        elif any(not _same(v, values[0]) for v in values[1:]):
            raise ValueError(f"cannot concatenate explanations with different {f.name!r}.")
    return dataclasses.replace(explanations[0], **changes)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


@dataclass
class TokenExplanation(_Explanation):
    """Per-token attributions for text classifiers.

    units : list of n lists of str (the tokens the model saw); values : list of n float arrays
    ``(T_i,)``, the attribution of each token;
    target, prediction : ``(n,)`` class labels; logit, bias : ``(n,)`` or None;
    queries : list of n token lists for pair inputs, or None; inputs : the caller's original
    samples (set by :class:`~interpretable.pipeline.ExplainablePipeline`), or None.
    """

    units: list
    values: list
    target: np.ndarray
    prediction: np.ndarray
    method: str
    logit: np.ndarray | None = None
    bias: np.ndarray | None = None
    queries: list | None = None
    inputs: list | None = None
    _per_sample = ("units", "values", "target", "prediction", "logit", "bias", "queries",
                   "inputs")

    def __post_init__(self):
        for i, (tok, att) in enumerate(zip(self.units, self.values)):
            if len(tok) != len(att):
                raise ValueError(f"sample {i}: {len(tok)} units but {len(att)} values.")

    def _totals(self):
        """Per-sample ``(sum of values + bias, sum of their absolute values)``."""
        bias = np.zeros(len(self)) if self.bias is None else np.asarray(self.bias, dtype=np.float64)
        total = np.array([np.sum(a, dtype=np.float64) for a in self.values]) + bias
        magnitude = np.array([np.abs(a).sum(dtype=np.float64) for a in self.values])
        return total, magnitude + np.abs(bias)

    def to_frame(self) -> pd.DataFrame:
        """One row per sample × token; pair inputs add a ``query`` column (the sample's query
        tokens joined by spaces)."""
        lengths = [len(t) for t in self.units]
        n_rows = sum(lengths)
        sample = np.repeat(np.arange(len(self)), lengths)
        frame = _frame(
            {
                "sample": sample,
                "unit": np.concatenate([np.arange(n) for n in lengths]) if n_rows else [],
                "token": np.array([t for toks in self.units for t in toks], dtype=object),
                "target": np.asarray(self.target, dtype=object)[sample],
                "attribution": np.concatenate(self.values).astype(np.float64)
                if n_rows else np.zeros(0),
                "prediction": np.asarray(self.prediction, dtype=object)[sample],
                "method": np.full(n_rows, self.method, dtype=object),
            },
            n_rows,
        )
        if self.queries is not None:
            queries = np.array([_exportable(" ".join(q)) for q in self.queries], dtype=object)
            frame.insert(frame.columns.get_loc("token") + 1, "query", queries[sample])
        return frame

    def to_html(self) -> str:
        """Token heat map: red = positive, blue = negative, text HTML-escaped."""
        rows = []
        for i in range(len(self)):
            spans = _heat_spans(self.units[i], self.values[i])
            head = (
                f"target={html.escape(str(self.target[i]))} "
                f"prediction={html.escape(str(self.prediction[i]))}"
            )
            rows.append(f'<div class="explanation"><small>{head}</small><br>{spans}</div>')
        return _html_document(self.method, rows)

    def _repr_html_(self):
        return self.to_html()


@dataclass
class ImageExplanation(_Explanation):
    """Per-pixel contributions for image classifiers.

    values : ``(n, H, W)`` contributions summed over input channels;
    target, prediction : ``(n,)``; images : ``(n, H, W, C)`` inputs in [0, 1] or None;
    weights : ``(n, H, W, K)`` dynamic linear weights ``W(x)`` over the K encoded input
    channels (B-cos: ``[x, 1-x]``) or None; logit, bias : ``(n,)`` or None;
    components : ``(n, M, H, W)`` contribution maps of M model components (e.g. attention
    heads) that sum to ``values``, with ``component_names`` (M names), or None.
    """

    values: np.ndarray
    target: np.ndarray
    prediction: np.ndarray
    method: str
    images: np.ndarray | None = None
    weights: np.ndarray | None = None
    logit: np.ndarray | None = None
    bias: np.ndarray | None = None
    components: np.ndarray | None = None
    component_names: list = field(default_factory=list)
    inputs: list | None = None
    _per_sample = ("values", "target", "prediction", "images", "weights", "logit",
                   "bias", "components", "inputs")

    def __post_init__(self):
        if np.ndim(self.values) != 3:
            raise ValueError(f"values must have shape (n, H, W), got {np.shape(self.values)}.")

    def _totals(self):
        """Per-sample ``(sum of values + bias, sum of their absolute values)``."""
        flat = self.values.reshape(len(self), -1).astype(np.float64)
        bias = np.zeros(len(self)) if self.bias is None else np.asarray(self.bias, dtype=np.float64)
        return flat.sum(axis=1) + bias, np.abs(flat).sum(axis=1) + np.abs(bias)

    def to_frame(self, by_component: bool = False) -> pd.DataFrame:
        """One row per sample × pixel (× component when ``by_component``)."""
        n, h, w = self.values.shape
        maps = self.values[:, None]
        names = ["total"]
        if by_component:
            if self.components is None:
                raise ValueError("this explanation has no components; use explain(by='head').")
            maps, names = self.components, list(self.component_names)
        m = len(names)
        n_rows = n * m * h * w
        sample = np.repeat(np.arange(n), m * h * w)
        pixel = np.tile(np.arange(h * w), n * m)
        return _frame(
            {
                "sample": sample,
                "unit": pixel,
                "row": pixel // w,
                "col": pixel % w,
                "component": np.tile(np.repeat(np.array(names, dtype=object), h * w), n),
                "target": np.asarray(self.target, dtype=object)[sample],
                "attribution": maps.reshape(-1).astype(np.float64),
                "prediction": np.asarray(self.prediction, dtype=object)[sample],
                "method": np.full(n_rows, self.method, dtype=object),
            },
            n_rows,
        )

    def plot(self, kind: str = "contributions", ncols: int = 4, percentile: float = 99.9):
        """Grid of maps; returns a matplotlib Figure.

        ``kind="contributions"``: blue-white-red, symmetric, clipped at the ``percentile`` of
        ``|value|`` per image. ``kind="weights"``: ``W(x)`` in colour via the ``[x, 1-x]`` angle
        encoding (RGB models; pixels with positive contribution only, as in the B-cos paper).
        """
        import matplotlib.pyplot as plt

        if kind not in ("contributions", "weights"):
            raise ValueError(f"kind must be 'contributions' or 'weights', got {kind!r}.")
        if kind == "weights" and self.weights is None:
            raise ValueError("this explanation carries no dynamic weights W(x).")
        n = len(self)
        ncols = max(1, min(ncols, n))
        nrows = -(-n // ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(2.2 * ncols, 2.4 * nrows), squeeze=False)
        for ax in axes.flat:
            ax.axis("off")
        for i, ax in zip(range(n), axes.flat):
            if kind == "contributions":
                a = self.values[i]
                lim = float(np.percentile(np.abs(a), percentile)) or 1.0
                ax.imshow(np.clip(a, -lim, lim), cmap="bwr", vmin=-lim, vmax=lim)
            else:
                ax.imshow(weights_to_rgba(self.weights[i], self.values[i], percentile))
            ax.set_title(f"t={self.target[i]} p={self.prediction[i]}", fontsize=8)
        fig.tight_layout()
        return fig


def weights_to_rgba(weights: np.ndarray, contributions: np.ndarray, percentile: float = 99.9):
    """Colour visualisation of ``W(x)`` for a 6-channel ``[r, g, b, 1-r, 1-g, 1-b]`` encoding.

    The colour of a pixel is ``w[:3] / (w[:3] + w[3:])`` (the angle encoding of the B-cos
    paper); opacity follows the positive contribution, clipped at ``percentile``.
    """
    if weights.shape[-1] != 6:
        raise ValueError(f"colour weights need the 6-channel [x, 1-x] encoding, got {weights.shape}.")
    w = np.asarray(weights, dtype=np.float64)
    pos, neg = w[..., :3], w[..., 3:]
    denom = np.abs(pos) + np.abs(neg)
    rgb = np.where(denom > 0, np.abs(pos) / np.maximum(denom, 1e-12), 0.5)
    contrib = np.clip(contributions, 0, None)
    lim = float(np.percentile(contrib, percentile)) or 1.0
    alpha = np.clip(contrib / lim, 0, 1)
    return np.concatenate([rgb, alpha[..., None]], axis=-1)


@dataclass
class SequenceExplanation(_Explanation):
    """Contributions of every input unit to the logits at every later step.

    units : list of n lists of S_i units (characters, or words with ``level="word"``);
    values : list of n arrays ``(T_i, S_i)``, entry ``[t, s]`` = contribution of unit
    ``s`` to the explained logit at step ``t`` (0 for units after ``t``);
    target, prediction : lists of n arrays ``(T_i,)`` of the explained / predicted symbol;
    logit, bias : lists of n float arrays ``(T_i,)`` or None (bias = all terms not owned by a
    unit, e.g. readout bias and initial state).
    """

    units: list
    values: list
    target: list
    prediction: list
    method: str
    logit: list | None = None
    bias: list | None = None
    level: str = "char"
    inputs: list | None = None
    _per_sample = ("units", "values", "target", "prediction", "logit", "bias", "inputs")

    def __post_init__(self):
        for i, (sym, c) in enumerate(zip(self.units, self.values)):
            if np.ndim(c) != 2 or c.shape[1] != len(sym):
                raise ValueError(
                    f"sample {i}: values must be (steps, {len(sym)}), got {np.shape(c)}."
                )

    def _totals(self):
        """Per sample and step: ``(sum of contributions + bias, sum of absolute values)``."""
        totals, magnitudes = [], []
        for i, c in enumerate(self.values):
            c = np.asarray(c, dtype=np.float64)
            b = np.zeros(len(c)) if self.bias is None else np.asarray(self.bias[i], dtype=np.float64)
            totals.append(c.sum(axis=1) + b)
            magnitudes.append(np.abs(c).sum(axis=1) + np.abs(b))
        return totals, magnitudes

    @property
    def completeness_error(self):
        """Per-sample maximum relative error over steps (None without logits)."""
        if self.logit is None:
            return None
        totals, magnitudes = self._totals()
        return np.array([
            _relative_error(t, l, m).max() for t, l, m in zip(totals, self.logit, magnitudes)
        ])

    def to_frame(self) -> pd.DataFrame:
        """One row per sample × step × unit (units not yet read at a step contribute 0)."""
        parts = []
        for i, c in enumerate(self.values):
            steps, units = np.indices(c.shape).reshape(2, -1)
            n_rows = len(steps)
            parts.append(
                _frame(
                    {
                        "sample": np.full(n_rows, i),
                        "unit": units,
                        "token": np.array(self.units[i], dtype=object)[units],
                        "step": steps,
                        "target": np.asarray(self.target[i], dtype=object)[steps],
                        "attribution": c[steps, units].astype(np.float64),
                        "prediction": np.asarray(self.prediction[i], dtype=object)[steps],
                        "method": np.full(n_rows, self.method, dtype=object),
                    },
                    n_rows,
                )
            )
        return pd.concat(parts, ignore_index=True)

    def to_html(self, step: int = -1) -> str:
        """Heat map of each sample's units for the explained logit at ``step`` (default last)."""
        rows = []
        for i, c in enumerate(self.values):
            t = step % c.shape[0]
            spans = _heat_spans(self.units[i], c[t], sep="" if self.level == "char" else " ")
            head = (
                f"step {t}: target={html.escape(repr(str(self.target[i][t])))} "
                f"prediction={html.escape(repr(str(self.prediction[i][t])))}"
            )
            rows.append(
                f'<div class="explanation"><small>{head}</small><br>'
                f'<span style="font-family:monospace;white-space:pre">{spans}</span></div>'
            )
        return _html_document(self.method, rows)

    def _repr_html_(self):
        return self.to_html()
