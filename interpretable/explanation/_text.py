"""Token attributions of text classifiers and their alignment with the original text."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from interpretable.explanation._base import ClassifierExplanation, check_kind
from interpretable.explanation._frame import (
    FRAME_COLUMNS,
    SAMPLE_COLUMNS,
    build_frame,
    labels,
    texts,
)
from interpretable.explanation._style import (
    fmt,
    heat_cells,
    legend,
    render,
    row_scales,
    target_names,
    value_text,
)
from interpretable.explanation._text_views import TextViews

# Treebank tokens that stand for other characters of the text: `` and '' for a double quote
_QUOTES = {"``": ("``", '"', "''"), "''": ("''", '"')}


def _folded(text: str) -> tuple[str, np.ndarray]:
    """``text`` case-folded and, per folded character, the index of its original character."""
    folded = text.casefold()
    if len(folded) == len(text):  # casefold never shortens: equal length means one-to-one
        return folded, np.arange(len(text))
    pieces = [c.casefold() for c in text]
    return "".join(pieces), np.repeat(np.arange(len(text)), [len(p) for p in pieces])


def token_offsets(text: str, tokens: Sequence[str]) -> np.ndarray:
    """Find the character spans ``[start, end)`` of tokens in a text.

    Tokens are searched in order, case-insensitively, each after the previous one, so spans
    never overlap; Treebank quotes (`````` and ``''``) match a double quote and WordPiece's
    ``##`` prefix is ignored. Text the model did not see (e.g. markup removed by an earlier
    pipeline step) is skipped.

    Parameters
    ----------
    text : str
        The original text.
    tokens : sequence of str
        Its tokens, in order.

    Returns
    -------
    ndarray of shape (n_tokens, 2)
        The spans (int64), ``-1`` for a token not found.

    Examples
    --------
    >>> from interpretable.explanation import token_offsets
    >>> token_offsets("A ``good'' film", ["a", "``", "good", "''", "movie"])
    array([[ 0,  1],
           [ 2,  4],
           [ 4,  8],
           [ 8, 10],
           [-1, -1]])
    """
    folded, origin = _folded(text)
    spans = np.full((len(tokens), 2), -1, dtype=np.int64)
    cursor = 0
    for i, token in enumerate(tokens):
        candidates = _QUOTES.get(token, (token.removeprefix("##") or token,))
        found = [(at, len(c)) for c in (c.casefold() for c in candidates)
                 if (at := folded.find(c, cursor)) >= 0]
        if found:
            at, length = min(found, key=lambda f: (f[0], -f[1]))
            spans[i] = origin[at], origin[at + length - 1] + 1
            cursor = at + length
    return spans


def _top_tokens(units, values, signed: bool, k: int = 3) -> str:
    """The units with the largest (and, signed, the most negative) values (NaN values are
    neither)."""
    order = np.argsort(-values, kind="stable")
    order = order[~np.isnan(values[order])]

    def items(indices):
        return ", ".join(f"‘{units[j]}’ {value_text(values[j])}" for j in indices) or "–"

    if not signed:
        return f"most weight: {items(order[:k])}"
    raise_ = [j for j in order[:k] if values[j] > 0]
    lower = [j for j in order[::-1][:k] if values[j] < 0]
    return f"raise most: {items(raise_)} · lower most: {items(lower)}"


@dataclass
class TokenExplanation(TextViews, ClassifierExplanation):
    """Per-token attributions of text classifiers, as returned by ``explain``.

    Indexing (``explanation[i]``, slices, index arrays) gives a sub-explanation; ``len`` is
    the number of samples.

    Parameters
    ----------
    units : list of n lists of str
        The tokens the model saw.
    values : list of n ndarray of shape (T_i,)
        The attribution of each token.
    target : ndarray of shape (n,)
        The explained class labels.
    prediction : ndarray of shape (n,)
        The predicted class labels.
    method : str
        The explanation method.
    logit : ndarray of shape (n,) or None, default=None
        The explained logits.
    bias : ndarray of shape (n,) or None, default=None
        The part of the logit no token carries.
    queries : list of n lists of str or None, default=None
        Query tokens of pair inputs.
    inputs : list or None, default=None
        The caller's original samples (texts, or ``(text, query)`` pairs); from them
        :attr:`offsets` maps each token to its characters.
    proba : ndarray of shape (n, C) or None, default=None
        Predicted class probabilities over ``classes``.
    classes : ndarray of shape (C,) or None, default=None
        The estimator's classes.
    sample_ids : ndarray of shape (n,) or None, default=None
        The caller's ids (e.g. a pandas index); None: 0..n-1.
    class_independent : bool, default=False
        Whether the values are the same for every target (attention).
    contrast : ndarray of shape (n,) or None, default=None
        With ``explain(contrast=...)``: per sample ``"mean"`` (the values explain the target's
        logit minus the mean logit) or the class whose logit is subtracted; ``logit`` then
        holds that difference. None: the target's logit.
    n_steps : ndarray of shape (n,) or None, default=None
        With ``explain(method="integrated_gradients", n_steps="auto")``: the integration steps
        each sample used (NaN for samples of other methods after ``concat_explanations``).

    See Also
    --------
    ImageExplanation : Pixel contributions.
    SequenceExplanation : Contributions at every step of a sequence.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import TokenExplanation
    >>> explanation = TokenExplanation(
    ...     units=[["good", "film"], ["bad"]], values=[np.array([0.5, 0.25]), np.array([-1.0])],
    ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
    ...     method="inherent", logit=np.array([1.0, -0.5]), bias=np.array([0.25, 0.5]),
    ...     inputs=["Good film!", "bad"])
    >>> len(explanation), explanation.completeness_error
    (2, array([0., 0.]))
    >>> explanation.to_frame()[["sample", "token", "attribution"]]
       sample token  attribution
    0       0  good         0.50
    1       0  film         0.25
    2       1   bad        -1.00
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
    proba: np.ndarray | None = None
    classes: np.ndarray | None = None
    sample_ids: np.ndarray | None = None
    class_independent: bool = False
    contrast: np.ndarray | None = None
    n_steps: np.ndarray | None = None
    _per_sample = ("units", "values", "target", "prediction", "logit", "bias", "queries",
                   "inputs", "proba", "sample_ids", "contrast", "n_steps")

    def __post_init__(self):
        for i, (tok, att) in enumerate(zip(self.units, self.values, strict=True)):
            if len(tok) != len(att):
                raise ValueError(f"sample {i}: {len(tok)} units but {len(att)} values.")

    def _totals(self):
        """Per-sample ``(sum of values + bias, sum of their absolute values)``."""
        bias = np.zeros(len(self)) if self.bias is None else np.asarray(self.bias, dtype=np.float64)
        total = np.array([np.sum(a, dtype=np.float64) for a in self.values]) + bias
        magnitude = np.array([np.abs(a).sum(dtype=np.float64) for a in self.values])
        return total, magnitude + np.abs(bias)

    def _texts(self) -> list | None:
        """The original texts (the text of a pair), or None when they are not known."""
        if self.inputs is None:
            return None
        texts = [x[0] if isinstance(x, (tuple, list)) else x for x in self.inputs]
        return texts if all(isinstance(t, str) for t in texts) else None

    @functools.cached_property
    def offsets(self) -> list | None:
        """Per sample, the ``(T_i, 2)`` character spans of the tokens in the original text.

        See :func:`token_offsets`; -1 where a token was not found; None without ``inputs``.
        """
        texts = self._texts()
        if texts is None:
            return None
        return [token_offsets(t, u) for t, u in zip(texts, self.units, strict=True)]

    def to_frame(self, kind: str = "units") -> pd.DataFrame:
        """Return the explanation as a tidy table.

        Parameters
        ----------
        kind : {"units", "samples"}, default="units"
            ``"units"``: one row per sample × token, with ``query`` for pair inputs and
            ``char_start`` / ``char_end`` (``<NA>`` for a token not found) when the original
            texts are known. ``"samples"``: one row per sample with logit, bias,
            probabilities and completeness error where known.

        Returns
        -------
        pandas.DataFrame
            The table (columns of :data:`~interpretable.explanation.FRAME_COLUMNS` or
            :data:`~interpretable.explanation.SAMPLE_COLUMNS`).

        Raises
        ------
        ValueError
            If ``kind`` is neither.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import TokenExplanation
        >>> explanation = TokenExplanation(
        ...     units=[["good", "film"], ["bad"]], values=[np.array([0.5, 0.25]), np.array([-1.0])],
        ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
        ...     method="inherent", logit=np.array([1.0, -0.5]), bias=np.array([0.25, 0.5]),
        ...     inputs=["Good film!", "bad"])
        >>> explanation.to_frame()[["token", "char_start", "char_end"]]
          token  char_start  char_end
        0  good           0         4
        1  film           5         9
        2   bad           0         3
        >>> explanation.to_frame(kind="samples")[["sample", "logit", "bias"]]
           sample  logit  bias
        0       0    1.0  0.25
        1       1   -0.5  0.50
        """
        check_kind(kind)
        if kind == "samples":
            return build_frame({**self._samples_columns(), "n_steps": self.n_steps},
                               SAMPLE_COLUMNS)
        lengths = [len(t) for t in self.units]
        rows = np.repeat(np.arange(len(self)), lengths)
        spans = None if self.offsets is None else np.concatenate(self.offsets).reshape(-1, 2)
        return build_frame({
            "sample": self.ids()[rows],
            "unit": np.concatenate([np.arange(n) for n in lengths]),
            "token": texts([t for tokens in self.units for t in tokens]),
            "query": None if self.queries is None
            else texts([" ".join(q) for q in self.queries])[rows],
            "char_start": None if spans is None else pd.arrays.IntegerArray(spans[:, 0],
                                                                            spans[:, 0] < 0),
            "char_end": None if spans is None else pd.arrays.IntegerArray(spans[:, 1],
                                                                          spans[:, 1] < 0),
            "target": labels(self.target)[rows],
            "contrast": None if self.contrast is None else texts(self.contrast)[rows],
            "attribution": np.concatenate(self.values).astype(np.float64),
            "prediction": labels(self.prediction)[rows],
            **self._method_columns(rows),
        }, FRAME_COLUMNS)

    def to_html(self, scale: str | float = "shared", *, standalone: bool = False) -> str:
        """Heat map of each sample's text, with a color bar, the method and the target.

        Signed methods: red raises the logit of the row's target class, blue lowers it.
        Class-independent methods (attention): one sequential color, flagged. ``scale``:
        ``"shared"`` (one color scale for all rows), ``"row"`` (each row its own) or a
        number (fixed: values beyond it saturate). Rows show the original text when it is
        known (``inputs``), else the tokens; probability and logit when known; the query of
        pair inputs.

        Parameters
        ----------
        scale : {"shared", "row"} or float, default="shared"
            The color scale: one for all rows, one per row, or fixed (values beyond it
            saturate).
        standalone : bool, default=False
            A full HTML page instead of a fragment.

        Returns
        -------
        str
            The HTML.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import TokenExplanation
        >>> explanation = TokenExplanation(
        ...     units=[["good", "film"], ["bad"]], values=[np.array([0.5, 0.25]), np.array([-1.0])],
        ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
        ...     method="inherent", logit=np.array([1.0, -0.5]), bias=np.array([0.25, 0.5]),
        ...     inputs=["Good film!", "bad"])
        >>> html = explanation.to_html(scale="row")
        >>> "film" in html
        True
        """
        signed, method = not self._single("class_independent"), self._single("method")
        scales = row_scales(scale, [np.asarray(v, dtype=np.float64) for v in self.values])
        probabilities, texts = self.probabilities(), self._texts()
        rows = [self._html_row(i, scales[i], signed, scale == "row", probabilities, texts)
                for i in range(len(self))]
        return render("tokens.html", kind="tokens", method=method, standalone=standalone,
                      title=f"{method} token attributions", signed=signed,
                      targets=target_names(self.target), rows=rows,
                      explains=("the logit of the row's target class" if self.contrast is None
                                else self.explained()),
                      scale=legend(None if scale == "row" else scales[0], signed,
                                   self.explained(), values=self.values))

    def _html_row(self, i: int, scale: float, signed: bool, per_row: bool, probabilities,
                  texts) -> dict:
        """One row of the view (``tokens.html``): meta data, the colored text, top tokens."""
        units, values = self.units[i], np.asarray(self.values[i], dtype=np.float64)
        query = None
        if self.queries is not None:
            pair = None if self.inputs is None else self.inputs[i]
            query = pair[1] if isinstance(pair, (tuple, list)) else " ".join(self.queries[i])
        pieces, tail = self._pieces(i, values, scale, signed, texts)
        return {
            "id": self.ids()[i], "target": self.target[i], "prediction": self.prediction[i],
            "target_p": "" if probabilities is None else f" (p={probabilities[0][i]:.2f})",
            "prediction_p": "" if probabilities is None else f" (p={probabilities[1][i]:.2f})",
            "logit": None if self.logit is None else value_text(self.logit[i]),
            "explained": "logit" if self.contrast is None else f"{self.explained(i)} =",
            "scale": fmt(scale) if per_row else None, "query": query,
            "pieces": pieces, "tail": tail, "top": _top_tokens(units, values, signed)}

    def _pieces(self, i: int, values, scale: float, signed: bool, texts) -> tuple[list, str]:
        """``([(text before, colored token cell), ...], text after)``: the original text with
        its tokens colored, or the tokens alone when the text is unknown or a token could not
        be found in it."""
        units = self.units[i]
        spans = None if self.offsets is None else self.offsets[i]
        if spans is None or (spans < 0).any():
            cells = heat_cells(units, values, scale, signed)
            return [("" if j == 0 else " ", cell) for j, cell in enumerate(cells)], ""
        text = texts[i]
        if not len(spans):  # no token (a blank text): the text alone
            return [], text
        cells = heat_cells([text[a:b] for a, b in spans], values, scale, signed, labels=units)
        starts = [0, *spans[:-1, 1]]
        pieces = [(text[cursor:a], cell)
                  for cursor, (a, _), cell in zip(starts, spans, cells, strict=True)]
        return pieces, text[spans[-1, 1]:]


