"""Faithfulness / plausibility analyses of attention (Mohankumar et al., ACL 2020, sec. 3 & 5).

Every analysis takes a fitted attention text estimator and inputs ``X`` and returns an
:class:`AnalysisResult` ``(frame, summary)``: a DataFrame with one row per sample and a dict of
aggregates. They are batched over samples (and over permutations / erasure steps): no Python
loop per token.

They use the public interface of the attention text classifiers
(:class:`~interpretable.estimators.text.AttentionClassifierBase`): ``encode(X)``,
``forward_batches(inputs)`` yielding ``(rows, batch, AttentionOutput)``,
``module_.decode(hidden, attention (B, K, T), query_state)`` and ``explain(X, method=...)``.

Defined here: :func:`conicity`, :func:`hidden_state_conicity`, :func:`attribution_agreement`
and :func:`pos_attention`. The analyses that intervene on the attention weights and decode
again, :func:`decision_flip_fraction` and :func:`permutation_tvd`, are re-exported from
:mod:`interpretable.metrics`.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from interpretable.metrics._attention_interventions import decision_flip_fraction, permutation_tvd
from interpretable.metrics._common import AnalysisResult
from interpretable.metrics._divergences import jensen_shannon_rows
from interpretable.nn import check_conicity_kind, conicity as _conicity_torch

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.text import AttentionClassifierBase

__all__ = ["AnalysisResult", "conicity", "hidden_state_conicity", "decision_flip_fraction",
           "permutation_tvd", "attribution_agreement", "pos_attention"]


def conicity(H: ArrayLike | torch.Tensor, mask: ArrayLike | torch.Tensor | None = None,
             kind: str = "absolute") -> np.ndarray | float:
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


def hidden_state_conicity(estimator: AttentionClassifierBase, X: Sequence[str] | ArrayLike,
                          kind: str = "absolute") -> AnalysisResult:
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


def attribution_agreement(estimator: AttentionClassifierBase, X: Sequence[str] | ArrayLike,
                          against: str = "integrated_gradients",
                          target: Hashable | ArrayLike | None = None,
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


def pos_attention(estimator: AttentionClassifierBase, X: Sequence[str] | ArrayLike
                  ) -> AnalysisResult:
    """Attention given to each universal POS tag (paper sec. 3.4 / 5.6, Fig. 5).

    Tokens are tagged with :func:`interpretable.preprocessing.pos_tag` (offline perceptron tagger).

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
    from interpretable.preprocessing import pos_tag

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
