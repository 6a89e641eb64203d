"""Explaining many samples chunk by chunk, so that memory stays bounded by one chunk."""

from __future__ import annotations

from collections.abc import Iterator

from ._base import with_sample_ids

__all__ = ["iter_explanations"]


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
    time. Sample ids are global: the pandas index of ``X``, else positions in ``X``."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size}.")
    for offset, chunk in _chunks(X, chunk_size):
        yield offset, with_sample_ids(estimator.explain(chunk, **explain_kwargs), chunk, offset)
