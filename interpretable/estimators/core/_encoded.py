"""Encoded samples: what every estimator's ``encode(X)`` returns and everything downstream
(inference, explainers, metrics) starts from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["EncodedInputs"]


@dataclass(frozen=True)
class EncodedInputs:
    """Encoded samples, the public way from user inputs to model inputs.

    What every estimator's ``encode(X)`` returns; ``len`` is the number of samples.

    Parameters
    ----------
    inputs : dict of str to torch.Tensor
        CPU tensors with the sample axis first, the module's keyword arguments (text:
        ``tokens (n, T)``, ``lengths (n,)`` [, ``query``, ``query_lengths``]; images:
        ``x (n, C', H, W)``; symbol sequences: ``x (n, T)``, ``lengths (n,)``).
    units : list of list or None, default=None
        Per sample, the units the model sees (tokens, symbols).
    queries : list of list of str or None, default=None
        Per sample, the query tokens of (text, query) pairs.
    images : ndarray of shape (n, H, W, C) or None, default=None
        The validated float images in [0, 1].
    texts : list or None, default=None
        The validated original texts (or ``(text, query)`` pairs).
    alignments : list or None, default=None
        Per sample, how its units map back to its text (the BERT-family models:
        :class:`~interpretable.preprocessing._wordpiece.WordPieces`, computed once by ``encode``).

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> encoded = clf.fit(X, ["pos", "pos", "neg", "neg"]).encode(["good film", "bad"])
    >>> len(encoded), sorted(encoded.inputs), encoded.units
    (2, ['lengths', 'tokens'], [['good', 'film'], ['bad']])
    """

    inputs: dict
    units: list | None = None
    queries: list | None = None
    images: np.ndarray | None = None
    texts: list | None = None
    alignments: list | None = None

    def __len__(self) -> int:
        return len(next(iter(self.inputs.values())))
