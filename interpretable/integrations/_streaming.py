"""Explanations of many samples in bounded memory: the tidy table of a whole corpus, written
chunk by chunk (:func:`explanations_to_frame`) from the chunks that
:func:`~interpretable.explanation.iter_explanations` yields."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import pandas as pd

from interpretable.explanation import iter_explanations, table_writer

if TYPE_CHECKING:
    import os

__all__ = ["explanations_to_frame"]

EMPTY = "X is empty: at least one sample is required."


@overload
def explanations_to_frame(estimator: Any, X: Any, path: None = None, chunk_size: int = 1000, *,
                          escape_formulas: bool = True, **explain_kwargs: Any) -> pd.DataFrame: ...


@overload
def explanations_to_frame(estimator: Any, X: Any, path: str | os.PathLike[str],
                          chunk_size: int = 1000, *, escape_formulas: bool = True,
                          **explain_kwargs: Any) -> Path: ...


def explanations_to_frame(
        estimator: Any,  # any fitted estimator with explain (duck-typed, pipelines included)
        X: Any,  # a sequence, array, pandas object or any iterable (read lazily)
        path: str | os.PathLike[str] | None = None, chunk_size: int = 1000, *,
        escape_formulas: bool = True, **explain_kwargs: Any) -> pd.DataFrame | Path:
    """Build the tidy explanation table of all samples of ``X``, explained chunk by chunk.

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

    Parameters
    ----------
    estimator : fitted estimator
        Any estimator with ``explain``.
    X : sequence, array, pandas Series / DataFrame or iterable
        The samples.
    path : str, os.PathLike or None, default=None
        A ``.parquet`` or ``.csv`` file to write; None: return a DataFrame.
    chunk_size : int, default=1000
        Samples explained at a time.
    escape_formulas : bool, default=True
        CSV: escape the text cells that spreadsheets would run as formulas.
    **explain_kwargs
        Passed to ``explain`` (e.g. ``method``).

    Returns
    -------
    pandas.DataFrame or pathlib.Path
        The table, or ``path`` once written.

    Raises
    ------
    ValueError
        If ``X`` is empty.
    OSError
        If writing fails (the error names the path).

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> from interpretable.integrations import explanations_to_frame
    >>> explanations_to_frame(clf, X, chunk_size=2)["sample"].unique().tolist()
    [0, 1, 2, 3]
    >>> explanations_to_frame(clf, X, "explanations.parquet", chunk_size=2)
    PosixPath('explanations.parquet')
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
