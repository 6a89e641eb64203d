"""Text encoding: nltk word tokenization, a learned vocabulary and padded id matrices (the
vocabulary's reserved ids and the methods that read a fitted one are in :mod:`.vocabulary`)."""

from __future__ import annotations

import re
from collections import Counter
from itertools import chain, repeat
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from interpretable._validation import check_texts, warn_caller
from interpretable.preprocessing._output import TextOutputMixin
from interpretable.preprocessing._tokenize import sentence_tokens, word_tokenize
from interpretable.preprocessing._vocabulary import PAD, PAD_TOKEN, UNK, UNK_TOKEN, VocabularyMixin
from interpretable.utils import Interval, validate_estimator_parameters

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike
    from typing_extensions import Self

__all__ = ["TextEncoder", "PAD", "UNK"]

# NLTKWordTokenizer splits off only a text's final period; split sentences first (a light
# rule instead of punkt, whose data files are not available offline).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _text_tokens(text: str) -> list[str]:
    """Word tokens of the sentences of ``text``."""
    # printable (whitespace: spaces only) without ". ", "! " or "? ": one sentence, the split
    # would find no boundary
    if text.isprintable() and ". " not in text and "! " not in text and "? " not in text:
        return sentence_tokens(text, True)
    return [tok for sentence in _SENTENCE_END.split(text) for tok in word_tokenize(sentence)]


