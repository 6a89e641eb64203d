"""Word-piece encoding of BERT-family models (the bundled MiniLM by default) with the interface
of :class:`~interpretable.text.TextEncoder`, plus the alignment of the pieces with the words
and characters of the original text."""

from __future__ import annotations

import json
import os
import re
from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator

from ..optional import import_optional
from ..params import Interval, validate_estimator_parameters
from ..validation import check_texts

__all__ = ["WordPieceEncoder", "WordPieces"]

_MAX_POSITIONS = 512
#: a lone surrogate (``errors="surrogateescape"`` decoding makes them), which ``tokenizers``
#: cannot take: it reads as U+FFFD, one code point for one, so offsets stay those of the text
_SURROGATE = re.compile("[\ud800-\udfff]")
#: the tokeniser settings a fitted encoder stores (with its vocabulary) and their types
_SETTINGS = {"lowercase": bool, "strip_accents": (bool, type(None)), "clean_text": bool,
             "handle_chinese_chars": bool, "continuing_subword_prefix": str,
             "max_input_chars_per_word": int, "cls_token": str, "sep_token": str,
             "pad_token": str, "unk_token": str}


class WordPieces(NamedTuple):
    """One text as the model sees it.

    pieces : list of T str, ``[CLS] pieces [SEP]`` (truncated to ``max_len``);
    offsets : (T, 2) int64, ``[start, end)`` characters of each piece in the original text
        (accents, case and unknown words (``[UNK]``) included), -1 for ``[CLS]``, ``[SEP]``;
    words : (T,) int64, the word of each piece (-1 for ``[CLS]`` and ``[SEP]``); words are
        whitespace-separated runs and single punctuation characters (BERT's pre-tokeniser);
    spans : (W, 2) int64, ``[start, end)`` characters of each (seen part of a) word;
    dropped : int, the word pieces cut off by ``max_len`` (0: the whole text is seen).
    """
    pieces: list
    offsets: np.ndarray
    words: np.ndarray
    spans: np.ndarray
    dropped: int


def _settings_of(tokenizer) -> dict:
    """The settings of a ``transformers`` BERT tokeniser (WordPiece with BERT's normaliser and
    pre-tokeniser); anything else raises a ValueError."""
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    kinds = (spec["model"]["type"], (spec.get("normalizer") or {}).get("type"),
             (spec.get("pre_tokenizer") or {}).get("type"))
    if kinds != ("WordPiece", "BertNormalizer", "BertPreTokenizer"):
        raise ValueError("only BERT-style tokenisers (WordPiece, BertNormalizer, "
                         f"BertPreTokenizer) are supported, got {kinds}.")
    settings = {k: spec["normalizer"][k] for k in ("lowercase", "strip_accents", "clean_text",
                                                   "handle_chinese_chars")}
    settings.update({k: spec["model"][k] for k in ("continuing_subword_prefix",
                                                   "max_input_chars_per_word")})
    settings.update({k: getattr(tokenizer, k) for k in ("cls_token", "sep_token", "pad_token",
                                                        "unk_token")})
    return settings


def _check_state(vocabulary, settings) -> None:
    if not isinstance(vocabulary, list) or not vocabulary \
            or not all(isinstance(t, str) for t in vocabulary):
        raise ValueError("the vocabulary must be a non-empty list of str.")
    if len(set(vocabulary)) != len(vocabulary):
        raise ValueError("the vocabulary holds repeated word pieces.")
    if not isinstance(settings, dict) or settings.keys() != _SETTINGS.keys():
        raise ValueError(f"the tokeniser settings must have the keys {sorted(_SETTINGS)}.")
    for key, kind in _SETTINGS.items():
        if not isinstance(settings[key], kind) or (kind is int and isinstance(settings[key], bool)):
            raise ValueError(f"tokeniser setting {key!r} has the wrong type.")
    missing = [settings[k] for k in ("cls_token", "sep_token", "pad_token", "unk_token")
               if settings[k] not in vocabulary]
    if missing:
        raise ValueError(f"the special tokens {missing} are not in the vocabulary.")


