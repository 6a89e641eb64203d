"""What every explanation container shares: indexing, concatenation, sample ids,
probabilities, the completeness check and the class-independence flag.

``method`` and ``class_independent`` hold one value for all samples, or, in a concatenation of
explanations of different methods (:func:`concat_explanations`), one per sample (an ndarray of
shape ``(n_samples,)``); indexing returns one value again when the selected samples share it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from interpretable.explanation._frame import labels, texts

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.explanation._image import ImageExplanation
    from interpretable.explanation._sequence import SequenceExplanation
    from interpretable.explanation._text import TokenExplanation

#: an explanation container type, which the helpers below return as they were given
_E = TypeVar("_E", bound="TokenExplanation | ImageExplanation | SequenceExplanation")


def relative_error(total, logit, magnitude):
    """``|total - logit|`` relative to ``max(|logit|, magnitude, 1e-300)``, where ``magnitude``
    is the sum of the absolute values of the summed terms."""
    total, logit = np.asarray(total, dtype=np.float64), np.asarray(logit, dtype=np.float64)
    scale = np.maximum(np.maximum(np.abs(logit), np.asarray(magnitude, dtype=np.float64)), 1e-300)
    return np.abs(total - logit) / scale


#: the fields of one method that become per-sample arrays when methods are concatenated
PER_METHOD = ("method", "class_independent")


def _collapsed(values: np.ndarray):
    """``values (n,)`` as one value when they are all equal (and n > 0), else the array."""
    if len(values) and all(v == values[0] for v in values[1:]):
        return values.tolist()[0]
    return values


class Explanation:
    """Shared behaviour: length, indexing, sample ids and per-sample summaries."""

    _per_sample: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(getattr(self, self._per_sample[0]))

    def __getitem__(self, index):
        """A sub-explanation with the samples selected by an int, slice or index array; it
        keeps their sample ids (positions in this explanation when it has none)."""
        indices = np.atleast_1d(np.arange(len(self))[index])
        changes = {"sample_ids": self.ids()[indices]}
        for name in self._per_sample:
            value = getattr(self, name)
            if value is None or name == "sample_ids":
                continue
            changes[name] = value[indices] if isinstance(value, np.ndarray) \
                else [value[i] for i in indices]
        for name in PER_METHOD:
            if isinstance(getattr(self, name), np.ndarray):
                changes[name] = _collapsed(getattr(self, name)[indices])
        return dataclasses.replace(self, **changes)

    def _each(self, name: str) -> np.ndarray:
        """``method`` or ``class_independent`` of every sample, shape (n_samples,)."""
        value = getattr(self, name)
        if isinstance(value, np.ndarray):
            return value
        return np.full(len(self), value, dtype=object if isinstance(value, str) else bool)

    def _method_columns(self, samples: np.ndarray) -> dict:
        """The ``method`` and ``class_independent`` columns of rows of sample positions
        ``samples (R,)``."""
        return {name: self._each(name)[samples] for name in PER_METHOD}

    def _single(self, name: str):
        """``method`` or ``class_independent`` shared by every sample, for the views.

        Raises
        ------
        ValueError
            If the samples hold different methods (a view shows one).
        """
        value = getattr(self, name)
        if isinstance(value, np.ndarray):
            methods = sorted(set(self._each("method").tolist()))
            raise ValueError(f"this explanation holds the methods {methods}; a view shows "
                             "one: select its samples first, e.g. "
                             f"explanation[explanation.method == {methods[0]!r}].")
        return value

    def ids(self) -> np.ndarray:
        """Return the sample ids: ``sample_ids`` (e.g. the caller's pandas index), else 0..n-1.

        Returns
        -------
        ndarray of shape (n_samples,)
            The ids.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import TokenExplanation
        >>> explanation = TokenExplanation(
        ...     units=[["good", "film"], ["bad"]], values=[np.array([0.5, 0.25]), np.array([-1.0])],
        ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
        ...     method="inherent", logit=np.array([1.0, -0.5]), bias=np.array([0.25, 0.5]),
        ...     inputs=["Good film!", "bad"])
        >>> explanation.ids()
        array([0, 1])
        >>> explanation[1:].ids()  # a sub-explanation keeps its samples' ids
        array([1])
        """
        return np.arange(len(self)) if self.sample_ids is None else np.asarray(self.sample_ids)

    @property
    def completeness_error(self) -> np.ndarray | None:
        """Per-sample relative error of ``sum(values) + bias`` against ``logit``.

        None when the explanation has no logit (e.g. post-hoc methods); about 0 for exact
        (inherent) explanations.
        """
        if self.logit is None:
            return None
        totals, magnitudes = self._totals()
        return relative_error(totals, self.logit, magnitudes)

    def _repr_html_(self) -> str:
        return self.to_html()


def _is_mean(contrast) -> bool:
    return isinstance(contrast, str) and contrast == "mean"


class ClassifierExplanation(Explanation):
    """Explanations of one class per sample (tokens, images): probabilities, what is explained
    (a logit, or with ``contrast`` a difference of logits) and the per-sample table."""

    def explained(self, i: int | None = None) -> str:
        """Say what the values explain, for the views' titles and legends.

        Parameters
        ----------
        i : int or None, default=None
            A sample's position; None: a description that fits every sample.

        Returns
        -------
        str
            E.g. ``"logit(cat)"``, ``"logit(cat) − mean logit"`` or ``"logit(cat) −
            logit(dog)"`` for a sample; ``"the target's logit"`` or ``"the target's logit −
            the mean logit"`` for all.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import TokenExplanation
        >>> explanation = TokenExplanation(
        ...     units=[["good"], ["bad"]], values=[np.array([0.5]), np.array([-1.0])],
        ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
        ...     method="inherent", contrast=np.array(["mean", "pos"], dtype=object))
        >>> explanation.explained(0), explanation.explained(1)
        ('logit(pos) − mean logit', 'logit(neg) − logit(pos)')
        >>> explanation.explained()
        "the target's logit − the contrast's logit"
        """
        if i is not None:
            text = f"logit({self.target[i]})"
            if self.contrast is None:
                return text
            other = self.contrast[i]
            return f"{text} − {'mean logit' if _is_mean(other) else f'logit({other})'}"
        if self.contrast is None:
            return "the target's logit"
        others = {str(c) for c in self.contrast}
        if len(others) > 1:
            return "the target's logit − the contrast's logit"
        other = next(iter(others), "mean")
        return f"the target's logit − {'the mean logit' if other == 'mean' else f'logit({other})'}"

    def probabilities(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Return the probabilities of the target and of the predicted class of each sample.

        Returns
        -------
        tuple of two ndarray of shape (n_samples,), or None
            ``(p(target), p(prediction))`` from ``proba`` and ``classes``; None without them.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import TokenExplanation
        >>> explanation = TokenExplanation(
        ...     units=[["good"]], values=[np.array([0.5])], target=np.array(["neg"]),
        ...     prediction=np.array(["pos"]), method="inherent",
        ...     proba=np.array([[0.25, 0.75]]), classes=np.array(["neg", "pos"]))
        >>> explanation.probabilities()
        (array([0.25]), array([0.75]))
        """
        if self.proba is None or self.classes is None:
            return None
        column = {c: j for j, c in enumerate(np.asarray(self.classes).tolist())}
        rows = np.arange(len(self))
        proba = np.asarray(self.proba, dtype=np.float64)
        return tuple(proba[rows, [column[c] for c in np.asarray(names).tolist()]]
                     for names in (self.target, self.prediction))

    def _samples_columns(self) -> dict:
        """Columns of ``to_frame(kind="samples")`` shared by token and image explanations."""
        n = len(self)
        probabilities = self.probabilities()
        return {
            "sample": self.ids(), "target": labels(self.target),
            "contrast": None if self.contrast is None else texts(self.contrast),
            "prediction": labels(self.prediction), "logit": self.logit, "bias": self.bias,
            "target_probability": None if probabilities is None else probabilities[0],
            "prediction_probability": None if probabilities is None else probabilities[1],
            "completeness_error": self.completeness_error,
            **self._method_columns(np.arange(n)),
        }


def check_kind(kind: str) -> None:
    if kind not in ("units", "samples"):
        raise ValueError(f"kind must be 'units' or 'samples', got {kind!r}.")


def with_sample_ids(explanation: _E, X: ArrayLike | Iterable[Any], offset: int = 0) -> _E:
    """Return ``explanation`` with the sample ids of ``X``.

    Parameters
    ----------
    explanation : TokenExplanation, ImageExplanation or SequenceExplanation
        The explanation of the samples ``X``.
    X : sequence or pandas object of shape (n_samples,)
        The explained samples.
    offset : int, default=0
        The first id when ``X`` has no index (e.g. a chunk's start within a corpus).

    Returns
    -------
    explanation
        A copy whose ``sample_ids`` are the index of a pandas Series / DataFrame ``X``, else
        the positions ``offset, offset + 1, ...``.

    Raises
    ------
    ValueError
        If ``X`` and the explanation have different lengths.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import TokenExplanation
    >>> explanation = TokenExplanation(
    ...     units=[["good", "film"], ["bad"]], values=[np.array([0.5, 0.25]), np.array([-1.0])],
    ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
    ...     method="inherent", logit=np.array([1.0, -0.5]), bias=np.array([0.25, 0.5]),
    ...     inputs=["Good film!", "bad"])
    >>> from interpretable.explanation import with_sample_ids
    >>> with_sample_ids(explanation, ["a", "b"], offset=10).ids()
    array([10, 11])
    """
    index = getattr(X, "index", None)
    ids = index.to_numpy() if isinstance(index, pd.Index) \
        else np.arange(offset, offset + len(explanation))
    if len(ids) != len(explanation):
        raise ValueError(f"X has {len(ids)} samples but the explanation {len(explanation)}.")
    return dataclasses.replace(explanation, sample_ids=ids)


def _concat_field(name: str, values: list, lengths: list, mixed: bool):
    """The per-sample field ``name`` of all parts; with ``mixed`` methods a float array that
    some parts lack is NaN for their samples."""
    present = [v for v in values if v is not None]
    if len(present) < len(values):
        if not present:
            return None
        if not (mixed and all(isinstance(v, np.ndarray) and v.dtype.kind == "f"
                              for v in present)):
            raise ValueError(f"cannot concatenate explanations where only some carry "
                             f"{name!r}.")
        values = [np.full((n, *present[0].shape[1:]), np.nan) if v is None else v
                  for v, n in zip(values, lengths, strict=True)]
    if isinstance(values[0], np.ndarray):
        return np.concatenate(values, axis=0)
    return [item for value in values for item in value]


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def concat_explanations(explanations: Iterable[_E]) -> _E:
    """Concatenate explanations of the same kind, of one method or several.

    Sample ids are kept when every part has them; otherwise samples are renumbered 0..n-1 in
    order. Explanations of different methods (e.g. two methods on the same texts) combine:
    ``method`` and ``class_independent`` become arrays of shape (n_samples,), one entry per
    sample (``to_frame()``'s columns of the same names hold each row's), and the float
    fields a method lacks (e.g. ``logit`` / ``bias`` of a method without completeness) are NaN
    for its samples, so their ``completeness_error`` is NaN. The views (``to_html``,
    ``plot``) show one method: select it first, ``both[both.method == "gradient"]``.

    Parameters
    ----------
    explanations : iterable of explanations
        Explanations of one type (kind), level and classes.

    Returns
    -------
    explanation
        One explanation of all their samples, in order.

    Raises
    ------
    ValueError
        If ``explanations`` is empty, they differ in a shared field (``level``: words and
        pieces, ``classes``, ...) or, of one method, only some carry a per-sample field.
    TypeError
        If they are of different kinds (e.g. text and image explanations).

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import TokenExplanation
    >>> explanation = TokenExplanation(
    ...     units=[["good", "film"], ["bad"]], values=[np.array([0.5, 0.25]), np.array([-1.0])],
    ...     target=np.array(["pos", "neg"]), prediction=np.array(["pos", "neg"]),
    ...     method="inherent", logit=np.array([1.0, -0.5]), bias=np.array([0.25, 0.5]),
    ...     inputs=["Good film!", "bad"])
    >>> from interpretable import concat_explanations
    >>> both = concat_explanations([explanation[:1], explanation[1:]])
    >>> len(both), both.units
    (2, [['good', 'film'], ['bad']])
    >>> import dataclasses
    >>> other = dataclasses.replace(explanation, method="attention", class_independent=True,
    ...                             logit=None, bias=None)
    >>> mixed = concat_explanations([explanation, other])
    >>> mixed.method.tolist(), mixed.completeness_error.tolist()
    (['inherent', 'inherent', 'attention', 'attention'], [0.0, 0.0, nan, nan])
    >>> mixed[mixed.method == "attention"].method
    'attention'
    """
    explanations = list(explanations)
    if not explanations:
        raise ValueError("concat_explanations needs at least one explanation.")
    kind = type(explanations[0])
    others = sorted({type(e).__name__ for e in explanations} - {kind.__name__})
    if others:
        raise TypeError(f"cannot concatenate explanations of different kinds: "
                        f"{kind.__name__} and {', '.join(others)}.")
    changes = {}
    for name in PER_METHOD:
        values = [getattr(e, name) for e in explanations]
        if any(isinstance(v, np.ndarray) or v != values[0] for v in values):
            changes[name] = _collapsed(np.concatenate([e._each(name) for e in explanations]))
    mixed = isinstance(changes.get("method"), np.ndarray)
    lengths = [len(e) for e in explanations]
    for f in dataclasses.fields(kind):
        values = [getattr(e, f.name) for e in explanations]
        if f.name in PER_METHOD:
            continue
        if f.name == "sample_ids" and any(v is None for v in values):
            changes[f.name] = None
        elif f.name in kind._per_sample:
            changes[f.name] = _concat_field(f.name, values, lengths, mixed)
        elif any(not _same(v, values[0]) for v in values[1:]):
            differing = next(v for v in values[1:] if not _same(v, values[0]))
            raise ValueError(f"cannot concatenate explanations with different {f.name!r}: "
                             f"{values[0]!r} and {differing!r}.")
    return dataclasses.replace(explanations[0], **changes)