class TextEncoder(VocabularyMixin, TextOutputMixin, TransformerMixin, BaseEstimator):
    """Tokenize texts (nltk's word tokenizer, no data files needed) and map tokens to integer ids.

    ``set_output`` is accepted (``Pipeline.set_output``), but the ids stay an int64 array
    whatever the container: their width changes with every call (see :mod:`.output`).

    Parameters
    ----------
    lowercase : bool, default=True
        Lower-case before tokenizing.
    min_freq : int, default=1
        Tokens seen fewer times in ``fit`` map to the unknown id.
    max_vocab : int or None, default=None
        Keep only the most frequent tokens (ties broken alphabetically), not counting
        ``<pad>`` and ``<unk>``.
    max_len : int or None, default=2048
        Texts longer than this are truncated to their first ``max_len`` tokens, with a
        ``UserWarning`` naming the longest (applied by :meth:`tokenize` so explanations show
        exactly what the model saw; None keeps every token).

    Attributes
    ----------
    vocabulary_ : dict of str to int
        ``<pad>`` is 0, ``<unk>`` is 1, then tokens by decreasing frequency.
    index_to_token_ : list of str
        Id → token.

    See Also
    --------
    WordPieceEncoder : The word-piece tokenizer of the BERT-family models.

    Examples
    --------
    >>> from interpretable.preprocessing import TextEncoder
    >>> encoder = TextEncoder().fit(["A good film.", "A bad film."])
    >>> encoder.index_to_token_
    ['<pad>', '<unk>', '.', 'a', 'film', 'bad', 'good']
    >>> encoder.transform(["A good movie"])
    array([[3, 6, 1]])
    """

    _parameter_constraints = {"lowercase": ["boolean"],
                              "min_freq": [Interval(Integral, 1, None, closed="left")],
                              "max_vocab": [Interval(Integral, 1, None, closed="left"), None],
                              "max_len": [Interval(Integral, 1, None, closed="left"), None]}

    def __init__(self, lowercase: bool = True, min_freq: int = 1, max_vocab: int | None = None,
                 max_len: int | None = 2048):
        self.lowercase = lowercase
        self.min_freq = min_freq
        self.max_vocab = max_vocab
        self.max_len = max_len

    def tokenize(self, text: str) -> list[str]:
        """Return the tokens of one text as the model sees them (lower-cased, truncated).

        Parameters
        ----------
        text : str
            One text.

        Returns
        -------
        list of str
            Its tokens (at most ``max_len``).

        Examples
        --------
        >>> from interpretable.preprocessing import TextEncoder
        >>> TextEncoder(max_len=3).tokenize("Not bad at all!")
        ['not', 'bad', 'at']
        """
        tokens = _text_tokens(text.lower() if self.lowercase else text)
        return tokens[: self.max_len] if self.max_len else tokens

    def tokenize_many(self, X: Sequence[str] | ArrayLike, allow_blank: bool = False
                      ) -> list[list[str]]:
        """Return the tokens of every text (see :meth:`tokenize`).

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.
        allow_blank : bool, default=False
            A blank text gets no tokens instead of raising.

        Returns
        -------
        list of list of str
            The tokens of each text.

        Raises
        ------
        ValueError
            If a text has no tokens (unless blank with ``allow_blank``).

        Examples
        --------
        >>> from interpretable.preprocessing import TextEncoder
        >>> TextEncoder().tokenize_many(["Good film", " "], allow_blank=True)
        [['good', 'film'], []]
        """
        texts = check_texts(X, allow_blank=allow_blank)
        tokenized = list(map(_text_tokens, map(str.lower, texts) if self.lowercase else texts))
        if self.max_len:
            too_long = [i for i, tokens in enumerate(tokenized) if len(tokens) > self.max_len]
            if too_long:
                longest = max(too_long, key=lambda i: len(tokenized[i]))
                warn_caller(
                    f"{len(too_long)} text(s) longer than max_len={self.max_len} tokens were "
                    f"truncated to their first {self.max_len} (the longest: X[{longest}], "
                    f"{len(tokenized[longest])} tokens); TextEncoder(max_len=None) keeps every "
                    "token.")
            tokenized = [tokens[: self.max_len] for tokens in tokenized]
        empty = [i for i, tokens in enumerate(tokenized)
                 if not tokens and not (allow_blank and not texts[i].strip())]
        if empty:
            raise ValueError(f"X[{empty[0]}] has no tokens after tokenization: "
                             f"{texts[empty[0]]!r:.60}.")
        return tokenized

    def fit(self, X: Sequence[str] | ArrayLike, y: ArrayLike | None = None) -> Self:
        """Learn the vocabulary of the texts.

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.
        y : None
            Ignored.

        Returns
        -------
        self : TextEncoder
            The fitted encoder.

        Raises
        ------
        ValueError
            If a parameter is invalid or a text has no tokens.

        Examples
        --------
        >>> from interpretable.preprocessing import TextEncoder
        >>> TextEncoder(min_freq=2).fit(["a good film", "a bad film"]).index_to_token_
        ['<pad>', '<unk>', 'a', 'film']
        """
        validate_estimator_parameters(self)
        counts = Counter(tok for tokens in self.tokenize_many(X) for tok in tokens)
        kept = sorted(
            (tok for tok, c in counts.items()
             if c >= self.min_freq and tok not in (PAD_TOKEN, UNK_TOKEN)),
            key=lambda tok: (-counts[tok], tok),
        )
        if self.max_vocab is not None:
            kept = kept[: self.max_vocab]
        self.index_to_token_ = [PAD_TOKEN, UNK_TOKEN, *kept]
        self.vocabulary_ = {tok: i for i, tok in enumerate(self.index_to_token_)}
        return self

    def encode_tokens(self, tokenized: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Map tokenized texts to padded ids and lengths.

        Parameters
        ----------
        tokenized : list of list of str
            Tokens of each text.

        Returns
        -------
        ids : ndarray of shape (n_samples, L)
            Ids (int64), right-padded with 0; L is the longest text's length.
        lengths : ndarray of shape (n_samples,)
            The lengths.

        Examples
        --------
        >>> from interpretable.preprocessing import TextEncoder
        >>> encoder = TextEncoder().fit(["A good film.", "A bad film."])
        >>> encoder.encode_tokens([["good", "film"], ["bad"]])
        (array([[6, 4],
               [5, 0]]), array([2, 1]))
        """
        check_is_fitted(self, "vocabulary_")
        lengths = np.fromiter(map(len, tokenized), dtype=np.int64, count=len(tokenized))
        flat_tokens = chain.from_iterable(tokenized)
        flat_ids = np.fromiter(map(self.vocabulary_.get, flat_tokens, repeat(UNK)),
                               dtype=np.int64, count=int(lengths.sum()))
        ids = np.full((len(tokenized), max(int(lengths.max()), 1)), PAD, dtype=np.int64)
        ids[np.arange(ids.shape[1]) < lengths[:, None]] = flat_ids  # row-major, as flattened
        return ids, lengths

    def encode(self, X: Sequence[str] | ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Tokenize texts and map them to padded ids and lengths.

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.

        Returns
        -------
        ids : ndarray of shape (n_samples, L)
            Ids (int64), right-padded with 0.
        lengths : ndarray of shape (n_samples,)
            The lengths.

        Examples
        --------
        >>> from interpretable.preprocessing import TextEncoder
        >>> encoder = TextEncoder().fit(["A good film.", "A bad film."])
        >>> encoder.encode(["Good film", "Bad"])
        (array([[6, 4],
               [5, 0]]), array([2, 1]))
        """
        check_is_fitted(self, "vocabulary_")
        return self.encode_tokens(self.tokenize_many(X))

    def transform(self, X: Sequence[str] | ArrayLike) -> np.ndarray:
        """Map texts to padded ids (pad = 0, unknown = 1).

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.

        Returns
        -------
        ndarray of shape (n_samples, L)
            Ids (int64); the lengths are ``(ids != 0).sum(1)``.

        Examples
        --------
        >>> from interpretable.preprocessing import TextEncoder
        >>> encoder = TextEncoder().fit(["A good film.", "A bad film."])
        >>> encoder.transform(["Good film", "Great"])
        array([[6, 4],
               [1, 0]])
        """
        return self.encode(X)[0]
