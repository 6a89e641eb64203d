"""Explaining many samples chunk by chunk, so that memory stays bounded by one chunk."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from interpretable._progress import interactive, progress_bar
from interpretable.explanation._base import with_sample_ids

if TYPE_CHECKING:
    from interpretable.explanation._image import ImageExplanation
    from interpretable.explanation._sequence import SequenceExplanation
    from interpretable.explanation._text import TokenExplanation

__all__ = ["iter_explanations", "citing_samples"]

_SAMPLE = re.compile(r"\bX\[(\d+)\]")


@contextmanager
def citing_samples(where: Callable[[int], str]) -> Iterator[None]:
    """Make errors of a block that works on a part of the input cite the whole input.

    A context manager: a ``ValueError`` / ``TypeError`` of the block (``explain`` on a part
    of the caller's input) that cites samples as ``X[i]`` is re-raised with each cited as
    ``where(i)`` instead, e.g. ``X[offset + i]``, the position in the caller's input.

    Parameters
    ----------
    where : callable
        Maps a position in the part to its citation.

    Yields
    ------
    None
        Nothing; the block runs inside.

    Examples
    --------
    >>> from interpretable.explanation import citing_samples
    >>> with citing_samples(lambda i: f"X[{100 + i}]"):
    ...     raise ValueError("X[2] is empty.")
    Traceback (most recent call last):
    ...
    ValueError: X[102] is empty.
    """
    try:
        yield
    except (ValueError, TypeError) as error:
        message = _SAMPLE.sub(lambda match: where(int(match[1])), str(error))
        if message == str(error):
            raise
        try:
            cited = type(error)(message)
        except TypeError:  # an exception type built from other arguments
            cited = (ValueError if isinstance(error, ValueError) else TypeError)(message)
        raise cited from error


def _chunks(X, chunk_size: int):
    if isinstance(X, (list, tuple)) or hasattr(X, "__getitem__") and hasattr(X, "__len__"):
        for start in range(0, len(X), chunk_size):
            yield start, X[start:start + chunk_size]
        return
    chunk, start = [], 0  # any iterable, e.g. a generator reading a file
    for item in X:
        chunk.append(item)
        if len(chunk) == chunk_size:
            yield start, chunk
            start, chunk = start + chunk_size, []
    if chunk:
        yield start, chunk


def iter_explanations(
        estimator: Any,  # any fitted estimator with explain (duck-typed, pipelines included)
        X: Any,  # a sequence, array, pandas object or any iterable (read lazily)
        chunk_size: int = 1000, **explain_kwargs: Any
        ) -> Iterator[tuple[int, TokenExplanation | ImageExplanation | SequenceExplanation]]:
    """Explain ``X`` chunk by chunk, so that only one chunk is in memory at a time.

    Sample ids are global: the pandas index of ``X``, else positions in ``X``; so are the
    positions that errors cite (``X[2345]``, not its position in a chunk).

    Parameters
    ----------
    estimator : fitted estimator
        Any estimator with ``explain``.
    X : sequence, array, pandas Series / DataFrame or iterable
        The samples (an iterable is consumed lazily).
    chunk_size : int, default=1000
        Samples explained at a time.
    **explain_kwargs
        Passed to ``explain`` (e.g. ``method``).

    Yields
    ------
    offset : int
        The position of the chunk's first sample in ``X``.
    explanation : TokenExplanation, ImageExplanation or SequenceExplanation
        The chunk's explanation.

    Raises
    ------
    ValueError
        If ``chunk_size`` is not positive.

    Notes
    -----
    With the estimator's ``verbose`` > 0 on a terminal or in Jupyter, a progress bar counts
    the explained samples (see :mod:`interpretable._progress`).

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> from interpretable.explanation import iter_explanations
    >>> [(offset, e.ids().tolist()) for offset, e in iter_explanations(clf, X, chunk_size=3)]
    [(0, [0, 1, 2]), (3, [3])]
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size}.")
    bar = None
    if getattr(estimator, "verbose", 0) and interactive():
        bar = progress_bar(total=len(X) if hasattr(X, "__len__") else None,
                           desc="explained", unit="sample")
    try:
        for offset, chunk in _chunks(X, chunk_size):
            with citing_samples(lambda i, offset=offset: f"X[{offset + i}]"):
                explanation = estimator.explain(chunk, **explain_kwargs)
            if bar is not None:
                bar.update(len(chunk))
            yield offset, with_sample_ids(explanation, chunk, offset)
    finally:
        if bar is not None:
            bar.close()
