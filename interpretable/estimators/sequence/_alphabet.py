"""Symbols as ids, for the estimators over symbol sequences (:mod:`.base`).

* :data:`UNKNOWN` — the unknown symbol, id 0 of every alphabet.
* :class:`SymbolAlphabet` — the alphabet learned in ``fit`` (with the unknown-symbol policy
  described in :mod:`.base`) and the encoding of sequences as ids, mixed into
  :class:`~.base.SequenceEstimator`.
* :func:`next_symbol_windows` — the language models' training and evaluation windows of ids.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np
from sklearn.utils.validation import check_is_fitted

from interpretable.estimators.core._encoded import EncodedInputs
from interpretable.nn import IGNORE_INDEX, pad_sequences

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    from numpy.typing import ArrayLike

UNKNOWN = "<unk>"


def _sort_key(symbol):
    return (type(symbol).__name__, symbol)


def next_symbol_windows(encoded, seq_len: int, train: bool):
    """Cut id sequences into windows of ``seq_len`` inputs and their next-symbol targets.

    Training windows do not overlap. Evaluation windows overlap by half, and each target is
    scored in exactly one window where it has at least ``seq_len // 2`` symbols of context
    (except at the start of a sequence): the same context every model sees.
    Returns inputs (N, L) long and targets (N, L, 1) long (``IGNORE_INDEX`` = not scored), or
    ``(None, None)`` when no sequence has two symbols.
    """
    L = seq_len
    stride = L if train else max(L // 2, 1)
    inputs, targets = [], []
    for ids in encoded:
        n = len(ids) - 1  # number of (input, next) pairs
        for start in range(0, max(n, 0), stride):
            x = ids[start: start + L]
            t = ids[start + 1: start + L + 1].copy()
            x = x[: len(t)]
            if not train and start > 0:
                t[: L - stride] = IGNORE_INDEX  # scored by the previous window
            inputs.append(x)
            targets.append(t[:, None])
            if start + L >= n:
                break
    if not inputs:
        return None, None
    return pad_sequences(inputs, 0)[0], pad_sequences(targets, IGNORE_INDEX)[0]


class SymbolAlphabet:
    """Mixin: the alphabet of a sequence estimator and the encoding of sequences as ids.

    The host estimator provides ``min_count``, ``_check_fitted`` and ``_check_inputs(X)``
    (the validated sequences). Learning the alphabet sets ``symbols_`` (id → symbol,
    ``symbols_[0]`` is :data:`UNKNOWN`), ``vocabulary_`` (symbol → id) and ``n_symbols_``.

    Examples
    --------
    >>> from interpretable import ISANSequenceTagger
    >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
    >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
    >>> tagger.vocabulary_
    {'a': 1, 'b': 2, 'c': 3}
    """

    def _learn_vocabulary(self, sequences) -> None:
        counts = Counter()
        for s in sequences:
            counts.update(s)
        kept = sorted((c for c, n in counts.items() if n >= self.min_count), key=_sort_key)
        if not kept:
            raise ValueError(
                f"the alphabet is empty: no symbol occurs at least min_count={self.min_count} "
                "times in X.")
        self._set_symbols([UNKNOWN, *kept])

    def _set_symbols(self, symbols: list) -> None:
        self.symbols_ = list(symbols)
        self.vocabulary_ = {c: i for i, c in enumerate(self.symbols_) if i}
        self.n_symbols_ = len(self.symbols_)

    def encode_symbols(self, sequence: str | Sequence[Hashable]) -> np.ndarray:
        """Return the ids of the symbols of one sequence.

        Parameters
        ----------
        sequence : str or list
            One sequence.

        Returns
        -------
        ndarray of shape (len(sequence),)
            Ids (int64); symbols outside the alphabet map to 0 (:data:`UNKNOWN`).

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> tagger.encode_symbols("abz")
        array([1, 2, 0])
        """
        check_is_fitted(self, "vocabulary_")
        vocab = self.vocabulary_
        return np.fromiter((vocab.get(c, 0) for c in sequence), dtype=np.int64,
                           count=len(sequence))

    def encode(self, X: Sequence[str | Sequence[Hashable]] | ArrayLike) -> EncodedInputs:
        """Validate sequences and encode them as module inputs.

        Parameters
        ----------
        X : sequence of str or of symbol lists, of shape (n_samples,)
            The sequences.

        Returns
        -------
        EncodedInputs
            ``inputs``: ids ``x (n, T)`` right-padded with 0 and ``lengths (n,)``; ``units``:
            the sequences.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> tagger.encode(["ab", "c"]).inputs["x"]
        tensor([[1, 2],
                [3, 0]])
        """
        self._check_fitted()
        seqs = self._check_inputs(X)
        x, lengths = pad_sequences([self.encode_symbols(s) for s in seqs], 0)
        return EncodedInputs({"x": x, "lengths": lengths}, units=seqs)
