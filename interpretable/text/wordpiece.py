"""Word-piece encoding of BERT-family models (the bundled MiniLM by default) with the interface
of :class:`~interpretable.text.TextEncoder`, plus the alignment of the pieces with the words
and characters of the original text."""

from __future__ import annotations

import json
import os
from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval

from ..validation import check_texts

__all__ = ["WordPieceEncoder", "WordPieces"]

_MAX_POSITIONS = 512
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
    max_len : int or None
        At most this many tokens per text, ``[CLS]`` and ``[SEP]`` included (None: 512, the
        model's limit); longer texts are truncated (their first pieces are kept).
    checkpoint : str, path or None
        Local folder of a BERT-family model whose tokeniser to use (``transformers``, never
        downloads); None: the bundled MiniLM. Read by ``fit`` only: the fitted encoder holds
        the vocabulary and settings (saved with a model, so a saved model needs neither the
        folder nor the data package).

    Attributes
    ----------
    index_to_token_ : list of str, the word-piece vocabulary (ids are positions).
    settings_ : dict, the normalisation and special tokens of the tokeniser.
    """

    _parameter_constraints = {"max_len": [Interval(Integral, 3, _MAX_POSITIONS, closed="both"),
                                          None],
                              "checkpoint": [str, os.PathLike, None]}

    def __init__(self, max_len=None, checkpoint=None):
        self.max_len = max_len
        self.checkpoint = checkpoint

    def fit(self, X=None, y=None):
        """Read the tokeniser of ``checkpoint`` (nothing is learned from ``X``)."""
        self._validate_params()
        from transformers import AutoTokenizer

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
        """``text`` as the model sees it, with its words and their characters (see
        :class:`WordPieces`)."""
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
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
        return self.align(text).pieces

    def tokenize_many(self, X, allow_blank: bool = False) -> list[list[str]]:
        """Word pieces of every text of ``X``; a blank one (``allow_blank``) gets none."""
        return [self.tokenize(t) if t.strip() else []
                for t in check_texts(X, allow_blank=allow_blank)]

    def encode_tokens(self, tokenized) -> tuple[np.ndarray, np.ndarray]:
        """Token lists -> ids ``(n, T)`` int64 (padding id 0) and lengths ``(n,)``."""
        lengths = np.array([len(t) for t in tokenized], dtype=np.int64)
        ids = np.full((len(tokenized), max(int(lengths.max()), 1)),
                      self._ids[self.settings_["pad_token"]],
                      np.int64)
        unknown = self._ids[self.settings_["unk_token"]]
        for i, tokens in enumerate(tokenized):
            ids[i, : len(tokens)] = [self._ids.get(t, unknown) for t in tokens]
        return ids, lengths

    def get_state(self) -> dict:
        return {"params": self.get_params(), "vocabulary": self.index_to_token_,
                "settings": self.settings_}

    @classmethod
    def from_state(cls, state: dict) -> WordPieceEncoder:
        """The fitted encoder of :meth:`get_state` (a state without vocabulary, from version
        0.1, reads the bundled MiniLM's tokeniser again)."""
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
