"""The vocabulary of :class:`~interpretable.preprocessing.TextEncoder`: its reserved ids and
tokens, and what a fitted vocabulary gives (ids back to tokens, an embedding matrix from
pretrained word vectors, a JSON-compatible state and the encoder rebuilt from it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

if TYPE_CHECKING:
    from gensim.models import KeyedVectors
    from numpy.typing import ArrayLike

__all__ = ["PAD", "UNK"]

PAD, UNK = 0, 1
PAD_TOKEN, UNK_TOKEN = "<pad>", "<unk>"


class VocabularyMixin:
    """The methods of :class:`~interpretable.preprocessing.TextEncoder` that read its fitted
    vocabulary (``index_to_token_`` and ``vocabulary_``)."""

    def inverse_transform(self, ids: ArrayLike) -> list[list[str]]:
        """Map ids back to tokens (padding dropped; unknown words come back as ``<unk>``).

        Parameters
        ----------
        ids : array-like of shape (n_samples, L)
            Ids, as :meth:`transform` gives them.

        Returns
        -------
        list of list of str
            The tokens.

        Raises
        ------
        ValueError
            If ``ids`` is not 2-d or holds ids outside the vocabulary.

        Examples
        --------
        >>> from interpretable.preprocessing import TextEncoder
        >>> encoder = TextEncoder().fit(["A good film.", "A bad film."])
        >>> encoder.inverse_transform(encoder.transform(["Great film"]))
        [['<unk>', 'film']]
        """
        check_is_fitted(self, "vocabulary_")
        ids = np.asarray(ids)
        if ids.ndim != 2:
            raise ValueError(f"ids must be a 2-d array (n, L), got shape {ids.shape}.")
        n_vocab = len(self.index_to_token_)
        if ids.size and (ids.min() < 0 or ids.max() >= n_vocab):
            raise ValueError(f"ids must lie in [0, {n_vocab}), got [{ids.min()}, {ids.max()}].")
        return [[self.index_to_token_[i] for i in row if i != PAD] for row in ids]

    def embedding_matrix(self, vectors: KeyedVectors,
                         random_state: int | np.random.RandomState | None = 0) -> np.ndarray:
        """Build an embedding matrix of the vocabulary from gensim ``KeyedVectors``.

        Known words get their vector; unknown words a normal draw with the vectors' std (seeded by
        ``random_state``); ``<pad>`` is zero.

        Parameters
        ----------
        vectors : gensim.models.KeyedVectors
            The word vectors.
        random_state : int, RandomState or None, default=0
            Seeds the vectors of unknown words.

        Returns
        -------
        ndarray of shape (n_tokens, dim)
            The matrix (float32).

        Raises
        ------
        TypeError
            If ``vectors`` is not a ``KeyedVectors``.

        Examples
        --------
        >>> import numpy as np
        >>> from gensim.models import KeyedVectors
        >>> vectors = KeyedVectors(vector_size=2)
        >>> vectors.add_vectors(["good", "film"], np.array([[1.0, 0.0], [0.0, 1.0]]))
        >>> from interpretable.preprocessing import TextEncoder
        >>> encoder = TextEncoder().fit(["A good film.", "A bad film."])
        >>> matrix = encoder.embedding_matrix(vectors)
        >>> matrix.shape, matrix[encoder.vocabulary_["good"]].tolist()
        ((7, 2), [1.0, 0.0])
        """
        check_is_fitted(self, "vocabulary_")
        if not hasattr(vectors, "key_to_index") or not hasattr(vectors, "vector_size"):
            raise TypeError(f"vectors must be a gensim KeyedVectors, got {type(vectors).__name__}.")
        rng = check_random_state(random_state)
        std = float(np.std(vectors.vectors[: min(len(vectors.vectors), 10000)]))
        matrix = rng.normal(0.0, std, (len(self.index_to_token_), vectors.vector_size))
        for tok, i in self.vocabulary_.items():
            if tok in vectors.key_to_index:
                matrix[i] = vectors[tok]
        matrix[PAD] = 0.0
        return matrix.astype(np.float32)

    def get_state(self) -> dict:
        """Return the fitted state, JSON-compatible (for safe persistence).

        Returns
        -------
        dict
            ``params`` and ``index_to_token``; :meth:`from_state` rebuilds the encoder.

        Examples
        --------
        >>> from interpretable.preprocessing import TextEncoder
        >>> encoder = TextEncoder().fit(["A good film.", "A bad film."])
        >>> encoder.get_state()["index_to_token"][:3]
        ['<pad>', '<unk>', '.']
        """
        check_is_fitted(self, "vocabulary_")
        return {"params": self.get_params(), "index_to_token": list(self.index_to_token_)}

    @classmethod
    def from_state(cls, state: dict) -> VocabularyMixin:
        """Rebuild a fitted encoder from :meth:`get_state`'s state.

        Parameters
        ----------
        state : dict
            The state.

        Returns
        -------
        TextEncoder
            The fitted encoder.

        Examples
        --------
        >>> from interpretable.preprocessing import TextEncoder
        >>> encoder = TextEncoder().fit(["A good film.", "A bad film."])
        >>> copy = TextEncoder.from_state(encoder.get_state())
        >>> copy.vocabulary_ == encoder.vocabulary_
        True
        """
        encoder = cls(**state["params"])
        encoder.index_to_token_ = list(state["index_to_token"])
        encoder.vocabulary_ = {tok: i for i, tok in enumerate(encoder.index_to_token_)}
        return encoder
