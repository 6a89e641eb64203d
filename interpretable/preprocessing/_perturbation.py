"""Word perturbations for stability analyses (SEAT, Yin et al. 2022)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from interpretable._optional import import_optional
from interpretable._validation import check_texts
from interpretable.preprocessing._output import TextOutputMixin

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd
    import polars as pl
    from gensim.models import KeyedVectors
    from numpy.typing import ArrayLike
    from typing_extensions import Self

__all__ = ["SynonymSubstitution"]



class SynonymSubstitution(TextOutputMixin, TransformerMixin, BaseEstimator):
    """Replace ``n_words`` random content words of each text by their nearest word vector.

    Content words are alphabetic tokens (no punctuation, no numbers) that are not English stop
    words and have a usable neighbour in ``vectors``. A neighbour is the nearest word (cosine,
    gensim ``most_similar``) that is alphabetic, not a stop word and not the word itself. Only
    the replaced characters of the text change (the first letter's case is kept), so the rest
    of the text tokenizes exactly as before.

    Parameters
    ----------
    n_words : int, default=1
        Words replaced per text (fewer when a text has fewer content words).
    vectors : "glove-50" or gensim KeyedVectors, default="glove-50"
        Word vectors giving the neighbours (``"glove-50"`` uses :func:`load_glove`).
    restrict_vocab : int or None, default=50000
        Search neighbours among the first ``restrict_vocab`` (most frequent) words only.
    random_state : int, RandomState or None, default=None
        Seeds the choice of words; every ``transform`` call restarts from it, so the same input
        gives the same output.

    Attributes
    ----------
    vectors_ : gensim.models.KeyedVectors
        The loaded vectors.

    See Also
    --------
    interpretable.metrics.word_stability : Stability of explanations under substitutions.

    Examples
    --------
    >>> import numpy as np
    >>> from gensim.models import KeyedVectors
    >>> from interpretable.preprocessing import SynonymSubstitution
    >>> vectors = KeyedVectors(vector_size=2)
    >>> vectors.add_vectors(["movie", "film", "great", "good"],
    ...                     np.array([[1.0, 0.1], [1.0, 0.0], [0.0, 1.0], [0.1, 1.0]]))
    >>> perturber = SynonymSubstitution(vectors=vectors, random_state=0).fit()
    >>> perturber.transform(["A great movie."])
    ['A great film.']
    """

    _neighbours: dict[str, Any]  # word -> its substitute (None: it has none)
    _normed: np.ndarray | None  # the unit-norm vectors searched, computed on first use

    def __init__(self, n_words: int = 1, vectors: str | KeyedVectors = "glove-50",
                 restrict_vocab: int | None = 50000,
                 random_state: int | np.random.RandomState | None = None):
        self.n_words = n_words
        self.vectors = vectors
        self.restrict_vocab = restrict_vocab
        self.random_state = random_state

    def fit(self, X: Sequence[str] | ArrayLike | None = None, y: ArrayLike | None = None) -> Self:
        """Validate the parameters and load the vectors.

        Parameters
        ----------
        X : None or sequence of str, default=None
            Ignored.
        y : None, default=None
            Ignored.

        Returns
        -------
        self : SynonymSubstitution
            The fitted transformer.

        Raises
        ------
        ValueError
            If ``n_words`` or ``vectors`` is invalid.

        Examples
        --------
        >>> import numpy as np
        >>> from gensim.models import KeyedVectors
        >>> from interpretable.preprocessing import SynonymSubstitution
        >>> vectors = KeyedVectors(vector_size=2)
        >>> vectors.add_vectors(["movie", "film", "great", "good"],
        ...                     np.array([[1.0, 0.1], [1.0, 0.0], [0.0, 1.0], [0.1, 1.0]]))
        >>> perturber = SynonymSubstitution(vectors=vectors, random_state=0).fit()
        >>> perturber.vectors_ is vectors
        True
        """
        if isinstance(self.n_words, bool) or not isinstance(self.n_words, (int, np.integer)) \
                or self.n_words < 1:
            raise ValueError(f"n_words must be a positive integer, got {self.n_words!r}.")
        if isinstance(self.vectors, str):
            if self.vectors != "glove-50":
                raise ValueError(
                    f"vectors must be 'glove-50' or a gensim KeyedVectors, got {self.vectors!r}."
                )
            from interpretable.datasets import load_glove

            self.vectors_ = load_glove(50)
        elif hasattr(self.vectors, "most_similar") and hasattr(self.vectors, "key_to_index"):
            self.vectors_ = self.vectors
        else:
            raise TypeError(
                "vectors must be 'glove-50' or a gensim KeyedVectors, got "
                f"{type(self.vectors).__name__}."
            )
        self._neighbours, self._normed = {}, None
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        return tags

    def _find_neighbours(self, words) -> None:
        """Nearest usable neighbour of every new word, batched: one cosine-similarity matrix
        product per chunk of words against the (first ``restrict_vocab``) vectors."""
        cache = self.__dict__.setdefault("_neighbours", {})
        kv = self.vectors_
        new = sorted({w for w in words if w not in cache and w in kv.key_to_index})
        cache.update({w: None for w in words if w not in kv.key_to_index})
        if not new:
            return
        if getattr(self, "_normed", None) is None:
            limit = len(kv.index_to_key) if self.restrict_vocab is None else self.restrict_vocab
            vectors = np.asarray(kv.vectors[:limit], dtype=np.float32)
            self._normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(1e-12)
        normed, keys = self._normed, kv.index_to_key
        topn = min(25, len(normed))
        for start in range(0, len(new), 512):
            chunk = new[start:start + 512]
            q = np.stack([kv[w] for w in chunk]).astype(np.float32)
            sims = (q / np.linalg.norm(q, axis=1, keepdims=True).clip(1e-12)) @ normed.T
            best = np.argpartition(-sims, topn - 1, axis=1)[:, :topn]
            order = np.take_along_axis(sims, best, 1).argsort(1)[:, ::-1]
            for word, row in zip(chunk, np.take_along_axis(best, order, 1), strict=True):
                cache[word] = next((keys[j] for j in row
                                    if keys[j] != word and _is_content(keys[j])), None)

    def substitute(self, X: Sequence[str] | ArrayLike) -> tuple[list[str], list[np.ndarray]]:
        """Perturb texts and report which tokens were replaced.

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.

        Returns
        -------
        texts : list of str
            The perturbed texts.
        positions : list of ndarray
            ``positions[i]``: the sorted indices of the replaced tokens in the word tokenization
            (nltk) of ``X[i]``.

        Examples
        --------
        >>> import numpy as np
        >>> from gensim.models import KeyedVectors
        >>> from interpretable.preprocessing import SynonymSubstitution
        >>> vectors = KeyedVectors(vector_size=2)
        >>> vectors.add_vectors(["movie", "film", "great", "good"],
        ...                     np.array([[1.0, 0.1], [1.0, 0.0], [0.0, 1.0], [0.1, 1.0]]))
        >>> perturber = SynonymSubstitution(vectors=vectors, random_state=0).fit()
        >>> perturber.substitute(["A great movie."])
        (['A great film.'], [array([2])])
        """
        check_is_fitted(self, "vectors_")
        X = check_texts(X)
        rng = check_random_state(self.random_state)
        nltk_tokenize = import_optional("nltk.tokenize", "SynonymSubstitution")  # slow import

        tokenizer = nltk_tokenize.NLTKWordTokenizer()
        spans = [list(tokenizer.span_tokenize(text)) for text in X]
        words = [[text[a:b].lower() for a, b in sp] for text, sp in zip(X, spans, strict=True)]
        self._find_neighbours({w for ws in words for w in ws if _is_content(w)})
        out, positions = [], []
        for text, sp, ws in zip(X, spans, words, strict=True):
            candidates = [i for i, w in enumerate(ws)
                          if _is_content(w) and self._neighbours.get(w) is not None]
            chosen = np.sort(rng.choice(candidates, min(self.n_words, len(candidates)),
                                        replace=False)) if candidates else np.zeros(0, int)
            pieces, last = [], 0
            for i in chosen:
                a, b = sp[i]
                new = self._neighbours[ws[i]]
                if text[a].isupper():
                    new = new[0].upper() + new[1:]
                pieces += [text[last:a], new]
                last = b
            out.append("".join(pieces) + text[last:])
            positions.append(chosen.astype(np.int64))
        return out, positions

    def transform(self, X: Sequence[str] | ArrayLike) -> list[str] | pd.DataFrame | pl.DataFrame:
        """Perturb texts.

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.

        Returns
        -------
        list of str or DataFrame
            The perturbed texts, or a one-column table ``text`` after
            ``set_output(transform="pandas" | "polars")`` (see :mod:`.output`).

        Examples
        --------
        >>> import numpy as np
        >>> from gensim.models import KeyedVectors
        >>> from interpretable.preprocessing import SynonymSubstitution
        >>> vectors = KeyedVectors(vector_size=2)
        >>> vectors.add_vectors(["movie", "film", "great", "good"],
        ...                     np.array([[1.0, 0.1], [1.0, 0.0], [0.0, 1.0], [0.1, 1.0]]))
        >>> perturber = SynonymSubstitution(vectors=vectors, random_state=0).fit()
        >>> perturber.set_output(transform="pandas").transform(["A great movie."])
                    text
        0  A great film.
        """
        return self._texts_output(self.substitute(X)[0], X)


def _is_content(word: str) -> bool:
    return word.isascii() and word.isalpha() and word.lower() not in ENGLISH_STOP_WORDS
