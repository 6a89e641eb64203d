"""Contributions of every earlier symbol (or word) of a sequence to the logits at each step:
the container, its steps and its tables (the views are in :mod:`._sequence_views`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np
import pandas as pd

from interpretable.explanation._base import Explanation, check_kind, relative_error
from interpretable.explanation._frame import (
    FRAME_COLUMNS,
    SAMPLE_COLUMNS,
    build_frame,
    labels,
    texts,
)
from interpretable.explanation._sequence_views import SequenceViews

__all__ = ["SequenceExplanation"]


def _concat_columns(parts: list) -> dict:
    """Column-wise concatenation of per-sample column dicts; a column that is None in any
    part is left out."""
    return {name: None if any(p[name] is None for p in parts)
            else np.concatenate([p[name] for p in parts]) for name in parts[0]}


@dataclass
class SequenceExplanation(SequenceViews, Explanation):
    """Contributions of every input unit to the logits at every later step of a sequence.

    As returned by the sequence models' ``explain``. Views and tables count steps in units of
    ``level``: at word level step ``w`` is the logit after the last character of word ``w``
    (rows at other characters stay in ``values``).

    Parameters
    ----------
    units : list of n lists of S_i str
        Characters, or words with ``level="word"``, each with its leading whitespace.
    values : list of n ndarray of shape (P_i, S_i)
        Entry ``[r, s]``: the contribution of unit ``s`` to the explained logit at the step
        of row ``r`` (0 for units after it).
    target : list of n ndarray of shape (P_i,)
        The explained symbols.
    prediction : list of n ndarray of shape (P_i,)
        The predicted symbols.
    method : str
        The explanation method.
    logit : list of n ndarray of shape (P_i,) or None, default=None
        The explained logits.
    bias : list of n ndarray of shape (P_i,) or None, default=None
        All terms not owned by a unit (e.g. readout bias and initial state).
    level : {"char", "word"}, default="char"
        The units.
    inputs : list or None, default=None
        The original sequences (texts).
    steps : list of n int ndarray of shape (P_i,) or None, default=None
        The symbol position of each row; None when the rows are every position 0, 1, ...
    sample_ids : ndarray of shape (n,) or None, default=None
        The caller's ids; None: 0..n-1.
    window : int or None, default=None
        The compact layout of a windowed explanation (char level): values are
        ``(P_i, window)`` and column ``j`` of a row at step ``t`` is the unit
        ``t - window + 1 + j`` (0 before the text); older units' contributions are in
        ``bias``.
    class_independent : bool, default=False
        Whether the values are the same for every target.

    See Also
    --------
    TokenExplanation : Token attributions of text classifiers.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import SequenceExplanation
    >>> explanation = SequenceExplanation(
    ...     units=[["a", "b"]], values=[np.array([[0.5, 0.0], [0.25, 1.0]])],
    ...     target=[np.array(["b", "c"])], prediction=[np.array(["b", "a"])],
    ...     method="inherent", logit=[np.array([1.0, 1.5])], bias=[np.array([0.5, 0.25])],
    ...     inputs=["ab"])
    >>> explanation.completeness_error  # the largest error of each sample's steps
    array([0.])
    >>> explanation.to_frame(steps=[-1])[["step", "token", "attribution"]]
       step token  attribution
    0     1     a         0.25
    1     1     b         1.00
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
    steps: list | None = None
    sample_ids: np.ndarray | None = None
    window: int | None = None
    class_independent: bool = False
    _per_sample = ("units", "values", "target", "prediction", "logit", "bias", "inputs",
                   "steps", "sample_ids")

    def __post_init__(self):
        for i, (sym, c) in enumerate(zip(self.units, self.values, strict=True)):
            width = len(sym) if self.window is None else self.window
            if np.ndim(c) != 2 or c.shape[1] != width:
                raise ValueError(
                    f"sample {i}: values must be (steps, {width}), got {np.shape(c)}."
                )
        if self.window is not None and self.level != "char":
            raise ValueError("a windowed explanation counts symbols: level must be 'char'.")

    def _first_unit(self, step: np.ndarray) -> np.ndarray:
        """The first unit each row at ``step`` holds: 0, or ``step - window + 1``."""
        return np.zeros_like(step) if self.window is None else np.maximum(step - self.window + 1,
                                                                          0)

    def _dense(self, i: int, rows: np.ndarray, step: np.ndarray) -> np.ndarray:
        """``(len(rows), S_i)`` float64 contributions of every unit (0 outside a window)."""
        values = np.asarray(self.values[i], dtype=np.float64)
        if self.window is None:
            return values[rows]
        out = np.zeros((len(rows), len(self.units[i])))
        for k, (r, t) in enumerate(zip(rows, step, strict=True)):
            first = int(self._first_unit(np.asarray(t)))
            out[k, first: t + 1] = values[r, first - (t - self.window + 1):]
        return out

    def _totals(self):
        """Per sample and step: ``(sum of contributions + bias, sum of absolute values)``."""
        totals, magnitudes = [], []
        for i, c in enumerate(self.values):
            c = np.asarray(c, dtype=np.float64)
            b = np.zeros(len(c)) if self.bias is None \
                else np.asarray(self.bias[i], dtype=np.float64)
            totals.append(c.sum(axis=1) + b)
            magnitudes.append(np.abs(c).sum(axis=1) + np.abs(b))
        return totals, magnitudes

    def _step_errors(self) -> list | None:
        if self.logit is None:
            return None
        totals, magnitudes = self._totals()
        return [relative_error(total, logit, magnitude)
                for total, logit, magnitude in zip(totals, self.logit, magnitudes, strict=True)]

    @property
    def completeness_error(self):
        """Per-sample maximum relative error over steps (None without logits)."""
        errors = self._step_errors()
        return None if errors is None else np.array([e.max() for e in errors])

    # ------------------------------------------------------------------ steps
    def _explained(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, labels)``: the rows of ``values[i]`` the views show and their step in
        units of ``level`` (every row at char level; rows ending a word at word level)."""
        lengths = [len(u) for u in self.units[i]] if self.level == "word" else \
            [1] * len(self.units[i])
        ends = np.cumsum(lengths) - 1
        n_rows = len(self.values[i])
        if self.steps is not None:
            positions = np.asarray(self.steps[i], dtype=np.int64)
        elif n_rows == int(ends[-1]) + 1:
            positions = np.arange(n_rows)
        else:
            raise ValueError(f"sample {i}: values has {n_rows} rows for {int(ends[-1]) + 1} "
                             "symbols; the explanation needs steps= (the row positions).")
        unit = np.minimum(np.searchsorted(ends, positions), len(ends) - 1)
        rows = np.flatnonzero(ends[unit] == positions)
        return rows, unit[rows]

    def _select(self, i: int, steps, default_max: int | None = None):
        """``(rows, labels)`` of the requested ``steps`` (int or list, in units of ``level``,
        negative from the end), or of every explained step (the last one when more than
        ``default_max``)."""
        rows, label = self._explained(i)
        if steps is None:
            keep = slice(-1, None) if default_max and len(rows) > default_max else slice(None)
            return rows[keep], label[keep]
        wanted = [steps] if isinstance(steps, Integral) else list(steps)
        last = len(self.units[i]) - 1
        chosen = []
        for step in wanted:
            if isinstance(step, bool) or not isinstance(step, Integral):
                raise TypeError(f"steps must be ints, got {step!r}.")
            at = np.flatnonzero(label == (step + last + 1 if step < 0 else step))
            if not at.size:
                raise ValueError(f"sample {i}: step {step} was not explained; explained "
                                 f"{self.level} steps: {label.tolist()[:20]}.")
            chosen.append(at[0])
        return rows[chosen], label[chosen]

    def _char_spans(self, i: int) -> np.ndarray | None:
        """``(S_i, 2)`` character spans of the units when they spell the original text."""
        text = None if self.inputs is None else self.inputs[i]
        if not isinstance(text, str) or "".join(self.units[i]) != text:
            return None
        ends = np.cumsum([len(u) for u in self.units[i]])
        return np.stack([ends - [len(u) for u in self.units[i]], ends], axis=1)

    # ------------------------------------------------------------------ tables
    def to_frame(self, kind: str = "units", *, steps: int | Sequence[int] | None = None,
                 max_rows: int | None = 1_000_000) -> pd.DataFrame:
        """Return the explanation as a tidy table.

        Parameters
        ----------
        kind : {"units", "samples"}, default="units"
            ``"units"``: one row per sample × step × unit read so far (unit index <= step;
            later units contribute 0 and are left out), with ``char_start`` / ``char_end``
            when the original texts are known. ``"samples"``: one row per sample × step with
            logit, bias and completeness error.
        steps : int, list of int or None, default=None
            The steps to keep (in units of ``level``, negative from the end); None: all.
        max_rows : int or None, default=1_000_000
            A larger table raises a ``ValueError`` (None: no limit).

        Returns
        -------
        pandas.DataFrame
            The table.

        Raises
        ------
        ValueError
            If ``kind`` is unknown or the table would exceed ``max_rows``.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import SequenceExplanation
        >>> explanation = SequenceExplanation(
        ...     units=[["a", "b"]], values=[np.array([[0.5, 0.0], [0.25, 1.0]])],
        ...     target=[np.array(["b", "c"])], prediction=[np.array(["b", "a"])],
        ...     method="inherent", logit=[np.array([1.0, 1.5])], bias=[np.array([0.5, 0.25])],
        ...     inputs=["ab"])
        >>> explanation.to_frame(kind="samples")[["step", "target", "logit", "bias"]]
           step target  logit  bias
        0     0      b    1.0  0.50
        1     1      c    1.5  0.25
        """
        check_kind(kind)
        selected = [self._select(i, steps) for i in range(len(self))]
        if kind == "samples":
            return self._samples_frame(selected)
        n_rows = sum(int((step + 1 - self._first_unit(step)).sum()) for _, step in selected)
        if max_rows is not None and n_rows > max_rows:
            raise ValueError(f"to_frame would have {n_rows:,} rows (more than max_rows="
                             f"{max_rows:,}); keep fewer steps (steps=[-1] for the last, or "
                             "a list), explain at level='word', or raise max_rows.")
        parts = [self._unit_columns(i, rows, step) for i, (rows, step) in enumerate(selected)]
        return build_frame(_concat_columns(parts), FRAME_COLUMNS)

    def _unit_columns(self, i: int, rows: np.ndarray, step: np.ndarray) -> dict:
        """Columns of the units read by each explained row: ``rows`` of ``values[i]`` at
        ``step`` (in units of ``level``)."""
        first = self._first_unit(step)
        which = np.repeat(np.arange(len(rows)), step + 1 - first)  # explained row of each
        unit = np.concatenate([np.arange(a, t + 1) for a, t in zip(first, step, strict=True)]) \
            if len(rows) else np.zeros(0, int)
        spans = self._char_spans(i)
        values = np.asarray(self.values[i], dtype=np.float64)
        column = unit if self.window is None else unit - (step[which] - self.window + 1)
        return {
            "sample": self.ids()[np.full(len(unit), i)],
            "unit": unit,
            "token": texts(self.units[i])[unit],
            "char_start": None if spans is None else spans[unit, 0],
            "char_end": None if spans is None else spans[unit, 1],
            "step": step[which],
            "target": labels(self.target[i])[rows][which],
            "attribution": values[rows[which], column],
            "prediction": labels(self.prediction[i])[rows][which],
            **self._method_columns(np.full(len(unit), i)),
        }

    def _samples_frame(self, selected: list) -> pd.DataFrame:
        errors = self._step_errors()
        per_sample = [{
            "sample": self.ids()[np.full(len(rows), i)],
            "step": step,
            "target": labels(self.target[i])[rows],
            "prediction": labels(self.prediction[i])[rows],
            "logit": None if self.logit is None else np.asarray(self.logit[i])[rows],
            "bias": None if self.bias is None else np.asarray(self.bias[i])[rows],
            "completeness_error": None if errors is None else errors[i][rows],
            **self._method_columns(np.full(len(rows), i)),
        } for i, (rows, step) in enumerate(selected)]
        return build_frame(_concat_columns(per_sample), SAMPLE_COLUMNS)
