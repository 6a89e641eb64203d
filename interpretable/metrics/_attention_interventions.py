"""Analyses that intervene on a fitted attention text classifier's attention weights and decode
again (Mohankumar et al., ACL 2020, sec. 5; re-exported by
:mod:`interpretable.metrics`, whose conventions they follow).

* :func:`decision_flip_fraction` — hidden states erased, most important first, until the
  decision flips.
* :func:`permutation_tvd` — output change when the attention weights are randomly permuted.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from interpretable._validation import check_random_state_seed
from interpretable.metrics._common import AnalysisResult
from interpretable.metrics._divergences import total_variation

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.text import AttentionClassifierBase

__all__ = ["decision_flip_fraction", "permutation_tvd"]

#: bins of the sample's maximum attention weight used to summarise permutation TVD (Fig. 4)
MAX_ATTENTION_BINS = (0.0, 0.25, 0.5, 0.75, 1.0)


def _ranking(attention, mask, order, generator):
    """``(B, T)`` positions from most to least important (padding last)."""
    if order == "attention":
        keys = attention.masked_fill(~mask, -1.0)
    else:
        keys = (torch.rand(attention.shape, generator=generator).to(attention.device)
                .masked_fill(~mask, -1.0))
    return keys.argsort(dim=1, descending=True, stable=True)


def decision_flip_fraction(estimator: AttentionClassifierBase, X: Sequence[str] | ArrayLike,
                           order: str = "attention", random_state: int = 0,
                           batch_size: int | None = None) -> AnalysisResult:
    """Fraction of hidden states erased, most important first, until the decision flips.

    Intermediate-representation erasure of Serrano & Smith (2019) as in Mohankumar et al.
    (sec. 5.3): erasing a set of hidden states zeroes their attention and renormalises the rest.
    All ``k = 1 .. n-1`` erasures of a batch are decoded at once.

    Parameters
    ----------
    estimator : fitted attention text classifier
        E.g. :class:`~interpretable.DiversityLSTMClassifier` or
        :class:`~interpretable.AttentionTextClassifier`.
    X : sequence of str of shape (n_samples,)
        The texts.
    order : {"attention", "random"}, default="attention"
        Erase by decreasing attention weight, or in a random order.
    random_state : int, default=0
        Seeds the random order.
    batch_size : int or None, default=None
        Mini-batch size (None: the estimator's).

    Returns
    -------
    AnalysisResult
        ``frame`` columns ``sample, n_tokens, n_erased, fraction, flipped`` (a sample that never
        flips gets ``fraction = 1`` and ``flipped = False``); ``summary``: mean / median
        fraction and flip rate.

    Examples
    --------
    >>> from interpretable import DiversityLSTMClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = DiversityLSTMClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import decision_flip_fraction
    >>> decision_flip_fraction(clf, X).frame.columns.tolist()
    ['sample', 'n_tokens', 'n_erased', 'fraction', 'flipped']
    """
    if order not in ("attention", "random"):
        raise ValueError(f"order must be 'attention' or 'random', got {order!r}")
    generator = torch.Generator().manual_seed(check_random_state_seed(random_state))
    inputs = estimator.encode(X).inputs
    n_erased, lengths = [], []
    for _, _batch, out in estimator.forward_batches(inputs, batch_size=batch_size):
        att, mask = out.attention, out.mask
        B, T = att.shape
        rank = _ranking(att, mask, order, generator)                               # (B, T)
        # position p has rank r(p); erase step k (1..T) removes ranks < k
        rank_of = torch.empty_like(rank).scatter_(1, rank,
                                                  torch.arange(T, device=att.device).expand(B, T))
        k = torch.arange(1, T + 1, device=att.device)
        keep = (rank_of.unsqueeze(1) >= k.view(1, T, 1)) & mask.unsqueeze(1)       # (B, K=T, T)
        erased = att.unsqueeze(1) * keep
        total = erased.sum(-1, keepdim=True)
        # a step whose remaining attention is zero (all erased, or only zero weights left)
        # falls back to uniform weights over the kept states
        uniform = keep.to(att.dtype) / keep.sum(-1, keepdim=True).clamp_min(1)
        erased = torch.where(total > 0, erased / total.clamp_min(1e-30), uniform)
        pred = estimator.module_.decode(out.hidden, erased, out.query_state).argmax(-1)   # (B, K)
        n = mask.sum(1)
        valid = k.view(1, T) < n.view(B, 1)                                        # keep >= 1 state
        flips = (pred != out.logits.argmax(-1, keepdim=True)) & valid
        first = torch.where(flips.any(1), flips.float().argmax(1) + 1, n)
        n_erased.append(first.cpu().numpy())
        lengths.append(n.cpu().numpy())
    n_erased, lengths = np.concatenate(n_erased), np.concatenate(lengths)
    frame = pd.DataFrame({"sample": np.arange(len(lengths)), "n_tokens": lengths,
                          "n_erased": n_erased, "fraction": n_erased / lengths,
                          "flipped": n_erased < lengths})
    summary = {"order": order, "mean_fraction": float(frame.fraction.mean()),
               "median_fraction": float(frame.fraction.median()),
               "flip_rate": float(frame.flipped.mean())}
    return AnalysisResult(frame, summary)


def permutation_tvd(estimator: AttentionClassifierBase, X: Sequence[str] | ArrayLike,
                    n_permutations: int = 100, random_state: int = 0,
                    batch_size: int | None = None) -> AnalysisResult:
    """Output change when the attention weights are randomly permuted (Jain & Wallace, 2019).

    For every sample, ``n_permutations`` random permutations of its attention over its real
    tokens are decoded (all at once); the total variation distance
    ``TVD = ½ Σ_c |p_c - p̃_c|`` to the original output distribution is summarised by its
    median.

    Parameters
    ----------
    estimator : fitted attention text classifier
        E.g. :class:`~interpretable.DiversityLSTMClassifier` or
        :class:`~interpretable.AttentionTextClassifier`.
    X : sequence of str of shape (n_samples,)
        The texts.
    n_permutations : int, default=100
        Permutations per sample.
    random_state : int, default=0
        Seeds the permutations.
    batch_size : int or None, default=None
        Mini-batch size (None: the estimator's).

    Returns
    -------
    AnalysisResult
        ``frame`` columns ``sample, n_tokens, max_attention, median_tvd, mean_tvd``;
        ``summary``: ``median_tvd`` (median over samples) and ``by_max_attention`` (median of
        the per-sample medians in bins of ``max_attention``, as in the paper's Fig. 4).

    Examples
    --------
    >>> from interpretable import DiversityLSTMClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = DiversityLSTMClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import permutation_tvd
    >>> permutation_tvd(clf, X, n_permutations=5).frame.columns.tolist()
    ['sample', 'n_tokens', 'max_attention', 'median_tvd', 'mean_tvd']
    """
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, (int, np.integer)) \
            or n_permutations < 1:
        raise ValueError(f"n_permutations must be a positive integer, got {n_permutations!r}")
    generator = torch.Generator().manual_seed(check_random_state_seed(random_state))
    inputs = estimator.encode(X).inputs
    cols: dict[str, list[np.ndarray]] = {"n_tokens": [], "max_attention": [], "median_tvd": [],
                                         "mean_tvd": []}
    step = batch_size or max(1, min(estimator.batch_size, 8192 // n_permutations))
    for _, _batch, out in estimator.forward_batches(inputs, batch_size=step):
        att, mask = out.attention, out.mask
        B, T = att.shape
        keys = torch.rand((B, n_permutations, T), generator=generator).to(att.device)
        keys = keys.masked_fill(~mask.unsqueeze(1), 2.0)        # padding sorts last, stays there
        perm = keys.argsort(dim=-1)
        permuted = att.unsqueeze(1).expand(B, n_permutations, T).gather(2, perm)
        probs = torch.softmax(out.logits.float(), -1).unsqueeze(1)
        new = torch.softmax(
            estimator.module_.decode(out.hidden, permuted, out.query_state).float(), -1)
        tvd = total_variation(new.cpu().numpy(), probs.cpu().numpy())  # (B, P)
        cols["n_tokens"].append(mask.sum(1).cpu().numpy())
        cols["max_attention"].append(att.max(1).values.float().cpu().numpy())
        cols["median_tvd"].append(np.quantile(tvd, 0.5, axis=1, method="lower"))
        cols["mean_tvd"].append(tvd.mean(1))
    frame = pd.DataFrame({k: np.concatenate(v) for k, v in cols.items()})
    frame.insert(0, "sample", np.arange(len(frame)))
    bins = pd.cut(frame.max_attention, MAX_ATTENTION_BINS, include_lowest=True)
    by_bin = frame.groupby(bins, observed=False).median_tvd.agg(["median", "count"]).reset_index()
    by_bin.columns = ["max_attention", "median_tvd", "count"]
    summary = {"n_permutations": int(n_permutations),
               "median_tvd": float(frame.median_tvd.median()),
               "mean_tvd": float(frame.mean_tvd.mean()), "by_max_attention": by_bin}
    return AnalysisResult(frame, summary)
