"""Explanations of many samples in bounded memory: the tidy table of a whole corpus, written
chunk by chunk (:func:`explanations_to_frame`); :func:`iter_explanations` yields the chunks."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .explanation import iter_explanations

__all__ = ["iter_explanations", "explanations_to_frame"]


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
