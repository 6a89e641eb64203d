"""Analyses of a fitted :class:`~interpretable.ISANLanguageModel` (or, for the parentheses task,
:class:`~interpretable.ISANSequenceTagger`) behind the ISAN paper's figures.

Defined here, the analyses of the input and readout biases against the statistics of a text:

* :func:`input_bias_analysis` — norms of the input biases ``b_c`` (whole, readout part,
  computational part) against the unigram log-probability of ``c`` (paper: the computational
  part carries the "surprise" of a character).
* :func:`readout_bias_vs_unigram` — ``softmax(b_ro)`` against the empirical unigram distribution.
* :func:`offsets_vs_bigram` — ``softmax(b_ro + W_ro b_c)`` (the bias plus the offset of the last
  character) against the empirical bigram distribution ``P(next | c)``.
* :func:`bias_similarity` — cosine similarity of the input biases in either subspace.

Re-exported from :mod:`interpretable.metrics`, the analyses of how the
state carries context: :func:`contribution_decay`, :func:`word_context_effects`,
:func:`parentheses_state_analysis`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats

from interpretable._validation import check_documents
from interpretable.metrics._isan_context_analysis import (
    contribution_decay,
    parentheses_state_analysis,
    word_context_effects,
)
from interpretable.metrics._isan_parameters import check_isan, isan_parameters

if TYPE_CHECKING:
    from interpretable.estimators.sequence import ISANBase, ISANLanguageModel

__all__ = [
    "input_bias_analysis",
    "readout_bias_vs_unigram",
    "offsets_vs_bigram",
    "bias_similarity",
    "contribution_decay",
    "parentheses_state_analysis",
    "word_context_effects",
]


def _unigram(model, text) -> np.ndarray:
    """Empirical distribution over the model's classes (unknown symbol included), (O,)."""
    docs = check_documents(text)
    ids = np.concatenate([model.encode_symbols(d) for d in docs])
    counts = np.bincount(ids, minlength=model.n_symbols_)
    return counts / counts.sum()


def _pearson(a, b) -> float:
    return float(stats.pearsonr(a, b)[0]) if np.std(a) > 0 and np.std(b) > 0 else float("nan")


def input_bias_analysis(model: ISANLanguageModel, text: str) -> tuple[pd.DataFrame, dict]:
    """Per symbol: ``|b_c|``, its readout / computational parts, and ``log P(c)`` in a text.

    Parameters
    ----------
    model : ISANLanguageModel
        A fitted ISAN language model.
    text : str
        The text whose statistics are compared.

    Returns
    -------
    table : pandas.DataFrame
        One row per symbol: ``symbol, count_share, log_prob, bias_norm, readout_norm,
        computational_norm``.
    correlations : dict
        The Pearson correlation of each norm with the unigram log-probability (symbols absent
        from ``text`` are left out).

    Examples
    --------
    >>> from interpretable import ISANLanguageModel
    >>> text = "the cat sat on the mat. the cat ate the rat. " * 3
    >>> lm = ISANLanguageModel(hidden_size=8, seq_len=16, min_count=1, max_epochs=1,
    ...                        random_state=0).fit([text])
    >>> from interpretable.metrics import input_bias_analysis
    >>> table, correlations = input_bias_analysis(lm, text)
    >>> sorted(correlations)
    ['bias_norm_vs_log_prob', 'computational_norm_vs_log_prob', 'readout_norm_vs_log_prob']
    """
    check_isan(model)
    _, b, W_ro, _ = isan_parameters(model)
    basis = model.readout_basis()
    p = _unigram(model, text)
    table = pd.DataFrame({
        "symbol": model.classes_,
        "count_share": p,
        "log_prob": np.log(np.where(p > 0, p, np.nan)),
        "bias_norm": np.linalg.norm(b, axis=1),
        "readout_norm": np.linalg.norm(b @ basis.readout, axis=1),
        "computational_norm": np.linalg.norm(b @ basis.computational, axis=1),
    })
    seen = table[table.count_share > 0]
    corr = {f"{c}_vs_log_prob": _pearson(seen[c], seen.log_prob)
            for c in ("bias_norm", "readout_norm", "computational_norm")}
    return table, corr


def _softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def _kl(p, q) -> np.ndarray:
    """KL(p || q) in bits along the last axis."""
    q = np.clip(q, 1e-12, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1) / q), 0.0)
    return terms.sum(-1)


def readout_bias_vs_unigram(model: ISANLanguageModel, text: str) -> dict:
    """Compare ``softmax(b_ro)`` with the empirical unigram distribution of a text.

    Parameters
    ----------
    model : ISANLanguageModel
        A fitted ISAN language model.
    text : str
        The text whose statistics are compared.

    Returns
    -------
    dict
        ``pearson`` (of the two distributions), ``kl_bits`` (KL(unigram || softmax(b_ro)) in
        bits), ``kl_uniform_bits`` (the KL to the uniform distribution, for reference), and the
        distributions ``softmax_readout_bias`` and ``unigram``.

    Examples
    --------
    >>> from interpretable import ISANLanguageModel
    >>> text = "the cat sat on the mat. the cat ate the rat. " * 3
    >>> lm = ISANLanguageModel(hidden_size=8, seq_len=16, min_count=1, max_epochs=1,
    ...                        random_state=0).fit([text])
    >>> from interpretable.metrics import readout_bias_vs_unigram
    >>> sorted(readout_bias_vs_unigram(lm, text))
    ['kl_bits', 'kl_uniform_bits', 'pearson', 'softmax_readout_bias', 'unigram']
    """
    check_isan(model)
    _, _, _, b_ro = isan_parameters(model)
    p = _unigram(model, text)
    q = _softmax(b_ro)
    uniform = np.full_like(p, 1.0 / len(p))
    return {
        "pearson": _pearson(p, q),
        "kl_bits": float(_kl(p, q)),
        "kl_uniform_bits": float(_kl(p, uniform)),
        "softmax_readout_bias": q,
        "unigram": p,
    }


