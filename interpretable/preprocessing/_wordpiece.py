"""Sub-word encoding of ``transformers`` models (the bundled MiniLM by default) with the
interface of :class:`~interpretable.preprocessing.TextEncoder`, plus the alignment of the
pieces with the words and characters of the original text.

The tokenizer is held as data, never as code: a BERT tokenizer (WordPiece with BERT's
normaliser and pre-tokenizer) as its vocabulary and settings, any other (RoBERTa's and GPT-2's
byte-level BPE, XLM-RoBERTa's SentencePiece Unigram, Llama's SentencePiece BPE, other WordPiece
pipelines) as the JSON of its ``tokenizers`` backend, checked before it is rebuilt. A text is
framed as the tokenizer frames it: ``[CLS] pieces [SEP]`` (BERT), ``<s> pieces </s>``
(RoBERTa), ``<s> pieces`` (Llama) or the pieces alone (GPT-2, Qwen2)."""

from __future__ import annotations

import json
import os
import re
from numbers import Integral
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator

from interpretable._validation import check_texts
from interpretable.utils import Interval, validate_estimator_parameters

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike
    from typing_extensions import Self

__all__ = ["WordPieceEncoder"]

_MAX_POSITIONS = 512
#: the largest ``max_len`` (decoder models read longer texts than the BERT lineage's 512)
_MAX_LENGTH = 8192
#: at most this many special tokens before and after a text's pieces
_MAX_FRAMING = 4
#: a lone surrogate (``errors="surrogateescape"`` decoding makes them), which ``tokenizers``
#: cannot take: it reads as U+FFFD, one code point for one, so offsets stay those of the text
_SURROGATE = re.compile("[\ud800-\udfff]")
#: the special tokens every fitted encoder names, and their types: a text is ``prefix pieces
#: suffix``; ``cls_token`` is the first token of the prefix and ``sep_token`` the last of the
#: suffix (None: the tokenizer adds none there); ``unk_token`` is None for a byte-level BPE
_SPECIAL_TOKENS = {"cls_token": (str, type(None)), "sep_token": (str, type(None)),
                   "pad_token": str, "unk_token": (str, type(None)), "prefix": list,
                   "suffix": list}
#: the settings of a BERT tokenizer, stored with its vocabulary, and their types
_BERT_SETTINGS = {"lowercase": bool, "strip_accents": (bool, type(None)), "clean_text": bool,
                  "handle_chinese_chars": bool, "continuing_subword_prefix": str,
                  "max_input_chars_per_word": int, **_SPECIAL_TOKENS}
#: the ``tokenizers`` models a tokenizer stored as JSON may use
_MODEL_TYPES = ("WordPiece", "BPE", "Unigram")
#: at most this many vocabulary entries, BPE merges or added tokens (XLM-RoBERTa has 250 002)
_MAX_ENTRIES = 1 << 20
#: the parts of a ``tokenizers`` JSON the encoder does not use (it frames, cuts and pads texts
#: itself): dropped, so the stored state holds only what tokenizes
_UNUSED_PARTS = ("truncation", "padding", "post_processor", "decoder")
_SUPPORTED = ("tokenizers with a `tokenizers` backend (a 'fast' tokenizer) whose model is one "
              f"of {list(_MODEL_TYPES)}, e.g. those of BERT, DistilBERT, ELECTRA, RoBERTa, "
              "XLM-RoBERTa, GPT-2, Llama and Qwen2")
#: what ``fit`` encodes to read how the tokenizer frames a text (its special tokens before and
#: after the pieces)
_PROBE = "Hello, World! A naïve test."


