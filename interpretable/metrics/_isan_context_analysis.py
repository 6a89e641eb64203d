"""Analyses of how a fitted :class:`~interpretable.ISANLanguageModel` (or, for the parentheses
task, :class:`~interpretable.ISANSequenceTagger`) carries context through its state, behind the
ISAN paper's figures (re-exported by :mod:`interpretable.metrics`).

* :func:`contribution_decay` — mean norm of κ_s^t as a function of the lag ``t - s``.
* :func:`parentheses_state_analysis` — how a parentheses-counting ISAN stores the counts in the
  readout vs the computational subspace.
* :func:`word_context_effects` — where the previous word's exact contribution decides the
  next-character prediction (the paper's ``_annual_reve`` → ``n`` example).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from interpretable._validation import check_documents, check_sequence_targets
from interpretable.estimators.sequence import ISANSequenceTagger, split_words
from interpretable.metrics._isan_parameters import check_isan, isan_parameters
from interpretable.nn import pad_sequences

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.sequence import ISANLanguageModel

__all__ = ["contribution_decay", "parentheses_state_analysis", "word_context_effects"]


def contribution_decay(model: ISANLanguageModel, texts: Sequence[str], max_lag: int = 50
                       ) -> pd.DataFrame:
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
    check_isan(model)
    W, b, W_ro, _ = isan_parameters(model)
    norms: list[list[float]] = [[] for _ in range(max_lag + 1)]
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


def parentheses_state_analysis(model: ISANSequenceTagger, X: Sequence[str],
                               Y: Sequence[ArrayLike], random_state: int = 0) -> dict:
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
    check_isan(model, ISANSequenceTagger)
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
    result: dict[str, float] = {"rank_readout": int(basis.rank),
                                "hidden_size": int(basis.Q.shape[0])}
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


def word_context_effects(model: ISANLanguageModel, text: str, max_rest: int = 30,
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
    check_isan(model)
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
        for t, k in zip(chunk, kappa, strict=True):
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

