"""What every explanation container shares: indexing, concatenation, sample ids,
probabilities, the completeness check and the class-independence flag."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ._frame import labels, texts


def relative_error(total, logit, magnitude):
    """``|total - logit|`` relative to ``max(|logit|, magnitude, 1e-300)``, where ``magnitude``
    is the sum of the absolute values of the summed terms."""
    total, logit = np.asarray(total, dtype=np.float64), np.asarray(logit, dtype=np.float64)
    scale = np.maximum(np.maximum(np.abs(logit), np.asarray(magnitude, dtype=np.float64)), 1e-300)
    return np.abs(total - logit) / scale


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
        return dataclasses.replace(self, **changes)

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
            "method": np.full(n, self.method, dtype=object),
            "class_independent": np.full(n, self.class_independent),
        }


def check_kind(kind: str) -> None:
    if kind not in ("units", "samples"):
        raise ValueError(f"kind must be 'units' or 'samples', got {kind!r}.")


def with_sample_ids(explanation, X, offset: int = 0):
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


def _concat_field(values: list):
    if any(v is None for v in values):
        if not all(v is None for v in values):
            raise ValueError("cannot concatenate explanations where only some carry a field")
        return None
    if isinstance(values[0], np.ndarray):
        return np.concatenate(values, axis=0)
    return [item for value in values for item in value]


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def concat_explanations(explanations):
    """Concatenate explanations of the same type and method.

    Sample ids are kept when every part has them; otherwise samples are renumbered 0..n-1 in
    order.

    Parameters
    ----------
    explanations : iterable of explanations
        Explanations of one type, method and classes.

    Returns
    -------
    explanation
        One explanation of all their samples, in order.

    Raises
    ------
    ValueError
        If ``explanations`` is empty or they differ in method (or another shared field).
    TypeError
        If they are of different types.

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
    """
    explanations = list(explanations)
    if not explanations:
        raise ValueError("concat_explanations needs at least one explanation.")
    kind = type(explanations[0])
    if any(type(e) is not kind for e in explanations):
        raise TypeError("cannot concatenate explanations of different types.")
    changes = {}
    for f in dataclasses.fields(kind):
        values = [getattr(e, f.name) for e in explanations]
        if f.name == "sample_ids" and any(v is None for v in values):
            changes[f.name] = None
        elif f.name in kind._per_sample:
            changes[f.name] = _concat_field(values)
        elif any(not _same(v, values[0]) for v in values[1:]):
            raise ValueError(f"cannot concatenate explanations with different {f.name!r}.")
    return dataclasses.replace(explanations[0], **changes)