class WordPieces(NamedTuple):
    """One text as the model sees it.

    pieces : list of T str, ``prefix pieces suffix`` (``[CLS] … [SEP]`` for BERT, ``<s> … </s>``
        for RoBERTa, ``<s> …`` for Llama, the pieces alone for GPT-2; truncated to
        ``max_len``), vocabulary tokens (``[UNK]`` / ``<unk>`` for unknown characters);
    offsets : (T, 2) int64, ``[start, end)`` characters of each piece in the original text
        (accents, case and unknown characters included; no surrounding whitespace; a piece that
        is only a space marker, byte-level BPE's ``Ġ`` or SentencePiece's ``▁``, covers no
        character: ``start == end``), -1 for the special tokens of the prefix and suffix;
    words : (T,) int64, the word of each piece (-1 for the special tokens): the words of the
        pre-tokenizer (BERT's: whitespace-separated runs and single punctuation characters;
        for a tokenizer that does not split a text into words, e.g. Llama's, its
        whitespace-separated runs), a piece that covers no character joining the next word;
    spans : (W, 2) int64, ``[start, end)`` characters of each (seen part of a) word;
    dropped : int, the pieces cut off by ``max_len`` (0: the whole text is seen).
    """
    pieces: list
    offsets: np.ndarray
    words: np.ndarray
    spans: np.ndarray
    dropped: int


def _bert_settings(spec: dict) -> dict | None:
    """The normalisation settings of a BERT tokenizer's JSON (WordPiece with BERT's normaliser
    and pre-tokenizer); None for any other tokenizer."""
    kinds = (spec["model"].get("type"), (spec.get("normalizer") or {}).get("type"),
             (spec.get("pre_tokenizer") or {}).get("type"))
    if kinds != ("WordPiece", "BertNormalizer", "BertPreTokenizer"):
        return None
    settings = {k: spec["normalizer"][k] for k in ("lowercase", "strip_accents", "clean_text",
                                                   "handle_chinese_chars")}
    settings.update({k: spec["model"][k] for k in ("continuing_subword_prefix",
                                                   "max_input_chars_per_word")})
    return settings


def _check_settings(settings, kinds: dict) -> None:
    if not isinstance(settings, dict) or settings.keys() != kinds.keys():
        raise ValueError(f"the tokenizer settings must have the keys {sorted(kinds)}.")
    for key, kind in kinds.items():
        if not isinstance(settings[key], kind) or (kind is int and isinstance(settings[key], bool)):
            raise ValueError(f"tokenizer setting {key!r} has the wrong type: "
                             f"{settings[key]!r}.")
    prefix, suffix = settings["prefix"], settings["suffix"]
    if not all(isinstance(token, str) for token in prefix + suffix) \
            or max(len(prefix), len(suffix)) > _MAX_FRAMING:
        raise ValueError(f"tokenizer settings 'prefix' and 'suffix' must be lists of at most "
                         f"{_MAX_FRAMING} str, got {prefix!r} and {suffix!r}.")


def _check_bert_state(vocabulary, settings) -> None:
    if not isinstance(vocabulary, list) or not 0 < len(vocabulary) <= _MAX_ENTRIES \
            or not all(isinstance(t, str) for t in vocabulary):
        raise ValueError(f"the vocabulary must be a non-empty list of at most {_MAX_ENTRIES} str.")
    if len(set(vocabulary)) != len(vocabulary):
        raise ValueError("the vocabulary holds repeated word pieces.")
    _check_settings(settings, _BERT_SETTINGS)


def _bert_backend(vocabulary: list, settings: dict):
    """A ``tokenizers`` WordPiece tokenizer from a vocabulary and its settings (no files)."""
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


def _json_backend(spec, settings) -> tuple:
    """A ``tokenizers`` tokenizer from its JSON, whose structure (model type, sizes) is checked
    before it is built; returns the tokenizer and the JSON without its unused parts."""
    _check_settings(settings, _SPECIAL_TOKENS)
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
        raise ValueError("the tokenizer JSON must be a dict with a 'model' dict.")
    model = spec["model"]
    if model.get("type") not in _MODEL_TYPES:
        raise ValueError(f"unsupported tokenizer model type {model.get('type')!r}; supported: "
                         f"{_SUPPORTED}.")
    for name, entries in (("vocabulary", model.get("vocab")), ("merges", model.get("merges", [])),
                          ("added tokens", spec.get("added_tokens", []))):
        if not isinstance(entries, (list, dict)) or len(entries) > _MAX_ENTRIES:
            raise ValueError(f"the tokenizer's {name} must be a list or dict of at most "
                             f"{_MAX_ENTRIES} entries.")
    from tokenizers import Tokenizer

    spec = {**spec, **dict.fromkeys(_UNUSED_PARTS)}
    try:
        return Tokenizer.from_str(json.dumps(spec)), spec
    except Exception as error:  # tokenizers reports a malformed JSON as a bare Exception
        raise ValueError(f"the tokenizer JSON is malformed: {error}") from error


