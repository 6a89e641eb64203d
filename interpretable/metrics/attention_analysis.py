"""Faithfulness / plausibility analyses of attention (Mohankumar et al., ACL 2020, sec. 3 & 5).

Every analysis takes a fitted attention text estimator and inputs ``X`` and returns an
:class:`AnalysisResult` ``(frame, summary)``: a DataFrame with one row per sample and a dict of
aggregates. They are batched over samples (and over permutations / erasure steps): no Python
loop per token.

They use the public interface of the attention text classifiers
(:class:`~interpretable.estimators.attention_text.AttentionClassifierBase`): ``encode(X)``,
``forward_batches(inputs)`` yielding ``(rows, batch, AttentionOutput)``,
``module_.decode(hidden, attention (B, K, T), query_state)`` and ``explain(X, method=...)``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
import torch

from ..validation import check_random_state_seed
from ..nn.attention import CONICITY_KINDS, check_conicity_kind
from ..nn.attention import conicity as _conicity_torch  # the metric below shares its name
from .common import AnalysisResult
from .divergences import jensen_shannon, jensen_shannon_rows, total_variation

__all__ = ["AnalysisResult", "conicity", "hidden_state_conicity", "decision_flip_fraction",
           "permutation_tvd", "attribution_agreement", "pos_attention", "jensen_shannon",
           "MAX_ATTENTION_BINS", "CONICITY_KINDS"]

#: bins of the sample's maximum attention weight used to summarise permutation TVD (Fig. 4)
MAX_ATTENTION_BINS = (0.0, 0.25, 0.5, 0.75, 1.0)


def conicity(H, mask=None, kind: str = "absolute") -> np.ndarray:
    """Conicity of sets of vectors: the mean (absolute) cosine of each vector to the set's mean.

    Parameters
    ----------
    H : array-like or torch.Tensor of shape (n, T, d) or (T, d)
        The n sets of T vectors, or one set.
    mask : array-like of shape (n, T) or (T,) or None, default=None
        True on real vectors (None: all).
    kind : {"absolute", "signed"}, default="absolute"
        Mean ``|cos|`` (the authors' code) or mean signed ``cos``, see :data:`CONICITY_KINDS`.

    Returns
    -------
    ndarray of shape (n,) or float
        The conicities (a float for a single set).

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.metrics import conicity
    >>> float(conicity(np.array([[1.0, 0.0], [1.0, 0.0]])))  # parallel vectors
    1.0
    >>> conicity(np.array([[[1.0, 0.0], [0.0, 1.0]]])).round(3)
    array([0.707])
    """
    absolute = check_conicity_kind(kind)
    H = torch.as_tensor(np.asarray(H) if not isinstance(H, torch.Tensor) else H).detach()
    if H.dim() not in (2, 3) or H.shape[-1] == 0 or H.shape[-2] == 0:
        raise ValueError(
            f"H must have shape (n, T, d) or (T, d) with T, d > 0, got {tuple(H.shape)}")
    if not torch.is_floating_point(H):
        H = H.double()
    if not torch.isfinite(H).all():
        raise ValueError("H contains NaN or infinite values")
    if mask is not None:
        mask = torch.as_tensor(np.asarray(mask) if not isinstance(mask, torch.Tensor)
                               else mask).bool()
        if mask.shape != H.shape[:-1]:
            raise ValueError(f"mask must have shape {tuple(H.shape[:-1])}, got {tuple(mask.shape)}")
    out = _conicity_torch(H, mask, absolute=absolute).cpu().numpy()
    return float(out) if out.ndim == 0 else out


def _n_tokens(batch):
    return batch["lengths"].cpu().numpy()


def hidden_state_conicity(estimator, X, kind: str = "absolute") -> AnalysisResult:
    """Per-sample conicity of the estimator's hidden states (paper Table 2).

    Parameters
    ----------
    estimator : fitted attention text classifier
        E.g. :class:`~interpretable.DiversityLSTMClassifier` or
        :class:`~interpretable.AttentionTextClassifier`.
    X : sequence of str of shape (n_samples,)
        The texts.
    kind : {"absolute", "signed"}, default="absolute"
        As in :func:`conicity`.

    Returns
    -------
    AnalysisResult
        ``frame``: one row per sample with its conicity; ``summary``: aggregates.

    Examples
    --------
    >>> from interpretable import DiversityLSTMClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = DiversityLSTMClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import hidden_state_conicity
    >>> len(hidden_state_conicity(clf, X).frame)
    4
    """
    absolute = check_conicity_kind(kind)
    inputs = estimator.encode(X).inputs
    values, lengths = [], []
    for _, batch, out in estimator.forward_batches(inputs):
        values.append(_conicity_torch(out.hidden, out.mask, absolute=absolute).float().cpu()
                      .numpy())
        lengths.append(_n_tokens(batch))
    frame = pd.DataFrame({"sample": np.arange(len(inputs["tokens"])),
                          "n_tokens": np.concatenate(lengths),
                          "conicity": np.concatenate(values)})
    return AnalysisResult(frame, {"mean_conicity": float(frame.conicity.mean()),
                                  "std_conicity": float(frame.conicity.std(ddof=0))})


def _ranking(attention, mask, order, generator):
    """``(B, T)`` positions from most to least important (padding last)."""
    if order == "attention":
        keys = attention.masked_fill(~mask, -1.0)
    else:
        keys = (torch.rand(attention.shape, generator=generator).to(attention.device)
                .masked_fill(~mask, -1.0))
    return keys.argsort(dim=1, descending=True, stable=True)


def decision_flip_fraction(estimator, X, order: str = "attention", random_state=0,
                           batch_size: Optional[int] = None) -> AnalysisResult:
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
    for _, batch, out in estimator.forward_batches(inputs, batch_size=batch_size):
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


def permutation_tvd(estimator, X, n_permutations: int = 100, random_state=0,
                    batch_size: Optional[int] = None) -> AnalysisResult:
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
    cols = {"n_tokens": [], "max_attention": [], "median_tvd": [], "mean_tvd": []}
    step = batch_size or max(1, min(estimator.batch_size, 8192 // n_permutations))
    for _, batch, out in estimator.forward_batches(inputs, batch_size=step):
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




def _batched_pearson(a, b, mask):
    """Pearson r per row over the masked entries (NaN with < 2 entries or zero variance)."""
    m = mask.astype(np.float64)
    n = m.sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        am = (a * m).sum(1) / n
        bm = (b * m).sum(1) / n
        da, db = (a - am[:, None]) * m, (b - bm[:, None]) * m
        r = (da * db).sum(1) / np.sqrt((da ** 2).sum(1) * (db ** 2).sum(1))
    return np.where(n >= 2, r, np.nan)


def _stack(arrays):
    T = max(len(a) for a in arrays)
    out = np.zeros((len(arrays), T))
    mask = np.zeros((len(arrays), T), dtype=bool)
    for i, a in enumerate(arrays):
        out[i, : len(a)] = a
        mask[i, : len(a)] = True
    return out, mask


def attribution_agreement(estimator, X, against: str = "integrated_gradients", target=None,
                          n_steps: int = 50) -> AnalysisResult:
    """Agreement of attention with a gradient attribution (paper sec. 5.5, Table 4).

    The attribution's absolute values are normalised into a distribution over each sample's
    tokens; Pearson r and Jensen-Shannon divergence against the attention weights are reported.

    Parameters
    ----------
    estimator : fitted attention text classifier
        E.g. :class:`~interpretable.DiversityLSTMClassifier` or
        :class:`~interpretable.AttentionTextClassifier`.
    X : sequence of str of shape (n_samples,)
        The texts.
    against : str, default="integrated_gradients"
        An explain method of the estimator other than ``"attention"``: ``"gradient"``,
        ``"integrated_gradients"``, ``"input_x_gradient"`` (captum) or, for
        :class:`~interpretable.DiversityLSTMClassifier`, ``"detached_gradient"`` (the authors'
        gradient × embedding of the class probability, attention detached).
    target : label, array-like or None, default=None
        Class explained by the attribution (None: the predicted class).
    n_steps : int, default=50
        Integration steps (``against="integrated_gradients"`` only).

    Returns
    -------
    AnalysisResult
        ``frame`` columns ``sample, n_tokens, pearson, jsd``; ``summary``: mean and std of both.

    Examples
    --------
    >>> from interpretable import DiversityLSTMClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = DiversityLSTMClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import attribution_agreement
    >>> result = attribution_agreement(clf, X, against="detached_gradient")
    >>> result.frame.columns.tolist()
    ['sample', 'n_tokens', 'pearson', 'jsd']
    """
    if against == "attention":
        raise ValueError("against must be a gradient attribution method, not 'attention'")
    attention = estimator.explain(X, target=target, method="attention")
    options = {"n_steps": n_steps} if against == "integrated_gradients" else {}
    attribution = estimator.explain(X, target=attention.target if target is None else target,
                                    method=against, **options)
    A, mask = _stack(attention.values)
    G, _ = _stack(attribution.values)
    G = np.abs(G) * mask
    total = G.sum(1, keepdims=True)
    G = np.where(total > 0, G / np.where(total > 0, total, 1.0), mask / mask.sum(1, keepdims=True))
    frame = pd.DataFrame({"sample": np.arange(len(A)), "n_tokens": mask.sum(1),
                          "pearson": _batched_pearson(A, G, mask),
                          "jsd": jensen_shannon_rows(A, G, mask)})
    summary = {"against": against,
               "mean_pearson": float(np.nanmean(frame.pearson)),
               "std_pearson": float(np.nanstd(frame.pearson)),
               "mean_jsd": float(frame.jsd.mean()), "std_jsd": float(frame.jsd.std(ddof=0))}
    return AnalysisResult(frame, summary)


def pos_attention(estimator, X) -> AnalysisResult:
    """Attention given to each universal POS tag (paper sec. 3.4 / 5.6, Fig. 5).

    Tokens are tagged with :func:`interpretable.text.pos_tag` (offline perceptron tagger).

    Parameters
    ----------
    estimator : fitted attention text classifier
        E.g. :class:`~interpretable.DiversityLSTMClassifier` or
        :class:`~interpretable.AttentionTextClassifier`.
    X : sequence of str of shape (n_samples,)
        The texts.

    Returns
    -------
    AnalysisResult
        ``frame``: one row per sample, columns ``sample, n_tokens`` then ``attention_<TAG>``
        (the sample's attention mass on that tag) for every tag seen; ``summary``: ``by_tag``
        (``tag, attention_share, token_share``, sorted by attention share),
        ``punctuation_attention`` and ``punctuation_tokens``.

    Examples
    --------
    >>> from interpretable import DiversityLSTMClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = DiversityLSTMClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import pos_attention
    >>> pos_attention(clf, X).summary["by_tag"].columns.tolist()
    ['tag', 'attention_share', 'token_share']
    """
    from ..text import pos_tag

    explanation = estimator.explain(X, method="attention")
    tokens = explanation.units
    tags = [pos_tag(t) for t in tokens]
    lengths = np.array([len(t) for t in tokens])
    flat_tags = np.array([t for ts in tags for t in ts], dtype=object)
    flat_att = np.concatenate(explanation.values)
    sample = np.repeat(np.arange(len(tokens)), lengths)
    table = pd.DataFrame({"sample": sample, "tag": flat_tags, "attention": flat_att})
    wide = table.pivot_table(index="sample", columns="tag", values="attention", aggfunc="sum",
                             fill_value=0.0)
    wide.columns = [f"attention_{c}" for c in wide.columns]
    frame = pd.DataFrame({"sample": np.arange(len(tokens)), "n_tokens": lengths}).join(
        wide, on="sample")
    by_tag = table.groupby("tag").agg(attention=("attention", "sum"), tokens=("attention", "size"))
    by_tag = pd.DataFrame({"tag": by_tag.index,
                           "attention_share": by_tag.attention.to_numpy() / by_tag.attention.sum(),
                           "token_share": by_tag.tokens.to_numpy() / by_tag.tokens.sum()})
    by_tag = by_tag.sort_values("attention_share", ascending=False).reset_index(drop=True)
    punct = by_tag[by_tag.tag == "."]
    summary = {"by_tag": by_tag,
               "punctuation_attention": float(punct.attention_share.sum()),
               "punctuation_tokens": float(punct.token_share.sum())}
    return AnalysisResult(frame, summary)
