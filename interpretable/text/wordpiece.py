"""Word-piece encoding of the bundled MiniLM (BERT) with the interface of
:class:`~interpretable.text.TextEncoder`."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval

from ..validation import check_texts

__all__ = ["WordPieceEncoder"]

_MAX_POSITIONS = 512


class WordPieceEncoder(BaseEstimator):
    """MiniLM's word-piece tokeniser: texts become ``[CLS] pieces [SEP]``.

    Parameters
    ----------
    max_len : int or None
        At most this many tokens per text, ``[CLS]`` and ``[SEP]`` included (None: 512, the
        model's limit); longer texts are truncated.

    Attributes
    ----------
    index_to_token_ : list of str, the word-piece vocabulary (ids are positions).
    """

    _parameter_constraints = {"max_len": [Interval(Integral, 3, _MAX_POSITIONS, closed="both"),
                                          None]}

    def __init__(self, max_len=None):
        self.max_len = max_len

    def _load(self):
        from transformers import AutoTokenizer

        from ..datasets import load_minilm

        self._tokenizer = AutoTokenizer.from_pretrained(str(load_minilm()),
                                                        local_files_only=True)

    def fit(self, X=None, y=None):
        """Load the tokeniser (nothing is learned from ``X``)."""
        self._validate_params()
        self._load()
        vocab = self._tokenizer.get_vocab()
        self.index_to_token_ = sorted(vocab, key=vocab.get)
        return self

    @property
    def _limit(self) -> int:
        return int(self.max_len or _MAX_POSITIONS)

    def tokenize(self, text: str) -> list[str]:
        tok = self._tokenizer
        return [tok.cls_token, *tok.tokenize(text)[: self._limit - 2], tok.sep_token]

    def tokenize_many(self, X, allow_blank: bool = False) -> list[list[str]]:
        """Word pieces of every text of ``X``; a blank one (``allow_blank``) gets none."""
        return [self.tokenize(t) if t.strip() else []
                for t in check_texts(X, allow_blank=allow_blank)]

    def encode_tokens(self, tokenized) -> tuple[np.ndarray, np.ndarray]:
        """Token lists -> ids ``(n, T)`` int64 (padding id 0) and lengths ``(n,)``."""
        lengths = np.array([len(t) for t in tokenized], dtype=np.int64)
        ids = np.full((len(tokenized), int(lengths.max())), self._tokenizer.pad_token_id,
                      np.int64)
        for i, tokens in enumerate(tokenized):
            ids[i, : len(tokens)] = self._tokenizer.convert_tokens_to_ids(tokens)
        return ids, lengths

    def get_state(self) -> dict:
        return {"params": self.get_params()}

    @classmethod
    def from_state(cls, state: dict) -> "WordPieceEncoder":
        return cls(**state["params"]).fit()

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_tokenizer"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "index_to_token_" in state:
            self._load()
