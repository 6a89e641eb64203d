"""Scaling out on existing engines.

* Training on several processes, GPUs or nodes: Hugging Face Accelerate through skorch's
  ``AccelerateMixin``. Pass ``accelerator=Accelerator()`` to any estimator and start the script
  with ``accelerate launch``; every process trains on its share of each batch, all end with the
  same weights, and :func:`save_on_main_process` writes the model once (see
  ``examples/accelerate_train.py`` and the README's "Scaling out").
* Explaining large collections: :func:`explain_to_parquet` explains a Dask DataFrame, Bag or
  Array partition by partition on a ``dask.distributed`` cluster, one Parquet file per
  partition.
* Hyper-parameter search: scikit-learn's ``GridSearchCV`` under
  ``joblib.parallel_backend("dask")`` fits the candidates on the cluster's workers.

``accelerate``, ``dask`` and ``distributed`` come with the ``scale`` extra
(``pip install "interpretable-models[scale]"``); they are imported only when used.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interpretable._optional import import_optional
from interpretable.explanation import citing_samples
from interpretable.integrations._streaming import explanations_to_frame
from interpretable.utils import replacing, reporting

if TYPE_CHECKING:
    import os

    import dask.array as da
    import dask.bag as db
    import dask.dataframe as dd
    from distributed import Client

    from interpretable.estimators.core import NeuralEstimator

__all__ = ["save_on_main_process", "explain_to_parquet"]

_PART = re.compile(r"part-\d{5}\.parquet")


def save_on_main_process(estimator: NeuralEstimator, path: str | os.PathLike[str]) -> bool:
    """Save a fitted estimator from the main process only.

    Under ``accelerate launch`` every process holds the same fitted model; the others wait
    until the files are written. Without an ``accelerator`` it simply saves.

    Parameters
    ----------
    estimator : fitted estimator
        The estimator (its ``accelerator`` says which process is the main one).
    path : str or os.PathLike
        The folder, as for :meth:`~interpretable.estimators.core.NeuralEstimator.save`.

    Returns
    -------
    bool
        Whether this process saved it.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> from interpretable.integrations import save_on_main_process
    >>> save_on_main_process(clf, "main_process_model")
    True
    """
    accelerator = estimator.accelerator
    if accelerator is None:
        estimator.save(path)
        return True
    saved = accelerator.is_main_process
    if saved:
        estimator.save(path)
    accelerator.wait_for_everyone()
    return saved


def _partitions(data) -> tuple[list, list]:
    """The partitions of a Dask collection as delayed objects (lists for a Bag, blocks of whole
    samples for an Array) and the sample counts of those whose samples are numbered by position
    (Bag: delayed, Array: known; none for DataFrames, whose pandas index numbers them)."""
    dask = import_optional("dask", "explain_to_parquet")
    import dask.array as da
    import dask.bag as db
    import dask.dataframe as dd

    if isinstance(data, (dd.DataFrame, dd.Series)):
        return list(data.to_delayed()), []
    if isinstance(data, db.Bag):
        parts = [dask.delayed(list)(part) for part in data.to_delayed()]
        return parts, [dask.delayed(len)(part) for part in parts]
    if isinstance(data, da.Array):
        whole_samples = data.rechunk({axis: -1 for axis in range(1, data.ndim)})
        return whole_samples.to_delayed().ravel().tolist(), list(whole_samples.chunks[0])
    raise TypeError("data must be a Dask DataFrame, Series, Bag or Array, got "
                    f"{type(data).__name__}.")


def _explain_partition(estimator, partition, offset: int, path: str, published: str,
                       chunk_size: int, explain_kwargs: dict) -> int:
    """Explain one partition and write its rows to ``path`` (in the staging folder; errors
    name the file where it will be ``published``): samples numbered (and errors citing them)
    by the partition's pandas index, else by position plus ``offset``. Returns the number of
    rows (no file for an empty partition)."""
    if len(partition) == 0:
        return 0
    index = getattr(partition, "index", None)
    indexed = isinstance(index, pd.Index)
    with citing_samples(lambda i: f"X.loc[{index[i:i + 1].tolist()[0]!r}]" if indexed
                        else f"X[{offset + i}]"):
        frame = explanations_to_frame(estimator, partition, chunk_size=chunk_size,
                                      **explain_kwargs)
    if not indexed:
        frame["sample"] = frame["sample"].to_numpy() + offset
    with reporting(published):
        frame.to_parquet(path, index=False)
    return len(frame)


def _check_folder(folder: Path, overwrite: bool) -> None:
    """Refuse to write into a folder holding files, unless ``overwrite`` and they are the
    part files of an earlier export."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise FileExistsError(f"{folder} exists and is not a folder.")
    names = sorted(p.name for p in folder.iterdir())
    if names and not overwrite:
        raise FileExistsError(f"{folder} already holds files ({names[:3]}); pass "
                              "overwrite=True to replace the earlier export, or choose another "
                              "folder.")
    others = [name for name in names if not _PART.fullmatch(name)]
    if others:
        raise FileExistsError(f"{folder} holds files that an export did not write "
                              f"({others[:3]}); export into a new or empty folder.")


