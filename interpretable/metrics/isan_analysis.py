"""Analyses of a fitted :class:`~interpretable.ISANLanguageModel` (or, for the parentheses task,
:class:`~interpretable.ISANSequenceTagger`) behind the ISAN paper's figures.

* :func:`input_bias_analysis` — norms of the input biases ``b_c`` (whole, readout part,
  computational part) against the unigram log-probability of ``c`` (paper: the computational
  part carries the "surprise" of a character).
* :func:`readout_bias_vs_unigram` — ``softmax(b_ro)`` against the empirical unigram distribution.
* :func:`offsets_vs_bigram` — ``softmax(b_ro + W_ro b_c)`` (the bias plus the offset of the last
  character) against the empirical bigram distribution ``P(next | c)``.
* :func:`bias_similarity` — cosine similarity of the input biases in either subspace.
* :func:`contribution_decay` — mean norm of κ_s^t as a function of the lag ``t - s``.
* :func:`word_context_effects` — where the previous word's exact contribution decides the
  next-character prediction (the paper's ``_annual_reve`` → ``n`` example).
* :func:`parentheses_state_analysis` — how a parentheses-counting ISAN stores the counts in the
  readout vs the computational subspace.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from scipy import stats
from sklearn.utils.validation import check_is_fitted

from ..estimators.language_model import ISANLanguageModel, split_words
from ..estimators.tagger import ISANSequenceTagger
from ..nn.tensors import pad_sequences
from ..validation import check_documents, check_sequence_targets

__all__ = [
    "input_bias_analysis",
    "readout_bias_vs_unigram",
    "offsets_vs_bigram",
    "bias_similarity",
    "contribution_decay",
    "parentheses_state_analysis",
    "word_context_effects",
]


def _check_model(model, *classes):
    """Raise unless ``model`` is a fitted instance of one of ``classes`` (default: a language
    model)."""
    classes = classes or (ISANLanguageModel,)
    if not isinstance(model, classes):
        names = " or ".join(c.__name__ for c in classes)
        raise TypeError(f"model must be a fitted {names}, got {type(model).__name__}.")
    check_is_fitted(model)


def _params(model):
    """float64 numpy views of the fitted ISAN: W (S,H,H), b (S,H), W_ro (O,H), b_ro (O,)."""
    _check_model(model, ISANLanguageModel, ISANSequenceTagger)
    m = model.module_
    f = lambda t: t.detach().double().cpu().numpy()  # noqa: E731
    return f(m.W), f(m.b), f(m.readout.weight), f(m.readout.bias)


def _unigram(model, text) -> np.ndarray:
    """Empirical distribution over the model's classes (unknown symbol included), (O,)."""
    docs = check_documents(text)
    ids = np.concatenate([model.encode_symbols(d) for d in docs])
    counts = np.bincount(ids, minlength=model.n_symbols_)
    return counts / counts.sum()


def _pearson(a, b) -> float:
    return float(stats.pearsonr(a, b)[0]) if np.std(a) > 0 and np.std(b) > 0 else float("nan")


def input_bias_analysis(model, text) -> tuple[pd.DataFrame, dict]:
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
    _check_model(model)
    _, b, W_ro, _ = _params(model)
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


def readout_bias_vs_unigram(model, text) -> dict:
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
    _check_model(model)
    _, _, _, b_ro = _params(model)
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


def offsets_vs_bigram(model, text, min_count: int = 20) -> tuple[pd.DataFrame, dict]:
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
    _check_model(model)
    _, b, W_ro, b_ro = _params(model)
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


def bias_similarity(model, subspace: str = "computational", symbols=None) -> pd.DataFrame:
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
    _, b, _, _ = _params(model)
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


