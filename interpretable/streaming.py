"""Explanations of many samples in bounded memory: the tidy table of a whole corpus, written
chunk by chunk (:func:`explanations_to_frame`); :func:`iter_explanations` yields the chunks."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .explanation import iter_explanations, table_writer

__all__ = ["iter_explanations", "explanations_to_frame"]

EMPTY = "X is empty: at least one sample is required."


def explanations_to_frame(estimator, X, path=None, chunk_size: int = 1000, *,
                          escape_formulas: bool = True, **explain_kwargs):
    """The tidy explanation table of all samples of ``X``, explained chunk by chunk.

    With ``path`` (``.parquet`` or ``.csv``) each chunk's rows are appended to the file as
    they are produced, so memory stays bounded by one chunk; returns the path (read it back
    with :func:`interpretable.explanation.read_frame` for the same dtypes as ``to_frame()``).
    The file is written beside ``path`` and replaces it only once complete: an error (a bad
    sample, a full disk: an ``OSError`` naming the path) leaves an earlier file as it was. A
    CSV gets its dtypes in ``<path>.schema.json`` and, with ``escape_formulas`` (default),
    text cells that spreadsheets would run as formulas start with ``'`` (see
    :func:`interpretable.explanation.write_frame`).

    Without ``path`` the chunks are concatenated into one DataFrame (whose size grows with
    ``X``). ``sample`` holds the pandas index of ``X``, else global positions in ``X``, and
    errors cite the position of the sample in ``X``.
    """
    frames = (e.to_frame() for _, e in iter_explanations(estimator, X, chunk_size,
                                                         **explain_kwargs))
    if path is None:
        whole = list(frames)
        if not whole:
            raise ValueError(EMPTY)
        return pd.concat(whole, ignore_index=True)
    with table_writer(path, escape_formulas=escape_formulas) as write:
        written = 0
        for frame in frames:
            write(frame)
            written += 1
        if not written:
            raise ValueError(EMPTY)
    return Path(path)