def _backend(vocabulary: list, settings: dict):
    """A ``tokenizers`` WordPiece tokeniser from a vocabulary and its settings (no files)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    tokenizer = Tokenizer(models.WordPiece(
        {token: i for i, token in enumerate(vocabulary)}, unk_token=settings["unk_token"],
        continuing_subword_prefix=settings["continuing_subword_prefix"],
        max_input_chars_per_word=settings["max_input_chars_per_word"]))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=settings["clean_text"], handle_chinese_chars=settings["handle_chinese_chars"],
        strip_accents=settings["strip_accents"], lowercase=settings["lowercase"])
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tokenizer


class WordPieceEncoder(BaseEstimator):
    """A BERT-family word-piece tokeniser: texts become ``[CLS] pieces [SEP]``.

    Parameters
    ----------
    max_len : int or None, default=None
        At most this many tokens per text, ``[CLS]`` and ``[SEP]`` included (None: 512, the
        model's limit); longer texts are truncated (their first pieces are kept).
    checkpoint : str, path or None, default=None
        Local folder of a BERT-family model whose tokeniser to use (``transformers``, never
        downloads); None: the bundled MiniLM. Read by ``fit`` only: the fitted encoder holds
        the vocabulary and settings (saved with a model, so a saved model needs neither the
        folder nor the data package).

    Attributes
    ----------
    index_to_token_ : list of str
        The word-piece vocabulary (ids are positions).
    settings_ : dict
        The normalisation and special tokens of the tokeniser.

    See Also
    --------
    TextEncoder : The word tokeniser of the other text models.

    Examples
    --------
    >>> from interpretable.text import WordPieceEncoder
    >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokeniser
    >>> encoder.tokenize("Unbelievably good!")
    ['[CLS]', 'un', '##bel', '##ie', '##va', '##bly', 'good', '[SEP]']
    """

    _parameter_constraints = {"max_len": [Interval(Integral, 3, _MAX_POSITIONS, closed="both"),
                                          None],
                              "checkpoint": [str, os.PathLike, None]}

    def __init__(self, max_len=None, checkpoint=None):
        self.max_len = max_len
        self.checkpoint = checkpoint

    def fit(self, X=None, y=None):
        """Read the tokeniser of ``checkpoint`` (nothing is learned from ``X``).

        Parameters
        ----------
        X : None or sequence of str, default=None
            Ignored.
        y : None, default=None
            Ignored.

        Returns
        -------
        self : WordPieceEncoder
            The fitted encoder.

        Examples
        --------
        >>> from interpretable.text import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokeniser
        >>> len(encoder.index_to_token_)
        30522
        """
        validate_estimator_parameters(self)
        AutoTokenizer = import_optional("transformers", "the word-piece tokeniser").AutoTokenizer

        if self.checkpoint is None:
            from ..datasets import load_minilm

            folder = load_minilm()
        else:
            folder = self.checkpoint
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        vocab = tokenizer.get_vocab()
        self._set(sorted(vocab, key=vocab.get), _settings_of(tokenizer))
        return self

    def _set(self, vocabulary: list, settings: dict) -> None:
        _check_state(vocabulary, settings)
        self.index_to_token_, self.settings_ = vocabulary, settings
        self._tokenizer = _backend(vocabulary, settings)
        self._ids = {token: i for i, token in enumerate(vocabulary)}

    @property
    def _limit(self) -> int:
        return int(self.max_len or _MAX_POSITIONS)

    def align(self, text: str) -> WordPieces:
        """Return a text as the model sees it, with its words and their characters.

        Parameters
        ----------
        text : str
            One text.

        Returns
        -------
        WordPieces
            The pieces, their character offsets, their words, the words' character spans and the
            number of pieces cut off (see :class:`WordPieces`).

        Examples
        --------
        >>> from interpretable.text import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokeniser
        >>> pieces = encoder.align("Unbelievably good!")
        >>> pieces.words.tolist(), pieces.dropped
        ([-1, 0, 0, 0, 0, 0, 1, -1], 1)
        """
        encoding = self._tokenizer.encode(_SURROGATE.sub("\ufffd", text),
                                          add_special_tokens=False)
        kept = self._limit - 2
        words = np.array(encoding.word_ids[:kept], dtype=np.int64)
        offsets = np.array(encoding.offsets[:kept], dtype=np.int64).reshape(-1, 2)
        first, index = np.unique(words, return_inverse=True)
        spans = np.stack([np.full(len(first), len(text)), np.zeros(len(first), np.int64)], 1)
        np.minimum.at(spans[:, 0], index, offsets[:, 0])
        np.maximum.at(spans[:, 1], index, offsets[:, 1])
        settings = self.settings_
        special = np.full((1, 2), -1, dtype=np.int64)
        return WordPieces(
            pieces=[settings["cls_token"], *encoding.tokens[:kept], settings["sep_token"]],
            offsets=np.concatenate([special, offsets, special]),
            words=np.concatenate([[-1], index, [-1]]).astype(np.int64), spans=spans,
            dropped=max(len(encoding.tokens) - kept, 0))

    def tokenize(self, text: str) -> list[str]:
        """Return the word pieces of one text, ``[CLS]`` and ``[SEP]`` included.

        Parameters
        ----------
        text : str
            One text.

        Returns
        -------
        list of str
            The pieces (at most ``max_len``).

        Examples
        --------
        >>> from interpretable.text import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokeniser
        >>> encoder.tokenize("A good film")
        ['[CLS]', 'a', 'good', 'film', '[SEP]']
        """
        return self.align(text).pieces

    def tokenize_many(self, X, allow_blank: bool = False) -> list[list[str]]:
        """Return the word pieces of every text.

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.
        allow_blank : bool, default=False
            A blank text gets no pieces instead of raising.

        Returns
        -------
        list of list of str
            The pieces of each text.

        Examples
        --------
        >>> from interpretable.text import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokeniser
        >>> encoder.tokenize_many(["Good film", " "], allow_blank=True)
        [['[CLS]', 'good', 'film', '[SEP]'], []]
        """
        return [self.tokenize(t) if t.strip() else []
                for t in check_texts(X, allow_blank=allow_blank)]

    def encode_tokens(self, tokenized) -> tuple[np.ndarray, np.ndarray]:
        """Map word-piece lists to padded ids and lengths.

        Parameters
        ----------
        tokenized : list of list of str
            The pieces of each text.

        Returns
        -------
        ids : ndarray of shape (n_samples, T)
            Ids (int64), padded with the padding id (0).
        lengths : ndarray of shape (n_samples,)
            The lengths.

        Examples
        --------
        >>> from interpretable.text import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokeniser
        >>> encoder.encode_tokens([["[CLS]", "good", "[SEP]"]])
        (array([[ 101, 2204,  102]]), array([3]))
        """
        lengths = np.array([len(t) for t in tokenized], dtype=np.int64)
        ids = np.full((len(tokenized), max(int(lengths.max()), 1)),
                      self._ids[self.settings_["pad_token"]],
                      np.int64)
        unknown = self._ids[self.settings_["unk_token"]]
        for i, tokens in enumerate(tokenized):
            ids[i, : len(tokens)] = [self._ids.get(t, unknown) for t in tokens]
        return ids, lengths

    def get_state(self) -> dict:
        """Return the fitted state, JSON-compatible (for safe persistence).

        Returns
        -------
        dict
            ``params``, ``vocabulary`` and ``settings``; :meth:`from_state` rebuilds the encoder.

        Examples
        --------
        >>> from interpretable.text import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokeniser
        >>> sorted(encoder.get_state())
        ['params', 'settings', 'vocabulary']
        """
        return {"params": self.get_params(), "vocabulary": self.index_to_token_,
                "settings": self.settings_}

    @classmethod
    def from_state(cls, state: dict) -> WordPieceEncoder:
        """Rebuild a fitted encoder from :meth:`get_state`'s state.

        A state without vocabulary, from version 0.1, reads the bundled MiniLM's tokeniser again.

        Parameters
        ----------
        state : dict
            The state.

        Returns
        -------
        WordPieceEncoder
            The fitted encoder.

        Examples
        --------
        >>> from interpretable.text import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokeniser
        >>> WordPieceEncoder.from_state(encoder.get_state()).tokenize("good")
        ['[CLS]', 'good', '[SEP]']
        """
        encoder = cls(**state["params"])
        if "vocabulary" not in state:
            return encoder.fit()
        encoder._set(state["vocabulary"], state["settings"])
        return encoder

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("_tokenizer", "_ids")}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("checkpoint", None)
        if "settings_" in state:
            self._set(self.index_to_token_, self.settings_)
        elif "index_to_token_" in state:  # pickled by version 0.1
            self.fit()