def _vocabulary_of(backend) -> list:
    """The tokens of a ``tokenizers`` tokenizer in id order; their ids must be 0, …, n - 1."""
    ids = backend.get_vocab(with_added_tokens=True)
    vocabulary = sorted(ids, key=ids.get)
    if [ids[token] for token in vocabulary] != list(range(len(vocabulary))):
        raise ValueError("the tokenizer's ids are not 0, ..., n - 1 (one id per token).")
    return vocabulary


def _space_markers(spec: dict) -> str:
    """The characters by which the pre-tokenizer or normaliser of a tokenizer JSON marks word
    starts (SentencePiece's ``▁``: Metaspace's replacement, or Llama's normaliser, which
    prepends it and replaces the spaces with it)."""
    markers, parts = "", [spec.get("pre_tokenizer"), spec.get("normalizer")]
    while parts:
        part = parts.pop()
        if isinstance(part, dict):
            kind = part.get("type")
            if kind == "Metaspace" and isinstance(part.get("replacement"), str):
                markers += part["replacement"]
            elif kind == "Prepend" and isinstance(part.get("prepend"), str):
                markers += part["prepend"].strip()
            elif kind == "Replace" and part.get("pattern") == {"String": " "} \
                    and isinstance(part.get("content"), str):
                markers += part["content"].strip()
            parts.extend(part.get("pretokenizers") or part.get("normalizers") or [])
    return markers


def _splits_words(backend) -> bool:
    """Whether the pre-tokenizer of ``backend`` splits a text into words (Llama's tokenizer
    has none: a whole text is one "word" to it)."""
    return len(set(backend.encode("a b", add_special_tokens=False).word_ids)) > 1


def _framing(framed: list, pieces: list):
    """``(prefix, suffix)``: the ids ``framed`` (a text encoded with its special tokens) has
    before and after ``pieces`` (the same text without them); None when ``framed`` does not
    hold the pieces in one run."""
    for start in range(len(framed) - len(pieces) + 1):
        if framed[start:start + len(pieces)] == pieces:
            return framed[:start], framed[start + len(pieces):]
    return None


