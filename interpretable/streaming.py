"""Explanations of many samples in bounded memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from .explanation import with_sample_ids

__all__ = ["iter_explanations", "explanations_to_frame"]


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


def explanations_to_frame(estimator, X, path=None, chunk_size: int = 1000, **explain_kwargs):
    """The tidy explanation table of all samples of ``X``, explained chunk by chunk.

    With ``path`` (``.parquet`` or ``.csv``) each chunk's rows are appended to the file as
    they are produced, so memory stays bounded by one chunk; returns the path (read it back
    with :func:`interpretable.explanation.read_frame` for the same dtypes as ``to_frame()``).
    Without ``path`` the chunks are concatenated into one DataFrame (whose size grows with
    ``X``). ``sample`` holds the pandas index of ``X``, else global positions in ``X``.
    """
    writer, frames, written = None, [], False
    path = None if path is None else Path(path)
    if path is not None and path.suffix not in (".parquet", ".csv"):
        raise ValueError(f"path must end in .parquet or .csv, got {path.name!r}.")
    try:
        for _, explanation in iter_explanations(estimator, X, chunk_size, **explain_kwargs):
            frame = explanation.to_frame()
            if path is None:
                frames.append(frame)
            elif path.suffix == ".csv":
                frame.to_csv(path, mode="a" if written else "w", header=not written, index=False)
            else:
                writer = _append_parquet(writer, path, frame)
            written = True
    finally:
        if writer is not None:
            writer.close()
    if not written:
        raise ValueError("X is empty: at least one sample is required.")
    return path if path is not None else pd.concat(frames, ignore_index=True)


def _append_parquet(writer, path: Path, frame: pd.DataFrame):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    if writer is None:
        writer = pq.ParquetWriter(str(path), table.schema)
    writer.write_table(table.cast(writer.schema))
    return writer