def contribution_decay(model, texts, max_lag: int = 50) -> pd.DataFrame:
    """Norm of the contributions to the logits as a function of the lag since the symbol was read.

    Mean (and median) Euclidean norm of the full logit contribution κ_s^t over all outputs, as
    a function of the lag ``t - s`` (0 ≤ lag ≤ ``max_lag``), averaged over ``texts``. Forward
    pass over the state contributions ``c_s^t = (∏ W) b_{x_s}`` of the last ``max_lag + 1``
    symbols: cost O(T · max_lag · H²).

    Parameters
    ----------
    model : ISANLanguageModel
        A fitted ISAN language model.
    texts : sequence of str
        The texts.
    max_lag : int, default=50
        The largest lag.

    Returns
    -------
    pandas.DataFrame
        Columns ``lag, mean_norm, median_norm``.

    Examples
    --------
    >>> from interpretable import ISANLanguageModel
    >>> text = "the cat sat on the mat. the cat ate the rat. " * 3
    >>> lm = ISANLanguageModel(hidden_size=8, seq_len=16, min_count=1, max_epochs=1,
    ...                        random_state=0).fit([text])
    >>> from interpretable.metrics import contribution_decay
    >>> contribution_decay(lm, [text], max_lag=3)["lag"].tolist()
    [0, 1, 2, 3]
    """
    _check_model(model)
    W, b, W_ro, _ = _params(model)
    norms = [[] for _ in range(max_lag + 1)]
    for text in check_documents(texts):
        ids = model.encode_symbols(text)
        C = np.zeros((0, W.shape[1]))  # contributions of the last symbols, newest last
        for i in ids:
            C = np.vstack([C[-max_lag:] @ W[i].T, b[i]])
            kappa = np.linalg.norm(C @ W_ro.T, axis=1)[::-1]  # lag 0 first
            for lag, v in enumerate(kappa):
                norms[lag].append(v)
    return pd.DataFrame({
        "lag": np.arange(max_lag + 1),
        "mean_norm": [np.mean(n) if n else np.nan for n in norms],
        "median_norm": [np.median(n) if n else np.nan for n in norms],
    })