@dataclass
class WordPieceExplanation(TokenExplanation):
    """Per-piece or per-word attributions of a BERT-family classifier, as ``explain`` returns.

    A :class:`TokenExplanation` at the level of the model's word pieces or of the words of the
    text (the explainers of :mod:`interpretable.estimators.methods` make it).

    Parameters
    ----------
    units, values, target, prediction, method, logit, bias, queries, inputs, proba, classes, \
contrast, class_independent, sample_ids, n_steps : as in TokenExplanation
        The fields of every token explanation (see :class:`TokenExplanation`).
    level : {"piece", "word"}, default="piece"
        The units: the model's word pieces or the words of the text.
    spans : list of ndarray of shape (T_i, 2) or None, default=None
        Per sample, the character spans of the units in the text (-1: not in the text).
    position_type : ndarray of shape (n_samples,) or None, default=None
        The position / token-type share of the logit (part of ``bias``); None for post-hoc
        methods.
    truncated : ndarray of shape (n_samples,) or None, default=None
        The word pieces of each text cut off by ``max_length`` (0: all seen).

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.explanation import WordPieceExplanation
    >>> explanation = WordPieceExplanation(
    ...     units=[["[CLS]", "good", "film", "[SEP]"]], values=[np.array([0.0, 0.5, 0.25, 0.0])],
    ...     target=np.array(["pos"]), prediction=np.array(["pos"]), method="gradient",
    ...     inputs=["good film"], spans=[np.array([[-1, -1], [0, 4], [5, 9], [-1, -1]])],
    ...     truncated=np.array([0]))
    >>> explanation.to_frame("samples")["truncated"].tolist()
    [0]
    """

    level: str = "piece"
    spans: list | None = None
    position_type: np.ndarray | None = None
    truncated: np.ndarray | None = None
    _per_sample = TokenExplanation._per_sample + ("spans", "position_type", "truncated")

    @property
    def offsets(self) -> list | None:
        """The tokenizer's exact character spans (see :attr:`spans`)."""
        return self.spans

    def to_frame(self, kind: str = "units") -> pd.DataFrame:
        """Return the explanation as a tidy table, as :meth:`TokenExplanation.to_frame`.

        Parameters
        ----------
        kind : {"units", "samples"}, default="units"
            As :meth:`TokenExplanation.to_frame`; ``"samples"`` adds ``position_type`` (when
            known) and ``truncated``.

        Returns
        -------
        pandas.DataFrame
            The table.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable.explanation import WordPieceExplanation
        >>> explanation = WordPieceExplanation(
        ...     units=[["[CLS]", "good", "[SEP]"]], values=[np.array([0.0, 0.5, 0.0])],
        ...     target=np.array(["pos"]), prediction=np.array(["pos"]), method="gradient",
        ...     truncated=np.array([2]))
        >>> explanation.to_frame("samples")["truncated"].tolist()
        [2]
        """
        frame = super().to_frame(kind)
        if kind == "samples":
            for name in ("position_type", "truncated"):
                if getattr(self, name) is not None:
                    frame[name] = np.asarray(getattr(self, name))
        return frame

    def to_html(self, scale: str | float = "shared", *, standalone: bool = False) -> str:
        """Return the heat map of :meth:`TokenExplanation.to_html`, noting truncated samples.

        Parameters
        ----------
        scale : {"shared", "row"} or float, default="shared"
            As :meth:`TokenExplanation.to_html`.
        standalone : bool, default=False
            A full HTML page instead of a fragment.

        Returns
        -------
        str
            The HTML.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable.explanation import WordPieceExplanation
        >>> explanation = WordPieceExplanation(
        ...     units=[["[CLS]", "good", "[SEP]"]], values=[np.array([0.0, 0.5, 0.0])],
        ...     target=np.array(["pos"]), prediction=np.array(["pos"]), method="gradient",
        ...     truncated=np.array([2]))
        >>> "Truncated" in explanation.to_html()
        True
        """
        html = super().to_html(scale, standalone=standalone)
        cut: Sequence[int] | np.ndarray = [] if self.truncated is None \
            else np.flatnonzero(np.asarray(self.truncated))
        if len(cut) == 0:
            return html
        names = ", ".join(str(self.ids()[i]) for i in cut[:10]) + (" …" if len(cut) > 10 else "")
        note = (f'<p class="ie-note">Truncated to the model\'s max_length: sample(s) {names}; '
                "only the start of their text was seen (the rest is not colored).</p>")
        at = html.find('<div class="ie-row"')
        return html[:at] + note + html[at:] if at >= 0 else html