def _shown_span(text: str, start: int, end: int, blank: bool) -> tuple[int, int]:
    """The characters ``[start, end)`` of a piece without surrounding whitespace; empty (at the
    first shown character) for a ``blank`` piece, one that shows no character."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, start if blank else end


def _check_special_tokens(ids: dict, settings: dict) -> None:
    named = [settings[k] for k in ("cls_token", "sep_token", "pad_token", "unk_token")]
    missing = [token for token in named + settings["prefix"] + settings["suffix"]
               if token is not None and token not in ids]
    if missing:
        raise ValueError(f"the special tokens {missing} are not in the vocabulary.")
    prefix, suffix = settings["prefix"], settings["suffix"]
    if (settings["cls_token"], settings["sep_token"]) != (prefix[0] if prefix else None,
                                                          suffix[-1] if suffix else None):
        raise ValueError("tokenizer settings 'cls_token' and 'sep_token' must be the first "
                         "token of 'prefix' and the last of 'suffix' (None where empty).")


class WordPieceEncoder(BaseEstimator):
    """The sub-word tokenizer of a ``transformers`` model: texts become ``start pieces end``.

    BERT, DistilBERT and ELECTRA split words into WordPiece pieces between ``[CLS]`` and
    ``[SEP]``; RoBERTa into byte-level BPE pieces and XLM-RoBERTa into SentencePiece (Unigram)
    pieces, both between ``<s>`` and ``</s>``; decoder models frame them as their tokenizer
    does (GPT-2 and Qwen2 add nothing, Llama a ``<s>`` before them).

    Parameters
    ----------
    max_len : int or None, default=None
        At most this many tokens per text, the start and end tokens included (None: 512, the
        BERT lineage's limit; at most 8192); longer texts are truncated (their first pieces are
        kept).
    checkpoint : str, path or None, default=None
        Local folder of a ``transformers`` model whose tokenizer to use (never downloads);
        None: the bundled MiniLM. Read by ``fit`` only: the fitted encoder holds the tokenizer
        as data (saved with a model, so a saved model needs neither the folder nor the data
        package).

    Attributes
    ----------
    index_to_token_ : list of str
        The vocabulary (ids are positions).
    settings_ : dict
        The special tokens: ``prefix`` and ``suffix``, the lists of those before and after a
        text's pieces, ``cls_token`` starts a text and ``sep_token`` ends it (None where the
        tokenizer adds none), ``pad_token`` pads it, ``unk_token`` stands for unknown
        characters (None for a byte-level BPE); for a BERT tokenizer, also its normalisation.
    pad_token_id_ : int
        The id of the padding token (0 for BERT, 1 for RoBERTa).

    See Also
    --------
    TextEncoder : The word tokenizer of the other text models.

    Examples
    --------
    >>> from interpretable.preprocessing import WordPieceEncoder
    >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokenizer
    >>> encoder.tokenize("Unbelievably good!")
    ['[CLS]', 'un', '##bel', '##ie', '##va', '##bly', 'good', '[SEP]']
    """

    _parameter_constraints = {"max_len": [Interval(Integral, 3, _MAX_LENGTH, closed="both"),
                                          None],
                              "checkpoint": [str, os.PathLike, None]}

    def __init__(self, max_len: int | None = None,
                 checkpoint: str | os.PathLike[str] | None = None):
        self.max_len = max_len
        self.checkpoint = checkpoint

    def fit(self, X: Sequence[str] | ArrayLike | None = None, y: ArrayLike | None = None) -> Self:
        """Read the tokenizer of ``checkpoint`` (nothing is learned from ``X``).

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

        Raises
        ------
        ValueError
            If the folder has no tokenizer files (the message names the files expected), or
            the tokenizer cannot be held as data (no ``tokenizers`` backend, another model
            than WordPiece, BPE or Unigram, no padding token) or does not frame a text's
            pieces with special tokens before and after them.

        Examples
        --------
        >>> from interpretable.preprocessing import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokenizer
        >>> len(encoder.index_to_token_)
        30522
        """
        validate_estimator_parameters(self)
        from interpretable.nn import load_tokenizer

        if self.checkpoint is None:
            from interpretable.datasets import load_minilm

            folder: str | os.PathLike[str] = load_minilm()
        else:
            folder = self.checkpoint
        return self._hold(load_tokenizer(folder))

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, *, max_len: int | None = None,
                       checkpoint: str | os.PathLike[str] | None = None,
                       pad_token: str | None = None) -> WordPieceEncoder:
        """Return the encoder that ``fit`` makes, from a ``transformers`` tokenizer already read.

        For a caller that read the tokenizer's folder already (its config too, so that it is
        not read again).

        Parameters
        ----------
        tokenizer : transformers tokenizer
            A fast tokenizer (one with a ``tokenizers`` backend), e.g. from
            ``AutoTokenizer.from_pretrained(folder)``.
        max_len : int or None, default=None
            As the parameter.
        checkpoint : str, path or None, default=None
            Recorded as the parameter: the folder it was read from (None: the bundled MiniLM).
        pad_token : str or None, default=None
            The token that pads a text (e.g. the one the model's config names, for a
            tokenizer that has none, as GPT-2's); None: the tokenizer's.

        Returns
        -------
        WordPieceEncoder
            The fitted encoder.

        Raises
        ------
        ValueError
            As :meth:`fit`.

        Examples
        --------
        >>> from interpretable.datasets import load_minilm
        >>> from interpretable.nn._bert_encoder import load_tokenizer
        >>> from interpretable.preprocessing import WordPieceEncoder
        >>> encoder = WordPieceEncoder.from_tokenizer(load_tokenizer(load_minilm()), max_len=8)
        >>> encoder.tokenize("A good film")
        ['[CLS]', 'a', 'good', 'film', '[SEP]']
        """
        encoder = cls(max_len=max_len, checkpoint=checkpoint)
        validate_estimator_parameters(encoder)
        return encoder._hold(tokenizer, pad_token)

    def _hold(self, tokenizer, pad_token=None) -> WordPieceEncoder:
        """Read how ``tokenizer`` frames a text (its special tokens before and after the
        pieces) and hold it as data (its vocabulary and settings, or its ``tokenizers``
        JSON); ``pad_token``: the padding token, when not the tokenizer's."""
        folder = tokenizer.name_or_path
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ValueError(f"the tokenizer of {folder!r} ({type(tokenizer).__name__}) has no "
                             f"`tokenizers` backend; supported: {_SUPPORTED}.")
        framed = tokenizer(_PROBE)["input_ids"]
        pieces = tokenizer(_PROBE, add_special_tokens=False)["input_ids"]
        framing = _framing(framed, pieces)
        if framing is None or max(map(len, framing)) > _MAX_FRAMING:
            raise ValueError(f"the tokenizer of {folder!r} does not encode a text as its "
                             f"pieces between at most {_MAX_FRAMING} special tokens before and "
                             f"after them; supported: {_SUPPORTED}.")
        prefix, suffix = ([backend.id_to_token(i) for i in part] for part in framing)
        pad_token = tokenizer.pad_token if pad_token is None else pad_token
        if pad_token is None:
            raise ValueError(f"the tokenizer of {folder!r} has no padding token: name the one "
                             "to pad with (pad_token=...).")
        spec = json.loads(backend.to_str())
        settings = {"cls_token": prefix[0] if prefix else None,
                    "sep_token": suffix[-1] if suffix else None, "pad_token": pad_token,
                    "unk_token": tokenizer.unk_token, "prefix": prefix, "suffix": suffix}
        bert = _bert_settings(spec)
        if bert is None:
            self._set(settings, tokenizer_json=spec)
        else:
            self._set({**bert, **settings}, vocabulary=_vocabulary_of(backend))
        return self

    def _set(self, settings: dict, vocabulary: list | None = None,
             tokenizer_json: dict | None = None) -> None:
        """Check and hold a tokenizer: a BERT one from its ``vocabulary`` and ``settings``, any
        other from its ``tokenizers`` JSON (which holds the vocabulary) and special tokens."""
        if tokenizer_json is None:
            _check_bert_state(vocabulary, settings)
            backend, markers = _bert_backend(vocabulary, settings), ""
        else:
            backend, tokenizer_json = _json_backend(tokenizer_json, settings)
            vocabulary, markers = _vocabulary_of(backend), _space_markers(tokenizer_json)
        ids = {token: i for i, token in enumerate(vocabulary)}
        _check_special_tokens(ids, settings)
        framing = len(settings["prefix"]) + len(settings["suffix"])
        if self._limit <= framing:
            raise ValueError(f"max_len={self._limit} leaves no room for a piece between the "
                             f"tokenizer's {framing} special tokens.")
        self.index_to_token_, self.settings_ = vocabulary, settings
        self.pad_token_id_ = ids[settings["pad_token"]]
        self._tokenizer_json, self._tokenizer, self._ids = tokenizer_json, backend, ids
        self._markers, self._whitespace_words = markers, not _splits_words(backend)

    @property
    def _limit(self) -> int:
        return int(self.max_len or _MAX_POSITIONS)

    @property
    def _frame(self) -> tuple[list, list]:
        """The ids of the special tokens before and after a text's pieces."""
        return ([self._ids[t] for t in self.settings_["prefix"]],
                [self._ids[t] for t in self.settings_["suffix"]])

    def _kept(self) -> int:
        """The pieces of a text that fit in ``max_len`` beside the special tokens."""
        return self._limit - len(self.settings_["prefix"]) - len(self.settings_["suffix"])

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
        >>> from interpretable.preprocessing import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokenizer
        >>> pieces = encoder.align("Unbelievably good!")
        >>> pieces.words.tolist(), pieces.dropped
        ([-1, 0, 0, 0, 0, 0, 1, -1], 1)
        """
        encoding = self._tokenizer.encode(_SURROGATE.sub("\ufffd", text),
                                          add_special_tokens=False)
        kept = self._kept()
        pieces = [self.index_to_token_[i] for i in encoding.ids[:kept]]
        markers = self._markers
        offsets = np.array([_shown_span(text, start, end, bool(markers)
                                        and not piece.strip(markers))
                            for piece, (start, end)
                            in zip(pieces, encoding.offsets[:kept], strict=True)],
                           dtype=np.int64).reshape(-1, 2)
        # a piece that shows no character joins the word of the next one that does (the
        # previous at the end); if none does (a blank text), each stays in its own word
        shown = offsets[:, 1] > offsets[:, 0]
        if not shown.any():
            shown[:] = True
        at = np.flatnonzero(shown)
        if self._whitespace_words:  # the tokenizer does not split words: whitespace does
            runs = [match.start() for match in re.finditer(r"\S+", text)]
            word_ids = np.searchsorted(runs, offsets[:, 0], side="right") - 1
        else:
            word_ids = np.array(encoding.word_ids[:kept], dtype=np.int64)
        words = word_ids[at[np.minimum(np.searchsorted(at, np.arange(len(pieces))),
                                       len(at) - 1)]]
        first, index = np.unique(words, return_inverse=True)
        spans = np.stack([np.full(len(first), len(text)), np.zeros(len(first), np.int64)], 1)
        np.minimum.at(spans[:, 0], index[shown], offsets[shown, 0])
        np.maximum.at(spans[:, 1], index[shown], offsets[shown, 1])
        prefix, suffix = self.settings_["prefix"], self.settings_["suffix"]
        before, after = (np.full(len(part), -1, dtype=np.int64) for part in (prefix, suffix))
        return WordPieces(
            pieces=[*prefix, *pieces, *suffix],
            offsets=np.concatenate([before[:, None].repeat(2, 1), offsets,
                                    after[:, None].repeat(2, 1)]),
            words=np.concatenate([before, index, after]).astype(np.int64), spans=spans,
            dropped=max(len(encoding.ids) - kept, 0))

    def encode_texts(self, X: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return the ids of texts as the model sees them, without aligning them with the text.

        The ids of :meth:`align`'s pieces (what training reads), without their offsets and
        words.

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts (blank ones too: they become the special tokens alone).

        Returns
        -------
        ids : ndarray of shape (n_samples, T)
            Ids (int64), ``prefix pieces suffix``, padded with ``pad_token_id_``.
        lengths : ndarray of shape (n_samples,)
            The lengths (at most ``max_len``).
        dropped : ndarray of shape (n_samples,)
            The pieces of each text cut off by ``max_len`` (0: the whole text).

        Examples
        --------
        >>> from interpretable.preprocessing import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=4).fit()  # the bundled MiniLM's tokenizer
        >>> encoder.encode_texts(["good", "a good film"])
        (array([[ 101, 2204,  102,    0],
               [ 101, 1037, 2204,  102]]), array([3, 4]), array([0, 1]))
        """
        kept = self._kept()
        prefix, suffix = self._frame
        pieces = [self._tokenizer.encode(_SURROGATE.sub("\ufffd", text),
                                         add_special_tokens=False).ids for text in X]
        lengths = np.array([min(len(p), kept) + len(prefix) + len(suffix) for p in pieces],
                           dtype=np.int64)
        ids = np.full((len(pieces), max(max(lengths, default=1), 1)), self.pad_token_id_,
                      np.int64)
        for row, text_ids, length in zip(ids, pieces, lengths, strict=True):
            row[:length] = [*prefix, *text_ids[:kept], *suffix]
        dropped = np.array([max(len(p) - kept, 0) for p in pieces], dtype=np.int64)
        return ids, lengths, dropped

    def tokenize(self, text: str) -> list[str]:
        """Return the pieces of one text, the start and end tokens included.

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
        >>> from interpretable.preprocessing import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokenizer
        >>> encoder.tokenize("A good film")
        ['[CLS]', 'a', 'good', 'film', '[SEP]']
        """
        return self.align(text).pieces

    def tokenize_many(self, X: Sequence[str] | ArrayLike, allow_blank: bool = False
                      ) -> list[list[str]]:
        """Return the pieces of every text.

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
        >>> from interpretable.preprocessing import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokenizer
        >>> encoder.tokenize_many(["Good film", " "], allow_blank=True)
        [['[CLS]', 'good', 'film', '[SEP]'], []]
        """
        return [self.tokenize(t) if t.strip() else []
                for t in check_texts(X, allow_blank=allow_blank)]

    def encode_tokens(self, tokenized: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Map piece lists to padded ids and lengths.

        Parameters
        ----------
        tokenized : list of list of str
            The pieces of each text.

        Returns
        -------
        ids : ndarray of shape (n_samples, T)
            Ids (int64), padded with ``pad_token_id_``.
        lengths : ndarray of shape (n_samples,)
            The lengths.

        Examples
        --------
        >>> from interpretable.preprocessing import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokenizer
        >>> encoder.encode_tokens([["[CLS]", "good", "[SEP]"]])
        (array([[ 101, 2204,  102]]), array([3]))
        """
        lengths = np.array([len(t) for t in tokenized], dtype=np.int64)
        ids = np.full((len(tokenized), max(int(lengths.max()), 1)), self.pad_token_id_, np.int64)
        unknown = self._ids.get(self.settings_["unk_token"], self.pad_token_id_)
        for i, tokens in enumerate(tokenized):
            ids[i, : len(tokens)] = [self._ids.get(t, unknown) for t in tokens]
        return ids, lengths

    def get_state(self) -> dict:
        """Return the fitted state, JSON-compatible (for safe persistence).

        Returns
        -------
        dict
            ``params``, ``settings`` and the tokenizer: ``vocabulary`` (a BERT tokenizer) or
            ``tokenizer`` (any other, the JSON of its ``tokenizers`` backend);
            :meth:`from_state` rebuilds the encoder.

        Examples
        --------
        >>> from interpretable.preprocessing import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokenizer
        >>> sorted(encoder.get_state())
        ['params', 'settings', 'vocabulary']
        """
        params = self.get_params()
        if params["checkpoint"] is not None:  # a path: stored as str
            params["checkpoint"] = os.fspath(params["checkpoint"])
        if self._tokenizer_json is None:
            tokenizer = {"vocabulary": self.index_to_token_}
        else:
            tokenizer = {"tokenizer": self._tokenizer_json}
        return {"params": params, "settings": self.settings_, **tokenizer}

    @classmethod
    def from_state(cls, state: dict) -> WordPieceEncoder:
        """Rebuild a fitted encoder from :meth:`get_state`'s state, checked first.

        Parameters
        ----------
        state : dict
            The state.

        Returns
        -------
        WordPieceEncoder
            The fitted encoder.

        Raises
        ------
        ValueError
            If the settings or the tokenizer are malformed or missing (wrong keys or types, a
            model other than WordPiece, BPE or Unigram, special tokens outside the vocabulary,
            too large).

        Examples
        --------
        >>> from interpretable.preprocessing import WordPieceEncoder
        >>> encoder = WordPieceEncoder(max_len=8).fit()  # the bundled MiniLM's tokenizer
        >>> WordPieceEncoder.from_state(encoder.get_state()).tokenize("good")
        ['[CLS]', 'good', '[SEP]']
        """
        encoder = cls(**state["params"])
        if "tokenizer" in state:
            encoder._set(state.get("settings"), tokenizer_json=state["tokenizer"])
        elif "vocabulary" in state:
            encoder._set(state.get("settings"), vocabulary=state["vocabulary"])
        else:
            raise ValueError("the state of a WordPieceEncoder must hold its tokenizer "
                             "('tokenizer' or 'vocabulary').")
        return encoder

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_tokenizer", "_ids", "_markers", "_whitespace_words")}

    def __setstate__(self, state):
        self.__dict__.update(state)
        if state.get("_tokenizer_json") is not None:
            self._set(self.settings_, tokenizer_json=self._tokenizer_json)
        elif "settings_" in state:
            self._set(self.settings_, vocabulary=self.index_to_token_)