def parentheses_state_analysis(model, X, Y, random_state: int = 0) -> dict:
    """Find where a parentheses-counting ISAN tagger keeps the counts.

    Hidden states are re-expressed in the readout basis and split into the readout part (what
    the output sees: the counts *before* the current symbol, i.e. the delayed target) and the
    computational part. A linear decoder (least squares on one-hot counts, argmax per bracket
    type) is fitted on half of the sequences and scored on the other half for both the delayed
    counts and the current counts (after the symbol) from each part. Also reports how many
    dimensions of each part carry 99 % of the state variance.

    Parameters
    ----------
    model : ISANSequenceTagger
        Fitted on :func:`~interpretable.datasets.make_parentheses` data.
    X : sequence of str
        Bracket sequences of equal length.
    Y : sequence of ndarray of shape (length, n_types)
        Their counts.
    random_state : int, default=0
        Seeds the split into halves.

    Returns
    -------
    dict
        Decoding accuracies (``delayed_counts_from_readout``, ``current_counts_from_computational``,
        ...), ``dims_99pct_*``, ``hidden_size`` and ``rank_readout``.

    Raises
    ------
    ValueError
        If the sequences differ in length.

    Examples
    --------
    >>> from interpretable import ISANSequenceTagger
    >>> from interpretable.datasets import make_parentheses
    >>> from interpretable.metrics import parentheses_state_analysis
    >>> X, Y = make_parentheses(n_sequences=20, length=20, random_state=0)
    >>> tagger = ISANSequenceTagger(hidden_size=16, max_epochs=1, random_state=0).fit(X, Y)
    >>> result = parentheses_state_analysis(tagger, X, Y)
    >>> result["hidden_size"]
    16
    """
    _check_model(model, ISANSequenceTagger)
    batch = model.encode(X)
    Y = check_sequence_targets(Y, [len(s) for s in batch.units])
    x, lengths = batch.inputs["x"], batch.inputs["lengths"]
    if len(set(lengths.tolist())) != 1:
        raise ValueError("parentheses_state_analysis needs sequences of equal length.")
    basis = model.readout_basis()
    m = model.module_
    with torch.no_grad():
        H = m.states(x.to(model.device_)).double().cpu().numpy()  # (N, T, H)
    Yd = np.stack(Y)  # delayed counts: target at t = counts before symbol t
    current = Yd[:, 1:]  # counts after symbol t == delayed target at t + 1
    H = H[:, :-1]
    delayed = Yd[:, :-1]
    parts = {"readout": H @ basis.readout, "computational": H @ basis.computational, "full": H}
    rng = np.random.RandomState(random_state)
    order = rng.permutation(len(x))
    train, test = order[: len(order) // 2], order[len(order) // 2:]
    result = {"rank_readout": int(basis.rank), "hidden_size": int(basis.Q.shape[0])}
    for name, Z in parts.items():
        for what, counts in (("delayed", delayed), ("current", current)):
            result[f"{what}_counts_from_{name}"] = _linear_decoding_accuracy(Z, counts, train, test)
        flat = Z.reshape(-1, Z.shape[-1])
        if flat.shape[1]:
            ev = np.linalg.eigvalsh(np.cov(flat.T).reshape(flat.shape[1], flat.shape[1]))[::-1]
            share = np.cumsum(ev) / max(ev.sum(), 1e-300)
            result[f"dims_99pct_{name}"] = int(np.searchsorted(share, 0.99) + 1)
        else:
            result[f"dims_99pct_{name}"] = 0
    return result


def _linear_decoding_accuracy(Z, counts, train, test) -> float:
    """Share of test positions whose counts (all types) a linear one-hot decoder gets right."""
    n_types = counts.shape[-1]
    k = int(counts.max()) + 1
    feats = np.concatenate([Z, np.ones(Z.shape[:-1] + (1,))], -1)
    onehot = np.eye(k)[counts].reshape(counts.shape[:-1] + (n_types * k,))
    A = feats[train].reshape(-1, feats.shape[-1])
    coef, *_ = np.linalg.lstsq(A, onehot[train].reshape(-1, onehot.shape[-1]), rcond=None)
    pred = (feats[test].reshape(-1, feats.shape[-1]) @ coef).reshape(-1, n_types, k).argmax(-1)
    return float(np.all(pred == counts[test].reshape(-1, n_types), axis=1).mean())


def word_context_effects(model, text: str, max_rest: int = 30,
                         batch_size: int = 256) -> pd.DataFrame:
    """Predict every position of a text with and without the contribution of the previous word.

    The previous word is the word before the one being read. The contribution of a word ``w``
    to the logits at ``t`` is ``W_ro A_rest b_w``: ``b_w`` is the offset of ``w``'s composed map
    (its own contribution to the state at its end) and ``A_rest`` the linear part of the
    composed map of the characters between ``w`` and ``t``.

    Parameters
    ----------
    model : ISANLanguageModel
        A fitted ISAN language model.
    text : str
        The text.
    max_rest : int, default=30
        Positions further than this many characters from the previous word are skipped.
    batch_size : int, default=256
        Positions evaluated at a time.

    Returns
    -------
    pandas.DataFrame
        One row per position: ``position``, ``context`` (text up to and including it),
        ``previous_word``, ``actual`` next character, ``prediction``, ``prediction_without``
        (previous word's contribution removed), ``contribution`` (to the predicted logit),
        ``margin_change`` (how much the word raises the predicted logit over the runner-up
        without it) and ``flips`` (whether removing the word changes the prediction).

    Examples
    --------
    >>> from interpretable import ISANLanguageModel
    >>> text = "the cat sat on the mat. the cat ate the rat. " * 3
    >>> lm = ISANLanguageModel(hidden_size=8, seq_len=16, min_count=1, max_epochs=1,
    ...                        random_state=0).fit([text])
    >>> from interpretable.metrics import word_context_effects
    >>> effects = word_context_effects(lm, text[:30])
    >>> effects.columns[:4].tolist()
    ['position', 'context', 'previous_word', 'actual']
    """
    _check_model(model)
    (text,) = check_documents([text], "text")
    m = model.module_
    dev = model.device_
    ids = torch.as_tensor(model.encode_symbols(text))
    pieces = split_words(text)
    starts = np.cumsum([0] + [len(p) for p in pieces])
    with torch.no_grad():
        logits = m(ids[None].to(dev))[0].double().cpu().numpy()  # (T, O)
        words, lengths = pad_sequences([model.encode_symbols(p) for p in pieces], 0)
        _, b_word = m.compose(words.to(dev), lengths.to(dev))  # (P, H): own contribution
    piece_of = np.repeat(np.arange(len(pieces)), [len(p) for p in pieces])
    rows = []
    positions = [t for t in range(len(text) - 1)
                 if piece_of[t] >= 1 and t + 1 - starts[piece_of[t]] <= max_rest]
    W_ro = m.readout.weight
    for lo in range(0, len(positions), batch_size):
        chunk = positions[lo: lo + batch_size]
        rests = [model.encode_symbols(text[starts[piece_of[t]]: t + 1]) for t in chunk]
        x, n = pad_sequences(rests, 0)
        with torch.no_grad():
            A_rest, _ = m.compose(x.to(dev), n.to(dev))
            prev = b_word[torch.as_tensor(piece_of[chunk] - 1, device=dev)]
            kappa = (torch.einsum("nhj,nj->nh", A_rest, prev) @ W_ro.T).double().cpu().numpy()
        for t, k in zip(chunk, kappa):
            full = logits[t]
            without = full - k
            pred, alt = int(full.argmax()), int(without.argmax())
            runner_up = int(np.argsort(without)[-2]) if alt == pred else alt
            rows.append({
                "position": t, "context": text[max(0, t - 40): t + 1],
                "previous_word": pieces[piece_of[t] - 1], "actual": text[t + 1],
                "prediction": model.classes_[pred], "prediction_without": model.classes_[alt],
                "contribution": float(k[pred]),
                "margin_change": float(k[pred] - k[runner_up]), "flips": pred != alt,
            })
    return pd.DataFrame(rows)