def explain_to_parquet(
        estimator: Any,  # any fitted estimator with explain (duck-typed, pipelines included)
        data: dd.DataFrame | dd.Series | db.Bag | da.Array, path: str | os.PathLike[str], *,
        client: Client | None = None, chunk_size: int = 1000, overwrite: bool = False,
        **explain_kwargs: Any) -> list[Path]:
    """Explain a Dask collection on a Dask cluster, writing one Parquet file per partition.

    The files hold the columns of ``explanation.to_frame()`` as
    :func:`~interpretable.integrations.explanations_to_frame` writes them, and ``sample`` is
    the DataFrame's index or the global position in a Bag or Array, so reading the folder
    (``pandas.read_parquet(path)``) gives the in-process table. A Bag is read twice: once to
    count the samples of its partitions.

    The dataset is written to a hidden folder beside ``path`` and renamed to ``path`` when
    complete, so readers never see a mix of two exports; an error (a bad sample, cited by its
    index or position, or a failed write: an ``OSError`` naming the file) leaves an earlier
    dataset as it was. The workers must see ``path``'s folder (one machine, or a shared file
    system).

    Parameters
    ----------
    estimator : fitted estimator
        Sent to every worker once per call (``client.scatter(..., broadcast=True,
        hash=False)``: concurrent calls do not share it), then used by every task.
    data : dask DataFrame, Series, Bag or Array
        What ``explain`` takes: a DataFrame / Series of a text column (or text and query
        columns), a Bag of texts or pairs, or an Array of images ``(n, H, W[, C])`` (chunks
        along other axes than the samples are merged).
    path : str or os.PathLike
        Folder of the dataset, created if needed; files ``part-00000.parquet``, ... in
        partition order (an empty partition writes none).
    client : distributed.Client or None, default=None
        The cluster (None: the current default client).
    chunk_size : int, default=1000
        Samples explained at once within a partition (bounds a worker's memory).
    overwrite : bool, default=False
        A folder that already holds an earlier export is refused (``FileExistsError``) unless
        ``overwrite=True``, which replaces that dataset whole. A folder holding other files
        is always refused.
    **explain_kwargs
        ``target``, ``method`` and options of ``explain``.

    Returns
    -------
    list of pathlib.Path
        The written files.

    Raises
    ------
    FileExistsError
        If the folder holds other files, or an earlier export without ``overwrite``.
    TypeError
        If ``data`` is not a Dask collection.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> import dask.bag as db
    >>> from distributed import Client
    >>> from interpretable.integrations import explain_to_parquet
    >>> with Client(processes=False, n_workers=1, threads_per_worker=1,
    ...             dashboard_address=":0") as client:
    ...     files = explain_to_parquet(clf, db.from_sequence(X, npartitions=2), "explained",
    ...                                client=client)
    >>> [f.name for f in files]
    ['part-00000.parquet', 'part-00001.parquet']
    """
    dask = import_optional("dask", "explain_to_parquet")
    default_client = import_optional("distributed", "explain_to_parquet").default_client

    client = default_client() if client is None else client
    folder = Path(path)
    _check_folder(folder, overwrite)
    parts, lengths = _partitions(data)
    counts = client.compute(lengths, sync=True) if lengths else [0] * len(parts)
    offsets = np.cumsum([0, *counts[:-1]]).tolist()
    names = [f"part-{i:05d}.parquet" for i in range(len(parts))]
    with replacing(folder, folder=True) as (staging,):
        _check_folder(folder, overwrite)  # again, now that other writers wait
        staging.mkdir()
        model = client.scatter(estimator, broadcast=True, hash=False)
        tasks = [dask.delayed(_explain_partition)(model, part, offset, str(staging / name),
                                                 str(folder / name), chunk_size, explain_kwargs)
                 for part, offset, name in zip(parts, offsets, names, strict=True)]
        futures = client.compute(tasks)
        try:
            rows = client.gather(futures)
        finally:  # on an error, stop the tasks still writing into the staging folder
            client.cancel([*futures, model])
    return [folder / name for name, n in zip(names, rows, strict=True) if n]