def offsets_vs_bigram(model: ISANLanguageModel, text: str, min_count: int = 20
                      ) -> tuple[pd.DataFrame, dict]:
    """Compare ``softmax(b_ro + W_ro b_c)`` with the empirical ``P(next | c)``.

    One row per symbol ``c`` seen at least ``min_count`` times as a predecessor: correlation and
    KL (bits) of the bias-plus-offset prediction and of the unigram distribution with the bigram
    distribution.

    Parameters
    ----------
    model : ISANLanguageModel
        A fitted ISAN language model.
    text : str
        The text whose statistics are compared.
    min_count : int, default=20
        Only predecessors seen at least this many times.

    Returns
    -------
    table : pandas.DataFrame
        Columns ``symbol, count, pearson_offset, pearson_unigram, kl_offset_bits,
        kl_unigram_bits``.
    summary : dict
        Their count-weighted means.

    Examples
    --------
    >>> from interpretable import ISANLanguageModel
    >>> text = "the cat sat on the mat. the cat ate the rat. " * 3
    >>> lm = ISANLanguageModel(hidden_size=8, seq_len=16, min_count=1, max_epochs=1,
    ...                        random_state=0).fit([text])
    >>> from interpretable.metrics import offsets_vs_bigram
    >>> table, summary = offsets_vs_bigram(lm, text, min_count=5)
    >>> sorted(summary)
    ['kl_offset_bits', 'kl_unigram_bits', 'pearson_offset', 'pearson_unigram']
    """
    check_isan(model)
    _, b, W_ro, b_ro = isan_parameters(model)
    docs = check_documents(text)
    S = model.n_symbols_
    pairs = np.zeros((S, S))
    for d in docs:
        ids = model.encode_symbols(d)
        np.add.at(pairs, (ids[:-1], ids[1:]), 1)
    unigram = _unigram(model, docs)
    offset_pred = _softmax(b_ro[None] + b @ W_ro.T)  # (S, O)
    rows = []
    for c in np.flatnonzero(pairs.sum(1) >= min_count):
        bigram = pairs[c] / pairs[c].sum()
        rows.append({
            "symbol": model.classes_[c], "count": int(pairs[c].sum()),
            "pearson_offset": _pearson(bigram, offset_pred[c]),
            "pearson_unigram": _pearson(bigram, unigram),
            "kl_offset_bits": float(_kl(bigram, offset_pred[c])),
            "kl_unigram_bits": float(_kl(bigram, unigram)),
        })
    table = pd.DataFrame(rows)
    if table.empty:
        raise ValueError(f"no symbol occurs {min_count} times as a predecessor in text.")
    w = table["count"] / table["count"].sum()
    summary = {c: float((table[c] * w).sum()) for c in
               ("pearson_offset", "pearson_unigram", "kl_offset_bits", "kl_unigram_bits")}
    return table, summary


def bias_similarity(model: ISANBase, subspace: str = "computational",
                    symbols: Sequence[str] | None = None) -> pd.DataFrame:
    """Cosine similarity of the input biases ``b_c`` projected on a subspace of the state.

    Parameters
    ----------
    model : ISANLanguageModel or ISANSequenceTagger
        A fitted ISAN.
    subspace : {"readout", "computational", "full"}, default="computational"
        The subspace (see :meth:`~interpretable.estimators.sequence.ISANBase.readout_basis`).
    symbols : list or None, default=None
        Selects and orders the rows (None: all symbols).

    Returns
    -------
    pandas.DataFrame
        The symbols × symbols cosine similarities.

    Examples
    --------
    >>> from interpretable import ISANLanguageModel
    >>> text = "the cat sat on the mat. the cat ate the rat. " * 3
    >>> lm = ISANLanguageModel(hidden_size=8, seq_len=16, min_count=1, max_epochs=1,
    ...                        random_state=0).fit([text])
    >>> from interpretable.metrics import bias_similarity
    >>> bias_similarity(lm, subspace="full", symbols=list("tac")).shape
    (3, 3)
    """
    _, b, _, _ = isan_parameters(model)
    if subspace not in ("readout", "computational", "full"):
        raise ValueError(
            f"subspace must be 'readout', 'computational' or 'full', got {subspace!r}.")
    if subspace != "full":
        b = b @ model.readout_basis()[subspace]
    names = model.symbols_
    symbols = names if symbols is None else list(symbols)
    missing = [s for s in symbols if s not in names]
    if missing:
        raise ValueError(f"symbols not in the alphabet: {missing}.")
    v = b[[names.index(s) for s in symbols]]
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return pd.DataFrame(v @ v.T, index=symbols, columns=symbols)
