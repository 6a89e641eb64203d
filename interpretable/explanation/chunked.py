"""Explaining many samples chunk by chunk, so that memory stays bounded by one chunk."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..progress import interactive, progress_bar
from ._base import with_sample_ids

__all__ = ["iter_explanations", "citing_samples"]

_SAMPLE = re.compile(r"\bX\[(\d+)\]")


@contextmanager
def citing_samples(where: Callable[[int], str]):
    """Re-raise a ``ValueError`` / ``TypeError`` of the block (``explain`` on a part of the
    caller's input) that cites samples as ``X[i]`` with each cited as ``where(i)`` instead,
    e.g. ``X[offset + i]``, the position in the caller's input."""
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


def iter_explanations(estimator, X, chunk_size: int = 1000, **explain_kwargs) -> Iterator:
    """Yield ``(offset, explanation)`` for consecutive chunks of ``X`` (list, array, pandas
    Series / DataFrame or any iterable, consumed lazily); only one chunk is in memory at a
    time. Sample ids are global: the pandas index of ``X``, else positions in ``X``; so are
    the positions that errors cite (``X[2345]``, not its position in a chunk).

    With the estimator's ``verbose`` > 0 on a terminal or in Jupyter, a progress bar counts
    the explained samples (see :mod:`interpretable.progress`)."""
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
